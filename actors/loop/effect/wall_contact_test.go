package effect

import (
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// TestWallMovedOverACursorInContactDoesNotFireIt: a cursor resting
// 1 mm into a wall (in contact, 2 N out). The engine moves the wall's plane
// 5 cm toward free space. docs/effects.md: "If the surface comes over the
// cursor instead, the wall pushes nothing ... A wall never fires a hand out
// of it." The force must not grow past what the cursor's own depth made.
func TestWallMovedOverACursorInContactDoesNotFireIt(t *testing.T) {
	cases := []struct {
		name   string
		before Spec
		after  Spec
		x      hw.Vec3
	}{
		{"wall plane 5 cm out",
			Spec{ID: "w", Kind: Wall, Params: Params{StiffnessNPerM: 2000, AxisUnit: vec(0, 0, 1)}},
			Spec{ID: "w", Kind: Wall, Params: Params{StiffnessNPerM: 2000, AxisUnit: vec(0, 0, 1), PointM: vec(0, 0, 0.05)}},
			vec(0, 0, -0.001)},
		{"limit_sphere shrinks 5 cm around a cursor on its surface",
			Spec{ID: "s", Kind: LimitSphere, KeepInside: true, Params: Params{StiffnessNPerM: 2000, RadiusM: 0.08}},
			Spec{ID: "s", Kind: LimitSphere, KeepInside: true, Params: Params{StiffnessNPerM: 2000, RadiusM: 0.03}},
			vec(0.081, 0, 0)},
		{"limit_box shrinks",
			Spec{ID: "b", Kind: LimitBox, KeepInside: true, Params: Params{StiffnessNPerM: 2000, HalfExtentsM: vec(0.08, 0.08, 0.08)}},
			Spec{ID: "b", Kind: LimitBox, KeepInside: true, Params: Params{StiffnessNPerM: 2000, HalfExtentsM: vec(0.03, 0.08, 0.08)}},
			vec(0.081, 0, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.before)
			// Come in from free space so the wall is in contact.
			free := c.x.Scale(0.9)
			if c.before.Kind == Wall {
				free = vec(0, 0, 0.001)
			}
			g.settle(free, hw.Vec3{})
			f0 := g.settle(c.x, hw.Vec3{})
			if !(f0.Norm() > 1.9) {
				t.Fatalf("force %v in contact, want 2 N", f0)
			}
			g.publish(c.after)
			peak := 0.0
			for range 300 {
				if f := g.tick(c.x, hw.Vec3{}).Norm(); f > peak {
					peak = f
				}
			}
			if peak > f0.Norm()+1e-6 {
				t.Fatalf("the surface moved over the resting cursor: force rose from %.2f N to %.2f N", f0.Norm(), peak)
			}
		})
	}
}
