package actors

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: every
// service a test starts must be shut down and every session closed. No
// goroutine is ignored. Some end on their own shortly after the tests:
// protoactor's dead-letter throttle keeps one for its interval (1 s) after
// a dead letter, so the check allows goroutines leaveWithin to end.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if err := goroutinesLeft(leaveWithin); err != nil {
			fmt.Fprintf(os.Stderr, "goroutines outlived the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leaveWithin is how long goroutines may take to end after the tests.
const leaveWithin = 10 * time.Second

// goroutinesLeft waits up to d for every goroutine but the test runner's
// to end, and describes those still running then.
func goroutinesLeft(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		err := goleak.Find()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
