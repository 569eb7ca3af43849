package transport

import (
	"fmt"
	"net/http"
	"testing"
)

// TestRepeatedMembersCountByTheirLast: docs/protocol.md (Input) promises
// that a member named twice in one JSON object counts by its last
// occurrence. That held inside entries, but the members a message is made
// of (the session part, a device entry's commands, configure and effects,
// a type key, a configure key, a command) each applied every occurrence:
// "commands": null after a force still put the force on the arm, a session
// part given twice applied both, and a configure key given twice was an
// error. Each message below must leave exactly what its last occurrences
// say, read back from the service.
func TestRepeatedMembersCountByTheirLast(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	force := `{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}`
	type want struct {
		controls  bool    // the session controls the arm after the message
		damping   string  // config.filters.damping
		gain      float64 // config.filters.force_gate.gain
		leaseMs   float64
		profile   any    // session.config.profile
		transform string // state.transform
	}
	defaults := want{damping: `{"scalar":0}`, gain: 0.3, leaseMs: 100, transform: `{}`}
	with := func(change func(*want)) want {
		w := defaults
		change(&w)
		return w
	}
	cases := []struct {
		name, msg string
		legacy    bool
		want      want
	}{
		{"commands, then commands null", fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":%s,"commands":null}]}`, id, force), false, defaults},
		{"commands, then empty commands", fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":%s,"commands":{}}]}`, id, force), false, defaults},
		{"a force, then the same command null", fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}},"set_cursor_force":null}}]}`, id), false, defaults},
		{"a type key, then the same key empty", fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":%s}],"arm3":[]}`, id, force), false, defaults},
		{"a force twice: the last", fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{}},{"device_id":%q,"commands":{}}],"arm3":[{"device_id":%q,"commands":%s}]}`, id, id, id, force), false, with(func(w *want) { w.controls = true })},
		{"3.0: commands, then commands null", fmt.Sprintf(`{"arm3":{%q:{"commands":%s,"commands":null}}}`, id, force), true, defaults},
		{"3.0: a device id, then the same id empty", fmt.Sprintf(`{"arm3":{%q:{"commands":%s},%q:{}}}`, id, force, id), true, defaults},
		{"an escaped name, then the plain one", fmt.Sprintf(`{"arm3":[{"device_id":%q,"comm\u0061nds":%s,"commands":{}}]}`, id, force), false, defaults},
		{"a plain name, then an escaped one", fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":%s,"comm\u0061nds":{}}]}`, id, force), false, defaults},
		{"configure twice", fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":5}},"configure":{"force_gate":{"gain":0.5}}}]}`, id), false, with(func(w *want) { w.gain = 0.5 })},
		{"a configure key twice", fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"force_gate":{"gain":0.1},"force_gate":{"gain":0.5}}}]}`, id), false, with(func(w *want) { w.gain = 0.5 })},
		{"a configure key, then null", fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"force_gate":{"gain":0.1},"force_gate":null}}]}`, id), false, defaults},
		{"a filter twice", fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"filters":{"damping":{"scalar":4},"damping":{"scalar":6}}}}]}`, id), false, with(func(w *want) { w.damping = `{"scalar":6}` })},
		{"set_transform, then null", fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_transform":{"position":{"x":1,"y":0,"z":0}},"set_transform":null}}]}`, id), false, defaults},
		{"session, then an empty session", `{"session":{"configure":{"lease":{"ms":500}}},"session":{}}`, false, defaults},
		{"session configure, then null", `{"session":{"configure":{"lease":{"ms":600}},"configure":null}}`, false, defaults},
		{"lease, then null", `{"session":{"configure":{"lease":{"ms":700},"lease":null}}}`, false, defaults},
		{"lease twice", `{"session":{"configure":{"lease":{"ms":700},"lease":{"ms":300}}}}`, false, with(func(w *want) { w.leaseMs = 300 })},
		{"profile, then null", `{"session":{"configure":{"profile":{"name":"dup:first"},"profile":null}}}`, false, defaults},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url := ts.wsURL()
			if tc.legacy {
				url = ts.legacyWS()
			}
			c := ts.dial(t, url)
			inv := c.expect()
			sid := num(inv["session_id"])
			if f := c.roundTrip(tc.msg); f["errors"] != nil {
				t.Fatalf("refused: %v", f["errors"])
			}
			// Control is taken when the message is handled, before its
			// frame: the session list shows it at once.
			controls := false
			sessions, _ := path(ts.do(http.MethodGet, ts.base+"/sessions", "").data(), "sessions").([]any)
			for _, s := range sessions {
				if num(path(s, "session_id")) == sid {
					list, _ := path(s, "controls").([]any)
					controls = len(list) > 0
				}
			}
			if controls != tc.want.controls {
				t.Errorf("the session controls the arm: %v, want %v", controls, tc.want.controls)
			}
			full := c.roundTrip(`{"session":{"force_render_full_state":{}}}`)
			arm := path(full, "arm3", 0)
			if tc.legacy {
				arm = path(full, "arm3", id)
			}
			if got := path(arm, "config", "filters", "damping"); !jsonEqual(t, got, tc.want.damping) {
				t.Errorf("damping %v, want %s", got, tc.want.damping)
			}
			if got := num(path(arm, "config", "filters", "force_gate", "gain")); got != tc.want.gain {
				t.Errorf("force_gate gain %v, want %v", got, tc.want.gain)
			}
			if got := num(path(full, "session", "config", "lease", "ms")); got != tc.want.leaseMs {
				t.Errorf("lease %v ms, want %v", got, tc.want.leaseMs)
			}
			if got := path(full, "session", "config", "profile"); got != tc.want.profile {
				t.Errorf("profile %v, want %v", got, tc.want.profile)
			}
			if got := path(arm, "state", "transform"); !jsonEqual(t, got, tc.want.transform) {
				t.Errorf("transform %v, want %s", got, tc.want.transform)
			}
		})
	}
}
