//go:build !windows

package loop

import "time"

// osMonoNow reads the runtime's monotonic clock (vDSO, no system call) and
// shifts it onto CLOCK_MONOTONIC's origin.
func osMonoNow() int64 { return monoOrigin.ns + int64(time.Since(monoOrigin.t)) }

// monoOrigin pairs a time.Time with the monotonic reading taken at the same
// moment. It is set once at package start and never written again.
var monoOrigin = newMonoOrigin()

type monoBase struct {
	t  time.Time
	ns int64
}
