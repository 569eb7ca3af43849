package protocol

import (
	"math"

	"github.com/hapticd/hapticd/protocol/space"
)

// Mat3 is a 3×3 matrix, row-major: m[i][j] is row i, column j.
type Mat3 [3][3]float64

// MulVec is m·v.
func (m *Mat3) MulVec(v Vec3) Vec3 {
	return Vec3{
		X: m[0][0]*v.X + m[0][1]*v.Y + m[0][2]*v.Z,
		Y: m[1][0]*v.X + m[1][1]*v.Y + m[1][2]*v.Z,
		Z: m[2][0]*v.X + m[2][1]*v.Y + m[2][2]*v.Z,
	}
}

func (m *Mat3) col(j int) Vec3 { return Vec3{X: m[0][j], Y: m[1][j], Z: m[2][j]} }

func (m *Mat3) setCol(j int, v Vec3) { m[0][j], m[1][j], m[2][j] = v.X, v.Y, v.Z }

func (m *Mat3) transpose() Mat3 {
	var t Mat3
	for i := range 3 {
		for j := range 3 {
			t[i][j] = m[j][i]
		}
	}
	return t
}

func mulMat3(a, b *Mat3) Mat3 {
	var out Mat3
	for i := range 3 {
		for j := range 3 {
			out[i][j] = a[i][0]*b[0][j] + a[i][1]*b[1][j] + a[i][2]*b[2][j]
		}
	}
	return out
}

func (m *Mat3) det() float64 {
	return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
		m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
		m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
}

// IdentityMat3 is the identity.
func IdentityMat3() Mat3 { return Mat3{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}} }

func quatMat3(q Quat) Mat3 {
	q = q.Normalize()
	w, x, y, z := q.W, q.X, q.Y, q.Z
	return Mat3{
		{1 - 2*(y*y+z*z), 2 * (x*y - w*z), 2 * (x*z + w*y)},
		{2 * (x*y + w*z), 1 - 2*(x*x+z*z), 2 * (y*z - w*x)},
		{2 * (x*z - w*y), 2 * (y*z + w*x), 1 - 2*(x*x+y*y)},
	}
}

// deviceMap is what converting a declaration from a session's application
// space to the device frame needs, read once from a space.View:
//
//	app = origin + F·dev        (positions; velocities without origin)
//	F_app = R·F_dev             (forces: rotated, never scaled)
//
// and appPerDev, the cube root of |det F|: how many application metres one
// metre of handle motion is. With a uniform workspace scale (the common
// case) lengths convert exactly by it; with a non-uniform one a sphere
// becomes an ellipsoid and lengths convert by this mean scale.
type deviceMap struct {
	view      *space.View
	f         Mat3 // dev → app, linear part
	origin    Vec3
	appPerDev float64
}

func newDeviceMap(v *space.View) deviceMap {
	m := deviceMap{view: v, origin: v.PositionToApp(Vec3{})}
	for j, e := range [3]Vec3{{X: 1}, {Y: 1}, {Z: 1}} {
		m.f.setCol(j, v.VelocityToApp(e))
	}
	m.appPerDev = math.Cbrt(math.Abs(m.f.det()))
	if m.appPerDev == 0 || math.IsNaN(m.appPerDev) {
		m.appPerDev = 1
	}
	return m
}

func (m *deviceMap) point(app Vec3) Vec3 { return m.view.PositionToDevice(app) }

// length converts an application-space length to metres of handle motion.
func (m *deviceMap) length(app float64) float64 { return app / m.appPerDev }

// force converts an application-space force (N) to the device frame.
func (m *deviceMap) force(app Vec3) Vec3 { return m.view.ForceToDevice(app) }

// direction converts a direction (a line's, not a normal) and normalises it.
func (m *deviceMap) direction(app Vec3) Vec3 { return unit3(m.view.VelocityToDevice(app)) }

// normal converts a plane normal: the plane n·(x−p) = 0 in application
// space is (Fᵀn)·(x_dev−p_dev) = 0 in the device frame, with its positive
// side kept (also through a mirroring basis).
func (m *deviceMap) normal(app Vec3) Vec3 {
	ft := m.f.transpose()
	return unit3(ft.MulVec(app))
}

// rot is R, the app ← device force rotation, as a matrix.
func (m *deviceMap) rot() Mat3 {
	var r Mat3
	for j, e := range [3]Vec3{{X: 1}, {Y: 1}, {Z: 1}} {
		r.setCol(j, m.view.ForceToApp(e))
	}
	return r
}

// unitStable normalises v, keeping a vector that is already of unit length
// within rounding as it is, so that a declaration encodes and decodes to
// the same bits (recordings, the gateway). A zero or non-finite norm gives
// the zero vector.
func unitStable(v Vec3) Vec3 {
	if n := norm3(v); math.Abs(n-1) <= 1e-12 {
		return v
	}
	return unit3(v)
}

// quatStable normalises q like unitStable.
func quatStable(q Quat) Quat {
	if math.Abs(q.Norm()-1) <= 1e-12 {
		return q
	}
	return q.Normalize()
}

// unit3 scales v to unit length, whatever its magnitude (as
// space.Quat.Normalize: a vector whose squared length would overflow or
// underflow is first divided by its largest component). A zero or
// non-finite vector gives the zero vector.
func unit3(v Vec3) Vec3 {
	n := norm3(v)
	if n < 1e-150 || n > 1e150 || math.IsNaN(n) {
		m := max(math.Abs(v.X), math.Abs(v.Y), math.Abs(v.Z))
		if m == 0 || math.IsNaN(m) || math.IsInf(m, 0) {
			return Vec3{}
		}
		// Divided, not multiplied by 1/m: that is +Inf for a subnormal m.
		v = Vec3{X: v.X / m, Y: v.Y / m, Z: v.Z / m}
		n = norm3(v)
	}
	return scale3(v, 1/n)
}

func sub3(a, b Vec3) Vec3 { return Vec3{X: a.X - b.X, Y: a.Y - b.Y, Z: a.Z - b.Z} }
