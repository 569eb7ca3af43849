package loop

import (
	"fmt"
	"math"
	"testing"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
)

// TestEffectsRenamedEveryFrameFadeSmoothly: an engine that names its
// effects per frame (contact ids) replaces 8 springs by 8 new ids every
// 16 ms. Each old one should fade out over 50 ms while the new fade in
// (docs/effects.md: "A removed effect fades out over the same time"), so
// the summed force changes by at most 8 × 0.5 N × dt/fade per tick.
// SetEffects makes room for every effect the Renderer still holds; it used
// to count the Set in force only, and the Renderer dropped the effects of
// the Set before, still fading out, whole.
func TestEffectsRenamedEveryFrameFadeSmoothly(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	gen := 0
	publish := func() {
		specs := make([]effect.Spec, 8)
		for i := range specs {
			specs[i] = effect.Spec{ID: fmt.Sprintf("c%d-%d", gen, i), Kind: effect.SpringPoint,
				Params: effect.Params{StiffnessNPerM: 50, PointM: hw.Vec3{X: 0.01}}}
		}
		s, err := effect.NewSet(7, specs)
		if err != nil {
			t.Fatal(err)
		}
		r.dev.SetEffects(s)
		gen++
	}
	publish()
	seq := uint64(0)
	keep := func() { seq++; r.command(7, seq, 100*ms, hw.Command{}, nil) }
	r.run(200, keep)
	prev := r.drv.Last().ForceN.X
	worst := 0.0
	for tick := range 500 {
		if tick%16 == 0 {
			publish()
		}
		keep()
		f := r.step(ms).ForceN.X
		worst = math.Max(worst, math.Abs(f-prev))
		prev = f
	}
	// 8 × 0.5 N over a 50 ms fade: 0.08 N a tick per generation, two
	// generations moving at once at most.
	if worst > 0.2 {
		t.Fatalf("the summed force stepped %.2f N in one tick (total 4 N): fading effects were dropped whole", worst)
	}
}
