package discovery

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/hid"
	"github.com/hapticd/hapticd/hw/serial"
)

// Handler receives what a Watcher finds. Calls come from the Watcher's Run
// goroutine, one at a time; they should not block for long.
type Handler interface {
	// DeviceFound hands over a new, open driver. The handler owns it until
	// it calls Watcher.Lost for its port.
	DeviceFound(d hw.Driver)
	// ScanReport is called after a scan whose outcome differs from the
	// previous one.
	ScanReport(r Report)
	// Refuses is asked at the start of each scan whether the service
	// takes devices now: a non-empty reason (serial devices are disabled)
	// keeps every port it would open closed, sending its device no byte
	// and not holding it, and reports it failed with reason and hint. The
	// next scan that finds no reason opens the ports at once.
	Refuses() (reason, hint string)
}

// Match is a known device's USB identity. Both the id and a product string
// must match before a byte is sent: the arm uses the generic Teensy id.
type Match struct {
	VID, PID uint16
	Products []string // substrings of the USB product string, any of them
	Kind     hw.Kind
}

// matches is the table of known devices; it is never written. See Matches.
var matches = [...]Match{
	{VID: 0x16c0, PID: 0x0483, Products: []string{"Haply", "Teensyduino"}, Kind: hw.KindArm},
	{VID: 0x2fe3, PID: 0x0100, Products: []string{"Haply USB Transceiver"}, Kind: hw.KindGrip},
}

// Matches returns a copy of the known devices' USB identities.
func Matches() []Match {
	out := make([]Match, len(matches))
	for i, m := range matches {
		out[i] = m
		out[i].Products = slices.Clone(m.Products)
	}
	return out
}

// Outcome is what a scan did with a port.
type Outcome uint8

const (
	Loaded  Outcome = iota + 1 // a driver is open on it
	Skipped                    // not a known device; no byte was sent
	Failed                     // a known or explicit device that did not open
)

func (o Outcome) String() string {
	switch o {
	case Loaded:
		return "loaded"
	case Skipped:
		return "skipped"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// PortReport is one port's outcome in a scan.
type PortReport struct {
	Path     string
	Explicit bool // named by --hw-port
	VID, PID uint16
	Product  string
	Serial   string
	Kind     hw.Kind // the device kind it matched (0 when skipped)
	Outcome  Outcome
	DeviceID string // when loaded
	UUID     string // when loaded
	Reason   string // why skipped or failed
	Hint     string // how to fix a failure
	Failures int    // consecutive failures
	RetryAt  time.Time
}

// Report is the outcome of one scan, ports sorted by path.
type Report struct {
	At    time.Time
	Ports []PortReport
}

// WatcherOptions configure a Watcher. Zero values take the defaults.
type WatcherOptions struct {
	// ExplicitPorts are opened whatever their USB identity: arms, unless
	// the path is prefixed "grip:" ("grip:/dev/ttyACM3": a grip, wired or
	// through its wireless dongle, told from its status stream as a grip
	// the scan finds) or "wired-grip:" (a handle on a cable, whatever its
	// stream looks like).
	ExplicitPorts []string
	// ScanPeriod is the time between scans (default 1 s).
	ScanPeriod time.Duration
	// PeriodS is the loop period the arms and RawHID boards will be driven
	// at (default 0.001 s); their reply deadline derives from it.
	PeriodS float64
	// Arm and Grip are the driver options (Path and PeriodS are set by the
	// Watcher).
	Arm  driver.ArmOptions
	Grip driver.GripOptions
	// BackoffMin and BackoffMax bound the wait before a failed port is
	// tried again (defaults 1 s and 1 min): it doubles with each failure
	// while the port's node stays the same, a device lost within
	// BackoffMax of its load counting as one, and starts afresh when the
	// node goes, comes back or is replaced (a replug), or once a device
	// has stayed up longer than BackoffMax (its report's Failures is 0
	// from the next scan on).
	BackoffMin, BackoffMax time.Duration
	// Claim takes a serial port for the watcher (default
	// serial.ClaimPort), which opens it under the claim; Enumerate lists
	// the system's ports (default serial.Enumerate); Now is the clock
	// (default time.Now). Tests replace them.
	Claim     func(path string) (*serial.Claim, error)
	Enumerate func() ([]serial.PortInfo, error)
	Now       func() time.Time
	// HIDEnumerate and HIDOpen find and open RawHID boards (defaults
	// hid.Enumerate and hid.Open; in a build without HID they report
	// hid.ErrUnavailable and HID is left out quietly). HID is the options
	// of their drivers (Path and PeriodS are set by the Watcher). Boards are reported
	// with the path "hid:" + their platform path.
	HIDEnumerate func() ([]hid.DeviceInfo, error)
	HIDOpen      func(hid.DeviceInfo) (hid.Device, error)
	HID          hid.Options
}

// portState is what the watcher remembers of a port between scans.
type portState struct {
	drv hw.Driver // non-nil while loaded
	// closing: Lost or Refused is closing the driver it took from drv.
	// The port is not opened again until the close ends: the old driver
	// still reads and writes it (its zero force, the reply it waits for).
	closing bool
	node    string // the node the path resolved to when it was loaded
	// claim holds the serial port from its first load until its device
	// goes (its node goes or is replaced, or the port hangs up) or
	// Release: between a Lost and the reopen no other hapticd takes the
	// device. Guarded by scanMu, not mu.
	claim *serial.Claim
	// letGo: the service refused the device (Refused); the next scan
	// releases claim.
	letGo bool
	// seen is the node's identity at the last scan that found the port
	// not loaded (while loaded: when it was opened). A change resets the
	// backoff.
	seen     nodeIdentity
	loadedAt time.Time
	failures int
	retryAt  time.Time
	last     PortReport
}

// Watcher scans for devices. Create it with NewWatcher.
type Watcher struct {
	opts WatcherOptions

	// scanMu serialises scans (Run's and a caller's "rescan now"), so a
	// port is never opened twice. It is held across I/O on purpose; lock
	// order: see the package doc.
	scanMu sync.Mutex

	mu      sync.Mutex // guards the following
	ports   map[string]*portState
	report  Report
	wake    chan struct{}
	scanned bool
}

// NewWatcher returns a Watcher; start it with Run.
func NewWatcher(o WatcherOptions) *Watcher {
	if o.ScanPeriod <= 0 {
		o.ScanPeriod = time.Second
	}
	if o.PeriodS <= 0 {
		o.PeriodS = hw.DefaultPeriodS
	}
	if o.BackoffMin <= 0 {
		o.BackoffMin = time.Second
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = time.Minute
	}
	if o.BackoffMax < o.BackoffMin {
		o.BackoffMax = o.BackoffMin
	}
	if o.Claim == nil {
		o.Claim = serial.ClaimPort
	}
	if o.Enumerate == nil {
		o.Enumerate = serial.Enumerate
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.HIDEnumerate == nil {
		o.HIDEnumerate = hid.Enumerate
	}
	if o.HIDOpen == nil {
		o.HIDOpen = hid.Open
	}
	o.ExplicitPorts = slices.Clone(o.ExplicitPorts)
	return &Watcher{opts: o, ports: map[string]*portState{}, wake: make(chan struct{}, 1)}
}

// Run scans at once, then every ScanPeriod (and soon after Lost), until ctx
// ends. It does not close the drivers it handed over.
func (w *Watcher) Run(ctx context.Context, h Handler) {
	t := time.NewTicker(w.opts.ScanPeriod)
	defer t.Stop()
	for {
		w.Scan(h)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		}
	}
}

// Lost tells the watcher that the device on port failed: it closes the
// driver (which sends a zero force if the port still writes) and lets the
// port be scanned again after a backoff, and not before the close has
// ended. The port stays held meanwhile.
func (w *Watcher) Lost(port string) {
	w.lose(port, "device lost (its loop failed: unplugged or not answering)",
		"check the cable and power; it is reopened automatically when it answers", false)
}

// Refused tells the watcher that the service does not take the device it
// handed over on port (serial devices are disabled, say): as Lost, with
// reason and hint in the port's report, and the port is let go until the
// next load, so that another program may take the device.
func (w *Watcher) Refused(port, reason, hint string) { w.lose(port, reason, hint, true) }

func (w *Watcher) lose(port, reason, hint string, letGo bool) {
	w.mu.Lock()
	ps := w.ports[port]
	var drv hw.Driver
	if ps != nil && ps.drv != nil {
		drv = ps.drv
		ps.drv, ps.closing = nil, true
		ps.letGo = letGo
		now := w.opts.Now()
		w.forgiveLocked(ps, now)
		ps.failures++
		ps.retryAt = now.Add(w.backoff(ps.failures))
		ps.last.Outcome = Failed
		ps.last.Failures, ps.last.RetryAt = ps.failures, ps.retryAt
		ps.last.Reason, ps.last.Hint = reason, hint
	}
	w.mu.Unlock()
	if drv != nil {
		_ = drv.Close() // an unplugged port cannot take the zero force; nothing more to do
		w.mu.Lock()
		ps.closing = false
		w.mu.Unlock()
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// forgiveLocked clears the failures of a device that has stayed up longer
// than BackoffMax by now, in its count and in its report: its next loss
// starts the backoff afresh, while one that flaps keeps doubling it, and
// its loaded entry in /ports says so (failures 0) from the first scan
// after, not only at that loss. The caller holds mu; ps is loaded.
func (w *Watcher) forgiveLocked(ps *portState, now time.Time) {
	if ps.failures > 0 && now.Sub(ps.loadedAt) > w.opts.BackoffMax {
		ps.failures, ps.last.Failures = 0, 0
	}
}

// Report returns the latest scan's report.
func (w *Watcher) Report() Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.report
	r.Ports = slices.Clone(r.Ports)
	return r
}

func (w *Watcher) backoff(failures int) time.Duration {
	d := w.opts.BackoffMin
	for i := 1; i < failures && d < w.opts.BackoffMax; i++ {
		d *= 2
	}
	return min(d, w.opts.BackoffMax)
}

// candidate is a port found in one scan.
type candidate struct {
	info     serial.PortInfo
	explicit bool
	kind     hw.Kind // 0 = does not match
	link     hw.Link // grips named with the wired-grip: prefix; unknown: told by the driver
	reason   string  // why it does not match
	hid      *hid.DeviceInfo
}

// hidPrefix marks RawHID boards among serial port paths.
const hidPrefix = "hid:"

// Scan runs one scan: it opens every matching port that is not loaded and
// not backing off, calls h.DeviceFound for each new driver, and
// h.ScanReport when the outcome changed. Run calls it; it is exported for
// a "rescan now" and for tests.
func (w *Watcher) Scan(h Handler) Report {
	w.scanMu.Lock()
	defer w.scanMu.Unlock()
	cands, enumErr := w.candidates()
	now := w.opts.Now()
	var off refusal
	off.reason, off.hint = h.Refuses()
	seen := map[string]bool{}
	for _, c := range cands {
		seen[c.info.Path] = true
		w.visit(c, now, off, h)
	}
	var gone []*serial.Claim
	w.mu.Lock()
	for path, ps := range w.ports {
		if !seen[path] && ps.drv == nil && !ps.closing {
			delete(w.ports, path) // gone, and nothing of ours is open on it
			if ps.claim != nil {
				gone = append(gone, ps.claim)
			}
		}
	}
	r := Report{At: now}
	for _, ps := range w.ports {
		if ps.drv != nil {
			w.forgiveLocked(ps, now)
		}
		r.Ports = append(r.Ports, ps.last)
	}
	for _, c := range cands {
		if c.kind == 0 {
			r.Ports = append(r.Ports, PortReport{Path: c.info.Path, VID: c.info.VID, PID: c.info.PID,
				Product: c.info.Product, Serial: c.info.SerialNumber, Outcome: Skipped, Reason: c.reason})
		}
	}
	if enumErr != nil {
		r.Ports = append(r.Ports, PortReport{Outcome: Failed, Reason: enumErr.Error(),
			Hint: "serial ports could not be listed; explicit --hw-port paths still work"})
	}
	slices.SortFunc(r.Ports, func(a, b PortReport) int { return strings.Compare(a.Path, b.Path) })
	changed := !w.scanned || !sameOutcome(w.report, r)
	w.report, w.scanned = r, true
	w.mu.Unlock()
	for _, c := range gone {
		_ = c.Release() // a lock on a node that is gone: nothing to report
	}
	if changed {
		out := r
		out.Ports = slices.Clone(r.Ports)
		h.ScanReport(out)
	}
	return r
}

func sameOutcome(a, b Report) bool {
	return slices.EqualFunc(a.Ports, b.Ports, func(x, y PortReport) bool {
		return x.Path == y.Path && x.Outcome == y.Outcome && x.Reason == y.Reason && x.Failures == y.Failures && x.UUID == y.UUID
	})
}

// candidates lists explicit ports first, then enumerated ones not already
// named explicitly. A port is compared by the node its path resolves to:
// an explicit /dev/serial/by-id link and the /dev/ttyACM0 the scan lists
// are one port, opened once (under the explicit name).
func (w *Watcher) candidates() ([]candidate, error) {
	var out []candidate
	explicit := map[string]bool{}
	for _, p := range w.opts.ExplicitPorts {
		kind, path := hw.KindArm, p
		link := hw.LinkUnknown
		if rest, ok := strings.CutPrefix(p, "grip:"); ok {
			kind, path = hw.KindGrip, rest // its link told by the driver
		} else if rest, ok := strings.CutPrefix(p, "wired-grip:"); ok {
			kind, path, link = hw.KindGrip, rest, hw.LinkWired
		}
		node := resolvePort(path)
		if explicit[node] {
			continue // the same port named twice
		}
		explicit[node] = true
		out = append(out, candidate{info: serial.PortInfo{Path: path}, explicit: true, kind: kind, link: link})
	}
	list, err := w.opts.Enumerate()
	if err != nil {
		err = fmt.Errorf("hw/discovery: %w", err)
	}
	for _, pi := range list {
		if len(explicit) > 0 && explicit[resolvePort(pi.Path)] {
			continue
		}
		kind, reason := classify(pi)
		out = append(out, candidate{info: pi, kind: kind, reason: reason})
	}
	boards, herr := w.opts.HIDEnumerate()
	if herr != nil && !errors.Is(herr, hid.ErrUnavailable) {
		err = errors.Join(err, fmt.Errorf("hw/discovery: %w", herr))
	}
	for i := range boards {
		b := boards[i]
		out = append(out, candidate{
			info: serial.PortInfo{Path: hidPrefix + b.Path, IsUSB: true, VID: b.VID, PID: b.PID, SerialNumber: b.Serial, Product: b.Product},
			kind: hw.KindArm, hid: &b,
		})
	}
	return out, err
}

// resolvePort returns the node a port path names, following links (a
// by-id name, a symlink a user made); a path that does not resolve (a
// Windows COM name, a port unplugged) is compared as given.
func resolvePort(path string) string {
	if node, err := filepath.EvalSymlinks(path); err == nil {
		return node
	}
	return path
}

// classify says which known device a port is, or why it is none.
func classify(pi serial.PortInfo) (hw.Kind, string) {
	if pi.Unidentified {
		return 0, "this build cannot read USB ids (macOS without cgo); if it is a device, open it with --hw-port " + pi.Path
	}
	if !pi.IsUSB {
		return 0, "not a USB serial port"
	}
	for _, m := range matches {
		if m.VID != pi.VID || m.PID != pi.PID {
			continue
		}
		for _, p := range m.Products {
			if strings.Contains(pi.Product, p) {
				return m.Kind, ""
			}
		}
		return 0, fmt.Sprintf("USB %04x:%04x is shared by other boards and its product %q matches none of %q", pi.VID, pi.PID, pi.Product, m.Products)
	}
	return 0, fmt.Sprintf("USB %04x:%04x is not a known device", pi.VID, pi.PID)
}

// refusal is why the service takes no device now (Handler.Refuses); an
// empty reason: it takes them.
type refusal struct{ reason, hint string }

// visit opens c if it matches, is not loaded, is not backing off and the
// service takes devices (off is empty).
func (w *Watcher) visit(c candidate, now time.Time, off refusal, h Handler) {
	if c.kind == 0 {
		return
	}
	path := c.info.Path
	var id nodeIdentity
	if c.hid == nil {
		id = identify(path)
	}
	w.mu.Lock()
	ps := w.ports[path]
	if ps == nil {
		ps = &portState{seen: id}
		w.ports[path] = ps
	}
	if ps.drv != nil || ps.closing {
		w.mu.Unlock()
		return
	}
	replugged := id != ps.seen
	if replugged {
		// Gone, back, or a new node: replugged. The backoff was
		// earned by the device that failed, not by this plug, and a
		// user who replugs expects the arm back at once.
		ps.failures, ps.retryAt = 0, time.Time{}
	}
	// While loaded, seen stays the node that was opened: Lost then
	// compares the next scans against it.
	ps.seen = id
	letGo := ps.letGo
	ps.letGo = false
	w.mu.Unlock()
	if ps.claim != nil && (letGo || off.reason != "" || replugged || ps.claim.Gone()) {
		// Refused, or the device the claim held went: a lock on its
		// old node keeps no one out of a new one, and on Linux a tty
		// kept open after its unplug keeps its number, so a replug
		// would come back under another name. Claim the port afresh
		// at the next open.
		_ = ps.claim.Release()
		ps.claim = nil
	}
	w.mu.Lock()
	if off.reason != "" {
		// Not opened: a device the service would refuse is not woken
		// at every retry to be refused again. No backoff either: once
		// the service takes devices again, the next scan opens it.
		ps.failures, ps.retryAt = 0, time.Time{}
		ps.last = PortReport{Path: path, Explicit: c.explicit, VID: c.info.VID, PID: c.info.PID,
			Product: c.info.Product, Serial: c.info.SerialNumber, Kind: c.kind,
			Outcome: Failed, Reason: off.reason, Hint: off.hint}
		w.mu.Unlock()
		return
	}
	if now.Before(ps.retryAt) {
		w.mu.Unlock()
		return
	}
	node := path
	if c.hid == nil {
		node = resolvePort(path)
	}
	if other := w.heldAsLocked(node, path); other != "" {
		// One port under two names (a by-id link made after the scan
		// loaded its node): opening it again would wake the device
		// under its running driver, or fail on the service's own hold.
		ps.last = PortReport{Path: path, Explicit: c.explicit, Kind: c.kind, Outcome: Skipped,
			Reason: "the same port as " + other + ", which this service holds"}
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()

	drv, claim, err := w.open(c, ps.claim)

	w.mu.Lock()
	rep := PortReport{Path: path, Explicit: c.explicit, VID: c.info.VID, PID: c.info.PID,
		Product: c.info.Product, Serial: c.info.SerialNumber, Kind: c.kind}
	if err != nil {
		ps.failures++
		ps.retryAt = now.Add(w.backoff(ps.failures))
		rep.Outcome, rep.Reason, rep.Hint = Failed, err.Error(), hint(err)
		rep.Failures, rep.RetryAt = ps.failures, ps.retryAt
		ps.last = rep
		w.mu.Unlock()
		return
	}
	info := drv.Info()
	ps.drv, ps.node, ps.loadedAt, ps.retryAt = drv, node, now, time.Time{}
	ps.claim = claim
	rep.Outcome, rep.DeviceID, rep.UUID, rep.Failures = Loaded, info.ID, info.UUID, ps.failures
	ps.last = rep
	w.mu.Unlock()
	h.DeviceFound(drv)
}

// heldAsLocked returns the path other than self under which the port at
// node is loaded, or held between a Lost and its reopen, or "" if there is
// none. The caller holds scanMu and mu.
func (w *Watcher) heldAsLocked(node, self string) string {
	for path, ps := range w.ports {
		if path != self && (ps.drv != nil || ps.closing || ps.claim != nil) && ps.node == node {
			return path
		}
	}
	return ""
}

// open opens the device of c: a serial port under held, the port's claim
// kept since an earlier load, or else under a claim of its own. It returns
// the claim the driver's port was opened under (nil for a RawHID board);
// after an error the claim it took is released, held is kept.
func (w *Watcher) open(c candidate, held *serial.Claim) (hw.Driver, *serial.Claim, error) {
	path := c.info.Path
	if c.hid != nil {
		dev, err := w.opts.HIDOpen(*c.hid)
		if err != nil {
			return nil, nil, err
		}
		o := w.opts.HID
		o.Path, o.PeriodS = path, w.opts.PeriodS
		drv, err := hid.NewDriver(dev, o)
		return drv, nil, err
	}
	claim := held
	if claim == nil {
		var err error
		if claim, err = w.opts.Claim(path); err != nil {
			return nil, nil, err
		}
	}
	drv, err := w.openSerial(c, claim)
	if err != nil && claim != held {
		_ = claim.Release() // never loaded: the port is not ours to keep
	}
	return drv, claim, err
}

func (w *Watcher) openSerial(c candidate, claim *serial.Claim) (hw.Driver, error) {
	path := c.info.Path
	p, err := claim.Open()
	if err != nil {
		return nil, err
	}
	if c.kind == hw.KindGrip {
		o := w.opts.Grip
		o.Path = path
		if c.link != hw.LinkUnknown {
			o.Link = c.link
		}
		return driver.OpenGrip(p, o)
	}
	o := w.opts.Arm
	o.Path, o.PeriodS = path, w.opts.PeriodS
	return driver.OpenArm(p, o)
}

// Release lets go of the ports the watcher holds: a port whose device is
// loaded stays locked until its driver is closed, one held for a reopen is
// free at once. Call it once Run has returned, when the service stops; a
// later Scan claims the ports it opens again.
func (w *Watcher) Release() {
	w.scanMu.Lock()
	defer w.scanMu.Unlock()
	var held []*serial.Claim
	w.mu.Lock()
	for _, ps := range w.ports {
		if ps.claim != nil {
			held = append(held, ps.claim)
			ps.claim = nil
		}
	}
	w.mu.Unlock()
	for _, c := range held {
		_ = c.Release() // the descriptor of a lock: nothing to report
	}
}

// busyHint says how to find what holds a port on goos: each system names
// a port's holder with its own tool.
func busyHint(goos string) string {
	switch goos {
	case "windows":
		return "another program holds the port (another hapticd, the vendor tool or a serial terminal; Sysinternals `handle -a COMn` names it): close it; it is retried automatically"
	case "darwin":
		return "another program holds the port (`lsof` on it names it): stop the other hapticd or the vendor tool; it is retried automatically"
	}
	return "another program holds the port (`fuser -v` on it names it): stop the other hapticd or the vendor tool, or ModemManager (`systemctl stop ModemManager`); it is retried automatically"
}

// hint says how to fix an open failure (STYLE habit 8).
func hint(err error) string {
	switch {
	case errors.Is(err, serial.ErrPermission):
		return "install packaging/udev/70-hapticd.rules into /etc/udev/rules.d, run `udevadm control --reload && udevadm trigger`, and replug the device"
	case errors.Is(err, serial.ErrBusy):
		return busyHint(runtime.GOOS)
	case errors.Is(err, serial.ErrWriteStalled), errors.Is(err, hid.ErrWriteStalled):
		return "the device takes no data (hung firmware): power-cycle or replug it; it is retried automatically with backoff"
	case errors.Is(err, serial.ErrNotFound):
		return "the port vanished: replug the device, or fix the --hw-port path"
	case errors.Is(err, serial.ErrNotSerial):
		return "the path is not a serial port: fix the --hw-port path (an arm's port is /dev/ttyACMn or under /dev/serial/by-id/, COMn on Windows)"
	case errors.Is(err, driver.ErrWake), errors.Is(err, hid.ErrNoInfo):
		return "the device did not identify itself: power-cycle it, and update its firmware if it persists"
	case errors.Is(err, driver.ErrNoGripStatus):
		return "the grip streams no status (asleep, switched off or flat), so its link is not guessed: wake it, switch it on or charge it, or name a grip on a cable wired-grip:; it is retried automatically with backoff"
	case errors.Is(err, driver.ErrNoGripInfo):
		return "no grip answered the dongle: switch the grip on, charge it, and pair it with the dongle; it is retried automatically"
	}
	return "replug the device; it is retried automatically with backoff"
}
