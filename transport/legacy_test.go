package transport

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// Every /3.0/ route answers as its 3.x twin does: the test walks the 3.x
// route table and calls each route on both ports with the same request.
func TestLegacyRoutesMirror3x(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	c := ts.dial(t, ts.wsURL())
	sid := itoa(int(num(c.expect()["session_id"])))
	a := &api{svc: ts.svc, codec: protocol.Codec{}}
	bodies := map[string]string{
		"preset": `{"preset":"arm_front"}`, "mount": `{"transform":{"position":{"x":0.1,"y":0,"z":0}}}`,
		"basis": `{"permutation":"YXZ"}`, "filters/damping": `{"scalar":1}`, "filters/force_gate": `{"gain":0.5}`,
		"handedness": `"left"`, "torque_scaling": `{"enabled":false}`, "gravity_compensation": `{"enabled":true,"scaling_factor":0.5}`,
		"home_return": `{"enabled":true}`, "devices/force_scale": `{"value":0.5}`, "system/serial_enable": `{"value":false}`,
		"features/grip_hook/enabled": `{"value":true}`, "features/screensaver/enabled": `{"value":true}`,
		"navigation": `{"mode":"bubble"}`, "passivity/force_clamp": `{"max_force":8}`, "passivity/force_slew_limit": `{"max_rate":2000}`,
		"passivity/controller": `{"enabled":true}`,
	}
	walked := 0
	for _, rt := range a.routes() {
		if rt.path == "/" || rt.path == "/stats" || rt.path == "/events" || strings.HasPrefix(rt.path, "/recordings") ||
			rt.path == pairingPath || rt.path == expertStatusPath {
			continue // the upgrade path, live measurements, the live event ring, 3.x-only recordings, pairing and expert status
		}
		if _, deprecated := legacyBodies[rt.path]; deprecated {
			continue // TestLegacyDeprecatedRoutes
		}
		p := strings.Replace(rt.path, ":id", "0", 1)
		query := ""
		if strings.Contains(p, "/config/") {
			query = "?session=" + sid
		}
		body := ""
		if rt.method == http.MethodPost {
			key := p[strings.LastIndex(p, "/config/")+len("/config/"):]
			if strings.HasPrefix(p, "/settings/") {
				key = strings.TrimPrefix(p, "/settings/")
			}
			var ok bool
			if body, ok = bodies[key]; !ok {
				t.Fatalf("no body for %s", p)
			}
		}
		t.Run(rt.method+" "+p, func(t *testing.T) {
			x := ts.do(rt.method, ts.base+p+query, body)
			l := ts.do(rt.method, ts.legacy+"/3.0"+p+query, body)
			if x.status != l.status {
				t.Fatalf("3.x %v, 3.0 %v", x, l)
			}
			if p == "/devices" || p == "/sessions" || p == "/deprecations" {
				return // shapes differ by format or by the calls just made
			}
			if !jsonEqual(t, l.env, string(x.body)) {
				t.Fatalf("3.x answered %s, 3.0 answered %s", x.body, l.body)
			}
		})
		walked++
	}
	if walked < 50 {
		t.Fatalf("walked only %d routes", walked)
	}
}

func TestLegacyDeprecatedRoutes(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	ev := ts.dial(t, ts.eventsWS)
	r := ts.do("POST", ts.legacy+"/3.0/force_scale", `{"force_scale":0.4}`)
	if r.status != 200 {
		t.Fatalf("POST /3.0/force_scale: %v", r)
	}
	if got := ts.do("GET", ts.base+"/settings/devices/force_scale", ""); !jsonEqual(t, got.data(), `0.4`) {
		t.Fatalf("3.x does not see the value set through 3.0: %v", got)
	}
	waitEvent(t, ev, "http-route-deprecated", func(e map[string]any) bool {
		return path(e, "data", "route") == "POST /3.0/force_scale" && path(e, "data", "replacement") == "POST /3.0/settings/devices/force_scale"
	})
}

// A 3.0 client and a 3.x client on the same arm at once: each gets its own
// format, and configuration is shared both ways.
func TestLegacyAndCurrentSessionsTogether(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	legacy := ts.dial(t, ts.legacyWS())
	current := ts.dial(t, ts.wsURL())
	inv30 := legacy.expect()
	inv3x := current.expect()
	if path(inv30, "arm3", id, "state", "mode") == nil || path(inv30, "arm3", id, "config", "device_info", "firmware_version") == nil {
		t.Fatalf("3.0 inventory is not keyed by device id with state.mode: %v", inv30)
	}
	if path(inv3x, "arm3", 0, "state", "control_mode") == nil {
		t.Fatalf("3.x inventory: %v", inv3x)
	}
	sid30 := itoa(int(num(inv30["session_id"])))
	sid3x := itoa(int(num(inv3x["session_id"])))

	// Device-global: set through one format's routes, seen through the other.
	ts.do("POST", ts.legacy+"/3.0/arm3/"+id+"/config/handedness", `"left"`)
	if got := ts.do("GET", ts.base+"/arm3/"+id+"/config/handedness", ""); got.data() != "left" {
		t.Fatalf("3.x sees handedness %v after a 3.0 POST", got.data())
	}
	ts.do("POST", ts.base+"/arm3/"+id+"/config/torque_scaling", `{"enabled":false}`)
	if got := ts.do("GET", ts.legacy+"/3.0/arm3/"+id+"/config/torque_scaling", ""); !jsonEqual(t, got.data(), `{"enabled":false}`) {
		t.Fatalf("3.0 sees torque_scaling %v after a 3.x POST", got)
	}

	// A 3.0 session's preset, set over its socket, read and changed
	// through the 3.x routes with its session id.
	f := legacy.roundTrip(fmt.Sprintf(`{"arm3":{%q:{"configure":{"preset":{"preset":"arm_front_centered"}}}}}`, id))
	if f["errors"] != nil {
		t.Fatalf("3.0 configure: %v", f["errors"])
	}
	if got := ts.do("GET", ts.base+"/arm3/"+id+"/config/preset?session="+sid30, ""); !jsonEqual(t, got.data(), `{"preset":"arm_front_centered"}`) {
		t.Fatalf("3.x route reads the 3.0 session's preset as %v", got)
	}
	ts.do("POST", ts.base+"/arm3/"+id+"/config/preset?session="+sid30, `{"preset":"led_front"}`)
	f = legacy.roundTrip(`{"session":{"force_render_full_state":{}}}`)
	if path(f, "arm3", id, "config", "preset") != "led_front" {
		t.Fatalf("3.0 frame after a 3.x POST: %v", path(f, "arm3", id, "config"))
	}
	// And the reverse: a 3.x session's entry through the 3.0 routes.
	current.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":2}}}]}`, id))
	if got := ts.do("GET", ts.legacy+"/3.0/arm3/"+id+"/config/filters/damping?session="+sid3x, ""); !jsonEqual(t, got.data(), `{"scalar":2}`) {
		t.Fatalf("3.0 route reads the 3.x session's damping as %v", got)
	}
	// Each session keeps its own view.
	if got := ts.do("GET", ts.base+"/arm3/"+id+"/config/preset?session="+sid3x, ""); !jsonEqual(t, got.data(), `{"preset":"defaults"}`) {
		t.Fatalf("the 3.x session's preset changed with the 3.0 session's: %v", got)
	}
	// GET /sessions shows each session's api_version.
	s := ts.do("GET", ts.base+"/sessions", "")
	versions := map[string]bool{}
	for i := 0; i < 2; i++ {
		v, _ := path(s.env, "data", "sessions", i, "api_version").(string)
		versions[v] = true
	}
	if !versions["3.0"] || !versions["3.x"] {
		t.Fatalf("GET /sessions api_version: %v", s)
	}
	// Bad 3.0 input gets the same clear errors.
	f = legacy.roundTrip(fmt.Sprintf(`{"arm3":{%q:{"configure":{"damping":{}}}}}`, id))
	errs, _ := f["errors"].([]any)
	if len(errs) != 1 || path(errs[0], "code") != "damping_empty" {
		t.Fatalf("3.0 bad input: %v", f)
	}
}

// TestHTTPOnlyKeyNamesARouteThatWorks: a device-global key sent in a
// WebSocket configure is refused with the route to use instead, and that
// route works on the port that serves the session's format: under /3.0/ on
// the legacy port for a 3.0 session (it named the 3.x route, which the
// legacy port answers 404).
func TestHTTPOnlyKeyNamesARouteThatWorks(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	for _, tc := range []struct {
		name, ws, base, msg string
	}{
		{"3.0", ts.legacyWS(), ts.legacy, fmt.Sprintf(`{"arm3":{%q:{"configure":{"handedness":"left"}}}}`, id)},
		{"3.x", ts.wsURL(), ts.base, fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"handedness":"left"}}]}`, id)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ts.dial(t, tc.ws)
			c.expect()
			f := c.roundTrip(tc.msg)
			if codes := errorCodes(f); len(codes) != 1 || codes[0] != "http_only_key" {
				t.Fatalf("errors %v, want one http_only_key", f["errors"])
			}
			msg, _ := path(f, "errors", 0, "message").(string)
			i := strings.Index(msg, "POST /")
			if i < 0 {
				t.Fatalf("the error names no route: %q", msg)
			}
			route := strings.Fields(msg[i+len("POST "):])[0]
			if r := ts.do("POST", tc.base+route, `"left"`); r.status != 200 {
				t.Fatalf("the route the error names, POST %s on the port of the %s format, answers %v", route, tc.name, r)
			}
		})
	}
}

// A 3.x config path sent to the 3.0 port, whose routes are all under
// /3.0, is told so. It answered that the entry was unknown while listing
// it among the known ones (tourstate).
func TestLegacyPortNamesItsPrefixForA3xPath(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	r := ts.do(http.MethodGet, ts.legacy+"/inverse3/0/config/handedness", "")
	if r.status != http.StatusNotFound || !strings.Contains(string(r.body), "under /3.0") || strings.Contains(string(r.body), "unknown config entry") {
		t.Fatalf("GET a 3.x path on the 3.0 port: %d %s, want 404 naming the /3.0 prefix", r.status, r.body)
	}
	if r := ts.do(http.MethodGet, ts.legacy+"/3.0/inverse3/0/config/handedness", ""); r.status != http.StatusOK {
		t.Fatalf("GET the same under /3.0: %d %s", r.status, r.body)
	}
	// A path the prefix does not serve either (the probes are the 3.x
	// port's) is not sent there.
	for _, path := range []string{"/healthz", "/metrics", "/nothing/here"} {
		if r := ts.do(http.MethodGet, ts.legacy+path, ""); r.status != http.StatusNotFound || strings.Contains(string(r.body), "/3.0") {
			t.Errorf("GET %s on the 3.0 port: %d %s, want 404 without a /3.0 hint", path, r.status, r.body)
		}
	}
}
