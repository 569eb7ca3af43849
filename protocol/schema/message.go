package schema

import (
	"encoding/json"

	"github.com/hapticd/hapticd/protocol"
)

// typeSlug names a device type in schema names ("arm", "grip").
func typeSlug(dt protocol.DeviceType) string {
	if dt == protocol.TypeArm {
		return "arm"
	}
	return "grip"
}

// defineMessage defines a 3.x client message as the service accepts it
// (PROTOCOL 2.2), from the command table, the entry table and the type
// table. It describes acceptance honestly: what the schema rejects is what
// the service answers with "errors" (and applies not at all); members it
// does not name are accepted, ignored and listed under "warnings".
func defineMessage(s *Set, o *Options) {
	for _, dt := range o.Types.Types() {
		slug := typeSlug(dt)
		cmds := Schema{}
		for _, k := range protocol.Commands() {
			if k.DeviceType() != dt {
				continue
			}
			cmds[k.Name()] = orNull(commandBody(k))
		}
		for _, c := range protocol.StateCommands() {
			if c.Type != 0 && c.Type != dt {
				continue // sent to the other type: ignored with a warning
			}
			body, _ := stateCommandBody(c.Name)
			cmds[c.Name] = body
		}
		s.Define("commands."+slug, open(cmds))

		conf := Schema{}
		for _, k := range protocol.Keys() {
			switch { // in the decoder's order (protocol.ClientMessage.configureEntry)
			case !k.AppliesTo(dt):
				conf[k.Name()] = Schema{"description": k.Name() + " has no effect on a grip: ignored with a warning"}
			case !k.SessionScoped():
				conf[k.Name()] = Schema{"not": Schema{}, "description": k.Name() + " is HTTP-only (error http_only_key): use POST /{type}/{id}/config/" + k.Path()}
			default:
				conf[k.Name()] = orNull(Ref(EntryName(k) + ".input"))
			}
		}
		filters := Schema{}
		for _, k := range []protocol.Key{protocol.KeyDamping, protocol.KeyForceGate} {
			filters[k.Name()] = conf[k.Name()]
		}
		conf["filters"] = orNull(open(filters))
		c := open(conf)
		// preset and mount exclude each other; a filter given both flat and
		// under "filters" is given twice.
		c["allOf"] = []Schema{
			{"not": both(present(protocol.KeyPreset.Name()), present(protocol.KeyMount.Name()))},
			{"not": both(present(protocol.KeyDamping.Name()), Schema{"required": []string{"filters"}, "properties": Schema{"filters": present(protocol.KeyDamping.Name())}})},
			{"not": both(present(protocol.KeyForceGate.Name()), Schema{"required": []string{"filters"}, "properties": Schema{"filters": present(protocol.KeyForceGate.Name())}})},
		}
		s.Define("configure."+slug, c)

		entry := Schema{
			"device_id": Schema{"type": "string", "minLength": 1},
			"commands":  orNull(Ref("commands." + slug)),
			"configure": orNull(Ref("configure." + slug)),
		}
		if dt == protocol.TypeArm {
			entry["effects"] = orNull(Ref(EffectsUpdateInput))
		} else {
			entry["effects"] = Schema{"description": "a grip has no force output: effects are ignored with a warning"}
		}
		s.Define("device-entry."+slug, open(entry, "device_id"))
	}

	basis := Ref(EntryName(protocol.KeyBasis) + ".input")
	session := open(Schema{
		"configure": orNull(open(Schema{
			"profile": orNull(open(Schema{
				"name":             Schema{"type": "string", "minLength": 1, "maxLength": protocol.MaxProfileNameLen},
				"required_version": orNull(Schema{"type": "string", "description": "a version constraint such as \">=3.5\"; a mismatch with " + protocol.APIVersion + " is a warning"}),
			}, "name")),
			"basis": orNull(basis),
			"lease": orNull(open(Schema{"ms": Schema{"type": "integer", "minimum": protocol.LeaseMinMs, "maximum": protocol.LeaseMaxMs}}, "ms")),
			"subscribe": orNull(Schema{
				"description": "an extension: the devices and arm state fields this session's frames carry; at least one of the two",
				"type":        "object",
				"anyOf":       []Schema{{"required": []string{"devices"}}, {"required": []string{"state"}}},
				"properties": Schema{
					"devices": Schema{"anyOf": []Schema{constant("*"), Schema{"type": "array", "maxItems": protocol.MaxSubscribedDevices,
						"items": open(Schema{"device_type": enum(o.inputNames()), "device_id": Schema{"type": "string", "minLength": 1}}, "device_type", "device_id")}}},
					"state": Schema{"anyOf": []Schema{constant("*"), arrayOf(enum(protocol.ArmStateFieldNames()))}},
				},
			}),
		})),
		keepAlive: Schema{"description": "a liveness ping: accepted whatever its value"},
		"force_render_full_state": orNull(open(Schema{
			"device_types": orNull(arrayOf(Schema{"type": "string", "description": "a device-type key; unknown keys are warnings"})),
		})),
	})
	props := session["properties"].(Schema)
	for _, c := range protocol.DeprecatedCommands() {
		var body Schema
		switch c.Name {
		case protocol.CommandSetCoordinateOrigin:
			body = open(Schema{"coordinate_origin": enum(protocol.CoordinateOrigins())}, "coordinate_origin")
		case protocol.CommandSetBasis:
			body = open(Schema{"basis": basis}, "basis")
		default:
			continue
		}
		body["deprecated"] = true
		body["description"] = "Deprecated; use " + c.Replacement
		props[c.Name[len("session."):]] = orNull(body)
	}
	s.Define("session-part", session)

	msg := Schema{}
	for _, c := range o.inputKeys() {
		msg[c.Key] = orNull(arrayOf(Ref("device-entry." + typeSlug(c.Type))))
	}
	msg["session"] = orNull(Ref("session-part"))
	msg[keepAlive] = Schema{"description": "a liveness ping: accepted whatever its value"}
	m := open(msg)
	m["description"] = "A 3.x client message. Members this schema does not name (device types, commands, keys, fields) are accepted, " +
		"ignored and listed under \"warnings\" in the frame (codes unknown_device_type, unknown_command, unknown_key, unknown_field): " +
		"a newer client's extra keys never block a message. Unknown device ids are warnings too. {} is a ping. Numbers must be finite. " +
		"What this schema refuses, the service answers with \"errors\" and applies not at all."
	s.Publish("client-message", "A 3.x client message, as the simulation WebSocket accepts it.", m)
}

// keepAlive is the liveness ping clients send as a device command, a
// session key and a message member.
const keepAlive = "keep_alive"

// stateCommandBody is the body a state command accepts (protocol's
// StateCommands): the session's workspace transform, the gravity
// compensation enable (a bool, or the HTTP entry's {"enabled"}), or the
// keep-alive ping. ok is false for a state command this package does not
// know (TestEveryStateCommandHasASchema).
func stateCommandBody(name string) (Schema, bool) {
	switch name {
	case "set_transform":
		// Flat, or wrapped in "transform" (the vendor's Rust client); both
		// partial.
		return orNull(Schema{"anyOf": []Schema{Ref("transform.input"), open(Schema{"transform": Ref("transform.input")}, "transform")}}), true
	case "set_gravity_compensation":
		return orNull(Schema{"anyOf": []Schema{boolean(), open(Schema{"enabled": boolean()}, "enabled")}}), true
	case keepAlive:
		return Schema{"description": "a liveness ping: accepted whatever its value"}, true
	}
	return Schema{}, false
}

// both is a schema matched when a and b both are.
func both(a, b Schema) Schema { return Schema{"allOf": []Schema{a, b}} }

// commandBody is the body a command accepts: for a control command its
// documented field or the alternative spelling (one of them, non-null),
// holding a vector or an angle triple; a probe takes an object.
func commandBody(k protocol.CommandKind) Schema {
	doc, alt := k.Fields()
	if doc == "" {
		return open(Schema{})
	}
	value := Ref("vec3.input")
	switch k {
	case protocol.CmdSetAngularTorques, protocol.CmdSetAngularPosition:
		value = Ref("angles3.input")
	}
	props := Schema{doc: orNull(value)}
	alts := []Schema{present(doc)}
	if alt != "" {
		props[alt] = orNull(value)
		alts = append(alts, present(alt))
	}
	sch := withAnyOf(open(props), alts...)
	var example any
	if json.Unmarshal([]byte(k.Example()), &example) == nil {
		sch["examples"] = []any{example}
	}
	return sch
}
