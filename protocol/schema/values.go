package schema

import (
	"sort"

	"github.com/hapticd/hapticd/protocol"
)

// Helpers that write the two flavours of object: what the service writes
// (closed: a member the schema does not name fails validation, so a field
// added to the encoder without the schema fails a test) and what it accepts
// (open: unknown members are ignored and reported as warnings, so a schema
// that rejected them would lie).

// closed is an object with exactly props, of which required must appear.
func closed(props Schema, required ...string) Schema {
	if required == nil {
		required = []string{}
	}
	return Schema{"type": "object", "properties": props, "required": required, "additionalProperties": false}
}

// allRequired is closed with every property required.
func allRequired(props Schema) Schema {
	return closed(props, sortedKeys(props)...)
}

// open is an accepted input object: props are checked, other members are
// accepted (and reported as warnings by the service).
func open(props Schema, required ...string) Schema {
	s := Schema{"type": "object", "properties": props, "description": unknownMembers}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

const unknownMembers = "Other members are accepted, ignored and reported as warnings."

// orNull admits null, which the service reads as absent for an optional
// field.
func orNull(s Schema) Schema { return Schema{"anyOf": []Schema{s, {"type": "null"}}} }

func number() Schema { return Schema{"type": "number"} }

func numberIn(lo, hi float64) Schema {
	return Schema{"type": "number", "minimum": lo, "maximum": hi}
}

func boolean() Schema { return Schema{"type": "boolean"} }

func str() Schema { return Schema{"type": "string"} }

func enum(values []string) Schema {
	return Schema{"type": "string", "enum": append([]string(nil), values...)}
}

func constant(v any) Schema { return Schema{"const": v} }

func arrayOf(items Schema) Schema { return Schema{"type": "array", "items": items} }

func sortedKeys(m Schema) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// components is an object of the named numbers, each matching item.
func components(names []string, item Schema, input bool) Schema {
	props := Schema{}
	for _, n := range names {
		props[n] = item
	}
	if input {
		return open(props, names...)
	}
	return closed(props, names...)
}

var (
	vec3Names    = []string{"x", "y", "z"}
	quatNames    = []string{"w", "x", "y", "z"}
	angles3Names = []string{"a0", "a1", "a2"}
)

// defineValues defines the wire value types of PROTOCOL 1.2, as written
// and as accepted.
func defineValues(s *Set) {
	s.Define("vec3", components(vec3Names, number(), false))
	s.Define("quat", components(quatNames, number(), false))
	s.Define("angles3", components(angles3Names, number(), false))
	s.Define("transform", allRequired(Schema{"position": Ref("vec3"), "rotation": Ref("quat"), "scale": Ref("vec3")}))

	s.Define("vec3.input", components(vec3Names, number(), true))
	s.Define("quat.input", components(quatNames, number(), true))
	s.Define("angles3.input", components(angles3Names, number(), true))
	// A rotation names a non-zero quaternion; a mount's or set_transform's
	// scale component has a magnitude within
	// protocol.TransformScaleMin..Max, either sign (docs/protocol.md,
	// Coordinates).
	nonZeroQuat := components(quatNames, number(), true)
	nonZeroQuat["not"] = Schema{"properties": Schema{"w": constant(0), "x": constant(0), "y": constant(0), "z": constant(0)}}
	scaleComponent := Schema{"type": "number", "anyOf": []Schema{
		{"minimum": protocol.TransformScaleMin, "maximum": protocol.TransformScaleMax},
		{"minimum": -protocol.TransformScaleMax, "maximum": -protocol.TransformScaleMin},
	}}
	s.Define("transform.input", open(Schema{
		"position": orNull(Ref("vec3.input")),
		"rotation": orNull(nonZeroQuat),
		"scale":    orNull(components(vec3Names, scaleComponent, true)),
	}))
	// An SDF effect's pose: its position within ±EffectLengthMax like
	// every effect's point, its scale positive (and uniform, which a
	// schema cannot say, and bounded together with the session's, which
	// the service checks: docs/effects.md).
	s.Define("sdf-transform.input", open(Schema{
		"position": orNull(components(vec3Names, numberIn(-protocol.EffectLengthMax, protocol.EffectLengthMax), true)),
		"rotation": orNull(nonZeroQuat),
		"scale":    orNull(components(vec3Names, Schema{"type": "number", "exclusiveMinimum": 0}, true)),
	}))
}

// basisSpellings lists every spelling of a basis the decoder accepts
// ("+X-Z+Y" beside its canonical "X-ZY"), found by asking
// protocol.CanonicalPermutation, which owns the grammar.
func basisSpellings() []string {
	var tokens []string
	for _, sign := range []string{"", "+", "-"} {
		for _, axis := range []string{"X", "Y", "Z"} {
			tokens = append(tokens, sign+axis)
		}
	}
	var out []string
	for _, a := range tokens {
		for _, b := range tokens {
			for _, c := range tokens {
				if _, ok := protocol.CanonicalPermutation(a + b + c); ok {
					out = append(out, a+b+c)
				}
			}
		}
	}
	return out
}
