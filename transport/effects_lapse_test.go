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
