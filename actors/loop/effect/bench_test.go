package effect

import (
	"fmt"
	"testing"

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
