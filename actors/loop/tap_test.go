package loop

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// drain takes every queued snapshot.
func drain(t *Tap) []Snapshot {
	var out []Snapshot
	var s Snapshot
	for t.Next(&s) {
		out = append(out, s)
	}
	return out
}

// A tap sees every tick, numbered and timed as the loop ran it, also the
// ticks of an arm at rest that publish nothing (a simulated arm sleeps).
func TestTapTakesEveryTick(t *testing.T) {
	for _, tc := range []struct {
		name string
		drv  hw.Driver
	}{
		{"driver", looptest.NewDriver(looptest.ArmInfo())},
		{"resting simulated arm", sim.NewArm(sim.ArmOptions{PeriodS: 0.001})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := looptest.NewClock(1000 * ms)
			d := NewDevice(tc.drv, DeviceOptions{Clock: clock, PeriodNs: ms})
			d.Step(clock.Advance(ms)) // before the tap: not taken
			tap := NewTap(1000, 0)
			if err := d.AddTap(tap); err != nil {
				t.Fatal(err)
			}
			var times []int64
			for i := 0; i < 500; i++ {
				now := clock.Advance(ms)
				times = append(times, now)
				d.Step(now)
			}
			got := drain(tap)
			if len(got) != 500 || tap.Dropped() != 0 {
				t.Fatalf("%d snapshots, %d dropped over 500 ticks", len(got), tap.Dropped())
			}
			for i, s := range got {
				if s.Tick != uint64(i+2) || s.TimeNs != times[i] {
					t.Fatalf("snapshot %d: tick %d at %d, want tick %d at %d", i, s.Tick, s.TimeNs, i+2, times[i])
				}
			}
			var last Snapshot
			d.Load(&last)
			if p := got[len(got)-1].State.PositionM; p != last.State.PositionM {
				t.Fatalf("the last tapped position %v, the published one %v", p, last.State.PositionM)
			}
		})
	}
}

// EveryNs decimates: 10 ms on a 1 kHz loop takes 100 snapshots a second,
// even when the loop's ticks jitter around the period.
func TestTapDecimates(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	d := NewDevice(looptest.NewDriver(looptest.ArmInfo()), DeviceOptions{Clock: clock, PeriodNs: ms})
	tap := NewTap(1000, 10*ms)
	if err := d.AddTap(tap); err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	for i := 1; i <= 1000; i++ {
		now := start + int64(i)*ms
		if i%3 == 0 {
			now += ms / 3 // a late tick
		}
		clock.Set(now)
		d.Step(now)
	}
	if n := len(drain(tap)); n < 99 || n > 101 {
		t.Fatalf("%d snapshots over 1 s at 100 Hz", n)
	}
}

// A Halt between ticks that finds the ring full (the recorder fell a
// ring's worth of ticks behind: starved on a loaded machine, right before
// a stop) still queues the halted state, after every tick queued before:
// it is the device's last word, and a recording of the stop must end on
// its zero force (docs/recording.md). It was dropped like a tick, and the
// file ended on the last queued tick's 3 N.
func TestTapTakesTheHaltWhenFull(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	d := NewDevice(looptest.NewDriver(looptest.ArmInfo()), DeviceOptions{PeriodNs: ms, Clock: clock})
	d.SetGlobals(&Globals{ForceScale: 1}) // no gravity feed-forward
	tap := NewTap(4, 0)
	if err := d.AddTap(tap); err != nil {
		t.Fatal(err)
	}
	d.Register().Claim(3)
	c := force(0, 0, 3)
	d.Register().Write(3, 1, clock.Now()+time64(1000), &c, nil)
	for range 100 {
		d.Step(clock.Advance(ms))
	}
	d.Halt()
	got := drain(tap)
	if len(got) != 5 || got[3].Tick != 4 || tap.Dropped() != 96 {
		t.Fatalf("%d snapshots (ticks %v), %d dropped; want ticks 1-4, 96 dropped, then the halt's", len(got), ticksOf(got), tap.Dropped())
	}
	if h := got[4]; h.State.ForceN != (hw.Vec3{}) || h.Mode != hw.ModeIdle || h.Tick != 100 {
		t.Fatalf("the tap's last snapshot: tick %d, force %+v, mode %v; want the halt's after tick 100, zero force, idle", h.Tick, h.State.ForceN, h.Mode)
	}
	// The next ticks queue as before: the ring takes ticks up to its size.
	for range 10 {
		d.Step(clock.Advance(ms))
	}
	if got := drain(tap); len(got) != 4 || got[0].Tick != 101 {
		t.Fatalf("after the halt and 10 more ticks: ticks %v, want 101-104", ticksOf(got))
	}
}

func ticksOf(ss []Snapshot) []uint64 {
	var out []uint64
	for _, s := range ss {
		out = append(out, s.Tick)
	}
	return out
}

// A full ring never holds the loop up: the tick's snapshot is dropped and
// counted, and the ring takes snapshots again once drained.
func TestTapDropsWhenFull(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	tap := NewTap(4, 0)
	if err := r.dev.AddTap(tap); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		r.step(ms)
	}
	if got := drain(tap); len(got) != 4 || tap.Dropped() != 6 || got[0].Tick != 1 || got[3].Tick != 4 {
		t.Fatalf("%d snapshots (%+v), %d dropped; want ticks 1-4 and 6 dropped", len(got), got, tap.Dropped())
	}
	r.step(ms)
	if got := drain(tap); len(got) != 1 || got[0].Tick != 11 {
		t.Fatalf("after draining: %+v, want tick 11", got)
	}
	r.dev.RemoveTap(tap)
	r.step(ms)
	if got := drain(tap); len(got) != 0 {
		t.Fatalf("a removed tap got %d snapshots", len(got))
	}
	if err := NewDevice(looptest.NewDriver(looptest.ArmInfo()), DeviceOptions{}).AddTap(tap); err == nil {
		t.Fatal("a tap attached to a second device: no error")
	}
}

// Recording costs a tick no allocation.
func TestStepWithTapDoesNotAllocate(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	reg := r.dev.Register()
	reg.Claim(1)
	cmd := force(1, 2, 3)
	tap := NewTap(8, 0)
	if err := r.dev.AddTap(tap); err != nil {
		t.Fatal(err)
	}
	var seq uint64
	var s Snapshot
	allocs := testing.AllocsPerRun(1000, func() {
		seq++
		now := r.clock.Advance(ms)
		reg.Write(1, seq, now+100*ms, &cmd, nil)
		r.dev.Step(now)
		tap.Next(&s)
	})
	if allocs != 0 {
		t.Fatalf("Step with a tap allocates %.1f times per tick, want 0", allocs)
	}
	if s.Tick == 0 || s.Owner != 1 || s.Mode != hw.ModeForce {
		t.Fatalf("the last tapped snapshot %+v: want the session's force", s)
	}
}

// BenchmarkStepTap is the tick of a moving simulated arm without a tap and
// with one taking every tick (drained as a recorder does, every few ms).
func BenchmarkStepTap(b *testing.B) {
	for _, tapped := range []bool{false, true} {
		name := "tap=off"
		if tapped {
			name = "tap=on"
		}
		b.Run(name, func(b *testing.B) {
			clock := looptest.NewClock(1000 * ms)
			d := NewDevice(sim.NewArm(sim.ArmOptions{PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{Clock: clock, PeriodNs: ms})
			tap := NewTap(256, 0)
			if tapped {
				if err := d.AddTap(tap); err != nil {
					b.Fatal(err)
				}
			}
			var s Snapshot
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				d.Step(clock.Advance(ms))
				if i%8 == 7 {
					for tap.Next(&s) {
					}
				}
			}
		})
	}
}

// A Halt between ticks (a service's stop halts every device after its last
// tick) queues the halted state on the tap, whatever its rate: the zero
// force the device ends with, after the last tick's snapshot. A second
// Halt before the next tick queues no copy of it. A recording of a stop
// used to end on the last tick's force, the release's ramp cut short.
func TestTapTakesTheHaltBetweenTicks(t *testing.T) {
	for _, onShard := range []bool{false, true} {
		name := map[bool]string{false: "own loop", true: "simulated arm on a shard"}[onShard]
		t.Run(name, func(t *testing.T) {
			clock := looptest.NewClock(1000 * ms)
			var d *Device
			var tick func()
			if onShard {
				d = NewDevice(sim.NewArm(sim.ArmOptions{PeriodS: 0.001}), DeviceOptions{PeriodNs: ms, Clock: clock})
				s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
				s.Add(d) // not started: the test runs the shard's passes
				defer s.Stop()
				tick = func() { s.shards[0].passLocked(clock.Advance(ms), clock) }
			} else {
				d = NewDevice(looptest.NewDriver(looptest.ArmInfo()), DeviceOptions{PeriodNs: ms, Clock: clock})
				tick = func() { d.Step(clock.Advance(ms)) }
			}
			d.SetGlobals(&Globals{ForceScale: 1}) // no gravity feed-forward
			tap := NewTap(1000, 50*ms)            // one snapshot per 50 ticks
			if err := d.AddTap(tap); err != nil {
				t.Fatal(err)
			}
			d.Register().Claim(3)
			c := force(0, 0, 3)
			d.Register().Write(3, 1, clock.Now()+time64(1000), &c, nil)
			for range 100 {
				tick()
			}
			var last Snapshot
			d.Load(&last)
			if last.State.ForceN.Z < 2.5 {
				t.Fatalf("the arm applies %+v before the halt, want about 3 N up", last.State.ForceN)
			}
			got := drain(tap)
			if len(got) == 0 || got[len(got)-1].State.ForceN.Z < 2.5 {
				t.Fatalf("the tap took %d snapshots before the halt, the last %+v", len(got), got)
			}
			d.Halt()
			halted := drain(tap)
			if len(halted) != 1 {
				t.Fatalf("a Halt between ticks queued %d snapshots, want 1", len(halted))
			}
			h := halted[0]
			if h.State.ForceN != (hw.Vec3{}) || h.Mode != hw.ModeIdle || h.Target != [3]float64{} {
				t.Errorf("the halt's snapshot: force %+v, mode %v, target %v; want the zero the arm ends with, idle", h.State.ForceN, h.Mode, h.Target)
			}
			if h.State.PositionM != last.State.PositionM || h.State.VelocityMps != last.State.VelocityMps {
				t.Errorf("the halt's snapshot: at %+v moving %+v; want where the last tick left the arm, %+v moving %+v", h.State.PositionM, h.State.VelocityMps, last.State.PositionM, last.State.VelocityMps)
			}
			if h.Tick != last.Tick || h.TimeNs <= last.TimeNs {
				t.Errorf("the halt's snapshot: tick %d at %d; want the last tick %d, after %d", h.Tick, h.TimeNs, last.Tick, last.TimeNs)
			}
			if d.Load(&last); last.State.ForceN != (hw.Vec3{}) {
				t.Errorf("after the Halt the device shows %+v N, want zero", last.State.ForceN)
			}
			d.Halt()
			if again := drain(tap); len(again) != 0 {
				t.Errorf("a second Halt before the next tick queued %d more snapshots", len(again))
			}
			tick()
			d.Load(&last)
			d.Halt()
			// The tick's own snapshot too when the rate takes it.
			if again := drain(tap); len(again) == 0 || again[len(again)-1].Tick != last.Tick || again[len(again)-1].TimeNs <= last.TimeNs {
				t.Errorf("a Halt after one more tick (%d) queued %+v, want one more halted state", last.Tick, again)
			}
		})
	}
}
