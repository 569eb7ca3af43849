package discovery_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/discovery"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hid"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/sim"
)

type recorder struct {
	mu      sync.Mutex
	found   []hw.Driver
	reports []discovery.Report
	// refusing: the service takes no device now (Refuses).
	refusing bool
}

func (r *recorder) DeviceFound(d hw.Driver) { r.mu.Lock(); r.found = append(r.found, d); r.mu.Unlock() }
func (r *recorder) ScanReport(rep discovery.Report) {
	r.mu.Lock()
	r.reports = append(r.reports, rep)
	r.mu.Unlock()
}

// Refuses refuses devices while refusing is set.
func (r *recorder) Refuses() (reason, hint string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refusing {
		return "devices are disabled", "enable them"
	}
	return "", ""
}

func (r *recorder) closeAll() {
	for _, d := range r.found {
		d.Close()
	}
}

// fakeClock is time as a dependency: scans see only what the test sets.
// Lost reads it too, from the goroutine that calls it.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time       { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration)  { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }
func newClock() *fakeClock                { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func noPorts() ([]serial.PortInfo, error) { return nil, nil }
func noBoards() ([]hid.DeviceInfo, error) { return nil, nil }
func portOf(r discovery.Report, path string) (discovery.PortReport, bool) {
	for _, p := range r.Ports {
		if p.Path == path {
			return p, true
		}
	}
	return discovery.PortReport{}, false
}

func startEmulator(t *testing.T, index int) (*emulator.Emulator, string) {
	t.Helper()
	e, path, err := emulator.StartPTY(emulator.Options{Index: index})
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, path
}

func TestExplicitPortLoadsOnce(t *testing.T) {
	e, path := startEmulator(t, 1)
	rec := &recorder{}
	defer rec.closeAll()
	w := discovery.NewWatcher(discovery.WatcherOptions{ExplicitPorts: []string{path}, Enumerate: noPorts, HIDEnumerate: noBoards,
		Arm: driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond}})
	r := w.Scan(rec)
	w.Scan(rec)
	if len(rec.found) != 1 {
		t.Fatalf("found %d devices over two scans, want 1", len(rec.found))
	}
	if got := rec.found[0].Info().UUID; got != hw.FormatUUID(e.UUID()) {
		t.Errorf("UUID %s, want %s", got, hw.FormatUUID(e.UUID()))
	}
	p, ok := portOf(r, path)
	if !ok || p.Outcome != discovery.Loaded || !p.Explicit || p.UUID == "" {
		t.Errorf("report for %s = %+v", path, p)
	}
	if len(rec.reports) != 1 {
		t.Errorf("%d scan reports for an unchanged outcome, want 1", len(rec.reports))
	}
}

func TestOnlyMatchingPortsGetAByte(t *testing.T) {
	eArm, armPath := startEmulator(t, 2)
	eOther, otherPath := startEmulator(t, 3)
	var mu sync.Mutex
	var opened []string
	ports := []serial.PortInfo{
		{Path: armPath, IsUSB: true, VID: 0x16c0, PID: 0x0483, Product: "Haply Inverse3"},
		// Same generic Teensy id, another product: it must get no byte.
		{Path: otherPath, IsUSB: true, VID: 0x16c0, PID: 0x0483, Product: "Teensy MIDI"},
		{Path: "/dev/ttyS0"},
		{Path: "/dev/ttyUSB9", IsUSB: true, VID: 0x0403, PID: 0x6001, Product: "FT232R"},
		// A macOS build without cgo cannot read USB ids: never opened
		// by the scan, and the reason names the way to open it.
		{Path: "/dev/cu.usbmodem1101", Unidentified: true},
	}
	rec := &recorder{}
	defer rec.closeAll()
	w := discovery.NewWatcher(discovery.WatcherOptions{
		Enumerate:    func() ([]serial.PortInfo, error) { return ports, nil },
		HIDEnumerate: noBoards,
		Claim: func(path string) (*serial.Claim, error) {
			mu.Lock()
			opened = append(opened, path)
			mu.Unlock()
			return serial.ClaimPort(path)
		},
		Arm: driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond},
	})
	r := w.Scan(rec)
	if len(opened) != 1 || opened[0] != armPath {
		t.Fatalf("opened %v, want only %s", opened, armPath)
	}
	if eOther.Stats().Wakeups != 0 || eArm.Stats().Wakeups == 0 {
		t.Errorf("wake-ups: matching arm %d, other board %d; want >0 and 0", eArm.Stats().Wakeups, eOther.Stats().Wakeups)
	}
	tests := []struct {
		path   string
		want   discovery.Outcome
		reason string
	}{
		{armPath, discovery.Loaded, ""},
		{otherPath, discovery.Skipped, "Teensy MIDI"},
		{"/dev/ttyS0", discovery.Skipped, "not a USB"},
		{"/dev/ttyUSB9", discovery.Skipped, "0403:6001"},
		{"/dev/cu.usbmodem1101", discovery.Skipped, "--hw-port /dev/cu.usbmodem1101"},
	}
	for _, tc := range tests {
		p, ok := portOf(r, tc.path)
		if !ok || p.Outcome != tc.want || !strings.Contains(p.Reason, tc.reason) {
			t.Errorf("%s: %+v, want %v with reason containing %q", tc.path, p, tc.want, tc.reason)
		}
	}
}

func TestFailingPortBacksOff(t *testing.T) {
	clock := newClock()
	opens := 0
	w := discovery.NewWatcher(discovery.WatcherOptions{
		ExplicitPorts: []string{"/dev/ttyACM7"},
		Enumerate:     noPorts,
		HIDEnumerate:  noBoards,
		Now:           clock.Now,
		BackoffMin:    time.Second,
		BackoffMax:    4 * time.Second,
		Claim: func(path string) (*serial.Claim, error) {
			opens++
			return nil, fmt.Errorf("hw/serial: open %s: %w", path, serial.ErrPermission)
		},
	})
	rec := &recorder{}
	// Each step: advance the clock, scan, and expect the open count and
	// the wait before the next try.
	steps := []struct {
		advance   time.Duration
		wantOpens int
		wantWait  time.Duration
	}{
		{0, 1, time.Second},
		{500 * time.Millisecond, 1, 500 * time.Millisecond}, // still backing off
		{500 * time.Millisecond, 2, 2 * time.Second},
		{2 * time.Second, 3, 4 * time.Second},
		{4 * time.Second, 4, 4 * time.Second}, // capped
	}
	for i, s := range steps {
		clock.Add(s.advance)
		r := w.Scan(rec)
		p, _ := portOf(r, "/dev/ttyACM7")
		if opens != s.wantOpens || p.RetryAt.Sub(clock.now) != s.wantWait {
			t.Fatalf("step %d: %d opens, retry in %v; want %d and %v", i, opens, p.RetryAt.Sub(clock.now), s.wantOpens, s.wantWait)
		}
		if p.Outcome != discovery.Failed || !strings.Contains(p.Hint, "70-hapticd.rules") {
			t.Fatalf("step %d: report %+v, want failed with the udev hint", i, p)
		}
	}
}

// replugWatcher watches one explicit port, "arm0", which stands for a
// by-id path that survives a replug: it opens the pseudo-terminal *current
// names at the time.
func replugWatcher(clock *fakeClock, current *string) *discovery.Watcher {
	return discovery.NewWatcher(discovery.WatcherOptions{
		ExplicitPorts: []string{"arm0"},
		Enumerate:     noPorts,
		HIDEnumerate:  noBoards,
		Now:           clock.Now,
		Claim:         func(string) (*serial.Claim, error) { return serial.ClaimPort(*current) },
		Arm:           driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond},
	})
}

func TestLostThenReplugSameIdentity(t *testing.T) {
	clock := newClock()
	e1, path1 := startEmulator(t, 4)
	current := path1
	w := replugWatcher(clock, &current)
	rec := &recorder{}
	defer rec.closeAll()
	w.Scan(rec)
	if len(rec.found) != 1 {
		t.Fatalf("found %d, want 1", len(rec.found))
	}
	first := rec.found[0].Info()

	e1.Unplug()
	w.Lost("arm0")
	if err := rec.found[0].Exchange(&hw.Command{}, &hw.State{}); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("the lost driver was not closed: Exchange = %v", err)
	}
	if p, _ := portOf(w.Scan(rec), "arm0"); p.Outcome != discovery.Failed || len(rec.found) != 1 {
		t.Fatalf("right after Lost: %+v, %d found; want failed and backing off", p, len(rec.found))
	}

	_, current = startEmulator(t, 4) // the same arm, plugged back in
	clock.Add(time.Minute)
	w.Scan(rec)
	if len(rec.found) != 2 {
		t.Fatalf("found %d after replug, want 2", len(rec.found))
	}
	if again := rec.found[1].Info(); again.UUID != first.UUID || again.ID != first.ID {
		t.Errorf("replugged arm %s/%s, was %s/%s", again.ID, again.UUID, first.ID, first.UUID)
	}
}

func TestRunScansUntilCancelled(t *testing.T) {
	_, path := startEmulator(t, 5)
	rec := &recorder{}
	defer rec.closeAll()
	w := discovery.NewWatcher(discovery.WatcherOptions{ExplicitPorts: []string{path}, Enumerate: noPorts, HIDEnumerate: noBoards,
		ScanPeriod: 10 * time.Millisecond, Arm: driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx, rec); close(done) }()
	hwtest.Eventually(t, 10*time.Second, "Run to find the explicit port", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.found) == 1
	})
	cancel()
	<-done
}

func TestExplicitGripPort(t *testing.T) {
	// "grip:" names a grip whose link its status stream tells (wired or
	// through a wireless dongle, as a grip the scan finds), "wired-grip:" a
	// grip on a cable: clients name the two differently.
	for _, tc := range []struct {
		prefix string
		family sim.Family
		link   hw.Link
	}{
		{"grip:", sim.FamilyWirelessVerseGrip, hw.LinkWireless},
		{"grip:", sim.FamilyVerseGrip, hw.LinkWired},
		{"wired-grip:", sim.FamilyVerseGrip, hw.LinkWired},
	} {
		prefix, link := tc.prefix, tc.link
		e, path, err := emulator.StartPTY(emulator.Options{Family: tc.family, Index: 6})
		if err != nil {
			hwtest.SkipIfUnsupported(t, err)
			t.Fatal(err)
		}
		rec := &recorder{}
		w := discovery.NewWatcher(discovery.WatcherOptions{ExplicitPorts: []string{prefix + path}, Enumerate: noPorts})
		r := w.Scan(rec)
		if len(rec.found) != 1 || rec.found[0].Info().Kind != hw.KindGrip || rec.found[0].Info().Link != link {
			t.Fatalf("%s: found %v, want one %v grip", prefix, rec.found, link)
		}
		if p, ok := portOf(r, path); !ok || p.Outcome != discovery.Loaded || p.Kind != hw.KindGrip {
			t.Errorf("%s: report %+v", prefix, p)
		}
		rec.closeAll()
		e.Close()
	}
}

func TestRawHIDBoards(t *testing.T) {
	board := hid.NewFake(hid.Info{ID: 0x00AB, UUID: [16]byte{15: 9}})
	boards := []hid.DeviceInfo{{Path: "1-2:1.0", VID: hid.TeensyRawHIDVID, PID: hid.TeensyRawHIDPID, Product: "DIY arm"}}
	opened := 0
	w := discovery.NewWatcher(discovery.WatcherOptions{
		Enumerate:    noPorts,
		HIDEnumerate: func() ([]hid.DeviceInfo, error) { return boards, nil },
		HIDOpen: func(d hid.DeviceInfo) (hid.Device, error) {
			opened++
			return board, nil
		},
	})
	rec := &recorder{}
	defer rec.closeAll()
	r := w.Scan(rec)
	w.Scan(rec)
	if opened != 1 || len(rec.found) != 1 || rec.found[0].Info().ID != "00AB" {
		t.Fatalf("opened %d, found %d", opened, len(rec.found))
	}
	if p, ok := portOf(r, "hid:1-2:1.0"); !ok || p.Outcome != discovery.Loaded {
		t.Errorf("report %+v", r.Ports)
	}
	if err := rec.found[0].Exchange(&hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}, &hw.State{}); err != nil || board.ForceN() != (hw.Vec3{Z: 1}) {
		t.Fatalf("Exchange = %v, board holds %v", err, board.ForceN())
	}
	w.Lost("hid:1-2:1.0")
	if board.ForceN() != (hw.Vec3{}) {
		t.Error("Lost did not leave the board at zero force")
	}
}

// TestRawHIDBoardTakesLoopPeriod checks the watcher hands its loop period
// to RawHID drivers as it does to serial arms: at 500 Hz the reply budget
// is 10 misses (20 ms), not the 1 kHz default's 20.
func TestRawHIDBoardTakesLoopPeriod(t *testing.T) {
	board := hid.NewFake(hid.Info{ID: 0x00AB, UUID: [16]byte{15: 9}})
	boards := []hid.DeviceInfo{{Path: "1-2:1.0", VID: hid.TeensyRawHIDVID, PID: hid.TeensyRawHIDPID, Product: "DIY arm"}}
	w := discovery.NewWatcher(discovery.WatcherOptions{
		PeriodS:      0.002,
		Enumerate:    noPorts,
		HIDEnumerate: func() ([]hid.DeviceInfo, error) { return boards, nil },
		HIDOpen:      func(hid.DeviceInfo) (hid.Device, error) { return board, nil },
	})
	rec := &recorder{}
	defer rec.closeAll()
	w.Scan(rec)
	if len(rec.found) != 1 {
		t.Fatalf("found %d devices, want 1", len(rec.found))
	}
	_, wantMisses := hw.ReplyBudget(0.002)
	board.Stall(1 << 20)
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
	misses := 0
	for err := error(nil); err == nil && misses < 100; {
		misses++
		err = rec.found[0].Exchange(&cmd, &hw.State{})
		if err != nil && !errors.Is(err, hid.ErrNoReply) {
			t.Fatalf("Exchange: %v", err)
		}
	}
	if misses != wantMisses {
		t.Errorf("the driver failed after %d misses, want %d (the budget of a 2 ms period)", misses, wantMisses)
	}
}

// linkWatcher watches the arm at node, which the USB scan lists under that
// path, and the explicit port link (a by-id link to node, or to be); now
// nil is the system clock. opened returns the paths the watcher opened, in
// order.
func linkWatcher(node, link string, now func() time.Time) (w *discovery.Watcher, opened func() []string) {
	var mu sync.Mutex
	var paths []string
	w = discovery.NewWatcher(discovery.WatcherOptions{
		Now:           now,
		ExplicitPorts: []string{link},
		Enumerate: func() ([]serial.PortInfo, error) {
			return []serial.PortInfo{{Path: node, IsUSB: true, VID: 0x16c0, PID: 0x0483, Product: "Teensyduino USB Serial"}}, nil
		},
		HIDEnumerate: noBoards,
		Claim: func(path string) (*serial.Claim, error) {
			mu.Lock()
			paths = append(paths, path)
			mu.Unlock()
			return serial.ClaimPort(path)
		},
		Arm: driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond},
	})
	return w, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(paths)
	}
}

// TestExplicitLinkAndScannedNodeOpenOnce: docs/hardware.md advises naming
// an arm by its stable /dev/serial/by-id link while the USB scan (on by
// default) lists the same device under its node (/dev/ttyACM0). The two
// paths are one port: it must be opened once, not a second time under the
// other name (a second open wakes the arm under the running driver's feet
// and, where the port is not exclusive, registers the arm twice).
func TestExplicitLinkAndScannedNodeOpenOnce(t *testing.T) {
	e, node := startEmulator(t, 5)
	link := filepath.Join(t.TempDir(), "usb-Teensyduino_USB_Serial_12345-if00")
	if err := os.Symlink(node, link); err != nil {
		t.Fatal(err)
	}
	w, opened := linkWatcher(node, link, nil)
	rec := &recorder{}
	defer rec.closeAll()
	w.Scan(rec)
	r := w.Scan(rec)
	if opened := opened(); len(opened) != 1 || opened[0] != link || len(rec.found) != 1 {
		t.Fatalf("opened %v and found %d devices; want %s opened once", opened, len(rec.found), link)
	}
	if got := e.Stats().Wakeups; got != 1 {
		t.Errorf("the arm was woken %d times, want 1", got)
	}
	if p, ok := portOf(r, link); !ok || p.Outcome != discovery.Loaded {
		t.Errorf("report for %s = %+v, want loaded", link, p)
	}
}

// TestScannedNodeThenExplicitLinkOpenOnce: at plug time the kernel makes
// /dev/ttyACM0 a moment before udev makes its by-id link, so a scan can
// load the arm under its node before the explicit link exists. When the
// link appears it names the port already loaded, which must not be opened
// a second time.
func TestScannedNodeThenExplicitLinkOpenOnce(t *testing.T) {
	_, node := startEmulator(t, 6)
	link := filepath.Join(t.TempDir(), "usb-Teensyduino_USB_Serial_67890-if00")
	clk := newClock()
	w, opened := linkWatcher(node, link, clk.Now)
	rec := &recorder{}
	defer rec.closeAll()
	w.Scan(rec) // the link does not exist yet: the scan loads the node
	if err := os.Symlink(node, link); err != nil {
		t.Fatal(err)
	}
	// Past the backoff of the link's failed open.
	clk.Add(time.Hour)
	r := w.Scan(rec)
	clk.Add(time.Hour)
	w.Scan(rec)
	if opened := opened(); len(opened) != 2 || opened[1] != node || len(rec.found) != 1 {
		t.Fatalf("opened %v and found %d devices; want %s opened once (after the link failed to open)", opened, len(rec.found), node)
	}
	if p, ok := portOf(r, node); !ok || p.Outcome != discovery.Loaded {
		t.Errorf("report for %s = %+v, want loaded", node, p)
	}
	if p, ok := portOf(r, link); !ok || p.Outcome != discovery.Skipped || !strings.Contains(p.Reason, node) {
		t.Errorf("report for %s = %+v, want skipped as the port loaded as %s", link, p, node)
	}
}

// TestHungPortDoesNotHoldTheScan: a port whose device takes no data (its
// output buffer is full: hung firmware that keeps its USB link; here a
// pseudo-terminal nobody reads) blocked the probe's first write for ever,
// and with it the scan: no other port was found and the scan never ended.
// Now the probe's write gives up after serial.WriteTimeout, the port is
// reported failed with a hint, and the next port loads in the same scan.
func TestHungPortDoesNotHoldTheScan(t *testing.T) {
	hung, err := emulator.OpenPTY()
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	defer hung.Close()
	fillOutput(t, hung.Path)
	_, good := startEmulator(t, 5)

	rec := &recorder{}
	defer rec.closeAll()
	w := discovery.NewWatcher(discovery.WatcherOptions{ExplicitPorts: []string{hung.Path, good}, Enumerate: noPorts, HIDEnumerate: noBoards,
		Arm: driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond}})
	done := make(chan discovery.Report, 1)
	go func() { done <- w.Scan(rec) }()
	var r discovery.Report
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		hung.Close() // hangs the port up, which ends the blocked write
		<-done
		t.Fatal("the scan was still probing a hung port after 30 s")
	}
	if p, _ := portOf(r, hung.Path); p.Outcome != discovery.Failed || !strings.Contains(p.Reason, "takes no data") || !strings.Contains(p.Hint, "power-cycle") {
		t.Errorf("hung port reported as %+v; want failed, saying the device takes no data, with a hint", p)
	}
	if p, _ := portOf(r, good); p.Outcome != discovery.Loaded || len(rec.found) != 1 {
		t.Errorf("the port after the hung one: %+v, %d found; want it loaded in the same scan", p, len(rec.found))
	}
}

// A grip's link is not guessed from silence. A wired grip asleep when its
// grip: port is opened sends no status, so its stream tells nothing: the
// open fails and is retried with backoff, and once the grip wakes it is
// opened as the wired grip it is. It was opened as a wireless grip (the
// dongle's layout, the guess for a stream that does not tell), went stale,
// and once awake was read in the wrong layout and failed again, coming
// back as a wired grip only after the next backoff.
func TestSilentGripIsNotGuessedWireless(t *testing.T) {
	e, path, err := emulator.StartPTY(emulator.Options{Family: sim.FamilyVerseGrip, Index: 7,
		Faults: emulator.Faults{GripAsleep: true}})
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	clock := newClock()
	rec := &recorder{}
	defer rec.closeAll()
	port := "grip:" + path
	w := discovery.NewWatcher(discovery.WatcherOptions{ExplicitPorts: []string{port}, Enumerate: noPorts, HIDEnumerate: noBoards,
		Now: clock.Now, Grip: driver.GripOptions{DetectTimeout: 300 * time.Millisecond, InfoTimeout: 500 * time.Millisecond}})
	r := w.Scan(rec)
	if len(rec.found) != 0 {
		t.Fatalf("the asleep grip was opened as %v %s; want the open to fail: silence tells no link", rec.found[0].Info().Link, rec.found[0].Info().UUID)
	}
	p, _ := portOf(r, path)
	if p.Outcome != discovery.Failed || p.Failures != 1 || !strings.Contains(p.Reason, "no status") || !strings.Contains(p.Hint, "wake it") {
		t.Fatalf("report for the asleep grip %+v; want failed once, saying it sent no status and how to wake it", p)
	}

	e.SetFaults(emulator.Faults{}) // the grip wakes
	clock.Add(p.RetryAt.Sub(clock.Now()))
	r = w.Scan(rec)
	if len(rec.found) != 1 {
		t.Fatalf("found %d devices once the grip woke, want 1 (report %+v)", len(rec.found), r)
	}
	if info := rec.found[0].Info(); info.Kind != hw.KindGrip || info.Link != hw.LinkWired {
		t.Errorf("the woken grip opened as %v %v, want a wired grip", info.Kind, info.Link)
	}
	var st hw.State
	hwtest.Eventually(t, 10*time.Second, "the woken grip's status", func() bool {
		if err := rec.found[0].Exchange(nil, &st); err != nil && !errors.Is(err, driver.ErrStale) {
			t.Fatalf("Exchange: %v", err)
		}
		return st.Status&hw.StatusConnected != 0
	})
}

// /ports' failures on a loaded entry says how the device's next loss
// will be backed off: a device lost within a minute of its load keeps its
// count (it flaps, and its next reopen waits the doubled time), and one
// that has stayed up a minute starts afresh, so from then on its entry
// says failures 0 (docs/hardware.md). It kept the count until the device
// was lost again: after minutes up, /ports still said failures 2.
func TestFailuresClearAfterAMinuteUp(t *testing.T) {
	_, path := startEmulator(t, 9)
	clock := newClock()
	rec := &recorder{}
	defer rec.closeAll()
	w := discovery.NewWatcher(discovery.WatcherOptions{ExplicitPorts: []string{path}, Enumerate: noPorts, HIDEnumerate: noBoards,
		Now: clock.Now, BackoffMin: time.Second, BackoffMax: time.Minute,
		Arm: driver.ArmOptions{ReplyTimeout: 500 * time.Millisecond}})
	loaded := func(step string, failures int) {
		t.Helper()
		p, _ := portOf(w.Scan(rec), path)
		if p.Outcome != discovery.Loaded || p.Failures != failures {
			t.Fatalf("%s: %+v; want loaded with failures %d", step, p, failures)
		}
		last := rec.reports[len(rec.reports)-1]
		if q, _ := portOf(last, path); q.Outcome != discovery.Loaded || q.Failures != failures {
			t.Fatalf("%s: last scan report %+v; want loaded with failures %d", step, q, failures)
		}
	}
	lose := func(step string, failures int, wait time.Duration) {
		t.Helper()
		w.Lost(path)
		if p, _ := portOf(w.Scan(rec), path); p.Outcome != discovery.Failed || p.Failures != failures || p.RetryAt.Sub(clock.Now()) != wait {
			t.Fatalf("%s: %+v; want failed %d times, retried in %v", step, p, failures, wait)
		}
		clock.Add(wait)
	}
	loaded("first load", 0)
	lose("lost at once", 1, time.Second)
	loaded("back", 1)
	clock.Add(30 * time.Second)
	lose("lost again within the minute", 2, 2*time.Second)
	loaded("back again", 2)
	clock.Add(time.Minute - time.Second)
	loaded("up just under a minute", 2)
	clock.Add(2 * time.Second)
	loaded("up over a minute", 0)
	lose("lost after a minute up", 1, time.Second)
	loaded("back after that", 1)
}
