package protocol

import (
	"math"
	"strings"

	"github.com/hapticd/hapticd/protocol/space"
)

// Key names one configuration entry (PROTOCOL 4).
type Key uint8

const (
	KeyPreset Key = iota + 1
	KeyMount
	KeyBasis
	KeyDamping
	KeyForceGate
	KeyHandedness
	KeyTorqueScaling
	KeyGravityCompensation
	KeyHomeReturn
	KeyNavigation
	KeyForceClamp
	KeyForceSlewLimit
	KeyPassivityController
)

type keyInfo struct {
	name, path string
	session    bool // session-scoped and sent in WebSocket configure
	grip       bool // applies to grips too (all keys apply to arms)
}

// keyTable is indexed by Key; never written.
var keyTable = [...]keyInfo{
	KeyPreset:              {"preset", "preset", true, true},
	KeyMount:               {"mount", "mount", true, true},
	KeyBasis:               {"basis", "basis", true, true},
	KeyDamping:             {"damping", "filters/damping", true, false},
	KeyForceGate:           {"force_gate", "filters/force_gate", true, false},
	KeyHandedness:          {"handedness", "handedness", false, false},
	KeyTorqueScaling:       {"torque_scaling", "torque_scaling", false, false},
	KeyGravityCompensation: {"gravity_compensation", "gravity_compensation", false, false},
	KeyHomeReturn:          {"home_return", "home_return", false, false},
	KeyNavigation:          {"navigation", "navigation", true, false},
	KeyForceClamp:          {"force_clamp", "passivity/force_clamp", false, false},
	KeyForceSlewLimit:      {"force_slew_limit", "passivity/force_slew_limit", false, false},
	KeyPassivityController: {"passivity_controller", "passivity/controller", false, false},
}

const numKeys = len(keyTable) - 1

func (k Key) valid() bool { return k >= KeyPreset && int(k) <= numKeys }

// Name is the key as a WebSocket configure member ("damping").
func (k Key) Name() string {
	if !k.valid() {
		return ""
	}
	return keyTable[k].name
}

// Path is the key as the tail of an HTTP config route ("filters/damping").
func (k Key) Path() string {
	if !k.valid() {
		return ""
	}
	return keyTable[k].path
}

func (k Key) String() string { return k.Name() }

// SessionScoped reports whether the entry belongs to a (session, device)
// pair: preset, mount, basis, damping, force_gate, navigation. Only these
// may be sent in a WebSocket configure; the others are device-global and
// HTTP-only.
func (k Key) SessionScoped() bool { return k.valid() && keyTable[k].session }

// AppliesTo reports whether the entry acts on devices of type dt: every
// entry on arms; preset, mount and basis on grips too (a grip has no force
// output for the others to act on).
func (k Key) AppliesTo(dt DeviceType) bool {
	if !k.valid() {
		return false
	}
	return dt == TypeArm || (dt == TypeGrip && keyTable[k].grip)
}

// NotOn is the error for entry k on a device of type dt (typeKey: the
// type's name as the request gave it) when k does not apply to dt (an
// arm's damping on a grip): over HTTP its route does not exist for that
// type, so every route and API that reaches the entry answers the same.
// It is nil when k applies.
func (k Key) NotOn(typeKey string, dt DeviceType) *Error {
	if k.AppliesTo(dt) {
		return nil
	}
	var has []string
	for _, o := range Keys() {
		if o.AppliesTo(dt) {
			has = append(has, o.Path())
		}
	}
	return Errorf(CodeUnknownRoute, "", "%s has no config entry %q: %s is an arm's entry and a grip has no force output (a grip's entries: %s)",
		typeKey, k.Path(), k.Name(), strings.Join(has, ", "))
}

// keyPathList is every key's Path in order, for messages
// ("preset, mount, ..., home_return"); never written.
var keyPathList = func() string {
	paths := make([]string, numKeys)
	for i := range paths {
		paths[i] = keyTable[i+1].path
	}
	return strings.Join(paths, ", ")
}()

// Keys lists every key in order (a copy).
func Keys() []Key {
	out := make([]Key, numKeys)
	for i := range out {
		out[i] = Key(i + 1)
	}
	return out
}

// KeyFromPath resolves an HTTP config route tail ("filters/force_gate").
func KeyFromPath(p string) (Key, bool) {
	p = strings.Trim(p, "/")
	for k := KeyPreset; int(k) <= numKeys; k++ {
		if keyTable[k].path == p {
			return k, true
		}
	}
	return 0, false
}

// keyFromNameBytes resolves a WebSocket configure member name ("force_gate").
func keyFromNameBytes(n []byte) (Key, bool) {
	for k := KeyPreset; int(k) <= numKeys; k++ {
		if keyTable[k].name == string(n) {
			return k, true
		}
	}
	return 0, false
}

// Ranges of the numeric entries (PROTOCOL 4).
const (
	DampingMax      = 20.0 // N·s/m, for scalar and each vector component
	ForceGateMax    = 1.0
	GravityScaleMax = 2.0
	// TransformScaleMin and TransformScaleMax bound the magnitude of each
	// scale component of a mount and of set_transform; a negative
	// component mirrors. Outside them the inverse map
	// (application to device, which position commands take) divides by a
	// subnormal or multiplies past float64 into Inf.
	TransformScaleMin = 1e-6
	TransformScaleMax = 1e6
)

// PresetCustom is what the preset entry reads once a mount was set. It is
// reported, never accepted as input.
const PresetCustom = space.PresetCustom

// presetNames lists the accepted presets, as protocol/space defines them;
// never written.
var presetNames = space.PresetNames()

// PresetNames lists the accepted preset names (a copy).
func PresetNames() []string { return append([]string(nil), presetNames...) }

// IdentityBasis is the basis that changes nothing.
const IdentityBasis = "XYZ"

// permutationSpellings maps every accepted spelling of a basis ("+X-Z+Y")
// to its canonical form ("X-ZY"). It is generated once from
// space.ParsePermutation, which owns the grammar, so that the per-tick
// decoder validates with one map lookup and no allocation. Never written.
var permutationSpellings, permutations = buildPermutationTables()

func buildPermutationTables() (map[string]string, []string) {
	spellings := map[string]string{}
	var tokens []string
	for _, sign := range []string{"", "+", "-"} {
		for _, axis := range []string{"X", "Y", "Z"} {
			tokens = append(tokens, sign+axis)
		}
	}
	canonical := map[string]string{}
	for _, a := range tokens {
		for _, b := range tokens {
			for _, c := range tokens {
				s := a + b + c
				p, err := space.ParsePermutation(s)
				if err != nil {
					continue
				}
				name := p.String()
				if interned, ok := canonical[name]; ok {
					name = interned
				} else {
					canonical[name] = name
				}
				spellings[s] = name
			}
		}
	}
	var all []string
	for _, p := range space.AllPermutations() {
		all = append(all, canonical[p.String()])
	}
	return spellings, all
}

// Permutations lists the 48 valid bases in canonical form (a copy).
func Permutations() []string { return append([]string(nil), permutations...) }

// CanonicalPermutation checks a basis permutation (each of X, Y, Z exactly
// once, each optionally prefixed + or -) and returns its canonical form,
// the one protocol/space prints: '-' kept, '+' dropped ("+X-Z+Y" → "X-ZY").
// Basis values decoded by this package are always canonical.
func CanonicalPermutation(s string) (string, bool) {
	p, ok := permutationSpellings[s]
	return p, ok
}

func canonicalPermutation(s []byte) (string, bool) {
	p, ok := permutationSpellings[string(s)] // no allocation: map index by converted bytes
	return p, ok
}

// Entry is one configuration value. It is sealed: the implementations are
// the value types of this package, and consumers switch on them. Every Entry
// marshals to its wire shape.
type Entry interface {
	Key() Key
	AppendJSON(dst []byte) []byte
	MarshalJSON() ([]byte, error)
	entry()
}

// Preset selects a named factory placement ({"preset": "arm_front"}).
type Preset struct{ Preset string }

// Mount places the device in application space ({"transform": {...}}).
// Decoded mounts have a unit rotation and scale components of magnitude
// TransformScaleMin..TransformScaleMax.
type Mount struct{ Transform Transform }

// Basis is a signed axis permutation in canonical form (see
// CanonicalPermutation), e.g. "XZY" or "-XZY".
type Basis struct{ Permutation string }

// Damping is velocity damping in N·s/m: a uniform Scalar, a per-axis Vector
// (application axes), or both. At least one is set; each value is 0..20.
type Damping struct {
	Scalar *float64
	Vector *Vec3
}

// ForceGate attenuates force during oscillation: Gain 0 passes the force
// untouched, 1 attenuates the most.
type ForceGate struct{ Gain float64 }

// Handedness is "left" or "right"; on the wire it is the bare string.
type Handedness string

// Handedness values.
const (
	HandednessLeft  Handedness = "left"
	HandednessRight Handedness = "right"
)

// TorqueScaling enables the arm's torque scaling.
type TorqueScaling struct{ Enabled bool }

// GravityCompensation enables gravity compensation; ScalingFactor is 0..2.
type GravityCompensation struct {
	Enabled       bool
	ScalingFactor float64
}

// HomeReturn is stored and reported; the firmware does not act on it yet.
type HomeReturn struct{ Enabled bool }

func (Preset) Key() Key              { return KeyPreset }
func (Mount) Key() Key               { return KeyMount }
func (Basis) Key() Key               { return KeyBasis }
func (Damping) Key() Key             { return KeyDamping }
func (ForceGate) Key() Key           { return KeyForceGate }
func (Handedness) Key() Key          { return KeyHandedness }
func (TorqueScaling) Key() Key       { return KeyTorqueScaling }
func (GravityCompensation) Key() Key { return KeyGravityCompensation }
func (HomeReturn) Key() Key          { return KeyHomeReturn }

func (Preset) entry()              {}
func (Mount) entry()               {}
func (Basis) entry()               {}
func (Damping) entry()             {}
func (ForceGate) entry()           {}
func (Handedness) entry()          {}
func (TorqueScaling) entry()       {}
func (GravityCompensation) entry() {}
func (HomeReturn) entry()          {}

// AppendJSON appends the entry's wire shape.
func (e Preset) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"preset":`...)
	dst = AppendString(dst, e.Preset)
	return append(dst, '}')
}

func (e Mount) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"transform":`...)
	dst = appendTransform(dst, e.Transform)
	return append(dst, '}')
}

func (e Basis) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"permutation":`...)
	dst = AppendString(dst, e.Permutation)
	return append(dst, '}')
}

func (e Damping) AppendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	if e.Scalar != nil {
		dst = append(dst, `"scalar":`...)
		dst = AppendFloat(dst, *e.Scalar)
	}
	if e.Vector != nil {
		if e.Scalar != nil {
			dst = append(dst, ',')
		}
		dst = append(dst, `"vector":`...)
		dst = appendVec3(dst, exact, *e.Vector)
	}
	return append(dst, '}')
}

func (e ForceGate) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"gain":`...)
	dst = AppendFloat(dst, e.Gain)
	return append(dst, '}')
}

func (e Handedness) AppendJSON(dst []byte) []byte { return AppendString(dst, string(e)) }

func (e TorqueScaling) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"enabled":`...)
	dst = appendBool(dst, e.Enabled)
	return append(dst, '}')
}

func (e GravityCompensation) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"enabled":`...)
	dst = appendBool(dst, e.Enabled)
	dst = append(dst, `,"scaling_factor":`...)
	dst = AppendFloat(dst, e.ScalingFactor)
	return append(dst, '}')
}

func (e HomeReturn) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"enabled":`...)
	dst = appendBool(dst, e.Enabled)
	return append(dst, '}')
}

func (e Preset) MarshalJSON() ([]byte, error)              { return e.AppendJSON(nil), nil }
func (e Mount) MarshalJSON() ([]byte, error)               { return e.AppendJSON(nil), nil }
func (e Basis) MarshalJSON() ([]byte, error)               { return e.AppendJSON(nil), nil }
func (e Damping) MarshalJSON() ([]byte, error)             { return e.AppendJSON(nil), nil }
func (e ForceGate) MarshalJSON() ([]byte, error)           { return e.AppendJSON(nil), nil }
func (e Handedness) MarshalJSON() ([]byte, error)          { return e.AppendJSON(nil), nil }
func (e TorqueScaling) MarshalJSON() ([]byte, error)       { return e.AppendJSON(nil), nil }
func (e GravityCompensation) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }
func (e HomeReturn) MarshalJSON() ([]byte, error)          { return e.AppendJSON(nil), nil }

// DampingScalar is a Damping with only a uniform value.
func DampingScalar(nsPerM float64) Damping { return Damping{Scalar: &nsPerM} }

// ScalarOrZero is the uniform damping, 0 when only a vector is set.
func (e Damping) ScalarOrZero() float64 {
	if e.Scalar == nil {
		return 0
	}
	return *e.Scalar
}

// VectorOrZero is the per-axis damping, zero when only a scalar is set.
func (e Damping) VectorOrZero() Vec3 {
	if e.Vector == nil {
		return Vec3{}
	}
	return *e.Vector
}

// Clone copies the pointed-to values, so that the copy shares nothing.
func (e Damping) Clone() Damping {
	var out Damping
	if e.Scalar != nil {
		s := *e.Scalar
		out.Scalar = &s
	}
	if e.Vector != nil {
		v := *e.Vector
		out.Vector = &v
	}
	return out
}

// Equal compares values, not pointers.
func (e Damping) Equal(o Damping) bool {
	if (e.Scalar == nil) != (o.Scalar == nil) || (e.Vector == nil) != (o.Vector == nil) {
		return false
	}
	return (e.Scalar == nil || *e.Scalar == *o.Scalar) && (e.Vector == nil || *e.Vector == *o.Vector)
}

// DefaultEntry is the value an entry has until set, and after DELETE.
func DefaultEntry(k Key) Entry {
	switch k {
	case KeyPreset:
		return Preset{Preset: "defaults"}
	case KeyMount:
		return Mount{Transform: space.IdentityTransform()}
	case KeyBasis:
		return Basis{Permutation: IdentityBasis}
	case KeyDamping:
		return DampingScalar(0)
	case KeyForceGate:
		return ForceGate{Gain: 0.3}
	case KeyHandedness:
		return HandednessRight
	case KeyTorqueScaling:
		return TorqueScaling{Enabled: true}
	case KeyGravityCompensation:
		return GravityCompensation{Enabled: true, ScalingFactor: 1}
	case KeyHomeReturn:
		return HomeReturn{Enabled: false}
	case KeyNavigation:
		return DefaultNavigation()
	case KeyForceClamp:
		return ForceClamp{MaxForceN: ForceClampDefaultN}
	case KeyForceSlewLimit:
		return ForceSlewLimit{MaxRateNPerS: ForceSlewDefaultNPerS}
	case KeyPassivityController:
		return PassivityController{Enabled: true, Scope: passivityScopes[0]}
	}
	return nil
}

// DecodeEntry decodes and validates the body of k (an HTTP config body or a
// WebSocket configure value) strictly: JSON types, finite numbers, ranges,
// grammar, required fields. null counts as absent. Unknown fields are not an
// error; DecodeEntryWarn lists them. path prefixes the paths of errors.
func DecodeEntry(k Key, data []byte, path string) (Entry, *Error) {
	return decodeEntryBytes(k, data, path, nil)
}

// DecodeEntryWarn is DecodeEntry that also returns the warnings a frame
// would carry for the same value over WebSocket (unknown_field for a member
// the entry does not have, at its path in the body; at most MaxWarnings,
// then warnings_dropped), for an HTTP answer to list: a misspelt member
// otherwise leaves its default in force and nobody hears of it.
func DecodeEntryWarn(k Key, data []byte, path string) (Entry, []Error, *Error) {
	var w bodyWarnings
	e, err := decodeEntryBytes(k, data, path, &w)
	if err != nil {
		return nil, nil, err
	}
	root := "" // path prefixes the warnings' paths as it does the errors'
	if path == "" {
		root = k.Name()
	}
	return e, w.done(root), nil
}

// DecodeStoredEntry is DecodeEntry for an entry a stored document holds as
// its member k.Name() (a profile's session level's basis), with the
// members of the entry's objects that this build does not read (a newer
// build's field inside the entry), each In its place, k.Name() first, for
// the store to write back (UnknownMember).
func DecodeStoredEntry(k Key, data []byte) (Entry, []UnknownMember, *Error) {
	if !k.valid() {
		return nil, nil, Errorf(CodeUnknownRoute, "", "unknown config key: use one of %s", keyPathList)
	}
	var doc Doc
	if err := doc.Parse(data); err != nil {
		err.Path = k.Name()
		return nil, nil, err
	}
	if err := refuseAnswerEnvelope(doc.Root(), k.Name()); err != nil {
		err.Path = k.Name()
		return nil, nil, err
	}
	at := rootPath(k.Name())
	var inner unknownMembers
	e, err := decodeEntryValue(k, doc.Root(), &at, warnings{kept: &inner})
	if err != nil {
		return nil, nil, err
	}
	return e, keptIn(e, inner).lastOnly(), nil
}

func decodeEntryBytes(k Key, data []byte, path string, collect *bodyWarnings) (Entry, *Error) {
	if !k.valid() {
		return nil, Errorf(CodeUnknownRoute, path, "unknown config key: use one of %s", keyPathList)
	}
	var doc Doc
	if err := doc.Parse(data); err != nil {
		err.Path = path
		return nil, err
	}
	w := warnings{}
	if collect != nil {
		w = collect.sink()
	}
	if err := refuseAnswerEnvelope(doc.Root(), k.Name()); err != nil {
		err.Path = path
		return nil, err
	}
	at := rootPath(path)
	if path == "" {
		at = rootPath(k.Name())
	}
	e, err := decodeEntryValue(k, doc.Root(), &at, w)
	if path == "" && err != nil {
		// The root was named after the key only for the messages.
		err.Path = trimRoot(k.Name(), err.Path)
	}
	return e, err
}

// refuseAnswerEnvelope refuses a body that is a whole answer of the HTTP
// API, {"ok": true, "data": ...}, where the value of its data member
// belongs: a user who GETs, edits and POSTs back what came. No entry or
// setting has an "ok" member, and decoding the envelope as the entry would
// put something else in force (navigation, whose members are optional,
// would be turned off). what names the entry or setting.
func refuseAnswerEnvelope(v Value, what string) *Error {
	if v.Kind() != KindObject || !v.Member("ok").Exists() {
		return nil
	}
	return Errorf(CodeInvalidValue, "", `%s: the body is a whole answer of GET ({"ok", "data"}); POST the value of its "data" member`, what)
}

// decodeEntryValue decodes one entry from a parsed value. It is the shared
// implementation behind DecodeEntry and both message codecs.
func decodeEntryValue(k Key, v Value, at *pathSeg, w warnings) (Entry, *Error) {
	switch k {
	case KeyPreset:
		return decodePreset(v, at, w)
	case KeyMount:
		return decodeMount(v, at, w)
	case KeyBasis:
		return decodeBasis(v, at, w)
	case KeyDamping:
		return decodeDamping(v, at, w)
	case KeyForceGate:
		return decodeForceGate(v, at, w)
	case KeyHandedness:
		return decodeHandedness(v, at, w)
	case KeyTorqueScaling:
		b, err := decodeEnabledOnly(v, at, w, k)
		return TorqueScaling{Enabled: b}, err
	case KeyGravityCompensation:
		return decodeGravity(v, at, w)
	case KeyHomeReturn:
		b, err := decodeEnabledOnly(v, at, w, k)
		return HomeReturn{Enabled: b}, err
	case KeyNavigation:
		return decodeNavigation(v, at, w)
	case KeyForceClamp:
		return decodeForceClamp(v, at, w)
	case KeyForceSlewLimit:
		return decodeForceSlewLimit(v, at, w)
	case KeyPassivityController:
		return decodePassivityController(v, at, w)
	}
	return nil, errAt(CodeInternal, at, "unknown key %d", k)
}

func decodePreset(v Value, at *pathSeg, w warnings) (Preset, *Error) {
	val, c, err := soleMember(v, at, w, "preset", `{"preset": "arm_front"}`)
	if err != nil {
		return Preset{}, err
	}
	if !val.Exists() {
		return Preset{}, errAt(CodeInvalidValue, at, `preset needs "preset": one of %s`, nameList(presetNames))
	}
	name, known, err := readEnum(val, &c, presetNames)
	if err != nil {
		return Preset{}, err
	}
	if !known {
		if name == PresetCustom {
			// What GET answers once a mount is set, posted back: say
			// where that mount is set, not only which names exist.
			return Preset{}, errAt(CodeUnknownPreset, &c, `preset "custom" is what the preset reads after a mount was set; it is not a preset to pick: set the mount entry itself, or use one of %s`, nameList(presetNames))
		}
		return Preset{}, errAt(CodeUnknownPreset, &c, "unknown preset %q: use one of %s", name, nameList(presetNames))
	}
	return Preset{Preset: name}, nil
}

func decodeBasis(v Value, at *pathSeg, w warnings) (Basis, *Error) {
	val, c, err := soleMember(v, at, w, "permutation", `{"permutation": "XZY"}`)
	if err != nil {
		return Basis{}, err
	}
	if !val.Exists() {
		return Basis{}, errAt(CodeInvalidValue, at, `basis needs "permutation", e.g. {"permutation": "XZY"}`)
	}
	b, ok := val.StringBytes()
	if !ok {
		return Basis{}, errAt(CodeInvalidValue, &c, "permutation must be a string like \"XZY\", got %s", val.Kind())
	}
	p, ok := canonicalPermutation(b)
	if !ok {
		return Basis{}, errAt(CodeInvalidPermutation, &c, "invalid permutation %q: give each of X, Y, Z exactly once, each optionally prefixed + or - (e.g. \"XZY\", \"-XZY\")", b)
	}
	return Basis{Permutation: p}, nil
}

func decodeMount(v Value, at *pathSeg, w warnings) (Mount, *Error) {
	tv, tat, err := mountTransform(v, at, w)
	if err != nil {
		return Mount{}, err
	}
	t, err := decodeTransform(tv, &tat, w)
	return Mount{Transform: t}, err
}

// mountTransform is the transform member of a mount body, which it needs.
func mountTransform(v Value, at *pathSeg, w warnings) (Value, pathSeg, *Error) {
	tv, tat, err := soleMember(v, at, w, "transform", `{"transform": {"position": {...}, "rotation": {...}, "scale": {...}}}`)
	if err == nil && !tv.Exists() {
		err = errAt(CodeInvalidValue, at, `mount needs "transform": {"position", "rotation", "scale"} (each optional)`)
	}
	return tv, tat, err
}

// decodeStoredMount decodes a mount read back from a file (a profile), which
// an older build may have written: its scale keeps the rule the wire had
// then (each component non-zero, finite), and only a component whose
// inverse is not finite is refused, so that a profile saved with a scale
// outside TransformScaleMin..TransformScaleMax is not lost on upgrade.
func decodeStoredMount(v Value, at *pathSeg, w warnings) (Mount, *Error) {
	tv, tat, err := mountTransform(v, at, w)
	if err != nil {
		return Mount{}, err
	}
	p, err := decodeTransformPatch(tv, &tat, w)
	if err != nil {
		return Mount{}, err
	}
	for i, comp := range [3]float64{p.Scale.X, p.Scale.Y, p.Scale.Z} {
		if p.HasScale && math.IsInf(1/comp, 0) {
			c := tat.child("scale")
			return Mount{}, errAt(CodeOutOfRange, &c, "stored scale %s %g has no finite inverse: set the mount again (deleting the file resets its other entries too)", vec3Names[i], comp)
		}
	}
	return Mount{Transform: p.Apply(space.IdentityTransform())}, nil
}

func decodeTransform(v Value, at *pathSeg, w warnings) (Transform, *Error) {
	p, err := decodeViewTransformPatch(v, at, w)
	if err != nil {
		return Transform{}, err
	}
	return p.Apply(space.IdentityTransform()), nil
}

// decodeViewTransformPatch decodes a transform that places a session's view
// of a device (a mount, set_transform): decodeTransformPatch, with each
// scale component's magnitude within TransformScaleMin..TransformScaleMax.
// An SDF's pose has its own bound, on its scale combined with the
// session's (effects.go).
func decodeViewTransformPatch(v Value, at *pathSeg, w warnings) (TransformPatch, *Error) {
	p, err := decodeTransformPatch(v, at, w)
	if err != nil || !p.HasScale {
		return p, err
	}
	for i, comp := range [3]float64{p.Scale.X, p.Scale.Y, p.Scale.Z} {
		if a := math.Abs(comp); a < TransformScaleMin || a > TransformScaleMax {
			c := at.child("scale")
			return p, errAt(CodeOutOfRange, &c, "scale %s %g is out of range: each component's magnitude must be %g..%g (a negative one mirrors; unit scale is {\"x\": 1, \"y\": 1, \"z\": 1})",
				vec3Names[i], comp, TransformScaleMin, TransformScaleMax)
		}
	}
	return p, nil
}

// TransformPatch is a transform of which each part may be missing: a
// set_transform command, or a mount body before the identity fills what it
// leaves out.
type TransformPatch struct {
	Position                           Vec3
	Rotation                           Quat // normalised
	Scale                              Vec3 // components non-zero
	HasPosition, HasRotation, HasScale bool
}

// Given reports whether p sets any part.
func (p TransformPatch) Given() bool { return p.HasPosition || p.HasRotation || p.HasScale }

// Apply returns t with the parts p gives replaced.
func (p TransformPatch) Apply(t Transform) Transform {
	if p.HasPosition {
		t.Position = p.Position
	}
	if p.HasRotation {
		t.Rotation = p.Rotation
	}
	if p.HasScale {
		t.Scale = p.Scale
	}
	return t
}

// decodeTransformPatch decodes {position?, rotation?, scale?}. A null part
// is absent (and removes an earlier occurrence of the same key).
func decodeTransformPatch(v Value, at *pathSeg, w warnings) (TransformPatch, *Error) {
	var t TransformPatch
	if e := expectObject(v, at, `{"position": {...}, "rotation": {...}, "scale": {...}}`); e != nil {
		return t, e
	}
	for it := v.Members(); it.Next(); {
		val := it.Value()
		switch {
		case (it.KeyIs("position") || it.KeyIs("rotation") || it.KeyIs("scale")) && it.Superseded():
			// Given again later: the last occurrence counts.
		case it.KeyIs("position"):
			t.HasPosition = val.Exists()
			if !t.HasPosition {
				continue
			}
			c := at.child("position")
			p, err := readVec3(val, &c, w)
			if err != nil {
				return t, err
			}
			t.Position = p
		case it.KeyIs("rotation"):
			t.HasRotation = val.Exists()
			if !t.HasRotation {
				continue
			}
			c := at.child("rotation")
			q, err := readQuat(val, &c, w)
			if err != nil {
				return t, err
			}
			// Normalize would turn the zero quaternion into the identity;
			// input that names no rotation is an error. Any other (finite:
			// readQuat saw to it) is normalised, {"w": 1e200} and
			// {"w": 1e-200} to the identity as {"w": 2} is; one already of
			// unit length within rounding keeps its bits, so that a mount
			// read back (GET, a profile, a recording) and sent again is the
			// same mount: normalising {"w": 1, "x": 1} gave w
			// 0.7071067811865475, and that sent again 0.7071067811865476.
			if q == (Quat{}) {
				return t, errAt(CodeOutOfRange, &c, "rotation must be a non-zero quaternion: identity is {\"w\": 1, \"x\": 0, \"y\": 0, \"z\": 0}")
			}
			t.Rotation = quatStable(q)
		case it.KeyIs("scale"):
			t.HasScale = val.Exists()
			if !t.HasScale {
				continue
			}
			c := at.child("scale")
			s, err := readVec3(val, &c, w)
			if err != nil {
				return t, err
			}
			if s.X == 0 || s.Y == 0 || s.Z == 0 {
				return t, errAt(CodeOutOfRange, &c, "scale components must be non-zero: unit scale is {\"x\": 1, \"y\": 1, \"z\": 1}")
			}
			t.Scale = s
		default:
			w.unknownField(at, &it)
		}
	}
	return t, nil
}

// dampingParts is a decoded damping before its pointers exist, so that a
// decoder can compare it with a previous value without allocating.
type dampingParts struct {
	scalar               float64
	vector               Vec3
	hasScalar, hasVector bool
}

func (p dampingParts) damping() Damping {
	var out Damping
	if p.hasScalar {
		s := p.scalar
		out.Scalar = &s
	}
	if p.hasVector {
		v := p.vector
		out.Vector = &v
	}
	return out
}

// equal reports whether d holds the same values as p.
func (p dampingParts) equal(d Damping) bool {
	return p.hasScalar == (d.Scalar != nil) && p.hasVector == (d.Vector != nil) &&
		(!p.hasScalar || *d.Scalar == p.scalar) && (!p.hasVector || *d.Vector == p.vector)
}

func decodeDamping(v Value, at *pathSeg, w warnings) (Damping, *Error) {
	p, err := decodeDampingParts(v, at, w)
	if err != nil {
		return Damping{}, err
	}
	return p.damping(), nil
}

func decodeDampingParts(v Value, at *pathSeg, w warnings) (dampingParts, *Error) {
	var p dampingParts
	if e := expectObject(v, at, `{"scalar": 2} or {"vector": {"x": 1, "y": 1, "z": 1}}`); e != nil {
		return p, e
	}
	for it := v.Members(); it.Next(); {
		val := it.Value()
		switch {
		case (it.KeyIs("scalar") || it.KeyIs("vector")) && it.Superseded():
			// Given again later: the last occurrence counts.
		case it.KeyIs("scalar"):
			if !val.Exists() {
				p.hasScalar = false
				continue
			}
			c := at.child("scalar")
			f, err := readRange(val, &c, 0, DampingMax)
			if err != nil {
				return p, err
			}
			p.scalar, p.hasScalar = f, true
		case it.KeyIs("vector"):
			if !val.Exists() {
				p.hasVector = false
				continue
			}
			c := at.child("vector")
			d, err := readVec3(val, &c, w)
			if err != nil {
				return p, err
			}
			for i, comp := range [3]float64{d.X, d.Y, d.Z} {
				if comp < 0 || comp > DampingMax {
					cc := c.child(vec3Names[i])
					return p, errAt(CodeOutOfRange, &cc, "damping vector %s %g is out of range 0..%g", vec3Names[i], comp, DampingMax)
				}
			}
			p.vector, p.hasVector = d, true
		default:
			w.unknownField(at, &it)
		}
	}
	if !p.hasScalar && !p.hasVector {
		return p, errAt(CodeDampingEmpty, at, `damping needs "scalar" or "vector"`)
	}
	return p, nil
}

func decodeForceGate(v Value, at *pathSeg, w warnings) (ForceGate, *Error) {
	val, c, err := soleMember(v, at, w, "gain", `{"gain": 0.3}`)
	if err != nil {
		return ForceGate{}, err
	}
	if !val.Exists() {
		return ForceGate{}, errAt(CodeInvalidValue, at, `force_gate needs "gain" (0..1), e.g. {"gain": 0.3}`)
	}
	f, err := readRange(val, &c, 0, ForceGateMax)
	if err != nil {
		return ForceGate{}, err
	}
	return ForceGate{Gain: f}, nil
}

func decodeHandedness(v Value, at *pathSeg, w warnings) (Handedness, *Error) {
	sv := v
	c := *at
	if v.Kind() == KindObject {
		sv, c, _ = soleMember(v, at, w, "handedness", "") // an object: no error
		if !sv.Exists() {
			return "", errAt(CodeInvalidValue, at, `handedness needs "left" or "right", e.g. {"handedness": "left"}`)
		}
	}
	b, ok := sv.StringBytes()
	if !ok {
		return "", errAt(CodeInvalidValue, &c, `handedness must be "left" or "right" (or {"handedness": "left"}), got %s`, sv.Kind())
	}
	switch string(b) {
	case "left":
		return HandednessLeft, nil
	case "right":
		return HandednessRight, nil
	}
	return "", errAt(CodeInvalidValue, &c, `handedness %q is not "left" or "right"`, b)
}

func decodeEnabledOnly(v Value, at *pathSeg, w warnings, k Key) (bool, *Error) {
	val, c, err := soleMember(v, at, w, "enabled", `{"enabled": true}`)
	if err != nil {
		return false, err
	}
	if !val.Exists() {
		return false, errAt(CodeInvalidValue, at, `%s needs "enabled": true or false`, k.Name())
	}
	return readBool(val, &c)
}

func decodeGravity(v Value, at *pathSeg, w warnings) (GravityCompensation, *Error) {
	if e := expectObject(v, at, `{"enabled": true, "scaling_factor": 1}`); e != nil {
		return GravityCompensation{}, e
	}
	var out GravityCompensation
	var seenEnabled, seenFactor bool
	for it := v.Members(); it.Next(); {
		val := it.Value()
		switch {
		case (it.KeyIs("enabled") || it.KeyIs("scaling_factor")) && it.Superseded():
			// Given again later: the last occurrence counts.
		case it.KeyIs("enabled"):
			if !val.Exists() {
				seenEnabled = false
				continue
			}
			c := at.child("enabled")
			b, err := readBool(val, &c)
			if err != nil {
				return out, err
			}
			out.Enabled, seenEnabled = b, true
		case it.KeyIs("scaling_factor"):
			if !val.Exists() {
				seenFactor = false
				continue
			}
			c := at.child("scaling_factor")
			f, err := readRange(val, &c, 0, GravityScaleMax)
			if err != nil {
				return out, err
			}
			out.ScalingFactor, seenFactor = f, true
		default:
			w.unknownField(at, &it)
		}
	}
	if !seenEnabled || !seenFactor {
		return GravityCompensation{}, errAt(CodeInvalidValue, at, `gravity_compensation needs "enabled" and "scaling_factor" (0..2), e.g. {"enabled": true, "scaling_factor": 1}`)
	}
	return out, nil
}
