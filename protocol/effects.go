package protocol

import (
	"math"
	"slices"
	"strconv"

	"github.com/hapticd/hapticd/protocol/space"
)

// Effects are haptic effects a session declares per arm and the device's
// loop renders every tick, summed with the session's own command (the wire
// shapes are in docs/protocol.md, "Effects"). They are declared in the
// session's application space and converted once to the device frame
// (Effect.ToDevice) when declared or when the session's space changes.
//
// Units: positions and lengths in metres of application space; forces in N;
// stiffness in N per metre of handle motion and damping in N·s/m of handle
// velocity (like the damping entry, they ignore the workspace scale, so the
// hand feels the same wall at any scale); the field's Jacobian is the
// derivative of the engine's force by application position (N/m of
// application space) and converts exactly.

// EffectType names the kind of an effect.
type EffectType uint8

const (
	EffectSpring      EffectType = iota + 1 // to a point, a line or a plane
	EffectDamper                            // scalar or per application axis
	EffectFriction                          // Coulomb, smoothed at low speed
	EffectWall                              // a plane rendered with a proxy
	EffectLimitSphere                       // keep inside or outside a sphere
	EffectLimitBox                          // keep inside or outside a box
	EffectField                             // F0 + J·(x − x0) near x0, for a while
	EffectVibration                         // a sine along a direction
	EffectSDF                               // the vendor's SDF effect
)

// effectTypeNames is indexed by EffectType; never written.
var effectTypeNames = [...]string{"", "spring", "damper", "friction", "wall", "limit_sphere", "limit_box", "field", "vibration", "sdf"}

// Name is the type's wire name ("limit_box"); "" for an invalid type.
func (t EffectType) Name() string {
	if int(t) >= len(effectTypeNames) {
		return ""
	}
	return effectTypeNames[t]
}

func (t EffectType) String() string { return t.Name() }

// EffectTypeNames lists the wire names of every effect type, in order.
func EffectTypeNames() []string { return append([]string(nil), effectTypeNames[1:]...) }

// Limits of effects. They bound what a declaration may ask; the loop's
// force clamp and slew limit (the passivity entries) still apply on top.
const (
	MaxEffectsPerArm        = 16
	MaxEffectIDLen          = 64
	EffectStiffnessMax      = 20000.0    // N/m
	EffectDampingMax        = DampingMax // N·s/m
	EffectForceMax          = 20.0       // N
	EffectLengthMax         = SDFLengthMax
	EffectTTLMaxMs          = 3_600_000
	FieldValidMaxMs         = 10_000
	FieldValidDefaultMs     = 100
	VibrationFrequencyMinHz = 1.0
	VibrationFrequencyMaxHz = 500.0 // half the slowest loop's rate
	FrictionSlipDefaultMps  = 0.005
	FrictionSlipMinMps      = 0.0001
	FrictionSlipMaxMps      = 1.0
	SDFRangeDefaultM        = 0.01
	SDFForceScaleDefaultN   = 1.0
)

// SpringAnchor is what a spring pulls toward.
type SpringAnchor uint8

const (
	SpringToPoint SpringAnchor = iota // Position
	SpringToLine                      // the line through Position along Direction
	SpringToPlane                     // the plane through Position, normal Direction
)

var springAnchorNames = []string{"point", "line", "plane"}

func (a SpringAnchor) String() string { return springAnchorNames[a] }

// LimitKeep says on which side of a workspace limit the cursor is kept.
type LimitKeep uint8

const (
	KeepInside LimitKeep = iota
	KeepOutside
)

var keepNames = []string{"inside", "outside"}

func (k LimitKeep) String() string { return keepNames[k] }

// SpringEffect pulls toward its anchor: F = −k·d − b·v, d the offset from
// the anchor (along the normal for a plane, across the line for a line).
type SpringEffect struct {
	Anchor         SpringAnchor
	PositionM      Vec3
	Direction      Vec3 // unit: the line's direction or the plane's normal
	StiffnessNPerM float64
	DampingNsPerM  float64
}

// DamperEffect is F = −D·v: a uniform part and a part per application axis.
// MatrixNsPerM is D in the frame the effect is in (filled by the decoder
// and by ToDevice).
type DamperEffect struct {
	ScalarNsPerM         float64
	VectorNsPerM         Vec3
	HasScalar, HasVector bool
	MatrixNsPerM         Mat3
}

// FrictionEffect is Coulomb friction of ForceN against the velocity,
// reaching full force at SlipVelocityMps so that it never chatters at rest.
type FrictionEffect struct {
	ForceN          float64
	SlipVelocityMps float64
}

// WallEffect is a plane through PositionM whose Normal points into free
// space. It is rendered with a proxy (god object) that stays on the surface;
// the force is k·(proxy − cursor) − b·v_n while in contact.
type WallEffect struct {
	PositionM      Vec3
	Normal         Vec3 // unit
	StiffnessNPerM float64
	DampingNsPerM  float64
}

// LimitSphereEffect keeps the cursor inside (or outside) a sphere.
type LimitSphereEffect struct {
	CenterM        Vec3
	RadiusM        float64
	Keep           LimitKeep
	StiffnessNPerM float64
	DampingNsPerM  float64
}

// LimitBoxEffect keeps the cursor inside (or outside) a box. Rotation is the
// box's orientation as declared; Axes holds the box's unit axes as columns
// in the frame the effect is in (ToDevice converts them, Rotation stays as
// declared).
type LimitBoxEffect struct {
	CenterM        Vec3
	HalfExtentsM   Vec3
	Rotation       Quat
	Axes           Mat3
	Keep           LimitKeep
	StiffnessNPerM float64
	DampingNsPerM  float64
}

// FieldEffect is the local linear model an engine refreshes at its frame
// rate: F = ForceN + JacobianNPerM·(x − OriginM) while |x − OriginM| ≤
// RadiusM, zero beyond. After ValidMs without a refresh (a new "set" with the
// same id) the model is stale and its force ramps to zero until refreshed.
type FieldEffect struct {
	ForceN        Vec3
	JacobianNPerM Mat3 // row i is ∂F_i/∂x
	OriginM       Vec3
	RadiusM       float64
	ValidMs       int
}

// VibrationEffect is F = AmplitudeN·sin(2π·FrequencyHz·t)·Direction for
// DurationMs (0: until removed).
type VibrationEffect struct {
	FrequencyHz float64
	AmplitudeN  float64
	DurationMs  int
	Direction   Vec3 // unit
}

// SDF easings, symmetries and blends (MODULES 2.2; the vendor's values are
// not public, these are hapticd's).
var (
	sdfEaseNames     = []string{"linear", "quadratic", "cubic", "smoothstep", "exponential"}
	sdfSymmetryNames = []string{"single", "mirror", "align"}
	sdfBlendNames    = []string{"additive"}
)

// SDFEaseNames, SDFSymmetryNames and SDFBlendNames list the accepted values
// (copies).
func SDFEaseNames() []string     { return append([]string(nil), sdfEaseNames...) }
func SDFSymmetryNames() []string { return append([]string(nil), sdfSymmetryNames...) }
func SDFBlendNames() []string    { return append([]string(nil), sdfBlendNames...) }

// SDFParamsPrefix is the path, below the effect, of the shape's parameters
// as the client sent them, ready for a parameter's name: "params." in the
// flat form, "shape.parameters." in the nested one.
func (s *SDFEffect) SDFParamsPrefix() string {
	if s.FlatParams {
		return "params."
	}
	return "shape.parameters."
}

// SDFEffect is the vendor's SDF effect: a force along the shape's outward
// normal, ForceScaleN·ease(1 − d/RangeM) within RangeM outside the surface
// (see docs/protocol.md for the symmetries). Pose places the shape
// (position, rotation, uniform scale) as declared. ToLocal, LocalOffset and
// FrameMPerLocalM are the frame the effect is in: x_local = ToLocal·x +
// LocalOffset, and a local distance times FrameMPerLocalM is metres of that
// frame (RangeM is in those metres too).
type SDFEffect struct {
	Shape SDFShape
	// FlatParams is set when the shape came in the flat form ("shape" a
	// primitive's name, "params" its parameters): an error about a
	// parameter names params.x, what the client sent, not
	// shape.parameters.x. AppendJSON writes the nested form either way.
	FlatParams      bool
	Pose            Transform
	ForceScaleN     float64
	RangeM          float64
	Ease            string
	ReverseEasing   bool
	Symmetry        string
	Blend           string
	ToLocal         Mat3
	LocalOffset     Vec3
	FrameMPerLocalM float64
}

// Effect is one declared effect. Only the member its Type names is used.
type Effect struct {
	ID    string
	Type  EffectType
	TTLMs int // 0: until removed; otherwise it fades out after TTLMs
	// InDevice is set by ToDevice: geometry is in the device frame.
	InDevice bool

	Spring      SpringEffect
	Damper      DamperEffect
	Friction    FrictionEffect
	Wall        WallEffect
	LimitSphere LimitSphereEffect
	LimitBox    LimitBoxEffect
	Field       FieldEffect
	Vibration   VibrationEffect
	SDF         SDFEffect
}

// EffectsUpdate is one declaration: Clear removes every effect of the
// session on the device first, then Remove and Set apply (Set creates or
// replaces by id). It applies whole or not at all.
type EffectsUpdate struct {
	Clear  bool
	Set    []Effect
	Remove []string
}

// Empty reports an update that changes nothing.
func (u *EffectsUpdate) Empty() bool { return !u.Clear && len(u.Set) == 0 && len(u.Remove) == 0 }

// DecodeEffectsUpdate decodes and validates an effects declaration
// ({"set": [...], "remove": [...], "clear": bool}) strictly, for a body
// outside a WebSocket message (a test, a recording, a gateway). path
// prefixes error paths. Unknown fields are warnings.
func DecodeEffectsUpdate(data []byte, path string) (EffectsUpdate, []Error, *Error) {
	var doc Doc
	if err := doc.Parse(data); err != nil {
		err.Path = path
		return EffectsUpdate{}, nil, err
	}
	var list []Error
	var dropped int
	w := warnings{list: &list, dropped: &dropped}
	at := rootPath(path)
	var u EffectsUpdate
	var first firstError
	decodeEffectsUpdate(doc.Root(), &at, w, &u, &partErrors{to: &first})
	if first.err != nil {
		return EffectsUpdate{}, list, first.err
	}
	return u, list, nil
}

// decodeEffectsUpdate decodes into u, reusing its slices (a session that
// refreshes a field every frame decodes without growing them).
func decodeEffectsUpdate(v Value, at *pathSeg, w warnings, u *EffectsUpdate, errs *partErrors) {
	const example = `{"set": [{"id": "floor", "type": "wall", "position": {"x": 0, "y": 0, "z": 0}, "normal": {"x": 0, "y": 0, "z": 1}, "stiffness": 2000}], "remove": ["old"]}`
	prev := u.Set[:cap(u.Set)]
	u.Clear, u.Set, u.Remove = false, u.Set[:0], u.Remove[:0]
	if err := expectObject(v, at, example); err != nil {
		errs.note(err)
		return
	}
	var set, remove Value
	for it := v.Members(); it.Next(); {
		switch {
		case it.KeyIs("set"):
			set = it.Value()
		case it.KeyIs("remove"):
			remove = it.Value()
		case it.KeyIs("clear") && it.Superseded():
			// Given again later: the last occurrence counts.
		case it.KeyIs("clear"):
			if !it.Value().Exists() {
				u.Clear = false
				continue
			}
			c := at.child("clear")
			b, err := readBool(it.Value(), &c)
			errs.note(err)
			u.Clear = b
		default:
			w.unknownField(at, &it)
		}
	}
	if remove.Exists() {
		c := at.child("remove")
		switch {
		case remove.Kind() != KindArray:
			errs.note(errAt(CodeInvalidValue, &c, `remove must be an array of effect ids like ["wall1"], got %s`, remove.Kind()))
		case remove.Len() > MaxEffectsPerArm:
			errs.note(errAt(CodeTooManyEffects, &c, "remove lists %d ids; an arm holds at most %d effects", remove.Len(), MaxEffectsPerArm))
		default:
			u.decodeRemove(remove, &c, errs)
		}
	}
	if set.Exists() {
		c := at.child("set")
		switch {
		case set.Kind() != KindArray:
			errs.note(errAt(CodeInvalidValue, &c, `set must be an array of effects like [{"id": "wall1", "type": "wall", ...}], got %s`, set.Kind()))
		case set.Len() > MaxEffectsPerArm:
			errs.note(errAt(CodeTooManyEffects, &c, "set declares %d effects; an arm holds at most %d", set.Len(), MaxEffectsPerArm))
		default:
			u.decodeSet(set, &c, w, prev, errs)
		}
	}
}

// decodeRemove appends each id of remove (an array of at most
// MaxEffectsPerArm) to u.Remove, noting each bad one in errs.
func (u *EffectsUpdate) decodeRemove(remove Value, at *pathSeg, errs *partErrors) {
	for el := remove.Elements(); el.Next(); {
		ec := at.elem(el.Index())
		id, err := readEffectID(el.Value(), &ec, "")
		if err != nil {
			errs.note(err)
			continue
		}
		if slices.Contains(u.Remove, id) {
			errs.note(errAt(CodeInvalidValue, &ec, "effect id %q is listed twice in remove", id))
			continue
		}
		u.Remove = append(u.Remove, id)
	}
}

// decodeSet appends each effect of set (an array of at most
// MaxEffectsPerArm) to u.Set, noting each bad one's errors in errs; prev
// holds the slots' effects of the last declaration, whose ids are reused.
func (u *EffectsUpdate) decodeSet(set Value, at *pathSeg, w warnings, prev []Effect, errs *partErrors) {
	for el := set.Elements(); el.Next(); {
		ec := at.elem(el.Index())
		oldID := ""
		if i := len(u.Set); i < len(prev) {
			oldID = prev[i].ID
		}
		before := errs.n
		e := decodeEffect(el.Value(), &ec, w, oldID, errs)
		if errs.n != before {
			continue
		}
		ic := ec.child("id")
		twice := false
		for i := range u.Set {
			twice = twice || u.Set[i].ID == e.ID
		}
		switch {
		case twice:
			errs.note(errAt(CodeInvalidValue, &ic, "effect id %q is declared twice in set: send it once", e.ID))
		case slices.Contains(u.Remove, e.ID):
			errs.note(errAt(CodeInvalidValue, &ic, "effect id %q is both set and removed: send one of them", e.ID))
		default:
			u.Set = append(u.Set, e)
		}
	}
}

// readEffectID reads an id: 1..64 characters of A-Z a-z 0-9 _ - . :
// old is returned instead of a new string when it matches.
func readEffectID(v Value, at *pathSeg, old string) (string, *Error) {
	b, ok := v.StringBytes()
	if !ok {
		return "", errAt(CodeInvalidValue, at, "an effect id must be a string such as \"wall1\", got %s", v.Kind())
	}
	if len(b) == 0 || len(b) > MaxEffectIDLen {
		return "", errAt(CodeInvalidValue, at, "an effect id has 1 to %d characters, got %d", MaxEffectIDLen, len(b))
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return "", errAt(CodeInvalidValue, at, "effect id %q may hold only letters, digits and _ - . :", b)
		}
	}
	return reuse(old, b), nil
}

// effectFields are the members each type reads, beside id, type and ttl_ms;
// indexed by EffectType, never written.
var effectFields = [...][]string{
	EffectSpring:      {"anchor", "position", "direction", "stiffness", "damping"},
	EffectDamper:      {"scalar", "vector"},
	EffectFriction:    {"force", "slip_velocity"},
	EffectWall:        {"position", "normal", "stiffness", "damping"},
	EffectLimitSphere: {"center", "radius", "keep", "stiffness", "damping"},
	EffectLimitBox:    {"center", "half_extents", "rotation", "keep", "stiffness", "damping"},
	EffectField:       {"force", "jacobian", "origin", "radius", "valid_ms"},
	EffectVibration:   {"frequency", "amplitude", "duration_ms", "direction"},
	EffectSDF:         {"shape", "params", "transform", "force_scale", "range", "ease", "reverse_easing", "symmetry", "blend"},
}

// EffectFields lists the members an effect type reads beside id, type and
// ttl_ms (a copy), for schemas.
func EffectFields(t EffectType) []string {
	if t < EffectSpring || int(t) >= len(effectFields) {
		return nil
	}
	return append([]string(nil), effectFields[t]...)
}

// effectReader reads the members of one effect object. Each read notes its
// error in errs and answers a value anyway (the member's zero or default),
// so that every bad member of an effect is reported at once.
type effectReader struct {
	v    Value
	at   *pathSeg
	w    warnings
	typ  EffectType
	errs *partErrors
}

func (r *effectReader) member(name string) (Value, pathSeg) {
	return r.v.Member(name), r.at.child(name)
}

func (r *effectReader) missing(name, what string) {
	r.errs.note(errAt(CodeInvalidValue, r.at, "a %s effect needs %q (%s)", r.typ.Name(), name, what))
}

// num reads a required (required true) or optional number within lo..hi.
func (r *effectReader) num(name string, lo, hi, def float64, required bool, what string) float64 {
	v, c := r.member(name)
	if !v.Exists() {
		if required {
			r.missing(name, what)
			return 0
		}
		return def
	}
	f, err := readRange(v, &c, lo, hi)
	r.errs.note(err)
	return f
}

// positive reads a number above 0 and at most hi.
func (r *effectReader) positive(name string, hi float64, required bool, what string) float64 {
	v, c := r.member(name)
	if !v.Exists() {
		if required {
			r.missing(name, what)
		}
		return 0
	}
	f, err := readFloat(v, &c)
	if err != nil {
		r.errs.note(err)
		return 0
	}
	if f <= 0 || f > hi {
		r.errs.note(errAt(CodeOutOfRange, &c, "%s %g is out of range: above 0 and at most %g", name, f, hi))
		return 0
	}
	return f
}

func (r *effectReader) integer(name string, lo, hi, def int) int {
	v, c := r.member(name)
	if !v.Exists() {
		return def
	}
	n, err := readInt(v, &c, lo, hi)
	r.errs.note(err)
	return n
}

// point reads a required vec3 position whose components are at most
// EffectLengthMax in magnitude.
func (r *effectReader) point(name, what string) Vec3 {
	v, c := r.member(name)
	if !v.Exists() {
		r.missing(name, what)
		return Vec3{}
	}
	p, err := readVec3(v, &c, r.w)
	if err != nil {
		r.errs.note(err)
		return p
	}
	for i, comp := range [3]float64{p.X, p.Y, p.Z} {
		if math.Abs(comp) > EffectLengthMax {
			cc := c.child(vec3Names[i])
			r.errs.note(errAt(CodeOutOfRange, &cc, "%s.%s %g is out of range -%g..%g m", name, vec3Names[i], comp, EffectLengthMax, EffectLengthMax))
			return p
		}
	}
	return p
}

// unit reads a non-zero vec3 and normalises it; def when absent and not
// required.
func (r *effectReader) unit(name string, def Vec3, required bool, what string) Vec3 {
	v, c := r.member(name)
	if !v.Exists() {
		if required {
			r.missing(name, what)
			return Vec3{}
		}
		return def
	}
	d, err := readVec3(v, &c, r.w)
	if err != nil {
		r.errs.note(err)
		return d
	}
	if d == (Vec3{}) {
		// Any other finite vector is normalised, however long or short.
		r.errs.note(errAt(CodeOutOfRange, &c, "%s must be a non-zero vector (it is normalised), e.g. {\"x\": 0, \"y\": 0, \"z\": 1}", name))
		return d
	}
	return unitStable(d)
}

// enum reads a name of table as its index; def when absent.
func (r *effectReader) enum(name string, table []string, def int) int {
	v, c := r.member(name)
	if !v.Exists() {
		return def
	}
	s, _, err := readEnum(v, &c, table)
	if err != nil {
		r.errs.note(err)
		return def
	}
	for i, t := range table {
		if s == t {
			return i
		}
	}
	r.errs.note(errAt(CodeInvalidValue, &c, "%s %q is not one of %s", name, s, nameList(table)))
	return def
}

func (r *effectReader) stiffness() float64 {
	if v, _ := r.member("stiffness"); !v.Exists() {
		// Not r.missing: its reason would cost a formatted number per read.
		r.errs.note(errAt(CodeInvalidValue, r.at, `a %s effect needs "stiffness" (N/m, 0..%g)`, r.typ.Name(), EffectStiffnessMax))
		return 0
	}
	return r.num("stiffness", 0, EffectStiffnessMax, 0, true, "")
}

func (r *effectReader) damping() float64 {
	return r.num("damping", 0, EffectDampingMax, 0, false, "")
}

// decodeEffect decodes one element of "set", noting each bad member's
// error in errs (the effect is then not to be used).
func decodeEffect(v Value, at *pathSeg, w warnings, oldID string, errs *partErrors) Effect {
	var e Effect
	if err := expectObject(v, at, `{"id": "wall1", "type": "wall", "position": {"x": 0, "y": 0, "z": 0}, "normal": {"x": 0, "y": 0, "z": 1}, "stiffness": 2000}`); err != nil {
		errs.note(err)
		return e
	}
	idv := v.Member("id")
	ic := at.child("id")
	if !idv.Exists() {
		errs.note(errAt(CodeInvalidValue, at, `an effect needs "id": a string such as "wall1"`))
	} else {
		id, err := readEffectID(idv, &ic, oldID)
		errs.note(err)
		e.ID = id
	}
	tv := v.Member("type")
	tc := at.child("type")
	if !tv.Exists() {
		// Which members to read depends on the type: none are.
		errs.note(errAt(CodeInvalidValue, at, `effect %q needs "type": one of %s`, e.ID, nameList(effectTypeNames[1:])))
		return e
	}
	name, _, err := readEnum(tv, &tc, effectTypeNames[1:])
	if err != nil {
		errs.note(err)
		return e
	}
	for i, n := range effectTypeNames {
		if i > 0 && n == name {
			e.Type = EffectType(i)
		}
	}
	if e.Type == 0 {
		errs.note(errAt(CodeInvalidValue, &tc, "unknown effect type %q: use one of %s", name, nameList(effectTypeNames[1:])))
		return e
	}
	r := effectReader{v: v, at: at, w: w, typ: e.Type, errs: errs}
	e.TTLMs = r.integer("ttl_ms", 1, EffectTTLMaxMs, 0)
	for it := v.Members(); it.Next(); {
		if it.KeyIs("id") || it.KeyIs("type") || it.KeyIs("ttl_ms") {
			continue
		}
		known := false
		for _, f := range effectFields[e.Type] {
			known = known || it.KeyIs(f)
		}
		if !known {
			w.unknownField(at, &it)
		}
	}
	switch e.Type {
	case EffectSpring:
		r.spring(&e.Spring)
	case EffectDamper:
		r.damper(&e.Damper)
	case EffectFriction:
		r.friction(&e.Friction)
	case EffectWall:
		r.wall(&e.Wall)
	case EffectLimitSphere:
		r.limitSphere(&e.LimitSphere)
	case EffectLimitBox:
		r.limitBox(&e.LimitBox)
	case EffectField:
		r.field(&e.Field)
	case EffectVibration:
		r.vibration(&e.Vibration)
	case EffectSDF:
		r.sdf(&e.SDF)
	}
	return e
}

func (r *effectReader) spring(s *SpringEffect) {
	s.Anchor = SpringAnchor(r.enum("anchor", springAnchorNames, 0))
	s.PositionM = r.point("position", "the anchor point, m")
	if s.Anchor != SpringToPoint {
		what := "the line's direction"
		if s.Anchor == SpringToPlane {
			what = "the plane's normal"
		}
		s.Direction = r.unit("direction", Vec3{}, true, what)
	}
	s.StiffnessNPerM = r.stiffness()
	s.DampingNsPerM = r.damping()
}

func (r *effectReader) damper(d *DamperEffect) {
	scalar, sc := r.member("scalar")
	vector, vc := r.member("vector")
	if scalar.Exists() {
		f, err := readRange(scalar, &sc, 0, EffectDampingMax)
		r.errs.note(err)
		d.ScalarNsPerM, d.HasScalar = f, true
	}
	if vector.Exists() {
		d.HasVector = true
		vec, err := readVec3(vector, &vc, r.w)
		if err != nil {
			r.errs.note(err)
		}
		for i, comp := range [3]float64{vec.X, vec.Y, vec.Z} {
			if err == nil && (comp < 0 || comp > EffectDampingMax) {
				cc := vc.child(vec3Names[i])
				err = errAt(CodeOutOfRange, &cc, "damper vector %s %g is out of range 0..%g", vec3Names[i], comp, EffectDampingMax)
				r.errs.note(err)
			}
		}
		d.VectorNsPerM = vec
	}
	if !d.HasScalar && !d.HasVector {
		r.errs.note(errAt(CodeInvalidValue, r.at, `a damper effect needs "scalar" or "vector" (N·s/m, 0..%g)`, EffectDampingMax))
	}
	d.MatrixNsPerM = Mat3{{d.ScalarNsPerM + d.VectorNsPerM.X, 0, 0}, {0, d.ScalarNsPerM + d.VectorNsPerM.Y, 0}, {0, 0, d.ScalarNsPerM + d.VectorNsPerM.Z}}
}

func (r *effectReader) friction(f *FrictionEffect) {
	f.ForceN = r.num("force", 0, EffectForceMax, 0, true, "the Coulomb force, N")
	f.SlipVelocityMps = r.num("slip_velocity", FrictionSlipMinMps, FrictionSlipMaxMps, FrictionSlipDefaultMps, false, "")
}

func (r *effectReader) wall(wl *WallEffect) {
	wl.PositionM = r.point("position", "a point on the plane, m")
	wl.Normal = r.unit("normal", Vec3{}, true, "the normal, pointing into free space")
	wl.StiffnessNPerM = r.stiffness()
	wl.DampingNsPerM = r.damping()
}

func (r *effectReader) limitSphere(s *LimitSphereEffect) {
	s.CenterM = r.point("center", "the sphere's centre, m")
	s.RadiusM = r.positive("radius", EffectLengthMax, true, "m")
	s.Keep = LimitKeep(r.enum("keep", keepNames, 0))
	s.StiffnessNPerM = r.stiffness()
	s.DampingNsPerM = r.damping()
}

func (r *effectReader) limitBox(b *LimitBoxEffect) {
	b.CenterM = r.point("center", "the box's centre, m")
	if v, c := r.member("half_extents"); !v.Exists() {
		r.missing("half_extents", "half the box's size along each axis, m")
	} else if h, err := readVec3(v, &c, r.w); err != nil {
		r.errs.note(err)
	} else {
		b.HalfExtentsM = h
		for i, comp := range [3]float64{h.X, h.Y, h.Z} {
			if comp <= 0 || comp > EffectLengthMax {
				cc := c.child(vec3Names[i])
				r.errs.note(errAt(CodeOutOfRange, &cc, "half_extents.%s %g is out of range: above 0 and at most %g m", vec3Names[i], comp, EffectLengthMax))
				break
			}
		}
	}
	b.Rotation = space.IdentityQuat()
	if v, c := r.member("rotation"); v.Exists() {
		q, err := readQuat(v, &c, r.w)
		switch {
		case err != nil:
			r.errs.note(err)
		case q == (Quat{}):
			r.errs.note(errAt(CodeOutOfRange, &c, "rotation must be a non-zero quaternion: identity is {\"w\": 1, \"x\": 0, \"y\": 0, \"z\": 0}"))
		default:
			b.Rotation = quatStable(q)
		}
	}
	b.Axes = quatMat3(b.Rotation)
	b.Keep = LimitKeep(r.enum("keep", keepNames, 0))
	b.StiffnessNPerM = r.stiffness()
	b.DampingNsPerM = r.damping()
}

func (r *effectReader) field(f *FieldEffect) {
	if v, c := r.member("force"); v.Exists() {
		force, err := readVec3(v, &c, r.w)
		if err != nil {
			r.errs.note(err)
		} else if n := norm3(force); n > EffectForceMax {
			r.errs.note(errAt(CodeOutOfRange, &c, "force magnitude %g N is over %g N", n, EffectForceMax))
		}
		f.ForceN = force
	}
	if v, c := r.member("jacobian"); v.Exists() {
		j, err := readMat3(v, &c, EffectStiffnessMax)
		r.errs.note(err)
		f.JacobianNPerM = j
	}
	f.OriginM = r.point("origin", "x0, where the model was linearised, m")
	f.RadiusM = r.positive("radius", EffectLengthMax, true, "how far from origin the model holds, m")
	f.ValidMs = r.integer("valid_ms", 1, FieldValidMaxMs, FieldValidDefaultMs)
}

// readMat3 reads [[a,b,c],[d,e,f],[g,h,i]] (rows), each entry within ±max.
func readMat3(v Value, at *pathSeg, max float64) (Mat3, *Error) {
	var m Mat3
	const example = `[[-100, 0, 0], [0, -100, 0], [0, 0, -100]]`
	if v.Kind() != KindArray || v.Len() != 3 {
		return m, errAt(CodeInvalidValue, at, "%s must be 3 rows of 3 numbers (N/m), e.g. %s", at.last(), example)
	}
	for row := v.Elements(); row.Next(); {
		rc := at.elem(row.Index())
		rv := row.Value()
		if rv.Kind() != KindArray || rv.Len() != 3 {
			return m, errAt(CodeInvalidValue, &rc, "each row of %s must be 3 numbers, e.g. %s", at.last(), example)
		}
		for el := rv.Elements(); el.Next(); {
			ec := rc.elem(el.Index())
			f, err := readFloat(el.Value(), &ec)
			if err != nil {
				return m, err
			}
			if math.Abs(f) > max {
				return m, errAt(CodeOutOfRange, &ec, "%s entry %g is out of range -%g..%g N/m", at.last(), f, max, max)
			}
			m[row.Index()][el.Index()] = f
		}
	}
	return m, nil
}

func (r *effectReader) vibration(vb *VibrationEffect) {
	vb.FrequencyHz = r.num("frequency", VibrationFrequencyMinHz, VibrationFrequencyMaxHz, 0, true, "Hz")
	vb.AmplitudeN = r.num("amplitude", 0, EffectForceMax, 0, true, "N")
	vb.DurationMs = r.integer("duration_ms", 1, EffectTTLMaxMs, 0)
	vb.Direction = r.unit("direction", Vec3{Z: 1}, false, "")
}

func (r *effectReader) sdf(s *SDFEffect) {
	sv, sc := r.member("shape")
	switch {
	case !sv.Exists():
		r.missing("shape", `{"primitive": "sphere", "parameters": {"r": 0.05}}, or a primitive name with "params"`)
	case sv.Kind() == KindString:
		// The flat form of the vendor's SDF module notes: "shape" names the
		// primitive and "params" holds its parameters.
		pv, pc := r.member("params")
		shape, err := decodeSDFNamed(sv, &sc, pv, pc, r.w, effectShapes)
		r.errs.note(err)
		s.Shape, s.FlatParams = shape, true
	default:
		shape, err := decodeSDFShape(sv, &sc, r.w, effectShapes)
		r.errs.note(err)
		s.Shape = shape
		if pv, pc := r.member("params"); pv.Exists() {
			// The flat form's member beside a nested shape reads nothing.
			r.w.add(CodeUnknownField, &pc, "unknown field \"params\" in %s: ignored (the shape's own \"parameters\" are read; \"params\" goes with a primitive's name in \"shape\")", r.at.last())
		}
	}
	s.Pose = space.IdentityTransform()
	if tv, tc := r.member("transform"); tv.Exists() {
		r.sdfPose(s, tv, &tc)
	}
	s.ForceScaleN = r.num("force_scale", 0, EffectForceMax, SDFForceScaleDefaultN, false, "")
	s.RangeM = SDFRangeDefaultM
	if v, _ := r.member("range"); v.Exists() {
		s.RangeM = r.positive("range", EffectLengthMax, true, "")
	}
	s.Ease = sdfEaseNames[r.enum("ease", sdfEaseNames, 0)]
	if v, c := r.member("reverse_easing"); v.Exists() {
		b, err := readBool(v, &c)
		r.errs.note(err)
		s.ReverseEasing = b
	}
	s.Symmetry = sdfSymmetryNames[r.enum("symmetry", sdfSymmetryNames, 0)]
	s.Blend = sdfBlendNames[r.enum("blend", sdfBlendNames, 0)]
	s.setLocal()
}

// sdfPose reads an SDF effect's "transform" (tv, at tc) into s.Pose.
func (r *effectReader) sdfPose(s *SDFEffect, tv Value, tc *pathSeg) {
	p, err := decodeTransformPatch(tv, tc, r.w)
	if err != nil {
		r.errs.note(err)
		return
	}
	s.Pose = p.Apply(s.Pose)
	if sc := s.Pose.Scale; sc.X != sc.Y || sc.Y != sc.Z || sc.X <= 0 {
		c := tc.child("scale")
		r.errs.note(errAt(CodeOutOfRange, &c, "an SDF effect's scale must be uniform and positive ({\"x\": s, \"y\": s, \"z\": s}): a non-uniform scale has no exact distance"))
		return
	}
	for i, comp := range [3]float64{s.Pose.Position.X, s.Pose.Position.Y, s.Pose.Position.Z} {
		if math.Abs(comp) > EffectLengthMax {
			c := tc.child("position")
			cc := c.child(vec3Names[i])
			r.errs.note(errAt(CodeOutOfRange, &cc, "position.%s %g is out of range -%g..%g m", vec3Names[i], comp, EffectLengthMax, EffectLengthMax))
			return
		}
	}
}

// setLocal fills the frame fields from Pose, in the declaring space:
// x_local = Rᵀ·(x − p)/σ.
func (s *SDFEffect) setLocal() {
	sigma := s.Pose.Scale.X
	r := quatMat3(s.Pose.Rotation)
	rt := r.transpose()
	for i := range 3 {
		for j := range 3 {
			s.ToLocal[i][j] = rt[i][j] / sigma
		}
	}
	s.LocalOffset = scale3(s.ToLocal.MulVec(s.Pose.Position), -1)
	s.FrameMPerLocalM = sigma
}

// ToDevice converts an effect declared in the application space that view
// maps (the session's basis, mount and workspace for this device) to the
// device frame: points and centres by the whole transform, normals so that
// their planes map onto each other, forces and directions of force by the
// rotation only, lengths by the mean workspace scale (exact when the scale
// is uniform), stiffness and damping not at all (they are physical, see the
// package comment on effects). The field's Jacobian converts exactly:
// J_dev = Rᵀ·J·F. An effect already in the device frame is returned as it
// is.
func (e Effect) ToDevice(view *space.View) Effect {
	if e.InDevice {
		return e
	}
	m := newDeviceMap(view)
	e.InDevice = true
	switch e.Type {
	case EffectSpring:
		s := &e.Spring
		s.PositionM = m.point(s.PositionM)
		switch s.Anchor {
		case SpringToLine:
			s.Direction = m.direction(s.Direction)
		case SpringToPlane:
			s.Direction = m.normal(s.Direction)
		}
	case EffectDamper:
		d := &e.Damper
		d.MatrixNsPerM = Mat3(view.DampingMatrixDevice(d.ScalarNsPerM, d.VectorNsPerM))
	case EffectWall:
		e.Wall.PositionM = m.point(e.Wall.PositionM)
		e.Wall.Normal = m.normal(e.Wall.Normal)
	case EffectLimitSphere:
		e.LimitSphere.CenterM = m.point(e.LimitSphere.CenterM)
		e.LimitSphere.RadiusM = m.length(e.LimitSphere.RadiusM)
	case EffectLimitBox:
		b := &e.LimitBox
		b.CenterM = m.point(b.CenterM)
		h := [3]float64{b.HalfExtentsM.X, b.HalfExtentsM.Y, b.HalfExtentsM.Z}
		var axes Mat3
		for j := range 3 {
			img := view.VelocityToDevice(scale3(b.Axes.col(j), h[j]))
			h[j] = norm3(img)
			axes.setCol(j, unit3(img))
		}
		b.Axes = axes
		b.HalfExtentsM = Vec3{X: h[0], Y: h[1], Z: h[2]}
	case EffectField:
		f := &e.Field
		f.ForceN = m.force(f.ForceN)
		jf := mulMat3(&f.JacobianNPerM, &m.f)
		var jd Mat3
		for j := range 3 {
			jd.setCol(j, m.force(jf.col(j)))
		}
		f.JacobianNPerM = jd
		f.OriginM = m.point(f.OriginM)
		f.RadiusM = m.length(f.RadiusM)
	case EffectVibration:
		e.Vibration.Direction = unit3(m.force(e.Vibration.Direction))
	case EffectSDF:
		s := &e.SDF
		// x_local = L·x_app + o = L·(origin + F·x_dev) + o.
		s.LocalOffset = add3(s.ToLocal.MulVec(m.origin), s.LocalOffset)
		s.ToLocal = mulMat3(&s.ToLocal, &m.f)
		s.FrameMPerLocalM = m.length(s.FrameMPerLocalM)
		s.RangeM = m.length(s.RangeM)
	}
	return e
}

func add3(a, b Vec3) Vec3 { return Vec3{X: a.X + b.X, Y: a.Y + b.Y, Z: a.Z + b.Z} }

// AppendJSON appends the effect's wire shape as declared (every parameter,
// defaults filled in). An effect converted by ToDevice appends its device
// frame values under the same names.
func (e *Effect) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = AppendString(dst, e.ID)
	dst = append(dst, `,"type":`...)
	dst = AppendString(dst, e.Type.Name())
	if e.TTLMs > 0 {
		dst = append(dst, `,"ttl_ms":`...)
		dst = appendInt(dst, e.TTLMs)
	}
	num := func(dst []byte, name string, f float64) []byte {
		dst = append(append(append(dst, ",\""...), name...), "\":"...)
		return AppendFloat(dst, f)
	}
	vec := func(dst []byte, name string, v Vec3) []byte {
		dst = append(append(append(dst, ",\""...), name...), "\":"...)
		return appendVec3(dst, exact, v)
	}
	str := func(dst []byte, name, s string) []byte {
		dst = append(append(append(dst, ",\""...), name...), "\":"...)
		return AppendString(dst, s)
	}
	switch e.Type {
	case EffectSpring:
		s := &e.Spring
		dst = str(dst, "anchor", s.Anchor.String())
		dst = vec(dst, "position", s.PositionM)
		if s.Anchor != SpringToPoint {
			dst = vec(dst, "direction", s.Direction)
		}
		dst = num(dst, "stiffness", s.StiffnessNPerM)
		dst = num(dst, "damping", s.DampingNsPerM)
	case EffectDamper:
		if e.Damper.HasScalar {
			dst = num(dst, "scalar", e.Damper.ScalarNsPerM)
		}
		if e.Damper.HasVector {
			dst = vec(dst, "vector", e.Damper.VectorNsPerM)
		}
	case EffectFriction:
		dst = num(dst, "force", e.Friction.ForceN)
		dst = num(dst, "slip_velocity", e.Friction.SlipVelocityMps)
	case EffectWall:
		dst = vec(dst, "position", e.Wall.PositionM)
		dst = vec(dst, "normal", e.Wall.Normal)
		dst = num(dst, "stiffness", e.Wall.StiffnessNPerM)
		dst = num(dst, "damping", e.Wall.DampingNsPerM)
	case EffectLimitSphere:
		s := &e.LimitSphere
		dst = vec(dst, "center", s.CenterM)
		dst = num(dst, "radius", s.RadiusM)
		dst = str(dst, "keep", s.Keep.String())
		dst = num(dst, "stiffness", s.StiffnessNPerM)
		dst = num(dst, "damping", s.DampingNsPerM)
	case EffectLimitBox:
		b := &e.LimitBox
		dst = vec(dst, "center", b.CenterM)
		dst = vec(dst, "half_extents", b.HalfExtentsM)
		dst = append(dst, `,"rotation":`...)
		dst = appendQuat(dst, exact, b.Rotation)
		dst = str(dst, "keep", b.Keep.String())
		dst = num(dst, "stiffness", b.StiffnessNPerM)
		dst = num(dst, "damping", b.DampingNsPerM)
	case EffectField:
		f := &e.Field
		dst = vec(dst, "force", f.ForceN)
		dst = append(dst, `,"jacobian":[`...)
		for i := range 3 {
			if i > 0 {
				dst = append(dst, ',')
			}
			for j := range 3 {
				dst = append(dst, ",["[boolIndex(j == 0)])
				dst = AppendFloat(dst, f.JacobianNPerM[i][j])
			}
			dst = append(dst, ']')
		}
		dst = append(dst, ']')
		dst = vec(dst, "origin", f.OriginM)
		dst = num(dst, "radius", f.RadiusM)
		dst = append(dst, `,"valid_ms":`...)
		dst = appendInt(dst, f.ValidMs)
	case EffectVibration:
		v := &e.Vibration
		dst = num(dst, "frequency", v.FrequencyHz)
		dst = num(dst, "amplitude", v.AmplitudeN)
		if v.DurationMs > 0 {
			dst = append(dst, `,"duration_ms":`...)
			dst = appendInt(dst, v.DurationMs)
		}
		dst = vec(dst, "direction", v.Direction)
	case EffectSDF:
		s := &e.SDF
		dst = append(dst, `,"shape":`...)
		dst = s.Shape.AppendJSON(dst)
		dst = append(dst, `,"transform":`...)
		dst = appendTransform(dst, s.Pose)
		dst = num(dst, "force_scale", s.ForceScaleN)
		dst = num(dst, "range", s.RangeM)
		dst = str(dst, "ease", s.Ease)
		dst = append(dst, `,"reverse_easing":`...)
		dst = appendBool(dst, s.ReverseEasing)
		dst = str(dst, "symmetry", s.Symmetry)
		dst = str(dst, "blend", s.Blend)
	}
	return append(dst, '}')
}

// boolIndex is 1 for true: picks "[" out of ",[" for a row's first entry.
func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendInt writes n as a JSON integer: the ms fields are integers in the
// schema, and the float form wrote a million and more in exponent form.
func appendInt(dst []byte, n int) []byte { return strconv.AppendInt(dst, int64(n), 10) }

// MarshalJSON is AppendJSON.
func (e Effect) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// AppendJSON appends the update's wire shape: {"clear"?, "remove"?, "set"?}.
func (u *EffectsUpdate) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	open := len(dst)
	if u.Clear {
		dst = append(dst, `"clear":true`...)
	}
	if len(u.Remove) > 0 {
		if len(dst) > open {
			dst = append(dst, ',')
		}
		dst = append(dst, `"remove":[`...)
		for i, id := range u.Remove {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, id)
		}
		dst = append(dst, ']')
	}
	if len(u.Set) > 0 {
		if len(dst) > open {
			dst = append(dst, ',')
		}
		dst = append(dst, `"set":[`...)
		for i := range u.Set {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = u.Set[i].AppendJSON(dst)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// MarshalJSON is AppendJSON.
func (u EffectsUpdate) MarshalJSON() ([]byte, error) { return u.AppendJSON(nil), nil }

// EffectInForce is one effect as GET /{type}/{id}/effects reports it: as
// its session declared it, with the time it has left (RemainingMs, -1 when
// it has no ttl) and, for a wall, the proxy point in the session's space.
type EffectInForce struct {
	Effect      Effect
	RemainingMs int
	// ForceN is the effect's force as the loop last rendered it, in the
	// declaring session's space (N), when HasForce.
	ForceN   Vec3
	HasForce bool
}

// EffectsInForce is the answer of GET /{type}/{id}/effects: the session
// whose effects the device renders (0: none) and its effects.
type EffectsInForce struct {
	SessionID uint64
	Effects   []EffectInForce
	// Gateway names the lab gateway's session that declared the effects,
	// when this process renders them for it (a node's arm); nil otherwise.
	Gateway *EffectsGateway
}

// EffectsGateway is the lab gateway whose session declared the effects a
// node's arm renders: its id and cluster address, and the session on it.
type EffectsGateway struct {
	ID, Address string
	SessionID   uint64
}

// AppendJSON appends {"session_id": n|null, "max_effects": 16,
// "effects": [{...effect, "remaining_ms"?}], "gateway"?: {"id", "address",
// "session_id"}}. Session ids are written exactly: a node's owner for a
// gateway (2^62 and up) is past a float64's integers.
func (v *EffectsInForce) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"session_id":`...)
	if v.SessionID == 0 {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendUint(dst, v.SessionID, 10)
	}
	dst = append(dst, `,"max_effects":`...)
	dst = appendInt(dst, MaxEffectsPerArm)
	dst = append(dst, `,"effects":[`...)
	for i := range v.Effects {
		if i > 0 {
			dst = append(dst, ',')
		}
		e := &v.Effects[i]
		dst = e.Effect.AppendJSON(dst)
		if e.RemainingMs >= 0 {
			dst = append(dst[:len(dst)-1], `,"remaining_ms":`...)
			dst = appendInt(dst, e.RemainingMs)
			dst = append(dst, '}')
		}
		if e.HasForce {
			dst = append(dst[:len(dst)-1], `,"rendered_force":`...)
			dst = appendVec3(dst, measured, e.ForceN)
			dst = append(dst, '}')
		}
	}
	dst = append(dst, ']')
	if g := v.Gateway; g != nil {
		dst = append(dst, `,"gateway":{"id":`...)
		dst = AppendString(dst, g.ID)
		dst = append(dst, `,"address":`...)
		dst = AppendString(dst, g.Address)
		dst = append(dst, `,"session_id":`...)
		dst = strconv.AppendUint(dst, g.SessionID, 10)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// MarshalJSON is AppendJSON.
func (v EffectsInForce) MarshalJSON() ([]byte, error) { return v.AppendJSON(nil), nil }

// EffectProxy is a wall's proxy point as state.effects reports it, in the
// session's application space: where the user feels the surface, for the
// engine to draw the contact there. Contact is false while the cursor is
// on the free side (the proxy is then the cursor itself).
type EffectProxy struct {
	ID        string
	PositionM Vec3
	Contact   bool
}

// AppendEffectsState appends the arm state's "effects" extension:
// {"count": n, "proxies": [{"id", "position", "contact"}]}.
func AppendEffectsState(dst []byte, count int, proxies []EffectProxy) []byte {
	dst = append(dst, `{"count":`...)
	dst = appendInt(dst, count)
	dst = append(dst, `,"proxies":[`...)
	for i := range proxies {
		if i > 0 {
			dst = append(dst, ',')
		}
		p := &proxies[i]
		dst = append(dst, `{"id":`...)
		dst = AppendString(dst, p.ID)
		dst = append(dst, `,"position":`...)
		// In contact the proxy lies on the surface the client declared,
		// and it compares the two: exact (float32 put a floor at
		// 0.1234567890123 at 0.12345679). Out of contact it is the
		// cursor, written as cursor_position is (measured), so the two
		// read alike and the frame stays as short as it was.
		bits := measured
		if p.Contact {
			bits = exact
		}
		dst = appendVec3(dst, bits, p.PositionM)
		dst = append(dst, `,"contact":`...)
		dst = appendBool(dst, p.Contact)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// PassivityState is the arm state's "passivity" extension: the observed
// energy of the output (J; negative means the rendering generated energy)
// and the damping the passivity controller adds now (N·s/m).
type PassivityState struct {
	EnergyJ            float64
	AddedDampingNsPerM float64
}

// AppendJSON appends {"energy": J, "added_damping": N·s/m}.
func (p PassivityState) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"energy":`...)
	dst = appendNumber(dst, p.EnergyJ, measured)
	dst = append(dst, `,"added_damping":`...)
	dst = appendNumber(dst, p.AddedDampingNsPerM, measured)
	return append(dst, '}')
}

// ArmStateExtensions are the members an arm's state carries beside the
// reference's while the effects, passivity or navigation layers report
// something: "effects" {count, proxies}, "passivity" {energy,
// added_damping} and "navigation" (NavigationState). Whatever a subscription
// selects, they are written when set (they are not state fields a client
// subscribes to). Proxies is caller-owned and read only.
type ArmStateExtensions struct {
	HasEffects    bool
	EffectCount   int
	Proxies       []EffectProxy
	HasPassivity  bool
	Passivity     PassivityState
	HasNavigation bool
	Navigation    NavigationState
}

func (x *ArmStateExtensions) appendMembers(dst []byte, open int) []byte {
	if x.HasEffects {
		dst = AppendEffectsState(stateKey(dst, open, `"effects":`), x.EffectCount, x.Proxies)
	}
	if x.HasPassivity {
		dst = x.Passivity.AppendJSON(stateKey(dst, open, `"passivity":`))
	}
	if x.HasNavigation {
		dst = x.Navigation.AppendJSON(stateKey(dst, open, `"navigation":`))
	}
	return dst
}
