package space

// View carries vectors and orientations between one device's frame and one
// session's application space. Build it with NewView once per configuration
// change; its methods run every tick and never allocate. A View is a plain
// value: copy it freely, and read it from any number of goroutines. The zero
// View is not the identity (it maps everything to zero); use NewView.
type View struct {
	// Position and velocity: app = pos + fwd·dev, dev = inv·(app - pos).
	fwd, inv mat3
	pos      Vec3
	// Forces and damping: rot = R_mount·sign(S)·P, orthogonal, so its
	// transpose is its inverse.
	rot mat3
	// Orientation: app = outer·dev·conv*, dev = outer*·app·conv.
	outer, conv Quat
}

// NewView compiles the pipeline device → basis → mount → application:
//
//	app = mount.Position + R·(mount.Scale ⊙ (P·dev))
//
// where P is the basis and R the mount rotation, which NewView normalises
// (a zero rotation names none and is taken as the identity). Scale
// components must be non-zero: callers validate mounts on the way in
// (PROTOCOL 4), and a zero component would make the inverse maps divide by
// zero.
func NewView(basis Permutation, mount Transform) View {
	mount.Rotation = mount.Rotation.Normalize()
	p := basis.matrix()
	r := quatToMat(mount.Rotation)
	s := mount.Scale
	sign := Vec3{X: signOf(s.X), Y: signOf(s.Y), Z: signOf(s.Z)}
	inverseScale := Vec3{X: 1 / s.X, Y: 1 / s.Y, Z: 1 / s.Z}

	v := View{pos: mount.Position}
	v.fwd = mulMat(r, mulMat(diag(s), p))
	v.inv = mulMat(transpose(p), mulMat(diag(inverseScale), transpose(r)))

	// The convention part C = sign(S)·P may mirror (det -1). Conjugating by
	// C equals conjugating by the proper rotation det(C)·C, which a
	// quaternion can hold.
	c := mulMat(diag(sign), p)
	v.rot = mulMat(r, c)
	if det(c) < 0 {
		for i := range 3 {
			for j := range 3 {
				c[i][j] = -c[i][j]
			}
		}
	}
	v.conv = matToQuat(c)
	v.outer = mount.Rotation.Mul(v.conv)
	return v
}

func signOf(x float64) float64 {
	if x < 0 {
		return -1
	}
	return 1
}

// PositionToApp maps a device-frame position (m) to application space.
func (v *View) PositionToApp(dev Vec3) Vec3 {
	a := mulVec(&v.fwd, dev)
	return Vec3{X: a.X + v.pos.X, Y: a.Y + v.pos.Y, Z: a.Z + v.pos.Z}
}

// PositionToDevice maps an application-space position to the device frame
// (m).
func (v *View) PositionToDevice(app Vec3) Vec3 {
	d := Vec3{X: app.X - v.pos.X, Y: app.Y - v.pos.Y, Z: app.Z - v.pos.Z}
	return mulVec(&v.inv, d)
}

// VelocityToApp maps a device-frame velocity (m/s) to application space:
// rotated and scaled like a position, never translated.
func (v *View) VelocityToApp(dev Vec3) Vec3 { return mulVec(&v.fwd, dev) }

// VelocityToDevice maps an application-space velocity to the device frame
// (m/s).
func (v *View) VelocityToDevice(app Vec3) Vec3 { return mulVec(&v.inv, app) }

// ForceToApp maps a device-frame force (N) to application space.
//
// Forces are rotated (basis and mount rotation, and the sign of a negative
// scale component) but never scaled: a newton stays a newton whatever the
// workspace scale. A 1000× scale maps a millimetre of hand motion to a metre
// of application motion; scaling forces with it would turn a 1 N contact
// into a 1000 N command. The sign is kept so that a mirrored axis still
// pushes the way it moves (a spring stays a spring).
func (v *View) ForceToApp(dev Vec3) Vec3 { return mulVec(&v.rot, dev) }

// ForceToDevice maps an application-space force (N) to the device frame;
// see ForceToApp for why it is not scaled.
func (v *View) ForceToDevice(app Vec3) Vec3 {
	r := &v.rot
	return Vec3{
		X: r[0][0]*app.X + r[1][0]*app.Y + r[2][0]*app.Z,
		Y: r[0][1]*app.X + r[1][1]*app.Y + r[2][1]*app.Z,
		Z: r[0][2]*app.X + r[1][2]*app.Y + r[2][2]*app.Z,
	}
}

// OrientationToApp maps a device-frame orientation (body → device frame)
// to application space. The basis relabels the axes of both the body and
// the world (so it may mirror, and the result is still a rotation); the
// mount rotation turns the world only, as a device placed rotated does:
//
//	app = R_mount · C·q·Cᵀ,  C = sign(S)·P
func (v *View) OrientationToApp(dev Quat) Quat {
	return v.outer.Mul(dev).Mul(v.conv.Conj())
}

// OrientationToDevice undoes OrientationToApp.
func (v *View) OrientationToDevice(app Quat) Quat {
	return v.outer.Conj().Mul(app).Mul(v.conv)
}

// DampingMatrixDevice returns the device-frame damping matrix D (N·s/m) such
// that F_dev = -D·v_dev, for damping given in application axes (vector)
// plus a uniform part (scalar):
//
//	D = Rᵀ·diag(vector)·R + scalar·I,  R = the app ← device rotation
//
// Like forces, damping ignores the workspace scale: it acts on the
// device's physical velocity, so the hand feels the same N·s/m at any scale.
func (v *View) DampingMatrixDevice(scalar float64, vector Vec3) [3][3]float64 {
	r := &v.rot
	d := [3]float64{vector.X, vector.Y, vector.Z}
	var m [3][3]float64
	for i := range 3 {
		for j := range 3 {
			m[i][j] = r[0][i]*d[0]*r[0][j] + r[1][i]*d[1]*r[1][j] + r[2][i]*d[2]*r[2][j]
		}
		m[i][i] += scalar
	}
	return m
}
