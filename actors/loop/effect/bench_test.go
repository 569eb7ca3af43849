package effect

import (
	"fmt"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
)

// BenchmarkRender is one tick of a wall and a damper (the capacity
// benchmark's pair) for n arms, each with its own Renderer: hot in the
// cache for one arm, spread over memory for many.
func BenchmarkRender(b *testing.B) {
	for _, n := range []int{1, 10000} {
		for _, contiguous := range []bool{false, true} {
			b.Run(fmt.Sprintf("arms=%d/contiguous=%v", n, contiguous), func(b *testing.B) {
				set, err := NewSet(1, []Spec{
					{ID: "wall", Kind: Wall, Params: Params{StiffnessNPerM: 2000, DampingNsPerM: 1, AxisUnit: hw.Vec3{Z: 1}}},
					{ID: "damper", Kind: Damper, Params: Params{DampingNsPerM: 2}},
				})
				if err != nil {
					b.Fatal(err)
				}
				rs := make([]Renderer, n)
				big := make([]state, 2*n)
				for i := range rs {
					if contiguous {
						rs[i].UseSlots(&Slots{st: big[2*i : 2*i+2]})
					} else {
						rs[i].Reserve(set.Len())
					}
				}
				in := Input{NowNs: 1e9, DtNs: 1e6, PositionM: hw.Vec3{Z: -0.001}, VelocityMps: hw.Vec3{Z: -0.01}}
				b.ResetTimer()
				for k := 0; k < b.N; k++ {
					in.NowNs += in.DtNs
					for i := range rs {
						rs[i].Render(set, &in, 1)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/arm")
			})
		}
	}
}

// BenchmarkRenderSDF is one tick of one SDF effect per shape, with the
// cursor in its band (the costly case: the gradient by central differences
// for all but the sphere and the plane), alternating with a wall in the same
// run: sdf-per-wall is the ratio of their times.
func BenchmarkRenderSDF(b *testing.B) {
	renderer := func(b *testing.B, sp Spec, x hw.Vec3) func() {
		set, err := NewSet(1, []Spec{sp})
		if err != nil {
			b.Fatal(err)
		}
		r := &Renderer{}
		r.Reserve(1)
		in := &Input{NowNs: 1e9, DtNs: 1e6, PositionM: x, VelocityMps: hw.Vec3{Z: -0.01}}
		return func() {
			in.NowNs += in.DtNs
			r.Render(set, in, 1)
		}
	}
	wall := renderer(b, Spec{ID: "w", Kind: Wall, Params: Params{StiffnessNPerM: 2000, AxisUnit: hw.Vec3{Z: 1}}}, hw.Vec3{Z: -0.001})
	id := [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	for _, c := range []struct {
		prim Primitive
		p    Params
	}{
		{PrimSphere, Params{RadiusM: 0.05}},
		{PrimBox, Params{HalfExtentsM: hw.Vec3{X: 0.05, Y: 0.05, Z: 0.05}}},
		{PrimCappedCylinder, Params{EndM: hw.Vec3{Y: 0.1}, RadiusM: 0.05}},
	} {
		b.Run(c.prim.String(), func(b *testing.B) {
			p := c.p
			p.ToLocal, p.DevMPerLocalM, p.RangeM, p.ForceScaleN = id, 1, 0.02, 1
			sdf := renderer(b, Spec{ID: "s", Kind: SDF, Primitive: c.prim, Params: p}, hw.Vec3{X: 0.01, Z: 0.055})
			const batch = 1000
			var wallNs, sdfNs time.Duration
			for k := 0; k < b.N; k += batch {
				t0 := time.Now()
				for range batch {
					wall()
				}
				t1 := time.Now()
				for range batch {
					sdf()
				}
				wallNs, sdfNs = wallNs+t1.Sub(t0), sdfNs+time.Since(t1)
			}
			b.ReportMetric(float64(sdfNs)/float64(wallNs), "sdf-per-wall")
		})
	}
}

// BenchmarkRenderInContact is one tick of one wall-like effect with a
// still cursor pressed 1 mm into its top (in contact: the entry side and
// the depth every tick), per kind. Compare builds with alternated runs
// (docs/investigations/loop-tick-cost.md, "The thin-solid cast").
func BenchmarkRenderInContact(b *testing.B) {
	const k, r = 2000.0, 0.05
	for _, sp := range []Spec{
		{ID: "wall", Kind: Wall, Params: Params{StiffnessNPerM: k, AxisUnit: hw.Vec3{Z: 1}, PointM: hw.Vec3{Z: r}}},
		{ID: "limit_box", Kind: LimitBox, Params: Params{StiffnessNPerM: k, HalfExtentsM: hw.Vec3{X: r, Y: r, Z: r}}},
		{ID: "limit_sphere", Kind: LimitSphere, Params: Params{StiffnessNPerM: k, RadiusM: r}},
		{ID: "capsule", Kind: Shape, Primitive: PrimCapsule, Params: Params{StiffnessNPerM: k, RadiusM: r, PointM: hw.Vec3{X: -r}, EndM: hw.Vec3{X: r}}},
	} {
		b.Run(sp.ID, func(b *testing.B) {
			set, err := NewSet(1, []Spec{sp})
			if err != nil {
				b.Fatal(err)
			}
			var rd Renderer
			rd.Reserve(1)
			in := &Input{NowNs: 1e9, DtNs: 1e6, PositionM: hw.Vec3{Z: r + 0.001}}
			for range 100 { // faded in, above the surface
				in.NowNs += in.DtNs
				rd.Render(set, in, 1)
			}
			in.PositionM = hw.Vec3{Z: r - 0.001}
			for k := 0; k < b.N; k++ {
				in.NowNs += in.DtNs
				rd.Render(set, in, 1)
			}
			var got Rendered
			if rd.Rendered(0, &got); !got.Contact {
				b.Fatalf("%s: not in contact", sp.ID)
			}
		})
	}
}
