package effect

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hapticd/hapticd/hw"
)

// Kind says what an effect renders.
type Kind uint8

const (
	// SpringPoint pulls toward PointM: F = K·(PointM − x) − B·v.
	SpringPoint Kind = iota + 1
	// SpringLine pulls toward the line through PointM along AxisUnit, at
	// right angles to it: F = −K·d − B·v⊥ (d the offset from the line).
	SpringLine
	// SpringPlane pulls toward the plane through PointM with normal
	// AxisUnit, along the normal: F = −K·((x − PointM)·n)·n − B·(v·n)·n.
	SpringPlane
	// Damper resists velocity: F = −DampingNsPerM·v − diag(DampingPerAxisNsPerM)·v.
	Damper
	// Friction is Coulomb friction with a stick zone: F = −CoulombN·v/max(|v|, StickMps).
	Friction
	// Wall is the plane through PointM whose normal AxisUnit points into
	// free space, rendered with a proxy (god object) that stays on the
	// surface while the cursor is behind it.
	Wall
	// LimitSphere keeps the cursor inside (KeepInside) or outside the
	// sphere of RadiusM around PointM.
	LimitSphere
	// LimitBox keeps the cursor inside (KeepInside) or outside the
	// axis-aligned box of half-extents HalfExtentsM around PointM.
	LimitBox
	// Field is the linear force field F = ForceN + JacobianNPerM·(x − PointM),
	// within RadiusM of PointM (falling to zero over its outer tenth) and
	// until ExpiresNs: the local model an engine refreshes every frame.
	Field
	// Vibration is AmplitudeN·sin(2π·FrequencyHz·t)·AxisUnit until ExpiresNs.
	Vibration
	// Shape is a solid SDF primitive (Primitive) centred on PointM, a wall
	// the cursor stays outside of (inside with KeepInside), rendered like
	// Wall with a proxy on its surface.
	Shape
	// SDF is the vendor's SDF effect (sdf.go): a force along the gradient
	// of a Primitive's distance, whose size follows Curve over RangeM.
	SDF
)

var kindNames = [...]string{"", "spring_point", "spring_line", "spring_plane", "damper", "friction",
	"wall", "limit_sphere", "limit_box", "field", "vibration", "shape", "sdf"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && k != 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Primitive is an SDF shape of MODULES.md §2.1 (the vendor's catalogue).
type Primitive uint8

const (
	// PrimSphere: RadiusM.
	PrimSphere Primitive = iota + 1
	// PrimEllipsoid: semi-axes HalfExtentsM (an approximate distance).
	PrimEllipsoid
	// PrimBox: half-extents HalfExtentsM, axis-aligned.
	PrimBox
	// PrimRoundedBox: HalfExtentsM rounded by RadiusM (total extent b+r).
	PrimRoundedBox
	// PrimPlane: normal AxisUnit through PointM (free side along the normal).
	PrimPlane
	// PrimCapsule: segment PointM→EndM, RadiusM.
	PrimCapsule
	// PrimCappedCylinder: axis PointM→EndM, RadiusM, flat caps.
	PrimCappedCylinder
	// PrimCapsuleVertical: along Y, half-height HeightM, RadiusM, centred on PointM.
	PrimCapsuleVertical
	// PrimCappedCylinderVertical: along Y, half-height HeightM, RadiusM.
	PrimCappedCylinderVertical
	// PrimTorus: in the XZ plane, major RadiusM, tube MinorRadiusM.
	PrimTorus
	// PrimBoxFrame: the edges of a box of half-extents HalfExtentsM, of
	// thickness MinorRadiusM.
	PrimBoxFrame
	// PrimLink: a chain link, two half-tori of major RadiusM and tube
	// MinorRadiusM in the XY plane, joined by straight runs HeightM long
	// either side of the centre along Y.
	PrimLink
)

var primNames = [...]string{"", "sphere", "ellipsoid", "box", "rounded_box", "plane", "capsule",
	"capped_cylinder", "capsule_vertical", "capped_cylinder_vertical", "torus", "box_frame", "link"}

func (p Primitive) String() string {
	if int(p) < len(primNames) && p != 0 {
		return primNames[p]
	}
	return fmt.Sprintf("primitive(%d)", uint8(p))
}

// ParsePrimitive maps the vendor's primitive name to a Primitive.
func ParsePrimitive(name string) (Primitive, bool) {
	for i, n := range primNames {
		if i > 0 && n == name {
			return Primitive(i), true
		}
	}
	return 0, false
}

// Source says whose energy an effect's force counts as (see the passivity
// observer): a session's declared effect, or the navigation module's.
type Source uint8

const (
	SourceEffect Source = iota
	SourceNavigation
)

// Params are an effect's numbers, in SI units named in each field (the
// device frame, metres, newtons, seconds). A kind reads the fields its doc
// names and ignores the rest. Every field moves smoothly to a new value
// when an effect is updated (see Renderer), so it is one value type that
// the loop blends field by field.
type Params struct {
	// The fields every spring, damper and wall reads come first, on one
	// cache line.
	StiffnessNPerM float64
	DampingNsPerM  float64
	// PointM is the anchor, a point on the line or plane, the centre of a
	// limit or shape, the field's x0, or a capsule's first endpoint.
	PointM hw.Vec3
	// AxisUnit is a direction: the line's, the plane's or wall's normal
	// (into free space), the vibration's. It is normalised on NewSet.
	AxisUnit hw.Vec3
	// DampingPerAxisNsPerM is the per-axis part of a Damper (X, Y, Z).
	DampingPerAxisNsPerM hw.Vec3
	// EndM is a capsule's or capped cylinder's second endpoint.
	EndM         hw.Vec3
	HalfExtentsM hw.Vec3
	RadiusM      float64
	MinorRadiusM float64
	HeightM      float64
	CoulombN     float64
	// StickMps is the speed under which friction turns viscous (default
	// DefaultStickMps), so it never chatters around zero speed.
	StickMps      float64
	ForceN        hw.Vec3
	JacobianNPerM [3][3]float64
	FrequencyHz   float64
	AmplitudeN    float64
	// An SDF effect's frame and force (see SDF), last so that the fields
	// the other kinds read stay on the lines they were on. The shape's
	// sizes above are local: x_local = ToLocal·x + LocalOffsetM, and a
	// local length times DevMPerLocalM is metres of handle motion.
	ToLocal       [3][3]float64
	LocalOffsetM  hw.Vec3
	DevMPerLocalM float64
	// RangeM (device metres) is the band over which the force falls from
	// ForceScaleN to zero.
	RangeM      float64
	ForceScaleN float64
}

// Spec is one effect as a session declares it.
type Spec struct {
	// ID names the effect, unique within its Set; an update keeps the ID.
	ID   string
	Kind Kind
	// Primitive is the shape of a Shape effect.
	Primitive Primitive
	// KeepInside makes a limit or shape a container instead of a solid.
	KeepInside bool
	// Curve is an SDF effect's force against distance; a change of curve
	// is a new effect (the old one fades out, the new one in), since a
	// curve cannot glide from one to the other.
	Curve  SDFCurve
	Source Source
	Params Params
	// ExpiresNs (loop Clock time; 0: never) ends the effect: its force
	// fades out over FadeNs from then. A time to live, a field's deadline
	// and a vibration's duration all end this way.
	ExpiresNs int64
	// FadeNs is how long the effect takes to fade in when it appears and
	// out when it expires or is removed (0: DefaultFadeNs).
	FadeNs int64
}

// Limits and defaults of the effects.
const (
	// MaxEffects is how many effects one Set holds.
	MaxEffects = 16
	// MaxIDLen bounds an effect's ID.
	MaxIDLen = 64
	// DefaultFadeNs: an effect fades in and out over 50 ms.
	DefaultFadeNs = 50 * int64(time.Millisecond)
	// MaxFadeNs bounds FadeNs.
	MaxFadeNs = 10 * int64(time.Second)
	// SmoothNs is the time constant of each of the two first-order stages
	// that carry a changed parameter to its new value: a step reaches 95 %
	// in about 24 ms, starting with zero slope, so an update never steps
	// a force.
	SmoothNs = 5 * int64(time.Millisecond)
	// DefaultStickMps is Friction's stick speed when StickMps is 0.
	DefaultStickMps = 0.005
	// MaxStiffnessNPerM, MaxDampingNsPerM, MaxForceN, MaxLengthM and
	// MaxFrequencyHz bound what NewSet accepts: far above what a desk arm
	// renders, low enough that no value overflows the tick's arithmetic.
	// The loop's clamp and the passivity layer still bound the output.
	MaxStiffnessNPerM = 1e5
	MaxDampingNsPerM  = 1e3
	MaxForceN         = 1e3
	MaxLengthM        = 10.0
	MaxFrequencyHz    = 1000.0
)

// Set is the immutable list of effects one session declared for one arm.
// Publish a new Set to change anything; never modify one after NewSet
// (Declaration aside, before the Set is first published).
type Set struct {
	// Session is the session the effects belong to: the loop renders them
	// only under that session's valid lease.
	Session uint64
	// Declaration is the publisher's own record of what it declared (in
	// its session's terms), kept with the Set so that whoever reads the
	// Set in force reads the declaration that goes with it, with no second
	// publish to race. The loop never reads it.
	Declaration any
	specs       []Spec
}

// Len returns the number of effects.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.specs)
}

// Spec returns the i-th effect (a copy).
func (s *Set) Spec(i int) Spec { return s.specs[i] }

// IndexOf is the index of the effect with id, or -1.
func (s *Set) IndexOf(id string) int {
	for i := range s.Len() {
		if s.specs[i].ID == id {
			return i
		}
	}
	return -1
}

// Find returns the effect with id, if the set holds it.
func (s *Set) Find(id string) (Spec, bool) {
	for i := range s.Len() {
		if s.specs[i].ID == id {
			return s.specs[i], true
		}
	}
	return Spec{}, false
}

// ErrInvalid wraps every error NewSet returns.
var ErrInvalid = errors.New("invalid effect")

// NewSet validates specs and returns them as a Set for session (which must
// not be 0). It copies specs and normalises directions; it refuses the
// whole list, saying which effect and field is wrong, if one is bad.
func NewSet(session uint64, specs []Spec) (*Set, error) {
	if session == 0 {
		return nil, fmt.Errorf("%w: session 0 owns nothing", ErrInvalid)
	}
	if len(specs) > MaxEffects {
		return nil, fmt.Errorf("%w: %d effects, at most %d per arm", ErrInvalid, len(specs), MaxEffects)
	}
	s := &Set{Session: session, specs: make([]Spec, len(specs))}
	copy(s.specs, specs)
	for i := range s.specs {
		sp := &s.specs[i]
		if err := sp.validate(); err != nil {
			return nil, fmt.Errorf("%w %q (%s): %w", ErrInvalid, sp.ID, sp.Kind, err)
		}
		for j := range i {
			if s.specs[j].ID == sp.ID {
				return nil, fmt.Errorf("%w: id %q used twice", ErrInvalid, sp.ID)
			}
		}
	}
	return s, nil
}

func (sp *Spec) validate() error {
	p := &sp.Params
	if sp.ID == "" || len(sp.ID) > MaxIDLen {
		return fmt.Errorf("id must be 1 to %d bytes", MaxIDLen)
	}
	if sp.FadeNs < 0 || sp.FadeNs > MaxFadeNs {
		return fmt.Errorf("fade %d ns out of 0..%d", sp.FadeNs, MaxFadeNs)
	}
	if sp.ExpiresNs < 0 {
		return errors.New("expiry before the clock's epoch")
	}
	if err := checkScalars(p); err != nil {
		return err
	}
	needAxis := false
	switch sp.Kind {
	// Friction's force may be 0 (checkScalars bounds it): it renders none,
	// as a damper of 0 does, and an update that fades it to 0 glides there.
	case SpringPoint, Damper, Field, LimitSphere, LimitBox, Friction:
	case SpringLine, SpringPlane, Wall, Vibration:
		needAxis = true
	case Shape:
		if err := sp.validateShape(); err != nil {
			return err
		}
		needAxis = sp.Primitive == PrimPlane
	case SDF:
		if err := sp.validateSDF(); err != nil {
			return err
		}
		needAxis = sp.Primitive == PrimPlane
	default:
		return fmt.Errorf("unknown kind %d", sp.Kind)
	}
	switch sp.Kind {
	case LimitSphere:
		if p.RadiusM <= 0 {
			return errors.New("radius_m must be > 0")
		}
	case LimitBox:
		if !(p.HalfExtentsM.X > 0 && p.HalfExtentsM.Y > 0 && p.HalfExtentsM.Z > 0) {
			return errors.New("half_extents_m must be > 0 on every axis")
		}
	case Field:
		if p.RadiusM <= 0 {
			return errors.New("radius_m (where the field holds) must be > 0")
		}
	case Vibration:
		if p.FrequencyHz <= 0 {
			return errors.New("frequency_hz must be > 0")
		}
	}
	if needAxis {
		n := p.AxisUnit.Norm()
		if !(n > 1e-9) {
			return errors.New("axis (direction or normal) must not be zero")
		}
		p.AxisUnit = p.AxisUnit.Scale(1 / n)
	}
	return nil
}

func (sp *Spec) validateShape() error {
	p := &sp.Params
	pos := func(name string, x float64) error {
		if !(x > 0) {
			return fmt.Errorf("%s must be > 0 for %s", name, sp.Primitive)
		}
		return nil
	}
	posVec := func(name string, v hw.Vec3) error {
		if !(v.X > 0 && v.Y > 0 && v.Z > 0) {
			return fmt.Errorf("%s must be > 0 on every axis for %s", name, sp.Primitive)
		}
		return nil
	}
	switch sp.Primitive {
	case PrimSphere:
		return pos("radius_m", p.RadiusM)
	case PrimEllipsoid:
		return posVec("half_extents_m", p.HalfExtentsM)
	case PrimBox:
		return posVec("half_extents_m", p.HalfExtentsM)
	case PrimRoundedBox:
		if err := posVec("half_extents_m", p.HalfExtentsM); err != nil {
			return err
		}
		return pos("radius_m", p.RadiusM)
	case PrimPlane:
		return nil
	case PrimCapsule, PrimCappedCylinder:
		if p.EndM.Sub(p.PointM).Norm() < 1e-6 && sp.Primitive == PrimCappedCylinder {
			return errors.New("a capped cylinder's endpoints must differ")
		}
		return pos("radius_m", p.RadiusM)
	case PrimCapsuleVertical, PrimCappedCylinderVertical:
		if err := pos("height_m", p.HeightM); err != nil {
			return err
		}
		return pos("radius_m", p.RadiusM)
	case PrimTorus:
		if err := pos("radius_m", p.RadiusM); err != nil {
			return err
		}
		return pos("minor_radius_m", p.MinorRadiusM)
	case PrimBoxFrame:
		if err := posVec("half_extents_m", p.HalfExtentsM); err != nil {
			return err
		}
		return pos("minor_radius_m", p.MinorRadiusM)
	case PrimLink:
		if err := pos("radius_m", p.RadiusM); err != nil {
			return err
		}
		if err := pos("minor_radius_m", p.MinorRadiusM); err != nil {
			return err
		}
		return pos("height_m", p.HeightM)
	}
	return fmt.Errorf("unknown primitive %d", sp.Primitive)
}

// checkScalars refuses non-finite numbers, negative gains and values past
// the package's bounds.
func checkScalars(p *Params) error {
	type bound struct {
		name string
		v    float64
		lo   float64
		hi   float64
	}
	bs := [...]bound{
		{"stiffness_n_per_m", p.StiffnessNPerM, 0, MaxStiffnessNPerM},
		{"damping_ns_per_m", p.DampingNsPerM, 0, MaxDampingNsPerM},
		{"damping_per_axis_ns_per_m.x", p.DampingPerAxisNsPerM.X, 0, MaxDampingNsPerM},
		{"damping_per_axis_ns_per_m.y", p.DampingPerAxisNsPerM.Y, 0, MaxDampingNsPerM},
		{"damping_per_axis_ns_per_m.z", p.DampingPerAxisNsPerM.Z, 0, MaxDampingNsPerM},
		{"radius_m", p.RadiusM, 0, MaxLengthM},
		{"minor_radius_m", p.MinorRadiusM, 0, MaxLengthM},
		{"height_m", p.HeightM, 0, MaxLengthM},
		{"coulomb_n", p.CoulombN, 0, MaxForceN},
		{"stick_mps", p.StickMps, 0, 10},
		{"frequency_hz", p.FrequencyHz, 0, MaxFrequencyHz},
		{"amplitude_n", p.AmplitudeN, 0, MaxForceN},
	}
	for _, b := range bs {
		if !(b.v >= b.lo && b.v <= b.hi) {
			return fmt.Errorf("%s = %v, want %v..%v", b.name, b.v, b.lo, b.hi)
		}
	}
	vecs := [...]struct {
		name string
		v    hw.Vec3
		hi   float64
	}{
		{"point_m", p.PointM, MaxLengthM}, {"end_m", p.EndM, MaxLengthM},
		{"half_extents_m", p.HalfExtentsM, MaxLengthM}, {"axis", p.AxisUnit, MaxLengthM},
		{"force_n", p.ForceN, MaxForceN},
	}
	for _, v := range vecs {
		if !v.v.Finite() || math.Abs(v.v.X) > v.hi || math.Abs(v.v.Y) > v.hi || math.Abs(v.v.Z) > v.hi {
			return fmt.Errorf("%s = %v, want finite values within ±%v", v.name, v.v, v.hi)
		}
	}
	if p.HalfExtentsM.X < 0 || p.HalfExtentsM.Y < 0 || p.HalfExtentsM.Z < 0 {
		return errors.New("half_extents_m must not be negative")
	}
	for _, row := range p.JacobianNPerM {
		for _, x := range row {
			if !(math.Abs(x) <= MaxStiffnessNPerM) {
				return fmt.Errorf("jacobian_n_per_m entry %v, want within ±%v", x, MaxStiffnessNPerM)
			}
		}
	}
	return nil
}
