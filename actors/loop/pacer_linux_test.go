package loop

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSleepOnlyPacerRepeatsItsTimerfd: a sleep-only pacer arms its timerfd
// once for its grid and lets it repeat, never wakes before a deadline, and
// stops it when paused, so an idle shard's timer does not wake the process.
func TestSleepOnlyPacerRepeatsItsTimerfd(t *testing.T) {
	const period = int64(time.Millisecond)
	p := NewPacer(period, SystemClock())
	p.SleepOnly()
	p.Wait()
	if !p.timer.armed {
		t.Fatal("after a sleeping tick the timerfd is not armed")
	}
	base := p.timer.baseNs
	for i := range 50 {
		if now, _ := p.Wait(); now < p.next {
			t.Fatalf("tick %d returned %d ns before its deadline", i, p.next-now)
		}
	}
	if allocs := testing.AllocsPerRun(20, func() { p.Wait() }); allocs != 0 {
		t.Errorf("a sleeping tick allocates %v times", allocs)
	}
	if p.timer.baseNs != base {
		t.Errorf("the timerfd was armed again for the same grid (from %d to %d)", base, p.timer.baseNs)
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
