package schema

import (
	"github.com/hapticd/hapticd/protocol"
)

// Frame schema names.
const (
	InventoryFrame = "inventory-frame"
	StateFrame     = "state-frame"
	// StateFrameSubset is a state frame of a session subscribed to a
	// subset of the arm state fields (session.configure.subscribe.state):
	// each arm's state holds only those.
	StateFrameSubset = "state-frame-subset"
	FullStateFrame   = "full-state-frame"
	AnyFrame         = "frame"
	Devices          = "devices"
)

func controlModes() []string {
	var out []string
	for m := protocol.ControlIdle; m <= protocol.ControlAngle; m++ {
		out = append(out, m.String())
	}
	return out
}

// defineFrames defines the frames of the simulation WebSocket (PROTOCOL
// 2.1, 2.3) as the 3.x encoder writes them, with the collection keys of the
// configured type table. Every object is closed: a member the encoder
// writes and the schema does not name fails validation.
func defineFrames(s *Set, o *Options) {
	armState := Schema{
		"cursor_position":      Ref("vec3"),
		"cursor_velocity":      Ref("vec3"),
		"angular_position":     Ref("angles3"),
		"angular_velocity":     Ref("angles3"),
		"body_orientation":     Ref("quat"),
		"current_cursor_force": Ref("vec3"),
		// What position, angle or torque control aims at (zero otherwise).
		"current_cursor_position":  Ref("vec3"),
		"current_angular_position": Ref("angles3"),
		"current_angular_torques":  Ref("angles3"),
		// The session's workspace transform (set_transform), its identity
		// parts left out: {} for the identity.
		"transform":      closed(Schema{"position": Ref("vec3"), "rotation": Ref("quat"), "scale": Ref("vec3")}),
		"control_mode":   enum(controlModes()),
		"control_domain": enum([]string{protocol.DomainCartesian.String(), protocol.DomainAngular.String()}),
		"calibration_state": Schema{"type": "integer", "enum": []int{protocol.CalibrationNone, protocol.CalibrationInProgress, protocol.CalibrationDone},
			"description": "0 not calibrated, 1 calibrating, 2 calibrated (2 or more means calibrated, as clients read it)"},
	}
	s.Define("arm-state", withArmStateExtensions(allRequired(armState)))
	s.Define("arm-state.subset", withArmStateExtensions(closed(armState)))
	s.Define("arm-status", allRequired(Schema{
		"calibrated": boolean(), "in_use": boolean(), "ready": boolean(), "started": boolean(), "power_supply": boolean(),
	}))
	// A wired grip also reports its main button as "button" (the wired
	// VerseGrip's own field); a collection that holds grips of any link
	// (the reference's "grip") may or may not carry it.
	gripState := func(button string) Schema {
		props := Schema{
			"orientation":   Ref("quat"),
			"buttons":       allRequired(Schema{"a": boolean(), "b": boolean(), "c": boolean()}),
			"hall":          number(),
			"battery_level": number(),
		}
		required := sortedKeys(props)
		switch button {
		case "required":
			props["button"] = boolean()
			required = append(required, "button")
		case "optional":
			props["button"] = boolean()
		}
		return closed(props, required...)
	}
	s.Define(gripStateName(protocol.LinkWireless), gripState("absent"))
	s.Define(gripStateName(protocol.LinkWired), gripState("required"))
	s.Define(gripStateName(protocol.LinkAny), gripState("optional"))
	// A wired grip also reports its firmware's error code (0: none).
	gripStatus := func(errorCode string) Schema {
		props := Schema{"connected": boolean(), "awake": boolean(), "ready": boolean()}
		required := sortedKeys(props)
		if errorCode != "absent" {
			props["error"] = Schema{"type": "integer", "minimum": 0, "maximum": 255, "description": "the grip firmware's error code; 0: none"}
			if errorCode == "required" {
				required = append(required, "error")
			}
		}
		return closed(props, required...)
	}
	s.Define(gripStatusName(protocol.LinkWireless), gripStatus("absent"))
	s.Define(gripStatusName(protocol.LinkWired), gripStatus("required"))
	s.Define(gripStatusName(protocol.LinkAny), gripStatus("optional"))
	s.Define("device-info", closed(Schema{
		"id": str(), "uuid": str(), "major_version": Schema{"type": "integer"}, "minor_version": Schema{"type": "integer"},
		"device_type": Schema{"type": "integer", "description": "the device type number: 4 Inverse3 (the vendor's), 5 Inverse3x, 6 Minverse, 7 wired VerseGrip, 8 wireless VerseGrip (hapticd's choice: the vendor's are not public)"},
	}, "id", "uuid", "major_version", "minor_version"))
	for _, c := range o.collections() {
		// The vendor's 3.5 frame shapes: the preset as a plain string, the
		// mount as a flat transform (inputs keep the entry shapes).
		conf := Schema{
			"type":        enum(protocol.ConfigTypes(c.Key)),
			"port":        Schema{"type": "string", "description": "where the device is attached; \"\" for a simulated device"},
			"device_info": Ref("device-info"),
			"preset":      enum(append(protocol.PresetNames(), protocol.PresetCustom)),
			"basis":       Ref(EntryName(protocol.KeyBasis)),
			"mount":       Ref("transform"),
		}
		var optional []string
		if c.Type == protocol.TypeArm {
			conf["extended_device_id"] = Schema{"type": "string", "minLength": 1}
			conf["extended_firmware_version"] = Schema{"type": "string", "pattern": "^[0-9A-F]{32}$",
				"description": "the firmware's digest, 32 hex digits; hapticd derives it from the family and version numbers"}
			conf["streaming_mode"] = Schema{"type": "string", "enum": []string{protocol.StreamingMode}, "description": "how the device streams to the service"}
			optional = append(optional, "extended_device_id", "extended_firmware_version")
			for _, k := range protocol.Keys() {
				if !k.SessionScoped() {
					conf[k.Name()] = Ref(EntryName(k))
				}
			}
			conf["filters"] = allRequired(Schema{
				"damping":    Ref(EntryName(protocol.KeyDamping)),
				"force_gate": Ref(EntryName(protocol.KeyForceGate)),
			})
			conf["navigation"] = Ref(EntryName(protocol.KeyNavigation))
		}
		s.Define("config."+c.Key, closed(conf, without(sortedKeys(conf), optional)...))
		for _, withConfig := range []string{"required", "optional", "absent", "subset"} {
			state := Ref(stateName(c))
			if withConfig == "subset" && c.Type == protocol.TypeArm {
				state = Ref("arm-state.subset")
			}
			props := Schema{
				"device_id": Schema{"type": "string", "minLength": 1},
				"state":     state,
				"status":    Ref(statusName(c)),
			}
			required := []string{"device_id", "state", "status"}
			switch withConfig {
			case "required":
				props["config"] = Ref("config." + c.Key)
				required = append(required, "config")
			case "optional":
				props["config"] = Ref("config." + c.Key)
			}
			s.Define("element."+c.Key+"."+withConfig, closed(props, required...))
		}
	}
	s.Define("session-view", allRequired(Schema{"config": allRequired(Schema{
		"profile": Schema{"anyOf": []Schema{allRequired(Schema{"name": str()}), {"type": "null"}}},
		"basis":   Ref(EntryName(protocol.KeyBasis)),
		"lease":   allRequired(Schema{"ms": Schema{"type": "integer", "minimum": protocol.LeaseMinMs, "maximum": protocol.LeaseMaxMs}}),
	})}))
	problems := Schema{"type": "array", "items": Ref("error"), "minItems": 1}

	frame := func(config string, sessionID, session, problemsToo bool) Schema {
		props := Schema{}
		var required []string
		if sessionID {
			props["session_id"] = Schema{"type": "integer", "minimum": 1}
			required = append(required, "session_id")
		}
		for _, c := range o.collections() {
			props[c.Key] = arrayOf(Ref("element." + c.Key + "." + config))
			required = append(required, c.Key)
		}
		if session {
			props["session"] = Ref("session-view")
			required = append(required, "session")
		}
		if problemsToo {
			props["errors"] = problems
			props["warnings"] = problems
		}
		return closed(props, required...)
	}
	s.Publish(InventoryFrame, "The first frame of a simulation session: every device with its config, and the session's own view.",
		frame("required", true, true, false))
	s.Publish(StateFrame, "The frame answering each message: every device's state and status, with the message's errors and warnings.",
		frame("absent", true, false, true))
	s.Publish(StateFrameSubset, "A state frame of a session subscribed to some arm state fields (session.configure.subscribe.state): each arm's state holds those only.",
		frame("subset", true, false, true))
	s.Publish(FullStateFrame, "The frame answering a message with session.force_render_full_state: config too (for the types in device_types, when given).",
		frame("optional", true, true, true))
	s.Publish(AnyFrame, "Any frame of the 3.x simulation WebSocket.",
		Schema{"anyOf": []Schema{Ref(InventoryFrame), Ref(StateFrame), Ref(StateFrameSubset), Ref(FullStateFrame)}})
	s.Publish(Devices, "The inventory GET /devices answers: every device with its config, as the session named by ?session= sees it.",
		frame("required", false, false, false))
}

// without is names less drop.
func without(names, drop []string) []string {
	var out []string
	for _, n := range names {
		keep := true
		for _, d := range drop {
			keep = keep && n != d
		}
		if keep {
			out = append(out, n)
		}
	}
	return out
}

// gripSchemaName is the name of a grip schema (base "grip-state" or
// "grip-status") for the grips a link holds: the wireless one is the plain
// name, the others carry the link.
func gripSchemaName(base string, l protocol.Link) string {
	switch l {
	case protocol.LinkWired:
		return base + ".wired"
	case protocol.LinkWireless:
		return base
	}
	return base + ".any-link"
}

func gripStateName(l protocol.Link) string  { return gripSchemaName("grip-state", l) }
func gripStatusName(l protocol.Link) string { return gripSchemaName("grip-status", l) }

// statusName is the status schema of the devices collection c holds.
func statusName(c protocol.Collection) string {
	if c.Type == protocol.TypeArm {
		return "arm-status"
	}
	return gripStatusName(c.Link)
}

// stateName is the state schema of the devices collection c holds.
func stateName(c protocol.Collection) string {
	if c.Type == protocol.TypeArm {
		return "arm-state"
	}
	return gripStateName(c.Link)
}
