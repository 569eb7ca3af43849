package space

import (
	"math"
	"math/rand"
	"strings"
	"testing"
)

const tol = 1e-9

func near(a, b Vec3, eps float64) bool {
	return math.Abs(a.X-b.X) <= eps && math.Abs(a.Y-b.Y) <= eps && math.Abs(a.Z-b.Z) <= eps
}

// sameRotation compares unit quaternions up to sign (q and -q are one
// rotation).
func sameRotation(a, b Quat, eps float64) bool {
	d := a.W*b.W + a.X*b.X + a.Y*b.Y + a.Z*b.Z
	return math.Abs(math.Abs(d)-1) <= eps
}

// rotate returns v rotated by the unit quaternion q (q·v·q*): the tests'
// reference for what an orientation does to a direction.
func rotate(q Quat, v Vec3) Vec3 {
	// t = 2 (q.xyz × v); v' = v + w·t + q.xyz × t.
	tx := 2 * (q.Y*v.Z - q.Z*v.Y)
	ty := 2 * (q.Z*v.X - q.X*v.Z)
	tz := 2 * (q.X*v.Y - q.Y*v.X)
	return Vec3{
		X: v.X + q.W*tx + (q.Y*tz - q.Z*ty),
		Y: v.Y + q.W*ty + (q.Z*tx - q.X*tz),
		Z: v.Z + q.W*tz + (q.X*ty - q.Y*tx),
	}
}

// quatFromAxisAngle returns the rotation of angleRad radians about axis
// (right-hand rule). A zero axis gives the identity.
func quatFromAxisAngle(axis Vec3, angleRad float64) Quat {
	n := math.Sqrt(axis.X*axis.X + axis.Y*axis.Y + axis.Z*axis.Z)
	if n == 0 {
		return IdentityQuat()
	}
	s := math.Sin(angleRad/2) / n
	return Quat{W: math.Cos(angleRad / 2), X: axis.X * s, Y: axis.Y * s, Z: axis.Z * s}
}

func dot(a, b Vec3) float64 { return a.X*b.X + a.Y*b.Y + a.Z*b.Z }
func norm(a Vec3) float64   { return math.Sqrt(dot(a, a)) }

func randVec(r *rand.Rand, span float64) Vec3 {
	return Vec3{X: (r.Float64()*2 - 1) * span, Y: (r.Float64()*2 - 1) * span, Z: (r.Float64()*2 - 1) * span}
}

func randQuat(r *rand.Rand) Quat {
	return Quat{W: r.NormFloat64(), X: r.NormFloat64(), Y: r.NormFloat64(), Z: r.NormFloat64()}.Normalize()
}

// randScale gives magnitudes 0.1..10 with random signs: mirrored mounts
// are valid input.
func randScale(r *rand.Rand) float64 {
	s := math.Pow(10, r.Float64()*2-1)
	if r.Intn(4) == 0 {
		s = -s
	}
	return s
}

// randMount returns a mount with an unnormalised rotation, as clients send.
func randMount(r *rand.Rand) Transform {
	q := randQuat(r)
	k := 0.5 + r.Float64()*3
	return Transform{
		Position: randVec(r, 2),
		Rotation: Quat{W: q.W * k, X: q.X * k, Y: q.Y * k, Z: q.Z * k},
		Scale:    Vec3{X: randScale(r), Y: randScale(r), Z: randScale(r)},
	}
}

func mustParse(t testing.TB, s string) Permutation {
	t.Helper()
	p, err := ParsePermutation(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParsePermutation(t *testing.T) {
	tests := []struct {
		in, canonical string
	}{
		{"XYZ", "XYZ"},
		{"XZY", "XZY"},
		{"-XZY", "-XZY"},
		{"+X-Z+Y", "X-ZY"},
		{"+X+Y+Z", "XYZ"},
		{"-Z-Y-X", "-Z-Y-X"},
		{"Y-XZ", "Y-XZ"},
	}
	for _, tt := range tests {
		p, err := ParsePermutation(tt.in)
		if err != nil {
			t.Errorf("ParsePermutation(%q): %v", tt.in, err)
			continue
		}
		if got := p.String(); got != tt.canonical {
			t.Errorf("ParsePermutation(%q).String() = %q, want %q", tt.in, got, tt.canonical)
		}
	}
}

func TestParsePermutationRejects(t *testing.T) {
	tests := []struct {
		in, mention string
	}{
		{"", "too short"},
		{"XY", "too short"},
		{"XYZ-", "after the third axis"},
		{"XXY", "names X twice"},
		{"xyz", "where an axis letter belongs"},
		{"X Y Z", "where an axis letter belongs"},
		{"--XYZ", "where an axis letter belongs"},
		{"XYZW", "after the third axis"},
		{"ABC", "where an axis letter belongs"},
		{"+-XYZ", "where an axis letter belongs"},
	}
	for _, tt := range tests {
		_, err := ParsePermutation(tt.in)
		if err == nil {
			t.Errorf("ParsePermutation(%q) accepted invalid input", tt.in)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, "space: ") || !strings.Contains(msg, tt.mention) ||
			!strings.Contains(msg, "each of X, Y and Z exactly once") {
			t.Errorf("ParsePermutation(%q) error %q: want the package prefix, %q and the grammar", tt.in, msg, tt.mention)
		}
	}
}

func TestAllPermutations(t *testing.T) {
	all := AllPermutations()
	if len(all) != 48 {
		t.Fatalf("AllPermutations() has %d bases, want 48", len(all))
	}
	if all[0] != IdentityPermutation() || all[0].String() != "XYZ" || (Permutation{}) != IdentityPermutation() {
		t.Errorf("the identity must come first and be the zero value")
	}
	seen := map[string]bool{}
	proper := 0
	for _, p := range all {
		s := p.String()
		if seen[s] {
			t.Errorf("%s listed twice", s)
		}
		seen[s] = true
		back := mustParse(t, s)
		if back != p {
			t.Errorf("ParsePermutation(%q) = %v, want the same comparable value", s, back)
		}
		if det(p.matrix()) > 0 { // keeps handedness
			proper++
		}
		v := Vec3{X: 1, Y: 2, Z: 3}
		// The way back undoes the basis exactly.
		view := NewView(p, IdentityTransform())
		if got := view.PositionToDevice(view.PositionToApp(v)); !near(got, v, 0) {
			t.Errorf("%s: PositionToDevice(PositionToApp(v)) = %v, want %v", s, got, v)
		}
	}
	if proper != 24 {
		t.Errorf("%d proper bases, want 24 (half of them mirror)", proper)
	}
	// The caller owns the slice.
	all[0] = mustParse(t, "-Z-Y-X")
	if AllPermutations()[0] != IdentityPermutation() {
		t.Errorf("AllPermutations shares its slice between callers")
	}
}

func TestPermutationText(t *testing.T) {
	// A basis read back prints in the canonical spelling, and an invalid
	// one does not parse.
	p, err := ParsePermutation("+X-Z+Y")
	if err != nil {
		t.Fatal(err)
	}
	if p.String() != "X-ZY" {
		t.Errorf("round trip = %s, want the canonical spelling", p)
	}
	if back := mustParse(t, p.String()); back != p {
		t.Errorf("ParsePermutation(%q) = %v, want %v", p, back, p)
	}
	if _, err := ParsePermutation("XYY"); err == nil {
		t.Errorf("an invalid basis parsed without error")
	}
}

func TestPermutationAxis(t *testing.T) {
	// Application axis i is the named device axis, with its sign.
	p := mustParse(t, "Z-XY")
	want := []struct {
		axis int
		neg  bool
	}{{2, false}, {0, true}, {1, false}}
	dev := [3]float64{1, 2, 3}
	a := p.Apply(Vec3{X: dev[0], Y: dev[1], Z: dev[2]})
	app := [3]float64{a.X, a.Y, a.Z}
	for i, w := range want {
		wantV := dev[w.axis]
		if w.neg {
			wantV = -wantV
		}
		if app[i] != wantV {
			t.Errorf("axis %d = %v; want device axis %d negated=%v (%v)", i, app[i], w.axis, w.neg, wantV)
		}
	}
}

// Hand-worked cases: what a client's command does to the device.
func TestHandWorkedForces(t *testing.T) {
	rz90 := quatFromAxisAngle(Vec3{Z: 1}, math.Pi/2)
	tests := []struct {
		name   string
		basis  string
		mount  Transform
		appF   Vec3
		wantF  Vec3 // device frame
		devP   Vec3
		wantAP Vec3 // app position of devP
	}{
		{"identity", "XYZ", IdentityTransform(), Vec3{X: 1, Y: 2, Z: 3}, Vec3{X: 1, Y: 2, Z: 3}, Vec3{X: 1, Y: 2, Z: 3}, Vec3{X: 1, Y: 2, Z: 3}},
		{"XZY app +Z is device +Y", "XZY", IdentityTransform(), Vec3{Z: 1.5}, Vec3{Y: 1.5}, Vec3{X: 1, Y: 2, Z: 3}, Vec3{X: 1, Y: 3, Z: 2}},
		{"-XZY mirrors X", "-XZY", IdentityTransform(), Vec3{X: 1}, Vec3{X: -1}, Vec3{X: 1, Y: 2, Z: 3}, Vec3{X: -1, Y: 3, Z: 2}},
		{"ZXY", "ZXY", IdentityTransform(), Vec3{X: 1}, Vec3{Z: 1}, Vec3{X: 1, Y: 2, Z: 3}, Vec3{X: 3, Y: 1, Z: 2}},
		{"mount turned 90° about Z", "XYZ", Transform{Rotation: rz90, Scale: Vec3{X: 1, Y: 1, Z: 1}},
			Vec3{Y: 1}, Vec3{X: 1}, Vec3{X: 1}, Vec3{Y: 1}},
		{"scale 1000 leaves forces alone", "XYZ", Transform{Rotation: IdentityQuat(), Scale: Vec3{X: 1000, Y: 1000, Z: 1000}},
			Vec3{Z: 2}, Vec3{Z: 2}, Vec3{X: 0.001}, Vec3{X: 1}},
		{"mirrored scale keeps the sign", "XYZ", Transform{Position: Vec3{Z: 1}, Rotation: IdentityQuat(), Scale: Vec3{X: -2, Y: 1, Z: 1}},
			Vec3{X: 3}, Vec3{X: -3}, Vec3{X: 1}, Vec3{X: -2, Z: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewView(mustParse(t, tt.basis), tt.mount)
			if got := v.ForceToDevice(tt.appF); !near(got, tt.wantF, tol) {
				t.Errorf("ForceToDevice(%v) = %v, want %v", tt.appF, got, tt.wantF)
			}
			if got := v.PositionToApp(tt.devP); !near(got, tt.wantAP, tol) {
				t.Errorf("PositionToApp(%v) = %v, want %v", tt.devP, got, tt.wantAP)
			}
		})
	}
}

func TestHandWorkedOrientations(t *testing.T) {
	rz90 := quatFromAxisAngle(Vec3{Z: 1}, math.Pi/2)
	tests := []struct {
		name  string
		basis string
		mount Transform
		dev   Quat
		want  Quat
	}{
		{"identity", "XYZ", IdentityTransform(), rz90, rz90},
		{"mount turns the world, not the body", "XYZ", Transform{Rotation: rz90, Scale: Vec3{X: 1, Y: 1, Z: 1}}, IdentityQuat(), rz90},
		// Under the mirror XZY, +90° about device Z is -90° about app Y.
		{"XZY relabels and mirrors", "XZY", IdentityTransform(), rz90, quatFromAxisAngle(Vec3{Y: 1}, -math.Pi/2)},
		{"YXZ mirrors the turn", "YXZ", IdentityTransform(), rz90, quatFromAxisAngle(Vec3{Z: 1}, -math.Pi/2)},
		{"led_front", "XYZ", mustPreset(t, PresetLEDFront, Vec3{}), IdentityQuat(), Quat{Z: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewView(mustParse(t, tt.basis), tt.mount)
			if got := v.OrientationToApp(tt.dev); !sameRotation(got, tt.want, tol) {
				t.Errorf("OrientationToApp(%v) = %v, want %v", tt.dev, got, tt.want)
			}
		})
	}
}

func mustPreset(t testing.TB, name string, c Vec3) Transform {
	t.Helper()
	tr, ok := PresetTransform(name, c)
	if !ok {
		t.Fatalf("PresetTransform(%q) unknown", name)
	}
	return tr
}

// For every basis and many random mounts, each map and its inverse undo
// each other, forces keep their magnitude, and quantities stay consistent
// with one another.
func TestRoundTripsAllBases(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, p := range AllPermutations() {
		for range 20 {
			m := randMount(r)
			v := NewView(p, m)
			pos, vel, f := randVec(r, 1), randVec(r, 3), randVec(r, 20)
			q := randQuat(r)
			name := p.String()

			if got := v.PositionToDevice(v.PositionToApp(pos)); !near(got, pos, tol) {
				t.Fatalf("%s %+v: position round trip %v → %v", name, m, pos, got)
			}
			if got := v.PositionToApp(v.PositionToDevice(pos)); !near(got, pos, tol) {
				t.Fatalf("%s %+v: position reverse round trip %v → %v", name, m, pos, got)
			}
			if got := v.VelocityToDevice(v.VelocityToApp(vel)); !near(got, vel, tol) {
				t.Fatalf("%s %+v: velocity round trip %v → %v", name, m, vel, got)
			}
			if got := v.ForceToDevice(v.ForceToApp(f)); !near(got, f, tol) {
				t.Fatalf("%s %+v: force round trip %v → %v", name, m, f, got)
			}
			if got := v.OrientationToDevice(v.OrientationToApp(q)); !sameRotation(got, q, tol) {
				t.Fatalf("%s %+v: orientation round trip %v → %v", name, m, q, got)
			}
			if got := v.OrientationToApp(v.OrientationToDevice(q)); !sameRotation(got, q, tol) {
				t.Fatalf("%s %+v: orientation reverse round trip %v → %v", name, m, q, got)
			}
			if n := v.OrientationToApp(q).Norm(); math.Abs(n-1) > tol {
				t.Fatalf("%s: orientation left the unit sphere: norm %v", name, n)
			}
			// A newton stays a newton.
			if a, b := norm(v.ForceToApp(f)), norm(f); math.Abs(a-b) > tol*b {
				t.Fatalf("%s %+v: |ForceToApp(f)| = %v, want %v", name, m, a, b)
			}
			// A force pushes the way the app sees the device move: moving
			// the device along the commanded force is app motion with a
			// positive component along it, whatever mirrors are involved.
			appF := randVec(r, 5)
			if d := dot(v.VelocityToApp(v.ForceToDevice(appF)), appF); d <= 0 {
				t.Fatalf("%s %+v: force %v opposes the motion it causes (dot %v)", name, m, appF, d)
			}
			// Velocity is the derivative of position: no translation.
			dp := v.PositionToApp(Vec3{X: pos.X + vel.X, Y: pos.Y + vel.Y, Z: pos.Z + vel.Z})
			p0 := v.PositionToApp(pos)
			if got := v.VelocityToApp(vel); !near(got, Vec3{X: dp.X - p0.X, Y: dp.Y - p0.Y, Z: dp.Z - p0.Z}, 1e-8) {
				t.Fatalf("%s: VelocityToApp disagrees with the position map", name)
			}
		}
	}
}

// A body axis carried to application space points where the app-space
// orientation says it points.
func TestOrientationAgreesWithDirections(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, p := range AllPermutations() {
		for range 10 {
			m := randMount(r)
			m.Scale = Vec3{X: math.Abs(m.Scale.X), Y: math.Abs(m.Scale.Y), Z: math.Abs(m.Scale.Z)}
			v := NewView(p, m)
			q := randQuat(r)
			body := randVec(r, 1)
			// Device says: body axis `body` points along q·body (device
			// frame). In app space the body axis is relabelled by the
			// basis, and the direction carried like a force.
			want := v.ForceToApp(rotate(q, body))
			got := rotate(v.OrientationToApp(q), p.Apply(body))
			if !near(got, want, 1e-9) {
				t.Fatalf("%s %+v: app orientation rotates %v to %v, want %v", p, m, body, got, want)
			}
		}
	}
}

func TestNewViewNormalisesRotation(t *testing.T) {
	base := NewView(IdentityPermutation(), IdentityTransform())
	m := IdentityTransform()
	m.Rotation = Quat{W: 7}
	v := NewView(IdentityPermutation(), m)
	p := Vec3{X: 0.1, Y: -0.2, Z: 0.3}
	if got := v.PositionToApp(p); !near(got, base.PositionToApp(p), tol) {
		t.Errorf("rotation {w:7} changed a position: %v", got)
	}
	if got := v.OrientationToApp(IdentityQuat()); got != IdentityQuat() {
		t.Errorf("OrientationToApp(identity) = %v, want the rotation normalised to identity", got)
	}
	m.Rotation = Quat{}
	v = NewView(mustParse(t, "XZY"), m)
	if got := v.ForceToDevice(Vec3{Z: 1}); !near(got, Vec3{Y: 1}, tol) {
		t.Errorf("a zero rotation must read as the identity, got %v", got)
	}
	if got := v.PositionToApp(Vec3{X: 1, Y: 2, Z: 3}); got != (Vec3{X: 1, Y: 3, Z: 2}) {
		t.Errorf("the view does not apply basis XZY: %v", got)
	}
}

func TestPresets(t *testing.T) {
	names := PresetNames()
	want := []string{"defaults", "arm_front", "arm_front_centered", "led_front", "led_front_centered"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("PresetNames() = %v, want %v", names, want)
	}
	names[0] = "changed"
	if PresetNames()[0] != "defaults" {
		t.Errorf("PresetNames shares its slice between callers")
	}
	for _, bad := range []string{"custom", "", "ARM_FRONT", "workspace_center"} {
		if _, ok := PresetTransform(bad, Vec3{}); ok {
			t.Errorf("PresetTransform(%q) accepted", bad)
		}
	}
	center := Vec3{X: 0.01, Y: 0.12, Z: 0.15}
	tests := []struct {
		name       string
		devP, appP Vec3
		devF, appF Vec3
	}{
		{"defaults", center, center, Vec3{Y: 1}, Vec3{Y: 1}},
		{"arm_front", center, center, Vec3{Y: 1}, Vec3{Y: 1}},
		{"arm_front_centered", center, Vec3{}, Vec3{Y: 1}, Vec3{Y: 1}},
		{"arm_front_centered", Vec3{X: 0.01, Y: 0.22, Z: 0.15}, Vec3{Y: 0.1}, Vec3{X: 1}, Vec3{X: 1}},
		{"led_front", Vec3{X: 0.1, Y: 0.2, Z: 0.3}, Vec3{X: -0.1, Y: -0.2, Z: 0.3}, Vec3{Y: 1}, Vec3{Y: -1}},
		{"led_front_centered", center, Vec3{}, Vec3{X: 1, Z: 1}, Vec3{X: -1, Z: 1}},
		{"led_front_centered", Vec3{X: 0.01, Y: 0.22, Z: 0.15}, Vec3{Y: -0.1}, Vec3{Y: 1}, Vec3{Y: -1}},
	}
	for _, tt := range tests {
		v := NewView(IdentityPermutation(), mustPreset(t, tt.name, center))
		if got := v.PositionToApp(tt.devP); !near(got, tt.appP, tol) {
			t.Errorf("%s: PositionToApp(%v) = %v, want %v", tt.name, tt.devP, got, tt.appP)
		}
		if got := v.ForceToApp(tt.devF); !near(got, tt.appF, tol) {
			t.Errorf("%s: ForceToApp(%v) = %v, want %v", tt.name, tt.devF, got, tt.appF)
		}
	}
	// With a basis, the centre is given after the basis.
	basis := mustParse(t, "X-ZY")
	v := NewView(basis, mustPreset(t, PresetArmFrontCentered, basis.Apply(center)))
	if got := v.PositionToApp(center); !near(got, Vec3{}, tol) {
		t.Errorf("centred preset under basis %s: centre maps to %v, want the origin", basis, got)
	}
}

func TestDampingMatrixDevice(t *testing.T) {
	tests := []struct {
		name   string
		basis  string
		scalar float64
		vector Vec3
		want   [3][3]float64
	}{
		{"scalar only", "XYZ", 2, Vec3{}, [3][3]float64{{2, 0, 0}, {0, 2, 0}, {0, 0, 2}}},
		{"app Z is device Y under XZY", "XZY", 0, Vec3{Z: 5}, [3][3]float64{{0, 0, 0}, {0, 5, 0}, {0, 0, 0}}},
		{"both", "ZXY", 1, Vec3{X: 3}, [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 4}}},
		{"sign does not matter", "-X-Y-Z", 0, Vec3{X: 1, Y: 2, Z: 3}, [3][3]float64{{1, 0, 0}, {0, 2, 0}, {0, 0, 3}}},
	}
	for _, tt := range tests {
		v := NewView(mustParse(t, tt.basis), IdentityTransform())
		got := v.DampingMatrixDevice(tt.scalar, tt.vector)
		for i := range 3 {
			for j := range 3 {
				if math.Abs(got[i][j]-tt.want[i][j]) > tol {
					t.Errorf("%s: D = %v, want %v", tt.name, got, tt.want)
					i, j = 3, 3
				}
			}
		}
	}
	// In general: the device force -D·v_dev is the app-space damping force
	// -(diag(vector)+scalar)·R·v_dev carried back, for any mount and scale.
	r := rand.New(rand.NewSource(3))
	for _, p := range AllPermutations() {
		v := NewView(p, randMount(r))
		scalar, vector := r.Float64()*20, Vec3{X: r.Float64() * 20, Y: r.Float64() * 20, Z: r.Float64() * 20}
		d := v.DampingMatrixDevice(scalar, vector)
		vel := randVec(r, 1)
		fDev := mulVec(&d, vel)
		va := v.ForceToApp(vel) // rotated, not scaled: physical velocity
		fApp := Vec3{X: (vector.X + scalar) * va.X, Y: (vector.Y + scalar) * va.Y, Z: (vector.Z + scalar) * va.Z}
		if want := v.ForceToDevice(fApp); !near(fDev, want, 1e-9) {
			t.Fatalf("%s: D·v = %v, want %v", p, fDev, want)
		}
		if dot(fDev, vel) < 0 {
			t.Fatalf("%s: damping adds energy", p)
		}
	}
}

func TestViewMethodsDoNotAllocate(t *testing.T) {
	v := NewView(mustParse(t, "-XZY"), randMount(rand.New(rand.NewSource(4))))
	p, q := Vec3{X: 0.1, Y: 0.2, Z: 0.3}, quatFromAxisAngle(Vec3{X: 1, Y: 1}, 0.3)
	var sinkV Vec3
	var sinkQ Quat
	var sinkD [3][3]float64
	methods := map[string]func(){
		"PositionToApp":       func() { sinkV = v.PositionToApp(p) },
		"PositionToDevice":    func() { sinkV = v.PositionToDevice(p) },
		"VelocityToApp":       func() { sinkV = v.VelocityToApp(p) },
		"VelocityToDevice":    func() { sinkV = v.VelocityToDevice(p) },
		"ForceToApp":          func() { sinkV = v.ForceToApp(p) },
		"ForceToDevice":       func() { sinkV = v.ForceToDevice(p) },
		"OrientationToApp":    func() { sinkQ = v.OrientationToApp(q) },
		"OrientationToDevice": func() { sinkQ = v.OrientationToDevice(q) },
		"DampingMatrixDevice": func() { sinkD = v.DampingMatrixDevice(1, p) },
	}
	for name, f := range methods {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s allocates %v times per call, want 0", name, n)
		}
	}
	_, _, _ = sinkV, sinkQ, sinkD
}

// TestPresetMountsHoldNoNegativeZero: a preset's mount, as a client reads it
// back, never says -0 for a centre on an axis.
func TestPresetMountsHoldNoNegativeZero(t *testing.T) {
	for _, name := range PresetNames() {
		for _, c := range []Vec3{{}, {X: 0, Y: 0.12, Z: 0.08}, {X: 0.1, Y: 0, Z: 0}} {
			tr, ok := PresetTransform(name, c)
			if !ok {
				continue
			}
			for i, v := range []float64{tr.Position.X, tr.Position.Y, tr.Position.Z} {
				if v == 0 && math.Signbit(v) {
					t.Errorf("%s with the centre %+v: position[%d] is -0", name, c, i)
				}
			}
		}
	}
}
