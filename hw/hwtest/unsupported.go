package hwtest

import (
	"errors"
	"testing"
)

// SkipIfUnsupported skips t when err says the platform lacks what the
// test needs (errors.ErrUnsupported: hw/emulator's pseudo-terminals off
// Linux), so a new test that serves an emulated device through the same
// helper skips on Windows by itself instead of waiting to be listed. Any
// other error is the caller's to fail on.
func SkipIfUnsupported(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("not on this platform: %v", err)
	}
}
