package hwtest_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { hwtest.Main(m, func() error { return goleak.Find() }) }

// failRecorder is a test that records its failure instead of ending.
type failRecorder struct {
	testing.TB
	failed string
}

func (r *failRecorder) Helper() {}
func (r *failRecorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestEventually(t *testing.T) {
	tests := []struct {
		name       string
		holdsAfter int32 // calls before cond holds; -1: never
		within     time.Duration
		wantFail   string
	}{
		{"holds at once", 0, time.Second, ""},
		{"holds on a later poll", 5, 10 * time.Second, ""},
		{"never holds", -1, 30 * time.Millisecond, "the arm to halt: not within 30ms"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			rec := &failRecorder{TB: t}
			took := hwtest.Eventually(rec, tc.within, "the arm to halt", func() bool {
				return calls.Add(1) > tc.holdsAfter && tc.holdsAfter >= 0
			})
			if rec.failed != tc.wantFail {
				t.Errorf("failure %q, want %q", rec.failed, tc.wantFail)
			}
			if tc.wantFail == "" && int32(calls.Load()) != tc.holdsAfter+1 {
				t.Errorf("cond called %d times, want it to stop once it held (%d)", calls.Load(), tc.holdsAfter+1)
			}
			if tc.wantFail != "" && took < tc.within {
				t.Errorf("gave up after %v, before the deadline %v", took, tc.within)
			}
		})
	}
}

func TestEventuallyNilReportsTheLastError(t *testing.T) {
	rec := &failRecorder{TB: t}
	n := 0
	hwtest.EventuallyNil(rec, 20*time.Millisecond, "the file to appear", func() error {
		n++
		return fmt.Errorf("attempt %d: %w", n, errors.ErrUnsupported)
	})
	if want := fmt.Sprintf("the file to appear: not within 20ms: attempt %d:", n); !strings.HasPrefix(rec.failed, want) {
		t.Errorf("failure %q, want it to start %q", rec.failed, want)
	}
	rec.failed = ""
	hwtest.EventuallyNil(rec, time.Second, "nothing", func() error { return nil })
	if rec.failed != "" {
		t.Errorf("a check that holds failed the test: %q", rec.failed)
	}
}
