package hwtest

import (
	"errors"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/wire"
)

// ArmPort is a serial port with an arm behind it, in memory: every command
// written is answered at once (readable by the next Read) with a wake-up
// reply or a state frame. Position follows Position; it does not move.
// It is for unit tests and allocation pins, not for physics (use
// hw/emulator for that).
type ArmPort struct {
	ID   uint16
	UUID [16]byte
	// Model is the device type number the wake-up reply carries (its
	// family: 0 or 4 an Inverse3, 6 a Minverse).
	Model    uint8
	Position hw.Vec3
	// LastForce is the last force commanded (sticky, as in firmware).
	LastForce hw.Vec3
	Writes    int
	Closed    bool

	scan *wire.Scanner
	msg  wire.Message
	out  [4 * wire.MaxFrameLen]byte
	r, w int
}

// NewArmPort returns an arm with the given identity, its end effector
// resting at the nominal workspace centre, in front of and above its base
// (a real arm never reports exactly zero: drivers take that for a
// half-awake arm).
func NewArmPort(id uint16, uuid [16]byte) *ArmPort {
	return &ArmPort{ID: id, UUID: uuid, Position: hw.ArmWorkspaceCenterM(), scan: wire.NewScanner(wire.ToDevice)}
}

// ErrClosed is returned by calls after Close.
var ErrClosed = errors.New("hw/hwtest: port is closed")

// Write takes host bytes and queues the replies.
func (p *ArmPort) Write(b []byte) (int, error) {
	if p.Closed {
		return 0, ErrClosed
	}
	p.Writes++
	p.scan.Write(b)
	for _, ok := p.scan.Next(&p.msg); ok; _, ok = p.scan.Next(&p.msg) {
		if p.r == p.w {
			p.r, p.w = 0, 0
		}
		dst := p.out[p.w:p.w]
		switch p.msg.Header {
		case wire.HeaderWake:
			dst = wire.AppendWakeReply(dst, wire.WakeReply{ID: p.ID, UUID: p.UUID, Model: p.Model})
		case wire.HeaderForce, wire.HeaderPosition:
			if p.msg.Header == wire.HeaderForce {
				p.LastForce = p.msg.A
			} else {
				p.LastForce = hw.Vec3{}
			}
			dst = wire.AppendEndEffectorState(dst, p.Position, hw.Vec3{})
		case wire.HeaderTorques, wire.HeaderAngles:
			p.LastForce = hw.Vec3{}
			dst = wire.AppendJointState(dst, hw.Angles3{}, hw.Angles3{})
		case wire.HeaderConfig:
			dst = wire.AppendConfigAck(dst, p.msg.Config.Sub, 0)
		}
		p.w += len(dst)
	}
	return len(b), nil
}

// Read returns queued reply bytes, or 0, nil (a timeout) when none wait.
func (p *ArmPort) Read(b []byte) (int, error) {
	if p.Closed {
		return 0, ErrClosed
	}
	n := copy(b, p.out[p.r:p.w])
	p.r += n
	return n, nil
}

// SetReadTimeout is accepted: replies are always ready at once.
func (p *ArmPort) SetReadTimeout(time.Duration) error { return nil }

// ResetInputBuffer drops queued replies.
func (p *ArmPort) ResetInputBuffer() error { p.r, p.w = 0, 0; return nil }

// Close marks the port closed.
func (p *ArmPort) Close() error {
	if p.Closed {
		return ErrClosed
	}
	p.Closed = true
	return nil
}
