package wire

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/hapticd/hapticd/hw"
)

// Direction says which side sends a frame.
type Direction uint8

const (
	ToDevice Direction = iota + 1 // host → device: commands
	ToHost                        // device → host: replies and status
)

func (d Direction) String() string {
	switch d {
	case ToDevice:
		return "to-device"
	case ToHost:
		return "to-host"
	}
	return "unknown"
}

// Layout says which frame layouts a device speaks. Most frames have one
// layout; the grip status does not: a wired grip (an older handle) sends a
// shorter status under the same header than a wireless grip through its
// dongle, so a reader must be told which it reads.
type Layout uint8

const (
	// LayoutWireless is the arm's and the wireless grip's (the default).
	LayoutWireless Layout = iota
	// LayoutWired is LayoutWireless with the wired grip's status.
	LayoutWired
	layouts
)

func (l Layout) String() string {
	switch l {
	case LayoutWireless:
		return "wireless"
	case LayoutWired:
		return "wired"
	}
	return "unknown"
}

// Header bytes of the arm protocol.
const (
	HeaderWake             byte = 0x0A // host: wake up and identify
	HeaderWakeReply        byte = 0x0A // device: identity; firmware may send any header here
	HeaderForce            byte = 0x2A // host: end-effector force, 3×f32 N
	HeaderPosition         byte = 0x2C // host: end-effector position, 3×f32 m
	HeaderEndEffectorState byte = 0x2B // device: position m, velocity m/s
	HeaderTorques          byte = 0x1A // host: joint torques, 3×f32 N·mm
	HeaderAngles           byte = 0x1C // host: joint angles, 3×f32 deg
	HeaderJointState       byte = 0x1B // device: angles deg, angular velocity deg/s
	HeaderConfig           byte = 0x0E // both: configuration request and acknowledgement
)

// Configuration sub-codes carried by HeaderConfig frames.
const (
	ConfigSave          byte = 0xE0
	ConfigGravity       byte = 0xE1 // Flag: on; Value: scale 0..2
	ConfigTorqueScaling byte = 0xE2 // Flag: on
	ConfigHandedness    byte = 0xE3 // Flag: right-handed
)

// Header bytes of the grip (and wireless dongle) protocol.
const (
	HeaderGripInfo      byte = 0xD0 // host: list grips; device: one info frame per grip
	HeaderGripStatus    byte = 0xDA // device: orientation, buttons, hall, battery
	HeaderGripUserState byte = 0xDB // host: set a grip's user data
	HeaderGripError     byte = 0xDF // device: a grip reports an error code
)

// MaxExtBytes is the most extension (user data) bytes a grip frame carries.
const MaxExtBytes = 12

// MaxFrameLen is the longest frame of the table, in bytes.
const MaxFrameLen = gripStatusLen + MaxExtBytes

const (
	armCommandLen  = 1 + 3*4
	armStateLen    = 1 + 6*4
	wakeReplyLen   = 1 + 2 + 1 + 1 + 1 + 16
	configLen      = 1 + 1 + 1 + 4 // header, sub-code, flag, f32 value
	configAckLen   = 1 + 1 + 1     // header, sub-code, status (0 = ok)
	gripInfoLen    = 1 + 1 + 2 + 1 + 1 + 1
	gripStatusLen  = 1 + 2 + 4*4 + 1 + 1 + 1 + 1 + 4 + 1 // + ext bytes
	gripWiredLen   = 1 + 2 + 4*4 + 1 + 1 + 1             // + user data bytes
	gripUserLen    = 1 + 2 + 1                           // + ext bytes
	gripErrorLen   = 1 + 2 + 1
	gripQueryLen   = 1
	wakeCommandLen = 1
)

// Decoding errors. They are sentinels so that decoding never allocates.
var (
	ErrShort         = errors.New("hw/wire: frame is incomplete; read more bytes and decode again")
	ErrUnknownHeader = errors.New("hw/wire: unknown header byte; the stream is out of sync, resynchronise with a Scanner")
	ErrImplausible   = errors.New("hw/wire: payload is not physically plausible (NaN, infinite or out of range); the stream is out of sync or the layout in the frame table is wrong")
)

// WakeReply is the arm's identity, sent in reply to HeaderWake.
type WakeReply struct {
	ID              uint16
	Model           uint8
	HardwareVersion uint8
	FirmwareVersion uint8
	UUID            [16]byte
}

// GripInfo describes one grip behind a port; a dongle sends one per grip,
// counting Remaining down to 0.
type GripInfo struct {
	Remaining       uint8
	ID              uint16
	Model           uint8
	HardwareVersion uint8
	FirmwareVersion uint8
}

// GripStatus is one status report of a grip.
type GripStatus struct {
	ID          uint16
	Orientation hw.Quat // w, x, y, z as sent (float32); see Oriented
	Error       uint8
	Attached    uint8 // non-zero when mounted on an arm
	Hall        uint8 // 0..255
	Buttons     uint8 // bit field, bit 0 = button A
	Battery     float64
	ExtLen      uint8
	Ext         [MaxExtBytes]byte
}

// Oriented reports whether s's Orientation is a rotation. A status that
// decodes always has one unless its grip reports an error (Error != 0),
// such as an orientation sensor that is down and sends zeros.
func (s *GripStatus) Oriented() bool { return rotation(s.Orientation) }

// Config is a configuration request (host) or acknowledgement (device).
type Config struct {
	Sub    byte
	Flag   bool    // request only
	Value  float64 // request only (float32 on the wire)
	Status uint8   // acknowledgement only: 0 = applied
}

// Message is any decoded frame; Header says which fields hold it.
type Message struct {
	Header byte
	// A and B are the two triples of arm frames: commands carry their one
	// triple in A; HeaderEndEffectorState carries position in A and
	// velocity in B; HeaderJointState carries angles in A and angular
	// velocity in B (X, Y, Z = joints 0, 1, 2).
	A, B       hw.Vec3
	Wake       WakeReply
	Config     Config
	GripInfo   GripInfo
	GripStatus GripStatus
	// GripUser holds HeaderGripUserState (ID, ExtLen, Ext) and
	// HeaderGripError (ID, Error) frames.
	GripUser GripStatus
}

// Frame is one entry of the frame table.
type Frame struct {
	Header byte
	Dir    Direction
	Name   string
	// Len is the frame length in bytes, header included. For frames with
	// extension bytes it is the length without them.
	Len int
	// ExtLenAt is the offset of the byte that counts extension bytes that
	// follow the fixed part, or 0 when the frame has a fixed length.
	ExtLenAt int
	// Positional frames are known by when they come, not by their header
	// (firmware may send any header byte): a Scanner never looks for them,
	// and a reader decodes them by position (see DecodeWakeReply).
	Positional bool
	// Layout is LayoutWireless for a frame of every layout, or the one
	// layout whose frame for this header it is (replacing the common one).
	Layout Layout
	decode func(b []byte, m *Message) error
	encode func(dst []byte, m *Message) []byte
}

// frames is the one table of every frame. It is never written after
// package initialisation; Frames returns a copy.
var frames = [...]Frame{
	{Header: HeaderWake, Dir: ToDevice, Name: "wake", Len: wakeCommandLen,
		decode: decodeEmpty, encode: encodeEmpty},
	{Header: HeaderForce, Dir: ToDevice, Name: "force", Len: armCommandLen,
		decode: decodeCommand(limitForceN), encode: encodeCommand(limitForceN)},
	{Header: HeaderPosition, Dir: ToDevice, Name: "position", Len: armCommandLen,
		decode: decodeCommand(limitPositionM), encode: encodeCommand(limitPositionM)},
	{Header: HeaderTorques, Dir: ToDevice, Name: "torques", Len: armCommandLen,
		decode: decodeCommand(limitTorqueNmm), encode: encodeCommand(limitTorqueNmm)},
	{Header: HeaderAngles, Dir: ToDevice, Name: "angles", Len: armCommandLen,
		decode: decodeCommand(limitAngleDeg), encode: encodeCommand(limitAngleDeg)},
	{Header: HeaderConfig, Dir: ToDevice, Name: "config", Len: configLen,
		decode: decodeConfig, encode: encodeConfig},
	{Header: HeaderGripInfo, Dir: ToDevice, Name: "grip-query", Len: gripQueryLen,
		decode: decodeEmpty, encode: encodeEmpty},
	{Header: HeaderGripUserState, Dir: ToDevice, Name: "grip-user-state", Len: gripUserLen, ExtLenAt: 3,
		decode: decodeGripUser, encode: encodeGripUser},

	{Header: HeaderWakeReply, Dir: ToHost, Name: "wake-reply", Len: wakeReplyLen, Positional: true,
		decode: decodeWakeReply, encode: encodeWakeReply},
	{Header: HeaderEndEffectorState, Dir: ToHost, Name: "end-effector-state", Len: armStateLen,
		decode: decodeState(limitPositionM, limitVelocityMps), encode: encodeState(limitPositionM, limitVelocityMps)},
	{Header: HeaderJointState, Dir: ToHost, Name: "joint-state", Len: armStateLen,
		decode: decodeState(limitAngleDeg, limitAngularVelocityDps), encode: encodeState(limitAngleDeg, limitAngularVelocityDps)},
	{Header: HeaderConfig, Dir: ToHost, Name: "config-ack", Len: configAckLen,
		decode: decodeConfigAck, encode: encodeConfigAck},
	{Header: HeaderGripInfo, Dir: ToHost, Name: "grip-info", Len: gripInfoLen,
		decode: decodeGripInfo, encode: encodeGripInfo},
	{Header: HeaderGripStatus, Dir: ToHost, Name: "grip-status", Len: gripStatusLen, ExtLenAt: gripStatusLen - 1,
		decode: decodeGripStatus, encode: encodeGripStatus},
	{Header: HeaderGripError, Dir: ToHost, Name: "grip-error", Len: gripErrorLen,
		decode: decodeGripError, encode: encodeGripError},
	{Header: HeaderGripStatus, Dir: ToHost, Name: "wired-grip-status", Len: gripWiredLen, ExtLenAt: gripWiredLen - 1,
		Layout: LayoutWired, decode: decodeWiredGripStatus, encode: encodeWiredGripStatus},
}

// index maps layout, direction and header to an entry of frames (+1;
// 0 = unknown). It is computed once at initialisation and only read
// afterwards.
var index = buildIndex()

func buildIndex() (ix [layouts][3][256]uint8) {
	for l := range ix {
		for i, f := range frames {
			if f.Layout == LayoutWireless && ix[l][f.Dir][f.Header] == 0 || f.Layout == Layout(l) {
				ix[l][f.Dir][f.Header] = uint8(i + 1)
			}
		}
	}
	return ix
}

// Frames returns a copy of the frame table, for documentation and tests.
func Frames() []Frame {
	out := make([]Frame, len(frames))
	copy(out, frames[:])
	return out
}

// lookup returns the table entry for a header sent in direction dir in
// layout l, or nil.
func lookup(l Layout, dir Direction, header byte) *Frame {
	if dir != ToDevice && dir != ToHost || l >= layouts {
		return nil
	}
	i := index[l][dir][header]
	if i == 0 {
		return nil
	}
	return &frames[i-1]
}

// frameLen returns the full length of the frame at the start of b, or
// ErrShort when b does not yet hold enough bytes to know or to hold it.
func (f *Frame) frameLen(b []byte) (int, error) {
	if f.ExtLenAt == 0 {
		if len(b) < f.Len {
			return f.Len, ErrShort
		}
		return f.Len, nil
	}
	if len(b) <= f.ExtLenAt {
		return f.Len, ErrShort
	}
	ext := int(b[f.ExtLenAt])
	if ext > MaxExtBytes {
		return 0, ErrImplausible
	}
	if len(b) < f.Len+ext {
		return f.Len + ext, ErrShort
	}
	return f.Len + ext, nil
}

// Decode decodes the frame at the start of b, sent in direction dir, into m
// and returns its length. It returns ErrShort when b holds only part of a
// frame, ErrUnknownHeader and ErrImplausible when b does not start with a
// frame. The wake-up reply is an exception: firmware may send it with any
// header byte, so decode it with DecodeWakeReply when one is expected.
func Decode(dir Direction, b []byte, m *Message) (int, error) {
	return DecodeIn(LayoutWireless, dir, b, m)
}

// DecodeIn is Decode for a device that speaks layout l.
func DecodeIn(l Layout, dir Direction, b []byte, m *Message) (int, error) {
	if len(b) == 0 {
		return 0, ErrShort
	}
	f := lookup(l, dir, b[0])
	if f == nil {
		return 0, ErrUnknownHeader
	}
	n, err := f.frameLen(b)
	if err != nil {
		return n, err
	}
	m.Header = b[0]
	if err := f.decode(b[:n], m); err != nil {
		return n, err
	}
	return n, nil
}

// Append encodes m as a frame sent in direction dir, choosing the layout by
// m.Header, and appends it to dst. It returns dst unchanged when the header
// is not in the table for that direction.
func Append(dst []byte, dir Direction, m *Message) []byte {
	return AppendIn(LayoutWireless, dst, dir, m)
}

// AppendIn is Append for a device that speaks layout l.
func AppendIn(l Layout, dst []byte, dir Direction, m *Message) []byte {
	f := lookup(l, dir, m.Header)
	if f == nil {
		return dst
	}
	return f.encode(append(dst, m.Header), m)
}

// DecodeWakeReply decodes an arm's identity from a wake-up reply of
// WakeReplyLen bytes, whatever its header byte.
func DecodeWakeReply(b []byte, w *WakeReply) error {
	if len(b) < wakeReplyLen {
		return ErrShort
	}
	var m Message
	if err := decodeWakeReply(b[:wakeReplyLen], &m); err != nil {
		return err
	}
	*w = m.Wake
	return nil
}

// WakeReplyLen is the length of the arm's wake-up reply, header included.
const WakeReplyLen = wakeReplyLen

// ArmStateLen is the length of an arm state reply, header included.
const ArmStateLen = armStateLen

// ConfigAckLen is the length of a configuration acknowledgement.
const ConfigAckLen = configAckLen

// --- encoders a driver or emulator calls directly ---

// AppendWake appends the arm wake-up command.
func AppendWake(dst []byte) []byte { return append(dst, HeaderWake) }

// AppendForce appends an end-effector force command in newtons.
func AppendForce(dst []byte, forceN hw.Vec3) []byte {
	return appendTriple(append(dst, HeaderForce), forceN, limitForceN)
}

// AppendPosition appends an end-effector position command in metres.
func AppendPosition(dst []byte, positionM hw.Vec3) []byte {
	return appendTriple(append(dst, HeaderPosition), positionM, limitPositionM)
}

// AppendTorques appends a joint torque command in N·mm.
func AppendTorques(dst []byte, torquesNmm hw.Angles3) []byte {
	return appendTriple(append(dst, HeaderTorques), hw.Vec3{X: torquesNmm.A0, Y: torquesNmm.A1, Z: torquesNmm.A2}, limitTorqueNmm)
}

// AppendAngles appends a joint angle command in degrees.
func AppendAngles(dst []byte, anglesDeg hw.Angles3) []byte {
	return appendTriple(append(dst, HeaderAngles), hw.Vec3{X: anglesDeg.A0, Y: anglesDeg.A1, Z: anglesDeg.A2}, limitAngleDeg)
}

// AppendConfig appends a configuration request.
func AppendConfig(dst []byte, c Config) []byte {
	m := Message{Config: c}
	return encodeConfig(append(dst, HeaderConfig), &m)
}

// AppendConfigAck appends a device's configuration acknowledgement.
func AppendConfigAck(dst []byte, sub, status byte) []byte {
	return append(dst, HeaderConfig, sub, status)
}

// AppendWakeReply appends an arm's identity as sent by the device.
func AppendWakeReply(dst []byte, w WakeReply) []byte {
	m := Message{Wake: w}
	return encodeWakeReply(append(dst, HeaderWakeReply), &m)
}

// AppendEndEffectorState appends an end-effector state reply.
func AppendEndEffectorState(dst []byte, positionM, velocityMps hw.Vec3) []byte {
	return appendTriple(appendTriple(append(dst, HeaderEndEffectorState), positionM, limitPositionM), velocityMps, limitVelocityMps)
}

// AppendJointState appends a joint state reply.
func AppendJointState(dst []byte, anglesDeg, angularVelocityDps hw.Angles3) []byte {
	dst = append(dst, HeaderJointState)
	dst = appendTriple(dst, hw.Vec3{X: anglesDeg.A0, Y: anglesDeg.A1, Z: anglesDeg.A2}, limitAngleDeg)
	return appendTriple(dst, hw.Vec3{X: angularVelocityDps.A0, Y: angularVelocityDps.A1, Z: angularVelocityDps.A2}, limitAngularVelocityDps)
}

// AppendGripQuery appends the host's request for grip info frames.
func AppendGripQuery(dst []byte) []byte { return append(dst, HeaderGripInfo) }

// AppendGripInfo appends one grip info frame as sent by the device.
func AppendGripInfo(dst []byte, g GripInfo) []byte {
	m := Message{GripInfo: g}
	return encodeGripInfo(append(dst, HeaderGripInfo), &m)
}

// AppendGripStatus appends a grip status frame; ExtLen is capped at
// MaxExtBytes.
func AppendGripStatus(dst []byte, s *GripStatus) []byte {
	m := Message{GripStatus: *s}
	return encodeGripStatus(append(dst, HeaderGripStatus), &m)
}

// --- layouts ---

func decodeEmpty(b []byte, m *Message) error    { return nil }
func encodeEmpty(dst []byte, m *Message) []byte { return dst }
func f32(b []byte) float64                      { return float64(math.Float32frombits(binary.LittleEndian.Uint32(b))) }

// appendF32 appends v as a little-endian float32. A value whose float32 is
// below minMagnitude goes out as zero: the decoders take such a value for
// line noise (see plausible), so sending it would make a valid frame read
// as noise, and a rotated force's 1e-17 residue or a weak spring near its
// anchor is no force an actuator could apply anyway.
func appendF32(dst []byte, v float64) []byte {
	f := float32(v)
	if f != 0 && math.Abs(float64(f)) < minMagnitude {
		f = 0 // a zero keeps its sign, so -0 decodes and re-encodes to the same bytes
	}
	return binary.LittleEndian.AppendUint32(dst, math.Float32bits(f))
}

// appendTriple appends v's three numbers, each within ±limit (see within).
func appendTriple(dst []byte, v hw.Vec3, limit float64) []byte {
	return appendF32(appendF32(appendF32(dst, within(v.X, limit)), within(v.Y, limit)), within(v.Z, limit))
}

// within returns v saturated to ±limit, and NaN as zero: the decoders take
// a value beyond a frame's limit for noise (see plausible), so sending one
// would make the frame read as noise to a device that checks plausibility,
// and the device would keep its last, sticky command.
func within(v, limit float64) float64 {
	switch {
	case v > limit:
		return limit
	case v < -limit:
		return -limit
	case v != v: // NaN
		return 0
	}
	return v
}

// The plausible range of each quantity the frames carry: a decoder takes a
// value beyond it for noise, an encoder sends it as the limit (for the grip
// status, see encodeGripStatus).
const (
	limitForceN             = 1e4
	limitPositionM          = 10
	limitVelocityMps        = 1e3
	limitTorqueNmm          = 1e7
	limitAngleDeg           = 1e5
	limitAngularVelocityDps = 1e7
	limitConfigValue        = 1e3
	// Grip status: each part of the orientation quaternion, and the
	// battery level (0..1, with room for a sensor's overshoot).
	limitQuatPart = 1.5
	limitBattery  = 1.5
)

func triple(b []byte) hw.Vec3 { return hw.Vec3{X: f32(b), Y: f32(b[4:]), Z: f32(b[8:])} }
func encodeCommand(limit float64) func(dst []byte, m *Message) []byte {
	return func(dst []byte, m *Message) []byte { return appendTriple(dst, m.A, limit) }
}
func encodeState(limitA, limitB float64) func(dst []byte, m *Message) []byte {
	return func(dst []byte, m *Message) []byte { return appendTriple(appendTriple(dst, m.A, limitA), m.B, limitB) }
}
func encodeConfigAck(dst []byte, m *Message) []byte {
	return append(dst, m.Config.Sub, m.Config.Status)
}
func encodeGripError(dst []byte, m *Message) []byte {
	return append(binary.LittleEndian.AppendUint16(dst, m.GripUser.ID), m.GripUser.Error)
}
func appendBool(dst []byte, v bool) []byte {
	if v {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// plausible reports whether v is finite, within ±limit, and either zero or
// not vanishingly small. Real sensors and commands never produce values
// below 1e-9 in these units, while random bytes read as float32 usually do
// (or are huge): the check is what lets a Scanner resynchronise on a
// protocol without checksums.
func plausible(v, limit float64) bool {
	if v == 0 {
		return true
	}
	a := math.Abs(v)
	return a >= minMagnitude && a <= limit // false for NaN and ±Inf too
}

// minMagnitude is the smallest non-zero magnitude a frame carries (see
// plausible); encoders send anything smaller as zero.
const minMagnitude = 1e-9

// rotation reports whether q is near enough unit length to be a rotation.
// A grip's sensor sends unit quaternions (float32 rounding aside); one far
// from unit length (all zero above all: no rotation at all, and anything
// normalising it divides by zero) is noise or a sensor not up yet.
func rotation(q hw.Quat) bool {
	n2 := q.W*q.W + q.X*q.X + q.Y*q.Y + q.Z*q.Z
	return n2 >= 0.5*0.5 && n2 <= 1.5*1.5
}

func plausibleTriple(v hw.Vec3, limit float64) bool {
	return plausible(v.X, limit) && plausible(v.Y, limit) && plausible(v.Z, limit)
}

func decodeCommand(limit float64) func(b []byte, m *Message) error {
	return func(b []byte, m *Message) error {
		a := triple(b[1:])
		if !plausibleTriple(a, limit) {
			return ErrImplausible
		}
		m.A = a
		return nil
	}
}

func decodeState(limitA, limitB float64) func(b []byte, m *Message) error {
	return func(b []byte, m *Message) error {
		a, v := triple(b[1:]), triple(b[13:])
		if !plausibleTriple(a, limitA) || !plausibleTriple(v, limitB) {
			return ErrImplausible
		}
		m.A, m.B = a, v
		return nil
	}
}

func decodeConfig(b []byte, m *Message) error {
	sub, flag, v := b[1], b[2], f32(b[3:])
	if sub < ConfigSave || sub > ConfigHandedness || flag > 1 || !plausible(v, limitConfigValue) {
		return ErrImplausible
	}
	m.Config = Config{Sub: sub, Flag: flag == 1, Value: v}
	return nil
}

func encodeConfig(dst []byte, m *Message) []byte {
	return appendF32(appendBool(append(dst, m.Config.Sub), m.Config.Flag), within(m.Config.Value, limitConfigValue))
}

func decodeConfigAck(b []byte, m *Message) error {
	if b[1] < ConfigSave || b[1] > ConfigHandedness {
		return ErrImplausible
	}
	m.Config = Config{Sub: b[1], Status: b[2]}
	return nil
}

func decodeWakeReply(b []byte, m *Message) error {
	w := WakeReply{
		ID:              binary.LittleEndian.Uint16(b[1:]),
		Model:           b[3],
		HardwareVersion: b[4],
		FirmwareVersion: b[5],
	}
	copy(w.UUID[:], b[6:22])
	m.Wake = w
	return nil
}

func encodeWakeReply(dst []byte, m *Message) []byte {
	w := &m.Wake
	dst = binary.LittleEndian.AppendUint16(dst, w.ID)
	dst = append(dst, w.Model, w.HardwareVersion, w.FirmwareVersion)
	return append(dst, w.UUID[:]...)
}

func decodeGripInfo(b []byte, m *Message) error {
	m.GripInfo = GripInfo{
		Remaining:       b[1],
		ID:              binary.LittleEndian.Uint16(b[2:]),
		Model:           b[4],
		HardwareVersion: b[5],
		FirmwareVersion: b[6],
	}
	return nil
}

func encodeGripInfo(dst []byte, m *Message) []byte {
	g := &m.GripInfo
	dst = append(dst, g.Remaining)
	dst = binary.LittleEndian.AppendUint16(dst, g.ID)
	return append(dst, g.Model, g.HardwareVersion, g.FirmwareVersion)
}

func decodeGripStatus(b []byte, m *Message) error {
	s := &m.GripStatus
	if err := decodeGripHead(b, s); err != nil {
		return err
	}
	battery := f32(b[23:])
	if !plausible(battery, limitBattery) || battery < 0 {
		return ErrImplausible
	}
	s.Hall, s.Buttons = b[21], b[22]
	s.Battery = battery
	s.ExtLen = b[27]
	s.Ext = [MaxExtBytes]byte{}
	copy(s.Ext[:], b[28:28+int(s.ExtLen)])
	return nil
}

// decodeWiredGripStatus decodes a wired grip's status: the wireless
// layout's first fields, then its user data. It carries no hall, buttons
// or battery, which decode as zero.
func decodeWiredGripStatus(b []byte, m *Message) error {
	s := &m.GripStatus
	if err := decodeGripHead(b, s); err != nil {
		return err
	}
	s.Hall, s.Buttons, s.Battery = 0, 0, 0
	s.ExtLen = b[21]
	s.Ext = [MaxExtBytes]byte{}
	copy(s.Ext[:], b[22:22+int(s.ExtLen)])
	return nil
}

// decodeGripHead decodes what both status layouts start with: id,
// orientation, error and attached.
func decodeGripHead(b []byte, s *GripStatus) error {
	q := hw.Quat{W: f32(b[3:]), X: f32(b[7:]), Y: f32(b[11:]), Z: f32(b[15:])}
	// A quaternion that is no rotation is noise, unless the grip reports
	// an error beside it (its orientation sensor is down): then the
	// frame's error, buttons and battery are the grip's, and the
	// orientation is not (Oriented).
	if !plausible(q.W, limitQuatPart) || !plausible(q.X, limitQuatPart) || !plausible(q.Y, limitQuatPart) || !plausible(q.Z, limitQuatPart) || (!rotation(q) && b[19] == 0) {
		return ErrImplausible
	}
	s.ID = binary.LittleEndian.Uint16(b[1:])
	s.Orientation = q
	s.Error, s.Attached = b[19], b[20]
	return nil
}

// encodeGripStatus keeps every number where the decoder accepts it, as the
// arm encoders do: the battery within 0..limitBattery (NaN and negatives
// as 0, beyond as 1), and an orientation
// with a part beyond limitQuatPart (or NaN) as zeros, the frame's "no
// rotation". An orientation within bounds goes out as given, rotation or
// not: a grip that reports an error may send one that is not (Oriented).
func encodeGripStatus(dst []byte, m *Message) []byte {
	s := &m.GripStatus
	dst = appendGripHead(dst, s)
	// A battery the decoder accepts (0..limitBattery, -0 too) goes out
	// as given, so decode and encode round-trip; NaN and negatives as 0,
	// beyond the limit as full.
	battery := s.Battery
	switch {
	case battery != battery || battery < 0:
		battery = 0
	case battery > limitBattery:
		battery = 1
	}
	dst = append(dst, s.Hall, s.Buttons)
	dst = appendF32(dst, battery)
	return appendGripExt(dst, s)
}

// encodeWiredGripStatus is encodeGripStatus in the wired layout, which has
// no hall, buttons or battery.
func encodeWiredGripStatus(dst []byte, m *Message) []byte {
	return appendGripExt(appendGripHead(dst, &m.GripStatus), &m.GripStatus)
}

func appendGripHead(dst []byte, s *GripStatus) []byte {
	q := s.Orientation
	if !(math.Abs(q.W) <= limitQuatPart && math.Abs(q.X) <= limitQuatPart && math.Abs(q.Y) <= limitQuatPart && math.Abs(q.Z) <= limitQuatPart) {
		q = hw.Quat{} // false for NaN too
	}
	dst = binary.LittleEndian.AppendUint16(dst, s.ID)
	dst = appendF32(appendF32(appendF32(appendF32(dst, q.W), q.X), q.Y), q.Z)
	return append(dst, s.Error, s.Attached)
}

func appendGripExt(dst []byte, s *GripStatus) []byte {
	n := min(s.ExtLen, MaxExtBytes)
	dst = append(dst, n)
	return append(dst, s.Ext[:n]...)
}

func decodeGripUser(b []byte, m *Message) error {
	u := &m.GripUser
	u.ID = binary.LittleEndian.Uint16(b[1:])
	u.ExtLen = b[3]
	u.Ext = [MaxExtBytes]byte{}
	copy(u.Ext[:], b[4:4+int(u.ExtLen)])
	return nil
}

func encodeGripUser(dst []byte, m *Message) []byte {
	u := &m.GripUser
	n := min(u.ExtLen, MaxExtBytes)
	dst = append(binary.LittleEndian.AppendUint16(dst, u.ID), n)
	return append(dst, u.Ext[:n]...)
}

func decodeGripError(b []byte, m *Message) error {
	m.GripUser.ID = binary.LittleEndian.Uint16(b[1:])
	m.GripUser.Error = b[3]
	return nil
}
