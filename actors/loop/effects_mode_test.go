package loop

import (
	"math"
	"testing"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
)

// TestEffectsAfterAPositionCommand: a session renders effects with an
// idle command (effects only), then servos the arm with a position command
// (which renders no effects, docs/effects.md step 1) to another place, and
// returns to force control. The effects pause as after a lapse: a wall the
// arm was servoed behind lets it out, a spring fades in from zero, and
// while the position command holds the effects report (GET's
// rendered_force, the frames' proxies) says they are not rendered. Before,
// the renderer resumed with its old contacts, cursor and fade: the wall
// fired the hand out at the clamp, the spring stepped to K·d in one tick,
// and the report showed the last force tick's forces.
func TestEffectsAfterAPositionCommand(t *testing.T) {
	cases := []struct {
		name          string
		spec          effect.Spec
		before, moved hw.Vec3 // where the cursor is before, and where the servo takes it
		maxFirstTickN float64
	}{
		{"wall the arm was servoed behind",
			effect.Spec{ID: "floor", Kind: effect.Wall, Params: effect.Params{StiffnessNPerM: 2000, AxisUnit: hw.Vec3{Z: 1}}},
			hw.Vec3{Z: -0.001}, hw.Vec3{Z: -0.02}, 0.5},
		{"spring stretched by the servo",
			effect.Spec{ID: "k", Kind: effect.SpringPoint, Params: effect.Params{StiffnessNPerM: 400}},
			hw.Vec3{}, hw.Vec3{X: 0.02}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
			set, err := effect.NewSet(7, []effect.Spec{c.spec})
			if err != nil {
				t.Fatal(err)
			}
			r.dev.SetEffects(set)
			var rep EffectsReport
			r.dev.LoadEffects(&rep)
			seq := uint64(0)
			idle := func() { seq++; r.command(7, seq, 100*ms, hw.Command{}, nil) }
			// Into a wall from its free side (a contact), or resting at the spring's anchor.
			r.drv.SetState(hw.State{PositionM: hw.Vec3{Z: 0.001}})
			r.run(100, idle)
			r.drv.SetState(hw.State{PositionM: c.before})
			r.run(20, idle)
			pos := hw.Command{Mode: hw.ModePosition, PositionM: c.moved}
			r.run(5, func() { seq++; r.command(7, seq, 100*ms, pos, nil) })
			r.drv.SetState(hw.State{PositionM: c.moved})
			r.run(100, func() { seq++; r.command(7, seq, 100*ms, pos, nil) })
			r.dev.LoadEffects(&rep)
			if rep.Rendering && rep.N == 1 && rep.Effects[0].ForceN != (hw.Vec3{}) {
				t.Errorf("under a position command the effects report says rendering, force %v: the loop renders none",
					rep.Effects[0].ForceN)
			}
			idle()
			first := r.step(ms).ForceN
			peak := 0.0
			for range 100 {
				idle()
				peak = math.Max(peak, mag(r.step(ms).ForceN))
			}
			if mag(first) > c.maxFirstTickN {
				t.Fatalf("first force tick after the position command: %v (%.2f N; peak %.2f N over 100 ms)", first, mag(first), peak)
			}
		})
	}
}
