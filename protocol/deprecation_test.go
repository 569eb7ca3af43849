package protocol

import (
	"strings"
	"testing"
)

func TestDeprecatedRoutesTranslate(t *testing.T) {
	routes := DeprecatedRoutes()
	if len(routes) != 7 {
		t.Fatalf("%d deprecated routes, want 7", len(routes))
	}
	tests := []struct {
		path     string
		body     string
		deviceID string
		want     string // replacement body
	}{
		{"/force_scale", `{"force_scale":0.5}`, "", `{"value":0.5}`},
		{"/gravity_compensation", `{"device_id":"049D","enable":true,"gravity_scaling_factor":0.5}`, "049D", `{"enabled":true,"scaling_factor":0.5}`},
		{"/torque_scaling", `{"device_id":"049D","enable":false}`, "049D", `{"enabled":false}`},
		{"/device_handedness", `{"device_id":"049D","handedness":"left"}`, "049D", `{"handedness":"left"}`},
		{"/serial_enable", `{"enable":false}`, "", `{"value":false}`},
		{"/experimental/features/grip_dropped_simulation_stopper", `{"enable":true}`, "", `{"value":true}`},
		{"/experimental/features/screensaver_enable", `{"enable":true, "extra": 1}`, "", `{"value":true}`},
	}
	for i, tt := range tests {
		r, ok := LookupDeprecatedRoute("POST", tt.path)
		if !ok || r != routes[i] {
			t.Fatalf("LookupDeprecatedRoute(%s) = %+v %v", tt.path, r, ok)
		}
		req, err := r.Translate([]byte(tt.body))
		if err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if req.DeviceID != tt.deviceID || string(req.Body) != tt.want {
			t.Errorf("%s: %q %s, want %q %s", tt.path, req.DeviceID, req.Body, tt.deviceID, tt.want)
		}
		// The example body in the table translates too, and the result
		// is a valid body for the replacement.
		req, err = r.Translate([]byte(r.LegacyBody))
		if err != nil {
			t.Fatalf("%s example: %v", tt.path, err)
		}
		if r.Setting != 0 {
			if _, err := DecodeSetting(r.Setting, req.Body); err != nil || r.Key != 0 {
				t.Errorf("%s: %v", tt.path, err)
			}
			if !strings.HasSuffix(r.Replacement, r.Setting.Path()) {
				t.Errorf("%s: replacement %s does not name %s", tt.path, r.Replacement, r.Setting.Path())
			}
		} else {
			if _, err := DecodeEntry(r.Key, req.Body, ""); err != nil || r.Key.SessionScoped() {
				t.Errorf("%s: %v", tt.path, err)
			}
			if got := r.ReplacementFor("arm3", "049D"); got != "/arm3/049D/config/"+r.Key.Path() {
				t.Errorf("ReplacementFor = %s", got)
			}
		}
	}
}

func TestDeprecatedRoutesReject(t *testing.T) {
	tests := []struct {
		path, body string
		code       Code
		at         string
	}{
		{"/gravity_compensation", `{"enable":true,"gravity_scaling_factor":0.5}`, CodeInvalidValue, "device_id"},
		{"/gravity_compensation", `{"device_id":49,"enable":true,"gravity_scaling_factor":0.5}`, CodeInvalidValue, "device_id"},
		{"/gravity_compensation", `{"device_id":"049D","enable":"yes","gravity_scaling_factor":0.5}`, CodeInvalidValue, "enable"},
		{"/gravity_compensation", `{"device_id":"049D","enable":true,"gravity_scaling_factor":3}`, CodeOutOfRange, "gravity_scaling_factor"},
		{"/gravity_compensation", `{"device_id":"049D","enable":true}`, CodeInvalidValue, "gravity_scaling_factor"},
		{"/torque_scaling", `{"device_id":"049D"}`, CodeInvalidValue, "enable"},
		{"/device_handedness", `{"device_id":"049D","handedness":"ambidextrous"}`, CodeInvalidValue, "handedness"},
		{"/force_scale", `{"force_scale":"0.5"}`, CodeInvalidValue, "force_scale"},
		{"/force_scale", `{"force_scale":2}`, CodeOutOfRange, "force_scale"},
		{"/serial_enable", `{"enable":1}`, CodeInvalidValue, "enable"},
		{"/serial_enable", `true`, CodeInvalidValue, ""},
		{"/serial_enable", `{enable}`, CodeInvalidJSON, ""},
	}
	for _, tt := range tests {
		r, _ := LookupDeprecatedRoute("POST", tt.path)
		_, err := r.Translate([]byte(tt.body))
		if err == nil || err.Code != tt.code || err.Path != tt.at {
			t.Errorf("%s %s: %+v, want %s at %q", tt.path, tt.body, err, tt.code, tt.at)
			continue
		}
		// The message names no member the client did not send (it said
		// "scaling_factor 3 is out of range" for gravity_scaling_factor).
		if tt.at == "gravity_scaling_factor" && strings.Contains(strings.ReplaceAll(err.Message, "gravity_scaling_factor", ""), "scaling_factor") {
			t.Errorf("%s %s: %q names the replacement's member, not the client's %s", tt.path, tt.body, err.Message, tt.at)
		}
	}
	if _, ok := LookupDeprecatedRoute("GET", "/force_scale"); ok {
		t.Error("GET /force_scale is not a deprecated route")
	}
}

func TestDeprecatedCommandsAndMarkdown(t *testing.T) {
	cmds := DeprecatedCommands()
	if len(cmds) != 2 || cmds[0].Name != CommandSetCoordinateOrigin || cmds[1].Name != CommandSetBasis {
		t.Fatalf("%+v", cmds)
	}
	for origin, preset := range map[string]string{"device_base": "arm_front", "workspace_center": "arm_front_centered"} {
		if got, ok := CoordinateOriginPreset(origin); !ok || got != preset {
			t.Errorf("CoordinateOriginPreset(%s) = %s %v", origin, got, ok)
		}
	}
	if _, ok := CoordinateOriginPreset("ceiling"); ok {
		t.Error("unknown origin accepted")
	}
	md := DeprecationMarkdown()
	for _, r := range DeprecatedRoutes() {
		if !strings.Contains(md, "`POST "+r.Path+"`") || !strings.Contains(md, r.Replacement) {
			t.Errorf("markdown misses %s", r.Path)
		}
	}
	for _, c := range cmds {
		if !strings.Contains(md, c.Name) {
			t.Errorf("markdown misses %s", c.Name)
		}
	}
	if md != DeprecationMarkdown() {
		t.Error("markdown is not deterministic")
	}
	// The tables are copies: changing them changes nothing.
	routes := DeprecatedRoutes()
	routes[0].Path = "/changed"
	if DeprecatedRoutes()[0].Path != "/force_scale" {
		t.Error("DeprecatedRoutes exposes the table")
	}
}

func TestLookupDeprecatedCommandFindsEveryRow(t *testing.T) {
	for _, c := range DeprecatedCommands() {
		got, ok := LookupDeprecatedCommand(c.Name)
		if !ok || got != c {
			t.Errorf("LookupDeprecatedCommand(%q) = %+v, %v; want %+v", c.Name, got, ok, c)
		}
	}
	if _, ok := LookupDeprecatedCommand("session.configure"); ok {
		t.Error("a current command was found as deprecated")
	}
}

// A legacy body that is not an object names the body's expected shape; one
// that is not JSON says so.
func TestTranslateRejectsNonObjectBodies(t *testing.T) {
	for _, r := range DeprecatedRoutes() {
		_, err := r.Translate([]byte(`[1]`))
		if err == nil || err.Code != CodeInvalidValue || err.Message != "the body must be a JSON object like "+r.LegacyBody {
			t.Errorf("%s [1]: %v", r.Path, err)
		}
		_, err = r.Translate([]byte(`{`))
		if err == nil || err.Code != CodeInvalidJSON {
			t.Errorf("%s {: %v", r.Path, err)
		}
	}
}
