//go:build linux

package loop

import "golang.org/x/sys/unix"

// osTimer is empty on Linux: clock_nanosleep needs no handle.
type osTimer struct{}

// sleepUntil sleeps until the CLOCK_MONOTONIC time deadlineNs. An absolute
// deadline does not drift when the sleep is interrupted and restarted.
func (p *Pacer) sleepUntil(deadlineNs int64) {
	ts := unix.NsecToTimespec(deadlineNs)
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// tuneThread prepares the calling (locked) thread for pacing. It shortens
// the thread's timer slack to 1 ns: Linux lets a normal thread's sleep end up
// to 50 µs late by default, which the spin would otherwise have to cover.
// With rtPriority in 1..99 it also asks for SCHED_FIFO at that priority,
// which needs CAP_SYS_NICE (or an RLIMIT_RTPRIO); it reports whether the
// thread got it. restore undoes both and must run before the thread is
// unlocked, so no other goroutine inherits them.
func tuneThread(rtPriority int) (realtime bool, restore func()) {
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	if rtPriority > 0 {
		if rtPriority > 99 {
			rtPriority = 99
		}
		attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: uint32(rtPriority)}
		realtime = unix.SchedSetAttr(0, &attr, 0) == nil
	}
	return realtime, func() {
		if realtime {
			_ = unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0)
		}
		_ = unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) // 0: back to the default
	}
}
