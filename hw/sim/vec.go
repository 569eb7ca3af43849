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
