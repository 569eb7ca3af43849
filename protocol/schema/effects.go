package schema

import (
	"slices"

	"github.com/hapticd/hapticd/protocol"
)

// Schema names of the effects, navigation and passivity documents.
const (
	EffectsUpdateInput = "effects-update.input" // a device entry's "effects"
	EffectsInForce     = "effects-in-force"     // data of GET /{type}/{id}/effects
	NavigationView     = "navigation-view"      // data of GET .../config/navigation
	StateEffects       = "arm-state.effects"
	StatePassivity     = "arm-state.passivity"
	StateNavigation    = "arm-state.navigation"
)

// nonZero is an accepted vector of names (every one required) that is not
// the zero vector: directions, normals and angle pairs, which the decoder
// normalises whatever their magnitude and refuses only when zero.
func nonZero(names []string, item Schema) Schema {
	s := components(names, item, true)
	zero := Schema{}
	for _, n := range names {
		zero[n] = constant(0)
	}
	s["not"] = Schema{"properties": zero}
	return s
}

// point is a position or centre of an effect, each component within
// ±EffectLengthMax (the decoder's effectReader.point).
func point(input bool) Schema {
	return components(vec3Names, numberIn(-protocol.EffectLengthMax, protocol.EffectLengthMax), input)
}

func lengthIn(hi float64) Schema {
	return Schema{"type": "number", "exclusiveMinimum": 0, "maximum": hi}
}

// sdfShape is the SDF shape of protocol's primitive catalogue, as written
// (closed) or accepted (input), one alternative per primitive.
func sdfShape(input bool, maxLength float64) Schema {
	return sdfShapeOf(protocol.SDFPrimitiveNames(), input, maxLength)
}

// sdfShapeOf is sdfShape of the primitives names alone.
func sdfShapeOf(names []string, input bool, maxLength float64) Schema {
	var alts []Schema
	vec := func(item Schema) Schema { return components(vec3Names, item, input) }
	for _, name := range names {
		params := Schema{}
		var required []string
		for _, p := range protocol.SDFPrimitiveParams(name) {
			var ps Schema
			switch p.Kind {
			case "length":
				ps = lengthIn(maxLength)
			case "offset":
				ps = numberIn(-maxLength, maxLength)
			case "point":
				ps = vec(numberIn(-maxLength, maxLength))
			case "extents":
				ps = vec(lengthIn(maxLength))
			case "normal":
				// Bounded as a number, not as a length (normalised).
				ps = vec(numberIn(-protocol.SDFLengthMax, protocol.SDFLengthMax))
				if input {
					ps = nonZero(vec3Names, numberIn(-protocol.SDFLengthMax, protocol.SDFLengthMax))
				}
			case "unit_pair":
				ps = components([]string{"x", "y"}, number(), input)
				if input {
					ps = nonZero([]string{"x", "y"}, number())
				}
			}
			params[p.Name] = ps
			required = append(required, p.Name)
		}
		if input {
			alts = append(alts, open(Schema{"primitive": constant(name), "parameters": open(params, required...)}, "primitive", "parameters"))
		} else {
			alts = append(alts, closed(Schema{"primitive": constant(name), "parameters": closed(params, required...)}, "primitive", "parameters"))
		}
	}
	return Schema{"oneOf": alts}
}

// effectProps are the members of each effect type beside id, type and
// ttl_ms; required lists those without a default.
func effectProps(t protocol.EffectType, input bool) (props Schema, required []string) {
	vec := Ref("vec3")
	quat := Ref("quat")
	dir := Ref("vec3") // a direction or normal: non-zero, normalised
	if input {
		vec, quat, dir = Ref("vec3.input"), Ref("quat.input"), nonZero(vec3Names, number())
		// A box's rotation names one: not the zero quaternion.
		quat = nonZero(quatNames, number())
	}
	pt := point(input)
	stiffness := numberIn(0, protocol.EffectStiffnessMax)
	damping := numberIn(0, protocol.EffectDampingMax)
	force := numberIn(0, protocol.EffectForceMax)
	length := lengthIn(protocol.EffectLengthMax)
	keep := enum([]string{protocol.KeepInside.String(), protocol.KeepOutside.String()})
	switch t {
	case protocol.EffectSpring:
		return Schema{"anchor": enum([]string{"point", "line", "plane"}), "position": pt, "direction": dir,
			"stiffness": stiffness, "damping": damping}, []string{"position", "stiffness"}
	case protocol.EffectDamper:
		return Schema{"scalar": damping, "vector": components(vec3Names, damping, input)}, nil
	case protocol.EffectFriction:
		return Schema{"force": force, "slip_velocity": numberIn(protocol.FrictionSlipMinMps, protocol.FrictionSlipMaxMps)}, []string{"force"}
	case protocol.EffectWall:
		return Schema{"position": pt, "normal": dir, "stiffness": stiffness, "damping": damping}, []string{"position", "normal", "stiffness"}
	case protocol.EffectLimitSphere:
		return Schema{"center": pt, "radius": length, "keep": keep, "stiffness": stiffness, "damping": damping},
			[]string{"center", "radius", "stiffness"}
	case protocol.EffectLimitBox:
		return Schema{"center": pt, "half_extents": components(vec3Names, length, input), "rotation": quat, "keep": keep,
			"stiffness": stiffness, "damping": damping}, []string{"center", "half_extents", "stiffness"}
	case protocol.EffectField:
		row := Schema{"type": "array", "items": numberIn(-protocol.EffectStiffnessMax, protocol.EffectStiffnessMax), "minItems": 3, "maxItems": 3}
		return Schema{"force": vec, "jacobian": Schema{"type": "array", "items": row, "minItems": 3, "maxItems": 3,
			"description": "rows of ∂F/∂x, N/m"}, "origin": pt, "radius": length,
			"valid_ms": Schema{"type": "integer", "minimum": 1, "maximum": protocol.FieldValidMaxMs}}, []string{"origin", "radius"}
	case protocol.EffectVibration:
		return Schema{"frequency": numberIn(protocol.VibrationFrequencyMinHz, protocol.VibrationFrequencyMaxHz), "amplitude": force,
			"duration_ms": Schema{"type": "integer", "minimum": 1, "maximum": protocol.EffectTTLMaxMs}, "direction": dir}, []string{"frequency", "amplitude"}
	case protocol.EffectSDF:
		shape := Ref("sdf-shape")
		transform := Ref("transform")
		if input {
			shape = Schema{"anyOf": []Schema{Ref("sdf-shape.input"), enum(protocol.SDFPrimitiveNames())}}
			transform = Ref("sdf-transform.input")
		}
		p := Schema{"shape": shape, "transform": transform, "force_scale": force, "range": length,
			"ease": enum(protocol.SDFEaseNames()), "reverse_easing": boolean(), "symmetry": enum(protocol.SDFSymmetryNames()),
			"blend": enum(protocol.SDFBlendNames())}
		if input {
			p["params"] = Schema{"type": "object", "description": "the parameters when shape names the primitive (the flat form)"}
		}
		return p, []string{"shape"}
	}
	return nil, nil
}

// effect is one effect as written (closed, every member the encoder
// writes) or accepted (open), one alternative per type.
func effect(input, inForce bool) Schema {
	var alts []Schema
	for i, name := range protocol.EffectTypeNames() {
		t := protocol.EffectType(i + 1)
		props, required := effectProps(t, input)
		props["id"] = Schema{"type": "string", "minLength": 1, "maxLength": protocol.MaxEffectIDLen, "pattern": "^[A-Za-z0-9_.:-]+$"}
		props["type"] = constant(name)
		props["ttl_ms"] = Schema{"type": "integer", "minimum": 1, "maximum": protocol.EffectTTLMaxMs}
		if inForce {
			props["remaining_ms"] = Schema{"type": "integer", "minimum": 0, "description": "ms left before the effect fades out; absent without ttl_ms"}
			props["rendered_force"] = Ref("vec3")
		}
		required = append([]string{"id", "type"}, required...)
		if input {
			// A null member is an absent one (docs/protocol.md, Input):
			// an optional member may be null and takes its default; a
			// required one may not.
			for k, p := range props {
				if !slices.Contains(required, k) {
					props[k] = orNull(p.(Schema))
				}
			}
			alt := open(props, required...)
			if t == protocol.EffectDamper {
				alt["anyOf"] = []Schema{present("scalar"), present("vector")}
			}
			if t == protocol.EffectSpring {
				// A line or a plane needs its direction (or normal).
				alt["if"] = Schema{"required": []string{"anchor"}, "properties": Schema{"anchor": enum([]string{"line", "plane"})}}
				alt["then"] = present("direction")
			}
			alts = append(alts, alt)
			continue
		}
		// The encoder writes every member with a default; the optional
		// ones are ttl_ms, a point spring's direction, a damper's parts
		// and a vibration's duration.
		out := []string{}
		for _, k := range sortedKeys(props) {
			switch {
			case k == "ttl_ms", k == "remaining_ms", k == "rendered_force", k == "direction" && t == protocol.EffectSpring,
				t == protocol.EffectDamper && k != "id" && k != "type",
				k == "duration_ms":
			default:
				out = append(out, k)
			}
		}
		alts = append(alts, closed(props, out...))
	}
	return Schema{"oneOf": alts}
}

// defineEffects defines the SDF shapes, the effect declarations, the read
// shape of the effects in force, navigation's GET answer and the arm state
// extensions.
func defineEffects(s *Set) {
	s.Define("sdf-shape", sdfShape(false, protocol.SDFLengthMax))
	s.Define("sdf-shape.input", sdfShape(true, protocol.SDFLengthMax))
	// A bubble: the closed shapes the loop renders, inside a workspace.
	s.Define("bubble-shape.input", sdfShapeOf(protocol.BubbleShapes(), true, protocol.NavShapeMax))
	s.Define("effect", effect(false, false))
	s.Define("effect.in-force", effect(false, true))
	s.Define("effect.input", effect(true, false))
	idList := Schema{"type": "array", "maxItems": protocol.MaxEffectsPerArm, "uniqueItems": true,
		"items": Schema{"type": "string", "minLength": 1, "maxLength": protocol.MaxEffectIDLen}}
	s.Publish(EffectsUpdateInput, "An effects declaration, the \"effects\" member of an arm's entry in a client message: clear, then remove, then set (create or replace by id); whole or not at all.",
		open(Schema{
			"clear":  orNull(boolean()),
			"remove": orNull(idList),
			"set":    orNull(Schema{"type": "array", "maxItems": protocol.MaxEffectsPerArm, "items": Ref("effect.input")}),
		}))
	s.Publish(EffectsInForce, "The data of GET /{type}/{id}/effects: the session whose effects the arm renders (null: none) and the effects, as declared, with the time each has left. On a lab's node, effects a gateway's session declared carry gateway: the gateway and its session (session_id is then the gateway's owner on the node).",
		closed(Schema{
			"session_id":  orNull(Schema{"type": "integer", "minimum": 1}),
			"max_effects": constant(protocol.MaxEffectsPerArm),
			"effects":     arrayOf(Ref("effect.in-force")),
			"gateway": allRequired(Schema{
				"id":         str(),
				"address":    str(),
				"session_id": Schema{"type": "integer", "minimum": 1},
			}),
		}, "session_id", "max_effects", "effects"))
	s.Publish(StateEffects, "An arm state's effects member while effects are in force: how many, and each wall's proxy point in the session's space.",
		allRequired(Schema{
			"count": Schema{"type": "integer", "minimum": 0, "maximum": protocol.MaxEffectsPerArm},
			"proxies": arrayOf(allRequired(Schema{
				"id": Schema{"type": "string", "minLength": 1}, "position": Ref("vec3"), "contact": boolean(),
			})),
		}))
	s.Publish(StatePassivity, "An arm state's passivity member: the energy the passivity controller watches (J) and the damping it adds now (N·s/m). Present while the controller watches what a session's control renders: its effects, its navigation, or, in the output scope, its force.",
		allRequired(Schema{"energy": number(), "added_damping": Schema{"type": "number", "minimum": 0}}))
	s.Publish(StateNavigation, "An arm state's navigation member while navigation is on, the state of GET .../config/navigation: the bubble, the zone, the workspace offset and its velocity.",
		allRequired(Schema{
			"bubble":           allRequired(Schema{"center": Ref("vec3"), "velocity_zone_width": number(), "collision_extra_inflate": number()}),
			"zone":             enum(protocol.NavigationZoneNames()),
			"workspace_offset": Ref("vec3"),
			"velocity":         Ref("vec3"),
		}))
	s.Publish(NavigationView, "The data of GET /{type}/{id}/config/navigation: the configuration, the state (null while navigation is off) and the status.",
		allRequired(Schema{
			"config": Ref(EntryName(protocol.KeyNavigation)),
			"state":  orNull(Ref(StateNavigation)),
			"status": allRequired(Schema{"mode": enum(protocol.NavigationModes())}),
		}))
}

// withArmStateExtensions adds the optional arm state members of the
// effects, passivity and navigation layers to an arm state schema.
func withArmStateExtensions(sch Schema) Schema {
	props := sch["properties"].(Schema)
	props["effects"] = Ref(StateEffects)
	props["passivity"] = Ref(StatePassivity)
	props["navigation"] = Ref(StateNavigation)
	return sch
}

// navigationEntry is the navigation entry as answered (closed, complete)
// or accepted (open, every member optional).
func navigationEntry(input bool) Schema {
	shape := Ref("sdf-shape")
	obj := func(props Schema) Schema { return allRequired(props) }
	if input {
		shape = Ref("bubble-shape.input")
		obj = func(props Schema) Schema {
			for k, v := range props {
				props[k] = orNull(v.(Schema))
			}
			return open(props)
		}
	}
	// The centre's components are bounded (±NavCenterMax, mount space).
	centre := components(vec3Names, numberIn(-protocol.NavCenterMax, protocol.NavCenterMax), input)
	bubble := Schema{
		"center": obj(Schema{
			"position":   centre,
			"mode":       enum(protocol.NavigationCenterModes()),
			"drift_rate": numberIn(0, protocol.NavDriftRateMax),
		}),
		"shape":               shape,
		"easing":              enum(protocol.NavigationEasings()),
		"collision_detection": obj(Schema{"hysteresis": numberIn(0, protocol.NavHysteresisMax)}),
	}
	// The numeric members from the decoder's own table, so that a range
	// changed there changes here.
	for _, n := range protocol.BubbleNumbers() {
		bubble[n.Name] = numberIn(n.Lo, n.Hi)
	}
	return obj(Schema{
		"mode":   enum(protocol.NavigationModes()),
		"bubble": obj(bubble),
	})
}

// extraEntries adds the entries of the navigation and passivity layers to
// the answered (out) and accepted (in) entry schemas.
func extraEntries(out, in map[protocol.Key]Schema) {
	out[protocol.KeyNavigation] = navigationEntry(false)
	// A body must say something of the navigation (decodeNavigation):
	// mode, bubble, or GET's data posted back with its config.
	in[protocol.KeyNavigation] = withAnyOf(navigationEntry(true), present("mode"), present("bubble"), present("config"))
	clamp := numberIn(0, protocol.ForceClampMax)
	slew := numberIn(protocol.ForceSlewMinNPerS, protocol.ForceSlewMaxNPerS)
	out[protocol.KeyForceClamp] = allRequired(Schema{"max_force": clamp})
	in[protocol.KeyForceClamp] = open(Schema{"max_force": clamp}, "max_force")
	out[protocol.KeyForceSlewLimit] = allRequired(Schema{"max_rate": slew})
	in[protocol.KeyForceSlewLimit] = open(Schema{"max_rate": slew}, "max_rate")
	scope := enum(protocol.PassivityScopes())
	out[protocol.KeyPassivityController] = allRequired(Schema{"enabled": boolean(), "scope": scope})
	in[protocol.KeyPassivityController] = open(Schema{"enabled": boolean(), "scope": orNull(scope)}, "enabled") // null: the default
}
