package transport

import (
	"fmt"
	"testing"
)

// Clients written for another product's key names work unchanged: every
// frame lists each type under its own name and each alias, and aliases are
// accepted wherever a type key is.
func TestTypeAliases(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1, aliases: "inverse3=arm3,verse_grip=grip,wireless_verse_grip=grip"})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	inv := c.expect()
	for _, key := range []string{"arm3", "inverse3", "grip", "verse_grip", "wireless_verse_grip"} {
		list, _ := inv[key].([]any)
		if len(list) != 1 {
			t.Fatalf("inventory lacks %s: %v", key, inv)
		}
	}
	if got := path(inv, "inverse3", 0, "config", "type"); got != "inverse3" {
		t.Fatalf("config.type under the alias = %v, want inverse3", got)
	}
	if got := path(inv, "arm3", 0, "config", "type"); got != "arm3" {
		t.Fatalf("config.type under the own name = %v, want arm3", got)
	}
	f := c.roundTrip(fmt.Sprintf(`{"inverse3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`, id))
	if f["errors"] != nil || f["warnings"] != nil {
		t.Fatalf("a command under the alias: %v", f)
	}
	if path(f, "inverse3", 0, "device_id") != id || path(f, "arm3", 0, "device_id") != id {
		t.Fatalf("state frame does not list the arm under both keys: %v", f)
	}
	r := ts.do("POST", ts.base+"/inverse3/"+id+"/config/handedness", `"left"`)
	if r.status != 200 {
		t.Fatalf("POST under the alias path: %v", r)
	}
	if got := ts.do("GET", ts.base+"/arm3/"+id+"/config/handedness", ""); got.data() != "left" {
		t.Fatalf("the alias path did not change the device: %v", got)
	}
	devices := ts.do("GET", ts.base+"/devices", "")
	if path(devices.env, "verse_grip", 0, "device_id") != ts.gripIDs[0] {
		t.Fatalf("GET /devices lacks the alias: %s", devices.body)
	}
}

func TestSessionLifecycleEvents(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	ev := ts.dial(t, ts.eventsWS)
	c := ts.dial(t, ts.wsURL())
	sid := num(c.expect()["session_id"])
	started := waitEvent(t, ev, "session-started", func(e map[string]any) bool { return num(path(e, "data", "session_id")) == sid })
	if path(started, "data", "api_version") != "3.x" || path(started, "data", "remote") == "" {
		t.Fatalf("session-started data: %v", started["data"])
	}
	c.roundTrip(`{"session":{"configure":{"profile":{"name":"lab:one"}}}}`)
	c.conn.Close()
	ended := waitEvent(t, ev, "session-ended", func(e map[string]any) bool { return num(path(e, "data", "session_id")) == sid })
	if path(ended, "data", "profile") != "lab:one" {
		t.Fatalf("session-ended data: %v", ended["data"])
	}
	checkFor(t, 2e9, func() error {
		if n := path(ts.do("GET", ts.base+"/sessions", "").env, "data", "session_count"); n != 0.0 {
			return fmt.Errorf("session_count %v after the disconnect", n)
		}
		return nil
	})
}
