package main

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/discovery"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/transport"
)

// TestSecondServiceOnAHeldPortLeavesItAlone: a second hapticd named the
// port of an arm the first one drives. Run as root (as here, and as a lab
// user's sudo), it opened the port anyway, woke the arm under the first
// service's loop and took its replies. Now it reports the port failed
// (busy) and retries, never sending the arm a byte, and the first service
// goes on driving the arm.
func TestSecondServiceOnAHeldPortLeavesItAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two services against an emulated arm")
	}
	emu, pts, err := emulator.StartPTY(emulator.Options{Kind: hw.KindArm, Index: 9, PeriodS: 0.001})
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	id := fmt.Sprintf("%04X", emu.ID())
	args := func(dir string) []string {
		return []string{"--port", "0", "--legacy-port", "-1", "--events-port", "0", "--sim-arms", "0", "--sim-grips", "0",
			"--state-dir", filepath.Join(dir, "state"), "--hw-port", pts, "--hw-scan-period", "0"}
	}

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
	// Two tries of the port (the first and one after the backoff).
	hwtest.EventuallyNil(t, 20*time.Second, "the second service to report the held port failed twice", func() error {
		for _, p := range second.hardware.watcher.Report().Ports {
			if p.Path == pts && p.Outcome == discovery.Loaded {
				t.Fatalf("the second service loaded the arm the first one drives: %+v", p)
			}
			if p.Path == pts && p.Outcome == discovery.Failed && p.Failures >= 2 {
				return nil
			}
		}
		return fmt.Errorf("scan report %+v", second.hardware.watcher.Report().Ports)
	})
	if n := emu.Stats().Wakeups; n != byFirst {
		t.Errorf("the arm was woken %d times, want %d (by the first service only)", n, byFirst)
	}
	if status, env := httpDo(t, "GET", "http://"+second.srv.Addr(transport.ListenerHTTP).String()+"/arm3/"+id+"/config/handedness", ""); status != 404 {
		t.Errorf("the second service serves the held arm: GET handedness = %d %v, want 404", status, env)
	}

	// The first service still drives the arm.
	sess := dialWS(t, "ws://"+first.srv.Addr(transport.ListenerHTTP).String()+"/")
	readJSON(t, sess)
	hwtest.EventuallyNil(t, 5*time.Second, "the first service's force on the arm", func() error {
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
}
