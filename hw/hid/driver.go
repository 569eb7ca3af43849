package hid

import (
	"errors"
	"fmt"
	"time"

	"github.com/hapticd/hapticd/hw"
)

// Device is an open RawHID interface, one report per call.
type Device interface {
	// Read reads one input report into r, waiting at most timeout. It
	// returns false, nil when none came. It may wait less than timeout
	// (a backend that counts whole milliseconds rounds down, and does not
	// wait at all below one); the driver reads again until its own
	// deadline passes.
	Read(r *Report, timeout time.Duration) (bool, error)
	// Write sends one output report.
	Write(r *Report) error
	// Read and Write errors of a board that is gone wrap ErrDisconnected;
	// a Write error of a board that takes no data wraps ErrWriteStalled.
	// Close releases the device.
	Close() error
}

// Options tune a Driver. Zero values take the defaults.
type Options struct {
	// Path is reported as Info().Port.
	Path string
	// PeriodS is the loop period the board is driven at, in seconds
	// (default hw.DefaultPeriodS). ReplyTimeout and MaxMisses default to
	// hw.ReplyBudget(PeriodS), as the serial arm's do. USB full-speed HID
	// polls at 1 ms at best, so a board on it misses replies at faster
	// loops; the default MaxMisses rides out 20 ms of them.
	PeriodS float64
	// ReplyTimeout bounds one Exchange's wait (default 80% of the period).
	ReplyTimeout time.Duration
	// MaxMisses consecutive missed replies make Exchange fail (default:
	// 20 ms of silence, at least 3).
	MaxMisses int
	// InfoAttempts and InfoTimeout bound identification at open (defaults
	// 5 and 250 ms).
	InfoAttempts int
	InfoTimeout  time.Duration
	// MaxForceN is the largest force the board may be commanded (default
	// 5 N: DIY boards are weaker than commercial arms).
	MaxForceN float64
}

func (o *Options) fill() {
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
	if o.InfoAttempts <= 0 {
		o.InfoAttempts = 5
	}
	if o.InfoTimeout <= 0 {
		o.InfoTimeout = 250 * time.Millisecond
	}
	if o.MaxForceN <= 0 {
		o.MaxForceN = 5
	}
}

// Errors of the HID driver, for errors.Is.
var (
	ErrNoReply = errors.New("no reply from the board within the deadline; check the cable, or lower --loop-hz")
	ErrNoInfo  = errors.New("the board did not identify itself; check its firmware speaks the hapticd RawHID layout")
	ErrMode    = errors.New("the RawHID layout carries force commands only; use force control")
	ErrClosed  = errors.New("hw/hid: driver is closed; open the device again")
	// ErrDisconnected is wrapped by a Device's Read or Write error when
	// the board is gone (unplugged, its USB link reset): no retry on this
	// handle can succeed; the board must be opened again once it is back.
	ErrDisconnected = errors.New("the board is disconnected; plug it in again")
	// ErrWriteStalled is wrapped by a Device's Write error when the board
	// took no report for as long as the backend waits (hidapi: 1 s): its
	// firmware hung with its USB link up.
	ErrWriteStalled = errors.New("the board takes no data (its firmware hung); power-cycle or replug it")
	ErrUnavailable  = errors.New("hw/hid: built without HID support (CGO_ENABLED=0 or -tags nohid); rebuild with cgo to drive RawHID boards")
)

var errNilExchange = errors.New("hw/hid: Exchange needs a non-nil command and state; pass caller-owned values")

// Driver drives one RawHID board as an arm with force output.
type Driver struct {
	// Immutable after Open.
	dev     Device
	opts    Options
	info    hw.Info
	missErr error
	modeErr error

	// Owned by the goroutine that calls Exchange.
	out, in Report
	seq     uint8
	misses  int
	last    hw.State
	closed  bool
}

var _ hw.Driver = (*Driver)(nil)

// NewDriver identifies the board on dev and returns its driver. The driver
// owns dev from then on, and closes it on failure.
func NewDriver(dev Device, o Options) (*Driver, error) {
	o.fill()
	d := &Driver{dev: dev, opts: o}
	in, err := d.identify()
	if err != nil {
		dev.Close()
		return nil, err
	}
	d.info = hw.Info{
		Kind:            hw.KindArm,
		ID:              fmt.Sprintf("%04X", in.ID),
		UUID:            hw.FormatUUID(in.UUID),
		Model:           in.Model,
		HardwareVersion: in.HardwareVersion,
		FirmwareVersion: in.FirmwareVersion,
		Port:            o.Path,
		MaxForceN:       o.MaxForceN,
		// DIY firmware does not compensate gravity: the loop does.
		HostGravityCompensation: true,
	}
	d.missErr = fmt.Errorf("hw/hid: board %s on %s: %d replies missed in a row: %w", d.info.ID, o.Path, o.MaxMisses, ErrNoReply)
	d.modeErr = fmt.Errorf("hw/hid: board %s on %s: %w", d.info.ID, o.Path, ErrMode)
	if err := d.Halt(); err != nil {
		dev.Close()
		return nil, err
	}
	return d, nil
}

func (d *Driver) identify() (Info, error) {
	var in Info
	for attempt := 1; attempt <= d.opts.InfoAttempts; attempt++ {
		d.seq++
		d.out.PutInfoRequest(d.seq)
		if err := d.dev.Write(&d.out); err != nil {
			return in, fmt.Errorf("hw/hid: identify board on %s: %w", d.opts.Path, err)
		}
		ok, err := d.await(TypeInfo, d.opts.InfoTimeout)
		if err != nil {
			return in, fmt.Errorf("hw/hid: identify board on %s: %w", d.opts.Path, err)
		}
		if ok {
			d.in.Info(&in)
			if in.ID != 0 && in.UUID != ([16]byte{}) {
				return in, nil
			}
		}
	}
	return in, fmt.Errorf("hw/hid: identify board on %s after %d attempts: %w", d.opts.Path, d.opts.InfoAttempts, ErrNoInfo)
}

// await reads reports until one of type typ answers d.seq (true) or the
// timeout passes (false). Replies to earlier commands are dropped.
func (d *Driver) await(typ byte, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		ok, err := d.dev.Read(&d.in, left)
		if err != nil {
			return false, err
		}
		if ok && d.in.Type() == typ && d.in.Seq() == d.seq {
			return true, nil
		}
	}
}

// Info returns the identity read at open.
func (d *Driver) Info() hw.Info { return d.info }

// StateAge tells how old the last Exchange's state is (actors/loop's
// StateAgeReporter), as the serial arm does: repeated when this
// exchange's reply was missed and the state is an earlier reply's again,
// else fresh.
func (d *Driver) StateAge() (ageNs int64, repeated bool) { return 0, d.misses > 0 }

// Exchange sends cmd's force (zero for ModeIdle) and fills st from the
// reply. Other modes fail with ErrMode. Misses behave as the serial arm's.
func (d *Driver) Exchange(cmd *hw.Command, st *hw.State) error {
	if d.closed {
		return ErrClosed
	}
	if cmd == nil || st == nil {
		return errNilExchange
	}
	var f hw.Vec3
	switch cmd.Mode {
	case hw.ModeIdle:
	case hw.ModeForce:
		f = cmd.ForceN
		if !f.Finite() {
			f = hw.Vec3{}
		}
	default:
		d.haltQuietly()
		return d.modeErr
	}
	d.seq++
	d.out.PutForce(d.seq, f)
	if err := d.dev.Write(&d.out); err != nil {
		return d.fail(err)
	}
	ok, err := d.await(TypeState, d.opts.ReplyTimeout)
	if err != nil {
		return d.fail(err)
	}
	if !ok || !d.stateFinite() {
		d.misses++
		*st = d.last
		if d.misses >= d.opts.MaxMisses {
			d.haltQuietly()
			return d.missErr
		}
		return nil
	}
	d.misses = 0
	d.apply(f)
	*st = d.last
	return nil
}

// stateFinite reports whether the state reply in d.in holds finite
// numbers. One that does not (a sensor not up yet, a firmware bug) is no
// state: it counts as a missed reply, as an implausible serial frame does.
func (d *Driver) stateFinite() bool {
	var s StateReport
	d.in.State(&s)
	return s.PositionM.Finite() && s.VelocityMps.Finite()
}

func (d *Driver) apply(forceN hw.Vec3) {
	var s StateReport
	d.in.State(&s)
	d.last.PositionM, d.last.VelocityMps = s.PositionM, s.VelocityMps
	d.last.Buttons = hw.Buttons(s.Buttons) & (hw.ButtonA | hw.ButtonB | hw.ButtonC)
	d.last.Status = 0
	if s.Status&1 != 0 {
		d.last.Status |= hw.StatusCalibrated
	}
	if s.Status&2 != 0 {
		d.last.Status |= hw.StatusReady
	}
	d.last.ForceN = forceN
}

func (d *Driver) fail(err error) error {
	d.haltQuietly()
	switch {
	case errors.Is(err, ErrDisconnected):
		// No retry can mend it: hw.ErrGone (unplugged, here) makes the
		// loop fail the board at once, and the scan opens it again when
		// it is back.
		return fmt.Errorf("hw/hid: board %s on %s: %w (%w)", d.info.ID, d.opts.Path, err, hw.ErrUnplugged)
	case errors.Is(err, ErrWriteStalled):
		return fmt.Errorf("hw/hid: board %s on %s: %w (%w)", d.info.ID, d.opts.Path, err, hw.ErrGone)
	}
	return fmt.Errorf("hw/hid: board %s on %s: %w", d.info.ID, d.opts.Path, err)
}

func (d *Driver) haltQuietly() {
	d.seq++
	d.out.PutForce(d.seq, hw.Vec3{})
	_ = d.dev.Write(&d.out)
	d.last.ForceN = hw.Vec3{}
}

// Halt sends a zero force and waits for its reply, unless the board has
// missed every reply of the miss budget (then it does not wait). It fails
// only when the zero force could not be written.
func (d *Driver) Halt() error {
	if d.closed {
		return ErrClosed
	}
	d.seq++
	d.out.PutForce(d.seq, hw.Vec3{})
	if err := d.dev.Write(&d.out); err != nil {
		return fmt.Errorf("hw/hid: halt board %s on %s: zero force not sent, the board may still apply its last force: %w", d.info.ID, d.opts.Path, err)
	}
	d.last.ForceN = hw.Vec3{}
	if d.misses >= d.opts.MaxMisses {
		// The board has been silent for the whole miss budget: the loop
		// halts after every failed exchange, and waiting here would
		// stretch each of its ticks to InfoTimeout and keep a dead board
		// listed for seconds.
		return nil
	}
	if ok, err := d.await(TypeState, d.opts.InfoTimeout); ok && err == nil && d.stateFinite() {
		d.apply(hw.Vec3{})
	}
	return nil
}

// Close sends a zero force and releases the device.
func (d *Driver) Close() error {
	if d.closed {
		return ErrClosed
	}
	haltErr := d.Halt()
	d.closed = true
	if err := d.dev.Close(); err != nil {
		return fmt.Errorf("hw/hid: close board %s on %s: %w", d.info.ID, d.opts.Path, err)
	}
	return haltErr
}
