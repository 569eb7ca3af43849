package hw

import (
	"errors"
	"fmt"
)

// Vec3 is a 3-vector in the device frame: right-handed, Z up, +X right,
// +Y forward. Its unit is given by the field that holds it (m, m/s, N).
type Vec3 struct{ X, Y, Z float64 }

// Quat is a rotation quaternion; identity is {W: 1}.
type Quat struct{ W, X, Y, Z float64 }

// Angles3 holds the three joint values of an arm, base first. The unit is
// given by the field that holds it (deg, deg/s, N·mm).
type Angles3 struct{ A0, A1, A2 float64 }

// GravityMps2 is standard gravity. Simulated physics pulls with it and the
// loop's host-side compensation pushes back with it: one constant, so the
// two cancel exactly.
const GravityMps2 = 9.80665

// Kind says what sort of device a driver speaks to.
type Kind uint8

const (
	KindArm  Kind = iota + 1 // a 3-DOF force-feedback arm
	KindGrip                 // a handheld grip: orientation, buttons, hall, battery
)

func (k Kind) String() string {
	switch k {
	case KindArm:
		return "arm"
	case KindGrip:
		return "grip"
	}
	return "unknown"
}

// Link is how a grip reaches the host: client software names wired and
// wireless grips differently.
type Link uint8

const (
	LinkUnknown  Link = iota // arms; grips whose driver cannot tell
	LinkWireless             // through a radio dongle; simulated grips too
	LinkWired                // a cable from the handle to the host
)

func (l Link) String() string {
	switch l {
	case LinkWireless:
		return "wireless"
	case LinkWired:
		return "wired"
	}
	return "unknown"
}

// ControlMode is what a Command asks of an arm.
type ControlMode uint8

const (
	ModeIdle     ControlMode = iota // no output; the device is inert
	ModeForce                       // Command.ForceN at the end effector
	ModePosition                    // servo the end effector to Command.PositionM
	ModeTorque                      // Command.TorquesNmm at the joints
	ModeAngle                       // servo the joints to Command.AnglesDeg
)

func (m ControlMode) String() string {
	switch m {
	case ModeIdle:
		return "idle"
	case ModeForce:
		return "force"
	case ModePosition:
		return "position"
	case ModeTorque:
		return "torque"
	case ModeAngle:
		return "angle"
	}
	return "unknown"
}

// Info is a device's identity and physical limits. It does not change while
// the driver is open.
type Info struct {
	Kind Kind
	// ID is the id reported to clients: 4 uppercase hex digits for arms
	// ("049D"), a decimal string for grips ("61548"). It is short and may
	// collide between devices; UUID is the identity.
	ID   string
	UUID string
	// Model, HardwareVersion and FirmwareVersion are as the device reports
	// them (0 when unknown).
	Model           uint8
	HardwareVersion uint8
	FirmwareVersion uint8
	// Simulated is true for devices with no hardware behind them.
	Simulated bool
	// Link is how a grip reaches the host (LinkUnknown for arms).
	Link Link
	// Port names where the device is attached ("/dev/ttyACM0"); empty for
	// simulated devices.
	Port string
	// MaxForceN is the largest force magnitude the service may command; the
	// loop clamps to it. Zero for devices without force output.
	MaxForceN float64
	// WorkspaceCenterM is the centre of the reachable workspace in the
	// device frame; the *_centered presets put the origin there.
	WorkspaceCenterM Vec3
	// EffectiveMassKg is the end effector's apparent mass, used for
	// host-side gravity compensation.
	EffectiveMassKg float64
	// HostGravityCompensation is true when the device has no firmware
	// gravity compensation, so the loop adds the feed-forward force itself.
	HostGravityCompensation bool
}

// Command is the output asked of a device for one tick. Only the field that
// matches Mode is read.
type Command struct {
	Mode       ControlMode
	ForceN     Vec3    // ModeForce
	PositionM  Vec3    // ModePosition
	TorquesNmm Angles3 // ModeTorque
	AnglesDeg  Angles3 // ModeAngle
}

// Target is the one vector c's Mode acts on, as three numbers: the force
// (N), the position (m), the torques (N·mm) or the angles (deg); zero for
// ModeIdle. CommandTarget is its inverse. Snapshots and the cluster wire
// carry a command this way.
func (c *Command) Target() [3]float64 {
	switch c.Mode {
	case ModeForce:
		return [3]float64{c.ForceN.X, c.ForceN.Y, c.ForceN.Z}
	case ModePosition:
		return [3]float64{c.PositionM.X, c.PositionM.Y, c.PositionM.Z}
	case ModeTorque:
		return [3]float64{c.TorquesNmm.A0, c.TorquesNmm.A1, c.TorquesNmm.A2}
	case ModeAngle:
		return [3]float64{c.AnglesDeg.A0, c.AnglesDeg.A1, c.AnglesDeg.A2}
	}
	return [3]float64{}
}

// CommandTarget is the command in mode acting on t (see Command.Target);
// ok is false for a mode that acts on nothing (ModeIdle, or unknown).
func CommandTarget(mode ControlMode, t [3]float64) (c Command, ok bool) {
	c.Mode = mode
	switch mode {
	case ModeForce:
		c.ForceN = Vec3{X: t[0], Y: t[1], Z: t[2]}
	case ModePosition:
		c.PositionM = Vec3{X: t[0], Y: t[1], Z: t[2]}
	case ModeTorque:
		c.TorquesNmm = Angles3{A0: t[0], A1: t[1], A2: t[2]}
	case ModeAngle:
		c.AnglesDeg = Angles3{A0: t[0], A1: t[1], A2: t[2]}
	default:
		return Command{}, false
	}
	return c, true
}

// Buttons is a grip's button set as a bit field.
type Buttons uint8

const (
	ButtonA Buttons = 1 << iota
	ButtonB
	ButtonC
)

// Status is the set of a device's status flags as a bit field. Which flags a
// device reports depends on its kind: arms report Calibrated, Ready, Started
// and PowerSupply; grips report Connected, Awake and Ready.
type Status uint8

const (
	StatusCalibrated Status = 1 << iota
	StatusReady
	StatusStarted
	StatusPowerSupply
	StatusConnected
	StatusAwake
)

// State is what a device reports after one tick. Arm fields are zero for a
// grip and grip fields are zero for an arm.
//
// The fields a loop reads and writes every tick (position, velocity, force,
// status) come first, within 80 bytes: a loop stepping thousands of
// simulated arms copies two cache lines per arm, not four.
type State struct {
	// Arm.
	PositionM   Vec3
	VelocityMps Vec3
	// ForceN is the end-effector force the device applies after this tick.
	ForceN Vec3
	Status Status

	// Arm, derived from the above (simulated arms compute them only when
	// a reader asks).
	AnglesDeg          Angles3
	AngularVelocityDps Angles3
	BodyOrientation    Quat

	// Grip.
	Orientation Quat
	Buttons     Buttons
	Hall        float64 // 0..1
	Battery     float64 // 0..1
	// GripError is the grip firmware's error code; 0 means none.
	GripError uint8
}

// ErrGone is wrapped by an Exchange error that no retry can mend: the
// driver knows the device is gone (its node was lost, say). The loop fails
// such a device at once instead of after a run of errors, so it leaves
// within a tick, not a run of ticks that a loaded host can stretch.
var ErrGone = errors.New("device gone")

// ErrUnplugged is ErrGone for a device whose port went away under the
// driver (a USB cable pulled): the device left, it did not fail, and the
// service reports it as a device it saw leave, not as a failure.
var ErrUnplugged = fmt.Errorf("%w: unplugged", ErrGone)

// Driver is one open device. A Driver is used by one goroutine at a time (the
// device's real-time loop); it need not be safe for concurrent use.
type Driver interface {
	// Info returns the device's identity. It is fixed once the driver is
	// open and is cheap to call.
	Info() Info
	// Exchange applies cmd for one tick and fills st with the state the
	// device reports after it. It is one lock-step round trip on hardware.
	// It neither retains nor allocates: cmd and st belong to the caller.
	// An error means the device may not have received cmd; the caller then
	// calls Halt. An error wrapping ErrGone says no retry can succeed.
	Exchange(cmd *Command, st *State) error
	// Halt commands zero output and leaves the device inert. It is
	// idempotent and safe to call after an error. The device stays inert
	// until the next Exchange with a non-idle command.
	Halt() error
	// Close halts the device, then releases it. Calls after Close return an
	// error.
	Close() error
}

// Settings are the device-global settings that a device's firmware acts on.
type Settings struct {
	LeftHanded          bool
	TorqueScaling       bool
	GravityCompensation bool
	GravityScale        float64 // 0..2
}

// Configurer is implemented by drivers whose device takes Settings. The loop
// calls Configure between two Exchanges, never concurrently with them, so
// Configure must not wait on the device: a driver queues the exchange and
// carries it out with the following Exchanges without taking their
// deadlines (the serial arm retries an unacknowledged code with backoff).
type Configurer interface {
	Configure(s Settings) error
}

// FormatUUID formats a device UUID as the vendor's service reports an
// arm's: 32 upper-case hex digits, no dashes ("2D35F80DD9005F599B68F49944CB04BA",
// whose low 16 bits are the arm's id, 04BA). Every driver reports
// Info.UUID this way, so the same device has the same identity whichever
// transport found it. hapticd wrote the 8-4-4-4-12 lower-case form before;
// ParseLegacyUUID reads it.
func FormatUUID(u [16]byte) string {
	const digits = "0123456789ABCDEF"
	var b [32]byte
	for i, c := range u {
		b[2*i], b[2*i+1] = digits[c>>4], digits[c&0xf]
	}
	return string(b[:])
}

// ParseLegacyUUID reads a UUID in the 8-4-4-4-12 lower-case form hapticd
// reported (and stored, in device-ids.json and device configs' owners)
// before FormatUUID took the vendor's; ok is false for any other string.
func ParseLegacyUUID(s string) (u [16]byte, ok bool) {
	if len(s) != 36 {
		return u, false
	}
	j := 0
	for i := 0; i < 36; {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if s[i] != '-' {
				return u, false
			}
			i++
			continue
		}
		hi, ok1 := hexDigit(s[i], 'a')
		lo, ok2 := hexDigit(s[i+1], 'a')
		if !ok1 || !ok2 {
			return u, false
		}
		u[j] = hi<<4 | lo
		j++
		i += 2
	}
	return u, true
}

// parseUUID reads a UUID in FormatUUID's form.
func parseUUID(s string) (u [16]byte, ok bool) {
	if len(s) != 32 {
		return u, false
	}
	for i := range u {
		hi, ok1 := hexDigit(s[2*i], 'A')
		lo, ok2 := hexDigit(s[2*i+1], 'A')
		if !ok1 || !ok2 {
			return u, false
		}
		u[i] = hi<<4 | lo
	}
	return u, true
}

// formatLegacyUUID is u in the form ParseLegacyUUID reads.
func formatLegacyUUID(u [16]byte) string {
	const digits = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = digits[c>>4], digits[c&0xf]
		j += 2
	}
	return string(b[:])
}

// hexDigit is c's value as a hex digit whose letters start at a ('a' or
// 'A': one case only, as each UUID form has).
func hexDigit(c, a byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case a <= c && c <= a+5:
		return c - a + 10, true
	}
	return 0, false
}
