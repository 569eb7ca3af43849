package loop

import (
	"reflect"
	"testing"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// TestSimulatedArmWithTheLoop runs the real simulated arm under the loop: the
// gravity feed-forward holds an idle arm up (and only when enabled), and a
// lapsed lease leaves no force behind.
func TestSimulatedArmWithTheLoop(t *testing.T) {
	run := func(t *testing.T, g *Globals, ticks int, prepare func(d *Device, c *looptest.Clock)) (first, last Snapshot) {
		t.Helper()
		clock := looptest.NewClock(1000 * ms)
		arm := sim.NewArm(sim.ArmOptions{PeriodS: 0.001, Motion: sim.MotionNone})
		d := NewDevice(arm, DeviceOptions{PeriodNs: ms, Clock: clock})
		d.SetGlobals(g)
		d.Step(clock.Advance(ms))
		d.Load(&first)
		if prepare != nil {
			prepare(d, clock)
		}
		for i := 0; i < ticks; i++ {
			d.Step(clock.Advance(ms))
		}
		d.Load(&last)
		return first, last
	}
	comp := &Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1}}
	t.Run("compensated arm holds its height", func(t *testing.T) {
		first, last := run(t, comp, 2000, nil)
		if dz := last.State.PositionM.Z - first.State.PositionM.Z; dz < -0.005 {
			t.Fatalf("a compensated idle arm sank %.1f mm in 2 s", -dz*1000)
		}
	})
	t.Run("uncompensated arm sags", func(t *testing.T) {
		first, last := run(t, &Globals{ForceScale: 1}, 2000, nil)
		if dz := last.State.PositionM.Z - first.State.PositionM.Z; dz > -0.01 {
			t.Fatalf("an uncompensated idle arm moved %.1f mm in 2 s, want it to sag", dz*1000)
		}
	})
	t.Run("a lapsed lease leaves no client force", func(t *testing.T) {
		_, last := run(t, comp, 200, func(d *Device, c *looptest.Clock) {
			reg := d.Register()
			reg.Claim(1)
			cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 3}}
			reg.Write(1, 1, c.Now()+50*ms, &cmd, nil)
		})
		if last.Mode != hw.ModeIdle || last.Owner != 0 || mag(last.State.ForceN) > 1e-9 {
			t.Fatalf("150 ms after the lease lapsed: mode %v owner %d force %+v", last.Mode, last.Owner, last.State.ForceN)
		}
	})
}

// TestSimulatedArmStateIsDerivedOnLoad: the loop steps only the arm's
// physics; a reader's Load still gets joint angles that put the cursor where
// the snapshot says (for either handedness), an arm at rest publishes
// nothing new, and a command or a handedness change publishes again.
func TestSimulatedArmStateIsDerivedOnLoad(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	d := NewDevice(sim.NewArm(sim.ArmOptions{PeriodS: 0.001}), DeviceOptions{PeriodNs: ms, Clock: clock})
	checkAngles := func(left bool) Snapshot {
		t.Helper()
		var s Snapshot
		d.Load(&s)
		if s.State.AnglesDeg == (hw.Angles3{}) || s.State.BodyOrientation == (hw.Quat{}) {
			t.Fatalf("loaded state has no derived fields: %+v", s.State)
		}
		if p := sim.ForwardKinematics(s.State.AnglesDeg, left); mag(p.Sub(s.State.PositionM)) > 1e-6 {
			t.Fatalf("left %v: joint angles %+v put the cursor at %+v, the snapshot says %+v", left, s.State.AnglesDeg, p, s.State.PositionM)
		}
		return s
	}
	// Push the arm sideways for 30 ms, so its base angle is not zero.
	seq := d.PublishSeq()
	reg := d.Register()
	reg.Claim(1)
	push := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 2}}
	reg.Write(1, 1, clock.Now()+30*ms, &push, nil)
	d.Step(clock.Advance(ms))
	var s Snapshot
	d.Load(&s)
	if d.PublishSeq() == seq || s.Owner != 1 || s.Mode != hw.ModeForce || s.AppliedSeq != 1 {
		t.Fatalf("after a command: seq %d→%d owner %d mode %v applied %d", seq, d.PublishSeq(), s.Owner, s.Mode, s.AppliedSeq)
	}
	checkAngles(false)
	// The lease lapses, the ramp ends and friction stops the arm.
	for i := 0; i < 1000; i++ {
		d.Step(clock.Advance(ms))
	}
	rest := checkAngles(false)
	if rest.Owner != 0 || rest.Mode != hw.ModeIdle || rest.State.VelocityMps != (hw.Vec3{}) || rest.State.PositionM.X <= 0 {
		t.Fatalf("1 s after the push: owner %d mode %v velocity %+v position %+v, want a pushed arm at rest", rest.Owner, rest.Mode, rest.State.VelocityMps, rest.State.PositionM)
	}
	seq = d.PublishSeq()
	for i := 0; i < 20; i++ {
		d.Step(clock.Advance(ms))
	}
	if got := d.PublishSeq(); got != seq {
		t.Fatalf("an arm at rest published %d snapshots in 20 ticks, want none", got-seq)
	}

	d.SetGlobals(&Globals{ForceScale: 1, Settings: hw.Settings{LeftHanded: true, GravityCompensation: true, GravityScale: 1}})
	d.Step(clock.Advance(ms))
	if d.PublishSeq() == seq {
		t.Fatal("a handedness change published nothing")
	}
	if left := checkAngles(true); left.State.AnglesDeg == rest.State.AnglesDeg {
		t.Fatalf("left-handed angles %+v equal the right-handed ones", left.State.AnglesDeg)
	}
}

// TestRestingArmSleepsAndWakes: an idle arm at rest stops being stepped
// (nothing is published), and everything that could change its output wakes
// it: a command, new settings, a Halt.
func TestRestingArmSleepsAndWakes(t *testing.T) {
	settled := func(t *testing.T) (*Device, *looptest.Clock) {
		t.Helper()
		clock := looptest.NewClock(1000 * ms)
		d := NewDevice(sim.NewArm(sim.ArmOptions{PeriodS: 0.001}), DeviceOptions{PeriodNs: ms, Clock: clock})
		for i := 0; i < 100; i++ {
			d.Step(clock.Advance(ms))
		}
		seq, ticks := d.PublishSeq(), d.Stats().Ticks
		for i := 0; i < 100; i++ {
			d.Step(clock.Advance(ms))
		}
		if d.PublishSeq() != seq || !d.asleep || d.Stats().Ticks != ticks+100 {
			t.Fatalf("an idle arm at rest: published %d times in 100 ticks, asleep %v, ticks %d→%d", d.PublishSeq()-seq, d.asleep, ticks, d.Stats().Ticks)
		}
		return d, clock
	}
	height := func(d *Device) float64 {
		var s Snapshot
		d.Load(&s)
		return s.State.PositionM.Z
	}
	t.Run("a command", func(t *testing.T) {
		d, clock := settled(t)
		reg := d.Register()
		reg.Claim(7)
		up := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
		z0 := height(d)
		reg.Write(7, 1, clock.Now()+50*ms, &up, nil)
		for i := 0; i < 20; i++ {
			d.Step(clock.Advance(ms))
		}
		var s Snapshot
		d.Load(&s)
		if s.Owner != 7 || s.AppliedSeq != 1 || s.State.PositionM.Z <= z0 {
			t.Fatalf("20 ms after a command to push up: owner %d applied %d height %.4f→%.4f", s.Owner, s.AppliedSeq, z0, s.State.PositionM.Z)
		}
	})
	t.Run("a claim alone", func(t *testing.T) {
		d, clock := settled(t)
		d.Register().Claim(9)
		d.Step(clock.Advance(ms))
		var s Snapshot
		d.Load(&s)
		if s.Owner != 9 {
			t.Fatalf("after a claim the snapshot's owner is %d, want 9", s.Owner)
		}
	})
	t.Run("new settings", func(t *testing.T) {
		d, clock := settled(t)
		z0 := height(d)
		d.SetGlobals(&Globals{ForceScale: 1}) // gravity compensation off
		for i := 0; i < 100; i++ {
			d.Step(clock.Advance(ms))
		}
		if z := height(d); z >= z0-0.001 {
			t.Fatalf("with compensation turned off the arm stayed at %.4f (was %.4f)", z, z0)
		}
	})
	t.Run("a halt", func(t *testing.T) {
		d, clock := settled(t)
		z0 := height(d)
		d.Halt() // no feed-forward until a command arms the output again
		for i := 0; i < 100; i++ {
			d.Step(clock.Advance(ms))
		}
		if z := height(d); z >= z0-0.001 {
			t.Fatalf("after Halt the arm stayed at %.4f (was %.4f)", z, z0)
		}
	})
}

// TestCoreCopyCoversTheSnapshot guards armCell and copyCoreState, which
// carry lazy devices' snapshots field by field: a field added to Snapshot or
// to hw.State's per-tick core must be added there too.
func TestCoreCopyCoversTheSnapshot(t *testing.T) {
	src := Snapshot{Mode: hw.ModeForce, Target: [3]float64{7, 8, 9}, Failed: true, derive: deriveLeft, Owner: 3, Tick: 4, TimeNs: 5, AppliedSeq: 6,
		State: hw.State{PositionM: hw.Vec3{X: 1}, VelocityMps: hw.Vec3{Y: 2}, ForceN: hw.Vec3{Z: 3}, Status: hw.StatusReady}}
	var cell armCell
	if !cell.publishSnap(&src) {
		t.Fatal("a cell nobody reads refused a publish")
	}
	dst := Snapshot{CurrentAtNs: 1} // left by a hardware device's snapshot
	cell.load(&dst)
	if dst != src {
		t.Fatalf("armCell lost fields: got %+v, want %+v", dst, src)
	}
	var st hw.State
	copyCoreState(&st, &src.State)
	if st != src.State {
		t.Fatalf("copyCoreState lost fields: got %+v, want %+v", st, src.State)
	}
	// CurrentAtNs is not carried: a lazy driver never repeats a state,
	// so it is always 0 there (load sets it so).
	if n := reflect.TypeOf(Snapshot{}).NumField(); n != 10 {
		t.Fatalf("Snapshot has %d fields; armMeta and armSnap know 9 and CurrentAtNs: update them and this test", n)
	}
}

// TestPublishThatFoundNoBufferIsRetried: when readers hold every spare
// snapshot buffer, the tick's publish is skipped; the next tick publishes
// even though nothing changed, so a resting arm's last state is never lost.
func TestPublishThatFoundNoBufferIsRetried(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	d := NewDevice(sim.NewArm(sim.ArmOptions{PeriodS: 0.001}), DeviceOptions{PeriodNs: ms, Clock: clock})
	for range 100 { // at rest
		d.Step(clock.Advance(ms))
	}
	reg := d.Register()
	reg.Claim(1) // a claim without a command: the arm stays at rest
	d.Step(clock.Advance(ms))
	// A reader announces itself on the buffer that is not the latest.
	cell := d.cell.Load()
	spare := &cell.bufs[(cell.seq.Load()+1)&1]
	spare.readers.Add(1)
	reg.Release(1)
	d.Step(clock.Advance(ms)) // the release: its publish finds no buffer
	var s Snapshot
	d.Load(&s)
	if s.Owner != 1 {
		t.Fatalf("with every buffer held the release was published anyway (owner %d): the test holds nothing", s.Owner)
	}
	spare.readers.Add(-1)
	d.Step(clock.Advance(ms))
	d.Load(&s)
	if s.Owner != 0 {
		t.Fatalf("after the readers left, the release is still unpublished: owner %d", s.Owner)
	}
}
