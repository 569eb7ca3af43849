package space

import (
	"math/rand"
	"testing"
)

// The benchmarks below report per-call cost of the View methods. The first
// is the baseline from the same run (adding two vectors): read the others
// as multiples of it, since absolute nanoseconds vary across shared
// machines.

var (
	benchV Vec3
	benchQ Quat
	benchD [3][3]float64
)

func benchView(b *testing.B) View {
	return NewView(mustParse(b, "-XZY"), randMount(rand.New(rand.NewSource(5))))
}

func BenchmarkBaselineVecAdd(b *testing.B) {
	p, q := Vec3{X: 0.1, Y: 0.2, Z: 0.3}, Vec3{X: 1, Y: 2, Z: 3}
	for b.Loop() {
		p = Vec3{X: p.X + q.X, Y: p.Y + q.Y, Z: p.Z + q.Z}
	}
	benchV = p
}

func BenchmarkPositionToApp(b *testing.B) {
	v, p := benchView(b), Vec3{X: 0.1, Y: 0.2, Z: 0.3}
	for b.Loop() {
		p = v.PositionToApp(p)
	}
	benchV = p
}

func BenchmarkPositionToDevice(b *testing.B) {
	v, p := benchView(b), Vec3{X: 0.1, Y: 0.2, Z: 0.3}
	for b.Loop() {
		p = v.PositionToDevice(p)
	}
	benchV = p
}

func BenchmarkVelocityToApp(b *testing.B) {
	v, p := benchView(b), Vec3{X: 0.1, Y: 0.2, Z: 0.3}
	for b.Loop() {
		p = v.VelocityToApp(p)
	}
	benchV = p
}

func BenchmarkForceToDevice(b *testing.B) {
	v, p := benchView(b), Vec3{X: 0.1, Y: 0.2, Z: 0.3}
	for b.Loop() {
		p = v.ForceToDevice(p)
	}
	benchV = p
}

func BenchmarkForceToApp(b *testing.B) {
	v, p := benchView(b), Vec3{X: 0.1, Y: 0.2, Z: 0.3}
	for b.Loop() {
		p = v.ForceToApp(p)
	}
	benchV = p
}

func BenchmarkOrientationToApp(b *testing.B) {
	v, q := benchView(b), quatFromAxisAngle(Vec3{X: 1, Y: 1}, 0.3)
	for b.Loop() {
		q = v.OrientationToApp(q)
	}
	benchQ = q
}

func BenchmarkOrientationToDevice(b *testing.B) {
	v, q := benchView(b), quatFromAxisAngle(Vec3{X: 1, Y: 1}, 0.3)
	for b.Loop() {
		q = v.OrientationToDevice(q)
	}
	benchQ = q
}

func BenchmarkDampingMatrixDevice(b *testing.B) {
	v := benchView(b)
	for b.Loop() {
		benchD = v.DampingMatrixDevice(1, Vec3{X: 2, Y: 3, Z: 4})
	}
}

// NewView runs once per configuration change, not per tick; it is here so
// that a client re-sending configure at 1 kHz has a known price.
func BenchmarkNewView(b *testing.B) {
	m := randMount(rand.New(rand.NewSource(6)))
	p := mustParse(b, "-XZY")
	var v View
	for b.Loop() {
		v = NewView(p, m)
	}
	benchV = v.pos
}
