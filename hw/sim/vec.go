package sim

import (
	"math"

	"github.com/hapticd/hapticd/hw"
)

// Small value helpers on hw.Vec3; they inline, so the step allocates nothing.

func add(a, b hw.Vec3) hw.Vec3           { return hw.Vec3{X: a.X + b.X, Y: a.Y + b.Y, Z: a.Z + b.Z} }
func sub(a, b hw.Vec3) hw.Vec3           { return hw.Vec3{X: a.X - b.X, Y: a.Y - b.Y, Z: a.Z - b.Z} }
func scale(a hw.Vec3, k float64) hw.Vec3 { return hw.Vec3{X: a.X * k, Y: a.Y * k, Z: a.Z * k} }
func dot(a, b hw.Vec3) float64           { return a.X*b.X + a.Y*b.Y + a.Z*b.Z }
func norm(a hw.Vec3) float64             { return math.Sqrt(dot(a, a)) }

func finite(a hw.Vec3) bool {
	return !math.IsNaN(a.X+a.Y+a.Z) && !math.IsInf(a.X+a.Y+a.Z, 0)
}

func finiteAngles(a hw.Angles3) bool {
	s := a.A0 + a.A1 + a.A2
	return !math.IsNaN(s) && !math.IsInf(s, 0)
}

// clampNorm scales a down to magnitude limit, keeping its direction.
func clampNorm(a hw.Vec3, limit float64) hw.Vec3 {
	n2 := dot(a, a)
	if n2 <= limit*limit {
		return a
	}
	return scale(a, limit/math.Sqrt(n2))
}

// mat3 is a row-major 3×3 matrix.
type mat3 [3][3]float64

func (m *mat3) det() float64 {
	return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
		m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
		m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
}

// solve returns x with m·x = b by Cramer's rule; ok is false when m is
// (nearly) singular, so callers can refuse rather than blow up.
func (m *mat3) solve(b [3]float64) (x [3]float64, ok bool) {
	d := m.det()
	if math.Abs(d) < 1e-12 || math.IsNaN(d) {
		return x, false
	}
	for col := 0; col < 3; col++ {
		t := *m
		for row := 0; row < 3; row++ {
			t[row][col] = b[row]
		}
		x[col] = t.det() / d
	}
	return x, true
}

func (m *mat3) transpose() mat3 {
	var t mat3
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			t[i][j] = m[j][i]
		}
	}
	return t
}

// quatMul returns the Hamilton product a·b.
func quatMul(a, b hw.Quat) hw.Quat {
	return hw.Quat{
		W: a.W*b.W - a.X*b.X - a.Y*b.Y - a.Z*b.Z,
		X: a.W*b.X + a.X*b.W + a.Y*b.Z - a.Z*b.Y,
		Y: a.W*b.Y - a.X*b.Z + a.Y*b.W + a.Z*b.X,
		Z: a.W*b.Z + a.X*b.Y - a.Y*b.X + a.Z*b.W,
	}
}

// axisQuat is a rotation of angleRad about the unit axis (x, y, z).
func axisQuat(x, y, z, angleRad float64) hw.Quat {
	s, c := math.Sincos(angleRad / 2)
	return hw.Quat{W: c, X: x * s, Y: y * s, Z: z * s}
}
