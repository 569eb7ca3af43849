package sim

import (
	"math"

	"github.com/hapticd/hapticd/hw"
)

// Quaternion helpers for the simulated grip; vector helpers are hw.Vec3's
// methods. They inline, so the step allocates nothing.

// quatMul returns the Hamilton product a·b.
//
// It is the second copy of protocol/space's Quat.Mul, on purpose: hw (and
// its sub-packages) and protocol both sit at the bottom of the house and
// may import only the standard library and themselves (deps_test.go), so
// neither can hold the other's copy, and a third package both import would
// need a new arrow in both rules for four lines of arithmetic.
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
