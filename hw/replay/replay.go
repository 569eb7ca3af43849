// Package replay is a driver that plays back a recorded arm or grip: each
// Exchange reports the recorded state at the recorded time (scaled by a
// speed) since its first Exchange. Commands do not move it; it is for
// developing and testing clients against a real session without hardware.
package replay

import (
	"errors"
	"sort"
	"time"

	"github.com/hapticd/hapticd/hw"
)

// Sample is one recorded state: an arm's position, velocity and force (and
// the pose they put the arm in), a grip's orientation, buttons, hall sensor
// and battery.
type Sample struct {
	TimeNs                    int64
	Position, Velocity, Force hw.Vec3
	Status                    hw.Status
	// Arm: what its linkage shows at Position and Velocity (a recording
	// keeps only those).
	AnglesDeg, AngularVelocityDps hw.Angles3
	BodyOrientation               hw.Quat
	// Grip.
	Orientation   hw.Quat
	Buttons       hw.Buttons
	Hall, Battery float64
}

// Options describe one replayed device.
type Options struct {
	Info hw.Info
	// Samples in time order; at least one.
	Samples []Sample
	// Speed scales the recorded timeline (1: as recorded); <= 0 means 1.
	Speed float64
	// Loop starts over at the end; otherwise the last state holds.
	Loop bool
	// Now is the clock (nil: the monotonic clock).
	Now func() time.Duration
}

// ErrClosed is returned by calls after Close, as hw.Driver asks.
var ErrClosed = errors.New("hw/replay: device is closed; start the replay again")

var errNilState = errors.New("hw/replay: Exchange needs a non-nil state; pass a caller-owned value")

// Device is one replayed device. It is used by one goroutine at a time,
// as every hw.Driver.
type Device struct {
	o       Options
	started bool
	start   time.Duration
	closed  bool
}

// New returns a replayed device; Info is reported with Simulated set.
func New(o Options) *Device {
	if o.Speed <= 0 {
		o.Speed = 1
	}
	if o.Now == nil {
		base := time.Now()
		o.Now = func() time.Duration { return time.Since(base) }
	}
	o.Info.Simulated = true
	return &Device{o: o}
}

// Info implements hw.Driver.
func (d *Device) Info() hw.Info { return d.o.Info }

// At returns the sample that holds at elapsed recorded time t (from the
// first sample).
func (d *Device) At(t time.Duration) Sample {
	s := d.o.Samples
	if len(s) == 0 {
		return Sample{}
	}
	span := s[len(s)-1].TimeNs - s[0].TimeNs
	at := s[0].TimeNs + int64(t)
	if d.o.Loop && span > 0 {
		at = s[0].TimeNs + int64(t)%span
	}
	i := sort.Search(len(s), func(i int) bool { return s[i].TimeNs > at }) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

// Exchange implements hw.Driver: the command is ignored, the state is the
// recording's at this moment.
func (d *Device) Exchange(_ *hw.Command, st *hw.State) error {
	if d.closed {
		return ErrClosed
	}
	if st == nil {
		return errNilState
	}
	now := d.o.Now()
	if !d.started {
		d.started, d.start = true, now
	}
	smp := d.At(time.Duration(float64(now-d.start) * d.o.Speed))
	// The timeline runs Speed times as fast, and so does every motion on
	// it: a velocity as recorded would disagree with the positions a
	// client sees go by.
	v, s := smp.Velocity, d.o.Speed
	w := smp.AngularVelocityDps
	*st = hw.State{PositionM: smp.Position, VelocityMps: hw.Vec3{X: v.X * s, Y: v.Y * s, Z: v.Z * s}, ForceN: smp.Force, Status: smp.Status,
		AnglesDeg: smp.AnglesDeg, AngularVelocityDps: hw.Angles3{A0: w.A0 * s, A1: w.A1 * s, A2: w.A2 * s}, BodyOrientation: smp.BodyOrientation,
		Orientation: smp.Orientation, Buttons: smp.Buttons, Hall: smp.Hall, Battery: smp.Battery}
	return nil
}

// Halt implements hw.Driver; a replay has no output to stop.
func (d *Device) Halt() error {
	if d.closed {
		return ErrClosed
	}
	return nil
}

// Close implements hw.Driver.
func (d *Device) Close() error {
	if d.closed {
		return ErrClosed
	}
	d.closed = true
	return nil
}
