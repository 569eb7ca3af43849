package loop

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// eventTrace collects a device's events (OnEvent runs on the stepping
// goroutine; the test reads between ticks).
type eventTrace struct {
	mu     sync.Mutex
	events []string
}

func (l *eventTrace) add(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, fmt.Sprintf("%s session %d err %v", e.Kind, e.Session, e.Err))
}

func (l *eventTrace) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.events)
}

// TestControlledFastPathStepsAsTheDevice: a simulated arm controlled by a
// session, on a scheduler shard (its fast path for controlled arms while
// nothing pokes it), publishes exactly what the same arm stepped by
// Device.Step publishes, tick by tick and bit for bit: snapshots, effects
// reports, passivity figures and events, through effects declared and
// changed, a force clamp, a slew limit and the passivity controller, a
// lease that lapses and its ramp, another session whose command must not
// render the first one's effects, a Halt and a re-arm, and a driver that
// fails for good. Eight copies share the shard, so each is stepped by the
// block's first loop on most ticks and by controlTick when its step is
// timed; the test also checks that the fast path did run.
func TestControlledFastPathStepsAsTheDevice(t *testing.T) {
	wall := func(session uint64, z float64, more ...effect.Spec) *effect.Set {
		c := hw.ArmWorkspaceCenterM()
		specs := append([]effect.Spec{
			{ID: "wall", Kind: effect.Wall, Params: effect.Params{StiffnessNPerM: 2000, DampingNsPerM: 1, AxisUnit: hw.Vec3{Z: 1}, PointM: hw.Vec3{X: c.X, Y: c.Y, Z: c.Z + z}}},
			{ID: "damper", Kind: effect.Damper, Params: effect.Params{DampingNsPerM: 2}},
		}, more...)
		s, err := effect.NewSet(session, specs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	spring := effect.Spec{ID: "spring", Kind: effect.SpringPoint, Params: effect.Params{StiffnessNPerM: 150, PointM: hw.Vec3{Y: 0.02, Z: 0.1}}}
	p := &Params{Damping: [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, ForceGateGain: 0.5}
	strict := &Globals{ForceScale: 0.8, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1},
		ForceClampN: 2.5, ForceSlewNps: 200, Passivity: passivity.Options{Enabled: true, MaxDampingNsPerM: 20}}
	type step func(d *Device, a *sim.Arm, now int64)
	cases := []struct {
		name   string
		motion sim.Motion
		script map[int]step
		// closeTick is when the script closes the arms: Close zeroes the
		// arm's force, which a record reports from the arm's core on the
		// next full step while a Device stepping the arm itself keeps its
		// last exchange's (so for arms nobody controls too); from then on
		// the published force is left out of the comparison.
		closeTick int
	}{
		{"effects, lapse, other session, halt, driver error", sim.MotionCircle, map[int]step{
			100: func(d *Device, _ *sim.Arm, now int64) {
				d.Register().Claim(7)
				d.SetEffects(wall(7, -0.004))
				c := force(0.5, -0.3, -1)
				d.Register().Write(7, 1, now+300*ms, &c, p)
			},
			180: func(d *Device, _ *sim.Arm, _ int64) { d.SetGlobals(strict) },
			260: func(d *Device, _ *sim.Arm, _ int64) { d.SetEffects(wall(7, 0.003, spring)) },
			300: func(d *Device, _ *sim.Arm, now int64) {
				c := force(-1, 0, -2)
				d.Register().Write(7, 2, now+60*ms, &c, p) // lapses at 360, then the ramp
			},
			420: func(d *Device, _ *sim.Arm, now int64) {
				// Another session: session 7's effects stay in force but
				// are not rendered for it.
				d.Register().Claim(8)
				c := force(0, 1, 0)
				d.Register().Write(8, 1, now+400*ms, &c, nil)
			},
			520: func(d *Device, _ *sim.Arm, _ int64) { d.Halt() },
			560: func(d *Device, _ *sim.Arm, now int64) {
				d.SetEffects(wall(8, -0.002))
				c := force(0, 0, -0.5)
				d.Register().Write(8, 2, now+500*ms, &c, p)
			},
			700: func(d *Device, _ *sim.Arm, _ int64) { d.SetEffects(nil) },
			760: func(d *Device, a *sim.Arm, _ int64) { _ = a.Close() },
		}, 760},
		{"a long control at rest, no effects", sim.MotionNone, map[int]step{
			50: func(d *Device, _ *sim.Arm, now int64) {
				d.Register().Claim(3)
				c := force(0, 0, 0)
				d.Register().Write(3, 1, now+600*ms, &c, nil)
			},
			300: func(d *Device, _ *sim.Arm, _ int64) { d.SetGlobals(strict) },
			400: func(d *Device, _ *sim.Arm, _ int64) { d.Register().Release(3) },
		}, -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := looptest.NewClock(1000 * ms)
			newArm := func() *sim.Arm {
				return sim.NewArm(sim.ArmOptions{Index: 3, PeriodS: 0.001, Motion: tc.motion, Seed: 4})
			}
			newDev := func(a *sim.Arm, l *eventTrace) *Device {
				return NewDevice(a, DeviceOptions{PeriodNs: ms, Clock: clock, OnEvent: l.add})
			}
			var directLog eventTrace
			directArm := newArm()
			direct := newDev(directArm, &directLog)
			const copies = 8
			arms := make([]*sim.Arm, copies)
			logs := make([]eventTrace, copies)
			onShard := make([]*Device, copies)
			s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
			defer s.Stop()
			for i := range onShard {
				arms[i] = newArm()
				onShard[i] = newDev(arms[i], &logs[i])
				s.Add(onShard[i]) // not started: the test runs the shard's passes
			}
			sh := s.shards[0]
			fastTicks := 0
			var a, b Snapshot
			var fa, fb EffectsReport
			for tick := 0; tick < 900; tick++ {
				now := clock.Advance(ms)
				if f := tc.script[tick]; f != nil {
					f(direct, directArm, now)
					for i, d := range onShard {
						f(d, arms[i], now)
					}
				}
				direct.Step(now)
				sh.passLocked(now, clock)
				direct.Load(&a)
				hasA := direct.LoadEffects(&fa)
				oa := direct.Output()
				for i, d := range onShard {
					if d.slot.Load().controlled {
						fastTicks++
					}
					d.Load(&b)
					if tc.closeTick >= 0 && tick > tc.closeTick {
						b.State.ForceN = a.State.ForceN
					}
					if a != b {
						t.Fatalf("tick %d: shard arm %d published\n%+v\nDevice.Step published\n%+v", tick, i, b, a)
					}
					if hasB := d.LoadEffects(&fb); hasA != hasB || fa != fb {
						t.Fatalf("tick %d: shard arm %d's effects report\n%+v\nDevice.Step's\n%+v", tick, i, fb, fa)
					}
					if ob := d.Output(); oa != ob {
						t.Fatalf("tick %d: shard arm %d's output figures\n%+v\nDevice.Step's\n%+v", tick, i, ob, oa)
					}
					if got, want := logs[i].String(), directLog.String(); got != want {
						t.Fatalf("tick %d: shard arm %d's events\n%s\nDevice.Step's\n%s", tick, i, got, want)
					}
				}
			}
			if fastTicks < 100*copies {
				t.Fatalf("the controlled arms took the fast path on %d ticks of %d arms, want many", fastTicks, copies)
			}
			t.Logf("fast path: %d arm ticks; events: %s", fastTicks, directLog.String())
		})
	}
}

// TestShardPassWithEffectsAllocatesNothing: a shard's tick over controlled
// arms rendering a wall and a damper each, on the fast path for
// controlled arms, allocates nothing (issue 22: the per-tick path with
// effects).
func TestShardPassWithEffectsAllocatesNothing(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	defer s.Stop()
	devs := make([]*Device, 2*armBlockLen)
	for i := range devs {
		d := NewDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
		session := uint64(i + 1)
		set, err := effect.NewSet(session, []effect.Spec{
			{ID: "wall", Kind: effect.Wall, Params: effect.Params{StiffnessNPerM: 2000, DampingNsPerM: 1, AxisUnit: hw.Vec3{Z: 1}, PointM: hw.ArmWorkspaceCenterM()}},
			{ID: "damper", Kind: effect.Damper, Params: effect.Params{DampingNsPerM: 2}},
		})
		if err != nil {
			t.Fatal(err)
		}
		d.SetEffects(set)
		d.Register().Claim(session)
		c := force(0, 0, 0)
		d.Register().Write(session, 1, clock.Now()+int64(1e12), &c, nil)
		s.Add(d)
		devs[i] = d
	}
	sh := s.shards[0]
	for range 10 {
		sh.passLocked(clock.Advance(ms), clock)
	}
	for i, d := range devs {
		if !d.slot.Load().controlled {
			t.Fatalf("controlled arm %d is not on the fast path for controlled arms", i)
		}
	}
	var snap Snapshot
	var rep EffectsReport
	allocs := testing.AllocsPerRun(1000, func() {
		sh.passLocked(clock.Advance(ms), clock)
		devs[0].Load(&snap)
		devs[1].LoadEffects(&rep)
		_ = devs[2].Output()
	})
	if allocs != 0 {
		t.Fatalf("a shard's pass over %d controlled arms with effects allocates %.1f times per tick, want 0", len(devs), allocs)
	}
}

// TestEffectStageInTheBlockOutlivesTheRecord: a device on a shard takes
// its effect stage from its block, keeps rendering it after it left the
// shard, and the device that takes its record next gets a stage of its
// own, not the first one's.
func TestEffectStageInTheBlockOutlivesTheRecord(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	defer s.Stop()
	damper := func(session uint64, b float64) *effect.Set {
		set, err := effect.NewSet(session, []effect.Spec{{ID: "damper", Kind: effect.Damper, Params: effect.Params{DampingNsPerM: b}}})
		if err != nil {
			t.Fatal(err)
		}
		return set
	}
	control := func(d *Device, session uint64, set *effect.Set) {
		d.SetEffects(set)
		d.Register().Claim(session)
		c := force(0, 0, 0)
		d.Register().Write(session, 1, clock.Now()+int64(1e12), &c, nil)
	}
	first := NewDevice(sim.NewArm(sim.ArmOptions{Index: 1, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
	s.Add(first)
	r := first.slot.Load()
	control(first, 1, damper(1, 2))
	sh := s.shards[0]
	for range 20 {
		sh.passLocked(clock.Advance(ms), clock)
	}
	st := first.fx.Load()
	if fx := r.blk.fx.Load(); fx == nil || st != &fx[r.idx] {
		t.Fatalf("the effect stage of a device on a shard is not its record's place in the block")
	}
	s.Remove(first)
	second := NewDevice(sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
	s.Add(second)
	if second.slot.Load() != r {
		t.Fatalf("the second device did not take the first one's record")
	}
	control(second, 2, damper(2, 3))
	if second.fx.Load() == st {
		t.Fatalf("the second device got the first one's effect stage")
	}
	var rep EffectsReport
	for range 20 {
		now := clock.Advance(ms)
		sh.passLocked(now, clock)
		first.Step(now)
	}
	for _, c := range []struct {
		d       *Device
		session uint64
	}{{first, 1}, {second, 2}} {
		if !c.d.LoadEffects(&rep) || rep.Session != c.session || !rep.Rendering || rep.N != 1 {
			t.Fatalf("session %d's device reports %+v, want its damper rendered", c.session, rep)
		}
	}
}
