package transport

import (
	"fmt"
	"slices"
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

// TestSubscribeToArmStateFields: a session that names the arm state fields
// it reads receives those only, in the frame's order, with the whole
// status; grips and full-state frames stay whole; "*" brings every field
// back; an unknown field is an error that changes nothing; another session
// keeps every field.
func TestSubscribeToArmStateFields(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 2, grips: 1})
	c := ts.dial(t, ts.wsURL())
	c.expect() // inventory
	other := ts.dial(t, ts.wsURL())
	other.expect()
	arm := ts.armIDs[0]

	stateKeys := func(f map[string]any, i int) []string {
		st, _ := path(f, "arm3", i, "state").(map[string]any)
		var keys []string
		for k := range st {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	all := stateKeys(c.roundTrip(`{}`), 0)
	if len(all) < 12 {
		t.Fatalf("a default frame's arm state has %d fields (%v), want every one", len(all), all)
	}

	c.stateSubset = true
	f := c.roundTrip(`{"session":{"configure":{"subscribe":{"state":["cursor_velocity","cursor_position"]}}}}`)
	if f["errors"] != nil {
		t.Fatalf("subscribing to two state fields: errors %v", f["errors"])
	}
	want := []string{"cursor_position", "cursor_velocity"}
	for i := range 2 {
		if got := stateKeys(f, i); !slices.Equal(got, want) {
			t.Fatalf("arm %d's state after subscribing: %v, want %v", i, got, want)
		}
		if path(f, "arm3", i, "status", "ready") == nil {
			t.Fatalf("arm %d's status is not whole: %v", i, path(f, "arm3", i, "status"))
		}
	}
	if path(f, "grip", 0, "state", "orientation") == nil {
		t.Fatalf("the grip's state is not whole: %v", path(f, "grip", 0, "state"))
	}
	// A command still moves the arm, and the fields report it.
	f = c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`, arm))
	if f["errors"] != nil || !slices.Equal(stateKeys(f, 0), want) {
		t.Fatalf("a command under the subscription: %v", f)
	}
	if got := stateKeys(other.roundTrip(`{}`), 0); !slices.Equal(got, all) {
		t.Fatalf("another session's arm state: %v, want every field", got)
	}

	full := c.roundTrip(`{"session":{"force_render_full_state":{}}}`)
	if got := stateKeys(full, 0); !slices.Equal(got, all) {
		t.Fatalf("a full-state frame's arm state: %v, want every field", got)
	}

	bad := c.roundTrip(`{"session":{"configure":{"subscribe":{"state":["cursor_position","motor_temperature"]}}}}`)
	if bad["errors"] == nil {
		t.Fatalf("an unknown state field was accepted: %v", bad)
	}
	if got := stateKeys(bad, 0); !slices.Equal(got, want) {
		t.Fatalf("a refused subscription changed the fields: %v, want %v", got, want)
	}

	// Fields derived from the pose are derived when asked for: the joint
	// angles of an arm away from its zero pose are not all zero.
	f = c.roundTrip(`{"session":{"configure":{"subscribe":{"state":["angular_position"]}}}}`)
	ang, _ := path(f, "arm3", 0, "state", "angular_position").(map[string]any)
	if f["errors"] != nil || len(ang) != 3 || ang["a0"] == 0.0 && ang["a1"] == 0.0 && ang["a2"] == 0.0 {
		t.Fatalf("angular_position alone: %v (errors %v)", ang, f["errors"])
	}

	c.stateSubset = false
	if got := stateKeys(c.roundTrip(`{"session":{"configure":{"subscribe":{"state":"*"}}}}`), 0); !slices.Equal(got, all) {
		t.Fatalf(`after "state": "*": %v, want every field`, got)
	}
}
