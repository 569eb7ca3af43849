package schema

import (
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/hapticd/hapticd/protocol"
)

// EntryName is the name of the schema of configuration entry k as the
// service answers it ("entry.damping"); EntryName(k)+".input" is the body
// it accepts.
func EntryName(k protocol.Key) string { return "entry." + k.Name() }

// SettingName is the name of the schema of setting k's value
// ("setting.devices.force_scale"); SettingName(k)+".input" is the body
// it accepts.
func SettingName(k protocol.SettingKey) string {
	return "setting." + strings.ReplaceAll(k.Path(), "/", ".")
}

// DeprecatedBodyName is the name of the schema of a deprecated route's body
// ("deprecated.force_scale").
func DeprecatedBodyName(r protocol.DeprecatedRoute) string {
	return "deprecated." + strings.ReplaceAll(strings.Trim(r.Path, "/"), "/", ".")
}

// ErrorEnvelopeName is the name of the error envelope answered with status
// (its code is one of that status's codes), or of any error envelope when
// status is 0.
func ErrorEnvelopeName(status int) string {
	if status == 0 {
		return "error-envelope"
	}
	return "error-envelope." + strconv.Itoa(status)
}

// ErrorStatuses lists the HTTP statuses of the error table's codes that an
// HTTP answer may carry, ascending: a status only frames meet (409,
// device_busy) is no HTTP answer.
func ErrorStatuses() []int {
	seen := map[int]bool{}
	var out []int
	for _, c := range protocol.Codes() {
		if st := c.HTTPStatus(); c.OverHTTP() && !seen[st] {
			seen[st] = true
			out = append(out, st)
		}
	}
	sort.Ints(out)
	return out
}

// codeNames lists the codes a frame's errors may carry (where 0), or those
// an HTTP answer may carry (where httpAny) or carries with status.
func codeNames(where int) []string {
	var out []string
	for _, c := range protocol.Codes() {
		switch {
		case where == inFrames,
			c.OverHTTP() && (where == httpAny || c.HTTPStatus() == where):
			out = append(out, string(c))
		}
	}
	return out
}

// What codeNames lists besides one status's codes.
const (
	inFrames = 0
	httpAny  = -1
)

// defineErrors defines the "errors"/"warnings" entry of frames and the
// HTTP error envelopes, from the error table.
func defineErrors(s *Set) {
	s.Define("error", closed(Schema{
		"code":    enum(codeNames(inFrames)),
		"message": str(),
		"path":    Schema{"type": "string", "minLength": 1, "description": "where in the message: arm3[0].configure.damping"},
	}, "code", "message"))
	for _, st := range append([]int{0}, ErrorStatuses()...) {
		about := "An HTTP error answer."
		codes := codeNames(httpAny)
		if st != 0 {
			about = "An HTTP error answer with status " + strconv.Itoa(st) + " " + http.StatusText(st) + "."
			codes = codeNames(st)
		}
		sch := closed(Schema{
			"ok":    constant(false),
			"error": Schema{"type": "string", "description": "what is wrong and how to fix it"},
			"code":  enum(codes),
			"path":  Schema{"type": "string", "minLength": 1},
			// A write to several targets that failed partway names the
			// targets that took the change before it failed.
			"applied_to": Schema{"type": "array", "items": closed(Schema{
				"device_type": str(),
				"device_id":   Schema{"type": "string", "minLength": 1},
				"session_id":  Schema{"type": "integer", "minimum": 1},
			}, "device_type", "device_id")},
		}, "ok", "error", "code")
		if st == 0 {
			s.Publish(ErrorEnvelopeName(0), about, sch)
		} else {
			sch["description"] = about
			s.Define(ErrorEnvelopeName(st), sch)
		}
	}
}

// Envelope is the answer {"ok": true, "data": data} of a config, settings
// or list route (PROTOCOL 3.1); with applied, the "applied_to" list that
// POST and DELETE of config routes always add, whose items are appliedTo
// (empty: a DELETE of every session's entry found no session); with
// warning, the "warnings" a POST answer carries when its body had members
// the service ignored, whose items are warning (the "error" definition, as
// a frame's warnings).
func Envelope(data, appliedTo, warning Schema) Schema {
	props := Schema{"ok": constant(true), "data": data}
	if warning != nil {
		props["warnings"] = bodyWarnings(warning)
	}
	if appliedTo == nil {
		return closed(props, "ok", "data")
	}
	props["applied_to"] = Schema{"type": "array", "items": appliedTo}
	return closed(props, "ok", "data", "applied_to")
}

// bodyWarnings is the "warnings" member a POST answer carries when its body
// had members the service ignored: the entries of a frame's warnings.
func bodyWarnings(item Schema) Schema {
	return Schema{"type": "array", "items": item, "minItems": 1,
		"description": "what the body said that the service ignored (unknown_field), as a frame's warnings list it; absent when nothing was"}
}

// OKName is the answer {"ok": true} of a deprecated route.
const OKName = "ok"

// defineEntries defines every configuration entry as answered and as
// accepted (PROTOCOL 4), from protocol's tables and ranges.
func defineEntries(s *Set) {
	presetsOut := append(protocol.PresetNames(), protocol.PresetCustom)
	damping := numberIn(0, protocol.DampingMax)
	out := map[protocol.Key]Schema{
		protocol.KeyPreset:        allRequired(Schema{"preset": enum(presetsOut)}),
		protocol.KeyMount:         allRequired(Schema{"transform": Ref("transform")}),
		protocol.KeyBasis:         allRequired(Schema{"permutation": enum(protocol.Permutations())}),
		protocol.KeyDamping:       withMinProperties(closed(Schema{"scalar": damping, "vector": components(vec3Names, damping, false)}), 1),
		protocol.KeyForceGate:     allRequired(Schema{"gain": numberIn(0, protocol.ForceGateMax)}),
		protocol.KeyHandedness:    enum([]string{string(protocol.HandednessLeft), string(protocol.HandednessRight)}),
		protocol.KeyTorqueScaling: allRequired(Schema{"enabled": boolean()}),
		protocol.KeyGravityCompensation: allRequired(Schema{
			"enabled": boolean(), "scaling_factor": numberIn(0, protocol.GravityScaleMax)}),
		protocol.KeyHomeReturn: allRequired(Schema{"enabled": boolean()}),
	}
	hands := enum([]string{string(protocol.HandednessLeft), string(protocol.HandednessRight)})
	in := map[protocol.Key]Schema{
		protocol.KeyPreset: open(Schema{"preset": enum(protocol.PresetNames())}, "preset"),
		protocol.KeyMount:  open(Schema{"transform": Ref("transform.input")}, "transform"),
		protocol.KeyBasis:  open(Schema{"permutation": enum(basisSpellings())}, "permutation"),
		protocol.KeyDamping: withAnyOf(open(Schema{
			"scalar": orNull(damping),
			"vector": orNull(components(vec3Names, damping, true)),
		}), present("scalar"), present("vector")),
		protocol.KeyForceGate: open(Schema{"gain": numberIn(0, protocol.ForceGateMax)}, "gain"),
		protocol.KeyHandedness: Schema{"anyOf": []Schema{hands,
			open(Schema{"handedness": hands}, "handedness")}},
		protocol.KeyTorqueScaling: open(Schema{"enabled": boolean()}, "enabled"),
		protocol.KeyGravityCompensation: open(Schema{
			"enabled": boolean(), "scaling_factor": numberIn(0, protocol.GravityScaleMax)}, "enabled", "scaling_factor"),
		protocol.KeyHomeReturn: open(Schema{"enabled": boolean()}, "enabled"),
	}
	extraEntries(out, in)
	for _, k := range protocol.Keys() {
		scope := "device-global, HTTP only"
		if k.SessionScoped() {
			scope = "session-scoped"
		}
		s.Publish(EntryName(k), "Configuration entry "+k.Name()+" as the service answers it ("+scope+").", out[k])
		s.Publish(EntryName(k)+".input", "Configuration entry "+k.Name()+" as the service accepts it: the body of POST /{type}/{id}/config/"+k.Path()+".", in[k])
	}
}

func withMinProperties(s Schema, n int) Schema {
	s["minProperties"] = n
	return s
}

func withAnyOf(s Schema, alternatives ...Schema) Schema {
	s["anyOf"] = alternatives
	return s
}

// present requires member name with a value other than null.
func present(name string) Schema {
	return Schema{"required": []string{name}, "properties": Schema{name: Schema{"not": Schema{"type": "null"}}}}
}

// defineSettings defines every setting's value as answered and accepted,
// and the nested document of GET /settings, from the settings table.
func defineSettings(s *Set) {
	doc := Schema{}
	defaults := protocol.DefaultSettings()
	for _, k := range protocol.SettingKeys() {
		var v Schema
		switch defaults.Get(k).(type) {
		case float64:
			v = numberIn(0, protocol.ForceScaleMax)
		default:
			v = boolean()
		}
		s.Publish(SettingName(k), "Setting "+k.Path()+" as the service answers it.", v)
		s.Publish(SettingName(k)+".input", "The body of POST /settings/"+k.Path()+": {\"value\": v} or the bare v.",
			Schema{"anyOf": []Schema{Ref(SettingName(k)), {"type": "object", "properties": Schema{"value": Ref(SettingName(k))}, "required": []string{"value"}}}})
		// Nest the value under its path: devices/force_scale becomes
		// {"devices": {"force_scale": v}}.
		parts := strings.Split(k.Path(), "/")
		at := doc
		for _, p := range parts[:len(parts)-1] {
			next, ok := at[p].(Schema)
			if !ok {
				next = Schema{}
				at[p] = next
			}
			at = next
		}
		at[parts[len(parts)-1]] = Ref(SettingName(k))
	}
	s.Publish("settings", "Every setting, as GET /settings answers them.", nested(doc))
}

// nested turns a tree of property maps into closed objects.
func nested(tree Schema) Schema {
	props := Schema{}
	for k, v := range tree {
		sub := v.(Schema)
		if _, isRef := sub["$ref"]; isRef {
			props[k] = sub
			continue
		}
		props[k] = nested(sub)
	}
	return allRequired(props)
}

// defineDeprecatedBodies defines the body of each deprecated route as
// clients send it, from the deprecation table: the fields Translate reads
// are required with their JSON type.
func defineDeprecatedBodies(s *Set) {
	s.Publish(OKName, "The answer of a deprecated route: {\"ok\": true}, and \"warnings\" when its body had members the route does not read.", closed(Schema{"ok": constant(true), "warnings": bodyWarnings(Ref("error"))}, "ok"))
	for _, r := range protocol.DeprecatedRoutes() {
		props, required := Schema{}, []string{}
		if r.Key != 0 {
			props["device_id"] = Schema{"type": "string", "minLength": 1}
			required = append(required, "device_id")
		}
		for _, f := range r.LegacyFields() {
			// Translate checks the value as the replacement does: its
			// schema is the replacement's (force_scale 0..1, a handedness
			// of left or right), not the bare JSON type.
			props[f.Name] = replacementValue(s, r, f)
			required = append(required, f.Name)
		}
		s.Publish(DeprecatedBodyName(r), "The body of the deprecated POST "+r.Path+" as clients send it, e.g. "+r.LegacyBody+"; use "+r.Replacement+".",
			open(props, required...))
	}
}

// replacementValue is the schema of legacy field f of route r: the
// setting's value, or the member f.To of the replacement entry's accepted
// body; the bare JSON type if neither is defined.
func replacementValue(s *Set, r protocol.DeprecatedRoute, f protocol.LegacyField) Schema {
	if r.Setting != 0 && f.To == "" && s.Has(SettingName(r.Setting)) {
		return Ref(SettingName(r.Setting))
	}
	if r.Key != 0 {
		if m, ok := memberSchema(s.defs[EntryName(r.Key)+".input"], f.To); ok {
			return m
		}
	}
	return Schema{"type": jsonType(f.Kind)}
}

// memberSchema finds the schema of member name in an object schema, or in
// one of its alternatives (anyOf, oneOf).
func memberSchema(sch Schema, name string) (Schema, bool) {
	if props, ok := sch["properties"].(Schema); ok {
		if m, ok := props[name].(Schema); ok {
			return m, true
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		alts, _ := sch[k].([]Schema)
		for _, a := range alts {
			if m, ok := memberSchema(a, name); ok {
				return m, true
			}
		}
	}
	return nil, false
}

func jsonType(k protocol.JSONKind) string {
	switch k {
	case protocol.KindBool:
		return "boolean"
	case protocol.KindNumber:
		return "number"
	case protocol.KindString:
		return "string"
	case protocol.KindObject:
		return "object"
	case protocol.KindArray:
		return "array"
	}
	return "null"
}
