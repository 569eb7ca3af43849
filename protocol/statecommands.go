package protocol

// State commands are device commands that real clients send among
// "commands" beside the per-tick control command, which change the
// session's or the device's settings rather than drive the device:
// set_transform (the session's workspace transform, the vendor's 3.5
// tutorials and Rust client), set_gravity_compensation (sawHaplyService,
// every cycle) and keep_alive (the ROS 2 handle node, every message). They
// take no control of the device and renew no lease. Clients re-send them
// unchanged every tick, so the service acts on them only when they change.

// keepAlive is accepted as a device command, a session key and a message
// member: clients send it to say they are alive, and the frame answers.
const keepAlive = "keep_alive"

// setGravityCompensation is the state command sawHaplyService sends every
// cycle (a bool, or the HTTP entry's {"enabled": bool}).
const setGravityCompensation = "set_gravity_compensation"

// stateCommand describes one state command.
type stateCommand struct {
	name    string
	dt      DeviceType // 0: any device
	example string     // the body, for error messages and schemas
}

// stateCommands is never written.
var stateCommands = [...]stateCommand{
	{"set_transform", TypeArm, `{"position": {"x": 0, "y": 0, "z": 0}, "rotation": {"w": 1, "x": 0, "y": 0, "z": 0}, "scale": {"x": 1, "y": 1, "z": 1}}`},
	{setGravityCompensation, TypeArm, `true`},
	{keepAlive, 0, `{}`},
}

// StateCommand names a state command and the device type it applies to (0:
// any); Example is a valid body.
type StateCommand struct {
	Name    string
	Type    DeviceType
	Example string
}

// StateCommands lists the state commands (a copy).
func StateCommands() []StateCommand {
	out := make([]StateCommand, len(stateCommands))
	for i, c := range stateCommands {
		out[i] = StateCommand{Name: c.name, Type: c.dt, Example: c.example}
	}
	return out
}

// OptionalBool is a bool a message may leave out.
type OptionalBool struct{ Given, Value bool }

// decodeStateCommand decodes member name of a device's commands when it is
// a state command, and reports whether it was one.
func (m *ClientMessage) decodeStateCommand(e *DeviceEntry, name []byte, v Value, it *MemberIter, at *pathSeg) (bool, *Error) {
	var sc *stateCommand
	for i := range stateCommands {
		if stateCommands[i].name == string(name) {
			sc = &stateCommands[i]
			break
		}
	}
	if sc == nil {
		return false, nil
	}
	if it.Superseded() {
		return true, nil // given again later: the last occurrence counts
	}
	c := at.child(sc.name)
	if sc.dt != 0 && sc.dt != e.Type {
		m.warnings().add(CodeUnknownCommand, &c, "%s is not a command for %s devices: ignored", sc.name, e.TypeKey)
		return true, nil
	}
	if !v.Exists() {
		return true, nil
	}
	switch sc.name {
	case "set_transform":
		p, err := decodeSetTransform(v, &c, m.warnings())
		if err != nil {
			return true, err
		}
		e.Transform = p
	case setGravityCompensation:
		// The bool sawHaplyService sends, or the HTTP entry's shape.
		b, ok := v.Bool()
		if !ok && v.Kind() == KindObject {
			en, ec, err := soleMember(v, &c, m.warnings(), "enabled", `{"enabled": true}`)
			if err != nil {
				return true, err
			}
			if b, err = readBool(en, &ec); err != nil {
				return true, err
			}
			ok = true
		}
		if !ok {
			return true, errAt(CodeInvalidValue, &c, "set_gravity_compensation must be true or false, got %s", v.Kind())
		}
		e.GravityCompensation = OptionalBool{Given: true, Value: b}
	case keepAlive:
		// Accepted as it comes: it only asks for the frame every message
		// gets.
	}
	return true, nil
}

// decodeSetTransform decodes set_transform's body in either shape clients
// send: flat, {position?, rotation?, scale?} (the vendor's tutorials), or
// wrapped, {"transform": {position?, rotation?, scale?}} (the vendor's Rust
// client carries a TransformPatch inside its SetTransformCmd). Both are
// partial: a part left out keeps its value. A body mixing the two shapes
// is refused, since which one wins would be a guess.
func decodeSetTransform(v Value, at *pathSeg, w warnings) (TransformPatch, *Error) {
	if v.Kind() != KindObject {
		return decodeViewTransformPatch(v, at, w) // its error names the shape
	}
	var inner Value
	flat := false
	for it := v.Members(); it.Next(); {
		switch {
		case it.KeyIs("transform"):
			inner = it.Value()
		case it.KeyIs("position"), it.KeyIs("rotation"), it.KeyIs("scale"):
			flat = true
		}
	}
	if !inner.Exists() {
		return decodeViewTransformPatch(v, at, w)
	}
	if flat {
		return TransformPatch{}, errAt(CodeInvalidValue, at, "set_transform takes {position, rotation, scale} or {\"transform\": {position, rotation, scale}}, not both at once")
	}
	tv, tat, err := soleMember(v, at, w, "transform", `{"transform": {"position": {"x": 0, "y": 0, "z": 0}}}`)
	if err != nil {
		return TransformPatch{}, err
	}
	return decodeViewTransformPatch(tv, &tat, w)
}
