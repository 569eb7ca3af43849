package effect

import (
	"math"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// testBubble is a 5 cm sphere at the origin of an identity frame, a 3 cm
// velocity zone, 4 1/s up to 0.5 m/s, 50 N/m in the zone, an 800 N/m wall
// and 2 mm of hysteresis: the entry's defaults.
func testBubble(t *testing.T, mod func(*Bubble)) *Bubble {
	t.Helper()
	id := [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	b := Bubble{Primitive: PrimSphere, Shape: Params{RadiusM: 0.05}, ToLocal: id, ToApp: id,
		DevMPerLocalM: 1, WidthM: 0.03, HysteresisM: 0.002, SpeedGainPerS: 4, MaxSpeedMps: 0.5,
		DeadDampingNsPerM: 1, ZoneStiffnessNPerM: 50, WallStiffnessNPerM: 800, WallDampingNsPerM: 4}
	if mod != nil {
		mod(&b)
	}
	out, err := NewBubble(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestNavigatorZones(t *testing.T) {
	const dtNs = int64(1e6)
	tests := []struct {
		name      string
		mod       func(*Bubble)
		x, v      hw.Vec3
		zone      Zone
		wantF     hw.Vec3 // force after the tick
		wantSpeed float64 // |velocity| of the workspace, m/s
	}{
		{name: "dead zone: damping only, no motion", x: hw.Vec3{X: 0.02}, v: hw.Vec3{Y: 0.1},
			zone: ZoneDead, wantF: hw.Vec3{Y: -0.1}},
		{name: "velocity zone: speed = gain·d, a spring back", x: hw.Vec3{X: 0.07},
			zone: ZoneVelocity, wantF: hw.Vec3{X: -50 * 0.02}, wantSpeed: 4 * 0.02},
		{name: "velocity zone, quadratic: gain·w·u²", x: hw.Vec3{X: 0.065}, mod: func(b *Bubble) { b.Ease = EaseQuadratic },
			zone: ZoneVelocity, wantF: hw.Vec3{X: -50 * 0.015}, wantSpeed: 4 * 0.03 * 0.25},
		{name: "velocity zone: max speed caps it", x: hw.Vec3{Z: -0.075}, mod: func(b *Bubble) { b.MaxSpeedMps = 0.05 },
			zone: ZoneVelocity, wantF: hw.Vec3{Z: 50 * 0.025}, wantSpeed: 0.05},
		{name: "wall: the zone's spring and the wall push inward", x: hw.Vec3{Y: 0.09}, v: hw.Vec3{Y: 0.01},
			zone: ZoneWall, wantF: hw.Vec3{Y: -(50*0.03 + 800*0.01 + 4*0.01)}, wantSpeed: 4 * 0.03},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := testBubble(t, tt.mod)
			n := Navigator{fadedNs: DefaultFadeNs} // its force faded in
			in := Input{DtNs: dtNs, PositionM: tt.x, VelocityMps: tt.v}
			f := n.Step(b, &in, true)
			if n.Zone != tt.zone {
				t.Fatalf("zone %d, want %d (depth %g)", n.Zone, tt.zone, n.DepthM)
			}
			if f.Sub(tt.wantF).Norm() > 1e-9 {
				t.Fatalf("force %+v, want %+v", f, tt.wantF)
			}
			if s := n.VelocityMps.Norm(); math.Abs(s-tt.wantSpeed) > 1e-9 {
				t.Fatalf("speed %g, want %g", s, tt.wantSpeed)
			}
			// Outward: the workspace moves the way the cursor pushes.
			if tt.wantSpeed > 0 && n.VelocityMps.Dot(tt.x) <= 0 {
				t.Fatalf("velocity %+v is not outward from %+v", n.VelocityMps, tt.x)
			}
			if want := n.VelocityMps.Scale(1e-3); n.OffsetM.Sub(want).Norm() > 1e-12 {
				t.Fatalf("offset %+v after one tick, want %+v", n.OffsetM, want)
			}
			// Not integrating (no lease): the same force, no motion.
			var idle Navigator
			idle.Step(b, &in, false)
			if idle.OffsetM != (hw.Vec3{}) || idle.VelocityMps != (hw.Vec3{}) {
				t.Fatalf("moved without a lease: %+v %+v", idle.OffsetM, idle.VelocityMps)
			}
		})
	}
}

func TestNavigatorHysteresisAndReturn(t *testing.T) {
	b := testBubble(t, nil)
	var n Navigator
	step := func(x float64) {
		in := Input{DtNs: 1e6, PositionM: hw.Vec3{X: x}}
		n.Step(b, &in, true)
	}
	step(0.051) // 1 mm out: within the hysteresis band
	if n.Zone != ZoneDead || n.OffsetM != (hw.Vec3{}) {
		t.Fatalf("zone %d offset %+v inside the band", n.Zone, n.OffsetM)
	}
	step(0.06)
	if n.Zone != ZoneVelocity {
		t.Fatalf("zone %d at 1 cm out", n.Zone)
	}
	step(0.049) // back in by 1 mm: still the velocity zone, but no speed
	if n.Zone != ZoneVelocity || n.VelocityMps != (hw.Vec3{}) {
		t.Fatalf("zone %d velocity %+v just inside", n.Zone, n.VelocityMps)
	}
	at := n.OffsetM
	step(0.04)
	if n.Zone != ZoneDead || n.OffsetM != at || n.VelocityMps != (hw.Vec3{}) {
		t.Fatalf("did not stop: zone %d offset %+v (was %+v)", n.Zone, n.OffsetM, at)
	}
}

func TestNavigatorStepDoesNotAllocate(t *testing.T) {
	b := testBubble(t, func(b *Bubble) {
		b.Primitive, b.Shape = PrimBox, Params{HalfExtentsM: hw.Vec3{X: 0.04, Y: 0.04, Z: 0.04}}
	})
	var n Navigator
	in := Input{DtNs: 1e6, PositionM: hw.Vec3{X: 0.06, Y: 0.01}}
	if a := testing.AllocsPerRun(100, func() { n.Step(b, &in, true) }); a != 0 {
		t.Fatalf("%v allocations per tick", a)
	}
}

func TestNavigatorCentreDriftsInTheDeadZone(t *testing.T) {
	b := testBubble(t, func(b *Bubble) { b.DriftRateMps = 0.01 })
	var n Navigator
	in := Input{DtNs: 1e6, PositionM: hw.Vec3{X: 0.02}}
	for range 1000 { // 1 s at 1 cm/s: the centre reaches the cursor 2 cm away halfway
		n.Step(b, &in, true)
	}
	if c := n.CenterM(b); math.Abs(c.X-0.01) > 1e-9 || c.Y != 0 || c.Z != 0 {
		t.Fatalf("centre %+v after 1 s at 1 cm/s toward a cursor 2 cm away, want 1 cm along x", c)
	}
	for range 2000 {
		n.Step(b, &in, true)
	}
	if c := n.CenterM(b); math.Abs(c.X-0.02) > 1e-9 {
		t.Fatalf("centre %+v, want it on the cursor and no further", c)
	}
	if n.OffsetM != (hw.Vec3{}) {
		t.Fatalf("the workspace moved while the centre drifted: %+v", n.OffsetM)
	}
}

// The force fades in over DefaultFadeNs when the navigation starts, and
// again after Stop (a lease lapsed and came back): a bubble that finds the
// hand in its wall never steps the handle at the wall's full force.
func TestNavigatorForceFadesIn(t *testing.T) {
	b := testBubble(t, nil)
	in := Input{DtNs: 1e6, PositionM: hw.Vec3{Y: 0.09}} // in the wall, at rest
	full := 50*0.03 + 800*0.01
	var n Navigator
	for round := range 2 {
		prev := 0.0
		for i := int64(1); i <= DefaultFadeNs/in.DtNs; i++ {
			f := -n.Step(b, &in, true).Y
			want := full * float64(i*in.DtNs) / float64(DefaultFadeNs)
			if math.Abs(f-want) > 1e-9 || f < prev {
				t.Fatalf("round %d, tick %d of the fade: force %g N, want %g N (rising)", round, i, f, want)
			}
			prev = f
		}
		if f := -n.Step(b, &in, true).Y; math.Abs(f-full) > 1e-9 {
			t.Fatalf("round %d, after the fade: force %g N, want %g N", round, f, full)
		}
		n.Stop()
	}
}

// A "cursor" bubble (AtCursor) is centred where the cursor is at the
// navigation's start, CenterM from it: turned on with the hand 10 cm from
// the mount's origin, it finds the hand in its dead zone, not its wall.
// The anchor stays while the bubbles stay AtCursor (a changed gain), and a
// bubble that is not lets the next AtCursor one anchor afresh.
func TestNavigatorCursorCentre(t *testing.T) {
	at := hw.Vec3{X: 0.1, Z: 0.02}
	cursor := testBubble(t, func(b *Bubble) { b.AtCursor = true })
	n := Navigator{fadedNs: DefaultFadeNs}
	step := func(b *Bubble, x hw.Vec3) hw.Vec3 {
		in := Input{DtNs: 1e6, PositionM: x}
		return n.Step(b, &in, true)
	}
	if f := step(cursor, at); n.Zone != ZoneDead || f != (hw.Vec3{}) || n.CenterM(cursor) != at {
		t.Fatalf("at the start: zone %d, force %+v, centre %+v; want the dead zone, no force, the centre on the cursor %+v", n.Zone, f, n.CenterM(cursor), at)
	}
	// 7 cm out along x from the anchor: 2 cm into the velocity zone.
	if step(cursor, at.Add(hw.Vec3{X: 0.07})); n.Zone != ZoneVelocity || math.Abs(n.DepthM-0.02) > 1e-9 {
		t.Fatalf("7 cm from the anchor: zone %d depth %g, want the velocity zone 2 cm deep", n.Zone, n.DepthM)
	}
	// A changed gain keeps the anchor; an offset moves the centre from it.
	offset := testBubble(t, func(b *Bubble) {
		b.AtCursor, b.SpeedGainPerS, b.CenterM, b.LocalOffset = true, 8, hw.Vec3{Z: 0.01}, hw.Vec3{Z: -0.01}
	})
	if step(offset, at); n.CenterM(offset) != at.Add(hw.Vec3{Z: 0.01}) || math.Abs(n.DepthM-(0.01-0.05)) > 1e-9 {
		t.Fatalf("offset 1 cm up: centre %+v depth %g, want %+v and 4 cm inside", n.CenterM(offset), n.DepthM, at.Add(hw.Vec3{Z: 0.01}))
	}
	fixed := testBubble(t, nil)
	if step(fixed, at); n.CenterM(fixed) != (hw.Vec3{}) || n.Zone == ZoneDead {
		t.Fatalf("a fixed bubble at the origin: centre %+v zone %d, want the origin and the cursor outside", n.CenterM(fixed), n.Zone)
	}
	again := hw.Vec3{Y: -0.05}
	if step(cursor, again); n.CenterM(cursor) != again {
		t.Fatalf("a cursor bubble after a fixed one: centre %+v, want it anchored afresh at %+v", n.CenterM(cursor), again)
	}
}

// TestNavigatorDriftIsTheShapesBitForBit: a drifting centre follows a
// wandering cursor in the dead zone exactly (bit for bit) as when the
// shape's distance at the centre was taken every tick, for shapes whose
// centre is inside and outside them; and a "cursor" bubble starts where it
// did.
func TestNavigatorDriftIsTheShapesBitForBit(t *testing.T) {
	shapes := []struct {
		name  string
		prim  Primitive
		shape Params
		start hw.Vec3 // a cursor in the dead zone
	}{
		{"sphere", PrimSphere, Params{RadiusM: 0.05}, hw.Vec3{X: 0.02}},
		{"box", PrimBox, Params{HalfExtentsM: hw.Vec3{X: 0.04, Y: 0.03, Z: 0.02}}, hw.Vec3{X: 0.01, Z: 0.005}},
		{"torus, centre in its hole", PrimTorus, Params{RadiusM: 0.06, MinorRadiusM: 0.02}, hw.Vec3{X: 0.055, Y: 0.004}},
		{"capsule off its centre", PrimCapsule, Params{PointM: hw.Vec3{X: -0.05, Y: 0.03}, EndM: hw.Vec3{X: 0.05, Y: 0.03}, RadiusM: 0.02}, hw.Vec3{X: 0.01, Y: 0.03, Z: 0.005}},
		{"capped cylinder off its centre", PrimCappedCylinder, Params{PointM: hw.Vec3{Y: 0.03, Z: -0.05}, EndM: hw.Vec3{Y: 0.03, Z: 0.05}, RadiusM: 0.02}, hw.Vec3{X: 0.004, Y: 0.03, Z: 0.01}},
		{"capsule through its centre", PrimCapsule, Params{PointM: hw.Vec3{X: -0.05}, EndM: hw.Vec3{X: 0.05}, RadiusM: 0.02}, hw.Vec3{X: 0.02, Y: 0.005}},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			b := testBubble(t, func(b *Bubble) { b.Primitive, b.Shape, b.DriftRateMps = sh.prim, sh.shape, 0.01 })
			// The reference asks the shape at the centre on every call,
			// as a Bubble not built by NewBubble does.
			uncached := *b
			uncached.centre = centreUnknown
			if b.centre == centreUnknown {
				t.Fatal("NewBubble left where the centre lies unknown: the test compares nothing")
			}
			var n Navigator
			var ref hw.Vec3
			const dtNs = int64(1e6)
			for i := range 1500 {
				fi := float64(i)
				x := sh.start.Add(hw.Vec3{X: 0.004 * math.Sin(fi*0.011), Y: 0.003 * math.Cos(fi*0.013), Z: 0.004 * math.Sin(fi*0.007)})
				in := Input{DtNs: dtNs, PositionM: x}
				n.Step(b, &in, true)
				if n.Zone != ZoneDead {
					t.Fatalf("tick %d: the cursor left the dead zone (zone %d, depth %g): the test drives it badly", i, n.Zone, n.DepthM)
				}
				local := x.Sub(ref)
				to := local.Sub(driftTarget(&uncached, local))
				if l := to.Norm(); l > 0 {
					ref = ref.Add(to.Scale(math.Min(l, b.DriftRateMps*float64(dtNs)*1e-9) / l))
				}
				if n.DriftM != ref {
					t.Fatalf("tick %d: drift %+v, want %+v bit for bit", i, n.DriftM, ref)
				}
			}
			if ref == (hw.Vec3{}) {
				t.Fatal("the centre never drifted: the test checks nothing")
			}
			if got, want := cursorStart(b), cursorStart(&uncached); got != want {
				t.Fatalf("cursorStart %+v, want %+v", got, want)
			}
		})
	}
}

// A drifted centre is the configured one again when the bubble is set
// afresh: "fixed" at the centre it names, "drift" starting from a new
// position; the same configuration with another drift rate drifts on.
func TestNavigatorNewCentreDropsTheDrift(t *testing.T) {
	at := hw.Vec3{X: 0.02}
	cases := []struct {
		name string
		next func(b *Bubble)
		want hw.Vec3
	}{
		{"fixed at the same place", func(b *Bubble) {}, hw.Vec3{}},
		{"drifting from a new place", func(b *Bubble) { b.DriftRateMps, b.CenterM, b.LocalOffset = 0.01, hw.Vec3{Y: 0.01}, hw.Vec3{Y: -0.01} }, hw.Vec3{Y: 0.01}},
		{"drifting on, slower", func(b *Bubble) { b.DriftRateMps = 0.005 }, at},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			drift := testBubble(t, func(b *Bubble) { b.DriftRateMps = 0.1 })
			var n Navigator
			in := Input{DtNs: 1e6, PositionM: at}
			for range 1000 {
				n.Step(drift, &in, true)
			}
			if c := n.CenterM(drift); c != at {
				t.Fatalf("centre %+v after drifting, want it on the cursor %+v", c, at)
			}
			next := testBubble(t, tc.next)
			n.Step(next, &Input{DtNs: 1e6, PositionM: at}, false)
			if c := n.CenterM(next); math.Abs(c.Sub(tc.want).Norm()) > 1e-12 {
				t.Fatalf("centre %+v, want %+v", c, tc.want)
			}
			if want := at.Sub(tc.want).Norm() - 0.05; math.Abs(n.DepthM-want) > 1e-12 {
				t.Fatalf("depth %g, want %g: the zones sit where the centre is reported", n.DepthM, want)
			}
		})
	}
}

// A "cursor" bubble whose shape changes to one with its centre outside it
// (a torus) puts the hand where it started on the new shape's core, as the
// docs say, not in the torus's hole with the workspace sliding.
func TestNavigatorCursorCentreFollowsANewShapesCore(t *testing.T) {
	start := hw.Vec3{X: 0.1, Z: 0.02}
	sphere := testBubble(t, func(b *Bubble) { b.AtCursor = true })
	torus := testBubble(t, func(b *Bubble) {
		b.AtCursor, b.Primitive, b.Shape = true, PrimTorus, Params{RadiusM: 0.1, MinorRadiusM: 0.03}
	})
	var n Navigator
	n.Step(sphere, &Input{DtNs: 1e6, PositionM: start}, true)
	n.Step(torus, &Input{DtNs: 1e6, PositionM: start}, true)
	if n.Zone != ZoneDead || n.OffsetM != (hw.Vec3{}) {
		t.Fatalf("the hand at rest where it started: zone %d offset %+v, want the dead zone and no motion", n.Zone, n.OffsetM)
	}
	if c, want := n.CenterM(torus), start.Sub(cursorStart(torus)); c != want {
		t.Fatalf("centre %+v, want %+v: the start less the torus's core point", c, want)
	}
	n.Step(sphere, &Input{DtNs: 1e6, PositionM: start}, true)
	if c := n.CenterM(sphere); c != start {
		t.Fatalf("back to the sphere: centre %+v, want the start %+v", c, start)
	}
}

// A drifting bubble set again after a "cursor" one starts at its centre,
// not where the earlier drift had taken it.
func TestNavigatorDriftAfterACursorBubbleStartsAtItsCentre(t *testing.T) {
	drift := testBubble(t, func(b *Bubble) { b.DriftRateMps = 0.1 })
	cursor := testBubble(t, func(b *Bubble) { b.AtCursor = true })
	var n Navigator
	in := Input{DtNs: 1e6, PositionM: hw.Vec3{X: 0.02}}
	for range 1000 {
		n.Step(drift, &in, true)
	}
	n.Step(cursor, &in, true)
	n.Step(drift, &in, true)
	if c := n.CenterM(drift); c.Norm() > 0.1*1e-3 { // one tick of drift at most
		t.Fatalf("centre %+v, want the configured origin (drift starts there)", c)
	}
}
