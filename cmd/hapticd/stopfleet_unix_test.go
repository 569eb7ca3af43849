//go:build unix

package main

import (
	"syscall"
	"testing"
	"time"
)

// A large simulated fleet of every family stops cleanly within the stop's
// budget after SIGTERM. Devices halted one by one while the scheduler's
// shards still ran waited each for its turn in a shard's pass: 5000 mixed
// devices took 9-18 s and exited 1 (stop42; 4000 failed too, 3000 did
// not, on a loaded 2-CPU machine).
func TestLargeMixedFleetStopsCleanlyOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary with 5000 simulated devices")
	}
	bin := buildBinary(t)
	d := startProcess(t, bin, "--state-dir", t.TempDir(),
		"--sim", "inverse3=1000,minverse=1000,inverse3x=1000,verse_grip=1000,wireless_verse_grip=1000")
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, d); code != 0 {
		t.Errorf("after SIGTERM hapticd exited %d after %v, want 0 (a clean stop)", code, time.Since(start))
	}
	// The service promises its stop within 5 s (stopBudget); the margin
	// is for a loaded machine's process exit.
	if took := time.Since(start); took > stopBudget+5*time.Second {
		t.Errorf("the stop took %v, past the %v budget", took, stopBudget)
	}
}
