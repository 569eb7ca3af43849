package loop

import "time"

// Clock is the loop's time source: monotonic nanoseconds. Time is a
// dependency so that lease, ramp and filter logic can be tested with a
// manual clock.
type Clock interface{ Now() int64 }

// SystemClock returns the system's monotonic clock in nanoseconds. On Linux
// its values are CLOCK_MONOTONIC, so they can be handed to clock_nanosleep
// as absolute deadlines.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

// Now reads the runtime's monotonic clock (vDSO, no system call) and shifts
// it onto CLOCK_MONOTONIC's origin.
func (systemClock) Now() int64 { return monoOrigin.ns + int64(time.Since(monoOrigin.t)) }

// monoOrigin pairs a time.Time with the monotonic reading taken at the same
// moment. It is set once at package start and never written again.
var monoOrigin = newMonoOrigin()

type monoBase struct {
	t  time.Time
	ns int64
}
