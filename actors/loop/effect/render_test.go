package effect

import (
	"math"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

const msNs = int64(1e6)

// rig renders one Set tick by tick at 1 kHz.
type rig struct {
	t   *testing.T
	r   Renderer
	set *Set
	in  Input
}

func newRig(t *testing.T, specs ...Spec) *rig {
	t.Helper()
	g := &rig{t: t, in: Input{NowNs: 1e9, DtNs: msNs}}
	g.r.Reserve(2 * MaxEffects)
	g.publish(specs...)
	return g
}

func (g *rig) publish(specs ...Spec) {
	g.t.Helper()
	s, err := NewSet(1, specs)
	if err != nil {
		g.t.Fatalf("NewSet: %v", err)
	}
	g.set = s
}

// tick renders one tick with the cursor at x moving at v.
func (g *rig) tick(x, v hw.Vec3) hw.Vec3 {
	g.in.NowNs += g.in.DtNs
	g.in.PositionM, g.in.VelocityMps = x, v
	return g.r.Render(g.set, &g.in, 1)
}

// settle renders long enough for fades and smoothing to finish.
func (g *rig) settle(x, v hw.Vec3) hw.Vec3 {
	var f hw.Vec3
	for range 200 {
		f = g.tick(x, v)
	}
	return f
}

func vec(x, y, z float64) hw.Vec3 { return hw.Vec3{X: x, Y: y, Z: z} }

func nearVec(a, b hw.Vec3, tol float64) bool { return a.Sub(b).Norm() <= tol }

func TestEffectForcesSignsAndUnits(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		x, v hw.Vec3
		want hw.Vec3
	}{
		{"spring to a point pulls back, k in N/m", Spec{Kind: SpringPoint, Params: Params{StiffnessNPerM: 100}},
			vec(0.01, 0, 0), hw.Vec3{}, vec(-1, 0, 0)},
		{"spring to a point damps in N·s/m", Spec{Kind: SpringPoint, Params: Params{DampingNsPerM: 2}},
			hw.Vec3{}, vec(0, 0.1, 0), vec(0, -0.2, 0)},
		{"spring to a line ignores the offset along it", Spec{Kind: SpringLine, Params: Params{StiffnessNPerM: 100, AxisUnit: vec(0, 0, 2)}},
			vec(0.01, 0, 0.5), hw.Vec3{}, vec(-1, 0, 0)},
		{"spring to a plane pulls along its normal only", Spec{Kind: SpringPlane, Params: Params{StiffnessNPerM: 100, AxisUnit: vec(0, 0, 1), PointM: vec(0, 0, 0.1)}},
			vec(0.3, 0.2, 0.11), hw.Vec3{}, vec(0, 0, -1)},
		{"damper: scalar plus per axis", Spec{Kind: Damper, Params: Params{DampingNsPerM: 2, DampingPerAxisNsPerM: vec(0, 0, 3)}},
			hw.Vec3{}, vec(0.1, 0.1, 0.1), vec(-0.2, -0.2, -0.5)},
		{"friction slides at the Coulomb force", Spec{Kind: Friction, Params: Params{CoulombN: 1}},
			hw.Vec3{}, vec(0.1, 0, 0), vec(-1, 0, 0)},
		{"friction is viscous inside its stick speed", Spec{Kind: Friction, Params: Params{CoulombN: 1, StickMps: 0.005}},
			hw.Vec3{}, vec(0.001, 0, 0), vec(-0.2, 0, 0)},
		{"field F0 + J·(x − x0) within its radius", Spec{Kind: Field, Params: Params{RadiusM: 0.1, ForceN: vec(1, 0, 0),
			JacobianNPerM: [3][3]float64{{-100, 0, 0}, {0, -100, 0}, {0, 0, -100}}}},
			vec(0.005, 0, 0), hw.Vec3{}, vec(0.5, 0, 0)},
		{"field is zero outside its radius", Spec{Kind: Field, Params: Params{RadiusM: 0.1, ForceN: vec(1, 0, 0)}},
			vec(0.2, 0, 0), hw.Vec3{}, hw.Vec3{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.ID = "e"
			g := newRig(t, c.spec)
			if got := g.settle(c.x, c.v); !nearVec(got, c.want, 1e-9) {
				t.Fatalf("force %v, want %v", got, c.want)
			}
		})
	}
}

// TestWallsPushOutAlongTheirNormal moves the cursor from free space
// through each wall-like effect's surface and checks the force: the
// stiffness times the depth, along the way out, and the proxy on the
// surface.
func TestWallsPushOutAlongTheirNormal(t *testing.T) {
	const k = 1000.0
	cases := []struct {
		name      string
		spec      Spec
		from, to  hw.Vec3
		wantN     hw.Vec3
		wantProxy hw.Vec3
		proxyTolM float64
	}{
		{"plane wall", Spec{Kind: Wall, Params: Params{AxisUnit: vec(0, 0, 1)}},
			vec(0.1, 0, 0.001), vec(0.1, 0, -0.002), vec(0, 0, 2), vec(0.1, 0, 0), 1e-12},
		{"sphere limit, keep inside", Spec{Kind: LimitSphere, KeepInside: true, Params: Params{RadiusM: 0.1}},
			vec(0.09, 0, 0), vec(0.11, 0, 0), vec(-10, 0, 0), vec(0.1, 0, 0), 1e-9},
		{"sphere limit, keep outside", Spec{Kind: LimitSphere, Params: Params{RadiusM: 0.1}},
			vec(0.11, 0, 0), vec(0.09, 0, 0), vec(10, 0, 0), vec(0.1, 0, 0), 1e-9},
		{"box limit, keep outside", Spec{Kind: LimitBox, Params: Params{HalfExtentsM: vec(0.05, 0.05, 0.05)}},
			vec(0.06, 0, 0), vec(0.04, 0, 0), vec(10, 0, 0), vec(0.05, 0, 0), 1e-6},
		{"box limit, keep inside", Spec{Kind: LimitBox, KeepInside: true, Params: Params{HalfExtentsM: vec(0.05, 0.05, 0.05)}},
			vec(0, 0.04, 0), vec(0, 0.06, 0), vec(0, -10, 0), vec(0, 0.05, 0), 1e-6},
		{"shape sphere", Spec{Kind: Shape, Primitive: PrimSphere, Params: Params{RadiusM: 0.02, PointM: vec(0, 0.1, 0)}},
			vec(0, 0.1, 0.021), vec(0, 0.1, 0.019), vec(0, 0, 1), vec(0, 0.1, 0.02), 1e-9},
		{"shape box", Spec{Kind: Shape, Primitive: PrimBox, Params: Params{HalfExtentsM: vec(0.02, 0.02, 0.02)}},
			vec(0, 0, 0.021), vec(0, 0, 0.019), vec(0, 0, 1), vec(0, 0, 0.02), 1e-6},
		{"shape rounded box", Spec{Kind: Shape, Primitive: PrimRoundedBox, Params: Params{HalfExtentsM: vec(0.02, 0.02, 0.02), RadiusM: 0.005}},
			vec(0, 0, 0.026), vec(0, 0, 0.024), vec(0, 0, 1), vec(0, 0, 0.025), 1e-6},
		{"shape ellipsoid", Spec{Kind: Shape, Primitive: PrimEllipsoid, Params: Params{HalfExtentsM: vec(0.03, 0.02, 0.01)}},
			vec(0, 0, 0.011), vec(0, 0, 0.009), vec(0, 0, 1), vec(0, 0, 0.01), 1e-6},
		{"shape plane", Spec{Kind: Shape, Primitive: PrimPlane, Params: Params{AxisUnit: vec(0, 1, 0), PointM: vec(0, 0.05, 0)}},
			vec(0, 0.051, 0), vec(0, 0.049, 0), vec(0, 1, 0), vec(0, 0.05, 0), 1e-9},
		{"shape capsule", Spec{Kind: Shape, Primitive: PrimCapsule, Params: Params{PointM: vec(-0.05, 0, 0), EndM: vec(0.05, 0, 0), RadiusM: 0.01}},
			vec(0, 0.011, 0), vec(0, 0.009, 0), vec(0, 1, 0), vec(0, 0.01, 0), 1e-6},
		{"shape capped cylinder", Spec{Kind: Shape, Primitive: PrimCappedCylinder, Params: Params{PointM: vec(-0.05, 0, 0), EndM: vec(0.05, 0, 0), RadiusM: 0.01}},
			vec(0, 0, 0.011), vec(0, 0, 0.009), vec(0, 0, 1), vec(0, 0, 0.01), 1e-6},
		{"shape vertical capsule", Spec{Kind: Shape, Primitive: PrimCapsuleVertical, Params: Params{HeightM: 0.05, RadiusM: 0.01}},
			vec(0, 0.061, 0), vec(0, 0.059, 0), vec(0, 1, 0), vec(0, 0.06, 0), 1e-6},
		{"shape vertical capped cylinder", Spec{Kind: Shape, Primitive: PrimCappedCylinderVertical, Params: Params{HeightM: 0.05, RadiusM: 0.01}},
			vec(0.011, 0, 0), vec(0.009, 0, 0), vec(1, 0, 0), vec(0.01, 0, 0), 1e-6},
		{"shape torus", Spec{Kind: Shape, Primitive: PrimTorus, Params: Params{RadiusM: 0.05, MinorRadiusM: 0.01}},
			vec(0.05, 0.011, 0), vec(0.05, 0.009, 0), vec(0, 1, 0), vec(0.05, 0.01, 0), 1e-6},
		{"shape sphere as a container", Spec{Kind: Shape, Primitive: PrimSphere, KeepInside: true, Params: Params{RadiusM: 0.02}},
			vec(0, 0, 0.019), vec(0, 0, 0.021), vec(0, 0, -1), vec(0, 0, 0.02), 1e-9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spec.ID = "w"
			c.spec.Params.StiffnessNPerM = k
			g := newRig(t, c.spec)
			if f := g.settle(c.from, hw.Vec3{}); f != (hw.Vec3{}) {
				t.Fatalf("force %v in free space, want none", f)
			}
			got := g.tick(c.to, hw.Vec3{})
			if !nearVec(got, c.wantN, 1e-3*c.wantN.Norm()) {
				t.Fatalf("force %v through the surface, want %v", got, c.wantN)
			}
			var rd Rendered
			g.r.Rendered(0, &rd)
			if !rd.Contact || !nearVec(rd.ProxyM, c.wantProxy, c.proxyTolM) {
				t.Fatalf("proxy %v (contact %v), want %v on the surface", rd.ProxyM, rd.Contact, c.wantProxy)
			}
			if f := g.tick(c.from, hw.Vec3{}); f != (hw.Vec3{}) {
				t.Fatalf("force %v back in free space, want none", f)
			}
		})
	}
}

func TestWallDampsInwardMotionButNeverPulls(t *testing.T) {
	g := newRig(t, Spec{ID: "w", Kind: Wall, Params: Params{StiffnessNPerM: 1000, DampingNsPerM: 10, AxisUnit: vec(0, 0, 1)}})
	g.settle(vec(0, 0, 0.001), hw.Vec3{})
	if f := g.tick(vec(0, 0, -0.001), vec(0, 0, -0.1)); !near(f.Z, 1+1, 1e-9) {
		t.Fatalf("moving in: force %v, want 1 N spring + 1 N damper out", f)
	}
	if f := g.tick(vec(0, 0, -0.0005), vec(0, 0, 0.1)); f.Z < 0 {
		t.Fatalf("moving out fast: force %v pulls into the wall", f)
	}
}

func TestVibrationFrequencyAmplitudeAndAxis(t *testing.T) {
	g := newRig(t, Spec{ID: "v", Kind: Vibration, Params: Params{FrequencyHz: 100, AmplitudeN: 0.5, AxisUnit: vec(0, 3, 0)}})
	g.settle(hw.Vec3{}, hw.Vec3{})
	var peak float64
	crossings, prev := 0, 0.0
	for range 100 { // 100 ms: 10 periods
		f := g.tick(hw.Vec3{}, hw.Vec3{})
		if f.X != 0 || f.Z != 0 {
			t.Fatalf("force %v off the vibration's axis", f)
		}
		peak = math.Max(peak, math.Abs(f.Y))
		if prev < 0 && f.Y >= 0 {
			crossings++
		}
		prev = f.Y
	}
	// Sampled 10 times a period, the peak lands within 5 % of the amplitude.
	if !near(peak, 0.5, 0.03) || crossings < 9 || crossings > 11 {
		t.Fatalf("peak %v N over %d rising crossings in 100 ms, want 0.5 N and 10", peak, crossings)
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// maxStep renders n ticks at x and returns the largest change of force
// from one tick to the next, and the last force.
func maxStep(g *rig, x hw.Vec3, prev hw.Vec3, n int) (step float64, last hw.Vec3) {
	last = prev
	for range n {
		f := g.tick(x, hw.Vec3{})
		step = math.Max(step, f.Sub(last).Norm())
		last = f
	}
	return step, last
}

// TestParameterChangesNeverStepTheForce: an anchor that jumps, a
// stiffness that jumps and a field that jumps all carry the force to its
// new value over several ticks, never in one.
func TestParameterChangesNeverStepTheForce(t *testing.T) {
	cases := []struct {
		name       string
		before     Spec
		after      Spec
		x          hw.Vec3
		wantFinalN hw.Vec3
	}{
		{"anchor jumps 5 cm",
			Spec{Kind: SpringPoint, Params: Params{StiffnessNPerM: 500}},
			Spec{Kind: SpringPoint, Params: Params{StiffnessNPerM: 500, PointM: vec(0.05, 0, 0)}},
			hw.Vec3{}, vec(25, 0, 0)},
		{"stiffness jumps 50x",
			Spec{Kind: SpringPoint, Params: Params{StiffnessNPerM: 100}},
			Spec{Kind: SpringPoint, Params: Params{StiffnessNPerM: 5000}},
			vec(0.002, 0, 0), vec(-10, 0, 0)},
		{"field jumps",
			Spec{Kind: Field, Params: Params{RadiusM: 1}},
			Spec{Kind: Field, Params: Params{RadiusM: 1, ForceN: vec(0, 0, 8)}},
			hw.Vec3{}, vec(0, 0, 8)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.before.ID, c.after.ID = "e", "e"
			g := newRig(t, c.before)
			f0 := g.settle(c.x, hw.Vec3{})
			g.publish(c.after)
			step, last := maxStep(g, c.x, f0, 300)
			total := c.wantFinalN.Sub(f0).Norm()
			if !nearVec(last, c.wantFinalN, 1e-6) {
				t.Fatalf("force settled at %v, want %v", last, c.wantFinalN)
			}
			// Two 5 ms stages: the steepest tick carries about 7 % of the change.
			if step > 0.1*total {
				t.Fatalf("largest change in one tick %.3f N of %.3f N: the update stepped the force", step, total)
			}
		})
	}
}

// TestWallJumpingIntoTheCursorDoesNotFireItOut moves a wall's plane from
// below the cursor to above it: the cursor is then behind the surface,
// but it got there because the wall moved, so the wall pushes nothing;
// once the cursor is out, the wall holds again.
func TestWallJumpingIntoTheCursorDoesNotFireItOut(t *testing.T) {
	wall := func(z float64) Spec {
		return Spec{ID: "w", Kind: Wall, Params: Params{StiffnessNPerM: 2000, DampingNsPerM: 5, AxisUnit: vec(0, 0, 1), PointM: vec(0, 0, z)}}
	}
	g := newRig(t, wall(-0.05))
	cursor := vec(0, 0, 0)
	g.settle(cursor, hw.Vec3{})
	g.publish(wall(0.05))
	for i := range 300 {
		if f := g.tick(cursor, hw.Vec3{}); f != (hw.Vec3{}) {
			t.Fatalf("tick %d after the jump: force %v on a cursor the wall swept over", i, f)
		}
	}
	var rd Rendered
	g.r.Rendered(0, &rd)
	if rd.Contact || rd.ProxyM != cursor {
		t.Fatalf("proxy %v contact %v, want it with the cursor", rd.ProxyM, rd.Contact)
	}
	// Out through the surface, and back in: now the wall holds.
	g.tick(vec(0, 0, 0.051), hw.Vec3{})
	if f := g.tick(vec(0, 0, 0.049), hw.Vec3{}); !near(f.Z, 2, 1e-6) {
		t.Fatalf("force %v after the cursor came back in, want 2 N out", f)
	}
}

func TestEffectsAppearingWithTheCursorInsideAreTrapped(t *testing.T) {
	g := newRig(t, Spec{ID: "s", Kind: LimitSphere, Params: Params{StiffnessNPerM: 3000, RadiusM: 0.05}})
	if f := g.settle(vec(0.01, 0, 0), hw.Vec3{}); f != (hw.Vec3{}) {
		t.Fatalf("a keep-outside sphere declared around the cursor pushed %v", f)
	}
}

func TestTimeToLiveFadesOut(t *testing.T) {
	g := newRig(t)
	expires := g.in.NowNs + 300*msNs
	g.publish(Spec{ID: "k", Kind: SpringPoint, ExpiresNs: expires, FadeNs: 50 * msNs, Params: Params{StiffnessNPerM: 100}})
	x := vec(0.01, 0, 0)
	full := g.settle(x, hw.Vec3{}) // 200 ms: faded in, not expired
	if !near(full.X, -1, 1e-9) {
		t.Fatalf("force %v before expiry, want -1 N", full)
	}
	for g.in.NowNs < expires-msNs {
		g.tick(x, hw.Vec3{})
	}
	prev := full.Norm()
	for i := range 60 {
		f := g.tick(x, hw.Vec3{}).Norm()
		if f > prev+1e-12 {
			t.Fatalf("tick %d of the fade: force grew %v -> %v", i, prev, f)
		}
		if prev-f > 1.0/50+1e-9 {
			t.Fatalf("tick %d of the fade: force fell %v in one tick, want at most 1/50 of it", i, prev-f)
		}
		prev = f
	}
	if prev != 0 {
		t.Fatalf("force %v 60 ms after expiry with a 50 ms fade, want 0", prev)
	}
}

func TestRemovedEffectsFadeOutAndLeave(t *testing.T) {
	g := newRig(t, Spec{ID: "a", Kind: SpringPoint, Params: Params{StiffnessNPerM: 100}})
	x := vec(0.01, 0, 0)
	g.settle(x, hw.Vec3{})
	g.publish()
	if f := g.tick(x, hw.Vec3{}); !(f.Norm() > 0.9) {
		t.Fatalf("force %v the tick after removal, want it still near 1 N (fading)", f)
	}
	g.settle(x, hw.Vec3{})
	if g.r.Len() != 0 {
		t.Fatalf("%d effects rendered after the fade, want 0", g.r.Len())
	}
}

func TestNewSetRefusesBadInput(t *testing.T) {
	ok := Spec{ID: "a", Kind: Damper, Params: Params{DampingNsPerM: 1}}
	cases := []struct {
		name  string
		specs []Spec
	}{
		{"empty id", []Spec{{Kind: Damper}}},
		{"duplicate id", []Spec{ok, ok}},
		{"unknown kind", []Spec{{ID: "x", Kind: 99}}},
		{"negative stiffness", []Spec{{ID: "x", Kind: SpringPoint, Params: Params{StiffnessNPerM: -1}}}},
		{"NaN damping", []Spec{{ID: "x", Kind: Damper, Params: Params{DampingNsPerM: math.NaN()}}}},
		{"zero wall normal", []Spec{{ID: "x", Kind: Wall}}},
		{"zero radius sphere", []Spec{{ID: "x", Kind: LimitSphere}}},
		{"friction with a negative force", []Spec{{ID: "x", Kind: Friction, Params: Params{CoulombN: -0.1}}}},
		{"vibration without frequency", []Spec{{ID: "x", Kind: Vibration, Params: Params{AxisUnit: vec(1, 0, 0)}}}},
		{"infinite anchor", []Spec{{ID: "x", Kind: SpringPoint, Params: Params{PointM: vec(math.Inf(1), 0, 0)}}}},
		{"unknown primitive", []Spec{{ID: "x", Kind: Shape, Primitive: 42}}},
		{"too many", make([]Spec, MaxEffects+1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if s, err := NewSet(1, c.specs); err == nil {
				t.Fatalf("NewSet accepted it: %d effects", s.Len())
			}
		})
	}
	if _, err := NewSet(1, []Spec{ok}); err != nil {
		t.Fatalf("NewSet refused a valid damper: %v", err)
	}
}

func TestRenderDoesNotAllocate(t *testing.T) {
	specs := []Spec{
		{ID: "p", Kind: SpringPoint, Params: Params{StiffnessNPerM: 10}},
		{ID: "l", Kind: SpringLine, Params: Params{StiffnessNPerM: 10, AxisUnit: vec(1, 0, 0)}},
		{ID: "d", Kind: Damper, Params: Params{DampingNsPerM: 1}},
		{ID: "f", Kind: Friction, Params: Params{CoulombN: 0.1}},
		{ID: "w", Kind: Wall, Params: Params{StiffnessNPerM: 1000, AxisUnit: vec(0, 0, 1)}},
		{ID: "b", Kind: LimitBox, KeepInside: true, Params: Params{StiffnessNPerM: 1000, HalfExtentsM: vec(0.1, 0.1, 0.1)}},
		{ID: "c", Kind: Shape, Primitive: PrimCappedCylinder, Params: Params{StiffnessNPerM: 1000, EndM: vec(0, 0.1, 0), RadiusM: 0.01}},
		{ID: "v", Kind: Vibration, Params: Params{FrequencyHz: 50, AmplitudeN: 0.1, AxisUnit: vec(0, 1, 0)}},
		{ID: "x", Kind: Field, Params: Params{RadiusM: 1, ForceN: vec(0, 0, 1)}},
		{ID: "s", Kind: SDF, Primitive: PrimRoundedBox, Curve: SDFCurve{Ease: SDFExponential, Symmetry: SDFMirror},
			Params: identityFrame(Params{HalfExtentsM: vec(0.01, 0.01, 0.005), RadiusM: 0.002, RangeM: 0.02, ForceScaleN: 1})},
	}
	g := newRig(t, specs...)
	g.settle(vec(0, 0, 0.01), vec(0.01, 0, 0))
	moved := specs[len(specs)-1]
	moved.Params.LocalOffsetM = vec(0.05, 0, 0)
	g.publish(append(specs[:5:5], moved)...) // one update (a cross-fade): the adoption is on the tick path too
	i := 0
	allocs := testing.AllocsPerRun(1000, func() {
		i++
		g.tick(vec(0.001*float64(i%20), 0, 0.01-0.001*float64(i%20)), vec(0.01, 0, -0.01))
	})
	if allocs != 0 {
		t.Fatalf("Render allocates %.1f times per tick, want 0", allocs)
	}
}

func TestEffectEnergySigns(t *testing.T) {
	g := newRig(t, Spec{ID: "d", Kind: Damper, Params: Params{DampingNsPerM: 2}},
		Spec{ID: "f", Kind: Field, Params: Params{RadiusM: 10, ForceN: vec(1, 0, 0)}})
	v := vec(0.1, 0, 0)
	for range 1000 {
		g.tick(hw.Vec3{}, v)
	}
	var damper, field Rendered
	g.r.Rendered(0, &damper)
	g.r.Rendered(1, &field)
	if damper.ID != "d" || !(damper.EnergyJ > 0) {
		t.Fatalf("damper %q absorbed %v J moving at 0.1 m/s, want > 0", damper.ID, damper.EnergyJ)
	}
	if field.ID != "f" || !(field.EnergyJ < 0) {
		t.Fatalf("field %q pushing along the motion absorbed %v J, want < 0 (it drives the arm)", field.ID, field.EnergyJ)
	}
}
