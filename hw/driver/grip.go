package driver

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/wire"
)

// GripOptions tune a Grip. Zero values take the defaults.
type GripOptions struct {
	// Path is reported as Info().Port.
	Path string
	// Link is how the grip reaches the host, reported as Info().Link: its
	// status layout follows it. Zero (LinkUnknown: a port discovery found,
	// not named) is told from the grip's own status stream at open
	// (wire.DetectGripLayout), within DetectTimeout; a grip heard by then
	// whose stream does not tell (too few frames, interleaved with another
	// grip's) is read as wireless (its dongle's), and one that sent no
	// status at all fails the open with ErrNoGripStatus: silence says
	// nothing of its link, and a wired grip asleep at open was guessed
	// wireless, then read in the wrong layout once it woke.
	Link hw.Link
	// DetectTimeout bounds the wait for status frames that tell the
	// layout when Link is zero (default 1 s: older handles report at about
	// 50 Hz).
	DetectTimeout time.Duration
	// StaleAfter is how long Exchange tolerates no status frame before it
	// fails (default 250 ms: older handles report at about 50 Hz, so a
	// 1 kHz loop sees most ticks without a new frame).
	StaleAfter time.Duration
	// InfoAttempts and InfoTimeout bound the identification at open
	// (defaults 5 and 250 ms).
	InfoAttempts int
	InfoTimeout  time.Duration
}

func (o *GripOptions) fill() {
	if o.DetectTimeout <= 0 {
		o.DetectTimeout = time.Second
	}
	if o.StaleAfter <= 0 {
		o.StaleAfter = 250 * time.Millisecond
	}
	if o.InfoAttempts <= 0 {
		o.InfoAttempts = 5
	}
	if o.InfoTimeout <= 0 {
		o.InfoTimeout = 250 * time.Millisecond
	}
}

// Errors of the grip driver, for errors.Is.
var (
	// ErrStale is returned by Grip.Exchange when no status frame came for
	// GripOptions.StaleAfter.
	ErrStale = errors.New("no status from the grip; check it is switched on, charged and paired with the dongle")
	// ErrNoGripInfo is returned by OpenGrip when the dongle lists no grip.
	ErrNoGripInfo = errors.New("the dongle reported no grip; switch the grip on, charge it and pair it with the dongle")
	// ErrNoGripStatus is returned by OpenGrip when the grip's link is to
	// be told from its status stream (GripOptions.Link zero) and the grip
	// sent no status within DetectTimeout: asleep, switched off or out of
	// range. Open it again once it streams.
	ErrNoGripStatus = errors.New("the grip sent no status, so whether it is wired or wireless cannot be told; wake it, switch it on or charge it")
)

// Grip reads one grip's status frames from a dongle's serial port. A dongle
// may carry several grips; this driver follows the first one it lists.
type Grip struct {
	// Immutable after OpenGrip.
	port     serial.Port
	opts     GripOptions
	info     hw.Info
	id       uint16
	staleErr error

	// Owned by the goroutine that calls Exchange.
	scan   *wire.Scanner
	msg    wire.Message
	last   hw.State
	seen   time.Time // when the last status frame came
	ageNs  int64     // how old the last Exchange's state was (StateAge)
	closed bool
}

var _ hw.Driver = (*Grip)(nil)

// OpenGrip asks the dongle on p for its grips and returns a driver for the
// first. The driver owns p from then on, and closes it on failure.
func OpenGrip(p serial.Port, o GripOptions) (*Grip, error) {
	o.fill()
	g := &Grip{port: p, opts: o, scan: wire.NewScannerIn(wire.GripLayout(o.Link), wire.ToHost)}
	gi, err := g.identify()
	if err != nil {
		p.Close()
		return nil, err
	}
	g.id = gi.ID
	link := o.Link
	if link == hw.LinkUnknown {
		if link, err = g.detectLink(); err != nil {
			p.Close()
			return nil, err
		}
	}
	g.info = hw.Info{
		Kind: hw.KindGrip,
		ID:   strconv.Itoa(int(gi.ID)),
		// The grip protocol carries no UUID: model and id are the best
		// identity it offers.
		UUID:            fmt.Sprintf("grip-%d-%d", gi.Model, gi.ID),
		Model:           gi.Model,
		HardwareVersion: gi.HardwareVersion,
		FirmwareVersion: gi.FirmwareVersion,
		Port:            o.Path,
		Link:            link,
	}
	g.staleErr = fmt.Errorf("hw/driver: grip %s on %s: %w", g.info.ID, o.Path, ErrStale)
	g.last.Orientation = hw.Quat{W: 1}
	g.seen = time.Now()
	return g, nil
}

// detectLink tells the grip's link from its status stream: it reads until
// wire.DetectGripLayout decides or DetectTimeout passes (then the dongle's,
// wireless, if a status frame of the grip came, and ErrNoGripStatus if none
// did), and reads on in that layout, the bytes read meanwhile first.
// The bytes after the info frame count; those before it were scanned
// already, in the layout identification read them in.
func (g *Grip) detectLink() (hw.Link, error) {
	const keep = 1024 // as much as the scanner holds: dozens of status frames
	buf := make([]byte, 0, 2*keep)
	if rest := g.scan.Unscanned(); len(rest) <= keep {
		buf = append(buf, rest...) // what came after the info frame
	} else {
		buf = append(buf, rest[len(rest)-keep:]...)
	}
	layout, decided := wire.DetectGripLayout(buf, g.id)
	heard := decided || wire.GripHeard(buf, g.id)
	deadline := time.Now().Add(g.opts.DetectTimeout)
	for late := false; !decided && !late; {
		var left time.Duration
		left, late = readTimeout(deadline)
		if err := g.port.SetReadTimeout(left); err != nil {
			return hw.LinkUnknown, fmt.Errorf("hw/driver: open grip on %s: %w", g.opts.Path, err)
		}
		if len(buf) == cap(buf) {
			buf = append(buf[:0], buf[len(buf)-keep:]...) // no run was in the older half alone
		}
		n, err := g.port.Read(buf[len(buf):cap(buf)])
		if err != nil {
			return hw.LinkUnknown, fmt.Errorf("hw/driver: open grip on %s: read: %w", g.opts.Path, err)
		}
		buf = buf[:len(buf)+n]
		layout, decided = wire.DetectGripLayout(buf, g.id)
		heard = heard || decided || n > 0 && wire.GripHeard(buf, g.id)
	}
	if !heard {
		return hw.LinkUnknown, fmt.Errorf("hw/driver: open grip %d on %s: no status from it in %v: %w", g.id, g.opts.Path, g.opts.DetectTimeout, ErrNoGripStatus)
	}
	g.scan = wire.NewScannerIn(layout, wire.ToHost)
	_, _ = g.scan.Write(buf)
	return wire.GripLink(layout), nil
}

// identify asks the dongle for its grips, a bounded number of times, and
// returns the first one listed with an id other than 0: no grip has id 0
// (firmware reports it for a failed identification, as an arm's wake-up
// reply does), so the grip listed so is none, and opening it would serve a
// device no status frame names.
func (g *Grip) identify() (wire.GripInfo, error) {
	var out [1]byte
	zeroIDs := false
	for attempt := 1; attempt <= g.opts.InfoAttempts; attempt++ {
		if err := g.port.ResetInputBuffer(); err != nil {
			return wire.GripInfo{}, fmt.Errorf("hw/driver: open grip on %s: flush input: %w", g.opts.Path, err)
		}
		g.scan.Reset()
		if err := writeAll(g.port, wire.AppendGripQuery(out[:0])); err != nil {
			return wire.GripInfo{}, fmt.Errorf("hw/driver: open grip on %s: %w", g.opts.Path, err)
		}
		ok, zero, err := g.readInfo()
		zeroIDs = zeroIDs || zero
		if err != nil {
			return wire.GripInfo{}, fmt.Errorf("hw/driver: open grip on %s: read: %w", g.opts.Path, err)
		}
		if ok {
			return g.msg.GripInfo, nil
		}
	}
	if zeroIDs {
		return wire.GripInfo{}, fmt.Errorf("hw/driver: open grip on %s: the dongle listed only grips with id 0, which no grip has, after %d attempts: %w", g.opts.Path, g.opts.InfoAttempts, ErrNoGripInfo)
	}
	return wire.GripInfo{}, fmt.Errorf("hw/driver: open grip on %s: no grip info after %d attempts: %w", g.opts.Path, g.opts.InfoAttempts, ErrNoGripInfo)
}

// readInfo reads until a grip info frame with an id other than 0 is
// decoded into g.msg (ok) or InfoTimeout passes (what arrived by then is
// still read, see readTimeout); zero says an info frame with id 0 came
// (passed over). The dongle keeps streaming status while it answers, and a
// status frame's payload may hold the info header byte: so frames are
// taken whole (Next), never by looking for the header alone, which would
// read an info frame out of a status frame's middle.
func (g *Grip) readInfo() (ok, zero bool, err error) {
	deadline := time.Now().Add(g.opts.InfoTimeout)
	for late := false; ; {
		for _, found := g.scan.Next(&g.msg); found; _, found = g.scan.Next(&g.msg) {
			if g.msg.Header != wire.HeaderGripInfo {
				continue
			}
			if g.msg.GripInfo.ID == 0 {
				zero = true
				continue
			}
			return true, zero, nil
		}
		if late {
			return false, zero, nil
		}
		var left time.Duration
		left, late = readTimeout(deadline)
		if err := g.port.SetReadTimeout(left); err != nil {
			return false, zero, err
		}
		n, err := g.port.Read(g.scan.Space())
		g.scan.Fill(n)
		if err != nil {
			return false, zero, err
		}
	}
}

// Info returns the identity read at open.
func (g *Grip) Info() hw.Info { return g.info }

// Exchange takes every status frame that has arrived, without waiting, and
// fills st from the newest. cmd is ignored: a grip has no output. It fails
// when no status came for StaleAfter.
func (g *Grip) Exchange(_ *hw.Command, st *hw.State) error {
	if g.closed {
		return ErrClosed
	}
	if st == nil {
		return errNilExchange
	}
	if err := g.port.SetReadTimeout(0); err != nil {
		return fmt.Errorf("hw/driver: grip %s on %s: %w", g.info.ID, g.opts.Path, gone(err))
	}
	for {
		n, err := g.port.Read(g.scan.Space())
		g.scan.Fill(n)
		if err != nil {
			return fmt.Errorf("hw/driver: grip %s on %s: read: %w", g.info.ID, g.opts.Path, gone(err))
		}
		for _, ok := g.scan.Next(&g.msg); ok; _, ok = g.scan.Next(&g.msg) {
			g.apply()
		}
		if n == 0 {
			break
		}
	}
	*st = g.last
	age := time.Since(g.seen)
	if age > g.opts.StaleAfter {
		return g.staleErr
	}
	g.ageNs = int64(age)
	return nil
}

// StateAge tells how old the last Exchange's state is (actors/loop's
// StateAgeReporter): a grip streams status at its own rate, slower than
// most loops, and an Exchange between two frames returns the last one
// again, as old as the time since it came.
func (g *Grip) StateAge() (ageNs int64, repeated bool) { return g.ageNs, false }

func (g *Grip) apply() {
	switch g.msg.Header {
	case wire.HeaderGripStatus:
		s := &g.msg.GripStatus
		if s.ID != g.id {
			return
		}
		g.seen = time.Now()
		if s.Oriented() { // else the grip reports why (s.Error): keep the last
			g.last.Orientation = s.Orientation
		}
		g.last.Buttons = hw.Buttons(s.Buttons) & (hw.ButtonA | hw.ButtonB | hw.ButtonC)
		g.last.Hall = float64(s.Hall) / 255
		g.last.Battery = min(max(s.Battery, 0), 1)
		g.last.Status = hw.StatusConnected | hw.StatusAwake
		g.last.GripError = s.Error
		if s.Error == 0 {
			g.last.Status |= hw.StatusReady
		}
	case wire.HeaderGripError:
		// Code 0 is none (hw.State.GripError): an error frame without an
		// error says nothing, and is no reason to list the grip not ready.
		if g.msg.GripUser.ID == g.id && g.msg.GripUser.Error != 0 {
			g.last.GripError = g.msg.GripUser.Error
			g.last.Status &^= hw.StatusReady
		}
	}
}

// Halt does nothing but check the driver is open: a grip has no output.
func (g *Grip) Halt() error {
	if g.closed {
		return ErrClosed
	}
	return nil
}

// Close closes the port.
func (g *Grip) Close() error {
	if g.closed {
		return ErrClosed
	}
	g.closed = true
	if err := g.port.Close(); err != nil {
		return fmt.Errorf("hw/driver: close grip %s on %s: %w", g.info.ID, g.opts.Path, err)
	}
	return nil
}
