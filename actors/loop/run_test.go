package loop

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// eventLog collects events from any goroutine.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// first returns the first event of kind k (zero if none).
func (l *eventLog) first(k EventKind) Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Kind == k {
			return e
		}
	}
	return Event{}
}

func (l *eventLog) count(k EventKind) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, e := range l.events {
		if e.Kind == k {
			n++
		}
	}
	return n
}

func TestPacerTicksAdvance(t *testing.T) {
	p := NewPacer(200*int64(time.Microsecond), SystemClock())
	prev := int64(0)
	for i := 0; i < 200; i++ {
		now, _ := p.Wait()
		if now <= prev {
			t.Fatalf("tick %d at %d, not after the previous %d", i, now, prev)
		}
		prev = now
	}
}

// TestPacedTickDoesNotAllocate: the clock and a paced wait allocate
// nothing, on every platform's clock and timer (on Windows, system calls
// made through a variadic LazyProc.Call allocated four times a tick). At
// 1 to 8 kHz per loop an allocation a tick is garbage the whole fleet's
// collector must chase.
func TestPacedTickDoesNotAllocate(t *testing.T) {
	clock := SystemClock()
	if n := testing.AllocsPerRun(300, func() { clock.Now() }); n != 0 {
		t.Errorf("reading the clock allocates %v times", n)
	}
	for _, sleepOnly := range []bool{false, true} {
		p := NewPacer(500*int64(time.Microsecond), clock)
		p.Spin(!sleepOnly)
		p.Wait() // starts the grid (and creates an OS timer, once)
		if n := testing.AllocsPerRun(50, func() { p.Wait() }); n != 0 {
			t.Errorf("a paced wait (sleep-only %v) allocates %v times", sleepOnly, n)
		}
	}
}

// TestPacerWakesNoEarlierThanItsDeadline covers both ways of sleeping: a
// spinning pacer (hardware loops) and a sleep-only one (simulated shards,
// on Linux a timerfd in the runtime's poller). A tick before its deadline
// would run a loop faster than its rate.
func TestPacerWakesNoEarlierThanItsDeadline(t *testing.T) {
	for _, sleepOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("sleep-only=%v", sleepOnly), func(t *testing.T) {
			const period, ticks = 500 * int64(time.Microsecond), 100
			p := NewPacer(period, SystemClock())
			if sleepOnly {
				p.SleepOnly()
			}
			p.Wait()
			// Measured from the first deadline, not from the first wake:
			// on a loaded machine that wake may itself be periods late.
			first := p.next
			var now int64
			for i := 0; i < ticks; i++ {
				var overrun bool
				now, overrun = p.Wait()
				if !overrun && now < p.next {
					t.Fatalf("tick %d woke %d ns before its deadline", i, p.next-now)
				}
			}
			if took := now - first; took < ticks*period {
				t.Fatalf("%d ticks of %d ns after the first deadline ended %d ns after it", ticks, period, took)
			}
		})
	}
}

func TestPacerSkipsMissedDeadlines(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	p := NewPacer(ms, clock)
	p.Wait() // starts the grid; a manual clock that stands still waits one real period
	// Ticks are late by 10 periods each: every Wait is an overrun that
	// returns at once (the manual clock is late, never early), and the grid
	// does not fall further behind.
	for i := 0; i < 5; i++ {
		clock.Advance(10 * ms)
		now, overrun := p.Wait()
		if !overrun || now != clock.Now() {
			t.Fatalf("late tick %d: now %d overrun %v", i, now, overrun)
		}
		if behind := clock.Now() - p.next; behind < 0 || behind >= ms {
			t.Fatalf("after tick %d the next deadline is %d ns behind now, want less than one period", i, behind)
		}
	}
}

func TestRunLockedStopsOnCancelAndHalts(t *testing.T) {
	drv := looptest.NewArm()
	d := NewDevice(drv, DeviceOptions{PeriodNs: 500 * int64(time.Microsecond)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunLocked(ctx, d) }()
	hwtest.Eventually(t, 10*time.Second, "20 ticks", func() bool { return d.Stats().Ticks >= 20 })
	if err := RunLocked(ctx, d); err == nil {
		t.Fatal("a second RunLocked on a running device did not fail")
	}
	// A command written now is applied by the running loop.
	reg := d.Register()
	reg.Claim(1)
	c := force(1, 0, 0)
	reg.Write(1, 1, SystemClock().Now()+int64(time.Minute), &c, nil)
	hwtest.Eventually(t, 10*time.Second, "the command to reach the driver", func() bool { return drv.Last().Mode == hw.ModeForce })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunLocked after cancel = %v, want nil", err)
	}
	if drv.Halts() == 0 || drv.Last().Mode != hw.ModeIdle {
		t.Fatalf("driver not halted on the way out: %d halts, last %+v", drv.Halts(), drv.Last())
	}
	st := d.Stats()
	if st.Period.Count == 0 || st.Ticks < 20 || st.Exchange.Count == 0 || st.Busy.Count == 0 {
		t.Fatalf("stats after a run = %+v", st)
	}
}

func TestRunLockedReturnsWhenTheDeviceFails(t *testing.T) {
	drv := looptest.NewArm()
	var log eventLog
	d := NewDevice(drv, DeviceOptions{PeriodNs: 200 * int64(time.Microsecond), MaxErrors: 3, OnEvent: log.add})
	drv.FailNext(1000, nil)
	err := RunLocked(context.Background(), d)
	if err == nil || !d.Failed() {
		t.Fatalf("RunLocked on a failing driver = %v (failed %v), want an error", err, d.Failed())
	}
	if log.count(EventFailed) != 1 || log.count(EventDriverError) != 1 {
		t.Fatalf("events = %+v", log.events)
	}
}

func TestRunLockedRecoversPanics(t *testing.T) {
	drv := looptest.NewArm()
	drv.PanicFrom(5)
	d := NewDevice(drv, DeviceOptions{PeriodNs: 200 * int64(time.Microsecond)})
	err := RunLocked(context.Background(), d)
	if err == nil {
		t.Fatal("RunLocked after a panic returned nil")
	}
	if drv.Halts() == 0 {
		t.Fatal("driver not halted after a panic")
	}
	// The device can be run again.
	drv.PanicFrom(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := RunLocked(ctx, d); err != nil {
		t.Fatalf("RunLocked after recovery = %v", err)
	}
}

func TestHaltWhileRunning(t *testing.T) {
	drv := looptest.NewArm()
	d := NewDevice(drv, DeviceOptions{PeriodNs: 200 * int64(time.Microsecond)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- RunLocked(ctx, d) }()
	reg := d.Register()
	reg.Claim(1)
	c := force(2, 0, 0)
	reg.Write(1, 1, SystemClock().Now()+int64(time.Minute), &c, nil)
	hwtest.Eventually(t, 10*time.Second, "the command to reach the driver", func() bool { return drv.Last().Mode == hw.ModeForce })
	for i := 0; i < 20; i++ {
		d.Halt()
		// Halt returns after the driver was halted; the loop then sends
		// idle (the command was disarmed), never the old force.
		if n := drv.Halts(); n < uint64(i+1) {
			t.Fatalf("Halt returned before the driver was halted (%d halts)", n)
		}
	}
	ticks := d.Stats().Ticks
	hwtest.Eventually(t, 10*time.Second, "more ticks", func() bool { return d.Stats().Ticks > ticks+10 })
	if m := drv.Last().Mode; m != hw.ModeIdle {
		t.Fatalf("after Halt the loop applied %v", m)
	}
	cancel()
	<-done
}

// A few devices share one shard; the shards without devices sleep instead
// of ticking, and wake when one arrives.
func TestSchedulerIdleShardsSleep(t *testing.T) {
	s := NewScheduler(SchedulerOptions{PeriodNs: 500 * int64(time.Microsecond), Shards: 2})
	s.Start()
	defer s.Stop()
	d := NewDevice(looptest.NewArm(), DeviceOptions{PeriodNs: 500 * int64(time.Microsecond)})
	s.Add(d)
	hwtest.Eventually(t, 10*time.Second, "the device to tick", func() bool { return d.Stats().Ticks > 20 })
	if n := len(*s.shards[1].devices.Load()); n != 0 {
		t.Fatalf("the second shard holds %d devices; one device belongs on the first", n)
	}
	if n := s.shards[1].stats.period.Summary().Count; n != 0 {
		t.Fatalf("an empty shard ticked %d times", n)
	}
}

func TestSchedulerStepsAddedDevices(t *testing.T) {
	var log eventLog
	s := NewScheduler(SchedulerOptions{PeriodNs: 500 * int64(time.Microsecond), Shards: 2, ShardFill: 5, OnRateWarning: log.add})
	var devs []*Device
	var drvs []*looptest.Driver
	for i := 0; i < 10; i++ {
		drv := looptest.NewArm()
		d := NewDevice(drv, DeviceOptions{PeriodNs: 500 * int64(time.Microsecond)})
		s.Add(d)
		s.Add(d) // a second Add is a no-op
		devs, drvs = append(devs, d), append(drvs, drv)
	}
	if s.Len() != 10 {
		t.Fatalf("Len = %d, want 10", s.Len())
	}
	for i, sh := range s.shards {
		if n := len(*sh.devices.Load()); n != 5 {
			t.Fatalf("shard %d holds %d devices, want 5 (fill one, then the next)", i, n)
		}
	}
	if err := RunLocked(context.Background(), devs[0]); err == nil {
		t.Fatal("RunLocked on a scheduled device did not fail")
	}
	s.Start()
	s.Start() // idempotent
	hwtest.Eventually(t, 10*time.Second, "every device to tick", func() bool {
		for _, d := range devs {
			if d.Stats().Ticks < 5 {
				return false
			}
		}
		return true
	})
	// Removing a device stops its ticks; the others go on.
	s.Remove(devs[3])
	s.Remove(devs[3]) // not there any more: a no-op
	removed := devs[3].Stats().Ticks
	other := devs[4].Stats().Ticks
	hwtest.Eventually(t, 10*time.Second, "the others to tick on", func() bool { return devs[4].Stats().Ticks > other+10 })
	if got := devs[3].Stats().Ticks; got != removed {
		t.Fatalf("a removed device ticked %d more times", got-removed)
	}
	if err := drvs[3].Close(); err != nil {
		t.Fatal(err)
	}
	st := devs[0].Stats()
	if st.Period.Count == 0 || st.Busy.Count == 0 || st.TargetNs != 500*int64(time.Microsecond) {
		t.Fatalf("a scheduled device's stats lack its shard's period: %+v", st)
	}
	s.Stop()
	s.Stop()
	if s.Len() != 0 {
		t.Fatalf("Len after Stop = %d", s.Len())
	}
	for i, drv := range drvs {
		if i != 3 && drv.Halts() == 0 {
			t.Fatalf("device %d not halted by Stop", i)
		}
	}
	s.Add(devs[0]) // after Stop: a no-op
	if s.Len() != 0 {
		t.Fatal("Add after Stop added a device")
	}
}

func TestSchedulerSurvivesAPanickingDevice(t *testing.T) {
	var log eventLog
	s := NewScheduler(SchedulerOptions{PeriodNs: 500 * int64(time.Microsecond), Shards: 1})
	bad := looptest.NewArm()
	bad.PanicFrom(3)
	badDev := NewDevice(bad, DeviceOptions{OnEvent: log.add})
	good := NewDevice(looptest.NewArm(), DeviceOptions{})
	s.Add(badDev)
	s.Add(good)
	s.Start()
	defer s.Stop()
	hwtest.Eventually(t, 10*time.Second, "the good device to keep ticking", func() bool { return good.Stats().Ticks > 50 })
	if !badDev.Failed() || log.count(EventFailed) != 1 || bad.Halts() == 0 {
		t.Fatalf("panicking device: failed %v, events %+v, halts %d", badDev.Failed(), log.events, bad.Halts())
	}
}

func TestSchedulerWithoutStartHaltsDirectly(t *testing.T) {
	s := NewScheduler(SchedulerOptions{})
	drv := looptest.NewArm()
	d := NewDevice(drv, DeviceOptions{})
	s.Add(d)
	d.Halt() // nobody is stepping: Halt must not wait for a tick
	if drv.Halts() != 1 {
		t.Fatalf("halts = %d, want 1", drv.Halts())
	}
	s.Remove(d)
	s.Stop()
}

// panickyArm panics in Exchange and in Halt.
type panickyArm struct{ *looptest.Driver }

func (a panickyArm) Exchange(*hw.Command, *hw.State) error { panic("exchange") }
func (a panickyArm) Halt() error                           { panic("halt") }

func TestPanickingHaltDoesNotCrash(t *testing.T) {
	d := NewDevice(panickyArm{looptest.NewArm()}, DeviceOptions{PeriodNs: 200 * int64(time.Microsecond)})
	if err := RunLocked(context.Background(), d); err == nil {
		t.Fatal("RunLocked with a panicking driver returned nil")
	}
	s := NewScheduler(SchedulerOptions{PeriodNs: 200 * int64(time.Microsecond), Shards: 1})
	d2 := NewDevice(panickyArm{looptest.NewArm()}, DeviceOptions{})
	good := NewDevice(looptest.NewArm(), DeviceOptions{})
	s.Add(d2)
	s.Add(good)
	s.Start()
	hwtest.Eventually(t, 10*time.Second, "the good device to keep ticking", func() bool { return good.Stats().Ticks > 20 })
	if !d2.Failed() {
		t.Fatal("the panicking device was not failed")
	}
	s.Remove(d2)
	s.Stop()
}

func TestPacerLearnsItsSpinMargin(t *testing.T) {
	us := int64(time.Microsecond)
	p := NewPacer(ms, SystemClock())
	start := p.spinNs()
	p.noteLate(80 * us)
	if got := p.spinNs(); got != 80*us+40*us+minSpinNs {
		t.Fatalf("after an 80 µs late wake the spin is %d ns, want 125 µs", got)
	}
	p.noteLate(5 * ms) // preemption: not the timer's latency
	if got := p.spinNs(); got != 80*us+40*us+minSpinNs {
		t.Fatalf("a 5 ms preemption changed the spin to %d ns", got)
	}
	for i := 0; i < 2000; i++ {
		p.noteLate(0)
	}
	if got := p.spinNs(); got >= start {
		t.Fatalf("after 2000 punctual wakes the spin is %d ns, want it below the initial %d", got, start)
	}
	fast := NewPacer(20*us, SystemClock())
	fast.noteLate(150 * us)
	if got := fast.spinNs(); got > 10*us {
		t.Fatalf("a 20 µs period spins %d ns, want at most half the period", got)
	}
}

func TestRateWarning(t *testing.T) {
	tests := []struct {
		name     string
		periodNs int64
		jitterNs int64 // every 20th tick is late by this much
		warn     bool
	}{
		{"steady", ms, 0, false},
		{"small jitter", ms, ms / 4, false},
		{"5 % of ticks at 2 ms", ms, ms, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRunnerStats(ms)
			now := int64(1000 * ms)
			var warnings int
			var p99 int64
			for i := 0; i < 2500; i++ {
				now += tt.periodNs
				if i%20 == 0 {
					now += tt.jitterNs
				}
				if w, p := rs.tick(now, false); w {
					warnings++
					p99 = p
				}
			}
			if (warnings > 0) != tt.warn {
				t.Fatalf("%d warnings (p99 %d ns), want warning: %v", warnings, p99, tt.warn)
			}
			if tt.warn && (warnings > 2 || p99 <= ms*3/2) {
				t.Fatalf("%d warnings with p99 %d ns over ~2.5 s, want at most one per second above the bound", warnings, p99)
			}
		})
	}
}
