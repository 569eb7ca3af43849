package main

import (
	"os"
	"syscall"
)

// stopSignals are the signals that stop the service cleanly. On Windows Go
// delivers Ctrl-C and Ctrl-Break as SIGINT and a console close, logoff or
// shutdown as SIGTERM; SIGHUP and SIGQUIT never arrive (the Windows service
// path stops through the service manager instead, service_windows.go).
func stopSignals() []os.Signal { return []os.Signal{syscall.SIGINT, syscall.SIGTERM} }

// dumpSignal is never delivered on Windows: no stop prints a dump there.
const dumpSignal = syscall.SIGQUIT

// ignoreBrokenLogPipe has nothing to do on Windows: a write to a closed
// pipe fails with an error there and raises no signal.
func ignoreBrokenLogPipe() {}
