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
			var n Navigator
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
