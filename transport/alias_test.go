package transport

import (
	"fmt"
	"testing"
)

// Aliases (--type-alias) are input names only: a client may send and
// address devices under them, and every device still appears once, under
// the name the naming table writes.
func TestTypeAliases(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1, aliases: "haptic=arm3,handle=grip,inverse3=arm3"})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	inv := c.expect()
	for key, want := range map[string]int{"arm3": 1, "grip": 1, "haptic": 0, "handle": 0, "inverse3": 0} {
		list, _ := inv[key].([]any)
		if len(list) != want {
			t.Fatalf("inventory lists %d devices under %s, want %d: %v", len(list), key, want, inv)
		}
	}
	if got := path(inv, "arm3", 0, "config", "type"); got != "arm3" {
		t.Fatalf("config.type = %v, want arm3", got)
	}
	f := freshRoundTrip(c, fmt.Sprintf(`{"haptic":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`, id))
	if f["errors"] != nil || f["warnings"] != nil {
		t.Fatalf("a command under the alias: %v", f)
	}
	if path(f, "arm3", 0, "device_id") != id || f["haptic"] != nil {
		t.Fatalf("state frame should list the arm once, under arm3: %v", f)
	}
	r := ts.do("POST", ts.base+"/haptic/"+id+"/config/handedness", `"left"`)
	if r.status != 200 || path(r.env, "applied_to", 0, "device_type") != "arm3" {
		t.Fatalf("POST under the alias path: %v", r)
	}
	if got := ts.do("GET", ts.base+"/arm3/"+id+"/config/handedness", ""); got.data() != "left" {
		t.Fatalf("the alias path did not change the device: %v", got)
	}
	if got := ts.do("GET", ts.base+"/handle/0/config/preset?session=:-1", ""); got.status != 200 {
		t.Fatalf("GET under the grip alias: %v", got)
	}
}
