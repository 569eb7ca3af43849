package loop

import (
	"fmt"
	"math"
	"testing"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// controlColdOf is r's controlCold, or a controlCold at rest while its
// block has none (none of the block's devices claimed a tally yet:
// Device.claimTally).
func controlColdOf(r *simArm) *controlCold {
	if r.blk.ctlCold.Load() == nil {
		return new(controlCold)
	}
	return r.controlCold()
}

// armTickState is everything a controlled arm's tick on a shard leaves
// behind, printed so that two values differ exactly when a bit of them
// does (%v prints a float's shortest exact form, -0 as -0): the force
// stages (the gate's filters, the session observer, the passivity
// controller, the slew limiter, the output figures' counts), the effect
// stage (its flags and counts, every effect's force, proxy, fade and
// energy), the physics, and what readers get (snapshot, effects report,
// output figures).
func armTickState(d *Device) string {
	r := d.slot.Load()
	// The stages' state without the fast path's own word (the period, the
	// gravity flag and fused, which differs between the two paths).
	fs := r.control().fs
	fs.gravity, fs.fused, fs.periodNs = false, false, 0
	s := fmt.Sprintf("fs %+v\ntally %+v\ncore pos %v vel %v force %v ticks %d pending %v\n",
		fs, controlColdOf(r).tally, r.core.Position(), r.core.Velocity(), r.core.Force(), r.ticks, r.pending)
	if st := d.fx.Load(); st != nil {
		s += fmt.Sprintf("fx rendering %v ticks %d unread %d seen session %d active %v\n",
			st.rendering, st.ticks, st.unread, st.seenSession, st.r.ActiveForceN())
		fxJ, navJ := st.r.Energy()
		s += fmt.Sprintf("fx energy %v %v\n", fxJ, navJ)
		var e effect.Rendered
		for i := range st.r.Len() {
			st.r.Rendered(i, &e)
			s += fmt.Sprintf("effect %d %+v\n", i, e)
		}
		var rep EffectsReport
		st.rep.cell.Load(&rep)
		s += fmt.Sprintf("report %+v\n", rep)
	}
	var snap Snapshot
	r.pub.load(&snap)
	o := &d.output
	s += fmt.Sprintf("published %+v\noutput %v %v %v %v %v %d %d\n", snap,
		math.Float64frombits(o.sessionJ.Load()), math.Float64frombits(o.effectsJ.Load()),
		math.Float64frombits(o.navigationJ.Load()), math.Float64frombits(o.energyJ.Load()),
		math.Float64frombits(o.dampingNsPerM.Load()), o.activeNs.Load(), o.spells.Load())
	return s
}

// TestFusedTickStepsAsTheGeneralPath: a controlled arm whose command adds
// no force of its own (zero force, no damping, no navigation), with
// effects declared or none (a lease-only command), takes the fused tick
// (controlStepFx) on the shard's fast path, and a
// copy of it made to take the general stages (generalTick) ends every
// tick of a scripted run in the same state, bit for bit: force stages,
// effects, physics, publishes, output figures and events, through wall
// contacts and releases, a clamp, a slew limit, the passivity controller
// acting (also for over a second), a lease that lapses and is taken up
// again, changed and dropped effects, and commands with a force of their
// own in between (the general stages, then the fused tick again). The test
// checks that each of those happened and that the fused tick ran.
func TestFusedTickStepsAsTheGeneralPath(t *testing.T) {
	c := hw.ArmWorkspaceCenterM()
	newSet := func(t *testing.T, session uint64, specs ...effect.Spec) *effect.Set {
		s, err := effect.NewSet(session, specs)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	wall := func(z, k float64) effect.Spec {
		return effect.Spec{ID: "wall", Kind: effect.Wall, Params: effect.Params{StiffnessNPerM: k, DampingNsPerM: 1,
			AxisUnit: hw.Vec3{Z: 1}, PointM: hw.Vec3{X: c.X, Y: c.Y, Z: c.Z + z}}}
	}
	// The scripted hand moves the arm round a circle in the plane Z = c.Z:
	// a wall across X is pushed into and let go every turn.
	wallX := func(x, k float64) effect.Spec {
		return effect.Spec{ID: "wall", Kind: effect.Wall, Params: effect.Params{StiffnessNPerM: k, DampingNsPerM: 1,
			AxisUnit: hw.Vec3{X: -1}, PointM: hw.Vec3{X: c.X + x, Y: c.Y, Z: c.Z}}}
	}
	damper := effect.Spec{ID: "damper", Kind: effect.Damper, Params: effect.Params{DampingNsPerM: 2}}
	// A field pushing away from the centre: a source that drives the arm,
	// which the controller damps in ScopeOutput.
	push := effect.Spec{ID: "push", Kind: effect.Field, Params: effect.Params{PointM: c, RadiusM: 0.3,
		JacobianNPerM: [3][3]float64{{300, 0, 0}, {0, 300, 0}, {0, 0, 300}}}}
	defaults := DefaultGlobals()
	strict := &Globals{ForceScale: 0.9, Settings: defaults.Settings, ForceClampN: 0.4, ForceSlewNps: 8,
		Passivity: passivity.Options{Enabled: true}}
	output := &Globals{ForceScale: 1, Settings: defaults.Settings, ForceClampN: 10, ForceSlewNps: 5000,
		Passivity: passivity.Options{Enabled: true, Scope: passivity.ScopeOutput, MaxDampingNsPerM: 10}}
	const session = 5
	write := func(t *testing.T, d *Device, seq uint64, deadlineNs int64, cmd hw.Command, p *Params) {
		t.Helper()
		if !d.Register().Write(session, seq, deadlineNs, &cmd, p) {
			t.Fatalf("write %d refused", seq)
		}
	}
	type step func(t *testing.T, d *Device, now int64)
	cases := []struct {
		name    string
		globals *Globals
		script  map[int]step
		// What the run must show on the fused arm.
		contact, clamp, slew, damping, sustained, lapse, general bool
	}{
		{name: "wall and damper under a clamp and a slew limit, lapse, re-arm", globals: strict,
			contact: true, clamp: true, slew: true, lapse: true,
			script: map[int]step{
				5: func(t *testing.T, d *Device, now int64) {
					d.SetEffects(newSet(t, session, wallX(0.01, 3000), damper))
					d.Register().Claim(session)
					write(t, d, 1, now+400*ms, force(0, 0, 0), nil)
				},
				250: func(t *testing.T, d *Device, _ int64) {
					d.SetEffects(newSet(t, session, wallX(0.005, 1500), damper))
				},
				// The lease of seq 1 lapses at 410: the ramp, then nothing.
				480: func(t *testing.T, d *Device, now int64) {
					d.Register().Claim(session)
					write(t, d, 2, now+600*ms, hw.Command{Mode: hw.ModeForce}, DefaultParams())
				},
				800: func(t *testing.T, d *Device, _ int64) { d.DropEffects(session) },
			}},
		{name: "a driving field kept passive on the whole output", globals: output,
			contact: true, damping: true, sustained: true,
			script: map[int]step{
				5: func(t *testing.T, d *Device, now int64) {
					// The field pushes away from a point above the arm, down
					// into the wall: with the weight supported on top of the
					// clamp, nothing else takes the arm there.
					down := push
					down.Params.PointM.Z += 0.01
					d.SetEffects(newSet(t, session, down, wall(0, 2000)))
					d.Register().Claim(session)
					write(t, d, 1, now+5000*ms, force(0, 0, 0), nil)
				},
			}},
		{name: "a lease-only command with no effects, clamp and slew limit", globals: strict, lapse: true,
			script: map[int]step{
				5: func(t *testing.T, d *Device, now int64) {
					d.Register().Claim(session)
					write(t, d, 1, now+300*ms, force(0, 0, 0), nil)
				},
				500: func(t *testing.T, d *Device, now int64) {
					d.Register().Claim(session)
					write(t, d, 2, now+5000*ms, hw.Command{Mode: hw.ModeForce}, DefaultParams())
				},
			}},
		{name: "commands with a force of their own between effects-only ones", globals: defaults,
			contact: true, general: true,
			script: map[int]step{
				5: func(t *testing.T, d *Device, now int64) {
					d.SetEffects(newSet(t, session, wall(0, 2000), damper))
					d.Register().Claim(session)
					write(t, d, 1, now+5000*ms, force(0.3, 0, -0.4), nil)
				},
				200: func(t *testing.T, d *Device, now int64) { write(t, d, 2, now+5000*ms, force(0, 0, 0), nil) },
				400: func(t *testing.T, d *Device, now int64) { write(t, d, 3, now+5000*ms, force(0, -0.2, 0), nil) },
				600: func(t *testing.T, d *Device, now int64) { write(t, d, 4, now+5000*ms, force(0, 0, 0), nil) },
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := looptest.NewClock(1000 * ms)
			s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
			defer s.Stop()
			var logs [2]eventTrace
			var devs [2]*Device // fused, general
			for i := range devs {
				a := sim.NewArm(sim.ArmOptions{Index: 3, PeriodS: 0.001, Motion: sim.MotionCircle, Seed: 4})
				devs[i] = NewDevice(a, DeviceOptions{PeriodNs: ms, Clock: clock, OnEvent: logs[i].add})
				devs[i].SetGlobals(tc.globals)
				s.Add(devs[i]) // not started: the test runs the shard's passes
			}
			devs[1].generalTick = true
			sh := s.shards[0]
			var fusedTicks, contacts, clamps, slews, damped, lapses, general int
			var rep EffectsReport
			for tick := range 1200 {
				now := clock.Advance(ms)
				if f := tc.script[tick]; f != nil {
					for _, d := range devs {
						f(t, d, now)
					}
				}
				r := devs[0].slot.Load()
				ctl := r.control()
				// What this tick will take, seen before it runs.
				fused := r.controlled && ctl.fs.fused && now <= ctl.deadlineNs && r.poke.Load() == 0
				// The flag the pass decides by is the command's and the
				// observer's (in ctlCold) truth: the fused tick never
				// runs while the observer holds a force, and runs from
				// the tick it holds +0 again.
				if cc := controlColdOf(r); r.controlled && ctl.fs.fused != takesFusedTick(&cc.cmd, &cc.tally, false) {
					t.Fatalf("tick %d: fused %v, the command's inputs and the session observer say %v (observer holds a force: %v)",
						tick, ctl.fs.fused, !ctl.fs.fused, cc.tally.sessionObs.Holds())
				} else if r.controlled && ctl.fs.fused && ctl.fxSet != ctl.in.fx.seenBy(cc.cmd.session) {
					t.Fatalf("tick %d: the fused tick would render Set %p, the stage's seen of the command's session is %p",
						tick, ctl.fxSet, ctl.in.fx.seenBy(cc.cmd.session))
				}
				if r.controlled && !fused && !ctl.fs.fused {
					general++ // a command with a force of its own
				}
				if r.controlled && devs[1].slot.Load().control().fs.fused {
					t.Fatalf("tick %d: the arm held to the general stages was given the fused tick", tick)
				}
				lapsing := r.controlled && now > ctl.deadlineNs
				before := ctl.fs.slewN
				sh.passLocked(now, clock)
				if lapsing {
					lapses++
				}
				if fused {
					fusedTicks++
					// Both read: a reader changes how often a report is published.
					devs[1].LoadEffects(&rep)
					if devs[0].LoadEffects(&rep) {
						for _, e := range rep.Effects[:rep.N] {
							if e.Contact {
								contacts++
							}
						}
					}
					if ctl.fs.pc.DampingNsPerM > 0 {
						damped++
					}
					// The clamp held the force at its limit; the slew
					// limit moved it by the most a tick allows.
					after := ctl.fs.slewN
					if lim := ctl.in.limitN; after.Norm() >= lim*(1-1e-9) {
						clamps++
					}
					if maxStep := ctl.in.slewNps * 1e-3; maxStep > 0 && after.Sub(before).Norm() >= maxStep*(1-1e-9) {
						slews++
					}
				}
				if tick%7 == 0 { // readers now and then: both cadences of publishing
					var snap Snapshot
					devs[0].Load(&snap)
					devs[1].Load(&snap)
					_, _ = devs[0].Output(), devs[1].Output()
				}
				if got, want := armTickState(devs[0]), armTickState(devs[1]); got != want {
					t.Fatalf("tick %d: the fused tick left\n%s\nthe general path\n%s", tick, got, want)
				}
				if got, want := logs[0].String(), logs[1].String(); got != want {
					t.Fatalf("tick %d: the fused tick's events\n%s\nthe general path's\n%s", tick, got, want)
				}
			}
			t.Logf("fused ticks %d, contacts %d, clamped %d, slewed %d, damped %d, lapsing %d, general %d; events %s",
				fusedTicks, contacts, clamps, slews, damped, lapses, general, logs[0].String())
			if fusedTicks < 300 {
				t.Fatalf("the fused tick ran %d times, want most of the run", fusedTicks)
			}
			for _, w := range []struct {
				want bool
				n    int
				what string
			}{{tc.contact, contacts, "wall contacts"}, {tc.clamp, clamps, "clamped ticks"}, {tc.damping, damped, "ticks the controller damped"},
				{tc.slew, slews, "ticks the slew limit held"}, {tc.lapse, lapses, "lapses"}, {tc.general, general, "controlled ticks on the general stages"}} {
				if w.want && w.n == 0 {
					t.Errorf("the run had no %s on the fused path: it does not test them", w.what)
				}
			}
			if tc.sustained && logs[0].String() == "[]" {
				t.Errorf("the controller never acted for a second: no %s event", EventPassivitySustained)
			}
		})
	}
}

// TestFiniteIsVec3Finite: the fused tick's finiteness test decides as
// hw.Vec3.Finite does, also where the sum overflows or cancels.
func TestFiniteIsVec3Finite(t *testing.T) {
	inf, nan, big := math.Inf(1), math.NaN(), math.MaxFloat64
	for _, v := range []hw.Vec3{
		{}, {X: math.Copysign(0, -1)}, {X: 1, Y: -2, Z: 3e-300}, {X: 5e-324},
		{X: big}, {X: big, Y: big}, {X: big, Y: -big}, {X: -big, Y: -big, Z: big},
		{X: inf}, {Y: -inf}, {X: inf, Y: -inf}, {Z: nan}, {X: nan, Y: inf},
		{X: big, Y: big, Z: -inf}, {X: 0.1, Y: 0.2, Z: -0.3},
	} {
		if got, want := finite(v), v.Finite(); got != want {
			t.Errorf("finite(%v) = %v, hw.Vec3.Finite says %v", v, got, want)
		}
	}
}
