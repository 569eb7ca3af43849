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
	heading := handSign(leftHanded) * anglesDeg.A0 * radPerDeg
	a1 := anglesDeg.A1 * radPerDeg
	a12 := a1 + anglesDeg.A2*radPerDeg
	s1, c1 := math.Sincos(a1)
	s12, c12 := math.Sincos(a12)
	r := UpperLinkM*c1 + ForearmM*c12
	sh, ch := math.Sincos(heading)
	return hw.Vec3{X: r * sh, Y: r * ch, Z: ShoulderHeightM + UpperLinkM*s1 + ForearmM*s12}
}

// InverseKinematics returns the elbow-up joint angles that put the end
// effector at positionM. When the point is out of reach (too far, or too
// close to the shoulder) it returns the angles of the nearest reachable
// point along the same ray and reachable = false.
func InverseKinematics(positionM hw.Vec3, leftHanded bool) (anglesDeg hw.Angles3, reachable bool) {
	r := math.Hypot(positionM.X, positionM.Y)
	heading := math.Atan2(positionM.X, positionM.Y)
	dz := positionM.Z - ShoulderHeightM
	d := math.Hypot(r, dz)
	reachable = true
	const slack = 1e-9
	dMin := math.Abs(UpperLinkM-ForearmM) + slack
	dMax := UpperLinkM + ForearmM - slack
	if d < dMin || d > dMax || math.IsNaN(d) {
		reachable = false
		d = math.Min(math.Max(d, dMin), dMax)
		if math.IsNaN(d) {
			d = dMin
		}
	}
	cosElbow := (d*d - UpperLinkM*UpperLinkM - ForearmM*ForearmM) / (2 * UpperLinkM * ForearmM)
	cosElbow = math.Min(math.Max(cosElbow, -1), 1)
	a2 := -math.Acos(cosElbow)
	s2, c2 := math.Sincos(a2)
	a1 := math.Atan2(dz, r) - math.Atan2(ForearmM*s2, UpperLinkM+ForearmM*c2)
	return hw.Angles3{
		A0: handSign(leftHanded) * heading * degPerRad,
		A1: a1 * degPerRad,
		A2: a2 * degPerRad,
	}, reachable
}

// jacobian returns J = ∂position/∂angles in m per radian (columns: A0, A1,
// A2) at anglesDeg.
func jacobian(anglesDeg hw.Angles3, leftHanded bool) mat3 {
	sign := handSign(leftHanded)
	heading := sign * anglesDeg.A0 * radPerDeg
	a1 := anglesDeg.A1 * radPerDeg
	a12 := a1 + anglesDeg.A2*radPerDeg
	s1, c1 := math.Sincos(a1)
	s12, c12 := math.Sincos(a12)
	sh, ch := math.Sincos(heading)
	r := UpperLinkM*c1 + ForearmM*c12
	up := UpperLinkM*s1 + ForearmM*s12
	// ∂r/∂a1 = -up, ∂z/∂a1 = r; ∂r/∂a2 = -L2 sin a12, ∂z/∂a2 = L2 cos a12.
	dr2 := -ForearmM * s12
	dz2 := ForearmM * c12
	return mat3{
		{sign * r * ch, -up * sh, dr2 * sh},
		{-sign * r * sh, -up * ch, dr2 * ch},
		{0, r, dz2},
	}
}
