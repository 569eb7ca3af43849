package loop

import (
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
	// A tick whose wake-up beat the timer's expiry (a thread woken by the
	// read deadline on a loaded machine) leaves it to be armed on the next
	// tick (see TestSleepOnlyPacerRearmsAnUnreadTimerfd).
	for range 50 {
		if p.Wait(); p.timer.armed {
			return p
		}
	}
	t.Fatal("after 50 sleeping ticks the timerfd is not armed")
	return nil
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
	// Restart, as a shard does when a device arrives: a new grid, armed again.
	p.Restart()
	p.Wait()
	if now, _ := p.Wait(); now < p.next || !p.timer.armed {
		t.Errorf("after Restart: armed %v, woke %d ns before the deadline", p.timer.armed, p.next-now)
	}
}

// TestSleepOnlyPacerRearmsAnUnreadTimerfd: a wake-up that finds no
// expiration to read (the deadline came before the timer's expiry) leaves
// the repeating timerfd with an expiry nobody reads, and the kernel sets
// the next expiry only on a read: the pacer arms it anew at the next tick,
// so that tick is woken by the timerfd, on time.
func TestSleepOnlyPacerRearmsAnUnreadTimerfd(t *testing.T) {
	const period = 10 * int64(time.Millisecond)
	p := sleepingPacer(t, period)
	// Put the timer's expiries 8 ms after the pacer's deadlines, as if each
	// deadline were met before its expiry: the next wake-up (by the clock
	// or the read deadline) reads nothing. A thread woken over 8 ms late
	// (a loaded machine) reads the expiry after all and shows nothing:
	// set the scene again then.
	for attempt := 1; ; attempt++ {
		its := unix.ItimerSpec{Value: unix.NsecToTimespec(p.next + period + 8*int64(time.Millisecond)), Interval: unix.NsecToTimespec(period)}
		if err := unix.TimerfdSettime(p.timer.fd, unix.TFD_TIMER_ABSTIME, &its, nil); err != nil {
			t.Fatal(err)
		}
		p.timer.unread = 0
		if now, _ := p.Wait(); now-p.next >= 8*int64(time.Millisecond) && attempt < 20 {
			p.Restart()
			p.Wait()
			continue
		}
		if p.timer.unread != 1 || p.timer.armed {
			t.Fatalf("a wake-up that read no expiration: unread %d, armed %v; want 1 and not armed", p.timer.unread, p.timer.armed)
		}
		break
	}
	p.Wait()
	if !p.timer.armed || !p.timer.onGrid(p.next, period) {
		t.Errorf("the tick after it did not arm the timerfd on the pacer's grid again (armed %v, base %d, deadline %d)", p.timer.armed, p.timer.baseNs, p.next)
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
func TestSleepOnlyPacerTakesASkippedExpiry(t *testing.T) {
	const period = 20 * int64(time.Millisecond)
	p := sleepingPacer(t, period)
	for attempt := 1; ; attempt++ {
		p.Wait()
		// Overrun the next grid point, as a slow tick does.
		for monoNow() < p.next+period+period/2 {
		}
		drained := p.timer.drained
		if _, overrun := p.Wait(); !overrun {
			t.Fatal("a tick past its deadline was not an overrun")
		}
		p.Wait()
		count := int64(0)
		for i, b := range p.timer.expirations {
			count |= int64(b) << (8 * i)
		}
		if count != 1 && attempt < 10 {
			// Read a period or more late (a loaded machine): try again.
			continue
		}
		if p.timer.drained == drained {
			t.Error("the sleep after an overrun did not take the skipped expiry off the timerfd")
		}
		if count != 1 || !p.timer.armed {
			t.Errorf("the sleep after an overrun read %d expirations (armed %v), want 1: it was not woken by its own deadline's expiry", count, p.timer.armed)
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
