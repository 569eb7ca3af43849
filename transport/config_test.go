package transport

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/protocol"
)

// configCase is one config route with its default, a valid body and the
// value that body puts in force.
type configCase struct {
	path, def, body, want string
	sessionScoped         bool
}

var configCases = []configCase{
	{"preset", `{"preset":"defaults"}`, `{"preset":"arm_front_centered"}`, `{"preset":"arm_front_centered"}`, true},
	{"basis", `{"permutation":"XYZ"}`, `{"permutation":"-XZY"}`, `{"permutation":"-XZY"}`, true},
	{"filters/damping", `{"scalar":0}`, `{"scalar":2.5,"vector":{"x":1,"y":0,"z":3}}`, `{"scalar":2.5,"vector":{"x":1,"y":0,"z":3}}`, true},
	{"filters/force_gate", `{"gain":0.3}`, `{"gain":0.8}`, `{"gain":0.8}`, true},
	{"handedness", `"right"`, `"left"`, `"left"`, false},
	{"torque_scaling", `{"enabled":true}`, `{"enabled":false}`, `{"enabled":false}`, false},
	{"gravity_compensation", `{"enabled":true,"scaling_factor":1}`, `{"enabled":false,"scaling_factor":0.5}`, `{"enabled":false,"scaling_factor":0.5}`, false},
	{"home_return", `{"enabled":false}`, `{"enabled":true}`, `{"enabled":true}`, false},
	{"passivity/force_clamp", `{"max_force":10}`, `{"max_force":6.5}`, `{"max_force":6.5}`, false},
	{"passivity/force_slew_limit", `{"max_rate":5000}`, `{"max_rate":800}`, `{"max_rate":800}`, false},
}

func TestConfigRoutesRoundTrip(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	c := ts.dial(t, ts.wsURL())
	inv := c.expect()
	sid := int(num(inv["session_id"]))
	if sid < 1 {
		t.Fatalf("inventory has no session_id: %v", inv)
	}
	for _, tc := range configCases {
		t.Run(tc.path, func(t *testing.T) {
			url := ts.base + "/arm3/" + ts.armIDs[0] + "/config/" + tc.path
			if tc.sessionScoped {
				url += "?session=" + itoa(sid)
			}
			r := ts.do(http.MethodGet, url, "")
			if r.status != 200 || r.env["ok"] != true || !jsonEqual(t, r.data(), tc.def) {
				t.Fatalf("GET on a fresh state dir: %v, want data %s", r, tc.def)
			}
			r = ts.do(http.MethodPost, url, tc.body)
			if r.status != 200 || !jsonEqual(t, r.data(), tc.want) {
				t.Fatalf("POST %s: %v, want data %s", tc.body, r, tc.want)
			}
			if r = ts.do(http.MethodGet, url, ""); !jsonEqual(t, r.data(), tc.want) {
				t.Fatalf("GET after POST: %v, want %s", r, tc.want)
			}
			r = ts.do(http.MethodDelete, url, "")
			if r.status != 200 || !jsonEqual(t, r.data(), tc.def) {
				t.Fatalf("DELETE: %v, want the default %s", r, tc.def)
			}
			if r = ts.do(http.MethodGet, url, ""); !jsonEqual(t, r.data(), tc.def) {
				t.Fatalf("GET after DELETE: %v, want %s", r, tc.def)
			}
		})
	}
}

func TestConfigBadInputChangesNothing(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	c := ts.dial(t, ts.wsURL())
	sid := itoa(int(num(c.expect()["session_id"])))
	arm := ts.base + "/arm3/" + ts.armIDs[0] + "/config/"
	big := `{"gain":0.5,"pad":"` + strings.Repeat("x", 70<<10) + `"}`
	tests := []struct {
		name, method, url, body string
		status                  int
		code                    string
		check, unchanged        string // route to GET afterwards and the value it must still hold
	}{
		{"not json", "POST", arm + "filters/force_gate?session=" + sid, `{gain:`, 400, "invalid_json", arm + "filters/force_gate?session=" + sid, `{"gain":0.3}`},
		{"wrong type", "POST", arm + "filters/force_gate?session=" + sid, `{"gain":"high"}`, 400, "invalid_value", arm + "filters/force_gate?session=" + sid, `{"gain":0.3}`},
		{"out of range", "POST", arm + "filters/force_gate?session=" + sid, `{"gain":1.5}`, 400, "out_of_range", arm + "filters/force_gate?session=" + sid, `{"gain":0.3}`},
		{"huge number", "POST", arm + "gravity_compensation", `{"enabled":true,"scaling_factor":1e400}`, 400, "", arm + "gravity_compensation", `{"enabled":true,"scaling_factor":1}`},
		{"nan string", "POST", arm + "filters/damping?session=" + sid, `{"scalar":"NaN"}`, 400, "invalid_value", arm + "filters/damping?session=" + sid, `{"scalar":0}`},
		{"unknown preset", "POST", arm + "preset?session=" + sid, `{"preset":"upside_down"}`, 400, "", arm + "preset?session=" + sid, `{"preset":"defaults"}`},
		{"bad permutation", "POST", arm + "basis?session=" + sid, `{"permutation":"XXY"}`, 400, "", arm + "basis?session=" + sid, `{"permutation":"XYZ"}`},
		{"damping empty", "POST", arm + "filters/damping?session=" + sid, `{}`, 400, "damping_empty", arm + "filters/damping?session=" + sid, `{"scalar":0}`},
		{"bad handedness", "POST", arm + "handedness", `"middle"`, 400, "", arm + "handedness", `"right"`},
		{"body too large", "POST", arm + "filters/force_gate?session=" + sid, big, 413, "body_too_large", arm + "filters/force_gate?session=" + sid, `{"gain":0.3}`},
		{"unknown device", "POST", ts.base + "/arm3/FFFF/config/handedness", `"left"`, 404, "unknown_device", arm + "handedness", `"right"`},
		{"unknown device type", "POST", ts.base + "/toaster/0/config/handedness", `"left"`, 404, "unknown_device_type", arm + "handedness", `"right"`},
		{"unknown entry", "GET", arm + "color", ``, 404, "unknown_route", arm + "handedness", `"right"`},
		{"unknown route", "GET", ts.base + "/nope", ``, 404, "unknown_route", arm + "handedness", `"right"`},
		{"wrong method", "PUT", arm + "handedness", `"left"`, 405, "method_not_allowed", arm + "handedness", `"right"`},
		{"session required", "POST", arm + "preset", `{"preset":"arm_front"}`, 400, "session_required", arm + "preset?session=" + sid, `{"preset":"defaults"}`},
		{"no such session", "POST", arm + "preset?session=999", `{"preset":"arm_front"}`, 404, "unknown_session", arm + "preset?session=" + sid, `{"preset":"defaults"}`},
		{"session twice", "POST", arm + "preset?session=" + sid + "&session=999", `{"preset":"arm_front"}`, 400, "invalid_value", arm + "preset?session=" + sid, `{"preset":"defaults"}`},
		{"empty session", "POST", arm + "preset?session=", `{"preset":"arm_front"}`, 400, "", arm + "preset?session=" + sid, `{"preset":"defaults"}`},
		{"session on a device-global POST", "POST", arm + "handedness?session=" + sid, `"left"`, 400, "invalid_value", arm + "handedness", `"right"`},
		{"session on a device-global GET", "GET", arm + "handedness?session=" + sid, ``, 400, "invalid_value", arm + "handedness", `"right"`},
		{"session on a device-global DELETE", "DELETE", arm + "gravity_compensation?session=" + sid, ``, 400, "invalid_value", arm + "gravity_compensation", `{"enabled":true,"scaling_factor":1}`},
		{"session twice on the inventory", "GET", ts.base + "/devices?session=" + sid + "&session=" + sid, ``, 400, "invalid_value", arm + "handedness", `"right"`},
		{"unknown format on the inventory", "GET", ts.base + "/devices?format=xml", ``, 400, "invalid_value", arm + "handedness", `"right"`},
		{"format twice on the inventory", "GET", ts.base + "/devices?format=json&format=json", ``, 400, "invalid_value", arm + "handedness", `"right"`},
		{"unknown format on the version", "GET", ts.base + "/version?format=yaml", ``, 400, "invalid_value", arm + "handedness", `"right"`},
		{"stats devices twice", "GET", ts.base + "/stats?devices=none&devices=all", ``, 400, "invalid_value", arm + "handedness", `"right"`},
		// Queries that cannot be decoded: url.URL's Query would drop the pair
		// and the route answer as if it were not given.
		{"session that cannot be decoded", "POST", arm + "preset?session=" + sid + "%", `{"preset":"arm_front"}`, 400, "invalid_value", arm + "preset?session=" + sid, `{"preset":"defaults"}`},
		{"format that cannot be decoded", "GET", ts.base + "/devices?format=json%zz", ``, 400, "invalid_value", arm + "handedness", `"right"`},
		{"stats devices with a semicolon", "GET", ts.base + "/stats?devices=none;x=1", ``, 400, "invalid_value", arm + "handedness", `"right"`},
		{"unknown setting", "POST", ts.base + "/settings/devices/volume", `{"value":1}`, 404, "unknown_setting", ts.base + "/settings/devices/force_scale", `1`},
		{"setting out of range", "POST", ts.base + "/settings/devices/force_scale", `{"value":2}`, 400, "out_of_range", ts.base + "/settings/devices/force_scale", `1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ts.do(tt.method, tt.url, tt.body)
			if r.status != tt.status || r.env["ok"] != false {
				t.Fatalf("got %v, want status %d with ok:false", r, tt.status)
			}
			if msg, _ := r.env["error"].(string); msg == "" {
				t.Fatalf("error envelope has no message: %v", r)
			}
			if tt.code != "" && r.env["code"] != tt.code {
				t.Fatalf("code %v, want %s (%v)", r.env["code"], tt.code, r)
			}
			if after := ts.do("GET", tt.check, ""); !jsonEqual(t, after.data(), tt.unchanged) {
				t.Fatalf("value changed after a refused request: %v, want %s", after, tt.unchanged)
			}
		})
	}
}

func TestBrowserSafety(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, allowOrigin: []string{"lab.example"}})
	url := ts.base + "/arm3/" + ts.armIDs[0] + "/config/handedness"
	tests := []struct {
		name    string
		headers []string
		status  int
	}{
		{"foreign origin as a cross-site form", []string{"Origin", "https://evil.example", "Content-Type", "text/plain"}, 403},
		{"null origin", []string{"Origin", "null"}, 403},
		{"foreign host (DNS rebinding)", []string{"Host", "evil.example:10001"}, 403},
		{"loopback origin", []string{"Origin", "http://localhost:3000"}, 200},
		{"127.0.0.1 origin", []string{"Origin", "http://127.0.0.1:8080"}, 200},
		{"allowed origin", []string{"Origin", "https://lab.example"}, 200},
		{"no origin (curl)", nil, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := ts.do("GET", url, "").data()
			r := ts.do("POST", url, flipHandedness(before), tt.headers...)
			if r.status != tt.status {
				t.Fatalf("got %v, want %d", r, tt.status)
			}
			after := ts.do("GET", url, "").data()
			if tt.status == 403 {
				if r.env["ok"] != false || r.env["error"] == "" {
					t.Fatalf("403 without a JSON error: %v", r)
				}
				if after != before {
					t.Fatalf("refused request changed the value: %v → %v", before, after)
				}
			} else if after == before {
				t.Fatalf("served request did not change the value (%v)", after)
			}
		})
	}
	// WebSocket upgrades go through the same guard, on every listener.
	for _, u := range []string{ts.wsURL(), ts.legacyWS(), ts.eventsWS} {
		h := http.Header{"Origin": {"https://evil.example"}}
		conn, resp, err := websocket.DefaultDialer.Dial(u, h)
		if err == nil {
			conn.Close()
			t.Fatalf("upgrade with a foreign origin on %s was served", u)
		}
		if resp == nil || resp.StatusCode != 403 {
			t.Fatalf("upgrade with a foreign origin on %s: %v, want 403", u, resp)
		}
		c := ts.dial(t, u, "Origin", "http://localhost")
		c.conn.Close()
	}
}

func flipHandedness(v any) string {
	if v == "left" {
		return `"right"`
	}
	return `"left"`
}

func itoa(i int) string { return strconv.Itoa(i) }

// DELETE of a session's per-device basis answers the basis now in force:
// the session-level one.
func TestDeleteBasisFallsBackToSessionBasis(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	c := ts.dial(t, ts.wsURL())
	sid := itoa(int(num(c.expect()["session_id"])))
	c.roundTrip(`{"session":{"configure":{"basis":{"permutation":"ZXY"}}}}`)
	url := ts.base + "/arm3/0/config/basis?session=" + sid
	if r := ts.do("POST", url, `{"permutation":"YXZ"}`); !jsonEqual(t, r.data(), `{"permutation":"YXZ"}`) {
		t.Fatalf("POST: %v", r)
	}
	if r := ts.do("DELETE", url, ""); !jsonEqual(t, r.data(), `{"permutation":"ZXY"}`) {
		t.Fatalf("DELETE answered %v, want the session's basis ZXY", r)
	}
	if r := ts.do("GET", url, ""); !jsonEqual(t, r.data(), `{"permutation":"ZXY"}`) {
		t.Fatalf("GET after DELETE: %v", r)
	}
}

// The navigation entry over both channels: GET answers config, state and
// status; a WebSocket configure and a POST under a profile are stored and
// come back after a restart; bad bodies change nothing; DELETE turns it
// off.
func TestNavigationEntryOverWebSocketAndHTTP(t *testing.T) {
	const name = "co.example.nav:main"
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, grips: 1, dir: dir})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	url := ts.base + "/arm3/0/config/navigation?session=" + name
	f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"` + name + `"}}},"arm3":[{"device_id":"` + id + `","configure":{"navigation":{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":0.01,"z":0.15}},"max_speed":0.3}}}}]}`)
	if f["errors"] != nil {
		t.Fatalf("configure.navigation: %v", f["errors"])
	}
	r := ts.do(http.MethodGet, url, "")
	if r.status != 200 || path(r.env, "data", "status", "mode") != "bubble" || num(path(r.env, "data", "config", "bubble", "max_speed")) != 0.3 ||
		num(path(r.env, "data", "config", "bubble", "center", "position", "z")) != 0.15 {
		t.Fatalf("GET after configure: %v", r)
	}
	// A bad body is refused with its path and changes nothing.
	for _, bad := range []struct{ body, code, path string }{
		{`{"mode":"teleport"}`, "invalid_value", "mode"},
		{`{"bubble":{"max_speed":50}}`, "out_of_range", "bubble.max_speed"},
		{`{"bubble":{"shape":{"primitive":"plane","parameters":{"n":{"x":0,"y":0,"z":1},"h":0}}}}`, "invalid_value", "bubble.shape.primitive"},
	} {
		r = ts.do(http.MethodPost, url, bad.body)
		if r.status != 400 || r.env["code"] != bad.code || r.env["path"] != bad.path {
			t.Fatalf("POST %s: %v, want %s at %s", bad.body, r, bad.code, bad.path)
		}
	}
	bad := c.roundTrip(`{"arm3":[{"device_id":"` + id + `","configure":{"navigation":{"bubble":{"speed_gain":-1}}}}]}`)
	if errs, _ := bad["errors"].([]any); len(errs) != 1 || path(bad, "errors", 0, "path") != "arm3[0].configure.navigation.bubble.speed_gain" {
		t.Fatalf("WebSocket bad navigation: %v", bad["errors"])
	}
	r = ts.do(http.MethodPost, url, `{"mode":"bubble","bubble":{"center":{"position":{"x":0,"y":0.01,"z":0.15}},"max_speed":0.3,"wall_stiffness":1200}}`)
	if r.status != 200 || num(path(r.env, "data", "bubble", "wall_stiffness")) != 1200 {
		t.Fatalf("POST: %v", r)
	}
	// A grip has no navigation: a warning, not an error.
	g := c.roundTrip(`{"grip":[{"device_id":"` + ts.gripIDs[0] + `","configure":{"navigation":{"mode":"bubble"}}}]}`)
	if g["errors"] != nil || path(g, "warnings", 0, "code") != "unknown_key" {
		t.Fatalf("grip navigation: %v %v", g["errors"], g["warnings"])
	}
	_ = c.conn.Close()
	ts.stop()

	ts2 := startService(t, serviceConfig{arms: 1, dir: dir})
	c2 := ts2.dial(t, ts2.wsURL())
	c2.expect()
	f = c2.roundTrip(`{"session":{"configure":{"profile":{"name":"` + name + `"}},"force_render_full_state":{}}}`)
	nav := path(f, "arm3", 0, "config", "navigation")
	if path(f, "arm3", 0, "config", "navigation", "mode") != "bubble" || num(path(f, "arm3", 0, "config", "navigation", "bubble", "wall_stiffness")) != 1200 {
		t.Fatalf("navigation after restart: %v", nav)
	}
	url2 := ts2.base + "/arm3/0/config/navigation?session=" + name
	if r = ts2.do(http.MethodDelete, url2, ""); r.status != 200 || path(r.env, "data", "mode") != "off" {
		t.Fatalf("DELETE: %v", r)
	}
	if r = ts2.do(http.MethodGet, url2, ""); path(r.env, "data", "status", "mode") != "off" || path(r.env, "data", "state") != nil {
		t.Fatalf("GET after DELETE: %v", r)
	}
}

// An arm's entry on a grip (damping, handedness, navigation...) is a
// route that does not exist: every method answers 404 with the grip's own
// entries, through the type's name and the family selector alike, and
// nothing is stored for the grip or spills onto an arm. Over WebSocket the
// same entry is an unknown_key warning (the grip's navigation in
// TestNavigationEntryOverWebSocketAndHTTP, protocol's TestDecodeClientMessage).
func TestConfigArmEntryOnAGripIsRefused(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	c := ts.dial(t, ts.wsURL())
	sid := itoa(int(num(c.expect()["session_id"])))
	arm := ts.base + "/arm3/" + ts.armIDs[0] + "/config/"
	bodies := map[protocol.Key]string{
		protocol.KeyDamping: `{"scalar":1}`, protocol.KeyForceGate: `{"gain":0.5}`, protocol.KeyHandedness: `"left"`,
		protocol.KeyTorqueScaling: `{"enabled":false}`, protocol.KeyGravityCompensation: `{"enabled":true,"scaling_factor":0.5}`,
		protocol.KeyHomeReturn: `{"enabled":true}`, protocol.KeyNavigation: `{"mode":"bubble"}`,
		protocol.KeyForceClamp: `{"max_force":8}`, protocol.KeyForceSlewLimit: `{"max_rate":2000}`, protocol.KeyPassivityController: `{"enabled":false}`,
	}
	refused := 0
	for _, k := range protocol.Keys() {
		if k.AppliesTo(protocol.TypeGrip) {
			continue
		}
		body, ok := bodies[k]
		if !ok {
			t.Fatalf("no body for %s: add one", k.Name())
		}
		q := ""
		if k.SessionScoped() {
			q = "?session=" + sid
		}
		armBefore := ts.do("GET", arm+k.Path()+q, "")
		for _, grip := range []string{"/grip/" + ts.gripIDs[0], "/*verse_grip/0", "/*verse_grip/*"} {
			for _, m := range []string{"POST", "GET", "DELETE"} {
				b := ""
				if m == "POST" {
					b = body
				}
				r := ts.do(m, ts.base+grip+"/config/"+k.Path()+q, b)
				msg, _ := r.env["error"].(string)
				if r.status != 404 || r.env["code"] != "unknown_route" || !strings.Contains(msg, "preset, mount, basis") {
					t.Fatalf("%s %s/config/%s: %v, want 404 unknown_route naming the grip's entries", m, grip, k.Path(), r)
				}
				refused++
			}
		}
		was, _ := json.Marshal(armBefore.data())
		if after := ts.do("GET", arm+k.Path()+q, ""); after.status != 200 || !jsonEqual(t, after.data(), string(was)) {
			t.Fatalf("%s on the arm moved after the grip's refusals: %v, was %v", k.Name(), after, armBefore)
		}
	}
	if refused == 0 {
		t.Fatal("every entry applies to grips: nothing was checked")
	}
	// The deprecated routes that set an arm's entry by device_id reach the
	// service without the router: they refuse a grip's id the same way.
	for _, route := range []string{"/device_handedness", "/torque_scaling", "/gravity_compensation"} {
		body := strings.ReplaceAll(legacyBodies[route].body, "{id}", ts.gripIDs[0])
		r := ts.do("POST", ts.base+route, body)
		if msg, _ := r.env["error"].(string); r.status != 404 || r.env["code"] != "unknown_route" || !strings.Contains(msg, "preset, mount, basis") {
			t.Fatalf("POST %s with a grip's id: %v, want 404 unknown_route naming the grip's entries", route, r)
		}
	}
	// The grip's own entries still answer.
	if r := ts.do("POST", ts.base+"/grip/"+ts.gripIDs[0]+"/config/preset?session="+sid, `{"preset":"arm_front"}`); r.status != 200 {
		t.Fatalf("POST a grip's preset: %v", r)
	}
}

// A user who GETs an entry, edits what came back and POSTs it gets either
// that document applied or a 400 that says what is wrong, never a 200 that
// quietly puts something else in force. For every entry and setting, on
// both API formats: a value is set, its GET answer kept, the entry reset
// to its default, then the kept answer POSTed back, first whole (the
// envelope) and then its data member. The entry must then hold the kept
// value, or the POST be refused and the default stay.
func TestConfigGetAnswerPostedBack(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	c := ts.dial(t, ts.wsURL())
	sid := itoa(int(num(c.expect()["session_id"])))
	bodies := map[protocol.Key]string{
		protocol.KeyPreset: `{"preset":"arm_front_centered"}`, protocol.KeyMount: `{"transform":{"position":{"x":0.1,"y":0,"z":0}}}`,
		protocol.KeyBasis: `{"permutation":"-XZY"}`, protocol.KeyDamping: `{"scalar":2.5}`, protocol.KeyForceGate: `{"gain":0.8}`,
		protocol.KeyHandedness: `"left"`, protocol.KeyTorqueScaling: `{"enabled":false}`,
		protocol.KeyGravityCompensation: `{"enabled":false,"scaling_factor":0.5}`, protocol.KeyHomeReturn: `{"enabled":true}`,
		protocol.KeyNavigation: `{"mode":"bubble","bubble":{"max_speed":0.3}}`,
		protocol.KeyForceClamp: `{"max_force":6.5}`, protocol.KeyForceSlewLimit: `{"max_rate":800}`,
		protocol.KeyPassivityController: `{"enabled":false}`,
	}
	type route struct{ path, body string }
	var routes []route
	for _, k := range protocol.Keys() {
		body, ok := bodies[k]
		if !ok {
			t.Fatalf("no body for %s: add one", k.Name())
		}
		p := "/arm3/0/config/" + k.Path()
		if k.SessionScoped() {
			p += "?session=" + sid
		}
		routes = append(routes, route{p, body})
	}
	settingBodies := map[protocol.SettingKey]string{
		protocol.SettingForceScale: `{"value":0.5}`, protocol.SettingSerialEnable: `{"value":false}`,
		protocol.SettingGripHook: `{"value":true}`, protocol.SettingScreensaver: `{"value":true}`,
	}
	for _, k := range protocol.SettingKeys() {
		body, ok := settingBodies[k]
		if !ok {
			t.Fatalf("no body for setting %s: add one", k.Path())
		}
		routes = append(routes, route{"/settings/" + k.Path(), body})
	}
	// The entry's value in a GET answer's data: navigation's config
	// without its live state.
	value := func(data any) string {
		if m, ok := data.(map[string]any); ok && m["config"] != nil {
			data = m["config"]
		}
		b, _ := json.Marshal(data)
		return string(b)
	}
	for _, base := range []string{ts.base, ts.legacy + "/3.0"} {
		for _, rt := range routes {
			url := base + rt.path
			t.Run(url[len(base):]+" on "+base[len("http://"):], func(t *testing.T) {
				if r := ts.do(http.MethodPost, url, rt.body); r.status != 200 {
					t.Fatalf("POST %s: %v", rt.body, r)
				}
				got := ts.do(http.MethodGet, url, "")
				if got.status != 200 {
					t.Fatalf("GET: %v", got)
				}
				kept := value(got.data())
				dataBody, _ := json.Marshal(got.data())
				for _, posted := range []struct {
					what, body string
				}{{"the whole answer", string(got.body)}, {"its data member", string(dataBody)}} {
					def := ts.do(http.MethodDelete, url, "")
					if def.status != 200 {
						t.Fatalf("DELETE: %v", def)
					}
					r := ts.do(http.MethodPost, url, posted.body)
					now := value(ts.do(http.MethodGet, url, "").data())
					switch {
					case r.status == 200 && now != kept:
						t.Fatalf("POST of %s %s: answered %v and put %s in force, not the document %s", posted.what, posted.body, r, now, kept)
					case r.status == 200:
					case r.status != 400 || r.env["ok"] != false || r.env["error"] == "":
						t.Fatalf("POST of %s: %v, want 200 or a 400 error envelope", posted.what, r)
					case now != value(def.data()):
						t.Fatalf("POST of %s refused (%v) but the entry moved to %s", posted.what, r, now)
					case posted.what == "its data member":
						t.Fatalf("POST of GET's data %s refused: %v", posted.body, r)
					case !strings.Contains(r.env["error"].(string), `"data" member`):
						t.Fatalf("POST of GET's whole answer refused with %v: the error should say to POST its data member", r)
					}
				}
			})
		}
	}
}

// The vendor's selectors page (MODULES 1.3) writes
// GET /inverse3/0/config/navigation?session=:default:0, the first session
// of profile "default": its :NAME:I form selects as NAME:I does, on every
// method of a session-scoped route.
func TestConfigSessionSelectorColonNameIndex(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	var sids []string
	for _, profile := range []string{"default", "co.example.app:main", "default"} {
		c := ts.dial(t, ts.wsURL())
		sids = append(sids, itoa(int(num(c.expect()["session_id"]))))
		if f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"` + profile + `"}}}}`); f["errors"] != nil {
			t.Fatalf("profile %s: %v", profile, f["errors"])
		}
	}
	nav := ts.base + "/arm3/0/config/navigation?session="
	for _, tt := range []struct {
		sel, want string // want: the session id that the selector picks
	}{
		{":default:0", sids[0]},
		{":default:-1", sids[2]},
		{":co.example.*:0", sids[1]},
	} {
		t.Run(tt.sel, func(t *testing.T) {
			if r := ts.do(http.MethodPost, nav+tt.sel, `{"mode":"bubble","bubble":{"max_speed":0.25}}`); r.status != 200 ||
				!jsonEqual(t, r.env["applied_to"], `[{"device_type":"arm3","device_id":"`+ts.armIDs[0]+`","session_id":`+tt.want+`}]`) {
				t.Fatalf("POST: %v, want it applied to session %s alone", r, tt.want)
			}
			if r := ts.do(http.MethodGet, nav+tt.sel, ""); r.status != 200 || path(r.env, "data", "config", "mode") != "bubble" {
				t.Fatalf("GET: %v", r)
			}
			if r := ts.do(http.MethodDelete, nav+tt.sel, ""); r.status != 200 {
				t.Fatalf("DELETE: %v", r)
			}
			if r := ts.do(http.MethodGet, nav+"%23"+tt.want, ""); path(r.env, "data", "config", "mode") != "off" {
				t.Fatalf("GET #%s after DELETE: %v", tt.want, r)
			}
		})
	}
	if r := ts.do(http.MethodGet, nav+":nobody:0", ""); r.status != 404 || r.env["code"] != "unknown_session" {
		t.Fatalf(":nobody:0: %v, want 404 unknown_session", r)
	}
}

// A DELETE of a session-scoped entry without session= resets it for every
// session of the selected devices, and says which: applied_to lists each
// (device, session) it reset, in session id order, whatever the session's
// format or profile; with no session connected it lists none.
func TestDeleteWithoutSessionListsTheSessionsItReset(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 2})
	url := ts.base + "/arm3/*/config/filters/damping"
	if r := ts.do(http.MethodDelete, url, ""); r.status != 200 || !jsonEqual(t, r.env["applied_to"], `[]`) {
		t.Fatalf("DELETE with no session connected: %v, want applied_to []", r)
	}
	var sids []string
	for _, s := range []struct{ url, profile string }{{ts.wsURL(), "co.example.app:main"}, {ts.wsURL(), ""}, {ts.legacyWS(), ""}} {
		c := ts.dial(t, s.url)
		sid := itoa(int(num(c.expect()["session_id"])))
		if s.profile != "" {
			c.roundTrip(`{"session":{"configure":{"profile":{"name":"` + s.profile + `"}}}}`)
		}
		if r := ts.do(http.MethodPost, url+"?session=%23"+sid, `{"scalar":2}`); r.status != 200 {
			t.Fatalf("POST for session %s: %v", sid, r)
		}
		sids = append(sids, sid)
	}
	r := ts.do(http.MethodDelete, url, "")
	var want []string
	for _, id := range ts.armIDs {
		for _, sid := range sids {
			want = append(want, `{"device_type":"arm3","device_id":"`+id+`","session_id":`+sid+`}`)
		}
	}
	if r.status != 200 || !jsonEqual(t, r.env["applied_to"], "["+strings.Join(want, ",")+"]") || !jsonEqual(t, r.data(), `{"scalar":0}`) {
		t.Fatalf("DELETE without session=: %v, want applied_to %v", r, want)
	}
	for _, sid := range sids {
		if got := ts.do(http.MethodGet, ts.base+"/arm3/1/config/filters/damping?session=%23"+sid, ""); !jsonEqual(t, got.data(), `{"scalar":0}`) {
			t.Fatalf("session %s after the DELETE: %v", sid, got)
		}
	}
}
