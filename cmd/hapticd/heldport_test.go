package main

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/discovery"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/transport"
)

// TestSecondServiceOnAHeldPortLeavesItAlone: a second hapticd named the
// port of an arm the first one drives. Run as root (as here, and as a lab
// user's sudo), it opened the port anyway, woke the arm under the first
// service's loop and took its replies. Now it reports the port failed
// (busy) and retries, never sending the arm a byte, and the first service
// goes on driving the arm.
func TestSecondServiceOnAHeldPortLeavesItAlone(t *testing.T) {
	emu, pts, id, args := armForTwoServices(t, 9)
	first := startInProcess(t, args(t.TempDir())...)
	events := dialWS(t, "ws://"+first.srv.Addr(transport.ListenerEvents).String()+"/?since=0")
	nextEventAbout(t, events, "device-connected", id)
	// The first service may wake the arm more than once: a wake-up not
	// answered within its 250 ms (a loaded machine) is tried again, as for
	// a freshly plugged arm (hw/driver: WakeAttempts).
	byFirst := emu.Stats().Wakeups
	if byFirst < 1 {
		t.Fatalf("the arm was woken %d times by the first service, want at least once", byFirst)
	}

	second := startInProcess(t, args(t.TempDir())...)
	wantPortRefusedTwice(t, second, pts)
	// A loaded machine can stall the first service's loop past its miss
	// budget: it then loses the arm and wakes it again on reopening (its
	// port's failures count from then on). Only otherwise are all wake-ups
	// its first ones.
	if p, _ := portReport(first, pts); p.Failures == 0 {
		if n := emu.Stats().Wakeups; n != byFirst {
			t.Errorf("the arm was woken %d times, want %d (by the first service only)", n, byFirst)
		}
	}
	if status, env := httpDo(t, "GET", "http://"+second.srv.Addr(transport.ListenerHTTP).String()+"/arm3/"+id+"/config/handedness", ""); status != 404 {
		t.Errorf("the second service serves the held arm: GET handedness = %d %v, want 404", status, env)
	}

	// The first service still drives the arm.
	driveArm(t, first, emu, id)
}

// TestSecondServiceLeavesAnArmTheFirstReconnects: the first service's arm
// went quiet for a moment (a loaded machine, a USB hiccup): its loop failed,
// it closed the port and would reopen it after its backoff. A second hapticd
// started in that window found the port unlocked (the lock lived only while
// the port was open), opened it and woke the arm, and could keep it; the
// first one's reopen then failed busy. Now a service holds the port from
// its first load until the device goes or the service stops: the second
// one reports it busy, and the first gets its arm back. Once the first
// stops, the second takes the arm.
func TestSecondServiceLeavesAnArmTheFirstReconnects(t *testing.T) {
	emu, pts, id, args := armForTwoServices(t, 10)
	first := startInProcess(t, args(t.TempDir())...)
	events := dialWS(t, "ws://"+first.srv.Addr(transport.ListenerEvents).String()+"/?since=0")
	nextEventAbout(t, events, "device-connected", id)

	// The arm answers wake-ups but no command: the first service's loop
	// fails, it closes the port, and its reopens after a backoff fail as
	// well: the port is closed most of the time.
	emu.Stall(math.MaxInt32)
	hwtest.EventuallyNil(t, 20*time.Second, "the first service to lose the arm", func() error {
		if p, _ := portReport(first, pts); p.Outcome != discovery.Failed {
			return fmt.Errorf("the first service's port: %+v", p)
		}
		return nil
	})

	second := startInProcess(t, args(t.TempDir())...)
	wantPortRefusedTwice(t, second, pts)

	// The arm answers again: the first service gets it back and drives it.
	emu.Stall(0)
	waitLoaded(t, first, pts, 60*time.Second, "the first service to reload the arm")
	driveArm(t, first, emu, id)
	if p, _ := portReport(second, pts); p.Outcome != discovery.Failed {
		t.Fatalf("the second service's port while the first drives the arm: %+v", p)
	}

	// Stopped, the first service lets the port go: the second takes it.
	if err := first.stop(nil); err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, second, pts, 90*time.Second, "the second service to load the arm the first one left")
	driveArm(t, second, emu, id)
}

// TestServiceWithSerialDisabledLetsThePortGo: a service whose setting
// system/serial_enable is false finds the arm and leaves it. It must not
// hold the port (as it holds one whose device it drives and lost): a second
// service, serial enabled, takes the arm.
func TestServiceWithSerialDisabledLetsThePortGo(t *testing.T) {
	emu, pts, id, args, _ := serviceWithSerialDisabled(t, 12)
	second := startInProcess(t, args(t.TempDir())...)
	waitLoaded(t, second, pts, 90*time.Second, "the second service to load the arm the first one refuses")
	driveArm(t, second, emu, id)
}

// TestServiceWithSerialDisabledLeavesTheArmAlone: a service whose setting
// system/serial_enable was false opened the arm's port and woke the arm, then
// refused it, at start and at every retry of its backoff (1 s, 2 s, 4 s...)
// for as long as the setting stayed off. Now it sends the arm no byte while
// the setting is off, however many scans pass, and loads it at the next scan
// once the setting is turned on.
func TestServiceWithSerialDisabledLeavesTheArmAlone(t *testing.T) {
	emu, pts, id, _, first := serviceWithSerialDisabled(t, 13)
	refusedAt := first.hardware.watcher.Report().At
	// Long enough for the old backoff's retries at 1 s and 3 s after the
	// first refusal, counted in the service's own scans.
	hwtest.EventuallyNil(t, 60*time.Second, "the first service to scan for 4 s with serial devices disabled", func() error {
		r := first.hardware.watcher.Report()
		if p, _ := portReport(first, pts); p.Outcome != discovery.Failed || !strings.Contains(p.Reason, "serial_enable") {
			t.Fatalf("the port while serial devices are disabled: %+v", p)
		}
		if d := r.At.Sub(refusedAt); d < 4*time.Second {
			return fmt.Errorf("scanned %v after the first refusal", d)
		}
		return nil
	})
	if n := emu.Stats().Wakeups; n != 0 {
		t.Errorf("the arm was woken %d times while serial devices were disabled, want 0", n)
	}

	if status, env := httpDo(t, "POST", "http://"+first.srv.Addr(transport.ListenerHTTP).String()+"/settings/system/serial_enable", `true`); status != 200 {
		t.Fatalf("POST serial_enable true: %d %v", status, env)
	}
	waitLoaded(t, first, pts, 20*time.Second, "the service to load the arm once serial devices are enabled")
	driveArm(t, first, emu, id)
}

// serviceWithSerialDisabled starts an emulated arm (as armForTwoServices)
// and a service on it whose setting system/serial_enable is false, and
// waits for the service to report the arm's port refused.
func serviceWithSerialDisabled(t *testing.T, index int) (emu *emulator.Emulator, pts, id string, args func(dir string) []string, first *service) {
	t.Helper()
	emu, pts, id, args = armForTwoServices(t, index)
	dir := t.TempDir()
	// The setting is stored in the state directory: set it on a service
	// that watches no port, then start the first one on that directory.
	setup := startInProcess(t, slices.DeleteFunc(args(dir), func(a string) bool { return a == "--hw-port" || a == pts })...)
	if status, env := httpDo(t, "POST", "http://"+setup.srv.Addr(transport.ListenerHTTP).String()+"/settings/system/serial_enable", `false`); status != 200 {
		t.Fatalf("POST serial_enable false: %d %v", status, env)
	}
	if err := setup.stop(nil); err != nil {
		t.Fatal(err)
	}

	first = startInProcess(t, args(dir)...)
	hwtest.EventuallyNil(t, 20*time.Second, "the first service to refuse the arm", func() error {
		if p, _ := portReport(first, pts); p.Outcome != discovery.Failed || !strings.Contains(p.Reason, "serial_enable") {
			return fmt.Errorf("the first service's port: %+v", p)
		}
		return nil
	})
	return emu, pts, id, args, first
}

// armForTwoServices starts an emulated arm on a pseudo-terminal and
// returns it, its port, its id, and the flags of a service that drives
// only that port, given a directory of its own.
func armForTwoServices(t *testing.T, index int) (emu *emulator.Emulator, pts, id string, args func(dir string) []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs two services against an emulated arm")
	}
	emu, pts, err := emulator.StartPTY(emulator.Options{Kind: hw.KindArm, Index: index, PeriodS: 0.001})
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	args = func(dir string) []string {
		return []string{"--port", "0", "--legacy-port", "-1", "--events-port", "0", "--sim-arms", "0", "--sim-grips", "0",
			"--state-dir", filepath.Join(dir, "state"), "--hw-port", pts, "--hw-scan-period", "0"}
	}
	return emu, pts, fmt.Sprintf("%04X", emu.ID()), args
}

// waitLoaded waits up to within for sv to report the port at path loaded;
// what names the wait in the failure.
func waitLoaded(t *testing.T, sv *service, path string, within time.Duration, what string) {
	t.Helper()
	hwtest.EventuallyNil(t, within, what, func() error {
		if p, _ := portReport(sv, path); p.Outcome != discovery.Loaded {
			return fmt.Errorf("the port: %+v", p)
		}
		return nil
	})
}

// portReport is sv's latest scan outcome for the port at path.
func portReport(sv *service, path string) (discovery.PortReport, bool) {
	for _, p := range sv.hardware.watcher.Report().Ports {
		if p.Path == path {
			return p, true
		}
	}
	return discovery.PortReport{}, false
}

// wantPortRefusedTwice waits for sv to have tried the port at path twice
// (at start and after its backoff) and found it busy each time, before
// sending a byte; any other outcome fails t at once.
func wantPortRefusedTwice(t *testing.T, sv *service, path string) {
	t.Helper()
	hwtest.EventuallyNil(t, 20*time.Second, "the second service to find the held port busy twice", func() error {
		p, _ := portReport(sv, path)
		if p.Outcome == discovery.Loaded || p.Outcome == discovery.Failed && !strings.Contains(p.Reason, serial.ErrBusy.Error()) {
			t.Fatalf("the second service opened the port of the arm the first one holds: %+v", p)
		}
		if p.Outcome == discovery.Failed && p.Failures >= 2 {
			return nil
		}
		return fmt.Errorf("the second service's port: %+v", p)
	})
}

// driveArm checks that sv drives the arm id: a force a session commands
// reaches the emulated firmware.
func driveArm(t *testing.T, sv *service, emu *emulator.Emulator, id string) {
	t.Helper()
	sess := dialWS(t, "ws://"+sv.srv.Addr(transport.ListenerHTTP).String()+"/")
	readJSON(t, sess)
	hwtest.EventuallyNil(t, 10*time.Second, "the service's force on the arm", func() error {
		if err := sess.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}}]}`, id))); err != nil {
			return err
		}
		if f := readJSON(t, sess); f["errors"] != nil {
			return fmt.Errorf("errors: %v", f["errors"])
		}
		if lf := emu.Stats().LastForce; lf.Z < 1.9 {
			return fmt.Errorf("the emulated firmware holds %+v", lf)
		}
		return nil
	})
	_ = sess.Close()
}
