package transport

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

func force(id string, x, y, z float64) string {
	return fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":%g,"y":%g,"z":%g}}}}]}`, id, x, y, z)
}

func vec(v any) [3]float64 {
	return [3]float64{num(path(v, "x")), num(path(v, "y")), num(path(v, "z"))}
}

func TestInventoryShape(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 2, grips: 1})
	inv := ts.dial(t, ts.wsURL()).expect()
	if num(inv["session_id"]) < 1 {
		t.Fatalf("session_id missing: %v", inv)
	}
	arms, _ := inv["arm3"].([]any)
	grips, _ := inv["grip"].([]any)
	if len(arms) != 2 || len(grips) != 1 {
		t.Fatalf("want 2 arms and 1 grip, got %d and %d: %v", len(arms), len(grips), inv)
	}
	for _, a := range append(arms, grips...) {
		for _, k := range []string{"device_id", "config", "state", "status"} {
			if path(a, k) == nil {
				t.Fatalf("device element lacks %q: %v", k, a)
			}
		}
	}
	for _, k := range []string{"cursor_position", "cursor_velocity", "angular_position", "angular_velocity", "body_orientation", "current_cursor_force", "control_mode", "control_domain"} {
		if path(arms[0], "state", k) == nil {
			t.Errorf("arm state lacks %s", k)
		}
	}
	for _, k := range []string{"calibrated", "in_use", "ready", "started", "power_supply"} {
		if _, ok := path(arms[0], "status", k).(bool); !ok {
			t.Errorf("arm status lacks %s", k)
		}
	}
	for _, k := range []string{"type", "device_info", "handedness", "torque_scaling", "gravity_compensation", "home_return", "preset", "basis", "mount", "filters"} {
		if path(arms[0], "config", k) == nil {
			t.Errorf("arm config lacks %s", k)
		}
	}
	for _, k := range []string{"orientation", "buttons", "hall", "battery_level"} {
		if path(grips[0], "state", k) == nil {
			t.Errorf("grip state lacks %s", k)
		}
	}
	if path(inv, "session", "config", "lease", "ms") != 100.0 {
		t.Errorf("inventory session view: %v", inv["session"])
	}
}

func TestOneFramePerMessageInOrder(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	c := ts.dial(t, ts.wsURL())
	// Sent before the inventory is read: answered in order after it.
	const n = 20
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			c.send(`{}`)
		} else {
			c.send(`{"session":{"force_render_full_state":{}}}`)
		}
	}
	inv := c.expect()
	if path(inv, "arm3", 0, "config") == nil {
		t.Fatal("first frame is not the inventory")
	}
	for i := 0; i < n; i++ {
		f := c.expect()
		hasConfig := path(f, "arm3", 0, "config") != nil
		if hasConfig != (i%2 == 1) {
			t.Fatalf("frame %d: config present=%v; frames are not 1:1 in order", i, hasConfig)
		}
		if f["session_id"] != inv["session_id"] {
			t.Fatalf("frame %d has session_id %v", i, f["session_id"])
		}
	}
	// Nothing more is pending.
	_ = c.conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, b, err := c.conn.ReadMessage(); err == nil {
		t.Fatalf("an extra frame arrived: %s", b)
	}
}

func TestForceFieldSpellingsAndBinaryFrames(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	for _, msg := range []string{
		force(id, 0, 0, 1.5),
		fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"values":{"x":0,"y":0,"z":1.5}}}}]}`, id),
	} {
		var f map[string]any
		hwtest.EventuallyNil(t, 2*time.Second, "a frame without errors", func() error {
			f = c.roundTrip(msg)
			if errs := f["errors"]; errs != nil {
				t.Fatalf("errors: %v", errs)
			}
			if got := vec(path(f, "arm3", 0, "state", "current_cursor_force")); math.Abs(got[2]-1.5) > 0.01 {
				return fmt.Errorf("current_cursor_force %v, want z=1.5", got)
			}
			return nil
		})
		if path(f, "arm3", 0, "state", "control_mode") != "force" {
			t.Fatalf("control_mode %v", path(f, "arm3", 0, "state", "control_mode"))
		}
	}
	if err := c.conn.WriteMessage(websocket.BinaryMessage, []byte(`{"session":{"force_render_full_state":{}}}`)); err != nil {
		t.Fatal(err)
	}
	if f := c.expect(); path(f, "arm3", 0, "config") == nil {
		t.Fatalf("binary message not answered as JSON: %v", f)
	}
}

func TestConfigureKeysShowInNextFrame(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	full := `"session":{"force_render_full_state":{}}`
	tests := []struct {
		configure string
		key       string
		want      string
	}{
		// Frames spell the preset as a plain string (the vendor's 3.5 frames);
		// configure keeps the entry shape.
		{`"preset":{"preset":"arm_front_centered"}`, "preset", `"arm_front_centered"`},
		{`"basis":{"permutation":"XZY"}`, "basis", `{"permutation":"XZY"}`},
		{`"mount":{"transform":{"position":{"x":1,"y":2,"z":3}}}`, "preset", `"custom"`},
		{`"damping":{"scalar":4}`, "filters", `{"damping":{"scalar":4},"force_gate":{"gain":0.3}}`},
		{`"force_gate":{"gain":0.9}`, "filters", `{"damping":{"scalar":4},"force_gate":{"gain":0.9}}`},
		{`"filters":{"damping":{"vector":{"x":1,"y":2,"z":3}}}`, "filters", `{"damping":{"vector":{"x":1,"y":2,"z":3}},"force_gate":{"gain":0.9}}`},
	}
	for _, tt := range tests {
		f := c.roundTrip(fmt.Sprintf(`{%s,"arm3":[{"device_id":%q,"configure":{%s}}]}`, full, id, tt.configure))
		if f["errors"] != nil {
			t.Fatalf("%s: errors %v", tt.configure, f["errors"])
		}
		if got := path(f, "arm3", 0, "config", tt.key); !jsonEqual(t, got, tt.want) {
			t.Fatalf("%s: config.%s = %v, want %s", tt.configure, tt.key, got, tt.want)
		}
	}
	// The mount moves positions: with position {1,2,3} and basis XZY, the
	// reported cursor is offset by the mount position.
	f := c.roundTrip(`{}`)
	p := vec(path(f, "arm3", 0, "state", "cursor_position"))
	if p[0] < 0.5 || p[1] < 1.5 || p[2] < 2.5 {
		t.Fatalf("cursor %v does not reflect the mount translation {1,2,3}", p)
	}
	// preset on a grip is accepted.
	f = c.roundTrip(fmt.Sprintf(`{%s,"grip":[{"device_id":%q,"configure":{"preset":{"preset":"led_front"}}}]}`, full, ts.gripIDs[0]))
	if f["errors"] != nil || path(f, "grip", 0, "config", "preset") != "led_front" {
		t.Fatalf("grip preset: %v", f)
	}
}

// TestConfigureErrorsApplyNothing: a message with an error applies not at
// all. Each row carries, beside what is wrong, a valid change (damping, the
// lease) that a message applied in part would make, and the whole config
// (the arm's and the session's) is compared with what it was before.
func TestConfigureErrorsApplyNothing(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	const lease = `"session":{"configure":{"lease":{"ms":500}}}`
	damping := func(configure string) string {
		return fmt.Sprintf(`"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":5},%s}}]`, id, configure)
	}
	tests := []struct {
		name, msg string
		codes     []string // sorted
		mention   string
	}{
		{"http-only key", "{" + damping(`"handedness":"left"`) + "," + lease + "}", []string{"http_only_key"}, "/config/handedness"},
		{"preset with mount", "{" + damping(`"preset":{"preset":"arm_front"},"mount":{"transform":{}}`) + "," + lease + "}", []string{"preset_mount_conflict"}, ""},
		{"damping empty", fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{},"force_gate":{"gain":0.9}}}],%s}`, id, lease), []string{"damping_empty"}, ""},
		{"out of range", "{" + damping(`"force_gate":{"gain":7}`) + "," + lease + "}", []string{"out_of_range"}, ""},
		{"two bad keys", "{" + damping(`"force_gate":{"gain":7},"basis":{"permutation":"XXY"}`) + "," + lease + "}", []string{"invalid_permutation", "out_of_range"}, ""},
		{"mount scale subnormal", "{" + damping(`"mount":{"transform":{"scale":{"x":1e-320,"y":1,"z":1}}}`) + "," + lease + "}", []string{"out_of_range"}, ""},
		{"not json", `{` + lease + `,"arm3":`, []string{"invalid_json"}, ""},
		// A whole number past int64 is out of range, not "not whole".
		{"lease far out of range", "{" + damping(`"force_gate":{"gain":0.9}`) + `,"session":{"configure":{"lease":{"ms":1e300}}}}`, []string{"out_of_range"}, "1e+300 is out of range"},
		{"lease far below range", "{" + damping(`"force_gate":{"gain":0.9}`) + `,"session":{"configure":{"lease":{"ms":-9.3e18}}}}`, []string{"out_of_range"}, "-9.3e+18 is out of range"},
	}
	config := func() (arm, session any) {
		full := c.roundTrip(`{"session":{"force_render_full_state":{}}}`)
		return path(full, "arm3", 0, "config"), path(full, "session", "config")
	}
	armBefore, sessionBefore := config()
	if armBefore == nil || sessionBefore == nil {
		t.Fatalf("no config in the full-state frame: arm %v, session %v", armBefore, sessionBefore)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := c.roundTrip(tt.msg)
			errs, _ := f["errors"].([]any)
			codes := []string{}
			for _, e := range errs {
				if path(e, "message") == "" {
					t.Fatalf("error without a message: %v", e)
				}
				codes = append(codes, fmt.Sprint(path(e, "code")))
			}
			sort.Strings(codes)
			if !reflect.DeepEqual(codes, tt.codes) {
				t.Fatalf("error codes %v, want %v: %v", codes, tt.codes, errs)
			}
			if tt.mention != "" && !strings.Contains(path(errs[0], "message").(string), tt.mention) {
				t.Fatalf("error message %q does not name %s", path(errs[0], "message"), tt.mention)
			}
			arm, session := config()
			if !reflect.DeepEqual(arm, armBefore) {
				t.Fatalf("the arm's config changed by a refused message:\n%v\nwas\n%v", arm, armBefore)
			}
			if !reflect.DeepEqual(session, sessionBefore) {
				t.Fatalf("the session's config changed by a refused message:\n%v\nwas\n%v", session, sessionBefore)
			}
		})
	}
}

func TestUnknownThingsAreWarnings(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	f := c.roundTrip(fmt.Sprintf(`{"toaster":[{}],"arm3":[{"device_id":"FFFF","commands":{"probe_position":{}}},
		{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}},"levitate":{}},"configure":{"sparkle":1,"damping":{"scalar":3,"color":"red"}}}],
		"session":{"configure":{"theme":"dark"}}}`, id))
	if f["errors"] != nil {
		t.Fatalf("unknowns must not be errors: %v", f["errors"])
	}
	warns, _ := f["warnings"].([]any)
	if len(warns) < 5 {
		t.Fatalf("want warnings for the unknown type, id, command, configure key, field and session key; got %v", warns)
	}
	// The force still went through (damping, applied too, takes some of it
	// off as the arm moves).
	hwtest.EventuallyNil(t, 2*time.Second, "the force to go through", func() error {
		f = c.roundTrip(`{"session":{"force_render_full_state":{}}}`)
		if got := vec(path(f, "arm3", 0, "state", "current_cursor_force")); got[2] <= 0 || path(f, "arm3", 0, "state", "control_mode") != "force" {
			return fmt.Errorf("force %v, mode %v", got, path(f, "arm3", 0, "state", "control_mode"))
		}
		return nil
	})
	if !jsonEqual(t, path(f, "arm3", 0, "config", "filters", "damping"), `{"scalar":3}`) {
		t.Fatalf("damping not applied: %v", path(f, "arm3", 0, "config", "filters"))
	}
}

// TestArmCommandsToAGripAreUnknownCommands: a grip has no actuator, so an arm
// command sent in its entry is ignored with an unknown_command warning at the
// command's path (docs/protocol.md, Forces and safety), never an error, and
// the session controls nothing afterwards.
func TestArmCommandsToAGripAreUnknownCommands(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	grip := ts.gripIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	for _, tc := range []struct{ command, body string }{
		{"set_cursor_force", `{"vector":{"x":0,"y":0,"z":1}}`},
		{"set_cursor_position", `{"position":{"x":0,"y":0.15,"z":0.1}}`},
		{"set_angular_torques", `{"torques":{"a0":0,"a1":0,"a2":0}}`},
		{"set_angular_position", `{"angles":{"a0":0,"a1":0,"a2":0}}`},
		{"probe_position", `{}`},
	} {
		t.Run(tc.command, func(t *testing.T) {
			f := c.roundTrip(fmt.Sprintf(`{"grip":[{"device_id":%q,"commands":{%q:%s}}]}`, grip, tc.command, tc.body))
			if f["errors"] != nil {
				t.Fatalf("an arm command to a grip is an error: %v", f["errors"])
			}
			warns, _ := f["warnings"].([]any)
			if len(warns) != 1 || path(warns[0], "code") != "unknown_command" || path(warns[0], "path") != "grip[0].commands."+tc.command {
				t.Fatalf("want one unknown_command warning at grip[0].commands.%s, got %v", tc.command, warns)
			}
			r := ts.do(http.MethodGet, ts.base+"/sessions", "")
			if got := path(r.data(), "sessions", 0, "controls"); !jsonEqual(t, got, `[]`) {
				t.Fatalf("the session controls %v after a command to a grip", got)
			}
		})
	}
}

func TestTwoSessionsSeeTheirOwnBasis(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	a, b := ts.dial(t, ts.wsURL()), ts.dial(t, ts.wsURL())
	a.expect()
	b.expect()
	a.roundTrip(`{"session":{"configure":{"basis":{"permutation":"XYZ"}}}}`)
	b.roundTrip(`{"session":{"configure":{"basis":{"permutation":"YXZ"}}}}`)
	// Hold the arm still with a position command so both read the same point.
	a.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_position":{"position":{"x":0.02,"y":0.13,"z":0.1}}}}]}`, id))
	hwtest.EventuallyNil(t, 3*time.Second, "both sessions to read the same point", func() error {
		pa := vec(path(a.roundTrip(`{}`), "arm3", 0, "state", "cursor_position"))
		pb := vec(path(b.roundTrip(`{}`), "arm3", 0, "state", "cursor_position"))
		if math.Abs(pa[0]-pb[1]) > 1e-3 || math.Abs(pa[1]-pb[0]) > 1e-3 || math.Abs(pa[2]-pb[2]) > 1e-3 {
			return fmt.Errorf("session A sees %v, session B (YXZ) sees %v", pa, pb)
		}
		if math.Abs(pa[0]-pa[1]) < 0.05 {
			return fmt.Errorf("arm not yet at the target: %v", pa)
		}
		return nil
	})
}

func TestBusyDeviceAndEvent(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	ev := ts.dial(t, ts.eventsWS)
	a, b := ts.dial(t, ts.wsURL()), ts.dial(t, ts.wsURL())
	a.expect()
	b.expect()
	// The longest lease, so A still holds the arm when B asks on a slow machine.
	a.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	if f := a.roundTrip(force(id, 0, 0, 1)); f["errors"] != nil {
		t.Fatalf("first controller refused: %v", f["errors"])
	}
	f := b.roundTrip(force(id, 0, 0, -1) + "")
	errs, _ := f["errors"].([]any)
	if len(errs) != 1 || path(errs[0], "code") != "device_busy" {
		t.Fatalf("second controller: want device_busy, got %v", f)
	}
	// Observing and probing stay allowed.
	if f := b.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"probe_position":{}}}]}`, id)); f["errors"] != nil {
		t.Fatalf("probe refused: %v", f["errors"])
	}
	waitEvent(t, ev, "device-busy", func(e map[string]any) bool {
		return path(e, "data", "device_id") == id && path(e, "data", "owner_session_id") != nil
	})
}

func TestLeaseExpiryRampsForceToZero(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	ev := ts.dial(t, ts.eventsWS)
	ctl, obs := ts.dial(t, ts.wsURL()), ts.dial(t, ts.wsURL())
	ctl.expect()
	obs.expect()
	ctl.roundTrip(`{"session":{"configure":{"lease":{"ms":50}}}}`)
	// The observer sees the force on first: a zero it only ever saw would
	// prove nothing.
	hwtest.EventuallyNil(t, 5*time.Second, "the force to reach the observer", func() error {
		ctl.roundTrip(force(id, 0, 0, 2)) // renews the lease while we wait; then silence
		if z := vec(path(obs.roundTrip(`{}`), "arm3", 0, "state", "current_cursor_force"))[2]; math.Abs(z-2) > 0.01 {
			return fmt.Errorf("force z %v", z)
		}
		return nil
	})
	hwtest.EventuallyNil(t, 3*time.Second, "the force to end with the lease", func() error {
		f := obs.roundTrip(`{}`)
		got := vec(path(f, "arm3", 0, "state", "current_cursor_force"))
		if math.Abs(got[0])+math.Abs(got[1])+math.Abs(got[2]) > 1e-9 || path(f, "arm3", 0, "state", "control_mode") != "idle" {
			return fmt.Errorf("force %v mode %v", got, path(f, "arm3", 0, "state", "control_mode"))
		}
		if path(f, "arm3", 0, "status", "in_use") != false {
			return fmt.Errorf("still in use")
		}
		return nil
	})
	waitEvent(t, ev, "control-lease-expired", func(e map[string]any) bool { return path(e, "data", "device_id") == id })
}

// TestDisconnectReleases: a disconnect releases the arm at once
// (docs/protocol.md, Forces and safety), not when the lease lapses. The
// lease is the longest there is, and the cause is told by what /metrics
// reports: a lapse counts in hapticd_lease_expiries_total in the tick that
// notices it, before its ramp even starts, so a force that ended by lapse
// is counted by the time the observer reads zero; a release is not.
func TestDisconnectReleases(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	dev := []string{"device_type=arm3", "device_id=" + id}
	ctl, obs := ts.dial(t, ts.wsURL()), ts.dial(t, ts.wsURL())
	ctl.expect()
	obs.expect()
	ctl.roundTrip(fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":%d}}}}`, protocol.LeaseMaxMs))
	hwtest.EventuallyNil(t, 2*time.Second, "the force to reach the observer", func() error {
		ctl.roundTrip(force(id, 0, 0, 2)) // renews the lease while we wait
		if z := vec(path(obs.roundTrip(`{}`), "arm3", 0, "state", "current_cursor_force"))[2]; math.Abs(z-2) > 0.01 {
			return fmt.Errorf("force z %v", z)
		}
		return nil
	})
	lapsedBefore := ts.scrape(t).value("hapticd_lease_expiries_total", dev...)
	if lapsedBefore < 0 {
		t.Fatal("no hapticd_lease_expiries_total series for the arm")
	}
	ctl.conn.Close()
	// Generous: the counter, not the clock, tells a release from a lapse.
	hwtest.EventuallyNil(t, 5*time.Second, "the force to end on disconnect", func() error {
		f := obs.roundTrip(`{}`)
		if z := vec(path(f, "arm3", 0, "state", "current_cursor_force"))[2]; z != 0 {
			return fmt.Errorf("force z %v", z)
		}
		return nil
	})
	if lapsed := ts.scrape(t).value("hapticd_lease_expiries_total", dev...); lapsed != lapsedBefore {
		t.Fatalf("the force ended because the lease lapsed (hapticd_lease_expiries_total %v, was %v), not because the client disconnected", lapsed, lapsedBefore)
	}
}

func TestDeprecatedSessionCommands(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	ev := ts.dial(t, ts.eventsWS)
	c := ts.dial(t, ts.wsURL())
	c.expect()
	f := c.roundTrip(`{"session":{"set_coordinate_origin":{"coordinate_origin":"workspace_center"},"force_render_full_state":{}}}`)
	if f["errors"] != nil || path(f, "arm3", 0, "config", "preset") != "arm_front_centered" || path(f, "grip", 0, "config", "preset") != "arm_front_centered" {
		t.Fatalf("set_coordinate_origin not mapped to preset on every device: %v", f)
	}
	waitEvent(t, ev, "command-deprecated", func(e map[string]any) bool { return path(e, "data", "command") == "session.set_coordinate_origin" })
	f = c.roundTrip(`{"session":{"set_basis":{"basis":{"permutation":"ZXY"}},"force_render_full_state":{}}}`)
	if path(f, "session", "config", "basis", "permutation") != "ZXY" {
		t.Fatalf("set_basis not mapped to session.configure.basis: %v", f["session"])
	}
	waitEvent(t, ev, "command-deprecated", func(e map[string]any) bool { return path(e, "data", "command") == "session.set_basis" })
	if f := c.roundTrip(`{"session":{"set_coordinate_origin":{"coordinate_origin":"moon"}}}`); f["errors"] == nil {
		t.Fatalf("unknown coordinate_origin accepted: %v", f)
	}
}

// The replacement a command-deprecated event names is what the session's
// own API takes, with the command's own value and one of the service's
// arms: sent as written, it does what the command did. A 3.0
// session was told the 3.x layout, which its port refuses, and every
// session the example's arm_front for workspace_center (tourmig).
func TestDeprecatedCommandsReplacementWorksAsWritten(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	for _, tc := range []struct {
		api, url string
		preset   func(f map[string]any, id string) any
	}{
		{"3.x", ts.wsURL(), func(f map[string]any, _ string) any { return path(f, "arm3", 0, "config", "preset") }},
		{"3.0", ts.legacyWS(), func(f map[string]any, id string) any { return path(f, "arm3", id, "config", "preset") }},
	} {
		t.Run(tc.api, func(t *testing.T) {
			ev := ts.dial(t, ts.eventsWS)
			c := ts.dial(t, tc.url)
			inv := c.expect()
			id := ""
			if tc.api == "3.0" {
				for k := range inv["arm3"].(map[string]any) {
					id = k
				}
			} else {
				id, _ = path(inv, "arm3", 0, "device_id").(string)
			}
			replacement := func(command string) string {
				var got string
				waitEvent(t, ev, "command-deprecated", func(e map[string]any) bool {
					got, _ = path(e, "data", "replacement").(string)
					return path(e, "data", "command") == command
				})
				i := strings.Index(got, ": {")
				if i < 0 {
					t.Fatalf("replacement %q has no example", got)
				}
				return got[i+2:] // as written: it names the service's arm (it named the docs' 049D)
			}
			c.roundTrip(`{"session":{"set_coordinate_origin":{"coordinate_origin":"workspace_center"}}}`)
			use := replacement("session.set_coordinate_origin")
			c.roundTrip(`{"session":{"set_coordinate_origin":{"coordinate_origin":"device_base"}}}`)
			replacement("session.set_coordinate_origin")
			f := c.roundTrip(use)
			if f["errors"] != nil {
				t.Fatalf("the replacement %s as written: %v", use, f["errors"])
			}
			f = c.roundTrip(`{"session":{"force_render_full_state":{}}}`)
			if got := tc.preset(f, id); got != "arm_front_centered" {
				t.Fatalf("after the replacement %s the preset is %v, want workspace_center's arm_front_centered", use, got)
			}
			c.roundTrip(`{"session":{"set_basis":{"basis":{"permutation":"ZXY"}}}}`)
			use = replacement("session.set_basis")
			c.roundTrip(`{"session":{"configure":{"basis":{"permutation":"XYZ"}}}}`)
			if f := c.roundTrip(use); f["errors"] != nil {
				t.Fatalf("the replacement %s as written: %v", use, f["errors"])
			}
			f = c.roundTrip(`{"session":{"force_render_full_state":{}}}`)
			if got := path(f, "session", "config", "basis", "permutation"); got != "ZXY" {
				t.Fatalf("after the replacement %s the basis is %v, want ZXY", use, got)
			}
		})
	}
}

func TestHTTPChangesSessionViewAtOnce(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	c := ts.dial(t, ts.wsURL())
	c.roundTrip(`{"session":{"configure":{"profile":{"name":"co.example.app:main"}}}}`)
	c.expect()
	r := ts.do("POST", ts.base+"/arm3/0/config/basis?session=co.example.*", `{"permutation":"ZYX"}`)
	if r.status != 200 || r.env["applied_to"] == nil {
		t.Fatalf("POST by profile selector: %v", r)
	}
	f := c.roundTrip(`{"session":{"force_render_full_state":{}}}`)
	if path(f, "arm3", 0, "config", "basis", "permutation") != "ZYX" {
		t.Fatalf("HTTP change not in the next frame: %v", path(f, "arm3", 0, "config"))
	}
	sessions := ts.do("GET", ts.base+"/sessions", "")
	if path(sessions.env, "data", "session_count") != 1.0 || path(sessions.env, "data", "sessions", 0, "profile", "name") != "co.example.app:main" {
		t.Fatalf("GET /sessions: %v", sessions)
	}
}

func TestProfileConfigComesBack(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":"lab:rig1"}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":7}}}]}`, id))
	c.conn.Close()
	ts.stop()

	ts2 := startService(t, serviceConfig{arms: 1, dir: dir})
	c2 := ts2.dial(t, ts2.wsURL())
	c2.expect()
	f := c2.roundTrip(`{"session":{"configure":{"profile":{"name":"lab:rig1"}},"force_render_full_state":{}}}`)
	if !jsonEqual(t, path(f, "arm3", 0, "config", "filters", "damping"), `{"scalar":7}`) {
		t.Fatalf("profile entries not re-applied after restart: %v", path(f, "arm3", 0, "config", "filters"))
	}
	// A session without the profile sees the defaults.
	other := ts2.dial(t, ts2.wsURL())
	if inv := other.expect(); !jsonEqual(t, path(inv, "arm3", 0, "config", "filters", "damping"), `{"scalar":0}`) {
		t.Fatalf("another session sees the profile's damping: %v", path(inv, "arm3", 0, "config", "filters"))
	}
}

func TestOversizedMessageCloses1009(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.send(`{"pad":"` + strings.Repeat("x", 1<<20) + `"}`)
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		_, _, err := c.conn.ReadMessage()
		if err == nil {
			continue
		}
		if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Fatalf("want close 1009, got %v", err)
		}
		return
	}
}

// waitEvent reads the events socket until an event named name matches,
// for up to 15 s, and returns it: 5 s passed once in 40 runs on a loaded
// 2-CPU machine with -race (the first event read compiles the event
// schema, and each is validated).
func waitEvent(t *testing.T, ev *wsClient, name string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	const within = 15 * time.Second
	var found map[string]any
	hwtest.EventuallyNil(t, within, "a "+name+" event", nextEventMatches(t, ev, within, name, match, &found))
	return found
}

// nextEventMatches is a check for hwtest.EventuallyNil: each call reads the
// next event from ev and holds when it is named name and matches, storing
// it in found. Reads wait until within from now; a failed read fails the
// test (after a read timeout the socket is unusable).
func nextEventMatches(t *testing.T, ev *wsClient, within time.Duration, name string, match func(map[string]any) bool, found *map[string]any) func() error {
	readUntil := time.Now().Add(within)
	return func() error {
		t.Helper()
		e, err := ev.next(readUntil)
		if err != nil {
			t.Fatalf("waiting for a %s event: %v", name, err)
		}
		if e["name"] != name || !match(e) {
			return fmt.Errorf("the last event was %v", e["name"])
		}
		*found = e
		return nil
	}
}

func TestFullStateLimitedToDeviceTypes(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	c := ts.dial(t, ts.wsURL())
	c.expect()
	f := c.roundTrip(`{"session":{"force_render_full_state":{"device_types":["grip"]}}}`)
	if path(f, "grip", 0, "config") == nil || path(f, "arm3", 0, "config") != nil {
		t.Fatalf("device_types [grip]: config on arm %v, on grip %v", path(f, "arm3", 0, "config") != nil, path(f, "grip", 0, "config") != nil)
	}
	f = c.roundTrip(`{"session":{"force_render_full_state":{"device_types":[]}}}`)
	if path(f, "grip", 0, "config") != nil || path(f, "arm3", 0, "config") != nil || f["session"] == nil {
		t.Fatalf("device_types []: %v", f)
	}
}

func TestBufPoolDropsGrownMessageBuffers(t *testing.T) {
	p := newBufPool(2, 1024, maxKeptMessageBytes)
	small := append(p.get(), "small"...)
	big := make([]byte, maxMessageBytes)
	p.put(big)
	p.put(small)
	if got := p.get(); cap(got) != cap(small) || len(got) != 0 {
		t.Fatalf("get after put(small) = len %d cap %d, want the small buffer emptied (cap %d)", len(got), cap(got), cap(small))
	}
	if got := p.get(); cap(got) != 1024 {
		t.Fatalf("get on an empty pool = cap %d, want a new 1024-byte buffer (the 1 MiB one must not be kept)", cap(got))
	}

	var frames framePool
	frames.newCap, frames.keepCap = 4096, maxKeptFrameBytes
	f := frames.get()
	frames.put(f, make([]byte, maxKeptFrameBytes+1))
	if cap(f.b) != 4096 {
		t.Fatalf("a frame buffer over %d bytes was put back (cap %d)", maxKeptFrameBytes, cap(f.b))
	}
	frames.put(f, make([]byte, 0, maxKeptFrameBytes))
	if cap(f.b) != maxKeptFrameBytes {
		t.Fatalf("a frame buffer of %d bytes was not kept (cap %d)", maxKeptFrameBytes, cap(f.b))
	}
}

// TestReadIntoKeepsTokensExact reads messages around maxKeptMessageBytes:
// a buffer is over that capacity exactly when read took a big-message
// token, which Recycle gives back, so no size leaks or double-returns one.
func TestReadIntoKeepsTokensExact(t *testing.T) {
	h := &sessionHandler{big: make(chan struct{}, bigMessageSlots)}
	c := &wsConn{h: h, messages: newBufPool(poolSize, 1024, maxKeptMessageBytes), done: make(chan struct{})}
	for _, n := range []int{0, 1, 1023, 1024, 1025, maxKeptMessageBytes - 1, maxKeptMessageBytes, maxKeptMessageBytes + 1, maxMessageBytes} {
		buf, err := c.read(bytes.NewReader(make([]byte, n)))
		if err != nil || len(buf) != n {
			t.Fatalf("%d bytes: read %d, %v", n, len(buf), err)
		}
		if big := cap(buf) > maxKeptMessageBytes; big != (len(h.big) == 1) {
			t.Fatalf("%d bytes: buffer cap %d, %d tokens held", n, cap(buf), len(h.big))
		}
		c.Recycle(buf)
		if len(h.big) != 0 {
			t.Fatalf("%d bytes: %d tokens held after Recycle", n, len(h.big))
		}
	}
	if _, err := c.read(bytes.NewReader(make([]byte, maxMessageBytes+1))); !errors.Is(err, errTooBig) {
		t.Fatalf("%d bytes: %v, want errTooBig", maxMessageBytes+1, err)
	}
	// A connection that ends with big messages its session never recycled
	// (a stopped actor drops its mailbox) gives their tokens back, once.
	dropped, err := c.read(bytes.NewReader(make([]byte, maxKeptMessageBytes+1)))
	if err != nil || len(h.big) != 2 {
		t.Fatalf("%v, %d tokens held; want 2", err, len(h.big))
	}
	c.releaseBig()
	c.Recycle(dropped) // late: must not give back a token twice
	if len(h.big) != 0 {
		t.Fatalf("%d tokens held after the connection ended", len(h.big))
	}
}

// A client that keeps sending messages over maxKeptMessageBytes (one
// commanding 1,000 arms is about 100 KB) has them read into buffers the
// listener keeps, not into a new one each: they were 128 KB of garbage a
// message, a collection every few messages at 1 kHz.
func TestBigMessagesReuseTheListenersBuffers(t *testing.T) {
	h := &sessionHandler{big: make(chan struct{}, bigMessageSlots)}
	c := &wsConn{h: h, messages: newBufPool(poolSize, 1024, maxKeptMessageBytes), done: make(chan struct{})}
	msg := make([]byte, 100_000)
	read := func() {
		buf, err := c.read(bytes.NewReader(msg))
		if err != nil || len(buf) != len(msg) {
			t.Fatalf("read %d bytes, %v", len(buf), err)
		}
		c.Recycle(buf)
	}
	read() // the first grows the buffers
	const messages = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range messages {
		read()
	}
	runtime.ReadMemStats(&after)
	// A collection may empty the pool once in a while: one buffer grown
	// again is 1.3 KB a message over the run. Under the race detector the
	// pool drops a quarter of what it is given, on purpose: each drop is
	// one message's 128 KB again. Each message grew its own, 260 KB.
	bound := uint64(16 << 10)
	if raceEnabled {
		bound = 128 << 10
	}
	if perMessage := (after.TotalAlloc - before.TotalAlloc) / messages; perMessage > bound {
		t.Fatalf("%d bytes allocated a message of %d bytes, want the buffers reused (under %d)", perMessage, len(msg), bound)
	}
	if len(h.big) != 0 {
		t.Fatalf("%d big-message tokens held after every message was recycled", len(h.big))
	}
}

// TestInflightGateStopsTheReaderAtTheLimit: the reader may read limit
// messages ahead of their frames; the next waits for a frame, and a frame
// that answers no message does not let it read further ahead. A closed
// done channel stands for "would wait": enter can only take it when no
// frame has made room.
func TestInflightGateStopsTheReaderAtTheLimit(t *testing.T) {
	const limit = 4
	g := newInflightGate(limit)
	never, shut := make(chan struct{}), make(chan struct{})
	close(shut)
	g.leave() // a frame before any message: nothing to count
	for i := range limit {
		if !g.enter(never) {
			t.Fatalf("message %d: refused below the limit", i)
		}
	}
	if g.enter(shut) {
		t.Fatal("the reader read past the limit with no frame written")
	}
	g.leave() // the frame of one message
	if !g.enter(never) {
		t.Fatal("a written frame did not let the waiting reader on")
	}
	if g.enter(shut) {
		t.Fatal("one frame let the reader on twice")
	}
}

// A device id names its device by one rule on every channel: exactly, or
// else regardless of case ("cbbd" is CBBD, as in an HTTP path). Over
// WebSocket, in both formats, a configure and a command sent with the id in
// lower case reach the arm with no warning, and the value is the one HTTP
// reads through a lower-case path; a 3.x subscription so named carries
// that arm.
func TestDeviceIDCaseIsOneRuleOnEveryChannel(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 2})
	id, lower := ts.armIDInLowerCase(1)
	for _, tt := range []struct {
		format, url, msg string
		mode             func(f map[string]any) any // the arm's control mode in a frame
	}{
		{"3.x", ts.wsURL(), `{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":2}},"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`,
			func(f map[string]any) any { return path(f, "arm3", 1, "state", "control_mode") }},
		{"3.0", ts.legacyWS(), `{"arm3":{%q:{"configure":{"damping":{"scalar":2}},"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}}}`,
			func(f map[string]any) any { return path(f, "arm3", id, "state", "mode") }},
	} {
		t.Run(tt.format, func(t *testing.T) {
			c := ts.dial(t, tt.url)
			sid := itoa(int(num(c.expect()["session_id"])))
			hwtest.EventuallyNil(t, 5*time.Second, "the arm in force mode", func() error {
				f := freshRoundTrip(c, fmt.Sprintf(tt.msg, lower))
				if f["errors"] != nil || f["warnings"] != nil {
					t.Fatalf("configure and command to %q: %v", lower, f)
				}
				if m := tt.mode(f); m != "force" {
					return fmt.Errorf("control mode %v", m)
				}
				return nil
			})
			if r := ts.do(http.MethodGet, ts.base+"/arm3/"+lower+"/config/filters/damping?session="+sid, ""); !jsonEqual(t, r.data(), `{"scalar":2}`) {
				t.Fatalf("GET through /arm3/%s: %v, want the damping the socket set", lower, r)
			}
			_ = c.conn.Close() // releases the arm for the next format's session
		})
	}
	c := ts.dial(t, ts.wsURL())
	c.expect()
	f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"subscribe":{"devices":[{"device_type":"arm3","device_id":%q}]}}}}`, lower))
	if arms, _ := f["arm3"].([]any); len(arms) != 1 || path(f, "arm3", 0, "device_id") != id || f["warnings"] != nil {
		t.Fatalf("subscribed to %q: %v, want the frame to carry %s alone", lower, f, id)
	}
}

// A deprecated command that fails is a use too (reference: each use emits
// a deprecation event), counted as a deprecated route's failed call is: a
// client that only ever sent it broken never appeared in the migration
// report (tourmig).
func TestRefusedDeprecatedCommandIsCounted(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	ev := ts.dial(t, ts.eventsWS)
	c := ts.dial(t, ts.wsURL())
	c.expect()
	for _, tc := range []struct{ command, msg, names string }{
		{"session.set_basis", `{"session":{"set_basis":{"basis":{"permutation":"XXY"}}}}`, ""},
		{"session.set_coordinate_origin", `{"session":{"set_coordinate_origin":{"coordinate_origin":"moon"}}}`, ""},
		// Valid itself, in a message refused for another member: the
		// replacement names the command's own value.
		{"session.set_coordinate_origin", `{"session":{"set_coordinate_origin":{"coordinate_origin":"workspace_center"}},"arm3":[5]}`, "arm_front_centered"},
		{"session.set_basis", `{"session":{"set_basis":{"basis":{"permutation":"ZXY"}}},"arm3":[5]}`, "ZXY"},
	} {
		if f := c.roundTrip(tc.msg); f["errors"] == nil {
			t.Fatalf("%s accepted: %v", tc.msg, f)
		}
		e := waitEvent(t, ev, "command-deprecated", func(e map[string]any) bool { return path(e, "data", "command") == tc.command })
		if rep, _ := path(e, "data", "replacement").(string); tc.names != "" && !strings.Contains(rep, `"`+tc.names+`"`) {
			t.Errorf("%s: replacement %q, want it to name %q", tc.msg, rep, tc.names)
		}
	}
}
