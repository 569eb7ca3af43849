package protocol

import "strconv"

// DeviceInfo is a device's identity as frames report it.
type DeviceInfo struct {
	ID, UUID string
	// Port is where the device is attached ("/dev/ttyACM0"); "" for a
	// simulated device. config.port is always written: clients print it.
	Port string
	// Model is the vendor's device type number (device_info.device_type:
	// 4 for an Inverse3); 0 omits it.
	Model int
	// Major and Minor are the device's version numbers; 3.x spells them
	// major_version and minor_version, 3.0 firmware_version and
	// hardware_version.
	Major, Minor int
	// Family is the device's product family (FamilyOf(...).Name): config.type
	// where its collection holds the family ("minverse" in "inverse3").
	Family string
	// FirmwareDigest is an arm's config.extended_firmware_version (32 hex
	// digits); "" omits it.
	FirmwareDigest string
}

// ControlMode is what an arm is doing (state.control_mode).
type ControlMode uint8

const (
	ControlIdle ControlMode = iota
	ControlForce
	ControlPosition
	ControlTorque
	ControlAngle
)

// controlModeNames is indexed by ControlMode; never written.
var controlModeNames = [...]string{"idle", "force", "position", "torque", "angle"}

func (m ControlMode) String() string {
	if int(m) < len(controlModeNames) {
		return controlModeNames[m]
	}
	return "idle"
}

// ControlDomain is the space an arm is commanded in (state.control_domain).
type ControlDomain uint8

const (
	DomainCartesian ControlDomain = iota
	DomainAngular
)

func (d ControlDomain) String() string {
	if d == DomainAngular {
		return "angular"
	}
	return "cartesian"
}

// ArmState is an arm's state in the session's application space.
type ArmState struct {
	CursorPosition, CursorVelocity   Vec3    // m, m/s
	AngularPosition, AngularVelocity Angles3 // deg, deg/s
	BodyOrientation                  Quat
	// Ext holds hapticd's extension members (effects, passivity,
	// navigation); nil writes none. It is read, never written, by the
	// encoder.
	Ext *ArmStateExtensions
	// CurrentCursorForce is what the device applies after filters and
	// limits, in N.
	CurrentCursorForce Vec3
	// CurrentCursorPosition, CurrentAngularPosition and
	// CurrentAngularTorques are what the arm is commanded to: the target of
	// position, angle or torque control; zero in other modes.
	CurrentCursorPosition  Vec3
	CurrentAngularPosition Angles3
	CurrentAngularTorques  Angles3
	ControlMode            ControlMode
	ControlDomain          ControlDomain
	// CalibrationState is state.calibration_state: CalibrationDone (2)
	// once calibrated, CalibrationNone (0) before.
	CalibrationState int
	// Transform is the session's workspace transform (set_transform);
	// sub-fields at their identity are omitted from state.transform.
	Transform Transform
}

// ArmStatus is an arm's status flags.
type ArmStatus struct{ Calibrated, InUse, Ready, Started, PowerSupply bool }

// GripButtons is a grip's buttons.
type GripButtons struct{ A, B, C bool }

// GripState is a grip's state in the session's application space.
type GripState struct {
	Orientation Quat
	Buttons     GripButtons
	Hall        float64 // 0..1
	Battery     float64 // 0..1, reported as battery_level
}

// GripStatus is a grip's status flags. Error is the firmware's error code
// (0: none), which a wired grip reports as status.error.
type GripStatus struct {
	Connected, Awake, Ready bool
	Error                   int
}

// DeviceView is one device's configuration as one session sees it.
type DeviceView struct {
	Info    DeviceInfo
	Device  DeviceConfig  // arms only
	Session SessionConfig // this session's entries for the device
	Basis   Basis         // effective: the device basis, else the session's
	Mount   Transform     // effective: the user's mount or the preset's transform
}

// ArmFrame is one arm's element of a frame.
type ArmFrame struct {
	DeviceID string
	Config   *DeviceView // nil: the element carries no "config"
	// Element, when set and Config is nil, is the whole element (its
	// device id, state, status and closing brace) already encoded by the
	// same format's AppendArmElement; it is copied as is, and DeviceID,
	// State and Status are not read (a reused element may hold an older
	// frame's). Many sessions that see a device alike share one encoding
	// per tick, its id quoted once. It sits beside DeviceID and Config so
	// that filling an element with it writes one cache line of the
	// 384-byte element, not four.
	Element []byte
	// Spliced marks Element as one its frame's writer sends from where it
	// lies (a run of every arm's element, shared by many frames): with
	// Frame.Splice set, the encoder leaves it out and records where it
	// belongs (Frame.SplicedAt), so a 63 KB run is not copied per frame.
	// Without Frame.Splice it is copied as any Element.
	Spliced bool
	State   ArmState
	Status  ArmStatus
}

// GripFrame is one grip's element of a frame.
type GripFrame struct {
	DeviceID string
	// Link decides the grip's collection under the product names.
	Link   Link
	Config *DeviceView
	State  GripState
	Status GripStatus
	// Element is as ArmFrame.Element (AppendGripElement); Link is read
	// still, to place the element in its collection.
	Element []byte
}

// SessionView is the session's own configuration as frames report it.
type SessionView struct {
	Profile *Profile // nil: "profile": null
	Basis   Basis
	LeaseMs int
}

// Frame is one frame sent to a client (PROTOCOL 2.1, 2.3), or the body of
// GET /devices.
type Frame struct {
	SessionID uint64 // 0: omit (GET /devices)
	Arms      []ArmFrame
	Grips     []GripFrame
	Session   *SessionView // nil: omit
	Errors    []Error      // omitted when empty
	Warnings  []Error      // omitted when empty
	// ArmState selects the arm state fields written (zero: every field):
	// the session's subscription (subscribe.go). A selection writes each
	// arm's state afresh, never ArmFrame.Element.
	ArmState StateFields
	// Splice asks the encoder to leave out the first arm element marked
	// Spliced; SplicedAt is then where in the encoding its bytes belong (an
	// index into the slice the encoder returns), or -1 when no element was
	// left out. The frame's bytes are the encoding up to SplicedAt, the
	// element, then the rest. Without Splice the encoder writes nothing in f.
	Splice    bool
	SplicedAt int
}

// Spelling holds what differs between the 3.x and 3.0 frame formats: a few
// member names and the layout of a device collection. The encoding logic is
// shared (AppendFrameAs).
type Spelling struct {
	MajorVersion, MinorVersion string // device_info members for DeviceInfo.Major, Minor
	ControlMode                string // arm state member for ControlMode
	// KeyedByID lays a device collection out as an object keyed by device
	// id ({"049D": {"state": ...}}, 3.0) instead of an array of elements
	// that carry "device_id" ([{"device_id": "049D", "state": ...}], 3.x).
	KeyedByID bool
}

// Spelling3x is the 3.x spelling.
func Spelling3x() Spelling {
	return Spelling{MajorVersion: "major_version", MinorVersion: "minor_version", ControlMode: "control_mode"}
}

// AppendFrame appends the 3.x JSON of f. Every collection of the naming
// table is present (possibly empty) and every device is in exactly one;
// config.type carries the collection's name. It does not allocate once dst
// has the capacity.
func AppendFrame(dst []byte, f *Frame, types *TypeTable) []byte {
	return AppendFrameAs(dst, f, types, Spelling3x())
}

// AppendFrameAs appends the JSON of f in the format sp describes; it is the
// one frame encoder behind AppendFrame and protocol/v30's. Every collection
// of types is present and every device is in exactly one. It does not
// allocate once dst has the capacity.
func AppendFrameAs(dst []byte, f *Frame, types *TypeTable, sp Spelling) []byte {
	open, end := byte('['), byte(']')
	if sp.KeyedByID {
		open, end = '{', '}'
	}
	if f.Splice {
		f.SplicedAt = -1 // written only when asked: a frame not splicing stays read-only
	}
	dst = append(dst, '{')
	if f.SessionID != 0 {
		dst = append(dst, `"session_id":`...)
		dst = strconv.AppendUint(dst, f.SessionID, 10)
		dst = append(dst, ',')
	}
	for i, c := range types.Collections() {
		if i > 0 {
			dst = append(dst, ',')
		}
		// The collection keys are the naming table's identifiers, which
		// need no escaping (TestCollectionKeysNeedNoEscaping): copied, not
		// scanned byte by byte, in every frame.
		dst = append(append(append(dst, '"'), c.Key...), '"', ':', open)
		n := 0
		switch c.Type {
		case TypeArm:
			for j := range f.Arms {
				if n > 0 {
					dst = append(dst, ',')
				}
				n++
				if a := &f.Arms[j]; a.Config == nil && a.Element != nil && f.ArmState == 0 {
					if a.Spliced && f.Splice && f.SplicedAt < 0 {
						f.SplicedAt = len(dst) // the writer sends a.Element here
						continue
					}
					dst = append(dst, a.Element...)
					continue
				}
				dst = appendElementHead(dst, f.Arms[j].DeviceID, sp)
				dst = appendArmBody(dst, &f.Arms[j], c.Key, sp, f.ArmState)
				dst = append(dst, '}')
			}
		case TypeGrip:
			for j := range f.Grips {
				if !c.Holds(TypeGrip, f.Grips[j].Link) {
					continue
				}
				if n > 0 {
					dst = append(dst, ',')
				}
				n++
				if g := &f.Grips[j]; g.Config == nil && g.Element != nil {
					dst = append(dst, g.Element...)
					continue
				}
				dst = appendElementHead(dst, f.Grips[j].DeviceID, sp)
				dst = appendGripBody(dst, &f.Grips[j], c.Key, sp)
				dst = append(dst, '}')
			}
		}
		dst = append(dst, end)
	}
	dst = appendFrameTail(dst, f)
	return append(dst, '}')
}

// appendElementHead opens one device's element of a collection, up to where
// its body starts: "049D":{ keyed by id, {"device_id":"049D", in an array.
func appendElementHead(dst []byte, id string, sp Spelling) []byte {
	if sp.KeyedByID {
		dst = AppendString(dst, id)
		return append(dst, ':', '{')
	}
	dst = append(dst, `{"device_id":`...)
	dst = AppendString(dst, id)
	return append(dst, ',')
}

// AppendArmElement appends an arm's whole element without config (its
// device id, "state" and "status", and the closing brace) in spelling sp,
// as AppendFrameAs writes it: what a codec stores in ArmFrame.Element.
func AppendArmElement(dst []byte, a *ArmFrame, sp Spelling) []byte {
	dst = appendElementHead(dst, a.DeviceID, sp)
	dst = appendArmState(dst, &a.State, &a.Status, sp, 0)
	return append(dst, '}')
}

// AppendGripElement is AppendArmElement for a grip (GripFrame.Element).
func AppendGripElement(dst []byte, g *GripFrame, sp Spelling) []byte {
	dst = appendElementHead(dst, g.DeviceID, sp)
	dst = appendGripState(dst, &g.State, &g.Status, g.Link)
	return append(dst, '}')
}

// appendArmBody appends the members "config" (when a.Config is set),
// "state" and "status" of one arm element, without braces: the element
// layout around them is AppendFrameAs's.
func appendArmBody(dst []byte, a *ArmFrame, typeKey string, sp Spelling, fields StateFields) []byte {
	if c := a.Config; c != nil {
		dst = appendConfigHead(dst, c, typeKey, sp)
		if c.Info.UUID != "" {
			dst = append(dst, `,"extended_device_id":`...)
			dst = AppendString(dst, c.Info.UUID)
		}
		if c.Info.FirmwareDigest != "" {
			dst = append(dst, `,"extended_firmware_version":`...)
			dst = AppendString(dst, c.Info.FirmwareDigest)
		}
		dst = append(dst, `,"streaming_mode":"`+StreamingMode+`",`...)
		dst = c.Device.appendMembers(dst)
		dst = appendPlacement(dst, c)
		dst = append(dst, `,"filters":{"damping":`...)
		dst = c.Session.Damping.AppendJSON(dst)
		dst = append(dst, `,"force_gate":`...)
		dst = c.Session.ForceGate.AppendJSON(dst)
		dst = append(dst, `},"navigation":`...)
		dst = c.Session.Navigation.AppendJSON(dst)
		dst = append(dst, `},`...)
	}
	return appendArmState(dst, &a.State, &a.Status, sp, fields)
}

// appendArmState appends an arm's "state" (the fields selects) and its
// whole "status". The fields are written one by one, in the order of
// ArmStateFieldNames (TestFrameCarriesTheSubscribedStateFields holds the
// two together): a table of appenders was 10 % slower per frame.
func appendArmState(dst []byte, s *ArmState, st *ArmStatus, sp Spelling, fields StateFields) []byte {
	dst = append(dst, `"state":{`...)
	open := len(dst)
	if fields.Has(FieldCursorPosition) {
		dst = appendVec3(stateKey(dst, open, `"cursor_position":`), measured, s.CursorPosition)
	}
	if fields.Has(FieldCursorVelocity) {
		dst = appendVec3(stateKey(dst, open, `"cursor_velocity":`), measured, s.CursorVelocity)
	}
	if fields.Has(FieldAngularPosition) {
		dst = appendAngles3(stateKey(dst, open, `"angular_position":`), measured, s.AngularPosition)
	}
	if fields.Has(FieldAngularVelocity) {
		dst = appendAngles3(stateKey(dst, open, `"angular_velocity":`), measured, s.AngularVelocity)
	}
	if fields.Has(FieldBodyOrientation) {
		dst = appendQuat(stateKey(dst, open, `"body_orientation":`), measured, s.BodyOrientation)
	}
	if fields.Has(FieldCurrentCursorForce) {
		dst = appendVec3(stateKey(dst, open, `"current_cursor_force":`), measured, s.CurrentCursorForce)
	}
	if fields.Has(FieldCurrentCursorPosition) {
		dst = appendVec3(stateKey(dst, open, `"current_cursor_position":`), measured, s.CurrentCursorPosition)
	}
	if fields.Has(FieldCurrentAngularPosition) {
		dst = appendAngles3(stateKey(dst, open, `"current_angular_position":`), measured, s.CurrentAngularPosition)
	}
	if fields.Has(FieldCurrentAngularTorques) {
		dst = appendAngles3(stateKey(dst, open, `"current_angular_torques":`), measured, s.CurrentAngularTorques)
	}
	if fields.Has(FieldTransform) {
		dst = appendPartialTransform(stateKey(dst, open, `"transform":`), s.Transform)
	}
	if s.Ext != nil {
		dst = s.Ext.appendMembers(dst, open)
	}
	if fields.Has(FieldControlMode) {
		dst = appendKey(stateKey(dst, open, ""), sp.ControlMode)
		dst = AppendString(dst, s.ControlMode.String())
	}
	if fields.Has(FieldControlDomain) {
		dst = AppendString(stateKey(dst, open, `"control_domain":`), s.ControlDomain.String())
	}
	if fields.Has(FieldCalibrationState) {
		dst = strconv.AppendInt(stateKey(dst, open, `"calibration_state":`), int64(s.CalibrationState), 10)
	}
	dst = append(dst, `},"status":{"calibrated":`...)
	dst = appendBool(dst, st.Calibrated)
	dst = append(dst, `,"in_use":`...)
	dst = appendBool(dst, st.InUse)
	dst = append(dst, `,"ready":`...)
	dst = appendBool(dst, st.Ready)
	dst = append(dst, `,"started":`...)
	dst = appendBool(dst, st.Started)
	dst = append(dst, `,"power_supply":`...)
	dst = appendBool(dst, st.PowerSupply)
	return append(dst, '}')
}

// stateKey appends key after a comma unless it is the first member since
// the state object opened at open.
func stateKey(dst []byte, open int, key string) []byte {
	if len(dst) > open {
		dst = append(dst, ',')
	}
	return append(dst, key...)
}

// appendGripBody is appendArmBody for a grip.
func appendGripBody(dst []byte, g *GripFrame, typeKey string, sp Spelling) []byte {
	if c := g.Config; c != nil {
		dst = appendConfigHead(dst, c, typeKey, sp)
		dst = appendPlacement(dst, c)
		dst = append(dst, `},`...)
	}
	return appendGripState(dst, &g.State, &g.Status, g.Link)
}

// appendGripState appends a grip's state and status. A wired grip also
// reports its main button as "button", the wired VerseGrip's own field that
// clients of the wired handle read.
func appendGripState(dst []byte, s *GripState, st *GripStatus, link Link) []byte {
	dst = append(dst, `"state":{"orientation":`...)
	dst = appendQuat(dst, measured, s.Orientation)
	dst = append(dst, `,"buttons":{"a":`...)
	dst = appendBool(dst, s.Buttons.A)
	dst = append(dst, `,"b":`...)
	dst = appendBool(dst, s.Buttons.B)
	dst = append(dst, `,"c":`...)
	dst = appendBool(dst, s.Buttons.C)
	if link == LinkWired {
		dst = append(dst, `},"button":`...)
		dst = appendBool(dst, s.Buttons.A)
		dst = append(dst, `,"hall":`...)
	} else {
		dst = append(dst, `},"hall":`...)
	}
	dst = appendNumber(dst, s.Hall, measured)
	dst = append(dst, `,"battery_level":`...)
	dst = appendNumber(dst, s.Battery, measured)
	dst = append(dst, `},"status":{"connected":`...)
	dst = appendBool(dst, st.Connected)
	dst = append(dst, `,"awake":`...)
	dst = appendBool(dst, st.Awake)
	dst = append(dst, `,"ready":`...)
	dst = appendBool(dst, st.Ready)
	if link == LinkWired {
		dst = append(dst, `,"error":`...)
		dst = strconv.AppendInt(dst, int64(st.Error), 10)
	}
	return append(dst, '}')
}

func appendDeviceInfo(dst []byte, in *DeviceInfo, sp Spelling) []byte {
	dst = append(dst, `{"id":`...)
	dst = AppendString(dst, in.ID)
	dst = append(dst, `,"uuid":`...)
	dst = AppendString(dst, in.UUID)
	dst = append(dst, ',')
	dst = appendKey(dst, sp.MajorVersion)
	dst = strconv.AppendInt(dst, int64(in.Major), 10)
	dst = append(dst, ',')
	dst = appendKey(dst, sp.MinorVersion)
	dst = strconv.AppendInt(dst, int64(in.Minor), 10)
	if in.Model != 0 {
		dst = append(dst, `,"device_type":`...)
		dst = strconv.AppendInt(dst, int64(in.Model), 10)
	}
	return append(dst, '}')
}

// appendConfigHead opens a device's "config" with the members every device
// has: "type", "port" and "device_info".
func appendConfigHead(dst []byte, c *DeviceView, typeKey string, sp Spelling) []byte {
	dst = append(dst, `"config":{"type":`...)
	dst = AppendString(dst, configType(typeKey, c.Info.Family))
	dst = append(dst, `,"port":`...)
	dst = AppendString(dst, c.Info.Port)
	dst = append(dst, `,"device_info":`...)
	return appendDeviceInfo(dst, &c.Info, sp)
}

// appendPartialTransform appends a workspace transform with its identity
// sub-fields left out, as the vendor's 3.5 frames do: {} for the identity.
func appendPartialTransform(dst []byte, t Transform) []byte {
	dst = append(dst, '{')
	sep := false
	if t.Position != (Vec3{}) {
		dst = append(dst, `"position":`...)
		dst = appendVec3(dst, exact, t.Position)
		sep = true
	}
	if t.Rotation != (Quat{W: 1}) && t.Rotation != (Quat{}) {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"rotation":`...)
		dst = appendQuat(dst, exact, t.Rotation)
		sep = true
	}
	if t.Scale != (Vec3{X: 1, Y: 1, Z: 1}) && t.Scale != (Vec3{}) {
		if sep {
			dst = append(dst, ',')
		}
		dst = append(dst, `"scale":`...)
		dst = appendVec3(dst, exact, t.Scale)
	}
	return append(dst, '}')
}

// appendPlacement appends ,"preset",,"basis",,"mount" (effective values)
// in the vendor's 3.5 frame shapes: the preset as a plain string and the
// mount as a flat transform. Inputs (configure, HTTP bodies) keep the
// entry shapes {preset: name} and {transform: {...}}.
func appendPlacement(dst []byte, c *DeviceView) []byte {
	dst = append(dst, `,"preset":`...)
	dst = AppendString(dst, c.Session.Preset)
	dst = append(dst, `,"basis":`...)
	dst = c.Basis.AppendJSON(dst)
	dst = append(dst, `,"mount":`...)
	return appendTransform(dst, c.Mount)
}

// appendFrameTail appends the members after the device collections, each
// with a leading comma: "session" (when f.Session is set), "errors" and
// "warnings" (when not empty).
func appendFrameTail(dst []byte, f *Frame) []byte {
	if s := f.Session; s != nil {
		dst = append(dst, `,"session":{"config":{"profile":`...)
		if s.Profile == nil {
			dst = append(dst, "null"...)
		} else {
			dst = append(dst, `{"name":`...)
			dst = AppendString(dst, s.Profile.Name)
			dst = append(dst, '}')
		}
		dst = append(dst, `,"basis":`...)
		dst = s.Basis.AppendJSON(dst)
		dst = append(dst, `,"lease":{"ms":`...)
		dst = strconv.AppendInt(dst, int64(s.LeaseMs), 10)
		dst = append(dst, `}}}`...)
	}
	if len(f.Errors) > 0 {
		dst = append(dst, `,"errors":`...)
		dst = AppendErrors(dst, f.Errors)
	}
	if len(f.Warnings) > 0 {
		dst = append(dst, `,"warnings":`...)
		dst = AppendErrors(dst, f.Warnings)
	}
	return dst
}

// AppendErrors appends a JSON array of errors ({"code","message","path"}).
func AppendErrors(dst []byte, errs []Error) []byte {
	dst = append(dst, '[')
	for i := range errs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"code":`...)
		dst = AppendString(dst, string(errs[i].Code))
		dst = append(dst, `,"message":`...)
		dst = AppendString(dst, errs[i].Message)
		if errs[i].Path != "" {
			dst = append(dst, `,"path":`...)
			dst = AppendString(dst, errs[i].Path)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}
