package transport

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// TestWallAfterAServoOverTheWire: an engine declares a floor, rests
// the cursor on it, then servoes the arm under the floor with
// set_cursor_position (position commands render no effects) and goes back
// to force control. The floor should not fire the hand out (docs/effects.md:
// "A wall never fires a hand out of it"; after a lapse, walls let go of
// their contacts). Before, it pushed 10 N at once.
func TestWallAfterAServoOverTheWire(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	servo := func(z float64) string {
		return fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_position":{"position":{"x":0,"y":0.15,"z":%g}}},"effects":{}}]}`, id, z)
	}
	cursorZ := func(f map[string]any) float64 { return vec(path(f, "arm3", 0, "state", "cursor_position"))[2] }
	floor := `{"set":[{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":0.1},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}]}`
	if f := c.roundTrip(effectsMsg(id, floor)); f["errors"] != nil {
		t.Fatalf("floor refused: %v", f["errors"])
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the cursor above the floor", func() error {
		if z := cursorZ(c.roundTrip(servo(0.12))); math.Abs(z-0.12) > 0.002 {
			return fmt.Errorf("cursor z %v", z)
		}
		return nil
	})
	// Pushed down onto the floor: a contact.
	hwtest.EventuallyNil(t, 5*time.Second, "the cursor rests on the floor", func() error {
		f := c.roundTrip(force(id, 0, 0, -2))
		if path(f, "arm3", 0, "state", "effects", "proxies", 0, "contact") != true {
			return fmt.Errorf("proxy %v, cursor z %v", path(f, "arm3", 0, "state", "effects", "proxies"), cursorZ(f))
		}
		return nil
	})
	// Servoed 2 cm under the floor.
	hwtest.EventuallyNil(t, 5*time.Second, "the cursor under the floor", func() error {
		if z := cursorZ(c.roundTrip(servo(0.08))); math.Abs(z-0.08) > 0.002 {
			return fmt.Errorf("cursor z %v", z)
		}
		return nil
	})
	// Back to force control, pushing nothing.
	peak := 0.0
	deadline := time.Now().Add(150 * time.Millisecond)
	for time.Now().Before(deadline) {
		f := c.roundTrip(force(id, 0, 0, 0))
		if path(f, "arm3", 0, "state", "control_mode") == "position" {
			continue // a frame of the servo's last tick: its force is the servo's
		}
		peak = math.Max(peak, vec(path(f, "arm3", 0, "state", "current_cursor_force"))[2])
	}
	if peak > 0.5 {
		t.Fatalf("back in force control 2 cm under the floor, the floor pushed up to %.2f N: it fired the hand out", peak)
	}
}

// TestFloorMovedUpUnderAPressingHand: the cursor rests on a floor,
// pushed down with 2 N (a contact: the floor holds it with 2 N). The
// engine moves the floor 3 cm up, over the cursor (a moving platform, or
// the workspace moved). docs/effects.md: "If the surface comes over the
// cursor instead, the wall pushes nothing: this happens when the effect
// ... moves ... with the cursor behind its surface ... A wall never fires a
// hand out of it." The floor's force stays near the hand's 2 N; before, it
// grew to the 10 N clamp and threw the arm up.
func TestFloorMovedUpUnderAPressingHand(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	floorAt := func(z float64) string {
		return fmt.Sprintf(`{"set":[{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":%g},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}]}`, z)
	}
	servo := fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_position":{"position":{"x":0,"y":0.15,"z":0.12}}}}]}`, id)
	if f := c.roundTrip(effectsMsg(id, floorAt(0.1))); f["errors"] != nil {
		t.Fatalf("floor refused: %v", f["errors"])
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the cursor above the floor", func() error {
		if z := vec(path(c.roundTrip(servo), "arm3", 0, "state", "cursor_position"))[2]; math.Abs(z-0.12) > 0.002 {
			return fmt.Errorf("cursor z %v", z)
		}
		return nil
	})
	// At rest on the floor: a contact whose net force stayed near zero for
	// 100 ms (the hand's 2 N against the floor's), not a turning point of
	// the bounce after the impact, where the velocity is zero for a tick.
	var restSince time.Time
	hwtest.EventuallyNil(t, 10*time.Second, "the cursor rests on the floor", func() error {
		f := c.roundTrip(force(id, 0, 0, -2))
		if path(f, "arm3", 0, "state", "effects", "proxies", 0, "contact") != true {
			restSince = time.Time{}
			return fmt.Errorf("proxy %v", path(f, "arm3", 0, "state", "effects", "proxies"))
		}
		v := vec(path(f, "arm3", 0, "state", "cursor_velocity"))
		net := vec(path(f, "arm3", 0, "state", "current_cursor_force"))
		if math.Abs(v[2]) > 0.001 || math.Abs(net[2]) > 0.2 {
			restSince = time.Time{}
			return fmt.Errorf("in contact, still moving at %v m/s, net force %v N", v, net)
		}
		if restSince.IsZero() {
			restSince = time.Now()
		}
		if time.Since(restSince) < 100*time.Millisecond {
			return fmt.Errorf("at rest for %v", time.Since(restSince))
		}
		return nil
	})
	if f := c.roundTrip(effectsMsg(id, floorAt(0.13))); f["errors"] != nil {
		t.Fatalf("floor update refused: %v", f["errors"])
	}
	peak := 0.0
	deadline := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(deadline) {
		f := c.roundTrip(force(id, 0, 0, -2))
		peak = math.Max(peak, vec(path(f, "arm3", 0, "state", "current_cursor_force"))[2])
	}
	if peak > 1 { // the output is the hand's −2 N plus the floor's
		t.Fatalf("the floor came up over the pressing cursor: net force rose to %+.2f N up (floor %.2f N against the hand's 2 N)", peak, peak+2)
	}
}
