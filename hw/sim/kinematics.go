package sim

import (
	"math"

	"github.com/hapticd/hapticd/hw"
)

// The simulated arm's kinematic model: a base that yaws about Z (A0), a
// shoulder (A1, elevation of the upper link above the horizontal) and an
// elbow (A2, bend of the forearm relative to the upper link, negative when
// the elbow sits above the line from shoulder to handle). A0 = 0 points the
// arm along +Y; for a right-handed arm a positive A0 swings it toward +X,
// and a left-handed arm mirrors that (positive A0 toward -X).
const (
	// UpperLinkM and ForearmM are the link lengths.
	UpperLinkM = 0.13
	ForearmM   = 0.16
	// ShoulderHeightM is the shoulder's height above the base origin.
	ShoulderHeightM = 0.05
)

const (
	degPerRad = 180 / math.Pi
	radPerDeg = math.Pi / 180
)

// handSign is +1 for a right-handed arm and -1 for a left-handed one: it
// mirrors the base angle convention.
func handSign(leftHanded bool) float64 {
	if leftHanded {
		return -1
	}
	return 1
}

// ForwardKinematics returns the end-effector position for joint angles.
func ForwardKinematics(anglesDeg hw.Angles3, leftHanded bool) hw.Vec3 {
	st := hw.State{AnglesDeg: anglesDeg}
	DeriveCursorState(&st, leftHanded)
	return st.PositionM
}

// DeriveCursorState completes a state that carries joint angles and speeds
// only (an arm's joint-state reply): the end-effector position by forward
// kinematics, its velocity by J·ω and the body turned by the base yaw, for
// the handedness given. It is DeriveArmState the other way round, on the
// same model, and reads only its arguments.
func DeriveCursorState(st *hw.State, leftHanded bool) {
	sign := handSign(leftHanded)
	heading := sign * st.AnglesDeg.A0 * radPerDeg
	a1 := st.AnglesDeg.A1 * radPerDeg
	a12 := a1 + st.AnglesDeg.A2*radPerDeg
	s1, c1 := math.Sincos(a1)
	s12, c12 := math.Sincos(a12)
	sh, ch := math.Sincos(heading)
	r := UpperLinkM*c1 + ForearmM*c12
	up := UpperLinkM*s1 + ForearmM*s12
	st.PositionM = hw.Vec3{X: r * sh, Y: r * ch, Z: ShoulderHeightM + up}
	// J·ω with the Jacobian's columns as written below (forceFromTorques).
	w0 := st.AngularVelocityDps.A0 * radPerDeg
	w1 := st.AngularVelocityDps.A1 * radPerDeg
	w2 := st.AngularVelocityDps.A2 * radPerDeg
	dr2, dz2 := -ForearmM*s12, ForearmM*c12
	vr := -up*w1 + dr2*w2 // along the reach
	vt := sign * r * w0   // across it
	st.VelocityMps = hw.Vec3{X: vr*sh + vt*ch, Y: vr*ch - vt*sh, Z: r*w1 + dz2*w2}
	ps := pose{sh: sh, ch: ch}
	st.BodyOrientation = ps.bodyOrientation()
}

// InverseKinematics returns the elbow-up joint angles that put the end
// effector at positionM. When the point is out of reach (too far, or too
// close to the shoulder) it returns the angles of the nearest reachable
// point along the same ray and reachable = false.
func InverseKinematics(positionM hw.Vec3, leftHanded bool) (anglesDeg hw.Angles3, reachable bool) {
	ps, ok := solvePose(positionM, leftHanded)
	return ps.anglesDeg, ok
}

// pose is a solved arm configuration: the joint angles and the sines and
// cosines the Jacobian needs, found algebraically so the tick spends three
// inverse trigonometric calls and no forward ones.
type pose struct {
	anglesDeg hw.Angles3
	sign      float64 // handSign
	sh, ch    float64 // heading (the base yaw seen from above, +Y = 0, +X positive)
	s1, c1    float64 // shoulder elevation
	s12, c12  float64 // forearm elevation (shoulder + elbow)
	r, up     float64 // horizontal reach and height of the handle above the shoulder
}

func solvePose(positionM hw.Vec3, leftHanded bool) (ps pose, reachable bool) {
	ps.sign = handSign(leftHanded)
	// Plain square roots: the values are metres, far from overflow, and
	// math.Hypot's scaling costs a tenth of the tick.
	r := math.Sqrt(positionM.X*positionM.X + positionM.Y*positionM.Y)
	ps.sh, ps.ch = 0, 1 // on the vertical axis any heading will do; keep 0
	if r > 0 {
		ps.sh, ps.ch = positionM.X/r, positionM.Y/r
	}
	dz := positionM.Z - ShoulderHeightM
	d := math.Sqrt(r*r + dz*dz)
	reachable = true
	const slack = 1e-9
	dMin := math.Abs(UpperLinkM-ForearmM) + slack
	dMax := UpperLinkM + ForearmM - slack
	if !(d >= dMin && d <= dMax) {
		reachable = false
		if math.IsNaN(d) || d == 0 {
			r, dz, d = dMin, 0, dMin
		}
		k := math.Min(math.Max(d, dMin), dMax) / d
		r, dz, d = r*k, dz*k, d*k
	}
	c2 := (d*d - UpperLinkM*UpperLinkM - ForearmM*ForearmM) / (2 * UpperLinkM * ForearmM)
	c2 = math.Min(math.Max(c2, -1), 1)
	s2 := -math.Sqrt(1 - c2*c2) // elbow up: the forearm bends down from the upper link
	// a1 = atan2(dz, r) - atan2(k2, k1): one atan2 of the rotated vector.
	k1 := UpperLinkM + ForearmM*c2
	k2 := ForearmM * s2
	y1, x1 := dz*k1-r*k2, r*k1+dz*k2
	n1 := math.Sqrt(x1*x1 + y1*y1)
	ps.s1, ps.c1 = y1/n1, x1/n1
	ps.s12 = ps.s1*c2 + ps.c1*s2
	ps.c12 = ps.c1*c2 - ps.s1*s2
	ps.r = UpperLinkM*ps.c1 + ForearmM*ps.c12
	ps.up = UpperLinkM*ps.s1 + ForearmM*ps.s12
	ps.anglesDeg = hw.Angles3{
		A0: ps.sign * math.Atan2(ps.sh, ps.ch) * degPerRad,
		A1: math.Atan2(y1, x1) * degPerRad,
		A2: -math.Acos(c2) * degPerRad,
	}
	return ps, reachable
}

// The Jacobian J = ∂position/∂angles (m per radian; columns A0, A1, A2) at
// a pose is, with dr2 = -L2·sin a12 and dz2 = L2·cos a12,
//
//	[ σ·r·ch   -up·sh   dr2·sh ]
//	[ -σ·r·sh  -up·ch   dr2·ch ]
//	[ 0         r       dz2    ]
//
// The base column is tangential and the other two lie in the arm's vertical
// plane, so J⁻¹ and J⁻ᵀ have closed forms: one 2×2 solve each.

// forceFromTorques returns the end-effector force F with Jᵀ·F = τ (τ in
// N·m). ok is false at a singular pose.
func (ps *pose) forceFromTorques(t [3]float64) (f hw.Vec3, ok bool) {
	if ps.r < 1e-9 {
		return f, false
	}
	tangential := ps.sign * t[0] / ps.r
	// [-up r; dr2 dz2]·[Fr Fz] = [τ1 τ2]
	dr2 := -ForearmM * ps.s12
	dz2 := ForearmM * ps.c12
	det := -ps.up*dz2 - ps.r*dr2
	if math.Abs(det) < 1e-12 {
		return f, false
	}
	radial := (t[1]*dz2 - ps.r*t[2]) / det
	vertical := (-ps.up*t[2] - dr2*t[1]) / det
	return hw.Vec3{
		X: radial*ps.sh + tangential*ps.ch,
		Y: radial*ps.ch - tangential*ps.sh,
		Z: vertical,
	}, true
}

// jointRatesRad returns the joint speeds (rad/s) that move the handle at v:
// J⁻¹·v, solved in closed form (the base decouples from the planar pair).
// ok is false at a singular pose.
func (ps *pose) jointRatesRad(v hw.Vec3) (w [3]float64, ok bool) {
	if ps.r < 1e-9 {
		return w, false
	}
	w[0] = ps.sign * (v.X*ps.ch - v.Y*ps.sh) / ps.r
	vr := v.X*ps.sh + v.Y*ps.ch // speed along the reach
	// [-up dr2; r dz2]·[w1 w2] = [vr vz]
	dr2 := -ForearmM * ps.s12
	dz2 := ForearmM * ps.c12
	det := -ps.up*dz2 - dr2*ps.r
	if math.Abs(det) < 1e-12 {
		return w, false
	}
	w[1] = (vr*dz2 - dr2*v.Z) / det
	w[2] = (-ps.up*v.Z - ps.r*vr) / det
	return w, true
}

// bodyOrientation is the identity turned about Z by the base yaw. Turning
// from +Y toward +X is a negative rotation about Z; the half-angle formulas
// avoid trigonometry.
func (ps *pose) bodyOrientation() hw.Quat {
	half := math.Sqrt(math.Max(0, (1+ps.ch)/2))
	s := math.Sqrt(math.Max(0, (1-ps.ch)/2))
	if ps.sh > 0 {
		s = -s
	}
	return hw.Quat{W: half, Z: s}
}
