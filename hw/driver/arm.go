package driver

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/hw/wire"
)

// ArmOptions tune an Arm. Zero values take the defaults.
type ArmOptions struct {
	// Path is reported as Info().Port.
	Path string
	// PeriodS is the loop period the arm is driven at, in seconds (default
	// hw.DefaultPeriodS). ReplyTimeout and MaxMisses default to
	// hw.ReplyBudget(PeriodS).
	PeriodS float64
	// ReplyTimeout bounds one Exchange's wait for its reply (default 80% of
	// the period). Keep it under the period so a missing reply never costs
	// a tick.
	ReplyTimeout time.Duration
	// MaxMisses consecutive missed replies make Exchange fail. The default
	// tolerates 20 ms of silence (at least 3 misses): a scheduling hiccup
	// on a busy host must not unplug the device, a dead one must.
	MaxMisses int
	// WakeAttempts bounds the wake-up retries at open (default 5): the
	// first wake-up of a freshly plugged arm is often lost or garbled.
	WakeAttempts int
	// WakeTimeout bounds each wake-up attempt (default 250 ms).
	WakeTimeout time.Duration
	// HaltTimeout bounds Halt's wait for a reply (default 50 ms). The
	// loop halts after every failed exchange, on its tick, so Halt does
	// not wait at all for a device that missed the whole miss budget.
	HaltTimeout time.Duration
	// MaxForceN, WorkspaceCenterM and EffectiveMassKg describe the model
	// (the wire does not carry them). By default the force limit and the
	// workspace centre are the figures of the family the arm reports at
	// wake-up (hw.ArmFiguresOf its device type number: a Minverse's 4 N),
	// and so is the mass; hw/sim's arms are built to the same.
	MaxForceN        float64
	WorkspaceCenterM hw.Vec3
	EffectiveMassKg  float64
}

func (o *ArmOptions) fill() {
	if !(o.PeriodS > 0) {
		o.PeriodS = hw.DefaultPeriodS
	}
	timeout, misses := hw.ReplyBudget(o.PeriodS)
	if o.ReplyTimeout <= 0 {
		o.ReplyTimeout = timeout
	}
	if o.MaxMisses <= 0 {
		o.MaxMisses = misses
	}
	if o.WakeAttempts <= 0 {
		o.WakeAttempts = 5
	}
	if o.WakeTimeout <= 0 {
		o.WakeTimeout = 250 * time.Millisecond
	}
	if o.HaltTimeout <= 0 {
		o.HaltTimeout = 50 * time.Millisecond
	}
}

// Errors of the arm driver, for errors.Is.
var (
	ErrNoReply   = errors.New("no reply from the device within the deadline; check the cable, or lower --loop-hz if the device is slower than the loop")
	ErrWake      = errors.New("the device did not identify itself; check it is an arm powered on with current firmware, then replug it")
	ErrClosed    = errors.New("hw/driver: driver is closed; open the device again")
	ErrPortWrite = errors.New("short write to the port")
)

var errNilExchange = errors.New("hw/driver: Exchange needs a non-nil command and state; pass caller-owned values")

// Arm drives one arm over a serial port.
type Arm struct {
	// Immutable after OpenArm.
	port serial.Port
	opts ArmOptions
	info hw.Info

	// Owned by the goroutine that calls Exchange.
	scan     *wire.Scanner
	out      [2 * wire.MaxFrameLen]byte // a configuration code and a command fit
	tick     uint64                     // Exchanges so far
	config   [3]configCode              // handedness, torque scaling, gravity
	refused  error                      // the last code the firmware refused
	msg      wire.Message
	ahead    wire.Message // a later frame looked at while resynchronising
	last     hw.State     // state of the last good reply, reported on a miss
	misses   int          // consecutive
	missed   uint64       // since open
	closed   bool
	replyErr error // prebuilt so a miss does not allocate

	// leftHanded is the handedness last configured (right until then, as
	// the firmware starts): the kinematics that derive what a reply does
	// not carry depend on it.
	leftHanded bool

	// Resynchronisation after a missed or unread reply (see resync.go).
	resync      bool
	cleanLeft   int       // clean exchanges still needed to leave it
	resyncUntil time.Time // and not before then
	staleAhead  int       // scanner bytes that arrived before the last write
	staleSeen   bool      // this exchange dropped a stale reply
	stale       uint64    // stale replies dropped since open
}

var _ hw.Driver = (*Arm)(nil)
var _ hw.Configurer = (*Arm)(nil)

// configCode is one firmware configuration code on its way to the arm.
type configCode struct {
	req     wire.Config
	pending bool   // not acknowledged yet
	dueTick uint64 // send it with the first Exchange from this tick on
	backoff uint64 // ticks to wait after the next unacknowledged try
}

// Backoff of an unacknowledged configuration code, in time: the first
// retry comes after configRetryS, each next one after twice as long, up to
// configRetryMaxS.
const (
	configRetryS    = 0.01
	configRetryMaxS = 5.0
)

// OpenArm wakes the arm on port p, checks it identifies itself, and returns
// its driver. The driver owns p from then on, and closes it on failure.
func OpenArm(p serial.Port, o ArmOptions) (*Arm, error) {
	o.fill()
	a := &Arm{port: p, opts: o, scan: wire.NewScanner(wire.ToHost)}
	w, err := a.wake()
	if err != nil {
		p.Close()
		return nil, err
	}
	// The family's figures, where the caller gave none: a Minverse must
	// not be driven to an Inverse3's force, nor centred on its workspace.
	fig := hw.ArmFiguresOf(w.Model)
	if o.MaxForceN <= 0 {
		o.MaxForceN = fig.MaxForceN
	}
	if o.WorkspaceCenterM == (hw.Vec3{}) {
		o.WorkspaceCenterM = fig.WorkspaceCenterM
	}
	if o.EffectiveMassKg <= 0 {
		o.EffectiveMassKg = fig.EffectiveMassKg
	}
	a.opts = o
	a.info = hw.Info{
		Kind:             hw.KindArm,
		ID:               fmt.Sprintf("%04X", w.ID),
		UUID:             hw.FormatUUID(w.UUID),
		Model:            w.Model,
		HardwareVersion:  w.HardwareVersion,
		FirmwareVersion:  w.FirmwareVersion,
		Port:             o.Path,
		MaxForceN:        o.MaxForceN,
		WorkspaceCenterM: o.WorkspaceCenterM,
		EffectiveMassKg:  o.EffectiveMassKg,
		// The firmware compensates gravity itself (see Configure).
		HostGravityCompensation: false,
	}
	a.replyErr = fmt.Errorf("hw/driver: arm %s on %s: %d replies missed in a row: %w", a.info.ID, o.Path, o.MaxMisses, ErrNoReply)
	// The wire carries neither calibration nor the power supply (see
	// docs/hardware.md). An arm reports positions only once its encoders
	// are referenced, and its first state passed the check for the zero
	// position a half-awake one sends: calibrated. Its motors answer the
	// zero force just sent: powered.
	a.last.Status = hw.StatusCalibrated | hw.StatusReady | hw.StatusStarted | hw.StatusPowerSupply
	return a, nil
}

// wake flushes the input, sends the wake-up command and validates the
// reply and the first state, a bounded number of times.
func (a *Arm) wake() (wire.WakeReply, error) {
	var last error
	attempt := 1
	for ; attempt <= a.opts.WakeAttempts; attempt++ {
		w, err := a.wakeOnce()
		if err == nil {
			err = a.firstState()
		}
		if err == nil {
			return w, nil
		}
		last = err
		var pathErr portError
		if errors.As(err, &pathErr) {
			break // the port itself failed: retrying will not help
		}
	}
	tries := "attempts"
	if attempt = min(attempt, a.opts.WakeAttempts); attempt == 1 {
		tries = "attempt"
	}
	return wire.WakeReply{}, fmt.Errorf("hw/driver: wake arm on %s after %d %s: %w", a.opts.Path, attempt, tries, last)
}

// wakeQuiet is how long the line must stay quiet after a wake-up reply
// for the reply to count as aligned. The device sends the reply in one
// write (one USB packet), so its tail would already be there.
const wakeQuiet = 5 * time.Millisecond

// portError marks an error of the port itself (as opposed to a bad reply).
type portError struct{ err error }

func (e portError) Error() string { return e.err.Error() }
func (e portError) Unwrap() error { return e.err }

func (a *Arm) wakeOnce() (wire.WakeReply, error) {
	var w wire.WakeReply
	if err := a.port.ResetInputBuffer(); err != nil {
		return w, portError{fmt.Errorf("flush input: %w", err)}
	}
	a.scan.Reset()
	if err := writeAll(a.port, wire.AppendWake(a.out[:0])); err != nil {
		return w, portError{err}
	}
	var buf [wire.WakeReplyLen]byte
	got := 0
	deadline := time.Now().Add(a.opts.WakeTimeout)
	for late := false; got < len(buf); {
		if late {
			return w, fmt.Errorf("%d of %d reply bytes: %w", got, len(buf), ErrWake)
		}
		var left time.Duration
		left, late = readTimeout(deadline)
		if err := a.port.SetReadTimeout(left); err != nil {
			return w, portError{err}
		}
		n, err := a.port.Read(buf[got:])
		got += n
		if err != nil {
			return w, portError{fmt.Errorf("read: %w", err)}
		}
	}
	// The reply has no header to find and no checksum: noise before it
	// shifts it, and the identity read would be noise plus a prefix of the
	// real one. Such a reply leaves its tail behind, so any byte that
	// follows at once says the 22 read were not the reply.
	if err := a.port.SetReadTimeout(wakeQuiet); err != nil {
		return w, portError{err}
	}
	var tail [wire.MaxFrameLen]byte
	n, err := a.port.Read(tail[:])
	if err != nil {
		return w, portError{fmt.Errorf("read: %w", err)}
	}
	if n > 0 {
		// A firmware that hung and recovered answers every command it had
		// queued (the loop's forces, earlier wake-ups): the next attempt
		// would land in that stream again, so wait it out here.
		drained, err := a.drainUntilQuiet()
		if err != nil {
			return w, err
		}
		return w, fmt.Errorf("reply %x was followed by %d more bytes (%x) and %d after them, so it was not aligned (noise on the line, or answers to commands the firmware had queued): %w", buf, n, tail[:n], drained, ErrWake)
	}
	if err := wire.DecodeWakeReply(buf[:], &w); err != nil {
		return w, fmt.Errorf("%w: %w", ErrWake, err)
	}
	if w.ID == 0 || w.UUID == ([16]byte{}) {
		return w, fmt.Errorf("reply %x has id %d and uuid %x: %w", buf, w.ID, w.UUID, ErrWake)
	}
	return w, nil
}

// drainUntilQuiet reads and discards until the line has been quiet for
// wakeQuiet, for at most WakeTimeout, and returns how many bytes it read.
func (a *Arm) drainUntilQuiet() (int, error) {
	if err := a.port.SetReadTimeout(wakeQuiet); err != nil {
		return 0, portError{err}
	}
	var buf [256]byte
	total := 0
	for end := time.Now().Add(a.opts.WakeTimeout); time.Now().Before(end); {
		n, err := a.port.Read(buf[:])
		total += n
		if err != nil {
			return total, portError{fmt.Errorf("read: %w", err)}
		}
		if n == 0 {
			break
		}
	}
	return total, nil
}

// firstState sends a zero force (the firmware may still hold a force from
// before the service started, and the loop starts inert) and checks the
// reply: a half-awake arm reports a position of exactly zero, which a real
// arm, whose origin is at its base, never does.
func (a *Arm) firstState() error {
	if err := writeAll(a.port, wire.AppendForce(a.out[:0], hw.Vec3{})); err != nil {
		return portError{err}
	}
	ok, err := readFrame(a.port, a.scan, &a.msg, wire.HeaderEndEffectorState, a.opts.WakeTimeout)
	if err != nil {
		return portError{err}
	}
	if !ok {
		return fmt.Errorf("no state after the wake-up: %w", ErrWake)
	}
	if a.msg.A == (hw.Vec3{}) {
		return fmt.Errorf("first state has position exactly zero: %w", ErrWake)
	}
	a.apply(wire.HeaderEndEffectorState, nil)
	return nil
}

// Info returns the identity read at wake-up.
func (a *Arm) Info() hw.Info { return a.info }

// InitialState is the state read at wake-up (its first state's position),
// for the loop's first snapshot before its first exchange
// (loop.InitialStater).
func (a *Arm) InitialState(st *hw.State) { *st = a.last }

// writeAll writes all of b to p, going on after a short write (one a
// signal interrupted): a frame cut short would desynchronise the device,
// and the zero force sent after an error would complete the cut frame
// instead of stopping the force. A write that takes nothing and reports no
// error fails with ErrPortWrite.
func writeAll(p serial.Port, b []byte) error {
	for len(b) > 0 {
		n, err := p.Write(b)
		if err != nil {
			return err
		}
		if n <= 0 {
			return ErrPortWrite
		}
		b = b[min(n, len(b)):]
	}
	return nil
}

// encode appends cmd's frame to dst and returns it with the reply header
// it expects. Idle is a zero force: commands are sticky in firmware. So is
// a command with a NaN or infinite value, which no firmware should see.
func (a *Arm) encode(dst []byte, cmd *hw.Command) ([]byte, byte) {
	if !commandFinite(cmd) {
		return wire.AppendForce(dst, hw.Vec3{}), wire.HeaderEndEffectorState
	}
	switch cmd.Mode {
	case hw.ModeForce:
		return wire.AppendForce(dst, cmd.ForceN), wire.HeaderEndEffectorState
	case hw.ModePosition:
		return wire.AppendPosition(dst, cmd.PositionM), wire.HeaderEndEffectorState
	case hw.ModeTorque:
		return wire.AppendTorques(dst, cmd.TorquesNmm), wire.HeaderJointState
	case hw.ModeAngle:
		return wire.AppendAngles(dst, cmd.AnglesDeg), wire.HeaderJointState
	}
	return wire.AppendForce(dst, hw.Vec3{}), wire.HeaderEndEffectorState
}

// finite3 reports whether x, y and z survive the wire's float32: not NaN,
// not infinite, not beyond float32's range (which would become ±Inf).
func finite3(x, y, z float64) bool {
	const m = math.MaxFloat32
	return math.Abs(x) <= m && math.Abs(y) <= m && math.Abs(z) <= m // false for NaN
}

func commandFinite(cmd *hw.Command) bool {
	switch cmd.Mode {
	case hw.ModeForce:
		return finite3(cmd.ForceN.X, cmd.ForceN.Y, cmd.ForceN.Z)
	case hw.ModePosition:
		return finite3(cmd.PositionM.X, cmd.PositionM.Y, cmd.PositionM.Z)
	case hw.ModeTorque:
		return finite3(cmd.TorquesNmm.A0, cmd.TorquesNmm.A1, cmd.TorquesNmm.A2)
	case hw.ModeAngle:
		return finite3(cmd.AnglesDeg.A0, cmd.AnglesDeg.A1, cmd.AnglesDeg.A2)
	}
	return true
}

// Exchange sends cmd and fills st from the reply. See the package doc for
// misses; any port error is returned at once, after a best-effort zero force.
// A configuration code that is due (see Configure) goes out in the same
// write, before the command: the firmware answers it first, and the tick
// waits for the state reply only, never for the acknowledgement.
func (a *Arm) Exchange(cmd *hw.Command, st *hw.State) error {
	if a.closed {
		return ErrClosed
	}
	if cmd == nil || st == nil {
		return errNilExchange
	}
	if a.resync {
		if err := a.drain(); err != nil {
			return a.fail(err)
		}
	}
	a.tick++
	frame := a.out[:0]
	code := a.dueConfig()
	if code != nil {
		frame = wire.AppendConfig(frame, code.req)
	}
	frame, want := a.encode(frame, cmd)
	if err := writeAll(a.port, frame); err != nil {
		return a.fail(err)
	}
	var ok bool
	var err error
	if a.resync {
		ok, err = a.readResync(want, a.opts.ReplyTimeout)
	} else {
		ok, err = a.readReply(want, code != nil, a.opts.ReplyTimeout)
	}
	if code != nil && code.pending {
		// Unacknowledged (ignored, or the ack was lost): try again
		// later, less often each time.
		code.dueTick = a.tick + code.backoff
		code.backoff = min(2*code.backoff, a.ticksFor(configRetryMaxS))
	}
	if err != nil {
		return a.fail(err)
	}
	if !ok {
		a.startResync()
		a.misses++
		a.missed++
		// The state repeats, but the force is the one just sent, which the
		// firmware holds if it took it (commands are sticky): a halt's
		// zero must not read as the last answered tick's force.
		a.last.ForceN = sentForce(cmd)
		*st = a.last
		if a.misses >= a.opts.MaxMisses {
			a.haltQuietly()
			return a.replyErr
		}
		return nil
	}
	a.misses = 0
	if a.resync {
		a.settleResync()
	}
	a.apply(want, cmd)
	*st = a.last
	return nil
}

// dueConfig returns the first pending configuration code whose retry time
// has come, or nil.
func (a *Arm) dueConfig() *configCode {
	for i := range a.config {
		if c := &a.config[i]; c.pending && a.tick >= c.dueTick {
			return c
		}
	}
	return nil
}

// readReply is readFrame for the reply header want; with acks it also takes
// configuration acknowledgements on the way (a code went out this tick).
func (a *Arm) readReply(want byte, acks bool, timeout time.Duration) (bool, error) {
	if !acks {
		return readFrame(a.port, a.scan, &a.msg, want, timeout)
	}
	deadline := time.Now().Add(timeout)
	for late := false; ; {
		for _, ok := a.scan.Next(&a.msg); ok; _, ok = a.scan.Next(&a.msg) {
			switch a.msg.Header {
			case want:
				return true, nil
			case wire.HeaderConfig:
				a.acknowledge(a.msg.Config)
			}
		}
		if late {
			return false, nil
		}
		var err error
		if late, err = a.readBefore(deadline); err != nil {
			return false, err
		}
	}
}

// readBefore reads once more into the scanner, waiting no later than
// deadline. Past the deadline it still takes, without waiting, what has
// arrived, and says so (late): the caller's last look.
func (a *Arm) readBefore(deadline time.Time) (late bool, err error) {
	left, late := readTimeout(deadline)
	if err := a.port.SetReadTimeout(left); err != nil {
		return late, err
	}
	_, err = a.fill()
	return late, err
}

// readTimeout is the read timeout that ends at deadline, and whether the
// deadline has passed already: then the read must not wait, but must
// still be made. A reply that arrived before the deadline came in time,
// even when the reading thread was preempted past it (a loaded host)
// after its last read, or before its first; counting it as a miss would
// start a resynchronisation for nothing, and a run of such misses fails
// the device.
func readTimeout(deadline time.Time) (time.Duration, bool) {
	left := time.Until(deadline)
	if left <= 0 {
		return 0, true
	}
	return left, false
}

// acknowledge settles the pending code an acknowledgement answers. A code
// the firmware refused is not retried (the firmware does not support it)
// until the next Configure; ConfigState reports it.
func (a *Arm) acknowledge(ack wire.Config) {
	for i := range a.config {
		c := &a.config[i]
		if !c.pending || c.req.Sub != ack.Sub {
			continue
		}
		c.pending = false
		if ack.Status != 0 {
			a.refused = a.refusal(ack) // off the happy path: may allocate
		}
	}
}

func (a *Arm) refusal(ack wire.Config) error {
	return fmt.Errorf("hw/driver: configure arm %s on %s: code %#x refused (status %d); the firmware may not support it, update it", a.info.ID, a.opts.Path, ack.Sub, ack.Status)
}

// ticksFor converts seconds to Exchanges at the arm's period, at least 1.
func (a *Arm) ticksFor(seconds float64) uint64 {
	return uint64(max(1, math.Ceil(seconds/a.opts.PeriodS)))
}

// apply folds the reply in a.msg into a.last. A reply carries either the
// cursor (0x2B) or the joints (0x1B), never both: the other half is derived
// by the model's kinematics (hw/sim's, the one the simulated and emulated
// arms move by), so no field of the state freezes in either mode.
func (a *Arm) apply(header byte, cmd *hw.Command) {
	if header == wire.HeaderJointState {
		a.last.AnglesDeg = hw.Angles3{A0: a.msg.A.X, A1: a.msg.A.Y, A2: a.msg.A.Z}
		a.last.AngularVelocityDps = hw.Angles3{A0: a.msg.B.X, A1: a.msg.B.Y, A2: a.msg.B.Z}
		sim.DeriveCursorState(&a.last, a.leftHanded)
		a.last.ForceN = hw.Vec3{}
		return
	}
	a.last.PositionM = a.msg.A
	a.last.VelocityMps = a.msg.B
	sim.DeriveArmState(&a.last, a.leftHanded)
	a.last.ForceN = sentForce(cmd)
}

// sentForce is the force a command puts on the arm: its own in force mode
// (when finite: a non-finite one is sent as zero), none otherwise.
func sentForce(cmd *hw.Command) hw.Vec3 {
	if cmd != nil && cmd.Mode == hw.ModeForce && commandFinite(cmd) {
		return cmd.ForceN
	}
	return hw.Vec3{}
}

// readFrame reads p through scan until a frame with header want is decoded
// into msg (true) or the timeout passes (false; what arrived by then is
// still read, see readTimeout). Frames with other headers are dropped. An
// error is the port's.
func readFrame(p serial.Port, scan *wire.Scanner, msg *wire.Message, want byte, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for late := false; ; {
		if _, ok := scan.NextOf(want, msg); ok {
			return true, nil
		}
		if late {
			return false, nil
		}
		var left time.Duration
		left, late = readTimeout(deadline)
		if err := p.SetReadTimeout(left); err != nil {
			return false, err
		}
		n, err := p.Read(scan.Space())
		scan.Fill(n)
		if err != nil {
			return false, err
		}
	}
}

// fail sends a best-effort zero force and wraps a port error. It is off the
// happy path, so it may allocate.
func (a *Arm) fail(err error) error {
	a.haltQuietly()
	return fmt.Errorf("hw/driver: arm %s on %s: %w", a.info.ID, a.opts.Path, gone(err))
}

// gone marks a port error that no retry on the port can mend (its device
// went away: serial.ErrDisconnected; or it takes no data, its firmware
// hung: serial.ErrWriteStalled) with hw.ErrGone, so the loop fails the
// device at once; the scan opens it again when it is back.
func gone(err error) error {
	switch {
	case errors.Is(err, serial.ErrDisconnected):
		return fmt.Errorf("%w (%w)", err, hw.ErrUnplugged)
	case errors.Is(err, serial.ErrWriteStalled):
		return fmt.Errorf("%w (%w)", err, hw.ErrGone)
	}
	return err
}

// haltQuietly writes a zero force without waiting for the reply; the
// driver resynchronises so the reply is not taken for a later command's.
func (a *Arm) haltQuietly() {
	_ = writeAll(a.port, wire.AppendForce(a.out[:0], hw.Vec3{}))
	a.last.ForceN = hw.Vec3{}
	a.startResync()
}

// Halt sends a zero force and waits (HaltTimeout) for its reply so the
// stream stays in step, unless the device has missed every reply of the
// miss budget (then it does not wait). It is idempotent. It fails only
// when the zero force could not be written; after a missing reply the
// driver resynchronises (see resync.go), so the late reply is not taken
// for the next command's.
func (a *Arm) Halt() error {
	if a.closed {
		return ErrClosed
	}
	// A drain that fails is left for the next Exchange, which reports it:
	// Halt's job is the zero force below.
	if a.resync {
		_ = a.drain()
	}
	if err := writeAll(a.port, wire.AppendForce(a.out[:0], hw.Vec3{})); err != nil {
		a.startResync()
		return fmt.Errorf("hw/driver: halt arm %s on %s: zero force not sent, the device may still apply its last force: %w", a.info.ID, a.opts.Path, err)
	}
	a.last.ForceN = hw.Vec3{}
	if a.misses >= a.opts.MaxMisses {
		// The device has been silent for the whole miss budget: its
		// reply will not come within HaltTimeout either, and the loop
		// halts after every failed exchange, so waiting would stretch
		// each of its ticks to HaltTimeout and keep a dead device listed
		// for seconds. Resynchronisation takes the reply if it comes.
		a.startResync()
		return nil
	}
	var ok bool
	var err error
	if a.resync {
		ok, err = a.readResync(wire.HeaderEndEffectorState, a.opts.HaltTimeout)
	} else {
		ok, err = readFrame(a.port, a.scan, &a.msg, wire.HeaderEndEffectorState, a.opts.HaltTimeout)
	}
	if err != nil || !ok {
		a.startResync()
		return nil
	}
	if a.resync {
		a.settleResync()
	}
	a.apply(wire.HeaderEndEffectorState, nil)
	return nil
}

// Configure queues the firmware configuration codes for s and returns at
// once: each code goes out with a following Exchange (see there), so a
// configuration never takes a tick's deadline. A code the firmware does not
// acknowledge is sent again after 10 ms, then after twice as long each time
// up to 5 s, until it is acknowledged or a newer Configure replaces it.
// ConfigState tells what is still pending.
func (a *Arm) Configure(s hw.Settings) error {
	if a.closed {
		return ErrClosed
	}
	reqs := [len(a.config)]wire.Config{
		{Sub: wire.ConfigHandedness, Flag: !s.LeftHanded},
		{Sub: wire.ConfigTorqueScaling, Flag: s.TorqueScaling},
		{Sub: wire.ConfigGravity, Flag: s.GravityCompensation, Value: s.GravityScale},
	}
	first := a.ticksFor(configRetryS)
	a.leftHanded = s.LeftHanded
	for i, r := range reqs {
		a.config[i] = configCode{req: r, pending: true, dueTick: a.tick + 1, backoff: first}
	}
	a.refused = nil
	return nil
}

// ConfigState returns how many configuration codes of the last Configure
// the firmware has not acknowledged yet, and the error of a code it refused
// (nil if none). Call it from the goroutine that calls Exchange.
func (a *Arm) ConfigState() (pending int, refused error) {
	for _, c := range a.config {
		if c.pending {
			pending++
		}
	}
	return pending, a.refused
}

// Close sends a zero force, then closes the port. Calls after Close fail
// with ErrClosed.
func (a *Arm) Close() error {
	if a.closed {
		return ErrClosed
	}
	haltErr := a.Halt()
	a.closed = true
	if err := a.port.Close(); err != nil {
		return fmt.Errorf("hw/driver: close arm %s on %s: %w", a.info.ID, a.opts.Path, err)
	}
	return haltErr
}

// Missed returns how many replies were missed since open. Like Skipped, it
// is for the goroutine that calls Exchange (or after the loop stopped).
func (a *Arm) Missed() uint64 { return a.missed }

// Skipped returns how many received bytes were dropped as noise so far.
func (a *Arm) Skipped() uint64 { return a.scan.Skipped() }

// StateAge tells how old the last Exchange's state is (actors/loop's
// StateAgeReporter): repeated when this exchange's reply was missed and
// the state is an earlier reply's again, else fresh (age 0: the reply
// just read).
func (a *Arm) StateAge() (ageNs int64, repeated bool) { return 0, a.misses > 0 }

// Stale returns how many replies were dropped since open because they
// answered an earlier command (late replies found while resynchronising).
func (a *Arm) Stale() uint64 { return a.stale }
