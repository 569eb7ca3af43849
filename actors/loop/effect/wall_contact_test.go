package effect

import (
	"math"
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

// TestThinSolidPushesBackTheWayTheCursorCame: a hand pressed into a 4 mm
// plate or a 2 mm bead (2,000 N/m: 4 N at the middle, under any arm's
// clamp) past its middle. The proxy stays on the surface the cursor went
// in through (docs/effects.md), so the force keeps pushing back up and
// grows with the depth; before, the nearest surface became the far one
// and the wall pushed the hand on through the solid.
func TestThinSolidPushesBackTheWayTheCursorCame(t *testing.T) {
	const k, top = thinStiffness, thinTop
	for _, c := range thinSolids() {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.spec)
			g.settle(vec(0, 0, 0.01), hw.Vec3{})
			for i := 1; i < 40; i++ { // 0.1 mm a tick, to 0.1 mm short of the far side
				z := top - float64(i)*1e-4
				f := g.tick(vec(0, 0, z), hw.Vec3{})
				want := k * (top - z)
				if math.Abs(f.Z-want) > 1e-6*want || math.Abs(f.X)+math.Abs(f.Y) > 1e-6*want {
					t.Fatalf("cursor %.1f mm below the top: force %+.3v N, want %.3f N straight up", (top-z)*1e3, f, want)
				}
			}
		})
	}
}

// The thin solids of the tests below: 4 mm thick, centred on the origin,
// their top face at thinTop, at a realistic stiffness (2,000 N/m: 4 N at
// the middle, under any arm's clamp).
const thinStiffness, thinTop = 2000.0, 0.002

func thinSolids() []struct {
	name string
	spec Spec
} {
	const k, top = thinStiffness, thinTop
	plate, bead := vec(0.05, 0.05, top), Params{StiffnessNPerM: k, RadiusM: top}
	return []struct {
		name string
		spec Spec
	}{
		{"limit_box plate", Spec{ID: "b", Kind: LimitBox, Params: Params{StiffnessNPerM: k, HalfExtentsM: plate}}},
		{"limit_sphere bead", Spec{ID: "s", Kind: LimitSphere, Params: bead}},
		{"shape box plate", Spec{ID: "p", Kind: Shape, Primitive: PrimBox, Params: Params{StiffnessNPerM: k, HalfExtentsM: plate}}},
		{"shape rounded_box plate", Spec{ID: "r", Kind: Shape, Primitive: PrimRoundedBox, Params: Params{StiffnessNPerM: k, HalfExtentsM: vec(0.05, 0.05, top/2), RadiusM: top / 2}}},
		{"shape sphere bead", Spec{ID: "e", Kind: Shape, Primitive: PrimSphere, Params: bead}},
		{"shape capsule rod", Spec{ID: "c", Kind: Shape, Primitive: PrimCapsule, Params: Params{StiffnessNPerM: k, RadiusM: top, PointM: vec(-0.05, 0, 0), EndM: vec(0.05, 0, 0)}}},
	}
}

// TestThinSolidMovedUnderAPressingHandPushesBackTheWayItCame: a hand
// pressed 1 mm into the top of a 4 mm thin solid (2 N up), and the solid
// raised under it by 0.6 of its thickness (2.4 mm): the hand is now
// 0.6 mm from the bottom face, past the middle. The force keeps pushing
// it back up, the way it came, with the 2 N of its own depth (a surface
// moved over a hand adds no force); before, the far face became the entry
// side once the proxy was past the middle, and the still hand was pushed
// down through the solid. Then the hand eases off, still below the
// middle, until it is trapped (no force, never a pull), and moves 1 mm
// down: a trapped cursor's motion deeper is pushed back up from where it
// is, not let through toward the nearer bottom face.
func TestThinSolidMovedUnderAPressingHandPushesBackTheWayItCame(t *testing.T) {
	const k, top, raise = thinStiffness, thinTop, 0.6 * 2 * thinTop
	up := vec(0, 0, 1)
	for _, c := range thinSolids() {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.spec)
			g.settle(vec(0, 0, 0.01), hw.Vec3{})
			z := top
			for range 10 { // pressed in 0.1 mm a tick, to 1 mm
				z -= 1e-4
				g.tick(vec(0, 0, z), hw.Vec3{})
			}
			x := vec(0, 0, z)
			if f := g.tick(x, hw.Vec3{}); !nearVec(f, up.Scale(2), 1e-6) {
				t.Fatalf("pressed 1 mm in: force %+.4v N, want 2 N up", f)
			}
			raised := c.spec
			raised.Params.PointM = raised.Params.PointM.Add(up.Scale(raise))
			raised.Params.EndM = raised.Params.EndM.Add(up.Scale(raise))
			g.publish(raised)
			for i := range 300 { // the update glides there in about 25 ms
				if f := g.tick(x, hw.Vec3{}); !nearVec(f, up.Scale(2), 1e-6) {
					t.Fatalf("tick %d after the solid began to rise %.1f mm under the still hand: force %+.4v N, want 2 N up (the way the hand came)",
						i, raise*1e3, f)
				}
			}
			if a := testing.AllocsPerRun(100, func() { g.tick(x, hw.Vec3{}) }); a != 0 {
				t.Fatalf("a tick that casts for the entry side allocates %.1f times, want 0", a)
			}
			// Eased off 1.2 mm, 0.1 mm a tick: the force falls with the
			// depth, to none once the hand is trapped, 0.2 mm below the
			// middle (2.4 mm up now).
			for i := 1; i <= 12; i++ {
				x = vec(0, 0, z+float64(i)*1e-4)
				want := up.Scale(k * max(0, 1e-3-float64(i)*1e-4))
				if f := g.tick(x, hw.Vec3{}); !nearVec(f, want, 1e-6) {
					t.Fatalf("eased off %.1f mm: force %+.4v N, want %+.4v N", float64(i)*0.1, f, want)
				}
			}
			if a := testing.AllocsPerRun(100, func() { g.tick(x, hw.Vec3{}) }); a != 0 {
				t.Fatalf("a trapped tick allocates %.1f times, want 0", a)
			}
			if f := g.tick(x.Sub(up.Scale(1e-3)), hw.Vec3{}); !nearVec(f, up.Scale(k*1e-3), 1e-6) {
				t.Fatalf("trapped past the middle, then 1 mm down: force %+.4v N, want 2 N up", f)
			}
			if f := g.tick(x.Add(up.Scale(1e-4)), hw.Vec3{}); f.Norm() > 1e-9 {
				t.Fatalf("back up past where it was trapped: force %+.4v N, want none", f)
			}
		})
	}
}

// TestSlidingInContactKeepsTheDepth: a cursor pressed 2 mm into a curved or
// flat surface and slid along it at that depth (0.1 mm a tick) feels the
// same force throughout, along the surface's normal: the depth follows
// the cursor's own motion into the surface, and sliding is none.
func TestSlidingInContactKeepsTheDepth(t *testing.T) {
	const k, r, depth = 2000.0, 0.05, 0.002
	around := func(radius float64) func(i int) hw.Vec3 {
		return func(i int) hw.Vec3 {
			a := float64(i) * 1e-4 / radius
			return vec(radius*math.Cos(a), 0, radius*math.Sin(a))
		}
	}
	cases := []struct {
		name   string
		spec   Spec
		free   hw.Vec3
		path   func(i int) hw.Vec3 // the cursor at tick i (i = 0: pressed in)
		normal func(x hw.Vec3) hw.Vec3
	}{
		{"limit_sphere, outside", Spec{ID: "s", Kind: LimitSphere, Params: Params{StiffnessNPerM: k, RadiusM: r}},
			vec(r+0.005, 0, 0), around(r - depth), func(x hw.Vec3) hw.Vec3 { return x.Scale(1 / x.Norm()) }},
		{"limit_sphere, kept inside", Spec{ID: "s", Kind: LimitSphere, KeepInside: true, Params: Params{StiffnessNPerM: k, RadiusM: r}},
			vec(r-0.005, 0, 0), around(r + depth), func(x hw.Vec3) hw.Vec3 { return x.Scale(-1 / x.Norm()) }},
		{"shape sphere", Spec{ID: "e", Kind: Shape, Primitive: PrimSphere, Params: Params{StiffnessNPerM: k, RadiusM: r}},
			vec(r+0.005, 0, 0), around(r - depth), func(x hw.Vec3) hw.Vec3 { return x.Scale(1 / x.Norm()) }},
		{"limit_box top face", Spec{ID: "b", Kind: LimitBox, Params: Params{StiffnessNPerM: k, HalfExtentsM: vec(r, r, r)}},
			vec(-0.04, 0, r+0.005), func(i int) hw.Vec3 { return vec(-0.04+float64(i)*1e-4, 0, r-depth) },
			func(hw.Vec3) hw.Vec3 { return vec(0, 0, 1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.spec)
			g.settle(c.free, hw.Vec3{})
			in := c.path(0)
			for i := 1; i <= 10; i++ { // press in along the normal
				g.tick(c.free.Add(in.Sub(c.free).Scale(float64(i)/10)), hw.Vec3{})
			}
			for i := 0; i < 800; i++ { // 8 cm along the surface
				x := c.path(i)
				f := g.tick(x, hw.Vec3{})
				if want := c.normal(x).Scale(k * depth); !nearVec(f, want, 0.01*k*depth) {
					t.Fatalf("after %.1f mm along the surface: force %+.3v N, want %+.3v N", float64(i)*0.1, f, want)
				}
			}
		})
	}
}

// TestTrappedCursorMeetsTheWallWhereItIs: a surface that came over the
// cursor (a wall jumped past it, a floor raised under a pressing hand that
// then eased off, a container shrunk around it, a solid declared around
// it) pushes nothing where the cursor is, lets it out freely, and pushes
// back its own motion deeper, from where it is. Before, such a cursor met
// no force at all until it was out of the surface.
func TestTrappedCursorMeetsTheWallWhereItIs(t *testing.T) {
	const k = 2000.0
	wall := func(z float64) Spec {
		return Spec{ID: "w", Kind: Wall, Params: Params{StiffnessNPerM: k, AxisUnit: vec(0, 0, 1), PointM: vec(0, 0, z)}}
	}
	sphere := func(r float64, in bool) Spec {
		return Spec{ID: "s", Kind: LimitSphere, KeepInside: in, Params: Params{StiffnessNPerM: k, RadiusM: r}}
	}
	up, out := vec(0, 0, 1), vec(1, 0, 0)
	cases := []struct {
		name          string
		before, after Spec
		approach      []hw.Vec3 // where the cursor is before the change
		x             hw.Vec3   // where the cursor is when the surface comes over it
		free          hw.Vec3   // the direction out of the surface there
	}{
		{"wall jumped past the cursor", wall(-0.05), wall(0.05), nil, vec(0, 0, 0), up},
		{"floor raised under a pressing hand", wall(0), wall(0.05), []hw.Vec3{vec(0, 0, 0.001)}, vec(0, 0, -0.001), up},
		{"container shrunk around a pressing hand", sphere(0.08, true), sphere(0.03, true), []hw.Vec3{vec(0.079, 0, 0)}, vec(0.081, 0, 0), out.Scale(-1)},
		{"solid declared around the cursor", sphere(0.0001, false), sphere(0.05, false), nil, vec(0.01, 0, 0), out},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.before)
			for _, a := range c.approach {
				g.settle(a, hw.Vec3{})
			}
			f0 := g.settle(c.x, hw.Vec3{})
			g.publish(c.after)
			if f := g.settle(c.x, hw.Vec3{}); f.Norm() > f0.Norm()+1e-9 {
				t.Fatalf("the surface came over the cursor: force rose from %v to %v", f0, f)
			}
			// Eased off by its own depth and 0.5 mm more: nothing, and no
			// pull. Then 1 mm deeper than that: pushed back by its own 1 mm.
			// Then out past it: nothing.
			eased := c.x.Add(c.free.Scale(f0.Norm()/k + 0.0005))
			if f := g.settle(eased, hw.Vec3{}); f.Norm() > 1e-9 {
				t.Fatalf("eased off: force %v, want none", f)
			}
			if f := g.tick(eased.Sub(c.free.Scale(0.001)), hw.Vec3{}); !nearVec(f, c.free.Scale(k*0.001), 1e-6) {
				t.Fatalf("1 mm deeper than where it eased off to: force %v, want %v", f, c.free.Scale(k*0.001))
			}
			if f := g.tick(eased.Add(c.free.Scale(0.0001)), hw.Vec3{}); f.Norm() > 1e-9 {
				t.Fatalf("backed out past where it was: force %v, want none", f)
			}
		})
	}
}

// TestKeepInsideCornerLoopInjectsNoEnergy: a hand in a
// keep-inside container goes out past an edge (a box's, a capped
// cylinder's rim) and round a closed loop there, slowly (v = 0). The wall
// must not give back more work than the hand put in. With the entry-side
// rule as first written (80e60b1) the contact's depth grew by depth(x) -
// depth(prev), each measured from its own entry-side point: when those
// landed on different faces, the whole depth under the new face was
// credited in one tick (review27). The box: leaving the
// x face the depth jumps 0 -> 3 mm and the wall pushes 3 N in -z at a hand
// moving along -x, +4.5 mJ per loop (12 µJ of discretisation at 80e60b1^).
func TestKeepInsideCornerLoopInjectsNoEnergy(t *testing.T) {
	const k = 1000.0
	box := vec(0.01, 0.01, 0.01)
	square := []hw.Vec3{vec(0.008, 0, 0.008), vec(0.013, 0, 0.008), vec(0.013, 0, 0.013), vec(0.008, 0, 0.013)}
	cases := []struct {
		name string
		spec Spec
		loop []hw.Vec3
	}{
		{"limit_box", Spec{ID: "b", Kind: LimitBox, KeepInside: true, Params: Params{StiffnessNPerM: k, HalfExtentsM: box}}, square},
		{"shape box", Spec{ID: "p", Kind: Shape, Primitive: PrimBox, KeepInside: true, Params: Params{StiffnessNPerM: k, HalfExtentsM: box}}, square},
		{"shape capped_cylinder rim", Spec{ID: "c", Kind: Shape, Primitive: PrimCappedCylinder, KeepInside: true,
			Params: Params{StiffnessNPerM: k, RadiusM: 0.01, PointM: vec(0, 0, -0.01), EndM: vec(0, 0, 0.01)}},
			[]hw.Vec3{vec(0.0094, 0, 0.0076), vec(0.0137, 0, 0.0128), vec(0.0139, 0, 0.0062), vec(0.0091, 0, 0.0105)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newRig(t, c.spec)
			x := c.loop[0]
			g.settle(x, hw.Vec3{})
			worst, jump := 0.0, 0.0
			var last hw.Vec3
			for range 3 {
				work := 0.0
				for i := 1; i <= len(c.loop); i++ {
					to := c.loop[i%len(c.loop)]
					d := to.Sub(x)
					n := int(math.Ceil(d.Norm() / 2e-6))
					for j := 1; j <= n; j++ {
						next := x.Add(d.Scale(1 / float64(n)))
						f := g.tick(x, hw.Vec3{})
						work += f.Dot(next.Sub(x))
						jump = math.Max(jump, f.Sub(last).Norm())
						last, x = f, next
					}
					x = to
				}
				worst = math.Max(worst, work)
			}
			if worst > 1e-4 { // J; the hand puts 2 to 5 mJ into the wall each loop
				t.Fatalf("a closed loop round the edge gave the hand %.2f mJ (largest one-tick force step %.2f N)", worst*1e3, jump)
			}
		})
	}
}

// TestPackedDirectionRoundTrips: a trapped wall keeps the way out in its
// one word; the direction it casts along comes back within the packing's
// step, and no direction comes back as none.
func TestPackedDirectionRoundTrips(t *testing.T) {
	for _, n := range []hw.Vec3{{}, vec(0, 0, 1), vec(0, 0, -1), vec(1, 0, 0), vec(-0.6, 0.48, -0.64), vec(0.57735, -0.57735, 0.57735)} {
		got := unpackDirection(packDirection(n))
		if !nearVec(got, n, 2e-5) {
			t.Errorf("direction %v comes back as %v", n, got)
		}
	}
}
