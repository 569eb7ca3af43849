package loop

import (
	"math"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sleepingPacer is a sleep-only pacer of period on the system clock, after
// its first tick, which arms its timerfd.
func sleepingPacer(t *testing.T, period int64) *Pacer {
	t.Helper()
	p := NewPacer(period, SystemClock())
	p.SleepOnly()
	armTimerfd(t, p)
	return p
}

// armTimerfd ticks a sleep-only pacer until a tick leaves its timerfd
// armed. A tick whose wake-up beat the timer's expiry (a thread woken by
// the read deadline on a loaded machine) leaves it to be armed on the next
// tick (see TestSleepOnlyPacerRearmsAnUnreadTimerfd).
func armTimerfd(t *testing.T, p *Pacer) {
	t.Helper()
	for range 50 {
		if p.Wait(); p.timer.armed {
			return
		}
	}
	t.Fatal("after 50 sleeping ticks the timerfd is not armed")
}

// expirationsRead is the count the pacer's last read of its timerfd took.
func expirationsRead(p *Pacer) int64 {
	count := int64(0)
	for i, b := range p.timer.expirations {
		count |= int64(b) << (8 * i)
	}
	return count
}

// TestSleepOnlyPacerRepeatsItsTimerfd: a sleep-only pacer arms its timerfd
// once for its grid and lets it repeat, never wakes before a deadline, and
// stops it when paused, so an idle shard's timer does not wake the process.
func TestSleepOnlyPacerRepeatsItsTimerfd(t *testing.T) {
	const period = int64(time.Millisecond)
	p := sleepingPacer(t, period)
	base := p.timer.baseNs
	for i := range 50 {
		if now, _ := p.Wait(); now < p.next {
			t.Fatalf("tick %d returned %d ns before its deadline", i, p.next-now)
		}
	}
	if allocs := testing.AllocsPerRun(20, func() { p.Wait() }); allocs != 0 {
		t.Errorf("a sleeping tick allocates %v times", allocs)
	}
	if p.timer.baseNs != base && p.timer.unread == 0 {
		t.Errorf("the timerfd was armed again for the same grid (from %d to %d) though every wake-up read its expiration", base, p.timer.baseNs)
	}
	// Pause stops a repeating timer. One whose last expiry a wake-up beat
	// (on a loaded machine) is not repeating: unread, it expires no more.
	// The timerfd's state is read with timerfd_gettime, which restarts
	// such a timer: so pause one that is repeating.
	armTimerfd(t, p)
	var its unix.ItimerSpec
	if err := unix.TimerfdGettime(p.timer.fd, &its); err != nil {
		t.Fatal(err)
	}
	if got := its.Interval.Nano(); got != period {
		t.Errorf("timerfd interval %d ns, want the period %d ns", got, period)
	}
	p.Pause()
	if err := unix.TimerfdGettime(p.timer.fd, &its); err != nil {
		t.Fatal(err)
	}
	if its.Value.Nano() != 0 || its.Interval.Nano() != 0 {
		t.Errorf("after Pause the timerfd is still armed: %+v", its)
	}
	// Restart, as a shard does when a device arrives: a new grid, armed
	// again by its first tick (which cannot overrun: the grid starts then).
	p.Restart()
	unread := p.timer.unread
	if now, _ := p.Wait(); now < p.next || p.timer.baseNs != p.next || (!p.timer.armed && p.timer.unread == unread) {
		t.Errorf("after Restart: armed %v from %d for the deadline %d, woke %d ns after it", p.timer.armed, p.timer.baseNs, p.next, now-p.next)
	}
}

// TestSleepOnlyPacerRearmsAnUnreadTimerfd: a wake-up that finds no
// expiration to read (the deadline came before the timer's expiry) leaves
// the repeating timerfd with an expiry nobody reads, and the kernel sets
// the next expiry only on a read: the pacer arms it anew at the next tick,
// so that tick is woken by the timerfd, on time.
//
// The scene needs the test's thread on time: a tick a period late does not
// sleep (an overrun), and a wake-up after the timer's expiry reads it. On a
// loaded machine either happens; the scene is then set again on a fresh
// grid. Neither depends on the pacer's handling of an unread timerfd.
func TestSleepOnlyPacerRearmsAnUnreadTimerfd(t *testing.T) {
	const period = 20 * int64(time.Millisecond)
	const expiryAfter = 15 * int64(time.Millisecond) // the timer's expiries after the pacer's deadlines
	p := sleepingPacer(t, period)
	// The read deadline at each tick, as while the process is busy: that
	// is the wake-up that beats the timerfd.
	p.timer.busyUntilNs = math.MaxInt64
	again := func(attempt int) {
		t.Helper()
		if attempt == 50 {
			t.Fatal("in 50 attempts the test's thread never ran on time for the scene (an overloaded machine)")
		}
		p.Restart()
		armTimerfd(t, p)
	}
	for attempt := 1; ; attempt++ {
		// As if each deadline were met before its expiry: the next
		// wake-up (by the clock or the read deadline) reads nothing.
		its := unix.ItimerSpec{Value: unix.NsecToTimespec(p.next + period + expiryAfter), Interval: unix.NsecToTimespec(period)}
		if err := unix.TimerfdSettime(p.timer.fd, unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
			t.Fatal(err)
		}
		p.timer.unread = 0
		if now, overrun := p.Wait(); overrun || now-p.next >= expiryAfter {
			again(attempt)
			continue
		}
		if p.timer.unread != 1 || p.timer.armed {
			t.Fatalf("a wake-up that read no expiration: unread %d, armed %v; want 1 and not armed", p.timer.unread, p.timer.armed)
		}
		// The next tick arms the timerfd anew on the pacer's grid. Its
		// own wake-up may beat the new expiry too (then it is not armed
		// again, but counted unread).
		if _, overrun := p.Wait(); overrun {
			again(attempt) // no sleep, so nothing armed
			continue
		}
		if p.timer.baseNs != p.next || p.timer.periodNs != period || (!p.timer.armed && p.timer.unread == 1) {
			t.Errorf("the tick after it did not arm the timerfd on the pacer's grid again (armed %v from %d every %d ns, deadline %d)", p.timer.armed, p.timer.baseNs, p.timer.periodNs, p.next)
		}
		break
	}
	var its unix.ItimerSpec
	if err := unix.TimerfdGettime(p.timer.fd, &its); err != nil {
		t.Fatal(err)
	}
	if got := its.Value.Nano(); got <= 0 || got > period {
		t.Errorf("the timerfd's next expiry is %d ns away, want within one period", got)
	}
}

// TestSleepOnlyPacerTakesASkippedExpiry: a tick that overruns a grid point
// leaves the timerfd's expiry there unread, and the kernel sets a repeating
// timerfd's next expiry only on a read. The next sleep must take it first,
// so that its own deadline's expiry wakes it (its read then finds exactly
// that one expiration), not the read deadline up to a millisecond late, or
// nothing at all.
//
// The scene needs the test's thread on time: a tick that read its expiry
// a period late (the kernel then set the next one later than the grid
// point after it), or that did not read it, and a sleep that overran too,
// woke a period late (and read two expirations for that) or did not read
// its expiry, leave nothing to check. On a loaded machine any of them
// happens; the scene is then set again. None depends on the pacer's taking
// a skipped expiry.
func TestSleepOnlyPacerTakesASkippedExpiry(t *testing.T) {
	const period = 20 * int64(time.Millisecond)
	p := sleepingPacer(t, period)
	for attempt := 1; ; attempt++ {
		if attempt > 50 {
			t.Fatal("in 50 attempts the test's thread never ran on time for the scene (an overloaded machine)")
		}
		// A tick that read its own expiry, on time.
		if now, overrun := p.Wait(); overrun || !p.timer.armed || now-p.next >= period {
			continue
		}
		// Overrun the next grid point, as a slow tick does.
		for monoNow() < p.next+period+period/2 {
		}
		drained := p.timer.drained
		if _, overrun := p.Wait(); !overrun {
			t.Fatal("a tick past its deadline was not an overrun")
		}
		unread := p.timer.unread
		now, overrun := p.Wait()
		if overrun || p.timer.unread != unread || now-p.next >= period {
			continue // no sleep, a wake-up that beat its expiry, or one a period late
		}
		if p.timer.drained == drained {
			t.Error("the sleep after an overrun did not take the skipped expiry off the timerfd")
		}
		if count := expirationsRead(p); count != 1 {
			t.Errorf("the sleep after an overrun read %d expirations, want 1: it was not woken by its own deadline's expiry", count)
		}
		return
	}
}

// BenchmarkSpinningPacer paces b.N ticks at 1 kHz with a spinning pacer on
// a locked thread with 1 ns timer slack, as a hardware loop and `hapticd
// baseline-device` run it, and reports the thread's CPU per tick and how
// late the ticks started: past the median tick's phase on the grid (the
// first tick may itself have been late). Compare commits with alternated
// runs of both test binaries (docs/performance.md); the figures depend on
// what else the machine runs.
func BenchmarkSpinningPacer(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, restore := tuneThread(0)
	defer restore()
	p := NewPacer(ms, SystemClock())
	first, _ := p.Wait()
	starts := make([]int64, 0, b.N)
	var before, after unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &before)
	b.ResetTimer()
	for range b.N {
		now, _ := p.Wait()
		starts = append(starts, now)
	}
	b.StopTimer()
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &after)
	cpu := after.Utime.Nano() - before.Utime.Nano() + after.Stime.Nano() - before.Stime.Nano()
	// Each start's place on the grid, relative to the median's, in
	// [-earlyNs, ms-earlyNs): a tick up to 900 µs late counts as late (the
	// pacer never wakes early, so a start before the median is a few µs
	// at most), not folded back as early.
	const earlyNs = 100 * int64(time.Microsecond)
	for i, s := range starts {
		starts[i] = (s - first) % ms
	}
	phases := slices.Clone(starts)
	slices.Sort(phases)
	phase := phases[len(phases)/2]
	for i, s := range starts {
		starts[i] = ((s-phase+earlyNs)%ms+ms)%ms - earlyNs
	}
	slices.Sort(starts)
	lateOver := func(ns int64) float64 {
		n := 0
		for _, s := range starts {
			if s > ns {
				n++
			}
		}
		return 100 * float64(n) / float64(len(starts))
	}
	b.ReportMetric(float64(cpu)/float64(b.N)/1e3, "cpu-us/tick")
	b.ReportMetric(lateOver(5*int64(time.Microsecond)), "%late>5us")
	b.ReportMetric(lateOver(20*int64(time.Microsecond)), "%late>20us")
	b.ReportMetric(float64(starts[len(starts)*99/100])/1e3, "late-p99-us")
}

// TestSleepOnlyPacerMovesItsReadDeadlineRarely: while its wake-ups come
// on time, a sleep-only pacer keeps its read deadline as a net well ahead
// of the tick and moves it about once every netAheadPeriods-netRenewPeriods
// ticks, not every tick: moving a runtime timer was half an idle tick's CPU.
//
// The scene needs the wake-ups on time: a late one (a loaded machine) puts
// the deadline at the tick for a while, as it should, and a tick so late
// that the pacer skips it (no sleep, no deadline placed) leaves the net
// nearer the tick; the scene is then set again. Counting the skipped tick
// as on time failed this test at load average 20.
func TestSleepOnlyPacerMovesItsReadDeadlineRarely(t *testing.T) {
	const period = 5 * int64(time.Millisecond)
	const ticks = 100
	p := sleepingPacer(t, period)
	for attempt := 1; ; attempt++ {
		if attempt > 50 {
			t.Fatal("in 50 attempts of 100 ticks the wake-ups were never all on time (an overloaded machine)")
		}
		p.timer.busyUntilNs = 0
		moves := p.timer.deadlineMoves
		late := false
		for range ticks {
			if _, overrun := p.Wait(); overrun {
				// A tick late enough to be skipped: the pacer did not
				// sleep, so placed no deadline, and the grid moved on
				// past it. Not the scene either.
				late = true
				break
			}
			if ahead := p.timer.deadlineNs - p.next; p.timer.busyUntilNs == 0 && ahead < netRenewPeriods*period {
				t.Fatalf("with the wake-ups on time the read deadline is %d ns past the tick, want at least %d", ahead, netRenewPeriods*period)
			}
		}
		if late || p.timer.busyUntilNs != 0 {
			continue // a late wake-up
		}
		most := uint64(ticks/(netAheadPeriods-netRenewPeriods) + 2)
		if got := p.timer.deadlineMoves - moves; got > most {
			t.Errorf("%d ticks on time moved the read deadline %d times, want at most %d", ticks, got, most)
		}
		return
	}
}

// TestSleepOnlyPacerReadDeadlineAtTheTickWhileBusy: when goroutines of
// the process wait for a P (here its only one, kept by a goroutine for three
// periods at a time), the read deadline is each tick's (a goroutine its
// deadline wakes runs next on its P, one the poller readies waits behind
// the others), until none has waited for busyForNs, when it is a net ahead
// again.
func TestSleepOnlyPacerReadDeadlineAtTheTickWhileBusy(t *testing.T) {
	const period = 2 * int64(time.Millisecond)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	p := sleepingPacer(t, period)
	p.timer.busyForNs = int64(100 * time.Millisecond)
	for attempt := 1; p.timer.busyUntilNs == 0; attempt++ {
		if attempt > 20*busyCheckSleeps {
			t.Fatal("goroutines kept waiting for the only P never put the read deadline at the tick")
		}
		// Keep the only P for three periods from now, with goroutines
		// waiting behind it (the runtime times one scheduling in eight).
		until := monoNow() + 3*period
		go func() {
			for range 64 {
				go func() {}()
			}
			for monoNow() < until {
			}
		}()
		p.Wait()
	}
	// Each sleep until the spell ends has its deadline at the tick; the
	// first after it a net ahead again.
	slept, deadline := 0, time.Now().Add(30*time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the busy spell the read deadline is still %d ns past the tick, want a net of at least %d", p.timer.deadlineNs-p.next, netRenewPeriods*period)
		}
		busy := p.next+period < p.timer.busyUntilNs // the next sleep's deadline
		if _, overrun := p.Wait(); overrun {
			continue // no sleep
		}
		slept++
		if ahead := p.timer.deadlineNs - p.next; busy && ahead != 0 {
			t.Fatalf("sleep %d of the busy spell: the read deadline is %d ns past the tick, want at it", slept, ahead)
		} else if !busy && ahead >= netRenewPeriods*period {
			break
		}
	}
	if slept < 2 {
		t.Errorf("the busy spell ended after %d sleeps, want it to last %d ns", slept, p.timer.busyForNs)
	}
}

// TestSleepOnlyPacerNetEndsASleepTheTimerfdMisses: a timerfd that does not
// expire (here disarmed behind the pacer's back) delays a tick by at most
// the read deadline's net, not forever, and the next tick arms it anew.
func TestSleepOnlyPacerNetEndsASleepTheTimerfdMisses(t *testing.T) {
	const period = int64(time.Millisecond)
	p := sleepingPacer(t, period)
	if err := unix.TimerfdSettime(p.timer.fd, 0, &unix.ItimerSpec{}, nil); err != nil {
		t.Fatal(err)
	}
	unread := p.timer.unread
	done := make(chan int64, 1)
	go func() {
		// A tick whose deadline passed before it was asked for (this
		// goroutine started over a period late on a loaded machine) is
		// an overrun: no sleep, the timer left alone, nothing of the
		// scenario run (it failed so: unread 0, was 0). The next tick
		// sleeps.
		for {
			if now, overrun := p.Wait(); !overrun {
				done <- now - p.next
				return
			}
		}
	}()
	select {
	case late := <-done:
		if late < 0 {
			t.Fatalf("the tick returned %d ns before its deadline", -late)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a tick whose timerfd never expires did not return in 30 s")
	}
	if p.timer.unread == unread || p.timer.armed {
		t.Fatalf("the wake-up by the net read no expiration but left the timerfd armed (unread %d, was %d)", p.timer.unread, unread)
	}
	armTimerfd(t, p)
}
