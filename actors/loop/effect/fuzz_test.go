package effect

import (
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// FuzzRender declares one effect from arbitrary numbers and drives a
// cursor through it: whatever NewSet accepts renders finite forces, and a
// wall-like effect only ever pushes out of its surface, toward its proxy.
func FuzzRender(f *testing.F) {
	f.Add(uint8(Wall), uint8(0), false, 1000.0, 5.0, 0.05, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.01, 0.0, 0.0, 0.2)
	f.Add(uint8(Shape), uint8(PrimCappedCylinder), true, 2000.0, 1.0, 0.02, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.03, 0.0, 0.5)
	f.Add(uint8(LimitBox), uint8(0), true, 500.0, 0.0, 0.1, 0.0, 0.1, 0.0, 0.0, 1.0, 0.0, 0.05, 0.05, 0.05, 1.0)
	f.Add(uint8(Field), uint8(0), false, 0.0, 0.0, 0.2, 0.1, 0.0, 0.0, 1.0, -2.0, 0.5, 0.0, 0.0, 0.0, 0.3)
	f.Add(uint8(SDF), uint8(PrimBox), false, 3.0, 0.02, 0.05, 0.0, 0.1, 0.0, 0.0, 1.0, 0.0, 0.05, 0.0, 0.0, 0.5)
	f.Add(uint8(SDF), uint8(PrimTorus), true, 20.0, 0.5, 0.08, 0.1, 0.0, 0.0, 2.0, 0.0, 1.0, 0.0, 0.0, 0.1, 0.2)
	f.Add(uint8(SDF), uint8(PrimPlane), false, 1.0, 0.001, 0.01, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 1.0)
	f.Fuzz(func(t *testing.T, kind, prim uint8, keepIn bool, k, b, r, px, py, pz, ax, ay, az, ex, ey, ez, speed float64) {
		sp := Spec{ID: "f", Kind: Kind(kind), Primitive: Primitive(prim), KeepInside: keepIn, Params: Params{
			StiffnessNPerM: k, DampingNsPerM: b, RadiusM: r, MinorRadiusM: r / 3, HeightM: r,
			PointM: hw.Vec3{X: px, Y: py, Z: pz}, AxisUnit: hw.Vec3{X: ax, Y: ay, Z: az},
			EndM: hw.Vec3{X: ex, Y: ey, Z: ez}, HalfExtentsM: hw.Vec3{X: r, Y: r / 2, Z: r * 2},
			CoulombN: k / 1000, FrequencyHz: r * 1000, AmplitudeN: b,
			ForceN: hw.Vec3{X: ax, Y: ay, Z: az}, JacobianNPerM: [3][3]float64{{-k, 0, 0}, {0, -k, 0}, {0, 0, -k}},
			// An SDF effect: k is its force scale, b its range, the frame
			// turned by the axis and scaled by its length.
			ToLocal:       [3][3]float64{{ax, -ay, 0}, {ay, ax, 0}, {0, 0, az}},
			LocalOffsetM:  hw.Vec3{X: ex, Y: ey, Z: ez},
			DevMPerLocalM: r, RangeM: b, ForceScaleN: k,
		}}
		if keepIn {
			sp.Curve = SDFCurve{Ease: SDFEase(prim % 5), Reverse: prim%2 == 0, Symmetry: SDFSymmetry(kind % 3)}
		}
		set, err := NewSet(1, []Spec{sp})
		if err != nil {
			return
		}
		var rnd Renderer
		rnd.Reserve(1)
		in := Input{NowNs: 1e9, DtNs: 1e6}
		// A line through the effect's point, crossed back and forth.
		dir := hw.Vec3{X: 0.6, Y: -0.48, Z: 0.64}
		// Half way, the effect moves along the line by 1.2 times its
		// radius, past the middle of a solid that size, under the
		// cursor (it glides there, as any update does).
		start, moved := set.specs[0].Params.PointM, set
		sp.Params.PointM = sp.Params.PointM.Add(dir.Scale(1.2 * r))
		sp.Params.EndM = sp.Params.EndM.Add(dir.Scale(1.2 * r))
		if m, err := NewSet(1, []Spec{sp}); err == nil {
			moved = m
		}
		for i := range 400 {
			if i == 200 {
				set = moved
			}
			s := float64(i%200-100) / 100 // -1..1
			if (i/200)%2 == 1 {
				s = -s
			}
			in.NowNs += in.DtNs
			in.PositionM = start.Add(dir.Scale(s * (r + 0.05)))
			in.VelocityMps = dir.Scale(speed)
			got := rnd.Render(set, &in, 1)
			if !got.Finite() {
				t.Fatalf("tick %d: force %v from %+v", i, got, set.specs[0])
			}
			st := &rnd.st[0]
			switch st.kind {
			case SDF:
				// Never more than its force scale.
				if got.Norm() > st.sp.Params.ForceScaleN*(1+1e-9) {
					t.Fatalf("tick %d: SDF force %v past its scale %v", i, got, st.sp.Params.ForceScaleN)
				}
			case Wall, LimitSphere, LimitBox, Shape:
				// It pushes toward its proxy, on the surface the cursor
				// went in through (not the nearest one past a thin
				// solid's middle), never away from it. (A proxy within
				// rounding of the cursor has no direction to check.)
				out := st.proxyM.Sub(in.PositionM)
				if st.contact && out.Norm() > 1e-12*(1+in.PositionM.Norm()) && got.Dot(out) < -1e-9*got.Norm()*out.Norm() {
					t.Fatalf("tick %d: wall force %v pulls into the surface (toward the proxy: %v)", i, got, out)
				}
			}
		}
	})
}
