package space

import (
	"math"
	"math/rand"
	"testing"
)

// A workspace transform stacks after the mount: positions and velocities
// see it whole, forces rotated (and mirrored) but never scaled, and the
// inverse maps undo it.
func TestThenStacksAWorkspace(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, p := range AllPermutations() {
		for range 5 {
			v := NewView(p, randMount(r))
			w := randMount(r)
			s := v.Then(w)
			rw := w.Rotation.Normalize()
			dev := randVec(r, 0.2)
			app := v.PositionToApp(dev)
			want := rotate(rw, Vec3{X: w.Scale.X * app.X, Y: w.Scale.Y * app.Y, Z: w.Scale.Z * app.Z})
			want = Vec3{X: want.X + w.Position.X, Y: want.Y + w.Position.Y, Z: want.Z + w.Position.Z}
			if got := s.PositionToApp(dev); !near(got, want, 1e-9) {
				t.Fatalf("%s: position %v, want %v", p, got, want)
			}
			if back := s.PositionToDevice(s.PositionToApp(dev)); !near(back, dev, 1e-9) {
				t.Fatalf("%s: position round trip %v, want %v", p, back, dev)
			}
			f := randVec(r, 3)
			fa := v.ForceToApp(f)
			sg := Vec3{X: math.Copysign(1, w.Scale.X), Y: math.Copysign(1, w.Scale.Y), Z: math.Copysign(1, w.Scale.Z)}
			wantF := rotate(rw, Vec3{X: sg.X * fa.X, Y: sg.Y * fa.Y, Z: sg.Z * fa.Z})
			if got := s.ForceToApp(f); !near(got, wantF, 1e-9) {
				t.Fatalf("%s: force %v, want %v (never scaled)", p, got, wantF)
			}
			if back := s.ForceToDevice(s.ForceToApp(f)); !near(back, f, 1e-9) {
				t.Fatalf("%s: force round trip %v, want %v", p, back, f)
			}
		}
	}
}

// With a proper (unmirrored) workspace, an orientation turns with the
// workspace rotation; Then of the identity changes nothing.
func TestThenOrientationsAndIdentity(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	for range 50 {
		m := randMount(r)
		v := NewView(mustParse(t, "XZY"), m)
		w := randMount(r)
		w.Scale = Vec3{X: math.Abs(w.Scale.X), Y: math.Abs(w.Scale.Y), Z: math.Abs(w.Scale.Z)}
		q := randQuat(r)
		want := w.Rotation.Normalize().Mul(v.OrientationToApp(q))
		s := v.Then(w)
		if got := s.OrientationToApp(q); !sameRotation(got, want, 1e-9) {
			t.Fatalf("orientation %v, want %v", got, want)
		}
		if back := s.OrientationToDevice(s.OrientationToApp(q)); !sameRotation(back, q, 1e-9) {
			t.Fatalf("orientation round trip %v, want %v", back, q)
		}
		id := v.Then(IdentityTransform())
		dev := randVec(r, 0.2)
		if !near(id.PositionToApp(dev), v.PositionToApp(dev), 1e-12) || !sameRotation(id.OrientationToApp(q), v.OrientationToApp(q), 1e-12) {
			t.Fatal("Then(identity) changed the view")
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = NewView(IdentityPermutation(), IdentityTransform()).Then(IdentityTransform()) }); n != 0 {
		t.Fatalf("Then allocates %v times", n)
	}
}
