//go:build linux

package loop

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// osTimer is a sleep-only pacer's timerfd, made on its first sleep; a
// spinning pacer needs no handle (clock_nanosleep).
type osTimer struct {
	fd    int
	f     *os.File // fd in the runtime's poller; closed by its cleanup with the pacer
	tried bool
}

// sleepUntil sleeps until the CLOCK_MONOTONIC time deadlineNs. An absolute
// deadline does not drift when the sleep is interrupted and restarted.
//
// A sleep-only pacer (simulated devices) waits on a timerfd through the
// runtime's poller: the goroutine parks and its P is free at once.
// clock_nanosleep is a syscall that keeps the P until sysmon retakes it,
// and a loop doing that 1,000 times a second keeps sysmon waking every
// 20 µs and handing Ps between threads: measured with 1 arm and 1
// lock-step client (hapticbench run --rate 0), sysmon was a quarter of
// the service's CPU samples and the client's rate 0.51× a bare echo's;
// with the timerfd 0.84×. time.Sleep frees the P too but rounds to the
// poller's millisecond (period p99 2.1 ms at 1 kHz). A spinning pacer
// (hardware, maybe SCHED_FIFO) holds its P through the spin anyway and
// keeps the direct sleep.
func (p *Pacer) sleepUntil(deadlineNs int64) {
	if p.maxSpin == 0 && p.timer.sleepPolled(deadlineNs) {
		return
	}
	ts := unix.NsecToTimespec(deadlineNs)
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// sleepPolled sleeps until deadlineNs on the timerfd; false when there is
// none (the caller sleeps another way).
func (t *osTimer) sleepPolled(deadlineNs int64) bool {
	if !t.tried {
		t.tried = true
		fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
		if err != nil {
			return false
		}
		// Non-blocking, so os registers it with the poller.
		t.fd, t.f = fd, os.NewFile(uintptr(fd), "pacer-timerfd")
	}
	if t.f == nil {
		return false
	}
	its := unix.ItimerSpec{Value: unix.NsecToTimespec(deadlineNs)}
	if err := unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
		return false
	}
	// The same deadline as a read deadline, a runtime timer: when every P
	// is busy (100 sessions at 1 kHz on 2 cores), a goroutine the poller
	// readies waits behind every goroutine it readied with it, but one its
	// read deadline wakes runs next on its P. When the process is idle the
	// timerfd wakes it on time, where the runtime's timers round to the
	// poller's millisecond. Whichever comes first ends the sleep.
	_ = t.f.SetReadDeadline(time.Now().Add(time.Duration(deadlineNs - monoNow())))
	var expirations [8]byte
	_, err := t.f.Read(expirations[:])
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
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
