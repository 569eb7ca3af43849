package transport

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// legacyBodies gives each deprecated route a body as clients send it, with
// values that differ from the defaults so the change is visible. {id} is
// the arm's id. The test fails for a route of the table that has none.
var legacyBodies = map[string]struct{ body, want string }{
	"/force_scale":          {`{"force_scale":0.25}`, `0.25`},
	"/gravity_compensation": {`{"device_id":"{id}","enable":false,"gravity_scaling_factor":0.5}`, `{"enabled":false,"scaling_factor":0.5}`},
	"/torque_scaling":       {`{"device_id":"{id}","enable":false}`, `{"enabled":false}`},
	"/device_handedness":    {`{"device_id":"{id}","handedness":"left"}`, `"left"`},
	"/serial_enable":        {`{"enable":false}`, `false`},
	"/experimental/features/grip_dropped_simulation_stopper": {`{"enable":true}`, `true`},
	"/experimental/features/screensaver_enable":              {`{"enable":true}`, `true`},
}

func TestDeprecatedRoutesWorkAndTell(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	ev := ts.dial(t, ts.eventsWS)
	routes := protocol.DeprecatedRoutes()
	if len(routes) != 7 {
		t.Fatalf("the deprecation table has %d routes, the reference lists 7", len(routes))
	}
	for _, d := range routes {
		t.Run(d.Path, func(t *testing.T) {
			lb, ok := legacyBodies[d.Path]
			if !ok {
				t.Fatalf("no legacy body for %s in this test", d.Path)
			}
			replacement := strings.NewReplacer("{type}", "arm3", "{id}", id).Replace(d.Replacement)
			r := ts.do(d.Method, ts.base+d.Path, strings.ReplaceAll(lb.body, "{id}", id))
			if r.status != 200 || !jsonEqual(t, r.env, `{"ok":true}`) {
				t.Fatalf("%s %s: %v", d.Method, d.Path, r)
			}
			if got := ts.do("GET", ts.base+replacement, ""); !jsonEqual(t, got.data(), lb.want) {
				t.Fatalf("GET %s after the legacy call: %v, want %s", replacement, got, lb.want)
			}
			e := waitEvent(t, ev, "http-route-deprecated", func(map[string]any) bool { return true })
			if path(e, "data", "route") != d.Method+" "+d.Path || path(e, "data", "replacement") != d.Method+" "+replacement {
				t.Fatalf("event data %v, want route %s and replacement %s", e["data"], d.Path, replacement)
			}
			if path(e, "data", "remote") == "" || e["category"] != "system" || e["level"] != "warning" {
				t.Fatalf("event %v", e)
			}
		})
	}
	// Exactly one event per call: a session opening now is the next event.
	c := ts.dial(t, ts.wsURL())
	c.expect()
	e := waitEvent(t, ev, "session-started", func(map[string]any) bool { return true })
	_ = e
	report := ts.do("GET", ts.base+"/deprecations", "")
	var u struct {
		Routes []struct {
			Name  string `json:"name"`
			Count int    `json:"count"`
		} `json:"routes"`
	}
	b, _ := json.Marshal(report.data())
	if err := json.Unmarshal(b, &u); err != nil || len(u.Routes) != 7 {
		t.Fatalf("migration report: %v (%v)", report, err)
	}
	for _, r := range u.Routes {
		if r.Count != 1 {
			t.Fatalf("route %s counted %d times, want 1 (one event per call)", r.Name, r.Count)
		}
	}
}

func TestDeprecatedRouteBadBodies(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	ev := ts.dial(t, ts.eventsWS)
	tests := []struct {
		name, path, body string
		status           int
		check, unchanged string
	}{
		{"missing device_id", "/gravity_compensation", `{"enable":false,"gravity_scaling_factor":0.5}`, 400, "/arm3/0/config/gravity_compensation", `{"enabled":true,"scaling_factor":1}`},
		{"unknown device", "/device_handedness", `{"device_id":"FFFF","handedness":"left"}`, 404, "/arm3/0/config/handedness", `"right"`},
		{"wrong type", "/torque_scaling", `{"device_id":"` + id + `","enable":"yes"}`, 400, "/arm3/0/config/torque_scaling", `{"enabled":true}`},
		{"out of range", "/force_scale", `{"force_scale":3}`, 400, "/settings/devices/force_scale", `1`},
		{"not json", "/serial_enable", `enable=1`, 400, "/settings/system/serial_enable", `true`},
		{"bad handedness", "/device_handedness", `{"device_id":"` + id + `","handedness":"both"}`, 400, "/arm3/0/config/handedness", `"right"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do("POST", ts.base+tt.path, tt.body)
			if r.status != tt.status || r.env["ok"] != false || r.env["error"] == "" {
				t.Fatalf("got %v, want %d with a JSON error", r, tt.status)
			}
			if got := ts.do("GET", ts.base+tt.check, ""); !jsonEqual(t, got.data(), tt.unchanged) {
				t.Fatalf("a refused legacy call changed %s: %v", tt.check, got)
			}
			// The route was used, so its owner is still told.
			waitEvent(t, ev, "http-route-deprecated", func(e map[string]any) bool { return path(e, "data", "route") == "POST "+tt.path })
		})
	}
}

// A deprecated route names its device as the replacement's path does: an
// id in lower case ("049d", as a client that formats the serial itself
// sends it) is the arm its replacement's /arm3/049d/... takes, not a 404
// the replacement would never answer. The event names the replacement
// with the device's own id.
func TestDeprecatedRouteTakesTheIDAsItsReplacementDoes(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id, lower := ts.armIDInLowerCase(0)
	ev := ts.dial(t, ts.eventsWS)
	for _, d := range protocol.DeprecatedRoutes() {
		if d.Key == 0 {
			continue // a settings route names no device
		}
		t.Run(d.Path, func(t *testing.T) {
			lb := legacyBodies[d.Path]
			replacement := strings.NewReplacer("{type}", "arm3", "{id}", lower).Replace(d.Replacement)
			// The replacement takes the lower-cased id.
			if r := ts.do("DELETE", ts.base+replacement, ""); r.status != 200 {
				t.Fatalf("DELETE %s: %v", replacement, r)
			}
			r := ts.do(d.Method, ts.base+d.Path, strings.ReplaceAll(lb.body, "{id}", lower))
			if r.status != 200 || !jsonEqual(t, r.env, `{"ok":true}`) {
				t.Fatalf("%s %s naming %q: %v; its replacement %s takes that id", d.Method, d.Path, lower, r, replacement)
			}
			if got := ts.do("GET", ts.base+replacement, ""); !jsonEqual(t, got.data(), lb.want) {
				t.Fatalf("GET %s after the legacy call: %v, want %s", replacement, got, lb.want)
			}
			want := d.Method + " " + strings.NewReplacer("{type}", "arm3", "{id}", id).Replace(d.Replacement)
			waitEvent(t, ev, "http-route-deprecated", func(e map[string]any) bool {
				return path(e, "data", "route") == d.Method+" "+d.Path && path(e, "data", "replacement") == want
			})
		})
	}
}

// A deprecated route naming a device its replacement does not serve (a
// grip's handedness) is refused as the replacement is, and its event does
// not point at a route that does not exist either: the replacement stays
// with its {type} and {id} (it named /wireless_verse_grip/ID/config/
// handedness, a 404 too: tourmig).
func TestDeprecatedRouteOnADeviceWithoutTheEntryPointsNowhere(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	grip := ts.gripIDs[0]
	ev := ts.dial(t, ts.eventsWS)
	tried := 0
	for _, d := range protocol.DeprecatedRoutes() {
		if d.Key == 0 || d.Key.AppliesTo(protocol.TypeGrip) {
			continue
		}
		tried++
		t.Run(d.Path, func(t *testing.T) {
			r := ts.do(d.Method, ts.base+d.Path, strings.ReplaceAll(legacyBodies[d.Path].body, "{id}", grip))
			if r.status == 200 {
				t.Fatalf("%s %s naming grip %s: %v; a grip has no %s", d.Method, d.Path, grip, r, d.Key.Path())
			}
			waitEvent(t, ev, "http-route-deprecated", func(e map[string]any) bool {
				if path(e, "data", "route") != d.Method+" "+d.Path {
					return false
				}
				if got, want := path(e, "data", "replacement"), d.Method+" "+d.Replacement; got != want {
					t.Fatalf("the event's replacement %v, want %s: no route serves the grip's %s", got, want, d.Key.Path())
				}
				return true
			})
		})
	}
	if tried == 0 {
		t.Fatal("no deprecated route names an entry a grip lacks")
	}
}

// A deprecated route called on the 3.0 API counts once, in the deprecated
// routes and in the 3.0 routes of the migration report alike (and so in
// /metrics): it was counted twice in the 3.0 routes, once as a 3.0 route
// and once from its http-route-deprecated event, and `hapticd
// deprecations` then contradicted itself.
func TestDeprecatedLegacyRouteCountsOnce(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	for _, d := range protocol.DeprecatedRoutes() {
		lb := legacyBodies[d.Path]
		if r := ts.do(d.Method, ts.legacy+"/3.0"+d.Path, strings.ReplaceAll(lb.body, "{id}", id)); r.status != 200 {
			t.Fatalf("%s /3.0%s: %v", d.Method, d.Path, r)
		}
	}
	if r := ts.do("GET", ts.legacy+"/3.0/devices", ""); r.status != 200 {
		t.Fatalf("GET /3.0/devices: %v", r)
	}
	// A HEAD is a probe (a load balancer's), not a 3.0 client: it counts
	// nowhere, whichever route it asks.
	for _, p := range []string{"/3.0/devices", "/3.0/version", "/3.0/" + protocol.FamilySelector(protocol.TypeArm) + "/0/config/preset?session=:-1"} {
		if r := ts.do("HEAD", ts.legacy+p, ""); r.status != 200 && r.status != 404 {
			t.Fatalf("HEAD %s: %v", p, r)
		}
	}
	var u struct {
		Routes []struct {
			Name  string `json:"name"`
			Count int    `json:"count"`
		} `json:"routes"`
		Legacy struct {
			Routes []struct {
				Route string `json:"route"`
				Count int    `json:"count"`
			} `json:"routes"`
		} `json:"legacy_api"`
	}
	hwtest.EventuallyNil(t, 5*time.Second, "every call in the migration report", func() error {
		report := ts.do("GET", ts.base+"/deprecations", "")
		b, _ := json.Marshal(report.data())
		if err := json.Unmarshal(b, &u); err != nil {
			return err
		}
		if len(u.Routes) != len(protocol.DeprecatedRoutes()) || len(u.Legacy.Routes) != len(protocol.DeprecatedRoutes())+1 {
			return fmt.Errorf("%d deprecated and %d 3.0 routes listed: %s", len(u.Routes), len(u.Legacy.Routes), b)
		}
		return nil
	})
	for _, r := range u.Routes {
		if r.Count != 1 {
			t.Errorf("deprecated route %s counted %d times, want 1", r.Name, r.Count)
		}
	}
	for _, r := range u.Legacy.Routes {
		if r.Count != 1 {
			t.Errorf("3.0 route %s counted %d times, want 1", r.Route, r.Count)
		}
	}
}
