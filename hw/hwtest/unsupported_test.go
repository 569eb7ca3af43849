package hwtest_test

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// skipRecorder records a skip instead of ending the test.
type skipRecorder struct {
	testing.TB
	skipped string
}

func (r *skipRecorder) Helper() {}
func (r *skipRecorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
}

func TestSkipIfUnsupported(t *testing.T) {
	tests := []struct {
		name string
		err  error
		skip bool
	}{
		{"unsupported, wrapped", fmt.Errorf("hw/emulator: pseudo-terminal emulation needs Linux: %w", errors.ErrUnsupported), true},
		{"another error", fmt.Errorf("open /dev/ptmx: %w", os.ErrPermission), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &skipRecorder{TB: t}
			hwtest.SkipIfUnsupported(r, tt.err)
			if (r.skipped != "") != tt.skip {
				t.Fatalf("skipped %q, want a skip: %v", r.skipped, tt.skip)
			}
		})
	}
}
