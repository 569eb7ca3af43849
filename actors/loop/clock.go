package loop

// Clock is the loop's time source: monotonic nanoseconds. Time is a
// dependency so that lease, ramp and filter logic can be tested with a
// manual clock.
type Clock interface{ Now() int64 }

// SystemClock returns the system's monotonic clock in nanoseconds. On Linux
// its values are CLOCK_MONOTONIC, so they can be handed to clock_nanosleep
// as absolute deadlines; on Windows they are QueryPerformanceCounter's.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

// Now reads the OS's monotonic clock (clock_mono.go, clock_windows.go).
func (systemClock) Now() int64 { return osMonoNow() }
