package effect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// identityFrame is an SDF frame equal to the device's.
func identityFrame(p Params) Params {
	p.ToLocal = [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	p.DevMPerLocalM = 1
	return p
}

// sdfSphere is a 5 cm sphere at the origin, 1 N at its surface over 1 cm.
func sdfSphere(c SDFCurve) Spec {
	return Spec{ID: "s", Kind: SDF, Primitive: PrimSphere, Curve: c,
		Params: identityFrame(Params{RadiusM: 0.05, RangeM: 0.01, ForceScaleN: 2})}
}

// TestSDFForceAgainstDistance walks a cursor along +X out of a sphere and
// checks the force against the documented curve for every ease and
// symmetry: its size, that it is along the normal, and its sign inside.
func TestSDFForceAgainstDistance(t *testing.T) {
	const r, rng, scale = 0.05, 0.01, 2.0
	eases := []struct {
		e SDFEase
		g func(u float64) float64
	}{
		{SDFLinear, func(u float64) float64 { return u }},
		{SDFQuadratic, func(u float64) float64 { return u * u }},
		{SDFCubic, func(u float64) float64 { return u * u * u }},
		{SDFSmoothstep, func(u float64) float64 { return 3*u*u - 2*u*u*u }},
		{SDFExponential, func(u float64) float64 { return (math.Pow(2, 10*u) - 1) / 1023 }},
	}
	// d is the signed distance from the surface (m); want is the force
	// along +X (the outward normal) for curve g.
	type point struct{ d float64 }
	points := []point{{-0.02}, {-0.006}, {-0.0025}, {0}, {0.0025}, {0.005}, {0.0075}, {0.01}, {0.02}}
	for _, ez := range eases {
		for _, rev := range []bool{false, true} {
			g := ez.g
			if rev {
				g = func(u float64) float64 { return 1 - ez.g(1-u) }
			}
			for _, sym := range []SDFSymmetry{SDFSingle, SDFMirror, SDFAlign} {
				c := SDFCurve{Ease: ez.e, Reverse: rev, Symmetry: sym}
				t.Run(c.Ease.String()+"/"+sym.String()+map[bool]string{true: "/reverse"}[rev], func(t *testing.T) {
					rg := newRig(t, sdfSphere(c))
					for _, p := range points {
						var want float64
						switch sym {
						case SDFSingle:
							want = scale * g(clamp01(1-p.d/rng))
						case SDFMirror:
							want = scale * g(clamp01(1-math.Abs(p.d)/rng))
							if p.d < 0 {
								want = -want
							}
						case SDFAlign:
							want = scale * g(clamp01(1-math.Abs(p.d)/rng))
						}
						f := rg.settle(vec(r+p.d, 0, 0), hw.Vec3{})
						if !near(f.X, want, 1e-9) || !near(f.Y, 0, 1e-12) || !near(f.Z, 0, 1e-12) {
							t.Fatalf("d = %g m: force %v, want %g N along +X", p.d, f, want)
						}
					}
				})
			}
		}
	}
}

// deviceFrame is a turned, scaled and offset frame: 30° about Z then 20°
// about X, a local metre is 0.5 m of handle motion, the shape's origin at
// (0.02, −0.01, 0.03) of the device frame.
func deviceFrame(p Params) Params {
	cz, sz := math.Cos(math.Pi/6), math.Sin(math.Pi/6)
	cx, sx := math.Cos(math.Pi/9), math.Sin(math.Pi/9)
	rz := [3][3]float64{{cz, -sz, 0}, {sz, cz, 0}, {0, 0, 1}}
	rx := [3][3]float64{{1, 0, 0}, {0, cx, -sx}, {0, sx, cx}}
	var rot [3][3]float64 // local → device rotation Rz·Rx
	for i := range 3 {
		for j := range 3 {
			for k := range 3 {
				rot[i][j] += rz[i][k] * rx[k][j]
			}
		}
	}
	const sigma = 0.5
	origin := vec(0.02, -0.01, 0.03)
	// x_local = Rᵀ·(x − origin)/σ.
	for i := range 3 {
		for j := range 3 {
			p.ToLocal[i][j] = rot[j][i] / sigma
		}
	}
	p.LocalOffsetM = mulMat(&p.ToLocal, origin).Scale(-1)
	p.DevMPerLocalM = sigma
	return p
}

// TestSDFForceFollowsTheGradient renders every primitive in a turned and
// scaled frame at points in its band and checks the force against the
// gradient of the distance in the device frame, taken by finite differences
// of the distance itself: along it, of the size the curve gives.
func TestSDFForceFollowsTheGradient(t *testing.T) {
	shapes := []struct {
		prim Primitive
		p    Params // local sizes
	}{
		{PrimSphere, Params{RadiusM: 0.06}},
		{PrimEllipsoid, Params{HalfExtentsM: vec(0.08, 0.05, 0.04)}},
		{PrimBox, Params{HalfExtentsM: vec(0.06, 0.04, 0.05)}},
		{PrimRoundedBox, Params{HalfExtentsM: vec(0.05, 0.03, 0.04), RadiusM: 0.01}},
		{PrimPlane, Params{AxisUnit: vec(0, 0.6, 0.8), PointM: vec(0, 0.6*0.01, 0.8*0.01)}},
		{PrimCapsule, Params{PointM: vec(-0.04, 0, 0), EndM: vec(0.03, 0.02, 0.01), RadiusM: 0.02}},
		{PrimCappedCylinder, Params{PointM: vec(0, -0.04, 0), EndM: vec(0.01, 0.05, 0), RadiusM: 0.03}},
		{PrimCapsuleVertical, Params{HeightM: 0.04, RadiusM: 0.02}},
		{PrimCappedCylinderVertical, Params{HeightM: 0.04, RadiusM: 0.03}},
		{PrimTorus, Params{RadiusM: 0.06, MinorRadiusM: 0.015}},
		{PrimBoxFrame, Params{HalfExtentsM: vec(0.06, 0.05, 0.04), MinorRadiusM: 0.01}},
		{PrimLink, Params{RadiusM: 0.04, MinorRadiusM: 0.01, HeightM: 0.03}},
	}
	const rng, scale = 0.02, 3.0
	for _, sh := range shapes {
		t.Run(sh.prim.String(), func(t *testing.T) {
			p := deviceFrame(sh.p)
			p.RangeM, p.ForceScaleN = rng, scale
			sp := Spec{ID: "g", Kind: SDF, Primitive: sh.prim, Curve: SDFCurve{Symmetry: SDFAlign}, Params: p}
			set, err := NewSet(1, []Spec{sp})
			if err != nil {
				t.Fatalf("NewSet: %v", err)
			}
			p = set.specs[0].Params // as normalised
			dist := func(x hw.Vec3) float64 {
				return shapeDistance(sh.prim, &p, mulMat(&p.ToLocal, x).Add(p.LocalOffsetM)) * p.DevMPerLocalM
			}
			var rd Renderer
			rd.Reserve(1)
			in := Input{NowNs: 1e9, DtNs: msNs}
			src := rand.New(rand.NewPCG(1, uint64(sh.prim)))
			checked := 0
			for tries := 0; checked < 40 && tries < 200000; tries++ {
				x := vec(src.Float64()*0.3-0.15, src.Float64()*0.3-0.15, src.Float64()*0.3-0.15)
				d := dist(x)
				// In the band, away from the surface's creases (the gradient
				// of a box's distance jumps across a diagonal).
				if math.Abs(d) > 0.9*rng || math.Abs(d) < 1e-4 {
					continue
				}
				const h = 1e-7
				grad := vec(dist(x.Add(vec(h, 0, 0)))-dist(x.Sub(vec(h, 0, 0))),
					dist(x.Add(vec(0, h, 0)))-dist(x.Sub(vec(0, h, 0))),
					dist(x.Add(vec(0, 0, h)))-dist(x.Sub(vec(0, 0, h)))).Scale(1 / (2 * h))
				if math.Abs(grad.Norm()-1) > 0.02 {
					continue // a crease, or the ellipsoid's approximate distance
				}
				want := grad.Scale(scale * (1 - math.Abs(d)/rng) / grad.Norm())
				var f hw.Vec3
				for range 100 { // fade in
					in.NowNs += in.DtNs
					in.PositionM = x
					f = rd.Render(set, &in, 1)
				}
				if !nearVec(f, want, 1e-3*scale) {
					t.Fatalf("at %v (d = %.4f m): force %v, want %v along the distance's gradient", x, d, f, want)
				}
				checked++
			}
			if checked < 40 {
				t.Fatalf("only %d points in the band checked", checked)
			}
		})
	}
}

// TestSDFNormalsOfSimpleShapes checks the direction against closed forms:
// the face normal of a box, the normal of a plane, the radius of a capsule.
func TestSDFNormalsOfSimpleShapes(t *testing.T) {
	cases := []struct {
		name string
		prim Primitive
		p    Params
		x    hw.Vec3
		want hw.Vec3 // unit
	}{
		{"box face +Y", PrimBox, Params{HalfExtentsM: vec(0.1, 0.05, 0.1)}, vec(0.02, 0.053, -0.01), vec(0, 1, 0)},
		{"box face −Z", PrimBox, Params{HalfExtentsM: vec(0.1, 0.05, 0.1)}, vec(0.02, 0.01, -0.104), vec(0, 0, -1)},
		{"plane n, behind it", PrimPlane, Params{AxisUnit: vec(1, 0, 0), PointM: vec(0.01, 0, 0)}, vec(0.0, 0.3, 0.2), vec(1, 0, 0)},
		{"capsule across its axis", PrimCapsule, Params{PointM: vec(0, -0.1, 0), EndM: vec(0, 0.1, 0), RadiusM: 0.02},
			vec(0, 0.05, 0.025), vec(0, 0, 1)},
		{"vertical cylinder cap", PrimCappedCylinderVertical, Params{HeightM: 0.04, RadiusM: 0.03}, vec(0.01, 0.045, 0), vec(0, 1, 0)},
		{"box frame, off an edge along X", PrimBoxFrame, Params{HalfExtentsM: vec(0.06, 0.05, 0.04), MinorRadiusM: 0.01},
			vec(0, 0.055, 0.045), vec(0, math.Sqrt2/2, math.Sqrt2/2)},
		{"link, off the end of its loop", PrimLink, Params{RadiusM: 0.04, MinorRadiusM: 0.01, HeightM: 0.03},
			vec(0, 0.03+0.04+0.01+0.005, 0), vec(0, 1, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := identityFrame(c.p)
			p.RangeM, p.ForceScaleN = 0.02, 1
			g := newRig(t, Spec{ID: "n", Kind: SDF, Primitive: c.prim, Curve: SDFCurve{Symmetry: SDFAlign}, Params: p})
			f := g.settle(c.x, hw.Vec3{})
			if l := f.Norm(); !(l > 0) || !nearVec(f.Scale(1/l), c.want, 1e-6) {
				t.Fatalf("force %v, want along %v", f, c.want)
			}
		})
	}
}

// TestSDFShapeJumpingOntoTheCursorRampsIn: a shape declared over a resting
// cursor, and one moved onto it, reach their force over many ticks, never
// in one; a change of curve fades the old one out and the new one in.
func TestSDFShapeJumpingOntoTheCursorRampsIn(t *testing.T) {
	at := func(x float64, c SDFCurve) Spec {
		s := sdfSphere(c)
		s.Params.LocalOffsetM = vec(-x, 0, 0)
		return s
	}
	cursor := vec(0.05, 0, 0) // on the surface of a sphere at the origin
	cases := []struct {
		name          string
		before, after []Spec
	}{
		{"appears", nil, []Spec{at(0, SDFCurve{})}},
		{"jumps 10 cm onto the cursor", []Spec{at(0.1, SDFCurve{})}, []Spec{at(0, SDFCurve{})}},
		{"force scale jumps", []Spec{func() Spec { s := at(0, SDFCurve{}); s.Params.ForceScaleN = 0.1; return s }()}, []Spec{at(0, SDFCurve{})}},
		{"curve changes", []Spec{at(0, SDFCurve{Ease: SDFCubic, Reverse: true})}, []Spec{at(0, SDFCurve{Ease: SDFLinear, Symmetry: SDFMirror})}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.before...)
			f0 := g.settle(cursor, hw.Vec3{})
			g.publish(c.after...)
			step, last := maxStep(g, cursor, f0, 300)
			if !nearVec(last, vec(2, 0, 0), 1e-9) {
				t.Fatalf("force settled at %v, want 2 N along +X", last)
			}
			if total := last.Sub(f0).Norm(); total > 0 && step > 0.1*total {
				t.Fatalf("largest change in one tick %.3f N of %.3f N: the shape stepped its force", step, total)
			}
		})
	}
}

// TestSDFEnergyIsConserved drives a cursor in and out of a sphere's band
// at a steady speed: a fixed SDF effect is a potential field, so the
// energy it absorbed over a round trip is (nearly) zero, and it is its own
// source in the report.
func TestSDFEnergyIsConserved(t *testing.T) {
	g := newRig(t, sdfSphere(SDFCurve{Ease: SDFSmoothstep}))
	g.settle(vec(0.07, 0, 0), hw.Vec3{})
	const speed = 0.01 // m/s: 1 mm a tick would be 1 m/s
	x := 0.07
	for range 2 {
		for x > 0.045 {
			x -= speed * 1e-3
			g.tick(vec(x, 0, 0), vec(-speed, 0, 0))
		}
		for x < 0.07 {
			x += speed * 1e-3
			g.tick(vec(x, 0, 0), vec(speed, 0, 0))
		}
	}
	var rd Rendered
	g.r.Rendered(0, &rd)
	// The work over one pass in is about 2 N · 1 cm · ½ = 10 mJ; the
	// sampling leaves one tick's force × step per pass.
	if rd.ID != "s" || rd.Kind != SDF || math.Abs(rd.EnergyJ) > 1e-4 {
		t.Fatalf("%s %q absorbed %v J over round trips, want ~0 (a conservative field)", rd.Kind, rd.ID, rd.EnergyJ)
	}
}

func TestSDFRefusesBadInput(t *testing.T) {
	good := func() Spec {
		return Spec{ID: "b", Kind: SDF, Primitive: PrimBox, Params: identityFrame(Params{HalfExtentsM: vec(0.01, 0.01, 0.01), RangeM: 0.01, ForceScaleN: 1})}
	}
	cases := []struct {
		name string
		edit func(*Spec)
	}{
		{"a primitive it does not render", func(s *Spec) { s.Primitive = 0 }},
		{"a flat box", func(s *Spec) { s.Params.HalfExtentsM.Z = 0 }},
		{"no range", func(s *Spec) { s.Params.RangeM = 0 }},
		{"a negative force scale", func(s *Spec) { s.Params.ForceScaleN = -1 }},
		{"a force scale past the bound", func(s *Spec) { s.Params.ForceScaleN = 2 * MaxForceN }},
		{"a frame that flattens space", func(s *Spec) { s.Params.ToLocal[2] = [3]float64{} }},
		{"no scale", func(s *Spec) { s.Params.DevMPerLocalM = 0 }},
		{"a NaN offset", func(s *Spec) { s.Params.LocalOffsetM.Y = math.NaN() }},
		{"an unknown ease", func(s *Spec) { s.Curve.Ease = 99 }},
		{"a plane without a normal", func(s *Spec) { s.Primitive = PrimPlane }},
	}
	if _, err := NewSet(1, []Spec{good()}); err != nil {
		t.Fatalf("NewSet refused a valid SDF box: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := good()
			c.edit(&s)
			if _, err := NewSet(1, []Spec{s}); err == nil {
				t.Fatalf("NewSet accepted %+v", s)
			}
		})
	}
}

// TestSDFUpdateAfterCrossFadeKeepsTheNewShape: the update after a
// cross-fade continues the effect that faded in, not the one fading out.
func TestSDFUpdateAfterCrossFadeKeepsTheNewShape(t *testing.T) {
	far := sdfSphere(SDFCurve{})
	far.Params.LocalOffsetM = vec(-0.1, 0, 0)
	near := sdfSphere(SDFCurve{})
	cursor := vec(0.05, 0, 0)
	g := newRig(t, far)
	g.settle(cursor, hw.Vec3{})
	g.publish(near)
	f0 := g.tick(cursor, hw.Vec3{}) // mid cross-fade
	g.publish(near)                 // the same again, as an engine sends it every frame
	step, last := maxStep(g, cursor, f0, 300)
	if !nearVec(last, vec(2, 0, 0), 1e-9) || step > 0.2 {
		t.Fatalf("force settled at %v with a largest tick step of %.3f N, want 2 N along +X, no step", last, step)
	}
	if g.r.Len() != 1 {
		t.Fatalf("%d effects rendered after the fade, want 1", g.r.Len())
	}
}

// TestSDFBoxFrameIsOpen: the middle of a box frame's face is far from its
// edges, so beyond the band there is no force, unlike a box.
func TestSDFBoxFrameIsOpen(t *testing.T) {
	for _, c := range []struct {
		prim Primitive
		want float64
	}{{PrimBoxFrame, 0}, {PrimBox, 1}} {
		p := identityFrame(Params{HalfExtentsM: vec(0.06, 0.05, 0.04), MinorRadiusM: 0.01, RangeM: 0.02, ForceScaleN: 1})
		g := newRig(t, Spec{ID: "f", Kind: SDF, Primitive: c.prim, Curve: SDFCurve{Symmetry: SDFAlign}, Params: p})
		// On the +Z face's centre plane, 1 cm out: 1 cm from a box, 4.5 cm
		// and more from the frame's edges.
		if f := g.settle(vec(0, 0, 0.05), hw.Vec3{}); !near(f.Z, c.want*0.5, 1e-9) || f.X != 0 || f.Y != 0 {
			t.Fatalf("%s: force %v, want %v N along Z", c.prim, f, c.want*0.5)
		}
	}
}
