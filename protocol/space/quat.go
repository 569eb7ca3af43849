package space

import "math"

// Mul returns the Hamilton product q·r: the rotation r followed by q.
// hw/sim keeps a copy for hw.Quat (quatMul): hw may not import protocol,
// nor protocol hw (deps_test.go).
func (q Quat) Mul(r Quat) Quat {
	return Quat{
		W: q.W*r.W - q.X*r.X - q.Y*r.Y - q.Z*r.Z,
		X: q.W*r.X + q.X*r.W + q.Y*r.Z - q.Z*r.Y,
		Y: q.W*r.Y - q.X*r.Z + q.Y*r.W + q.Z*r.X,
		Z: q.W*r.Z + q.X*r.Y - q.Y*r.X + q.Z*r.W,
	}
}

// Conj returns the conjugate of q, which for a unit quaternion is its
// inverse rotation.
func (q Quat) Conj() Quat { return Quat{W: q.W, X: -q.X, Y: -q.Y, Z: -q.Z} }

// Norm returns the Euclidean length of q.
func (q Quat) Norm() float64 {
	return math.Sqrt(q.W*q.W + q.X*q.X + q.Y*q.Y + q.Z*q.Z)
}

// Normalize returns q scaled to unit length. The zero quaternion names no
// rotation; it (and any non-finite input) comes back as the identity so that
// a caller never multiplies NaNs into a force. Any other finite quaternion
// is scaled, whatever its magnitude: one whose squared length would
// overflow ({"w": 1e200}) or underflow ({"w": 1e-200}) is first divided by
// its largest component, so it keeps its direction instead of turning into
// the identity.
func (q Quat) Normalize() Quat {
	n := q.Norm()
	if n < 1e-150 || n > 1e150 || math.IsNaN(n) {
		m := max(math.Abs(q.W), math.Abs(q.X), math.Abs(q.Y), math.Abs(q.Z))
		if m == 0 || math.IsNaN(m) || math.IsInf(m, 0) {
			return IdentityQuat()
		}
		q = Quat{W: q.W / m, X: q.X / m, Y: q.Y / m, Z: q.Z / m}
		n = q.Norm()
	}
	return Quat{W: q.W / n, X: q.X / n, Y: q.Y / n, Z: q.Z / n}
}

// mat3 is a row-major 3×3 matrix: m[row][col].
type mat3 = [3][3]float64

// quatToMat returns the rotation matrix of the unit quaternion q.
func quatToMat(q Quat) mat3 {
	w, x, y, z := q.W, q.X, q.Y, q.Z
	return mat3{
		{1 - 2*(y*y+z*z), 2 * (x*y - w*z), 2 * (x*z + w*y)},
		{2 * (x*y + w*z), 1 - 2*(x*x+z*z), 2 * (y*z - w*x)},
		{2 * (x*z - w*y), 2 * (y*z + w*x), 1 - 2*(x*x+y*y)},
	}
}

// matToQuat returns a unit quaternion for the proper rotation matrix m
// (Shepperd's method: divide by the largest of the four candidates, so it
// stays exact for the 180° rotations that signed permutations are full of).
func matToQuat(m mat3) Quat {
	var q Quat
	switch tr := m[0][0] + m[1][1] + m[2][2]; {
	case tr > 0:
		s := math.Sqrt(tr+1) * 2
		q = Quat{W: s / 4, X: (m[2][1] - m[1][2]) / s, Y: (m[0][2] - m[2][0]) / s, Z: (m[1][0] - m[0][1]) / s}
	case m[0][0] > m[1][1] && m[0][0] > m[2][2]:
		s := math.Sqrt(1+m[0][0]-m[1][1]-m[2][2]) * 2
		q = Quat{W: (m[2][1] - m[1][2]) / s, X: s / 4, Y: (m[0][1] + m[1][0]) / s, Z: (m[0][2] + m[2][0]) / s}
	case m[1][1] > m[2][2]:
		s := math.Sqrt(1+m[1][1]-m[0][0]-m[2][2]) * 2
		q = Quat{W: (m[0][2] - m[2][0]) / s, X: (m[0][1] + m[1][0]) / s, Y: s / 4, Z: (m[1][2] + m[2][1]) / s}
	default:
		s := math.Sqrt(1+m[2][2]-m[0][0]-m[1][1]) * 2
		q = Quat{W: (m[1][0] - m[0][1]) / s, X: (m[0][2] + m[2][0]) / s, Y: (m[1][2] + m[2][1]) / s, Z: s / 4}
	}
	return q.Normalize()
}

func mulMat(a, b mat3) mat3 {
	var r mat3
	for i := range 3 {
		for j := range 3 {
			r[i][j] = a[i][0]*b[0][j] + a[i][1]*b[1][j] + a[i][2]*b[2][j]
		}
	}
	return r
}

func transpose(a mat3) mat3 {
	var r mat3
	for i := range 3 {
		for j := range 3 {
			r[i][j] = a[j][i]
		}
	}
	return r
}

func diag(d Vec3) mat3 {
	return mat3{{d.X, 0, 0}, {0, d.Y, 0}, {0, 0, d.Z}}
}

func mulVec(m *mat3, v Vec3) Vec3 {
	return Vec3{
		X: m[0][0]*v.X + m[0][1]*v.Y + m[0][2]*v.Z,
		Y: m[1][0]*v.X + m[1][1]*v.Y + m[1][2]*v.Z,
		Z: m[2][0]*v.X + m[2][1]*v.Y + m[2][2]*v.Z,
	}
}

func det(m mat3) float64 {
	return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
		m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
		m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
}
