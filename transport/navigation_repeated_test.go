package transport

import (
	"fmt"
	"net/http"
	"testing"
)

// TestNavigationRepeatedMembersCountByTheirLast: docs/protocol.md (Input)
// says a member named twice counts by its last occurrence. The navigation
// entry acted on every occurrence, over 3.x HTTP, /3.0/ and WebSocket
// alike: a second "bubble" was merged into the first (max_speed 0.4 and
// speed_gain 5 both applied), a trailing "mode": null left the bubble on
// instead of refusing a body without a mode, and a bad first "mode" was
// refused though a good one followed. What GET then answers is what the
// last occurrences say; a refused body changes nothing.
func TestNavigationRepeatedMembersCountByTheirLast(t *testing.T) {
	const profile = "co.example.navdup:main"
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	if f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"` + profile + `"}}}}`); f["errors"] != nil {
		t.Fatalf("profile: %v", f["errors"])
	}
	def := ts.do(http.MethodGet, ts.base+"/arm3/0/config/navigation?session="+profile, "")
	defGain := num(path(def.env, "data", "config", "bubble", "speed_gain"))
	defSpeed := num(path(def.env, "data", "config", "bubble", "max_speed"))
	cases := []struct {
		name, body  string
		ok          bool    // accepted
		mode        string  // GET's config.mode after it
		gain, speed float64 // GET's bubble speed_gain and max_speed after it
	}{
		{"bubble twice: the last alone", `{"mode":"bubble","bubble":{"max_speed":0.4},"bubble":{"speed_gain":5}}`, true, "bubble", 5, defSpeed},
		{"mode, then null: no mode", `{"mode":"bubble","mode":null}`, false, "off", defGain, defSpeed},
		{"a bad mode, then bubble", `{"mode":"bad","mode":"bubble"}`, true, "bubble", defGain, defSpeed},
		{"a bad max_speed, then a good one", `{"mode":"bubble","bubble":{"max_speed":50,"max_speed":0.25}}`, true, "bubble", defGain, 0.25},
	}
	for _, base := range []struct{ name, url string }{{"3.x", ts.base}, {"3.0", ts.legacy + "/3.0"}, {"WebSocket", ""}} {
		for _, tc := range cases {
			t.Run(base.name+": "+tc.name, func(t *testing.T) {
				get := ts.base + "/arm3/0/config/navigation?session=" + profile
				if base.url != "" {
					url := base.url + "/arm3/0/config/navigation?session=" + profile
					r := ts.do(http.MethodPost, url, tc.body)
					if ok := r.status == 200; ok != tc.ok {
						t.Fatalf("POST %s: %v", tc.body, r)
					}
					if !tc.ok && r.env["code"] != "invalid_value" {
						t.Fatalf("POST %s: %v, want invalid_value", tc.body, r)
					}
				} else {
					f := c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":%s}}]}`, id, tc.body))
					if ok := f["errors"] == nil; ok != tc.ok {
						t.Fatalf("configure.navigation %s: errors %v", tc.body, f["errors"])
					}
				}
				r := ts.do(http.MethodGet, get, "")
				cfg := path(r.env, "data", "config")
				if path(cfg, "mode") != tc.mode || num(path(cfg, "bubble", "speed_gain")) != tc.gain || num(path(cfg, "bubble", "max_speed")) != tc.speed {
					t.Errorf("after %s: config %v; want mode %s, speed_gain %v, max_speed %v", tc.body, cfg, tc.mode, tc.gain, tc.speed)
				}
				if d := ts.do(http.MethodDelete, get, ""); d.status != 200 {
					t.Fatalf("DELETE: %v", d)
				}
			})
		}
	}
}
