package passivity

import (
	"math"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// handle is a point mass on the output: what the controller's force moves.
type handle struct {
	massKg float64
	x, v   hw.Vec3
}

func (h *handle) step(f hw.Vec3, dtS float64) {
	h.v = h.v.Add(f.Scale(dtS / h.massKg))
	h.x = h.x.Add(h.v.Scale(dtS))
}

const dtNs = int64(1e6) // 1 kHz

// run drives a handle for n ticks with source (a force law of the
// handle's state and the tick) through a controller, and reports the
// largest speed, the largest damping added and the number of ticks the
// output differed from the source.
func run(c *Controller, o *Options, n int, source func(h *handle, k int) hw.Vec3) (maxSpeed, maxDamping float64, altered int) {
	var spell Spell
	h := &handle{massKg: 0.2, v: hw.Vec3{X: 0.05}}
	now := int64(1e9)
	for k := range n {
		now += dtNs
		f := source(h, k)
		out := c.Step(f, h.v, now, dtNs, o, &spell)
		if out != f {
			altered++
		}
		maxDamping = math.Max(maxDamping, c.DampingNsPerM)
		h.step(out, float64(dtNs)*1e-9)
		maxSpeed = math.Max(maxSpeed, h.v.Norm())
	}
	return maxSpeed, maxDamping, altered
}

func TestActiveSourcesAreDampedPassiveOnesUntouched(t *testing.T) {
	negativeDamper := func(h *handle, _ int) hw.Vec3 { return h.v.Scale(0.5) }
	damper := func(h *handle, _ int) hw.Vec3 { return h.v.Scale(-2) }
	// Sampled at T, a spring k is passive with damping over k·T/2
	// (Colgate and Brown, 1994); this one has 5 times that.
	spring := func(h *handle, _ int) hw.Vec3 { return h.x.Scale(-200).Sub(h.v.Scale(0.5)) }
	// A stiff spring whose force is computed at 60 Hz and held, as a
	// client streaming a penalty wall sends it: it pumps energy in.
	var held hw.Vec3
	sampled := func(h *handle, k int) hw.Vec3 {
		if k%16 == 0 {
			held = h.x.Scale(-2000)
		}
		return held
	}
	cases := []struct {
		name     string
		source   func(*handle, int) hw.Vec3
		active   bool
		maxSpeed float64 // bound with the controller on
	}{
		{"negative damper", negativeDamper, true, 0.06},
		{"spring sampled at 60 Hz", sampled, true, 0.2},
		{"damper", damper, false, 0.05},
		{"damped spring at the loop's rate", spring, false, 0.06},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			offSpeed, _, _ := run(new(Controller), &Options{}, 3000, c.source)
			var ctl Controller
			onSpeed, damping, altered := run(&ctl, &Options{Enabled: true}, 3000, c.source)
			if !c.active {
				if altered != 0 || damping != 0 {
					t.Fatalf("passive source altered on %d ticks (damping up to %v N·s/m)", altered, damping)
				}
				return
			}
			if !(offSpeed > 2*c.maxSpeed) {
				t.Fatalf("without the controller the speed peaked at %v m/s: the source is not active enough to test", offSpeed)
			}
			if onSpeed > c.maxSpeed || damping == 0 {
				t.Fatalf("with the controller the speed peaked at %v m/s (damping up to %v), want under %v",
					onSpeed, damping, c.maxSpeed)
			}
			if ctl.EnergyJ < -1e-6 { // the prediction's error: µJ
				t.Fatalf("observed energy %v J left negative", ctl.EnergyJ)
			}
		})
	}
}

func TestSustainedActionIsCountedOncePerSpell(t *testing.T) {
	var c Controller
	var s Spell
	o := &Options{Enabled: true}
	v := hw.Vec3{X: 0.1}
	now := int64(1e9)
	// A force along the motion, forever: the controller acts every tick.
	for range 1500 {
		now += dtNs
		c.Step(hw.Vec3{X: 1}, v, now, dtNs, o, &s)
	}
	if !s.Sustained || s.Spells != 1 || c.ActiveNs < SustainedNs {
		t.Fatalf("after 1.5 s of action: sustained %v, spells %d, active %d ns", s.Sustained, s.Spells, c.ActiveNs)
	}
	// A passive second: the spell ends.
	for range 1000 {
		now += dtNs
		c.Step(hw.Vec3{X: -1}, v, now, dtNs, o, &s)
	}
	if s.Sustained || c.ActiveNs != 0 || s.Spells != 1 {
		t.Fatalf("after a passive second: sustained %v, active %d ns, spells %d", s.Sustained, c.ActiveNs, s.Spells)
	}
}

func TestObserverSignConvention(t *testing.T) {
	var o Observer
	o.Add(hw.Vec3{X: -2}, hw.Vec3{X: 0.5}, int64(1e9))
	if o.EnergyJ != 0 {
		t.Fatalf("energy %v J before the force did any work, want 0", o.EnergyJ)
	}
	o.Add(hw.Vec3{X: 2}, hw.Vec3{X: 0.5}, int64(1e9)) // the damper held 1 s: absorbs 1 J
	if o.EnergyJ != 1 {
		t.Fatalf("damper absorbed %v J, want +1", o.EnergyJ)
	}
	o.Add(hw.Vec3{}, hw.Vec3{X: 0.5}, int64(1e9)) // the push held 1 s: gives 1 J back
	if o.EnergyJ != 0 {
		t.Fatalf("after driving the arm %v J, want 0", o.EnergyJ)
	}
}

// An observer counts no work over a velocity no arm reaches (a bad
// reading), and counts the work at the bound.
func TestObserverSkipsAnImplausibleVelocity(t *testing.T) {
	for _, c := range []struct {
		name    string
		v       hw.Vec3
		counted bool
	}{
		{name: "at the bound", v: hw.Vec3{X: MaxSpeedMps}, counted: true},
		{name: "beyond the bound", v: hw.Vec3{X: 100}},
		{name: "far beyond, diagonal", v: hw.Vec3{X: -1000, Z: 1000}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var o Observer
			o.Add(hw.Vec3{X: -2}, hw.Vec3{}, dtNs)
			o.Add(hw.Vec3{X: -2}, c.v, dtNs)
			want := 0.0
			if c.counted {
				want = 2 * c.v.X * 1e-3
			}
			if o.EnergyJ != want {
				t.Fatalf("energy %v J after a tick at %v m/s, want %v", o.EnergyJ, c.v, want)
			}
		})
	}
}

// TestScopeGuardsOnlyTheRenderedSources: with ScopeRendered, the guarded
// part of the output alone decides; a client's push beside a sampled
// spring that pumps energy is left as it is while the spring is passive,
// and the damping added when it is not acts on the whole output. With
// ScopeOutput the push is damped too.
func TestScopeGuardsOnlyTheRenderedSources(t *testing.T) {
	push := hw.Vec3{X: 1} // along the handle's motion: active
	passiveSpring := func(h *handle) hw.Vec3 { return h.x.Scale(-200).Sub(h.v.Scale(0.5)) }
	var held hw.Vec3
	k := 0
	sampledSpring := func(h *handle) hw.Vec3 {
		if k%16 == 0 {
			held = h.x.Scale(-2000)
		}
		k++
		return held
	}
	cases := []struct {
		name        string
		scope       Scope
		spring      func(h *handle) hw.Vec3
		wantDamping bool
	}{
		{"rendered: a passive spring beside a push", ScopeRendered, passiveSpring, false},
		{"rendered: a spring sampled at 60 Hz beside a push", ScopeRendered, sampledSpring, true},
		{"output: a passive spring beside a push", ScopeOutput, passiveSpring, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ctl Controller
			var spell Spell
			o := &Options{Enabled: true, Scope: c.scope}
			h := &handle{massKg: 0.2, v: hw.Vec3{X: 0.05}}
			now, maxDamping := int64(1e9), 0.0
			held, k = hw.Vec3{}, 0
			for range 2000 {
				now += dtNs
				g := c.spring(h)
				out := ctl.StepSources(g.Add(push), g, h.v, now, dtNs, o, &spell)
				ctl.AppliedSources(out, out)
				maxDamping = math.Max(maxDamping, ctl.DampingNsPerM)
				h.step(out, float64(dtNs)*1e-9)
			}
			if (maxDamping > 0) != c.wantDamping {
				t.Fatalf("largest damping added %v N·s/m, want damping %v", maxDamping, c.wantDamping)
			}
		})
	}
}

// TestAppliedCountsTheGuardedShareOfAClampedOutput: a clamp that halves
// the output halves the guarded force counted held.
func TestAppliedCountsTheGuardedShareOfAClampedOutput(t *testing.T) {
	var c Controller
	var s Spell
	o := &Options{Scope: ScopeRendered}
	v := hw.Vec3{X: 1}
	out := c.StepSources(hw.Vec3{X: -4}, hw.Vec3{X: -1}, v, 1e9, dtNs, o, &s)
	c.AppliedSources(out.Scale(0.5), out)
	c.StepSources(hw.Vec3{}, hw.Vec3{}, v, 1e9+dtNs, dtNs, o, &s)
	if want := 0.5 * 1e-3; math.Abs(c.EnergyJ-want) > 1e-15 {
		t.Fatalf("energy %v J, want %v: half of the guarded 1 N held over 1 ms at 1 m/s", c.EnergyJ, want)
	}
}

// The caps and the NaN restart hold on one tick: the bank never exceeds
// the reserve, the added damping never exceeds its maximum, and a bad
// reading starts the bank over instead of poisoning it.
func TestStepCapsTheBankAndTheDampingAndRestartsOnNaN(t *testing.T) {
	cases := []struct {
		name        string
		energyJ     float64
		lastF, f, v hw.Vec3
		o           Options
		wantEnergyJ float64
		wantDamping float64
		wantF       hw.Vec3
	}{
		// 100 N against 1 m/s for 1 ms banks 0.1 J.
		{name: "bank under the default reserve", lastF: hw.Vec3{X: -100}, v: hw.Vec3{X: 1},
			wantEnergyJ: 0.1},
		{name: "bank capped at the reserve", lastF: hw.Vec3{X: -100}, v: hw.Vec3{X: 1},
			o: Options{ReserveJ: 0.05}, wantEnergyJ: 0.05},
		// 1000 N along 1 m/s would put out 1 J: it needs 1000 N·s/m.
		{name: "damping capped at the default maximum", f: hw.Vec3{X: 1000}, v: hw.Vec3{X: 1},
			o:           Options{Enabled: true},
			wantDamping: DefaultMaxDampingNsPerM, wantF: hw.Vec3{X: 1000 - DefaultMaxDampingNsPerM}},
		{name: "damping under a higher maximum", f: hw.Vec3{X: 1000}, v: hw.Vec3{X: 1},
			o:           Options{Enabled: true, MaxDampingNsPerM: 5000},
			wantDamping: 1000, wantF: hw.Vec3{}},
		{name: "NaN velocity restarts the bank", energyJ: 0.1, lastF: hw.Vec3{X: 1}, v: hw.Vec3{X: math.NaN()},
			o: Options{Enabled: true}, wantEnergyJ: 0},
		// One bad frame counts no work and adds no damping, at any speed
		// beyond what an arm reaches.
		{name: "implausible velocity counts nothing", energyJ: 0.01, lastF: hw.Vec3{X: 5}, f: hw.Vec3{X: 5},
			v: hw.Vec3{X: 100}, o: Options{Enabled: true}, wantEnergyJ: 0.01, wantF: hw.Vec3{X: 5}},
		{name: "velocity just beyond the bound counts nothing", energyJ: 0.01, lastF: hw.Vec3{X: 5}, f: hw.Vec3{X: 5},
			v: hw.Vec3{X: MaxSpeedMps * 1.001}, o: Options{Enabled: true}, wantEnergyJ: 0.01, wantF: hw.Vec3{X: 5}},
		{name: "infinite velocity counts nothing", energyJ: 0.01, lastF: hw.Vec3{X: 5}, f: hw.Vec3{X: 5},
			v: hw.Vec3{X: math.Inf(1)}, o: Options{Enabled: true}, wantEnergyJ: 0.01, wantF: hw.Vec3{X: 5}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{EnergyJ: tc.energyJ, lastF: tc.lastF}
			got := c.Step(tc.f, tc.v, 1e9, dtNs, &tc.o, new(Spell))
			if math.Abs(c.EnergyJ-tc.wantEnergyJ) > 1e-12 {
				t.Errorf("EnergyJ = %v, want %v", c.EnergyJ, tc.wantEnergyJ)
			}
			if math.Abs(c.DampingNsPerM-tc.wantDamping) > 1e-9 {
				t.Errorf("DampingNsPerM = %v, want %v", c.DampingNsPerM, tc.wantDamping)
			}
			if got.Sub(tc.wantF).Norm() > 1e-9 {
				t.Errorf("output = %v, want %v", got, tc.wantF)
			}
		})
	}
}
