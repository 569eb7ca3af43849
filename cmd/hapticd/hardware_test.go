package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/transport"
)

// The real serial driver, found by --hw-port, against the firmware emulator
// on a real pseudo-terminal, through the whole service: a session drives
// it, it is unplugged mid-stream and plugged back in.
func TestEmulatedArmUnplugReplug(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service against an emulated arm")
	}
	dir := t.TempDir()
	// A stable name for the port, as /dev/serial/by-id gives a real arm:
	// the pty behind it changes on every replug.
	link := filepath.Join(dir, "usb-Teensyduino_USB_Serial_test-if00")
	plug := func() *emulator.Emulator {
		e, pts, err := emulator.StartPTY(emulator.Options{Kind: hw.KindArm, Index: 7, PeriodS: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		_ = os.Remove(link)
		if err := os.Symlink(pts, link); err != nil {
			t.Fatal(err)
		}
		return e
	}
	emu := plug()
	t.Cleanup(func() { _ = emu.Close() })
	id := fmt.Sprintf("%04X", emu.ID())

	sv := startInProcess(t, "--type-names", "reference", "--port", "0", "--legacy-port", "-1", "--events-port", "0", "--sim-arms", "0", "--sim-grips", "0",
		"--state-dir", filepath.Join(dir, "state"), "--hw-port", link, "--hw-scan-period", "0")
	base := "http://" + sv.srv.Addr(transport.ListenerHTTP).String()
	events := dialWS(t, "ws://"+sv.srv.Addr(transport.ListenerEvents).String()+"/?since=0")
	nextEventAbout(t, events, "device-connected", id)

	if status, env := httpDo(t, "POST", base+"/arm3/"+id+"/config/handedness", `"left"`); status != 200 {
		t.Fatalf("POST handedness: %d %v", status, env)
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the firmware to be left-handed", func() error {
		if s := emu.Stats().Settings; !s.LeftHanded {
			return fmt.Errorf("firmware settings %+v", s)
		}
		return nil
	})

	sess := dialWS(t, "ws://"+sv.srv.Addr(transport.ListenerHTTP).String()+"/")
	z0 := dig(readJSON(t, sess), "arm3", 0, "state", "cursor_position", "z")
	send := func(msg string) map[string]any {
		t.Helper()
		if err := sess.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		return readJSON(t, sess)
	}
	send(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	hwtest.EventuallyNil(t, 5*time.Second, "the commanded force", func() error {
		f := send(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":3}}}}]}`, id))
		if f["errors"] != nil {
			return fmt.Errorf("errors: %v", f["errors"])
		}
		if lf := emu.Stats().LastForce; lf.Z < 2.9 {
			return fmt.Errorf("the emulated firmware holds %+v", lf)
		}
		if z := dig(f, "arm3", 0, "state", "cursor_position", "z"); z <= z0+0.005 {
			return fmt.Errorf("cursor z %v has not risen from %v", z, z0)
		}
		return nil
	})

	// Unplug mid-stream: the device leaves, the session's frames drop it.
	// An unplug is device-disconnected alone, not an error-level
	// device-failed before it (tourevents: every unplug was an alert).
	if err := emu.Unplug(); err != nil {
		t.Fatal(err)
	}
	if before := eventsAboutUntil(t, events, "device-disconnected", id); slices.Contains(before, "device-failed") {
		t.Errorf("the unplug was told as %v before device-disconnected, want no device-failed", before)
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the arm to leave the frames", func() error {
		if arms, _ := send(`{}`)["arm3"].([]any); len(arms) != 0 {
			return fmt.Errorf("frames still list %d arms", len(arms))
		}
		return nil
	})
	_ = emu.Close()

	// Replug: same UUID, same id, config restored, no force until a new
	// command (the old one is never re-applied).
	emu = plug()
	nextEventAbout(t, events, "device-connected", id)
	if _, env := httpDo(t, "GET", base+"/arm3/"+id+"/config/handedness", ""); env["data"] != "left" {
		t.Fatalf("handedness after replug: %v", env)
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the config re-sent to the firmware on replug", func() error {
		if s := emu.Stats().Settings; !s.LeftHanded {
			return fmt.Errorf("config not re-sent to the firmware: %+v", s)
		}
		return nil
	})
	for i := 0; i < 50; i++ {
		f := send(`{}`)
		if m := dig2(f, "arm3", 0, "state", "control_mode"); m != "idle" && m != nil {
			t.Fatalf("after replug the arm is in %v mode without a new command", m)
		}
		if lf := emu.Stats().LastForce; math.Abs(lf.X)+math.Abs(lf.Y)+math.Abs(lf.Z) > 1e-9 {
			t.Fatalf("after replug the firmware holds force %+v without a new command", lf)
		}
	}
}

func dialWS(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readJSON(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, b, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return m
}

// nextEventAbout reads events until one named name is about device id
// (each read has readJSON's deadline).
// eventsAboutUntil reads events until name about id, and returns the names
// of the other events about id before it.
func eventsAboutUntil(t *testing.T, events *websocket.Conn, name, id string) (before []string) {
	t.Helper()
	for {
		e := readJSON(t, events)
		if !strings.EqualFold(fmt.Sprint(dig2(e, "data", "device_id")), id) {
			continue
		}
		if e["name"] == name {
			return before
		}
		before = append(before, fmt.Sprint(e["name"]))
	}
}

func nextEventAbout(t *testing.T, events *websocket.Conn, name, id string) {
	t.Helper()
	for {
		e := readJSON(t, events)
		if e["name"] == name && strings.EqualFold(fmt.Sprint(dig2(e, "data", "device_id")), id) {
			return
		}
	}
}

func dig2(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func dig(v any, keys ...any) float64 {
	f, _ := dig2(v, keys...).(float64)
	return f
}

// --emulate-arms counts from --sim-index-base as the simulated devices do:
// two lab nodes on one host, given distinct bases, emulate arms with
// distinct ids and UUIDs, so the gateway does not see one arm twice.
func TestEmulatedArmsHonourSimIndexBase(t *testing.T) {
	ids := func(base string) map[uint16][16]byte {
		o, err := parseFlags([]string{"--sim-arms", "0", "--sim-grips", "0", "--emulate-arms", "2", "--sim-index-base", base, "--hw-scan-period", "0"})
		if err != nil {
			t.Fatal(err)
		}
		h, err := newHardware(o, zerolog.Nop())
		hwtest.SkipIfUnsupported(t, err)
		if err != nil {
			t.Fatal(err)
		}
		defer h.closeEmulators()
		out := map[uint16][16]byte{}
		for _, e := range h.emulators {
			out[e.ID()] = e.UUID()
		}
		return out
	}
	a, b := ids("0"), ids("10")
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("emulated ids %v and %v, want two each", a, b)
	}
	for id, uuid := range b {
		if _, dup := a[id]; dup {
			t.Errorf("id %04X is emulated by both nodes (--sim-index-base 0 and 10)", id)
		}
		for _, other := range a {
			if other == uuid {
				t.Errorf("UUID %x is emulated by both nodes", uuid)
			}
		}
	}
	if id, _ := emulator.Identity(sim.FamilyInverse3, 10); b[id] == ([16]byte{}) {
		t.Errorf("--sim-index-base 10: the first emulated arm is not index 10's (%04X): %v", id, b)
	}
}

// --sim-index-base leaves emulated arms room in the quarter of the id
// space no family uses, or is refused.
func TestEmulatedArmsPastTheirQuarterRefused(t *testing.T) {
	_, err := parseFlags([]string{"--emulate-arms", "2", "--sim-index-base", fmt.Sprint(sim.FamilyIndexSpan - 2)})
	if err == nil {
		t.Fatal("--emulate-arms past the last quarter of the id space was accepted")
	}
}

// twoArmsOneID serves two emulated arms that report one 16-bit id, shared,
// and different UUIDs, as two real arms may, on pseudo-terminals; the
// test's cleanup closes them.
func twoArmsOneID(t *testing.T) (shared uint16, emus []*emulator.Emulator, ports []string) {
	t.Helper()
	shared, _ = emulator.Identity(sim.FamilyInverse3, 7)
	for _, index := range []int{7, 8} {
		_, uuid := emulator.Identity(sim.FamilyInverse3, index)
		e, pts, err := emulator.StartPTY(emulator.Options{Kind: hw.KindArm, Index: index, ID: shared, UUID: uuid, PeriodS: 0.001})
		hwtest.SkipIfUnsupported(t, err)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		emus, ports = append(emus, e), append(ports, pts)
	}
	return shared, emus, ports
}

// Two real arms whose 16-bit ids are equal (the ids are not unique; the
// UUID is the identity) are both served: the first keeps its id, the
// second gets one derived from its UUID, and each is addressed apart. The
// second was refused ("ids must be unique") and never served.
func TestTwoArmsWithOneShortIDBothServed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the service against emulated arms")
	}
	shared, emus, ports := twoArmsOneID(t)
	sv := startInProcess(t, "--type-names", "reference", "--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--sim-arms", "0", "--sim-grips", "0",
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--hw-port", ports[0], "--hw-port", ports[1], "--hw-scan-period", "0")
	base := "http://" + sv.srv.Addr(transport.ListenerHTTP).String()
	var byUUID map[string]string // UUID to device_id
	hwtest.EventuallyNil(t, 15*time.Second, "both arms listed", func() error {
		if byUUID = armIDsByUUID(t, base); len(byUUID) != 2 {
			return fmt.Errorf("arms listed: %v", byUUID)
		}
		return nil
	})
	ids := map[string]bool{}
	for _, id := range byUUID {
		ids[id] = true
	}
	if own := fmt.Sprintf("%04X", shared); len(ids) != 2 || !ids[own] {
		t.Fatalf("device ids %v: want %s and another", byUUID, own)
	}
	// Each id reaches its own arm: set one left-handed, only its firmware
	// hears it.
	for i, e := range emus {
		uuid := e.UUID()
		id := byUUID[strings.ToUpper(hex.EncodeToString(uuid[:]))]
		if id == "" {
			t.Fatalf("emulated arm %d (UUID %x) not listed: %v", i, uuid, byUUID)
		}
		if status, env := httpDo(t, "POST", base+"/arm3/"+id+"/config/handedness", `"left"`); status != 200 {
			t.Fatalf("POST handedness to %s: %d %v", id, status, env)
		}
		hwtest.EventuallyNil(t, 5*time.Second, "the addressed arm to be left-handed", func() error {
			if !e.Stats().Settings.LeftHanded {
				return fmt.Errorf("arm %d's firmware %+v", i, e.Stats().Settings)
			}
			return nil
		})
		if other := emus[1-i]; i == 0 && other.Stats().Settings.LeftHanded {
			t.Fatalf("setting arm %s left-handed reached the other arm too", id)
		}
	}
}

// armIDsByUUID lists the arms a hapticd at base serves: device_id by UUID
// (upper-case hex, no dashes, as hex.EncodeToString spells an emulator's).
func armIDsByUUID(t *testing.T, base string) map[string]string {
	t.Helper()
	_, doc := httpDo(t, "GET", base+"/devices", "")
	arms, _ := doc["arm3"].([]any)
	byUUID := map[string]string{}
	for _, a := range arms {
		uuid, _ := hwtest.JSONPath(a, "config", "device_info", "uuid").(string)
		byUUID[strings.ToUpper(strings.ReplaceAll(uuid, "-", ""))], _ = hwtest.JSONPath(a, "device_id").(string)
	}
	return byUUID
}

// The id an arm is served on in place of its hardware's (another arm has
// its 16-bit id) is on disk before the arm is listed: killed right after,
// and restarted with only that arm plugged in, hapticd serves it on the
// same id, so it keeps its stored config. It came back on its hardware id,
// which is the other arm's, with the other arm's config.
func TestDerivedIDSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary against emulated arms")
	}
	shared, emus, ptys := twoArmsOneID(t)
	ports := map[string]string{} // pty by UUID
	for i, e := range emus {
		u := e.UUID()
		ports[strings.ToUpper(hex.EncodeToString(u[:]))] = ptys[i]
	}
	bin := buildBinary(t)
	dir := filepath.Join(t.TempDir(), "state")
	args := []string{"--state-dir", dir, "--sim-arms", "0", "--sim-grips", "0", "--hw-scan-period", "0"}
	var both []string
	for _, pts := range ports {
		both = append(both, "--hw-port", pts)
	}
	d := startProcess(t, bin, append(args, both...)...)
	var byUUID map[string]string
	hwtest.EventuallyNil(t, 15*time.Second, "both arms listed", func() error {
		if byUUID = armIDsByUUID(t, d.url("")); len(byUUID) != 2 {
			return fmt.Errorf("arms listed: %v", byUUID)
		}
		return nil
	})
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()
	own := fmt.Sprintf("%04X", shared)
	derivedUUID := ""
	for uuid, id := range byUUID {
		if id != own {
			derivedUUID = uuid
		}
	}
	if derivedUUID == "" || len(byUUID) != 2 {
		t.Fatalf("device ids %v: want %s and another", byUUID, own)
	}

	d2 := startProcess(t, bin, append(args, "--hw-port", ports[derivedUUID])...)
	hwtest.EventuallyNil(t, 15*time.Second, "the arm listed again", func() error {
		again := armIDsByUUID(t, d2.url(""))
		if len(again) != 1 {
			return fmt.Errorf("arms listed: %v", again)
		}
		if again[derivedUUID] != byUUID[derivedUUID] {
			t.Fatalf("after SIGKILL and restart, arm %s is served as %s, was %s", derivedUUID, again[derivedUUID], byUUID[derivedUUID])
		}
		return nil
	})
}

// A stop tells the events socket's watchers that each open session ended
// (session-ended, reason shutdown) before the socket closes: they were
// closed first, and a watcher never read the reason the docs list
// (tourevents).
func TestStopTellsEventsWatchersTheSessionsEnd(t *testing.T) {
	sv := startInProcess(t, "--port", "0", "--legacy-port", "0", "--events-port", "0", "--sim-arms", "1", "--sim-grips", "0",
		"--state-dir", t.TempDir(), "--hw-scan-period", "0")
	events := dialWS(t, "ws://"+sv.srv.Addr(transport.ListenerEvents).String()+"/?since=0")
	var ids []uint64
	for _, l := range []string{transport.ListenerHTTP, transport.ListenerLegacy} {
		sess := dialWS(t, "ws://"+sv.srv.Addr(l).String()+"/")
		f := readJSON(t, sess)
		id, _ := f["session_id"].(float64)
		ids = append(ids, uint64(id))
	}
	started := 0
	for started < len(ids) {
		if e := readJSON(t, events); e["name"] == "session-started" {
			started++
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- sv.stop(nil) }()
	ended := map[uint64]string{}
	for len(ended) < len(ids) {
		_ = events.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, b, err := events.ReadMessage()
		if err != nil {
			t.Fatalf("the events socket ended (%v) having told the end of sessions %v of %v", err, ended, ids)
		}
		var e struct {
			Name string
			Data struct {
				SessionID uint64 `json:"session_id"`
				Reason    string
			}
		}
		if json.Unmarshal(b, &e) == nil && e.Name == "session-ended" {
			ended[e.Data.SessionID] = e.Data.Reason
		}
	}
	for _, id := range ids {
		if ended[id] != "shutdown" {
			t.Errorf("session %d ended with reason %q, want shutdown", id, ended[id])
		}
	}
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
}
