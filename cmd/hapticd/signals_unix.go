//go:build !windows

package main

import (
	"os"
	"os/signal"
	"syscall"
)

// stopSignals are the signals that stop the service cleanly (arms to zero,
// state flushed). Go's default for SIGHUP (the ssh session that started a
// lab node closed) and SIGQUIT (Ctrl-\) ends the process on the spot with
// the firmware holding its last force; there is no config to reload on
// SIGHUP, so a stop is its only sensible meaning. SIGHUP ignored when the
// process started (nohup) stays ignored, as Go's default leaves it:
// catching it would undo the nohup. SIGQUIT ignored then (a shell's
// background job) cannot be told: Go's runtime installs its own handler
// over it, so signal.Ignored reads false and it is caught as ever
// (docs/operations.md says so).
func stopSignals() []os.Signal {
	sigs := []os.Signal{syscall.SIGINT, syscall.SIGTERM}
	for _, s := range []os.Signal{syscall.SIGHUP, syscall.SIGQUIT} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	return sigs
}

// dumpSignal asks for the goroutine dump Go's default prints, before the
// clean stop.
const dumpSignal = syscall.SIGQUIT

// ignoreBrokenLogPipe keeps a log reader that went away (`| tee` killed,
// `| less` quit) from killing the service: Go's default ends a program
// writing to a broken pipe on fd 1 or 2 with SIGPIPE; ignored, the write
// fails with EPIPE, the log line is lost and the service keeps serving.
func ignoreBrokenLogPipe() { signal.Ignore(syscall.SIGPIPE) }
