package space

// Vec3 is a wire 3-vector {x,y,z}: metres, m/s, newtons or scale factors,
// as the field that holds it says. It converts to and from hw.Vec3 with a
// plain conversion (same fields), so no package needs to import the other.
type Vec3 struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
	Z float64 `json:"z"`
}

// Quat is a wire quaternion {w,x,y,z}; identity is {W: 1}.
type Quat struct {
	W float64 `json:"w"`
	X float64 `json:"x"`
	Y float64 `json:"y"`
	Z float64 `json:"z"`
}

// Angles3 is a wire {a0,a1,a2}: degrees, deg/s or N·mm.
type Angles3 struct {
	A0 float64 `json:"a0"`
	A1 float64 `json:"a1"`
	A2 float64 `json:"a2"`
}

// Transform is a mount transform: app = Position + Rotation·(Scale ⊙ v).
type Transform struct {
	Position Vec3 `json:"position"`
	Rotation Quat `json:"rotation"`
	Scale    Vec3 `json:"scale"`
}

// IdentityQuat is the rotation that changes nothing.
func IdentityQuat() Quat { return Quat{W: 1} }

// IdentityTransform is zero position, identity rotation and unit scale.
func IdentityTransform() Transform {
	return Transform{Rotation: IdentityQuat(), Scale: Vec3{1, 1, 1}}
}
