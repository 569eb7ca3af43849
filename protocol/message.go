package protocol

import (
	"strconv"
	"unicode/utf8"
)

// CommandKind is a device command of a client message (PROTOCOL 2.2).
type CommandKind uint8

const (
	CmdNone               CommandKind = iota
	CmdSetCursorForce                 // Vec: N
	CmdSetCursorPosition              // Vec: m
	CmdSetAngularTorques              // Angles: N·mm
	CmdSetAngularPosition             // Angles: deg
	CmdProbePosition                  // arm: read without commanding
	CmdProbeOrientation               // grip: read without commanding
)

type commandInfo struct {
	name    string
	dt      DeviceType
	control bool
	rank    int // precedence among control commands: lower wins
	// fields names the accepted fields of a control command's body: the
	// first is the documented one, the second an alternative spelling
	// clients send ("" when there is none).
	fields  [2]string
	example string // the body, for error messages
}

// commandTable is indexed by CommandKind; never written.
var commandTable = [...]commandInfo{
	CmdSetCursorForce: {"set_cursor_force", TypeArm, true, 2,
		[2]string{"vector", "values"}, `{"vector": {"x": 0, "y": 0, "z": 1}}`},
	CmdSetCursorPosition: {"set_cursor_position", TypeArm, true, 0,
		[2]string{"position", "values"}, `{"position": {"x": 0, "y": 0, "z": 0}}`},
	CmdSetAngularTorques: {"set_angular_torques", TypeArm, true, 3,
		[2]string{"torques", ""}, `{"torques": {"a0": 0, "a1": 0, "a2": 0}}`},
	CmdSetAngularPosition: {"set_angular_position", TypeArm, true, 1,
		[2]string{"angles", ""}, `{"angles": {"a0": 0, "a1": 0, "a2": 0}}`},
	CmdProbePosition:    {"probe_position", TypeArm, false, 0, [2]string{}, "{}"},
	CmdProbeOrientation: {"probe_orientation", TypeGrip, false, 0, [2]string{}, "{}"},
}

// Name is the command's wire name; "" for CmdNone.
func (k CommandKind) Name() string {
	if int(k) >= len(commandTable) {
		return ""
	}
	return commandTable[k].name
}

func (k CommandKind) String() string {
	if n := k.Name(); n != "" {
		return n
	}
	return "none"
}

// Control reports whether the command drives the device (and so takes
// control of it and renews the lease), as opposed to a probe.
func (k CommandKind) Control() bool { return int(k) < len(commandTable) && commandTable[k].control }

func commandFromName(n []byte) CommandKind {
	for k := CmdSetCursorForce; int(k) < len(commandTable); k++ {
		if commandTable[k].name == string(n) {
			return k
		}
	}
	return CmdNone
}

// DeviceCommand is the one command a message gives a device.
type DeviceCommand struct {
	Kind   CommandKind
	Vec    Vec3    // set_cursor_force (N), set_cursor_position (m)
	Angles Angles3 // set_angular_torques (N·mm), set_angular_position (deg)
}

// DeviceEntry is one device's part of a client message.
type DeviceEntry struct {
	Type     DeviceType
	TypeKey  string // as sent (may be an alias)
	Path     string // where it sits in the message: "arm3[0]" (3.x), "arm3.049D" (3.0)
	DeviceID string
	// Command is the winning command; Kind == CmdNone when there is none.
	Command DeviceCommand
	// Configure holds the entries in key order (preset, mount, basis,
	// damping, force_gate).
	Configure []Entry
	// Transform is set_transform: the parts of the session's workspace
	// transform for this device that the message sets.
	Transform TransformPatch
	// GravityCompensation is set_gravity_compensation: the device's
	// gravity compensation enable.
	GravityCompensation OptionalBool
	// Effects is the device entry's "effects" declaration (effects.go),
	// valid when HasEffects; its slices are reused by the next decode.
	Effects    EffectsUpdate
	HasEffects bool
}

// Profile names the application behind a session.
type Profile struct {
	Name            string
	RequiredVersion string // "" when not given
}

// FullStateRequest is session.force_render_full_state.
type FullStateRequest struct {
	DeviceTypes []DeviceType // nil: every type carries config; empty: none
}

// SessionPart is the "session" part of a client message. Pointers point
// into the ClientMessage and stay valid until its next Reset: copy what you
// keep.
type SessionPart struct {
	Profile   *Profile
	Basis     *Basis
	LeaseMs   int // 0: not given; otherwise 10..1000
	FullState *FullStateRequest
	// SetCoordinateOrigin is the deprecated session.set_coordinate_origin,
	// already mapped to a preset name; "" when absent.
	SetCoordinateOrigin string
	// SetBasis is the deprecated session.set_basis. When Basis is also
	// given, Basis wins.
	SetBasis *Basis
	// DeprecatedSent names the deprecated commands the message sent
	// (CommandSetBasis, ...), valid or not: a use is a use, counted also
	// when the message is refused, as a deprecated route's failed call is.
	DeprecatedSent []string
	// Subscribe is session.configure.subscribe (subscribe.go).
	Subscribe *Subscription
}

// Lease bounds (ms) for session.configure.lease.
const (
	LeaseMinMs     = 10
	LeaseMaxMs     = 1000
	LeaseDefaultMs = 100
)

// APIVersion is the API version this service emulates; a profile's
// required_version is checked against it.
const APIVersion = "3.5"

// LegacyRoutePrefix is where the 3.0 format's HTTP routes are, on the
// legacy port (PROTOCOL.md: the 3.0 routes under /3.0/).
const LegacyRoutePrefix = "/3.0"

// ClientMessage is a decoded client message. Reuse one per session: Reset
// keeps every buffer, which is what makes per-tick decoding allocation-free.
// Strings in it are valid indefinitely; slices and pointers until the next
// Reset or decode.
type ClientMessage struct {
	Session  SessionPart
	Devices  []DeviceEntry
	Warnings []Error
	// Errors is what the decoder returned: when non-empty, apply nothing.
	Errors []Error
	// WarningsDropped and ErrorsDropped count the entries past MaxWarnings
	// and MaxErrors that were not listed (nor formatted, where the check
	// comes first): see TrimWarnings and TrimErrors.
	WarningsDropped, ErrorsDropped int
	// Empty is true for "{}": a ping that renews no lease.
	Empty bool

	doc       Doc
	profile   Profile
	basis     Basis
	setBasis  Basis
	fullState FullStateRequest
	subscribe Subscription
	typesBuf  [4]DeviceType
	pathBuf   []byte
	errs      errorList // how DecodeDevice's errors reach Errors
	types     *TypeTable
	// keyedByID is the layout of the entry DecodeDevice decodes: 3.0's
	// (devices keyed by id), whose routes are under LegacyRoutePrefix.
	keyedByID bool
}

// Reset empties m and keeps its capacity.
func (m *ClientMessage) Reset() {
	m.Session = SessionPart{}
	m.Devices = m.Devices[:0]
	m.Warnings = m.Warnings[:0]
	m.Errors = m.Errors[:0]
	m.WarningsDropped, m.ErrorsDropped = 0, 0
	m.Empty = false
}

// DecodeClientMessage decodes and validates a 3.x message into dst (reset
// first). It returns dst.Errors: when non-empty the caller applies nothing
// and sends them in the frame. Warnings (unknown device types, commands,
// keys and fields; control commands that lost the precedence) are in
// dst.Warnings and do not block the rest. Unknown device ids are the
// caller's to report.
func DecodeClientMessage(data []byte, types *TypeTable, dst *ClientMessage) []Error {
	if dst.decodeCommandFast(data, types) { // the streaming command (decodefast.go)
		return dst.Errors
	}
	return dst.Decode(data, types, decodeDeviceArray)
}

// decodeDeviceArray decodes a 3.x device collection: an array of entries
// that carry their own "device_id".
func decodeDeviceArray(m *ClientMessage, dt DeviceType, key string, list Value) {
	if list.Kind() != KindArray {
		m.Fail(CodeInvalidValue, key, `%s must be an array of device entries like [{"device_id": "049D", "commands": {...}}], got %s`, key, list.Kind())
		return
	}
	for el := list.Elements(); el.Next(); {
		m.DecodeDevice(dt, key, el.Index(), nil, el.Value())
	}
}

// A CollectionDecoder decodes one device-type member of a message (the
// value under "arm3", say) in its format's layout, with m.DecodeDevice for
// each device. It is a plain function, not a closure, so that decoding a
// message per tick allocates nothing.
type CollectionDecoder func(m *ClientMessage, dt DeviceType, key string, collection Value)

// Decode is the walk both formats share: it resets m, parses data, decodes
// the session object, warns about unknown device types and hands each
// known type's collection to collection. It returns m.Errors.
func (m *ClientMessage) Decode(data []byte, types *TypeTable, collection CollectionDecoder) []Error {
	m.walk(data, types, collection)
	// Nothing reads the document after the walk: let go of data, and of
	// scratch a big message grew, so one such message does not pin its
	// size for the session's lifetime.
	m.doc.release()
	return m.Errors
}

func (m *ClientMessage) walk(data []byte, types *TypeTable, collection CollectionDecoder) {
	root, ok := m.begin(data, types)
	if !ok {
		return
	}
	for it := root.Members(); it.Next(); {
		if it.KeyIs("session") {
			if !it.Superseded() {
				m.decodeSession(it.Value())
			}
			continue
		}
		if it.KeyIs(keepAlive) {
			continue // a client's liveness ping: the frame answers it
		}
		dt, key, ok := types.Lookup(it.Key())
		if !ok {
			m.warnUnknownType(it.Key())
			continue
		}
		if it.Superseded() {
			continue // the same type key again later: the last counts
		}
		if v := it.Value(); v.Exists() {
			collection(m, dt, key, v)
		}
	}
}

// The methods below are the shared decoding steps of both codecs (3.x here,
// 3.0 in protocol/v30): the codecs differ only in how device collections are
// laid out and how paths are spelled.

// begin resets m, parses data and returns its root object; types resolves
// the type keys the message names. It reports false (with the error
// recorded) when data is not a JSON object.
func (m *ClientMessage) begin(data []byte, types *TypeTable) (Value, bool) {
	m.Reset()
	m.types = types
	if err := m.doc.Parse(data); err != nil {
		m.Errors = append(m.Errors, *err)
		return Value{}, false
	}
	root := m.doc.Root()
	if root.Kind() != KindObject {
		// Both formats read this: the example names no device layout.
		m.Fail(CodeInvalidJSON, "", `a message must be a JSON object (device types, "session", or {}), got %s`, root.Kind())
		return Value{}, false
	}
	m.Empty = root.Len() == 0
	return root, true
}

// Fail records an error (or counts it past MaxErrors): the message will
// apply not at all.
func (m *ClientMessage) Fail(code Code, path, format string, args ...any) {
	if len(m.Errors) >= MaxErrors {
		m.ErrorsDropped++
		return
	}
	m.Errors = append(m.Errors, *Errorf(code, path, format, args...))
}

// warn records a warning, or counts it past MaxWarnings.
func (m *ClientMessage) warn(code Code, path, format string, args ...any) {
	if len(m.Warnings) >= MaxWarnings {
		m.WarningsDropped++
		return
	}
	m.Warnings = append(m.Warnings, *Errorf(code, path, format, args...))
}

// typeNames is what a message naming a device type accepts, for the
// errors that refuse another.
const typeNames = "inverse3, verse_grip, wireless_verse_grip, arm3, grip or a configured alias"

// warnUnknownType records the warning for an unknown device-type key.
func (m *ClientMessage) warnUnknownType(key []byte) {
	if m.warnings().full() {
		return // counted; the key is not copied
	}
	k := ClipQuoted(string(key))
	m.warn(CodeUnknownDeviceType, k, "unknown device type %q: ignored (use "+typeNames+")", k)
}

func (m *ClientMessage) fail(e *Error) {
	if len(m.Errors) >= MaxErrors {
		m.ErrorsDropped++
		return
	}
	m.Errors = append(m.Errors, *e)
}

func (m *ClientMessage) warnings() warnings {
	return warnings{list: &m.Warnings, dropped: &m.WarningsDropped}
}

// reuse returns old when it already holds b, so that a session sending the
// same ids every tick does not allocate a string per tick.
func reuse(old string, b []byte) string {
	if old == string(b) {
		return old
	}
	return string(b)
}

func (m *ClientMessage) nextDevice() *DeviceEntry {
	if n := len(m.Devices); n < cap(m.Devices) {
		m.Devices = m.Devices[:n+1]
	} else {
		m.Devices = append(m.Devices, DeviceEntry{})
	}
	e := &m.Devices[len(m.Devices)-1]
	e.Command = DeviceCommand{}
	e.Configure = e.Configure[:0]
	e.Transform = TransformPatch{}
	e.GravityCompensation = OptionalBool{}
	e.HasEffects = false
	return e
}

// DecodeDevice decodes one device's part of a message: its commands and
// configure. The two layouts differ only in where the id is:
//   - 3.x: devices are array elements carrying "device_id"; pass id nil and
//     the element's index (path "arm3[0]").
//   - 3.0: devices are members keyed by id; pass the key as id (path
//     "arm3.049D"); index is unused.
func (m *ClientMessage) DecodeDevice(dt DeviceType, typeKey string, index int, id []byte, body Value) {
	e := m.nextDevice()
	e.Type, e.TypeKey = dt, typeKey
	idFromLayout := id != nil
	m.keyedByID = idFromLayout
	m.pathBuf = append(m.pathBuf[:0], typeKey...)
	if idFromLayout {
		// Copy the id first: an escaped key lives in the Doc's scratch
		// space, which the next string read reuses.
		e.DeviceID = reuse(e.DeviceID, id)
		m.pathBuf = append(append(m.pathBuf, '.'), id...)
	} else {
		m.pathBuf = append(strconv.AppendInt(append(m.pathBuf, '['), int64(index), 10), ']')
	}
	e.Path = reuse(e.Path, m.pathBuf)
	at := rootPath(e.Path)
	m.errs.list = &m.Errors
	at.errs = &m.errs
	if idFromLayout && len(id) == 0 {
		m.Fail(CodeInvalidValue, e.Path, "a device key must be a non-empty device id such as \"049D\"")
		return
	}
	if body.Kind() != KindObject {
		// Constant formats: a flood of bad entries past MaxErrors must
		// not allocate (a string argument would, per entry).
		if idFromLayout { // 3.0: the key is the id
			m.Fail(CodeInvalidValue, e.Path, `a device entry must be an object like {"commands": {...}} under its id, got %s`, body.Kind())
		} else {
			m.Fail(CodeInvalidValue, e.Path, `a device entry must be an object like {"device_id": "049D", "commands": {...}}, got %s`, body.Kind())
		}
		e.DeviceID = ""
		return
	}
	if !idFromLayout {
		v := body.Member("device_id")
		b, ok := v.StringBytes()
		if !ok || len(b) == 0 {
			c := at.child("device_id")
			m.fail(errAt(CodeInvalidValue, &c, `a device entry needs "device_id": a string such as "049D"`))
			e.DeviceID = ""
			return
		}
		e.DeviceID = reuse(e.DeviceID, b)
	}
	w := m.warnings()
	for it := body.Members(); it.Next(); {
		val := it.Value()
		switch {
		case (it.KeyIs("commands") || it.KeyIs("configure") || it.KeyIs("effects")) && it.Superseded():
			// Given again later: the last occurrence counts, so a
			// "commands": null after a force commands nothing.
		case it.KeyIs("device_id"):
			if idFromLayout && val.Exists() {
				if b, ok := val.StringBytes(); !ok || string(b) != e.DeviceID {
					c := at.child("device_id")
					w.add(CodeUnknownField, &c, "device_id inside a device keyed by id is ignored: the key %q names the device", e.DeviceID)
				}
			}
		case it.KeyIs("commands"):
			if !val.Exists() {
				continue
			}
			at.push("commands")
			m.decodeCommands(e, val, &at)
			at.pop()
		case it.KeyIs("configure"):
			if !val.Exists() {
				continue
			}
			c := at.child("configure")
			m.decodeConfigure(e, val, &c)
		case it.KeyIs("effects"):
			if !val.Exists() {
				continue
			}
			c := at.child("effects")
			if e.Type != TypeArm {
				w.add(CodeUnknownKey, &c, "effects need a force output: a %s has none, ignored", e.TypeKey)
				continue
			}
			errs := partErrors{to: m}
			if decodeEffectsUpdate(val, &c, w, &e.Effects, &errs); errs.n == 0 {
				e.HasEffects = true
			}
		default:
			w.unknownField(&at, &it)
		}
	}
}

// decodeCommands decodes a device's commands, recording the error of each
// bad one (the message then applies nothing).
func (m *ClientMessage) decodeCommands(e *DeviceEntry, v Value, at *pathSeg) {
	if err := expectObject(v, at, `{"set_cursor_force": {"vector": {"x": 0, "y": 0, "z": 1}}}`); err != nil {
		m.fail(err)
		return
	}
	w := m.warnings()
	var control [len(commandTable)]DeviceCommand
	var present uint16
	probe := CmdNone
	for it := v.Members(); it.Next(); {
		kind := commandFromName(it.Key())
		if kind != CmdNone && it.Superseded() {
			continue // the command again later: the last occurrence counts
		}
		if kind == CmdNone {
			if ok, err := m.decodeStateCommand(e, it.Key(), it.Value(), &it, at); ok {
				if err != nil {
					m.fail(err)
				}
				continue
			}
			name := string(it.Key())
			c := at.child(name)
			w.add(CodeUnknownCommand, &c, "unknown command %q: ignored", name)
			continue
		}
		info := &commandTable[kind]
		if info.dt != e.Type {
			c := at.child(info.name)
			w.add(CodeUnknownCommand, &c, "%s is not a command for %s devices: ignored", info.name, e.TypeKey)
			continue
		}
		val := it.Value()
		if !val.Exists() {
			continue
		}
		at.push(info.name)
		cmd, err := decodeCommand(kind, val, at, w)
		at.pop()
		if err != nil {
			m.fail(err)
			continue
		}
		if info.control {
			control[kind] = cmd
			present |= 1 << kind
		} else {
			probe = kind
		}
	}
	winner := CmdNone
	for k := CmdSetCursorForce; int(k) < len(commandTable); k++ {
		if present&(1<<k) != 0 && (winner == CmdNone || commandTable[k].rank < commandTable[winner].rank) {
			winner = k
		}
	}
	for k := CmdSetCursorForce; int(k) < len(commandTable); k++ {
		if present&(1<<k) != 0 && k != winner {
			c := at.child(commandTable[k].name)
			w.add(CodeCommandIgnored, &c, "%s ignored: %s takes precedence (send one control command per device per message)",
				commandTable[k].name, commandTable[winner].name)
		}
	}
	switch {
	case winner != CmdNone:
		e.Command = control[winner]
	case probe != CmdNone:
		e.Command = DeviceCommand{Kind: probe}
	}
}

func decodeCommand(kind CommandKind, v Value, at *pathSeg, w warnings) (DeviceCommand, *Error) {
	cmd := DeviceCommand{Kind: kind}
	info := &commandTable[kind]
	if !info.control {
		if err := expectObject(v, at, info.example); err != nil {
			return cmd, err
		}
		for it := v.Members(); it.Next(); {
			w.unknownField(at, &it)
		}
		return cmd, nil
	}
	names := info.fields
	example := info.example
	if err := expectObject(v, at, example); err != nil {
		return cmd, err
	}
	var main, alt Value
	for it := v.Members(); it.Next(); {
		switch {
		case it.KeyIs(names[0]):
			main = it.Value()
		case names[1] != "" && it.KeyIs(names[1]):
			alt = it.Value()
		default:
			w.unknownField(at, &it)
		}
	}
	field := names[0]
	val := main
	if !main.Exists() {
		val, field = alt, names[1]
	} else if alt.Exists() {
		c := at.child(names[1])
		w.add(CodeUnknownField, &c, "%s ignored: %s is given too (send one of them)", names[1], names[0])
	}
	if !val.Exists() {
		if names[1] != "" {
			return cmd, errAt(CodeInvalidValue, at, "%s needs %q (or %q), e.g. %s", kind.Name(), names[0], names[1], example)
		}
		return cmd, errAt(CodeInvalidValue, at, "%s needs %q, e.g. %s", kind.Name(), names[0], example)
	}
	at.push(field)
	var err *Error
	switch kind {
	case CmdSetCursorForce, CmdSetCursorPosition:
		cmd.Vec, err = readVec3(val, at, w)
	default:
		cmd.Angles, err = readAngles3(val, at, w)
	}
	at.pop()
	return cmd, err
}

// configureSeen is what a configure has given so far: the decoded entries,
// and which keys it named at all (valid or not), for the checks that span
// keys (preset with mount, a key given flat and under filters).
type configureSeen struct {
	got     [numKeys + 1]Entry
	present [numKeys + 1]bool
	failed  bool
}

// decodeConfigure decodes a device entry's configure. It records every error
// it finds rather than the first (the message then applies nothing), so a
// client fixing its configuration sees each bad key in one frame.
func (m *ClientMessage) decodeConfigure(e *DeviceEntry, v Value, at *pathSeg) {
	if err := expectObject(v, at, `{"preset": {"preset": "arm_front"}}`); err != nil {
		m.fail(err)
		return
	}
	var seen configureSeen
	for it := v.Members(); it.Next(); {
		val := it.Value()
		if it.KeyIs("filters") {
			if !val.Exists() || it.Superseded() {
				continue
			}
			fat := at.child("filters")
			if err := expectObject(val, &fat, `{"damping": {...}, "force_gate": {...}}`); err != nil {
				m.fail(err)
				seen.failed = true
				continue
			}
			for f := val.Members(); f.Next(); {
				k, ok := keyFromNameBytes(f.Key())
				if !ok || (k != KeyDamping && k != KeyForceGate) {
					name := string(f.Key())
					c := fat.child(name)
					m.warnings().add(CodeUnknownKey, &c, "unknown filter %q: ignored (filters are damping and force_gate)", name)
					continue
				}
				if f.Superseded() {
					continue // the filter again later: the last occurrence counts
				}
				m.configureEntry(e, k, f.Value(), &fat, &seen)
			}
			continue
		}
		k, ok := keyFromNameBytes(it.Key())
		if !ok {
			name := string(it.Key())
			c := at.child(name)
			m.warnings().add(CodeUnknownKey, &c, "unknown configure key %q: ignored", name)
			continue
		}
		if it.Superseded() {
			continue // the key again later: the last occurrence counts
		}
		m.configureEntry(e, k, val, at, &seen)
	}
	// Named at all, not only valid: a client that fixes its bad mount
	// must not then learn that it cannot send a preset beside it.
	if seen.present[KeyPreset] && seen.present[KeyMount] {
		m.fail(errAt(CodePresetMountConflict, at, "preset and mount exclude each other: send one of them (a mount makes the preset read \"custom\")"))
		seen.failed = true
	}
	if seen.failed {
		return
	}
	for k := KeyPreset; int(k) <= numKeys; k++ {
		if seen.got[k] != nil {
			e.Configure = append(e.Configure, seen.got[k])
		}
	}
}

// configureEntry decodes one configure key into seen, recording its error
// (if any) in m.
func (m *ClientMessage) configureEntry(e *DeviceEntry, k Key, val Value, parent *pathSeg, seen *configureSeen) {
	c := parent.child(k.Name())
	if !k.AppliesTo(e.Type) {
		// Before HTTP-only: a grip has no such route to point at, and a
		// setting the device does not have changes nothing (a warning;
		// the rest of the message applies).
		m.warnings().add(CodeUnknownKey, &c, "%s has no effect on a grip: ignored", k.Name())
		return
	}
	if !k.SessionScoped() { // only session-scoped keys travel in a WebSocket configure
		prefix := "" // the route on the port that serves the session's format
		if m.keyedByID {
			prefix = LegacyRoutePrefix
		}
		m.fail(errAt(CodeHTTPOnlyKey, &c, "%s is HTTP-only: use POST %s/%s/%s/config/%s", k.Name(), prefix, e.TypeKey, e.DeviceID, k.Path()))
		seen.failed = true
		return
	}
	if !val.Exists() {
		return
	}
	if seen.present[k] {
		m.fail(errAt(CodeInvalidValue, &c, "%s is given twice (as a flat key and under filters): send it once", k.Name()))
		seen.failed = true
		return
	}
	seen.present[k] = true
	entry, err := decodeReusing(k, val, &c, m.warnings(), e.Configure[:cap(e.Configure)])
	if err != nil {
		m.fail(err)
		seen.failed = true
		return
	}
	seen.got[k] = entry
}

// reused is old when it holds v (re-sent unchanged: no allocation), else
// v as an Entry; nil with a failed decode's error (a value that failed,
// boxed into an Entry, would cost an allocation).
func reused[T interface {
	comparable
	Entry
}](old Entry, v T, err *Error) (Entry, *Error) {
	if err != nil {
		return nil, err
	}
	if o, ok := old.(T); ok && o == v {
		return old, nil
	}
	return v, nil
}

// decodeReusing decodes a WebSocket configure entry. When the same device
// slot carried an equal entry in the previous message, that Entry is
// returned instead of a new one: clients may re-send configure every tick,
// and boxing a fresh value into the interface would allocate each time.
func decodeReusing(k Key, val Value, at *pathSeg, w warnings, prev []Entry) (Entry, *Error) {
	var old Entry
	for _, p := range prev {
		if p != nil && p.Key() == k {
			old = p
			break
		}
	}
	switch k {
	case KeyPreset:
		v, err := decodePreset(val, at, w)
		return reused(old, v, err)
	case KeyMount:
		v, err := decodeMount(val, at, w)
		return reused(old, v, err)
	case KeyBasis:
		v, err := decodeBasis(val, at, w)
		return reused(old, v, err)
	case KeyDamping:
		p, err := decodeDampingParts(val, at, w)
		if err != nil {
			return nil, err
		}
		if o, ok := old.(Damping); ok && p.equal(o) {
			return old, nil
		}
		return p.damping(), nil
	case KeyForceGate:
		v, err := decodeForceGate(val, at, w)
		return reused(old, v, err)
	case KeyNavigation:
		v, err := decodeNavigation(val, at, w)
		return reused(old, v, err)
	}
	return decodeEntryValue(k, val, at, w)
}

// decodeSession decodes the "session" part of a message.
func (m *ClientMessage) decodeSession(v Value) {
	if !v.Exists() {
		return
	}
	at := rootPath("session")
	if err := expectObject(v, &at, `{"configure": {...}}`); err != nil {
		m.fail(err)
		return
	}
	w := m.warnings()
	for it := v.Members(); it.Next(); {
		val := it.Value()
		if !val.Exists() {
			continue
		}
		var err *Error
		switch {
		case (it.KeyIs("configure") || it.KeyIs("force_render_full_state") || it.KeyIs("set_coordinate_origin") || it.KeyIs("set_basis")) && it.Superseded():
			// Given again later: the last occurrence counts.
		case it.KeyIs("configure"):
			c := at.child("configure")
			m.decodeSessionConfigure(val, &c)
		case it.KeyIs("force_render_full_state"):
			c := at.child("force_render_full_state")
			err = m.decodeFullState(val, &c)
		case it.KeyIs("set_coordinate_origin"):
			c := at.child("set_coordinate_origin")
			m.Session.DeprecatedSent = append(m.Session.DeprecatedSent, CommandSetCoordinateOrigin)
			err = m.decodeSetCoordinateOrigin(val, &c)
		case it.KeyIs("set_basis"):
			c := at.child("set_basis")
			m.Session.DeprecatedSent = append(m.Session.DeprecatedSent, CommandSetBasis)
			err = m.decodeSetBasis(val, &c)
		case it.KeyIs(keepAlive):
		default:
			name := string(it.Key())
			c := at.child(name)
			w.add(CodeUnknownKey, &c, "unknown session key %q: ignored", name)
		}
		if err != nil {
			m.fail(err)
		}
	}
}

// decodeSessionConfigure decodes session.configure, recording every error
// it finds rather than the first (the message then applies nothing), as
// decodeConfigure does for a device.
func (m *ClientMessage) decodeSessionConfigure(v Value, at *pathSeg) {
	if err := expectObject(v, at, `{"profile": {"name": "co.example.app:main"}}`); err != nil {
		m.fail(err)
		return
	}
	w := m.warnings()
	for it := v.Members(); it.Next(); {
		val := it.Value()
		if !val.Exists() {
			continue
		}
		var err *Error
		switch {
		case (it.KeyIs("profile") || it.KeyIs("basis") || it.KeyIs("lease") || it.KeyIs("subscribe")) && it.Superseded():
			// Given again later: the last occurrence counts.
		case it.KeyIs("profile"):
			c := at.child("profile")
			err = m.decodeProfile(val, &c)
		case it.KeyIs("basis"):
			c := at.child("basis")
			var b Basis
			if b, err = decodeBasis(val, &c, w); err == nil {
				m.basis = b
				m.Session.Basis = &m.basis
			}
		case it.KeyIs("lease"):
			c := at.child("lease")
			err = m.decodeLease(val, &c)
		case it.KeyIs("subscribe"):
			c := at.child("subscribe")
			err = m.decodeSubscribe(val, &c)
		default:
			name := string(it.Key())
			c := at.child(name)
			w.add(CodeUnknownKey, &c, "unknown session configure key %q: ignored", name)
		}
		if err != nil {
			m.fail(err)
		}
	}
}

func (m *ClientMessage) decodeLease(v Value, at *pathSeg) *Error {
	ms, mc, err := soleMember(v, at, m.warnings(), "ms", `{"ms": 100}`)
	if err != nil {
		return err
	}
	if !ms.Exists() {
		return errAt(CodeInvalidValue, at, `lease needs "ms" (%d..%d), e.g. {"ms": 100}`, LeaseMinMs, LeaseMaxMs)
	}
	n, err := readInt(ms, &mc, LeaseMinMs, LeaseMaxMs)
	if err != nil {
		return err
	}
	m.Session.LeaseMs = n
	return nil
}

// MaxProfileNameLen bounds a profile name: profiles name files in the state
// directory, and a file name is at most 255 bytes once escaped.
const MaxProfileNameLen = 64

func (m *ClientMessage) decodeProfile(v Value, at *pathSeg) *Error {
	if err := expectObject(v, at, `{"name": "co.example.app:main"}`); err != nil {
		return err
	}
	var name, req Value
	for it := v.Members(); it.Next(); {
		switch {
		case it.KeyIs("name"):
			name = it.Value()
		case it.KeyIs("required_version"):
			req = it.Value()
		default:
			m.warnings().unknownField(at, &it)
		}
	}
	nc := at.child("name")
	b, ok := name.StringBytes()
	if !ok || len(b) == 0 {
		return errAt(CodeInvalidValue, &nc, `profile needs "name": a non-empty string such as "co.example.app:main"`)
	}
	if utf8.RuneCount(b) > MaxProfileNameLen {
		return errAt(CodeOutOfRange, &nc, "profile name is %d characters; at most %d are allowed (it names files in the state directory)", utf8.RuneCount(b), MaxProfileNameLen)
	}
	m.profile.Name = reuse(m.profile.Name, b)
	m.profile.RequiredVersion = ""
	if req.Exists() {
		rc := at.child("required_version")
		rb, ok := req.StringBytes()
		if !ok {
			return errAt(CodeInvalidValue, &rc, `required_version must be a string such as ">=3.5", got %s`, req.Kind())
		}
		m.profile.RequiredVersion = reuse(m.profile.RequiredVersion, rb)
		match, valid := VersionSatisfies(APIVersion, m.profile.RequiredVersion)
		if !valid {
			return errAt(CodeInvalidValue, &rc, `required_version %q is not a version constraint: write e.g. ">=3.5", "3.x" or ">=3.1,<4"`, rb)
		}
		if !match {
			m.warnings().add(CodeVersionMismatch, &rc, "profile requires API %s but this service speaks %s: continuing", m.profile.RequiredVersion, APIVersion)
		}
	}
	m.Session.Profile = &m.profile
	return nil
}

func (m *ClientMessage) decodeFullState(v Value, at *pathSeg) *Error {
	if err := expectObject(v, at, `{} or {"device_types": ["arm3"]}`); err != nil {
		return err
	}
	m.fullState.DeviceTypes = nil
	for it := v.Members(); it.Next(); {
		if !it.KeyIs("device_types") {
			m.warnings().unknownField(at, &it)
			continue
		}
		if it.Superseded() {
			continue // given again later: the last occurrence counts
		}
		list := it.Value()
		if !list.Exists() {
			continue
		}
		c := at.child("device_types")
		if list.Kind() != KindArray {
			return errAt(CodeInvalidValue, &c, `device_types must be an array of type keys like ["arm3"], got %s`, list.Kind())
		}
		// A client-side reference table of types: the message's own keys
		// are resolved against the same table the message used.
		m.fullState.DeviceTypes = m.typesBuf[:0]
		for el := list.Elements(); el.Next(); {
			ec := c.elem(el.Index())
			b, ok := el.Value().StringBytes()
			if !ok {
				return errAt(CodeInvalidValue, &ec, "device type must be a string, got %s", el.Value().Kind())
			}
			dt, found := m.resolveType(b)
			if !found {
				m.warnings().add(CodeUnknownDeviceType, &ec, "unknown device type %q: ignored", b)
				continue
			}
			dup := false
			for _, have := range m.fullState.DeviceTypes {
				dup = dup || have == dt
			}
			if !dup {
				m.fullState.DeviceTypes = append(m.fullState.DeviceTypes, dt)
			}
		}
	}
	m.Session.FullState = &m.fullState
	return nil
}

// resolveType resolves a type key seen inside the message against the table
// the decode was called with.
func (m *ClientMessage) resolveType(b []byte) (DeviceType, bool) {
	dt, _, ok := m.types.Lookup(b)
	return dt, ok
}

func (m *ClientMessage) decodeSetCoordinateOrigin(v Value, at *pathSeg) *Error {
	origin, c, err := soleMember(v, at, m.warnings(), "coordinate_origin", `{"coordinate_origin": "device_base"}`)
	if err != nil {
		return err
	}
	b, ok := origin.StringBytes()
	if !ok {
		return errAt(CodeInvalidValue, &c, `set_coordinate_origin needs "coordinate_origin": "device_base" or "workspace_center"`)
	}
	preset, ok := CoordinateOriginPreset(string(b))
	if !ok {
		return errAt(CodeInvalidValue, &c, `unknown coordinate_origin %q: use "device_base" or "workspace_center" (better: configure.preset per device)`, b)
	}
	m.Session.SetCoordinateOrigin = preset
	return nil
}

func (m *ClientMessage) decodeSetBasis(v Value, at *pathSeg) *Error {
	basis, c, err := soleMember(v, at, m.warnings(), "basis", `{"basis": {"permutation": "XZY"}}`)
	if err != nil {
		return err
	}
	if !basis.Exists() {
		return errAt(CodeInvalidValue, at, `set_basis needs "basis": {"permutation": "XZY"}`)
	}
	b, err := decodeBasis(basis, &c, m.warnings())
	if err != nil {
		return err
	}
	m.setBasis = b
	m.Session.SetBasis = &m.setBasis
	return nil
}
