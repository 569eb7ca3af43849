package transport

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// The points of the state that a client configured (a fixed bubble's
// centre, a wall's proxy while the cursor rests on it) come back as the
// numbers it sent: a client that compares state.navigation.bubble.center
// with its config, or draws the contact on the wall it declared, finds
// them equal. They were written at float32 precision, as measured values
// are: a centre configured at 0.0123456789012 read 0.012345679, and a
// floor at 0.1234567890123 had its proxy at 0.12345679 (a short number
// such as 0.02 came back as it was: float32's shortest form is the same
// digits).
func TestStateEchoesConfiguredPointsExactly(t *testing.T) {
	t.Run("bubble centre", func(t *testing.T) {
		ts := startService(t, serviceConfig{arms: 1})
		id := ts.armIDs[0]
		c := ts.dial(t, ts.wsURL())
		c.expect()
		want := [3]float64{0.0123456789012, -0.01, 0.0300000000007}
		nav := fmt.Sprintf(`{"mode":"bubble","bubble":{"center":{"mode":"fixed","position":{"x":%v,"y":%v,"z":%v}}}}`, want[0], want[1], want[2])
		if f := c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":%s}}]}`, id, nav)); f["errors"] != nil {
			t.Fatalf("configure.navigation: %v", f["errors"])
		}
		hwtest.EventuallyNil(t, 5*time.Second, "the state's centre is the configured one", func() error {
			f := c.roundTrip(force(id, 0, 0, 0))
			center := path(f, "arm3", 0, "state", "navigation", "bubble", "center")
			if center == nil {
				return fmt.Errorf("no state.navigation yet: %v", path(f, "arm3", 0, "state"))
			}
			if got := vec(center); got != want {
				return fmt.Errorf("state.navigation.bubble.center %v, configured %v", got, want)
			}
			return nil
		})
	})
	t.Run("wall proxy", func(t *testing.T) {
		ts := startService(t, serviceConfig{arms: 1})
		id := ts.armIDs[0]
		c := ts.dial(t, ts.wsURL())
		c.expect()
		c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
		const floorZ = 0.1234567890123
		floor := fmt.Sprintf(`{"set":[{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":%g},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}]}`, floorZ)
		if f := c.roundTrip(effectsMsg(id, floor)); f["errors"] != nil {
			t.Fatalf("floor refused: %v", f["errors"])
		}
		servo := fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_position":{"position":{"x":0,"y":0.15,"z":0.14}}},"effects":{}}]}`, id)
		hwtest.EventuallyNil(t, 5*time.Second, "the cursor above the floor", func() error {
			f := c.roundTrip(servo)
			if z := vec(path(f, "arm3", 0, "state", "cursor_position"))[2]; math.Abs(z-0.14) > 0.002 {
				return fmt.Errorf("cursor z %v", z)
			}
			return nil
		})
		// Out of contact the proxy is the cursor, and reads as
		// cursor_position does.
		hwtest.EventuallyNil(t, 5*time.Second, "the free proxy reads as the cursor", func() error {
			f := c.roundTrip(force(id, 0, 0, 0))
			p := path(f, "arm3", 0, "state", "effects", "proxies", 0)
			if path(p, "contact") != false {
				return fmt.Errorf("proxy %v: want it free", p)
			}
			if got, cursor := vec(path(p, "position")), vec(path(f, "arm3", 0, "state", "cursor_position")); got != cursor {
				return fmt.Errorf("free proxy at %v, cursor at %v", got, cursor)
			}
			return nil
		})
		// Pushed down onto the floor: in contact, the proxy is on the
		// floor's plane. The loop computes it in float64 from the cursor,
		// so a last bit may differ; float32 is off by 1e-9.
		hwtest.EventuallyNil(t, 5*time.Second, "the proxy rests on the floor's plane", func() error {
			f := c.roundTrip(force(id, 0, 0, -2))
			p := path(f, "arm3", 0, "state", "effects", "proxies", 0)
			if path(p, "contact") != true {
				return fmt.Errorf("proxy %v: not in contact yet", p)
			}
			if z := vec(path(p, "position"))[2]; math.Abs(z-floorZ) > 1e-12 {
				return fmt.Errorf("proxy z %v, the floor is at %v", z, floorZ)
			}
			return nil
		})
	})
}
