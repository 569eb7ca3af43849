//go:build unix

package main

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A stop signal after the listeners answer but before the ready line (a
// supervisor that sees the port up and stops at once, or a Ctrl-C while
// replay adds its recording's devices) is as clean a stop as one after
// ready: no error, so the process exits 0 as docs/operations.md says.
func TestStopSignalAfterTheListenersBeforeReadyExitsClean(t *testing.T) {
	o, err := parseFlags([]string{"--sim-arms", "0", "--sim-grips", "0", "--hw-scan-period", "0", "--state-dir", t.TempDir(),
		"--port", "0", "--legacy-port", "-1", "--events-port", "-1"})
	if err != nil {
		t.Fatal(err)
	}
	err = serveUntilSignal(o, zerolog.Nop(), func(*service) error {
		if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// The signal's goroutine ends the start's context meanwhile; were
		// it later, the stop would come after ready and the test would
		// not show the path (it passes either way then, never wrongly).
		time.Sleep(2 * time.Second)
		return nil
	})
	if err != nil {
		t.Fatalf("a stop signal before ready, after the listeners, returned %v; want a clean stop", err)
	}
}
