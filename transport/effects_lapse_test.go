package transport

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// warningsWith returns the warnings of frame f that carry code.
func warningsWith(f map[string]any, code string) []map[string]any {
	var out []map[string]any
	list, _ := f["warnings"].([]any)
	for _, w := range list {
		if m, ok := w.(map[string]any); ok && m["code"] == code {
			out = append(out, m)
		}
	}
	return out
}

// A client whose renewals went quiet past its lease, and which renews with
// a push and "effects": {}, takes the arm back with the push alone: the
// lapse dropped its effects (the safety rule). The frame answering that
// renewal says so, once; a session whose effects were not dropped, or that
// had none, never hears of it.
func TestEffectsDroppedByALapseAreToldOnce(t *testing.T) {
	cases := []struct {
		name     string
		leaseMs  int
		declare  bool
		lapse    bool
		warnings int
	}{
		{"lapsed with effects", 100, true, true, 1},
		{"renewed within the lease", 5000, true, false, 0},
		{"lapsed without effects", 100, false, true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, id, ctl, obs := controlledArm(t, tc.leaseMs)
			wall := `{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":-0.05},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}`
			renew := fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.2}}},"effects":{}}]}`, id)
			if tc.declare {
				hwtest.EventuallyNil(t, 5*time.Second, "the effects render under the lease", func() error {
					f := ctl.roundTrip(effectsMsg(id, `{"set":[`+springAt("pull", 0.03)+`,`+wall+`]}`))
					if c := effectCount(f); c != 2 {
						return fmt.Errorf("%v effects in force", c)
					}
					if n := forceNorm(obs.roundTrip(`{}`)); n < 0.05 {
						return fmt.Errorf("force %v N", n)
					}
					return nil
				})
			} else {
				hwtest.EventuallyNil(t, 5*time.Second, "the push renders under the lease", func() error {
					ctl.roundTrip(force(id, 0, 0, 0.5))
					if n := forceNorm(obs.roundTrip(`{}`)); n < 0.05 {
						return fmt.Errorf("force %v N", n)
					}
					return nil
				})
			}
			if tc.lapse {
				hwtest.EventuallyNil(t, 5*time.Second, "the lease lapses and the force ramps out", func() error {
					if n := forceNorm(obs.roundTrip(`{}`)); n != 0 {
						return fmt.Errorf("force %v N", n)
					}
					return nil
				})
			}
			var told []map[string]any
			for range 5 {
				f := ctl.roundTrip(renew)
				if codes := errorCodes(f); len(codes) != 0 {
					t.Fatalf("renewal refused: %v", codes)
				}
				told = append(told, warningsWith(f, "effects_dropped")...)
				if tc.lapse && tc.declare && len(told) == 0 {
					t.Fatalf("the first frame after the lapse does not say the effects were dropped: %v", f["warnings"])
				}
			}
			if len(told) != tc.warnings {
				t.Fatalf("%d effects_dropped warnings over 5 renewals, want %d: %v", len(told), tc.warnings, told)
			}
			if tc.warnings == 0 {
				return
			}
			msg, _ := told[0]["message"].(string)
			for _, want := range []string{"lapsed", "2 effects", "declare them again"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message %q does not say %q", msg, want)
				}
			}
			if p, _ := told[0]["path"].(string); !strings.HasPrefix(p, "arm3[0]") {
				t.Errorf("path %q, want the arm's entry", p)
			}
			// The effects stay dropped: the push alone is in force.
			if f := ctl.roundTrip(renew); effectCount(f) != 0 {
				t.Fatalf("effects in force again after the lapse: %v", effectCount(f))
			}
		})
	}
}

// A lease lapse that drops a session's effects is told on the events
// socket too, for whoever watches the arm rather than drives it: the
// control-lease-expired event counts them in effects_dropped, as the
// session's effects_dropped warning does (an effect whose ttl_ms ran out
// before the lapse expired, it was not dropped). A lapse without effects
// counts 0. The 3.0 format declares effects too (devices keyed by id) and
// sees the same: the event, and the warning once at its entry's path
// ("arm3.<id>"). Before, the event said nothing of the effects.
func TestLapseThatDropsEffectsIsAnEvent(t *testing.T) {
	cases := []struct {
		name    string
		legacy  bool
		declare bool
		dropped float64
	}{
		{"3.x with effects", false, true, 2},
		{"3.x without effects", false, false, 0},
		{"3.0 with effects", true, true, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := startService(t, serviceConfig{arms: 1})
			id := ts.armIDs[0]
			ev := ts.dial(t, ts.eventsWS)
			url, entry, state := ts.wsURL(), `{"arm3":[{"device_id":%q,%s}]}`, []any{"arm3", 0, "state"}
			pathPrefix := "arm3[0]"
			if tc.legacy {
				url, entry, state = ts.legacyWS(), `{"arm3":{%q:{%s}}}`, []any{"arm3", id, "state"}
				pathPrefix = "arm3." + id
			}
			msg := func(members string) string { return fmt.Sprintf(entry, id, members) }
			ctl, obs := ts.dial(t, url), ts.dial(t, ts.wsURL())
			session := num(ctl.expect()["session_id"])
			obs.expect()
			ctl.roundTrip(`{"session":{"configure":{"lease":{"ms":100}}}}`)
			wall := `{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":-0.05},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}`
			if tc.declare {
				hwtest.EventuallyNil(t, 5*time.Second, "the effects render under the lease", func() error {
					f := ctl.roundTrip(msg(`"effects":{"set":[` + springAt("pull", 0.03) + `,` + wall + `]}`))
					if c := path(f, append(state, "effects", "count")...); c == nil || num(c) != 2 {
						return fmt.Errorf("%v effects in force (errors %v)", c, f["errors"])
					}
					if n := forceNorm(obs.roundTrip(`{}`)); n < 0.05 {
						return fmt.Errorf("force %v N", n)
					}
					return nil
				})
				// A third effect that ends well within the lease: it
				// expires, the lapse does not drop it.
				if f := ctl.roundTrip(msg(`"effects":{"set":[{"id":"tap","type":"vibration","frequency":100,"amplitude":0.2,"ttl_ms":10}]}`)); f["errors"] != nil {
					t.Fatalf("the short effect was refused: %v", f["errors"])
				}
			} else {
				hwtest.EventuallyNil(t, 5*time.Second, "the push renders under the lease", func() error {
					ctl.roundTrip(msg(`"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}`))
					if n := forceNorm(obs.roundTrip(`{}`)); n < 0.05 {
						return fmt.Errorf("force %v N", n)
					}
					return nil
				})
			}
			e := waitEvent(t, ev, "control-lease-expired", func(e map[string]any) bool { return num(path(e, "data", "session_id")) == session })
			if got := path(e, "data", "effects_dropped"); got == nil || num(got) != tc.dropped {
				t.Fatalf("control-lease-expired effects_dropped %v, want %v: %v", got, tc.dropped, e)
			}
			if path(e, "data", "device_id") != id {
				t.Fatalf("event names %v, want arm %s", path(e, "data", "device_id"), id)
			}
			if !tc.declare {
				return
			}
			// The session renews: its frame warns once, with the same count.
			f := ctl.roundTrip(msg(`"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.2}}},"effects":{}`))
			told := warningsWith(f, "effects_dropped")
			if len(told) != 1 {
				t.Fatalf("%d effects_dropped warnings after the lapse, want 1: %v", len(told), f["warnings"])
			}
			if msg, _ := told[0]["message"].(string); !strings.Contains(msg, "2 effects") {
				t.Errorf("warning %q does not count the 2 effects the event counted", msg)
			}
			if p, _ := told[0]["path"].(string); !strings.HasPrefix(p, pathPrefix) {
				t.Errorf("warning at %q, want the entry's path %s", p, pathPrefix)
			}
		})
	}
}
