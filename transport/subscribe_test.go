package transport

import (
	"fmt"
	"testing"
)

// TestSubscribeSizesFramesToTheClient: a session that subscribes to one
// arm of three (and a grip) receives frames with just those devices, and a
// command to the subscribed arm still works; "*" restores every device; a
// bad subscription is an error that changes nothing; other sessions keep
// the default.
func TestSubscribeSizesFramesToTheClient(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 3, grips: 1})
	c := ts.dial(t, ts.wsURL())
	c.expect() // inventory
	other := ts.dial(t, ts.wsURL())
	other.expect()
	arm, grip := ts.armIDs[1], ts.gripIDs[0]

	count := func(f map[string]any) (arms, grips int) {
		a, _ := f["arm3"].([]any)
		g, _ := f["grip"].([]any)
		return len(a), len(g)
	}
	sub := fmt.Sprintf(`{"session":{"configure":{"subscribe":{"devices":[{"device_type":"arm3","device_id":%q},{"device_type":"grip","device_id":%q}]}}}}`, arm, grip)
	f := c.roundTrip(sub)
	if a, g := count(f); a != 1 || g != 1 || path(f, "arm3", 0, "device_id") != arm || f["errors"] != nil {
		t.Fatalf("after subscribing to one arm and the grip: %d arms, %d grips, errors %v: %v", a, g, f["errors"], f)
	}
	f = c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`, arm))
	if a, _ := count(f); a != 1 || f["errors"] != nil || path(f, "arm3", 0, "device_id") != arm {
		t.Fatalf("a command to the subscribed arm: %v", f)
	}
	if a, g := count(other.roundTrip(`{}`)); a != 3 || g != 1 {
		t.Fatalf("another session's frame has %d arms and %d grips, want every device", a, g)
	}

	bad := c.roundTrip(`{"session":{"configure":{"subscribe":{"devices":[{"device_type":"arm9","device_id":"1"}]}}}}`)
	if bad["errors"] == nil {
		t.Fatalf("an unknown device type in a subscription was accepted: %v", bad)
	}
	if a, g := count(bad); a != 1 || g != 1 {
		t.Fatalf("a rejected subscription changed the frame: %d arms, %d grips", a, g)
	}

	missing := c.roundTrip(`{"session":{"configure":{"subscribe":{"devices":[{"device_type":"arm3","device_id":"FFFF"}]}}}}`)
	if a, _ := count(missing); a != 0 || missing["warnings"] == nil || missing["errors"] != nil {
		t.Fatalf("subscribing to an arm that is not connected: want no arms and a warning, got %v", missing)
	}

	if a, g := count(c.roundTrip(`{"session":{"configure":{"subscribe":{"devices":"*"}}}}`)); a != 3 || g != 1 {
		t.Fatalf(`after subscribing to "*": %d arms, %d grips, want every device`, a, g)
	}
}
