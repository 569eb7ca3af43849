//go:build unix

package recording

import (
	"syscall"
	"time"
)

// processCPU is the user and system CPU time the process has used: on a
// loaded machine a benchmark's wall time is mostly other processes'.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
