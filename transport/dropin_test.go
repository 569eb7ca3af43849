package transport

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
)

// Drop-in tests: the message sequences of the public clients that labs run
// against the vendor's service (CLIENTS.md section 9), replayed against a
// real listener started as `hapticd` starts by default (product names).
// Each sequence is written here from the clients' documented behaviour; no
// client code is copied. Every client must find its devices under the names
// it uses and see no errors and no warnings for anything it sends.

// dropIn is one client's connection.
type dropIn struct {
	t  *testing.T
	ts *testService
	c  *wsClient
}

func startDropIn(t *testing.T, cfg serviceConfig) *dropIn {
	t.Helper()
	cfg.haplyNames = true // hapticd's default
	ts := startService(t, cfg)
	return &dropIn{t: t, ts: ts, c: ts.dial(t, ts.wsURL())}
}

// clean fails when a frame carries errors or warnings, but for
// stale_command alone: the service stood still longer than the lease
// (100 ms by default) between the message's arrival and its application,
// which a loaded machine does, and the frame rightly says its commands
// were not applied (docs/protocol.md); a streaming client's next message
// takes the arm again, and a lock-step one sends again (freshRoundTrip).
func clean(t testing.TB, f map[string]any, after string) {
	t.Helper()
	if f["errors"] != nil || f["warnings"] != nil && !onlyStale(f) {
		t.Fatalf("after %s: errors %v, warnings %v", after, f["errors"], f["warnings"])
	}
}

// onlyStale says whether f's warnings are all stale_command (and there is
// one at least).
func onlyStale(f map[string]any) bool {
	ws, _ := f["warnings"].([]any)
	for _, w := range ws {
		if path(w, "code") != "stale_command" {
			return false
		}
	}
	return len(ws) > 0
}

// freshRoundTrip is c.roundTrip(msg), sent again while the answer's only
// warnings are stale_command: the service stood still longer than the
// lease between the message's arrival and its application (a loaded
// machine's stall; the default lease is 100 ms), so its commands were
// rightly not applied, and a client sends them again (docs/protocol.md).
// Any other answer is the frame the caller judges; stale_command still
// after 10 s of sending fails the test.
func freshRoundTrip(c *wsClient, msg string) map[string]any {
	c.t.Helper()
	for deadline, tries := time.Now().Add(10*time.Second), 1; ; tries++ {
		f := c.roundTrip(msg)
		if f["errors"] != nil || !onlyStale(f) {
			return f
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s: still answered stale_command after 10 s of sending it again: %v", msg, f["warnings"])
		}
		if tries == 1 {
			c.t.Logf("sending again a message answered stale_command (the service stalled past the lease): %v", f["warnings"])
		}
	}
}

// tick sends msg (a text frame) and returns its frame, which must be clean.
func (d *dropIn) tick(msg string) map[string]any {
	d.t.Helper()
	f := freshRoundTrip(d.c, msg)
	clean(d.t, f, msg)
	return f
}

// raw reads the next frame's bytes as a client with one fixed receive
// buffer would.
func (d *dropIn) raw() []byte {
	d.t.Helper()
	_ = d.c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := d.c.conn.ReadMessage()
	if err != nil {
		d.t.Fatalf("read frame: %v", err)
	}
	return b
}

// firstID is the device id of element 0 under key, which must be there.
func firstID(t testing.TB, f map[string]any, key string) string {
	t.Helper()
	id, _ := path(f, key, 0, "device_id").(string)
	if id == "" {
		t.Fatalf("no device under %q: %v", key, f)
	}
	return id
}

// gripReports checks that grip 0 under key reports an orientation and its
// buttons as these clients read them.
func gripReports(t testing.TB, f map[string]any, key string) {
	t.Helper()
	for _, c := range []string{"w", "x", "y", "z"} {
		if _, ok := path(f, key, 0, "state", "orientation", c).(float64); !ok {
			t.Fatalf("%s[0].state.orientation.%s missing: %v", key, c, path(f, key, 0))
		}
	}
	for _, b := range []string{"a", "b", "c"} {
		if _, ok := path(f, key, 0, "state", "buttons", b).(bool); !ok {
			t.Fatalf("%s[0].state.buttons.%s missing: %v", key, b, path(f, key, 0))
		}
	}
}

func cursor(f map[string]any, key string) [3]float64 {
	return vec(path(f, key, 0, "state", "cursor_position"))
}

// forceMoves sends msg (an upward force, as the client spells it) until the
// arm under key has risen, through frames read by next.
func forceMoves(t *testing.T, key string, z0 float64, send func() map[string]any) {
	t.Helper()
	hwtest.EventuallyNil(t, 5*time.Second, "the cursor to rise", func() error {
		f := send()
		if z := cursor(f, key)[2]; z <= z0+0.005 {
			return fmt.Errorf("cursor z %v has not risen from %v (mode %v)", z, z0, path(f, key, 0, "state", "control_mode"))
		}
		return nil
	})
}

// reaches sends msg (a position target) until the arm under key is there.
func reaches(t *testing.T, key string, target [3]float64, send func() map[string]any) {
	t.Helper()
	hwtest.EventuallyNil(t, 10*time.Second, "the cursor to reach the target", func() error {
		f := send()
		p := cursor(f, key)
		if d := math.Hypot(math.Hypot(p[0]-target[0], p[1]-target[1]), p[2]-target[2]); d > 0.005 {
			return fmt.Errorf("cursor %v is %.4f m from %v", p, d, target)
		}
		if got := vec(path(f, key, 0, "state", "current_cursor_position")); math.Abs(got[0]-target[0]) > 1e-6 || math.Abs(got[2]-target[2]) > 1e-6 {
			return fmt.Errorf("current_cursor_position %v, want the target %v", got, target)
		}
		return nil
	})
}

// Isaac Lab's HaplyDevice (se3_haply.py): ids from the first frame, both
// an Inverse3 and a wireless grip required, then after every frame one
// force with "values".
func TestDropInIsaacLab(t *testing.T) {
	d := startDropIn(t, serviceConfig{arms: 1, grips: 1})
	inv := d.c.expect()
	arm, _ := firstID(t, inv, "inverse3"), firstID(t, inv, "wireless_verse_grip")
	gripReports(t, inv, "wireless_verse_grip")
	z0 := cursor(inv, "inverse3")[2]
	forceMoves(t, "inverse3", z0, func() map[string]any {
		f := d.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"values":{"x":0.0,"y":0.0,"z":2.0}}}}]}`, arm))
		gripReports(t, f, "wireless_verse_grip")
		return f
	})
}

// The ROS 2 haply_driver_node asks for the full state before it reads
// anything, logs config.port, the arm's status and the grip's battery and
// status, and sends a "values" force after each frame.
func TestDropInROS2DriverNode(t *testing.T) {
	d := startDropIn(t, serviceConfig{arms: 1, grips: 1})
	d.c.send(`{"session":{"force_render_full_state":{}}}`)
	inv := d.c.expect()
	full := d.c.expect()
	clean(t, full, "force_render_full_state")
	arm := firstID(t, inv, "inverse3")
	firstID(t, full, "wireless_verse_grip")
	if _, ok := path(full, "inverse3", 0, "config", "port").(string); !ok {
		t.Fatalf("config.port missing: %v", path(full, "inverse3", 0, "config"))
	}
	for _, k := range []string{"calibrated", "in_use", "power_supply", "ready", "started"} {
		if _, ok := path(full, "inverse3", 0, "status", k).(bool); !ok {
			t.Fatalf("status.%s missing: %v", k, path(full, "inverse3", 0, "status"))
		}
	}
	if _, ok := path(full, "wireless_verse_grip", 0, "state", "battery_level").(float64); !ok {
		t.Fatalf("battery_level missing: %v", path(full, "wireless_verse_grip", 0))
	}
	for _, k := range []string{"connected", "awake", "ready"} {
		if _, ok := path(full, "wireless_verse_grip", 0, "status", k).(bool); !ok {
			t.Fatalf("grip status.%s missing", k)
		}
	}
	// The variants ask for one type's config.
	for key, other := range map[string]string{"inverse3": "wireless_verse_grip", "wireless_verse_grip": "inverse3"} {
		f := d.tick(`{"session":{"force_render_full_state":{"device_types":["` + key + `"]}}}`)
		if path(f, key, 0, "config") == nil || path(f, other, 0, "config") != nil {
			t.Fatalf("device_types [%s]: config on %s %v, on %s %v", key, key, path(f, key, 0, "config") != nil, other, path(f, other, 0, "config") != nil)
		}
	}
	z0 := cursor(inv, "inverse3")[2]
	forceMoves(t, "inverse3", z0, func() map[string]any {
		return d.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"values":{"x":0.0,"y":0.0,"z":2.5}}}}]}`, arm))
	})
}

// The ROS 2 handle_driver_node reads the wireless grip alone and keeps it
// awake with keep_alive in every message.
func TestDropInROS2HandleNode(t *testing.T) {
	d := startDropIn(t, serviceConfig{grips: 1})
	d.c.send(`{"session":{"force_render_full_state":{}}}`)
	inv := d.c.expect()
	clean(t, d.c.expect(), "force_render_full_state")
	grip := firstID(t, inv, "wireless_verse_grip")
	for _, msg := range []string{
		`{"wireless_verse_grip":[{"device_id":%q,"commands":{"keep_alive":{}}}]}`,
		`{"wireless_verse_grip":[{"device_id":%q,"commands":{"keep_alive":true,"probe_orientation":{}}}]}`,
		`{"keep_alive":{},"wireless_verse_grip":[{"device_id":%q,"commands":{"probe_orientation":{}}}]}`,
	} {
		for range 5 {
			gripReports(t, d.tick(fmt.Sprintf(msg, grip)), "wireless_verse_grip")
		}
	}
	clean(t, d.tick(`{"session":{"keep_alive":{}}}`), "session.keep_alive")
}

// NVIDIA IsaacTeleop's Haply plugin reads the arm's handedness and the
// grip's orientation, and answers every frame with a zero "values" force.
func TestDropInIsaacTeleop(t *testing.T) {
	d := startDropIn(t, serviceConfig{arms: 1, grips: 1})
	inv := d.c.expect()
	arm := firstID(t, inv, "inverse3")
	firstID(t, inv, "wireless_verse_grip")
	if h, _ := path(inv, "inverse3", 0, "config", "handedness").(string); h == "" {
		t.Fatalf("config.handedness missing: %v", path(inv, "inverse3", 0, "config"))
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the arm in force mode", func() error {
		f := d.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"values":{"x":0,"y":0,"z":0}}}}]}`, arm))
		gripReports(t, f, "wireless_verse_grip")
		if path(f, "inverse3", 0, "state", "cursor_velocity") == nil {
			t.Fatal("cursor_velocity missing")
		}
		if m := path(f, "inverse3", 0, "state", "control_mode"); m != "force" {
			return fmt.Errorf("control_mode %v while the plugin sends forces", m)
		}
		return nil
	})
}

// JHU sawHaplyService sends one combined message per cycle: the arm's
// command with set_gravity_compensation, and the grip's probe under every
// grip name it knows; it drains frames, so it may run ahead of them; on
// shutdown it turns gravity compensation off.
func TestDropInSawHaplyService(t *testing.T) {
	d := startDropIn(t, serviceConfig{arms: 1, grips: 1})
	d.c.send(`{"session":{"force_render_full_state":{}}}`)
	inv := d.c.expect()
	full := d.c.expect()
	clean(t, full, "force_render_full_state")
	arm, grip := firstID(t, full, "inverse3"), firstID(t, full, "wireless_verse_grip")
	if path(full, "inverse3", 0, "config", "device_info", "device_type") != 4.0 {
		t.Fatalf("device_info.device_type %v, want 4", path(full, "inverse3", 0, "config", "device_info"))
	}
	for _, k := range []string{"major_version", "minor_version"} {
		if _, ok := path(full, "inverse3", 0, "config", "device_info", k).(float64); !ok {
			t.Fatalf("device_info.%s missing", k)
		}
	}
	// It waits for a calibrated arm and an awake grip.
	hwtest.EventuallyNil(t, 5*time.Second, "a calibrated arm and an awake grip", func() error {
		f := d.tick(`{}`)
		if c, a := path(f, "inverse3", 0, "status", "calibrated"), path(f, "wireless_verse_grip", 0, "status", "awake"); c != true || a != true {
			return fmt.Errorf("calibrated %v, grip awake %v", c, a)
		}
		return nil
	})
	grips := fmt.Sprintf(`"verse_grip":[{"device_id":%[1]q,"commands":{"probe_orientation":{}}}],"custom_verse_grip":[{"device_id":%[1]q,"commands":{"probe_orientation":{}}}],"wireless_verse_grip":[{"device_id":%[1]q,"commands":{"probe_orientation":{}}}]`, grip)
	cycle := func(command string, gravity bool) string {
		return fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{%s,"set_gravity_compensation":%v}}],%s}`, arm, command, gravity, grips)
	}
	z0 := cursor(inv, "inverse3")[2]
	forceMoves(t, "inverse3", z0, func() map[string]any {
		f := d.tick(cycle(`"set_cursor_force":{"values":{"x":0,"y":0,"z":2}}`, true))
		gripReports(t, f, "wireless_verse_grip")
		return f
	})
	target := [3]float64{0.01, 0.14, 0.11}
	reaches(t, "inverse3", target, func() map[string]any {
		return d.tick(cycle(fmt.Sprintf(`"set_cursor_position":{"values":{"x":%g,"y":%g,"z":%g}}`, target[0], target[1], target[2]), true))
	})
	// Idle cycles (a probe, without set_gravity_compensation), five sent
	// before any frame is read: the client drains frames.
	for range 5 {
		d.c.send(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"probe_position":{}}}],%s}`, arm, grips))
	}
	for range 5 {
		clean(t, d.c.expect(), "probe_position")
	}
	clean(t, freshRoundTrip(d.c, cycle(`"set_cursor_force":{"values":{"x":0,"y":0,"z":0}}`, false)), "shutdown")
	if got := d.ts.do("GET", d.ts.base+"/inverse3/"+arm+"/config/gravity_compensation", ""); !jsonEqual(t, path(got.env, "data", "enabled"), "false") {
		t.Fatalf("gravity compensation after the shutdown message: %v", got)
	}
}

// Senmag's Unity client reads each message with one 8,192-byte receive and
// sends forces whenever the application asks, not one per frame.
func TestDropInSenmagUnity(t *testing.T) {
	d := startDropIn(t, serviceConfig{arms: 1, grips: 1})
	var inv map[string]any
	first := d.raw()
	if len(first) > 8192 {
		t.Fatalf("inventory is %d bytes; the client reads 8192", len(first))
	}
	if err := json.Unmarshal(first, &inv); err != nil {
		t.Fatal(err)
	}
	arm := firstID(t, inv, "inverse3")
	gripReports(t, inv, "wireless_verse_grip")
	z0 := cursor(inv, "inverse3")[2]
	forceMoves(t, "inverse3", z0, func() map[string]any {
		const burst = 3
		for range burst {
			d.c.send(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"values":{"x":0,"y":0,"z":2}}}}]}`, arm))
		}
		var f map[string]any
		for range burst {
			b := d.raw()
			if len(b) > 8192 {
				t.Fatalf("frame is %d bytes; the client reads 8192", len(b))
			}
			f = nil
			if err := json.Unmarshal(b, &f); err != nil {
				t.Fatal(err)
			}
			clean(t, f, "force")
			gripReports(t, f, "wireless_verse_grip")
		}
		return f
	})
}

// The xArm teleoperation script looks for the grip under any of its names
// in the first frames, sends once an empty commands object, then sends
// "vector" forces at 250 Hz from a task that does not wait for frames while
// another task reads them.
func TestDropInXArmScript(t *testing.T) {
	d := startDropIn(t, serviceConfig{arms: 1, grips: 1})
	inv := d.c.expect()
	arm := firstID(t, inv, "inverse3")
	var gripKey string
	for _, k := range []string{"versagrip", "handle", "wrist_joint", "verse_grip", "wireless_verse_grip", "custom_verse_grip"} {
		if list, _ := inv[k].([]any); len(list) > 0 {
			gripKey = k
			break
		}
	}
	if gripKey != "wireless_verse_grip" {
		t.Fatalf("grip found under %q", gripKey)
	}
	clean(t, freshRoundTrip(d.c, fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{}}]}`, arm)), "empty commands")

	const n = 250 // one second of the controller task
	var wg sync.WaitGroup
	wg.Add(1)
	writeErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(4 * time.Millisecond)
		defer tick.Stop()
		for range n {
			<-tick.C
			msg := fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0.0,"y":0.0,"z":2.0}}}}]}`, arm)
			if err := d.c.conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	z0 := cursor(inv, "inverse3")[2]
	risen := false
	for range n {
		f := d.c.expect()
		clean(t, f, "vector force")
		if _, ok := path(f, gripKey, 0, "state", "hall").(float64); !ok {
			t.Fatalf("grip hall missing: %v", path(f, gripKey, 0))
		}
		gripReports(t, f, gripKey)
		risen = risen || cursor(f, "inverse3")[2] > z0+0.005
	}
	wg.Wait()
	select {
	case err := <-writeErr:
		t.Fatal(err)
	default:
	}
	if !risen {
		t.Fatalf("a second of 2 N upwards did not lift the arm from z %v", z0)
	}
}

// The 3.1-era Python sample (websockets + orjson, so binary frames) is
// strictly lock-step and exits without an Inverse3; it reads handedness
// from the first frame only.
func TestDropInPython31Sample(t *testing.T) {
	d := startDropIn(t, serviceConfig{arms: 1, grips: 1})
	inv := d.c.expect()
	arm := firstID(t, inv, "inverse3")
	if h, _ := path(inv, "inverse3", 0, "config", "handedness").(string); h != "right" {
		t.Fatalf("handedness %v", path(inv, "inverse3", 0, "config", "handedness"))
	}
	gripReports(t, inv, "wireless_verse_grip")
	binary := func(msg string) map[string]any {
		t.Helper()
		if err := d.c.conn.WriteMessage(websocket.BinaryMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		f := d.c.expect()
		clean(t, f, msg)
		return f
	}
	for range 20 {
		binary(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"values":{"x":0,"y":0,"z":0}}}}]}`, arm))
	}
	z0 := cursor(inv, "inverse3")[2]
	forceMoves(t, "inverse3", z0, func() map[string]any {
		return binary(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"values":{"x":0.0,"y":3.0,"z":3.0}}}}]}`, arm))
	})
}

// The vendor's 3.5 tutorials, T00 to T09 (those the documentation shows).
func TestDropInTutorials(t *testing.T) {
	profile := func(name string) string {
		return `"session":{"configure":{"profile":{"name":"` + name + `"}}}`
	}
	t.Run("T00 device list", func(t *testing.T) {
		d := startDropIn(t, serviceConfig{arms: 1, grips: 1, wiredGrips: 1})
		inv := d.c.expect()
		clean(t, freshRoundTrip(d.c, `{`+profile("co.haply.inverse.tutorials:print-inverse3")+`}`), "profile")
		for _, url := range []string{"/devices", "/devices?session=:-1", "/devices?session=co.haply.inverse.tutorials:print-inverse3"} {
			r := d.ts.do("GET", d.ts.base+url, "")
			if r.status != 200 {
				t.Fatalf("GET %s: %v", url, r)
			}
			want := map[string]string{"inverse3": d.ts.armIDs[0], "verse_grip": d.ts.wiredIDs[0], "wireless_verse_grip": d.ts.gripIDs[0]}
			for key, id := range want {
				if got := firstID(t, r.env, key); got != id {
					t.Fatalf("GET %s: %s[0] is %s, want %s", url, key, got, id)
				}
				if list, _ := r.env[key].([]any); len(list) != 1 {
					t.Fatalf("GET %s: %d devices under %s, want each device once", url, len(list), key)
				}
			}
		}
		if path(inv, "verse_grip", 0, "config", "type") != "verse_grip" || path(inv, "wireless_verse_grip", 0, "config", "type") != "wireless_verse_grip" {
			t.Fatalf("config.type of the grips: %v, %v", path(inv, "verse_grip", 0, "config", "type"), path(inv, "wireless_verse_grip", 0, "config", "type"))
		}
	})
	t.Run("T01 print Inverse3", func(t *testing.T) {
		d := startDropIn(t, serviceConfig{arms: 1})
		arm := firstID(t, d.c.expect(), "inverse3")
		zero := fmt.Sprintf(`"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]`, arm)
		d.tick(`{` + profile("co.haply.inverse.tutorials:print-inverse3") + `,` + zero + `}`)
		for range 20 {
			f := d.tick(`{` + zero + `}`)
			for _, k := range []string{"cursor_position", "cursor_velocity", "current_cursor_force"} {
				if path(f, "inverse3", 0, "state", k, "x") == nil {
					t.Fatalf("state.%s missing", k)
				}
			}
			if tr, ok := path(f, "inverse3", 0, "state", "transform").(map[string]any); !ok || len(tr) != 0 {
				t.Fatalf("state.transform %v, want {} (identity parts omitted)", path(f, "inverse3", 0, "state", "transform"))
			}
		}
	})
	t.Run("T02 print VerseGrip", func(t *testing.T) {
		// A grip in a hand (hapticd's default for simulated grips): T02
		// prints it moving.
		d := startDropIn(t, serviceConfig{wiredGrips: 1, motion: sim.MotionCircle})
		grip := firstID(t, d.c.expect(), "verse_grip")
		probe := fmt.Sprintf(`"verse_grip":[{"device_id":%q,"commands":{"probe_orientation":{}}}]`, grip)
		gripReports(t, d.tick(`{`+profile("co.haply.inverse.tutorials:print-verse-grip")+`,`+probe+`}`), "verse_grip")
		orientations, buttons := map[string]bool{}, map[bool]bool{}
		hwtest.EventuallyNil(t, 20*time.Second, "the grip to turn and press its buttons", func() error {
			f := d.tick(`{` + probe + `}`)
			gripReports(t, f, "verse_grip")
			if _, ok := path(f, "verse_grip", 0, "state", "hall").(float64); !ok {
				t.Fatal("hall missing")
			}
			b, ok := path(f, "verse_grip", 0, "state", "button").(bool)
			if !ok {
				t.Fatal("the wired grip's button missing")
			}
			if code, ok := path(f, "verse_grip", 0, "status", "error").(float64); !ok || code != 0 {
				t.Fatalf("the wired grip's status.error: %v", path(f, "verse_grip", 0, "status"))
			}
			orientations[fmt.Sprint(path(f, "verse_grip", 0, "state", "orientation"))] = true
			buttons[b] = true
			if len(orientations) < 10 || len(buttons) < 2 {
				return fmt.Errorf("%d orientations and button states %v so far: the grip does not move", len(orientations), buttons)
			}
			return nil
		})
	})
	t.Run("T05 position control", func(t *testing.T) {
		d := startDropIn(t, serviceConfig{arms: 1})
		inv := d.c.expect()
		arm := firstID(t, inv, "inverse3")
		if path(inv, "inverse3", 0, "config", "type") != "inverse3" {
			t.Fatalf("config.type %v", path(inv, "inverse3", 0, "config", "type"))
		}
		// The tutorial waits for status.calibrated before it commands.
		hwtest.EventuallyNil(t, 5*time.Second, "a calibrated arm", func() error {
			if c := path(d.tick(`{}`), "inverse3", 0, "status", "calibrated"); c != true {
				return fmt.Errorf("calibrated %v", c)
			}
			return nil
		})
		d.tick(fmt.Sprintf(`{%s,"inverse3":[{"device_id":%q,"configure":{"preset":{"preset":"arm_front_centered"}}}]}`, profile("co.haply.inverse.tutorials:position-control"), arm))
		target := [3]float64{0.02, -0.01, 0.03} // inside the tutorial's 0.08 m sphere
		reaches(t, "inverse3", target, func() map[string]any {
			return d.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_position":{"position":{"x":%g,"y":%g,"z":%g}}}}]}`, arm, target[0], target[1], target[2]))
		})
	})
	t.Run("T06 combined", func(t *testing.T) {
		d := startDropIn(t, serviceConfig{arms: 1, grips: 1})
		if r := d.ts.do("GET", d.ts.base+"/devices", ""); r.status != 200 {
			t.Fatalf("GET /devices: %v", r)
		}
		inv := d.c.expect()
		arm, grip := firstID(t, inv, "inverse3"), firstID(t, inv, "wireless_verse_grip")
		d.tick(fmt.Sprintf(`{%s,"inverse3":[{"device_id":%q,"configure":{"preset":{"preset":"arm_front_centered"}}}]}`, profile("co.haply.inverse.tutorials:combined"), arm))
		target := [3]float64{-0.02, 0.02, 0.01}
		reaches(t, "inverse3", target, func() map[string]any {
			f := d.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_position":{"position":{"x":%g,"y":%g,"z":%g}}}}],"wireless_verse_grip":[{"device_id":%q,"commands":{"probe_orientation":{}}}]}`,
				arm, target[0], target[1], target[2], grip))
			gripReports(t, f, "wireless_verse_grip")
			return f
		})
	})
	t.Run("T08 remote session configurator", func(t *testing.T) {
		testRemoteConfigurator(t)
	})
	// The transform flat, as the tutorial's text shows it, and wrapped in
	// "transform", as the vendor's Rust client (SetTransformCmd carrying a
	// TransformPatch) may send it.
	t.Run("T09 workspace navigator", func(t *testing.T) {
		testWorkspaceNavigator(t, func(tr string) string { return tr })
	})
	t.Run("T09 workspace navigator, transform wrapped", func(t *testing.T) {
		testWorkspaceNavigator(t, func(tr string) string { return `{"transform":` + tr + `}` })
	})
}

// T08: another program's session (the Hub's demo orb) configured over HTTP
// through the family selectors, as the vendor's remote configurator does.
func testRemoteConfigurator(t *testing.T) {
	const orb = "co.haply.hub::demo-orb"
	d := startDropIn(t, serviceConfig{arms: 1, grips: 2})
	d.c.expect()
	d.tick(`{"session":{"configure":{"profile":{"name":"` + orb + `"}}}}`)
	if r := d.ts.do("GET", d.ts.base+"/sessions", ""); path(r.env, "data", "sessions", 0, "profile", "name") != orb {
		t.Fatalf("GET /sessions: %v", r)
	}
	base := d.ts.base
	for _, sel := range []string{orb, orb + ":0", "co.haply.hub::*", ":-1"} {
		q := "?session=" + sel
		if r := d.ts.do("GET", base+"/*inverse/0/config/basis"+q, ""); r.status != 200 || !jsonEqual(t, r.data(), `{"permutation":"XYZ"}`) {
			t.Fatalf("GET basis with session=%s: %v", sel, r)
		}
	}
	q := "?session=" + orb
	steps := []struct {
		method, url, body string
		want              string // the answer's data
	}{
		{"POST", "/*inverse/0/config/basis" + q, `{"permutation":"XZY"}`, `{"permutation":"XZY"}`},
		{"GET", "/*inverse/" + d.ts.armIDs[0] + "/config/basis" + q, "", `{"permutation":"XZY"}`},
		{"POST", "/*inverse/*/config/preset" + q, `{"preset":"arm_front_centered"}`, `{"preset":"arm_front_centered"}`},
		{"POST", "/*inverse/0/config/mount" + q, `{"transform":{"position":{"x":0.01,"y":0,"z":0}}}`, `{"transform":{"position":{"x":0.01,"y":0,"z":0},"rotation":{"w":1,"x":0,"y":0,"z":0},"scale":{"x":1,"y":1,"z":1}}}`},
		{"GET", "/*inverse/0/config/preset" + q, "", `{"preset":"custom"}`},
		{"DELETE", "/*inverse/0/config/mount" + q, "", `{"transform":{"position":{"x":0,"y":0,"z":0},"rotation":{"w":1,"x":0,"y":0,"z":0},"scale":{"x":1,"y":1,"z":1}}}`},
		{"POST", "/*verse_grip/*/config/preset" + q, `{"preset":"led_front"}`, `{"preset":"led_front"}`},
		{"GET", "/*verse_grip/1/config/preset" + q, "", `{"preset":"led_front"}`},
		{"DELETE", "/*verse_grip/*/config/preset", "", `{"preset":"defaults"}`},
	}
	for _, s := range steps {
		r := d.ts.do(s.method, base+s.url, s.body)
		if r.status != 200 || !jsonEqual(t, r.data(), s.want) {
			t.Fatalf("%s %s: %v, want data %s", s.method, s.url, r, s.want)
		}
	}
	if r := d.ts.do("POST", base+"/*verse_grip/*/config/basis"+q, `{"permutation":"ZXY"}`); len(r.env["applied_to"].([]any)) != 2 || path(r.env, "applied_to", 0, "device_type") != "wireless_verse_grip" {
		t.Fatalf("POST to every grip: %v", r)
	}
	f := d.tick(`{"session":{"force_render_full_state":{}}}`)
	if path(f, "inverse3", 0, "config", "basis", "permutation") != "XZY" || path(f, "wireless_verse_grip", 1, "config", "basis", "permutation") != "ZXY" {
		t.Fatalf("the session does not see the remote changes: %v", f)
	}
	for _, bad := range []struct {
		method, url string
		status      int
	}{
		{"GET", "/*verse_grip/*/config/basis" + q, 400}, // a GET needs one device
		{"GET", "/*inverse/0/config/basis?session=co.haply.hub::other", 404},
		{"GET", "/*gadget/0/config/basis" + q, 404},
		{"PUT", "/*inverse/0/config/basis" + q, 405},
	} {
		if r := d.ts.do(bad.method, base+bad.url, ""); r.status != bad.status {
			t.Fatalf("%s %s: %v, want %d", bad.method, bad.url, r, bad.status)
		}
	}
}

// T09: streams set_transform every tick; the workspace stacks on the mount,
// a position-only update keeps the rotation and scale, and state.transform
// shows what is not the identity.
func testWorkspaceNavigator(t *testing.T, shape func(transform string) string) {
	d := startDropIn(t, serviceConfig{arms: 1})
	inv := d.c.expect()
	arm := firstID(t, inv, "inverse3")
	if r := d.ts.do("GET", d.ts.base+"/sessions", ""); r.status != 200 {
		t.Fatal(r)
	}
	d.tick(`{"session":{"configure":{"profile":{"name":"co.haply.inverse.tutorials:navigator"}}}}`)
	mounted := d.ts.do("POST", d.ts.base+"/*inverse/0/config/mount?session=co.haply.inverse.tutorials:navigator", `{"transform":{"position":{"x":0.1,"y":0,"z":0}}}`)
	if mounted.status != 200 {
		t.Fatal(mounted)
	}
	send := func(tr string) map[string]any {
		return d.tick(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_transform":%s,"probe_position":{}}}]}`, arm, shape(tr)))
	}
	before := cursor(d.tick(`{}`), "inverse3")
	// Scale 2 about the mount's output, turned 90° about Z, moved up.
	f := send(`{"position":{"x":0,"y":0,"z":0.5},"rotation":{"w":0.7071067811865476,"x":0,"y":0,"z":0.7071067811865476},"scale":{"x":2,"y":2,"z":2}}`)
	want := [3]float64{-2 * before[1], 2 * before[0], 2*before[2] + 0.5}
	if got := cursor(f, "inverse3"); !near3(got, want, 0.002) {
		t.Fatalf("cursor %v under the workspace, want %v (from %v)", got, want, before)
	}
	// Position-only updates, as T09 streams them, keep rotation and scale.
	for i := range 10 {
		f = send(fmt.Sprintf(`{"position":{"x":%g,"y":0,"z":0.5}}`, 0.01*float64(i)))
	}
	tr := path(f, "inverse3", 0, "state", "transform")
	if !jsonEqual(t, path(tr, "position"), `{"x":0.09,"y":0,"z":0.5}`) || path(tr, "rotation", "z") == nil || path(tr, "scale", "x") != 2.0 {
		t.Fatalf("state.transform after position-only updates: %v", tr)
	}
	// Back to the identity: every part is omitted again, and the mount
	// alone applies.
	f = send(`{"position":{"x":0,"y":0,"z":0},"rotation":{"w":1,"x":0,"y":0,"z":0},"scale":{"x":1,"y":1,"z":1}}`)
	if tr, _ := path(f, "inverse3", 0, "state", "transform").(map[string]any); len(tr) != 0 {
		t.Fatalf("identity transform reported as %v", tr)
	}
	if got := cursor(f, "inverse3"); !near3(got, before, 0.002) {
		t.Fatalf("cursor %v after the identity workspace, want %v", got, before)
	}
}

func near3(a, b [3]float64, eps float64) bool {
	return math.Abs(a[0]-b[0]) <= eps && math.Abs(a[1]-b[1]) <= eps && math.Abs(a[2]-b[2]) <= eps
}

// A 3-arm + 3-grip inventory fits the 8,192 bytes that the Unity client
// reads in one receive, with every device once and moving values.
func TestInventoryOfSixDevicesFitsOneReceive(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 3, grips: 2, wiredGrips: 1, haplyNames: true})
	mover := ts.dial(t, ts.wsURL())
	mover.expect()
	for i, id := range ts.armIDs {
		mover.roundTrip(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"configure":{"mount":{"transform":{"position":{"x":0.123456789,"y":-0.0987654321,"z":0.0555555},"rotation":{"w":0.9,"x":0.1,"y":0.2,"z":0.3}}}}}]}`, id))
		clean(t, freshRoundTrip(mover, fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0.3,"y":-0.2,"z":%d}}}}]}`, id, i+1)), "force")
	}
	d := &dropIn{t: t, ts: ts, c: ts.dial(t, ts.wsURL())}
	d.c.send(`{"session":{"force_render_full_state":{}}}`)
	for _, what := range []string{"inventory", "full-state frame"} {
		b := d.raw()
		if len(b) > 8192 {
			t.Fatalf("%s is %d bytes, over 8192", what, len(b))
		}
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, key := range []string{"inverse3", "verse_grip", "wireless_verse_grip"} {
			list, _ := f[key].([]any)
			n += len(list)
		}
		if n != 6 || len(f) != 5 { // session_id, the three arrays, session: nothing else
			t.Fatalf("%s lists %d devices in %d members: %s", what, n, len(f), b)
		}
	}
	if r := ts.do("GET", ts.base+"/devices", ""); len(r.body) > 8192 {
		t.Fatalf("GET /devices is %d bytes", len(r.body))
	}
}

// The same client, written against either set of names, works when the
// service writes those names; input takes every name either way.
func TestNamingBothWays(t *testing.T) {
	for _, tt := range []struct {
		haply         bool
		arm, grip     string // the names the service writes
		sendArm, send string // names the client sends under: the other naming's
		event         string
	}{
		{true, "inverse3", "wireless_verse_grip", "arm3", "grip", "inverse3"},
		{false, "arm3", "grip", "inverse3", "wireless_verse_grip", "arm3"},
	} {
		t.Run(tt.arm, func(t *testing.T) {
			ts := startService(t, serviceConfig{arms: 1, grips: 1, haplyNames: tt.haply})
			ev := ts.dial(t, ts.eventsWS+"?since=0")
			waitEvent(t, ev, "device-connected", func(e map[string]any) bool { return path(e, "data", "device_type") == tt.event })
			c := ts.dial(t, ts.wsURL())
			inv := c.expect()
			arm, grip := firstID(t, inv, tt.arm), firstID(t, inv, tt.grip)
			for _, k := range []string{"arm3", "grip", "inverse3", "verse_grip", "wireless_verse_grip"} {
				if _, listed := inv[k]; listed != (k == tt.arm || k == tt.grip || tt.haply && k == "verse_grip") {
					t.Fatalf("inventory members %v", inv)
				}
			}
			z0 := cursor(inv, tt.arm)[2]
			forceMoves(t, tt.arm, z0, func() map[string]any {
				f := freshRoundTrip(c, fmt.Sprintf(`{%q:[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}}],%q:[{"device_id":%q,"commands":{"probe_orientation":{}}}]}`, tt.sendArm, arm, tt.send, grip))
				clean(t, f, "force under the other names")
				gripReports(t, f, tt.grip)
				return f
			})
			r := ts.do("POST", ts.base+"/"+tt.sendArm+"/0/config/handedness", `"left"`)
			if r.status != 200 || path(r.env, "applied_to", 0, "device_type") != tt.arm {
				t.Fatalf("POST under %s: %v", tt.sendArm, r)
			}
			// An error's path names the key the client sent.
			f := c.roundTrip(fmt.Sprintf(`{%q:[{"device_id":%q,"configure":{"damping":{"scalar":99}}}]}`, tt.sendArm, arm))
			if p := path(f, "errors", 0, "path"); p != tt.sendArm+"[0].configure.damping.scalar" {
				t.Fatalf("error path %v, want it under %s: %v", p, tt.sendArm, f["errors"])
			}
			if strings.Contains(fmt.Sprint(f["errors"]), tt.arm+"[") {
				t.Fatalf("error paths use the output name: %v", f["errors"])
			}
			// The operator's views name devices as the frames do.
			st := ts.do("GET", ts.base+"/stats", "")
			var named []string
			for i := 0; path(st.env, "data", "devices", i) != nil; i++ {
				named = append(named, fmt.Sprint(path(st.env, "data", "devices", i, "device_type")))
			}
			if slices.Sort(named); !slices.Equal(named, []string{tt.arm, tt.grip}) {
				t.Fatalf("/stats names the devices %v, want %s and %s", named, tt.arm, tt.grip)
			}
			if m := ts.do("GET", ts.base+"/metrics", ""); !strings.Contains(string(m.body), fmt.Sprintf(`device_type=%q`, tt.arm)) {
				t.Fatalf("/metrics does not label the arm %s", tt.arm)
			}
		})
	}
}
