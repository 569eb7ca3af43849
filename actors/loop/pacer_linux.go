//go:build linux

package loop

import "golang.org/x/sys/unix"

// sleepUntil sleeps until the CLOCK_MONOTONIC time deadlineNs. An absolute
// deadline does not drift when the sleep is interrupted and restarted.
func sleepUntil(deadlineNs int64) {
	ts := unix.NsecToTimespec(deadlineNs)
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// tuneThread shortens the calling thread's timer slack to 1 ns: Linux lets a
// normal thread's sleep end up to 50 µs late by default, which the spin
// would otherwise have to cover. It is best effort.
func tuneThread() {
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
}
