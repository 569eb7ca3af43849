package loop

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// springSet is one spring pulling the cursor (at the origin) 1 N along +X.
func springSet(t *testing.T, session uint64) *effect.Set {
	t.Helper()
	s, err := effect.NewSet(session, []effect.Spec{{ID: "k", Kind: effect.SpringPoint,
		Params: effect.Params{StiffnessNPerM: 100, PointM: hw.Vec3{X: 0.01}}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// strongSet is springSet ten times as stiff, with a second spring of
// another id beside it.
func strongSet(t *testing.T, session uint64) *effect.Set {
	t.Helper()
	s, err := effect.NewSet(session, []effect.Spec{
		{ID: "k", Kind: effect.SpringPoint, Params: effect.Params{StiffnessNPerM: 1000, PointM: hw.Vec3{X: 0.01}}},
		{ID: "k2", Kind: effect.SpringPoint, Params: effect.Params{StiffnessNPerM: 1000, PointM: hw.Vec3{X: 0.01}}}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// settle steps until the effects have faded in (DefaultFadeNs) under a
// lease the caller keeps alive with rewrite.
func (r *rig) run(n int, rewrite func()) hw.Command {
	var out hw.Command
	for range n {
		if rewrite != nil {
			rewrite()
		}
		out = r.step(ms)
	}
	return out
}

func TestEffectsAreSummedWithTheCommand(t *testing.T) {
	for _, c := range []struct {
		name  string
		cmd   hw.Command
		wantN hw.Vec3
	}{
		{"with a force command", force(0, 0, 2), hw.Vec3{X: 1, Z: 2}},
		{"with an idle command (effects only)", hw.Command{}, hw.Vec3{X: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
			r.dev.SetEffects(springSet(t, 7))
			var rep EffectsReport
			r.dev.LoadEffects(&rep) // a reader: the loop reports every few ticks
			seq := uint64(0)
			keep := func() { seq++; r.command(7, seq, 100*ms, c.cmd, nil) }
			out := r.run(100, keep)
			if out.Mode != hw.ModeForce || !near(out.ForceN.X, c.wantN.X, 1e-9) || !near(out.ForceN.Z, c.wantN.Z, 1e-9) {
				t.Fatalf("output %+v, want force %v", out, c.wantN)
			}
			if !r.dev.LoadEffects(&rep) || rep.N != 1 || rep.Effects[0].ID != "k" || !rep.Rendering || rep.Session != 7 ||
				rep.TimeNs < r.clock.Now()-reportEvery*ms || !near(rep.Effects[0].ForceN.X, 1, 1e-9) {
				t.Fatalf("effects report: %d effects (first %+v), rendering %v, session %d, %d ns old; want effect k at 1 N rendering for session 7",
					rep.N, rep.Effects[0], rep.Rendering, rep.Session, r.clock.Now()-rep.TimeNs)
			}
		})
	}
}

func TestAnotherSessionsEffectsAreNotRendered(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.dev.SetEffects(springSet(t, 8))
	seq := uint64(0)
	out := r.run(100, func() { seq++; r.command(7, seq, 100*ms, force(0, 0, 2), nil) })
	if out.ForceN != (hw.Vec3{Z: 2}) {
		t.Fatalf("output %v: session 8's effects reached session 7's control", out.ForceN)
	}
}

// TestTheNextSessionsEffectsAreRendered: when one session hands the arm
// over to another, which declares its own effects, the arm renders the
// new owner's effects (the effect stage remembers the session of the Set
// it loaded last: a new Set is a new session to read).
func TestTheNextSessionsEffectsAreRendered(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.dev.SetEffects(springSet(t, 7))
	seq := uint64(0)
	out := r.run(100, func() { seq++; r.command(7, seq, 100*ms, force(0, 0, 2), nil) })
	if !near(out.ForceN.X, 1, 1e-9) {
		t.Fatalf("output %v under session 7, want its spring's 1 N along X", out.ForceN)
	}
	r.dev.Register().Release(7)
	r.run(30, nil) // the release ramps out
	r.dev.SetEffects(springSet(t, 8))
	out = r.run(100, func() { seq++; r.command(8, seq, 100*ms, force(0, 0, 2), nil) })
	if !near(out.ForceN.X, 1, 1e-9) || !near(out.ForceN.Z, 2, 1e-9) {
		t.Fatalf("output %v under session 8, want its spring's 1 N along X plus its 2 N along Z", out.ForceN)
	}
}

// TestLeaseLapseRampsEffectForcesToZero: when the lease lapses, when the
// session releases the arm, and when the loop halts, the effects' force
// goes to zero with the command's, within the release bound.
func TestLeaseLapseRampsEffectForcesToZero(t *testing.T) {
	// "a new Set mid-ramp": the lease lapsed and, a few ticks into the
	// ramp, the session's stronger Set is published (a declaration that
	// raced the lapse): without a lease it must not bring force back.
	// "a new Set as it releases": the same, published with the release,
	// before the ramp's first tick (whose factor is still 1). Both are in
	// force once a new command holds the arm.
	for _, end := range []string{"lease lapses", "session releases", "halt", "a new Set mid-ramp", "a new Set as it releases"} {
		t.Run(end, func(t *testing.T) {
			r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
			r.dev.SetEffects(springSet(t, 7))
			r.command(7, 1, 200*ms, hw.Command{}, nil)
			out := r.run(100, nil)
			if !near(out.ForceN.X, 1, 1e-9) {
				t.Fatalf("effect force %v before the end, want 1 N", out.ForceN)
			}
			var endNs int64
			switch end {
			case "lease lapses", "a new Set mid-ramp":
				endNs = r.clock.Now() + 100*ms + 1 // the lease written above
				for r.clock.Now() < endNs {
					r.step(ms)
				}
			case "session releases", "a new Set as it releases":
				endNs = r.clock.Now()
				r.dev.Register().Release(7)
				if end == "a new Set as it releases" {
					r.dev.SetEffects(strongSet(t, 7))
				}
			case "halt":
				endNs = r.clock.Now()
				r.dev.Halt()
				if got := r.drv.Last(); got.ForceN != (hw.Vec3{}) {
					t.Fatalf("force %v right after Halt, want none", got.ForceN)
				}
			}
			prev := 1.0
			for i := 0; r.clock.Now() <= endNs+ReleaseBoundNs; i++ {
				if end == "a new Set mid-ramp" && i == 3 {
					r.dev.SetEffects(strongSet(t, 7))
				}
				out = r.step(ms)
				if f := mag(out.ForceN); f > prev+1e-12 {
					t.Fatalf("effect force grew to %v N while ending", f)
				} else {
					prev = f
				}
			}
			if out.ForceN != (hw.Vec3{}) || out.Mode != hw.ModeIdle {
				t.Fatalf("output %+v %d ms after the end, want idle", out, ReleaseBoundNs/ms)
			}
			var rep EffectsReport
			r.dev.LoadEffects(&rep)
			if rep.Rendering {
				t.Fatalf("effects report says rendering after the control ended")
			}
			// The Set stays published; a new command renders it again,
			// fading in from zero.
			full := 1.0 // N: springSet's force at rest
			strong := strings.HasPrefix(end, "a new Set")
			if strong {
				full = 20 // strongSet's two springs
			}
			r.command(7, 2, 200*ms, hw.Command{}, nil)
			if f := r.step(ms).ForceN.X; !(f >= 0 && f < 0.1*full) {
				t.Fatalf("first tick of a new control: effect force %v N, want a fade from zero", f)
			}
			// The held-back Set is the one in force now, not the old.
			out = r.run(int(2*effect.DefaultFadeNs/ms), nil)
			if f := out.ForceN.X; strong && !(f > 3) || !strong && !near(f, 1, 1e-6) {
				t.Fatalf("%d ms into the new control: effect force %v N, want %v (the Set published last)", 2*effect.DefaultFadeNs/ms, f, full)
			}
		})
	}
}

func TestClampAndSlewLimitTheCommandedForce(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.dev.SetGlobals(&Globals{ForceScale: 1, ForceClampN: 4, ForceSlewNps: 1000})
	r.command(7, 1, 500*ms, force(10, 0, 0), nil)
	for i := 1; i <= 10; i++ {
		want := min(float64(i), 4)
		if f := r.step(ms).ForceN.X; !near(f, want, 1e-9) {
			t.Fatalf("tick %d: force %v, want %v (1 N/ms slew up to the 4 N clamp)", i, f, want)
		}
	}
}

// TestPassivityControllerDampsAnActiveOutput drives the arm at a steady
// speed along a force (it does work on the arm every tick): the observer
// reports the source's energy going negative, and the controller, when on,
// adds damping if the source is in its scope. In the default scope
// (rendered) a client's own push and a field are left alone, and an effect
// passive by design that gives out energy (a spring whose stored energy the
// observer never saw, as a sampled wall gives out energy) is damped; with
// ScopeOutput the client's push is damped too. A force against the motion
// is passive and left alone.
func TestPassivityControllerDampsAnActiveOutput(t *testing.T) {
	spring := effect.Spec{ID: "s", Kind: effect.SpringPoint, Params: effect.Params{StiffnessNPerM: 20, PointM: hw.Vec3{X: 0.1}}}
	field := effect.Spec{ID: "f", Kind: effect.Field, Params: effect.Params{RadiusM: 1, ForceN: hw.Vec3{X: 1}}}
	cases := []struct {
		name        string
		forceX      float64
		fx          *effect.Spec
		enabled     bool
		scope       passivity.Scope
		wantDamping bool
	}{
		{"client pushing along, output scope, on", 1, nil, true, passivity.ScopeOutput, true},
		{"client pushing along, output scope, off", 1, nil, false, passivity.ScopeOutput, false},
		{"client pushing against, output scope, on", -1, nil, true, passivity.ScopeOutput, false},
		{"client pushing along, rendered scope, on", 1, nil, true, passivity.ScopeRendered, false},
		{"spring giving out energy, rendered scope, on", 0, &spring, true, passivity.ScopeRendered, true},
		{"spring giving out energy, rendered scope, off", 0, &spring, false, passivity.ScopeRendered, false},
		{"field pushing along, rendered scope, on", 0, &field, true, passivity.ScopeRendered, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
			r.dev.SetGlobals(&Globals{ForceScale: 1, Passivity: passivity.Options{Enabled: c.enabled, Scope: c.scope}})
			r.drv.SetState(hw.State{VelocityMps: hw.Vec3{X: 0.1}})
			if c.fx != nil {
				set, err := effect.NewSet(7, []effect.Spec{*c.fx})
				if err != nil {
					t.Fatal(err)
				}
				r.dev.SetEffects(set)
			}
			r.dev.Output() // a reader: the loop stores the figures every few ticks
			seq := uint64(0)
			out := r.run(1500, func() { seq++; r.command(7, seq, 100*ms, force(c.forceX, 0, 0), &Params{}) })
			o := r.dev.Output()
			if c.forceX > 0 && !(o.SessionEnergyJ < 0) {
				t.Fatalf("session energy %v J pushing along the motion, want < 0", o.SessionEnergyJ)
			}
			if c.fx != nil && !(o.EffectsEnergyJ < 0) && !c.wantDamping {
				t.Fatalf("effects energy %v J pushing along the motion, want < 0", o.EffectsEnergyJ)
			}
			undamped := c.forceX
			if c.fx != nil {
				undamped = 2 // the spring: 20 N/m × 0.1 m; the field: 1 N
				if c.fx.Kind == effect.Field {
					undamped = 1
				}
			}
			damped := out.ForceN.X < undamped-1e-9
			if damped != c.wantDamping || (o.AddedDampingNsPerM > 0) != c.wantDamping {
				t.Fatalf("output %v N, added damping %v N·s/m; want damping %v", out.ForceN.X, o.AddedDampingNsPerM, c.wantDamping)
			}
			sustained := len(r.eventsOf(EventPassivitySustained))
			if c.wantDamping && (sustained != 1 || !o.Sustained || o.SustainedSpells != 1) {
				t.Fatalf("after 1.5 s of action: %d sustained events, report %+v; want one", sustained, o)
			}
			if !c.wantDamping && sustained != 0 {
				t.Fatalf("%d sustained events without action", sustained)
			}
		})
	}
}

// A velocity no arm reaches (one bad encoder frame: the serial decoder
// lets up to 1,000 m/s through, HID checks finiteness only) is a bad
// reading: the controller counts no work over it and adds no damping on it.
// Counted, one frame at 100 m/s while a spring holds 5 N put the energy at
// −0.47 J, and the controller damped a passive arm for seconds after.
// The arm moves at 1 cm/s against the spring (passive) before and after;
// a bad frame against the spring must not bank a budget for later either.
func TestOneImplausibleVelocityFrameLeavesTheControllerQuiet(t *testing.T) {
	for _, glitchMps := range []float64{2 * passivity.MaxSpeedMps, 100, 1000, -1000} {
		t.Run(fmt.Sprintf("%v m/s", glitchMps), func(t *testing.T) {
			r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
			r.dev.SetGlobals(&Globals{ForceScale: 1, ForceSlewNps: 5000, Passivity: passivity.Options{Enabled: true}})
			set, err := effect.NewSet(7, []effect.Spec{{ID: "k", Kind: effect.SpringPoint,
				Params: effect.Params{StiffnessNPerM: 100, PointM: hw.Vec3{X: 0.05}}}})
			if err != nil {
				t.Fatal(err)
			}
			r.dev.SetEffects(set)
			r.dev.Output() // a reader: the loop stores the figures every few ticks
			seq := uint64(0)
			renew := func() { seq++; r.command(7, seq, 100*ms, hw.Command{}, nil) }
			r.drv.SetState(hw.State{VelocityMps: hw.Vec3{X: -0.01}})
			r.run(500, renew) // the spring faded in, pulling 5 N along +X
			o := r.dev.Output()
			before, effectsBefore := o.EnergyJ, o.EffectsEnergyJ
			r.drv.SetState(hw.State{VelocityMps: hw.Vec3{X: glitchMps}})
			r.run(1, renew)
			r.drv.SetState(hw.State{VelocityMps: hw.Vec3{X: -0.01}})
			r.run(200, renew)
			o = r.dev.Output()
			// 200 ms of the spring's 5 N against 1 cm/s banks 10 mJ: a
			// frame against the spring must not bank a budget either.
			if o.AddedDampingNsPerM > 0 || o.ActiveNs > 0 || !(o.EnergyJ >= before) || o.EnergyJ > before+0.015 {
				t.Errorf("200 ms after the bad frame: damping %v N·s/m, acting %v ms, energy %v J (%v J before it)",
					o.AddedDampingNsPerM, float64(o.ActiveNs)/1e6, o.EnergyJ, before)
			}
			if d := o.EffectsEnergyJ - effectsBefore; !(d >= 0 && d < 0.015) {
				t.Errorf("the spring's energy moved by %v J over the bad frame and 200 ms of 10 mJ's passive work", d)
			}
			r.run(2000, renew)
			if n := len(r.eventsOf(EventPassivitySustained)); n != 0 {
				t.Errorf("%d passivity-sustained event(s) for one bad frame", n)
			}
		})
	}
}

// TestStepWithEffectsDoesNotAllocate: the per-tick path with a wall, a
// damper, the passivity controller and the slew limit allocates nothing,
// including the tick that adopts an updated Set.
func TestStepWithEffectsDoesNotAllocate(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.dev.SetGlobals(&Globals{ForceScale: 1, ForceSlewNps: 1e4, Passivity: passivity.Options{Enabled: true}})
	mk := func(z float64) *effect.Set {
		s, err := effect.NewSet(7, []effect.Spec{
			{ID: "wall", Kind: effect.Wall, Params: effect.Params{StiffnessNPerM: 2000, DampingNsPerM: 2, AxisUnit: hw.Vec3{Z: 1}, PointM: hw.Vec3{Z: z}}},
			{ID: "damper", Kind: effect.Damper, Params: effect.Params{DampingNsPerM: 3}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sets := [2]*effect.Set{mk(0), mk(0.001)}
	r.dev.SetEffects(sets[0])
	cmd := force(0, 0, 1)
	p := &Params{}
	reg := r.dev.Register()
	reg.Claim(7)
	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		i++
		if i%500 == 0 {
			r.dev.SetEffects(sets[(i/500)%2])
		}
		z := 0.002 * float64(i%10-5) / 5
		r.drv.SetState(hw.State{PositionM: hw.Vec3{Z: z}, VelocityMps: hw.Vec3{Z: -0.05}})
		reg.Write(7, uint64(i), r.clock.Now()+100*ms, &cmd, p)
		r.dev.Step(r.clock.Advance(ms))
	})
	if allocs != 0 {
		t.Fatalf("Step with effects allocates %.2f times per tick, want 0", allocs)
	}
}

// TestEffectsPublishedWhileTheLoopRuns publishes Sets of growing size from
// one goroutine and loads reports from another while the device steps
// (run under -race): the tick takes each Set whole, grows its room
// without allocating on its side, and readers never see a torn report.
func TestEffectsPublishedWhileTheLoopRuns(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	sets := make([]*effect.Set, effect.MaxEffects)
	for n := range sets {
		specs := make([]effect.Spec, n+1)
		for i := range specs {
			specs[i] = effect.Spec{ID: string(rune('a' + i)), Kind: effect.Damper, Params: effect.Params{DampingNsPerM: 1}}
		}
		s, err := effect.NewSet(7, specs)
		if err != nil {
			t.Fatal(err)
		}
		sets[n] = s
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			r.dev.SetEffects(sets[i%len(sets)])
		}
	}()
	go func() {
		defer wg.Done()
		var rep EffectsReport
		for {
			select {
			case <-done:
				return
			default:
			}
			if r.dev.LoadEffects(&rep) {
				for i := range rep.N {
					if id := rep.Effects[i].ID; len(id) != 1 || id[0] < 'a' || id[0] >= 'a'+effect.MaxEffects {
						t.Errorf("report holds effect id %q, which no Set had", id)
						return
					}
				}
			}
		}
	}()
	r.drv.SetState(hw.State{VelocityMps: hw.Vec3{X: 0.01}})
	for i := range 3000 {
		r.command(7, uint64(i+1), 100*ms, hw.Command{}, nil)
		r.step(ms)
	}
	close(done)
	wg.Wait()
	r.dev.SetEffects(sets[len(sets)-1])
	out := r.run(200, func() { r.command(7, 9999, 100*ms, hw.Command{}, nil) })
	// 16 dampers of 1 N·s/m at 0.01 m/s.
	if !near(out.ForceN.X, -0.16, 1e-9) {
		t.Fatalf("force %v with the largest Set settled, want -0.16 N: some effect found no room", out.ForceN)
	}
}

// TestWallHoldsTheSimulatedArm pushes a simulated arm into a 2,000 N/m wall
// rendered by the loop at 1 kHz with a steady 2 N: the arm comes to rest
// 1 mm into the wall (2 N / 2,000 N/m), with the proxy reported on the
// surface, and nothing rings; with the passivity controller on as well.
func TestWallHoldsTheSimulatedArm(t *testing.T) {
	for _, pc := range []bool{false, true} {
		t.Run(fmt.Sprintf("passivity=%v", pc), func(t *testing.T) {
			clock := looptest.NewClock(1000 * ms)
			arm := sim.NewArm(sim.ArmOptions{PeriodS: 0.001})
			d := NewDevice(arm, DeviceOptions{Clock: clock})
			g := DefaultGlobals()
			g.Passivity.Enabled = pc
			d.SetGlobals(g)
			var s Snapshot
			d.Step(clock.Advance(ms))
			d.Load(&s)
			start := s.State.PositionM
			surface := start.Z - 0.005
			set, err := effect.NewSet(7, []effect.Spec{{ID: "floor", Kind: effect.Wall, Params: effect.Params{
				StiffnessNPerM: 2000, DampingNsPerM: 2, AxisUnit: hw.Vec3{Z: 1}, PointM: hw.Vec3{Z: surface}}}})
			if err != nil {
				t.Fatal(err)
			}
			d.SetEffects(set)
			var rep EffectsReport
			d.LoadEffects(&rep)
			reg := d.Register()
			reg.Claim(7)
			push := force(0, 0, -2)
			var minZ, maxZ float64
			for i := range 3000 {
				reg.Write(7, uint64(i+1), clock.Now()+100*ms, &push, &Params{})
				d.Step(clock.Advance(ms))
				if i >= 2000 { // the last second
					d.Load(&s)
					z := s.State.PositionM.Z
					if i == 2000 {
						minZ, maxZ = z, z
					}
					minZ, maxZ = min(minZ, z), max(maxZ, z)
				}
			}
			depth := surface - (minZ+maxZ)/2
			// The simulated arm's friction may hold it up to 1 N short.
			if !near(depth, 0.001, 0.0005) {
				t.Fatalf("arm rests %.2f mm into the wall, want 1 mm (2 N on 2000 N/m)", depth*1e3)
			}
			// Issue 22's test of a stable wall: no motion over 0.5 mm
			// left a second after contact.
			if maxZ-minZ > 0.0005 {
				t.Fatalf("arm still moves %.3f mm over the last second: the wall rings", (maxZ-minZ)*1e3)
			}
			d.LoadEffects(&rep)
			if rep.N != 1 || !rep.Effects[0].Contact || !near(rep.Effects[0].ProxyM.Z, surface, 1e-9) {
				t.Fatalf("report %d effects, first %+v; want the floor in contact with its proxy at z = %v", rep.N, rep.Effects[0], surface)
			}
		})
	}
}

// TestDropEffectsWithdrawsOnlyItsSessionsSet: a session that ends
// withdraws its Set, never the Set a new controller published meanwhile.
func TestDropEffectsWithdrawsOnlyItsSessionsSet(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	if r.dev.DropEffects(7) {
		t.Fatal("dropped effects from a device that never had any")
	}
	mine := springSet(t, 7)
	r.dev.SetEffects(mine)
	if r.dev.DropEffects(8) || r.dev.Effects() != mine {
		t.Fatal("session 8 dropped session 7's effects")
	}
	if !r.dev.DropEffects(7) || r.dev.Effects() != nil {
		t.Fatalf("session 7's effects still in force: %v", r.dev.Effects())
	}
	if r.dev.DropEffects(7) {
		t.Fatal("dropped twice")
	}
}

// A session whose lease lapsed while its message was handled, and whose
// arm another session took meanwhile, publishes its declaration late: the
// new owner's effects stay in force, whether the late one declares some
// or none, and the new owner's own renders.
func TestSetEffectsOfKeepsTheNewOwners(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	reg := r.dev.Register()
	if reg.Claim(7) != 7 || !r.dev.SetEffectsOf(7, springSet(t, 7)) {
		t.Fatal("the owner's first declaration refused")
	}
	reg.Release(7) // as the loop does when 7's lease lapses
	if reg.Claim(8) != 8 {
		t.Fatal("session 8 could not take the free arm")
	}
	theirs := springSet(t, 8)
	if !r.dev.SetEffectsOf(8, theirs) {
		t.Fatal("the new owner's declaration refused")
	}
	for _, late := range []*effect.Set{strongSet(t, 7), nil} {
		if r.dev.SetEffectsOf(7, late) || r.dev.Effects() != theirs {
			t.Fatalf("session 7's late declaration (%v) replaced session 8's: %v in force", late, r.dev.Effects())
		}
	}
	seq := uint64(0)
	out := r.run(100, func() { seq++; r.command(8, seq, 100*ms, force(0, 0, 0), nil) })
	if !near(out.ForceN.X, 1, 1e-9) {
		t.Fatalf("output %v under session 8, want its spring's 1 N along X", out.ForceN)
	}
}

// Two sessions publishing at once, one that just lost the arm and its new
// owner, end with the owner's Set in force and room for it.
func TestSetEffectsOfRacingTheNewOwner(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	reg := r.dev.Register()
	for round := range 200 {
		reg.Release(8)
		if reg.Claim(7) != 7 || !r.dev.SetEffectsOf(7, springSet(t, 7)) {
			t.Fatal("session 7 could not take the arm")
		}
		reg.Release(7)
		reg.Claim(8)
		ours, theirs := springSet(t, 7), strongSet(t, 8) // built here: they may t.Fatal
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); r.dev.SetEffectsOf(7, ours) }()
		go func() { defer wg.Done(); r.dev.SetEffectsOf(8, theirs) }()
		wg.Wait()
		if r.dev.Effects() != theirs {
			t.Fatalf("round %d: %v in force, want session 8's", round, r.dev.Effects())
		}
	}
}

// TestEffectsReportShrinksWithTheSet: the report is filled in place in
// the buffers readers copy, which hold older reports; when a Set shrinks,
// every later report lists only the effects in force, nothing of the
// longer ones before (over more publishes than the report has buffers).
func TestEffectsReportShrinksWithTheSet(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	specs := func(ids ...string) *effect.Set {
		var sp []effect.Spec
		for _, id := range ids {
			sp = append(sp, effect.Spec{ID: id, Kind: effect.Damper, FadeNs: 2 * ms, Params: effect.Params{DampingNsPerM: 1}})
		}
		s, err := effect.NewSet(7, sp)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var rep EffectsReport
	r.dev.LoadEffects(&rep) // a reader: the loop reports every reportEvery ticks
	seq := uint64(0)
	keep := func() { seq++; r.command(7, seq, 100*ms, force(0, 0, 1), nil) }
	r.dev.SetEffects(specs("a", "b", "c"))
	r.run(10*reportEvery, keep)
	if r.dev.LoadEffects(&rep); rep.N != 3 {
		t.Fatalf("report lists %d effects, want a, b and c", rep.N)
	}
	r.dev.SetEffects(specs("a"))
	for tick := range 4 * snapBufs * reportEvery {
		r.run(1, keep)
		r.dev.LoadEffects(&rep)
		if tick < 2*reportEvery {
			continue // b and c fade out over 2 ms
		}
		if rep.N != 1 || rep.Effects[0].ID != "a" {
			t.Fatalf("tick %d: report lists %d effects (first %q), want a alone", tick, rep.N, rep.Effects[0].ID)
		}
		for i := 1; i < len(rep.Effects); i++ {
			if rep.Effects[i] != (effect.Rendered{}) {
				t.Fatalf("tick %d: entry %d past the effects in force holds %+v", tick, i, rep.Effects[i])
			}
		}
	}
}

// TestSetEffectsIfKeepsAHolderThatCameBetween: a Set that takes no control
// (a lab gateway's, written by its node) checked against a free register
// must not replace the Set of a session that claimed the device and
// published its own between that check and the publish: the check and the
// publish are one step. The local session is made to come exactly there,
// from inside the first check.
func TestSetEffectsIfKeepsAHolderThatCameBetween(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	reg := r.dev.Register()
	const gateway, local = 1 << 40, 7
	theirs := springSet(t, local)
	checks := 0
	mayReplace := func(holder uint64) bool {
		checks++
		if checks == 1 {
			if reg.Claim(local) != local || !r.dev.SetEffectsOf(local, theirs) {
				t.Fatal("the local session could not take the free arm")
			}
		}
		return holder == 0 || holder == gateway
	}
	if r.dev.SetEffectsIf(strongSet(t, gateway), mayReplace) {
		t.Error("the gateway's Set was published over a session that holds the arm")
	}
	if got := r.dev.Effects(); got != theirs {
		t.Fatalf("%v in force, want the local session's Set", got)
	}
	// With the arm free, the same Set goes in.
	reg.Release(local)
	gw := strongSet(t, gateway)
	if !r.dev.SetEffectsIf(gw, func(holder uint64) bool { return holder == 0 }) || r.dev.Effects() != gw {
		t.Fatal("the gateway's Set refused on a free arm")
	}
}

// TestEffectsReportListsTheEffectsInForceFirst: a Set that replaces a full
// one with sixteen new effects has thirty-two rendered while the old ones
// fade out; the report holds sixteen, and they are the ones in force (GET's
// rendered_force, the frames' proxies), not the ones on their way out.
func TestEffectsReportListsTheEffectsInForceFirst(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	walls := func(prefix string) *effect.Set {
		var sp []effect.Spec
		for i := range effect.MaxEffects {
			sp = append(sp, effect.Spec{ID: fmt.Sprintf("%s%d", prefix, i), Kind: effect.Wall,
				Params: effect.Params{PointM: hw.Vec3{Z: -1}, AxisUnit: hw.Vec3{Z: 1}, StiffnessNPerM: 100}})
		}
		s, err := effect.NewSet(7, sp)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	var rep EffectsReport
	seq := uint64(0)
	keep := func() { seq++; r.command(7, seq, 100*ms, force(0, 0, 0), nil) }
	r.dev.SetEffects(walls("old"))
	r.run(1, keep)
	r.dev.LoadEffects(&rep) // a reader: the loop reports every reportEvery ticks
	r.run(10*reportEvery, keep)
	r.dev.SetEffects(walls("new"))
	r.run(2*reportEvery, keep) // well within the old ones' 50 ms fade
	r.dev.LoadEffects(&rep)
	live := 0
	for i := range rep.N {
		if e := &rep.Effects[i]; !e.Removing && strings.HasPrefix(e.ID, "new") {
			live++
		}
	}
	if live != effect.MaxEffects {
		t.Fatalf("the report lists %d of the %d effects in force (%d entries)", live, effect.MaxEffects, rep.N)
	}
}

// ReplaceEffects swaps in a Set converted again from the one in force (a
// view changed over HTTP) only while that one is still in force and its
// session still controls the arm: a declaration the session published
// meanwhile, or a new owner's, stays.
func TestReplaceEffectsOnlyOverTheSetItWasConvertedFrom(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	reg := r.dev.Register()
	first := springSet(t, 7)
	if reg.Claim(7) != 7 || !r.dev.SetEffectsOf(7, first) {
		t.Fatal("the owner's first declaration refused")
	}
	converted := strongSet(t, 7)
	if !r.dev.ReplaceEffects(first, converted) || r.dev.Effects() != converted {
		t.Fatalf("the conversion of the Set in force was refused: %v in force", r.dev.Effects())
	}
	// first is no longer in force: a conversion of it is stale.
	if r.dev.ReplaceEffects(first, springSet(t, 7)) || r.dev.Effects() != converted {
		t.Fatalf("a conversion of a replaced Set went in: %v in force", r.dev.Effects())
	}
	reg.Release(7)
	if reg.Claim(8) != 8 {
		t.Fatal("session 8 could not take the free arm")
	}
	if r.dev.ReplaceEffects(converted, springSet(t, 7)) || r.dev.Effects() != converted {
		t.Fatalf("a conversion for a session that lost the arm went in: %v in force", r.dev.Effects())
	}
	if r.dev.ReplaceEffects(nil, springSet(t, 8)) {
		t.Fatal("a conversion of no Set went in")
	}
}
