//go:build linux

package loop

import (
	"errors"
	"os"
	"runtime"
	"runtime/metrics"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// osTimer is a sleep-only pacer's timerfd, made on its first sleep; a
// spinning pacer needs no handle (clock_nanosleep).
type osTimer struct {
	fd    int
	f     *os.File        // fd in the runtime's poller; closed by its cleanup with the pacer
	raw   syscall.RawConn // f's, to wait for readiness without reading
	tried bool
	// due is the deadline of the sleep under way; come reports it passed,
	// a func made once so that a tick allocates nothing. woken is set
	// after come's first call of a sleep: later calls are the poller's
	// wake-ups.
	due   int64
	come  func(uintptr) bool
	woken bool
	// next is the earliest the armed timerfd can expire next: a deadline
	// past it means an expiry the pacer did not wait for (see drain).
	next int64
	// drained counts the expirations taken off the timerfd outside a
	// sleep's end (skipped or early ones), so that it expires again.
	drained uint64
	// expirations takes the timerfd's count: a field, since a local
	// handed to the read escapes under the race detector.
	expirations [8]byte
	// unread counts the wake-ups that found no expiration to read (the
	// clock or the read deadline came first): each one arms the timerfd
	// anew at the next tick.
	unread uint64
	// The timerfd repeats every periodNs from baseNs (armed), so a pacer on
	// its grid arms it once, not before every tick.
	armed            bool
	baseNs, periodNs int64
	// The read deadline (see sleepPolled): deadlineNs is where it stands
	// (0: none yet). Until busyUntilNs it is moved to every tick; after
	// that it is a net netAheadPeriods past the tick, moved about once
	// every netAheadPeriods-netRenewPeriods ticks. busyForNs is how long
	// goroutines kept waiting for a P keep it at the tick (0:
	// defaultBusyForNs). deadlineMoves counts the moves.
	deadlineNs    int64
	busyUntilNs   int64
	busyForNs     int64
	deadlineMoves uint64
	sinceCheck    int // sleeps since the run queues were last looked at
	runQueues     runQueueWatch
}

// The read deadline's two settings. Moving a runtime timer every tick was
// half of an idle sleep-only tick's CPU (24 to 28 µs against 10 to 15 µs
// with the deadline 50 ms ahead and moved every 40th tick: the
// investigation "What a sleep-only tick costs" in
// docs/investigations/message-cost.md), and the process's neighbours on
// its CPU lose that much. At the tick it matters only when every P is busy:
// the runtime's count of goroutines that waited longer than a quarter
// period (at least busyWaitMinNs) for a P, looked at every busyCheckSleeps
// sleeps, puts the deadline at the tick for defaultBusyForNs. A late
// wake-up alone does not: on a loaded host the kernel wakes the thread
// late, and no runtime timer helps with that.
const (
	netAheadPeriods  = 50
	netRenewPeriods  = 10
	busyCheckSleeps  = 32
	defaultBusyForNs = int64(time.Second)
	busyWaitMinNs    = 100 * int64(time.Microsecond)
)

// runQueueWatch counts the goroutines of the process that waited long for
// a P, from the runtime's histogram of the time runnable goroutines waited
// (it samples one scheduling in eight). Reading it allocates nothing after
// the first read.
type runQueueWatch struct {
	sample [1]metrics.Sample
	seen   uint64 // waits of at least the threshold counted at the last look
	looked bool
}

// waitedOver reports whether a goroutine has waited at least ns for a P
// since the last call (the first call only takes the count).
func (w *runQueueWatch) waitedOver(ns int64) bool {
	if w.sample[0].Name == "" {
		w.sample[0].Name = "/sched/latencies:seconds"
	}
	metrics.Read(w.sample[:])
	if w.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return false
	}
	h := w.sample[0].Value.Float64Histogram()
	over := float64(ns) / 1e9
	var n uint64
	for i, c := range h.Counts {
		if h.Buckets[i] >= over {
			n += c
		}
	}
	more := w.looked && n > w.seen
	w.seen, w.looked = n, true
	return more
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
	if p.maxSpin == 0 && p.timer.sleepPolled(deadlineNs, p.periodNs) {
		return
	}
	p.timer.stop() // a spinning pacer's timerfd would wake the poller for nothing
	ts := unix.NsecToTimespec(deadlineNs)
	if p.keepP {
		// A raw system call: the Go scheduler still sees the goroutine
		// running, so sysmon neither retakes the P (it would every 20 µs
		// of the sleep when no P is idle, and wake that often) nor hands
		// it to a spinning thread that the shard must then wait out.
		for {
			_, _, errno := unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
				uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
			if errno != unix.EINTR {
				return
			}
			// A signal: most likely the runtime asking this goroutine to
			// stop (for the collector, or after 10 ms on its P), which it
			// cannot do inside the system call. Answer it now, not at the
			// deadline: a stop of the world waits for every P.
			runtime.Gosched()
		}
	}
	for {
		err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// sleepPolled sleeps until deadlineNs on the timerfd; false when there is
// none (the caller sleeps another way).
//
// The timerfd repeats every period on the pacer's grid, and the wait asks
// the clock, not the timerfd, whether the deadline has come: each expiry is
// an edge the poller reports. So a tick on the grid makes one system call,
// the read after the wake-up (a repeating timerfd expires again only once
// read). One-shot, each tick took three (timerfd_settime, a read that found
// nothing, the read after the wake-up); the first system call after all of
// a process's Ps were idle wakes sysmon (entersyscall), a context switch
// more on the CPU a lock-step client shares with the service.
func (t *osTimer) sleepPolled(deadlineNs, periodNs int64) bool {
	if !t.tried {
		t.tried = true
		fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
		if err != nil {
			return false
		}
		// Non-blocking, so os registers it with the poller.
		f := os.NewFile(uintptr(fd), "pacer-timerfd")
		raw, err := f.SyscallConn()
		if err != nil {
			_ = f.Close()
			return false
		}
		t.fd, t.f, t.raw = fd, f, raw
		t.come = func(uintptr) bool {
			if monoNow() >= t.due {
				return true
			}
			if t.woken {
				// The poller reported an expiry before the deadline (an
				// earlier one, left unread): take it, or the timerfd
				// never expires at the deadline.
				t.drain()
			}
			t.woken = true
			return false
		}
	}
	if t.f == nil {
		return false
	}
	if !t.onGrid(deadlineNs, periodNs) {
		// Off the grid (a new one after Restart, or a clock that is not
		// the system's): repeat from this deadline.
		its := unix.ItimerSpec{Value: unix.NsecToTimespec(deadlineNs), Interval: unix.NsecToTimespec(periodNs)}
		if err := unix.TimerfdSettime(t.fd, unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
			t.armed = false
			return false
		}
		t.armed, t.baseNs, t.periodNs, t.next = true, deadlineNs, periodNs, deadlineNs
	} else if deadlineNs > t.next {
		// The last tick overran a grid point (Pacer.Wait skipped it): the
		// expiry there came while the shard ran and is unread, and its
		// edge is gone (RawRead resets the poller's readiness). Unread,
		// the timerfd would not expire at this deadline, and only the read
		// deadline would end the sleep, up to the poller's millisecond
		// late; without it the loop stalled.
		t.drain()
	}
	// A read deadline too, a runtime timer: when every P is busy (100
	// sessions at 1 kHz on 2 cores), a goroutine the poller readies waits
	// behind every goroutine it readied with it, but one its read deadline
	// wakes runs next on its P. So while goroutines wait for a P the read
	// deadline is this tick's. Otherwise the timerfd wakes the shard on
	// time (the runtime's timers round to the poller's millisecond), and
	// the read deadline is only a net, well ahead, so that a timerfd that
	// somehow does not expire delays a tick by at most netAheadPeriods
	// (that wake-up reads no expiration, so the next tick arms it anew).
	// Whichever comes first ends the sleep.
	t.placeReadDeadline(deadlineNs, periodNs)
	// The poller's readiness is reset before the first call, so an expiry
	// before it is caught by the clock, one after it by the poller; a
	// wake-up for an earlier expiry finds the deadline not yet come and
	// waits again.
	t.due, t.woken = deadlineNs, false
	err := t.raw.Read(t.come)
	// Take the expirations, so the timerfd expires again at the next
	// period: the kernel sets a repeating timerfd's next expiry only when
	// its count is read. Nothing to take means the clock or the read
	// deadline beat the timer's own expiry, which then stays unread and
	// the timerfd never expires again: the next tick would wake only by
	// its read deadline, up to the poller's millisecond late (bursts of
	// 2 ms periods, 2 to 7 % of the ticks of some 1 s runs of 8 arms).
	// So arm it anew then.
	//
	// A raw system call: the timerfd is non-blocking, so the call never
	// blocks and needs none of the runtime's syscall bookkeeping, whose
	// entersyscall wakes sysmon when the process was idle. Idle with one
	// arm on one CPU, one P, that was two of a tick's three context
	// switches (sysmon woken, then back to sleep): 35 to 38 µs of CPU per
	// tick became 21 to 27 µs, futex calls 2 → 0.07 per tick.
	if t.takeExpirations() != 0 {
		t.unread++
		t.armed = false
	} else {
		// Read at or after the deadline: the kernel set the next expiry
		// at the first grid point after the read, one period on or later.
		t.next = deadlineNs + periodNs
	}
	return err == nil || errors.Is(err, os.ErrDeadlineExceeded)
}

// placeReadDeadline sets the read deadline for the sleep until deadlineNs
// of a pacer of periodNs: at it while the process is busy, else a net ahead
// of it, moved only when the net comes within netRenewPeriods of the tick.
func (t *osTimer) placeReadDeadline(deadlineNs, periodNs int64) {
	if t.sinceCheck++; t.sinceCheck >= busyCheckSleeps {
		t.sinceCheck = 0
		if t.runQueues.waitedOver(max(periodNs/4, busyWaitMinNs)) {
			busyFor := t.busyForNs
			if busyFor == 0 {
				busyFor = defaultBusyForNs
			}
			t.busyUntilNs = monoNow() + busyFor
		}
	}
	at := deadlineNs
	if deadlineNs >= t.busyUntilNs {
		if ahead := t.deadlineNs - deadlineNs; ahead >= netRenewPeriods*periodNs && ahead <= netAheadPeriods*periodNs {
			return
		}
		at = deadlineNs + netAheadPeriods*periodNs
	}
	t.deadlineNs = at
	t.deadlineMoves++
	_ = t.f.SetReadDeadline(time.Now().Add(time.Duration(at - monoNow())))
}

// drain takes an expiration the pacer did not wait for, if there is one, so
// that the repeating timerfd expires again (the kernel sets its next expiry
// only when its count is read).
func (t *osTimer) drain() {
	if t.takeExpirations() == 0 {
		t.drained++
	}
}

// takeExpirations reads the timerfd's count of expirations into
// t.expirations: EAGAIN when there is none.
func (t *osTimer) takeExpirations() syscall.Errno {
	_, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(t.fd), uintptr(unsafe.Pointer(&t.expirations[0])), uintptr(len(t.expirations)))
	return errno
}

// onGrid reports whether the armed timerfd expires at deadlineNs.
func (t *osTimer) onGrid(deadlineNs, periodNs int64) bool {
	return t.armed && periodNs == t.periodNs && deadlineNs >= t.baseNs && (deadlineNs-t.baseNs)%periodNs == 0
}

// stop disarms the repeating timerfd, when the pacer stops sleeping on it
// (it spins, or its loop has nothing to step).
func (t *osTimer) stop() {
	if !t.armed {
		return
	}
	t.armed = false
	_ = unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{}, nil)
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

// pacerKeepsP: a Linux pacer can sleep holding its P (KeepP).
const pacerKeepsP = true
