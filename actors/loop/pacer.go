package loop

import (
	"runtime"
	"time"
)

// Pacer paces a loop by absolute deadlines on a fixed grid: it sleeps until
// shortly before each deadline, then spins to it, so ticks neither drift nor
// inherit the sleep's wake-up latency. A tick that starts after its deadline
// is an overrun; the grid then skips the missed deadlines rather than firing
// them in a burst.
//
// A Pacer belongs to one goroutine (ideally locked to its OS thread). Its
// Clock must advance in real time; a manual clock that does not advance
// still sees one wait of about one period per tick.
type Pacer struct {
	periodNs int64
	clock    Clock
	system   bool  // deadlines are CLOCK_MONOTONIC values
	next     int64 // the next deadline, Clock time
	// lateNs estimates how late the OS wakes the thread from a sleep; the
	// spin covers it. It jumps up at once and decays slowly.
	lateNs int64
	// maxSpin bounds the spin (0: sleep only).
	maxSpin int64
	// timer is what the OS sleeps on (a waitable timer on Windows; nothing
	// elsewhere). Its zero value is ready to use.
	timer osTimer
	// keepP: a spinning pacer sleeps without telling the Go scheduler
	// (see KeepP).
	keepP bool
}

const (
	minSpinNs = 5 * int64(time.Microsecond)
	maxSpinNs = 200 * int64(time.Microsecond)
)

// NewPacer returns a pacer with the given period (at least 1 µs) on clock
// (nil: SystemClock()).
func NewPacer(periodNs int64, clock Clock) *Pacer {
	if periodNs < int64(time.Microsecond) {
		periodNs = int64(time.Microsecond)
	}
	if clock == nil {
		clock = SystemClock()
	}
	_, system := clock.(systemClock)
	return &Pacer{periodNs: periodNs, clock: clock, system: system, lateNs: 20 * int64(time.Microsecond), maxSpin: maxSpinNs}
}

// SleepOnly makes the pacer sleep to each deadline without spinning. The
// spin buys a few tens of microseconds of precision for up to a fifth of a
// core per loop; loops that do not need that precision (simulated devices)
// should not pay for it.
func (p *Pacer) SleepOnly() { p.Spin(false) }

// Spin turns the spin before each deadline on (the default) or off
// (SleepOnly).
func (p *Pacer) Spin(on bool) {
	p.maxSpin = 0
	if on {
		p.maxSpin = maxSpinNs
	}
}

// KeepP makes a spinning pacer sleep without giving up its goroutine's P
// (Linux; elsewhere it changes nothing). Its thread must be locked, and the
// process needs a P for its other goroutines beside every thread that does
// this: Procs.Hold lends one, and reports whether KeepP may be turned on.
//
// Why: a spinning pacer sleeps in clock_nanosleep, a system call, and the Go
// scheduler retakes the P of a thread that stays in a system call over one
// of sysmon's ticks (20 µs) whenever no P is idle, as when every P is busy
// stepping arms. Each retake hands the P to another thread, keeps sysmon
// waking every 20 µs, and leaves the pacer's thread to find a P again when
// it wakes, behind whatever goroutine took it (docs/performance.md,
// "Capacity with effects").
func (p *Pacer) KeepP(on bool) { p.keepP = on }

// Restart starts a new grid from the next Wait, after a pause that must not
// count as overruns.
func (p *Pacer) Restart() { p.next = 0 }

// Pause tells the pacer that its loop stops waiting on it for a while (a
// shard with nothing to step): a timer it repeats stops, so it does not
// wake the process every period for nothing. The next Wait arms it again.
func (p *Pacer) Pause() { p.timer.stop() }

// PeriodNs returns the pacer's period.
func (p *Pacer) PeriodNs() int64 { return p.periodNs }

// Wait blocks until the next deadline and returns the time then. overrun is
// true when the deadline had already passed on entry; Wait then returns at
// once and moves the grid past now.
func (p *Pacer) Wait() (nowNs int64, overrun bool) {
	now := p.clock.Now()
	if p.next == 0 {
		p.next = now
	}
	p.next += p.periodNs
	if now >= p.next {
		p.next += (now - p.next) / p.periodNs * p.periodNs
		return now, true
	}
	p.waitFor(p.next - now)
	return p.clock.Now(), false
}

// spinNs is how long before a deadline the pacer stops sleeping. The half
// of the estimate on top is what keeps the ticks punctual: without it (or
// with the latest of the last 32 wake-ups instead of the decaying peak) a
// hardware loop spent 0.7x the CPU but was late by over 5 µs 1.0x to 1.4x
// as often (BenchmarkSpinningPacer, docs/performance.md).
func (p *Pacer) spinNs() int64 {
	if p.maxSpin == 0 {
		return 0
	}
	s := p.lateNs + p.lateNs/2 + minSpinNs
	if s > p.maxSpin {
		s = p.maxSpin
	}
	if s > p.periodNs/2 {
		s = p.periodNs / 2
	}
	return s
}

// noteLate feeds one observed wake-up latency to the estimate.
func (p *Pacer) noteLate(lateNs int64) {
	if lateNs < 0 {
		lateNs = 0
	}
	if lateNs > maxSpinNs {
		// The thread was preempted, not woken late by the timer: a
		// longer spin would not have helped, only burnt CPU.
		return
	}
	if lateNs > p.lateNs {
		p.lateNs = lateNs
		return
	}
	p.lateNs -= (p.lateNs - lateNs) / 64
}

// waitFor waits remainingNs of real time: a sleep to the spin margin, then a
// busy wait on the monotonic clock. The spin does not yield: a yield could
// hand the thread's P away and wake late.
func (p *Pacer) waitFor(remainingNs int64) {
	if remainingNs > p.periodNs {
		remainingNs = p.periodNs // a clock that jumped must not stall the loop
	}
	start := monoNow()
	target := start + remainingNs
	if p.system {
		target = p.next
	}
	if sleepTo := target - p.spinNs(); sleepTo > start {
		p.sleepUntil(sleepTo)
		p.noteLate(monoNow() - sleepTo)
	}
	for monoNow() < target {
	}
}

// monoNow is CLOCK_MONOTONIC (on Linux) in nanoseconds.
func monoNow() int64 { return systemClock{}.Now() }

// RealtimeGranted asks, on a thread of its own and for a moment, for what a
// loop with RealtimePriority prio asks its thread for, and says whether the
// OS granted it: a service asked for real-time loops warns at its start when
// they will not get it (their Stats.Realtime reads false; the OS refuses
// without CAP_SYS_NICE or an RLIMIT_RTPRIO of at least prio).
func RealtimeGranted(prio int) bool {
	granted := make(chan bool)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rt, restore := tuneThread(prio)
		restore()
		granted <- rt
	}()
	return <-granted
}
