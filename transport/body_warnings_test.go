package transport

import (
	"fmt"
	"strings"
	"testing"
)

// answerWarnings returns the "warnings" list of an HTTP answer, nil when it
// has none.
func answerWarnings(r reply) []map[string]any {
	list, _ := r.env["warnings"].([]any)
	out := make([]map[string]any, 0, len(list))
	for _, w := range list {
		m, _ := w.(map[string]any)
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// A POST body with a member its route does not read (a typo such as
// "bubbel") is applied without it, as a WebSocket configure value is, and
// the answer says so the way the frame does: an unknown_field warning at
// the member's path in the body, with the frame's message. Before, HTTP
// dropped the member silently: "bubbel" turned the default bubble on and
// the user never knew. A clean body's answer has no "warnings" member. The
// same holds for every POST that decodes a body: config entries
// (session-scoped and device-global), settings and the deprecated routes,
// on both listeners.
func TestPOSTBodyWithUnknownMembersIsAnsweredWithWarnings(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	if f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"co.example.warn"}}}}`); f["errors"] != nil {
		t.Fatalf("profile: %v", f["errors"])
	}
	manyUnknown := func() string {
		var b strings.Builder
		b.WriteString(`{"scalar":2`)
		for i := range 40 {
			fmt.Fprintf(&b, `,"extra%d":%d`, i, i)
		}
		return b.String() + "}"
	}()
	cases := []struct {
		name  string
		route string // under the listener's base; {id} is the arm's id
		body  string
		// wsKey, when set, is the configure key the same value is sent
		// under over WebSocket, whose frame must warn alike.
		wsKey string
		// paths are the warnings' paths into the body, in order ("" for
		// the warnings_dropped entry, which has none).
		paths []string
		get   string // a GET that reads what is in force
		want  string // its data: the body applied without the unknown members
	}{
		{"navigation typo", "/arm3/0/config/navigation?session=:-1", `{"mode":"bubble","bubbel":{"max_speed":0.2}}`, "navigation",
			[]string{"bubbel"}, "", ""},
		{"navigation nested", "/arm3/0/config/navigation?session=:-1", `{"mode":"bubble","bubble":{"max_speed":0.2,"center":{"mode":"cursor","drift":1}}}`, "navigation",
			[]string{"bubble.center.drift"}, "", ""},
		{"damping", "/arm3/0/config/filters/damping?session=:-1", `{"scalar":2,"vectr":{"x":1,"y":1,"z":1}}`, "damping",
			[]string{"vectr"}, "/arm3/0/config/filters/damping?session=:-1", `{"scalar":2}`},
		{"mount", "/arm3/0/config/mount?session=:-1", `{"transform":{"positon":{"x":1,"y":0,"z":0}}}`, "mount",
			[]string{"transform.positon"}, "", ""},
		{"force_gate", "/arm3/0/config/filters/force_gate?session=:-1", `{"gain":0.5,"gian":0.9}`, "force_gate",
			[]string{"gian"}, "/arm3/0/config/filters/force_gate?session=:-1", `{"gain":0.5}`},
		{"device-global", "/arm3/0/config/gravity_compensation", `{"enabled":true,"scaling_factor":1.5,"scalling_factor":0.5}`, "",
			[]string{"scalling_factor"}, "/arm3/0/config/gravity_compensation", `{"enabled":true,"scaling_factor":1.5}`},
		{"passivity", "/arm3/0/config/passivity/force_clamp", `{"max_force":5,"max_forse":3}`, "",
			[]string{"max_forse"}, "/arm3/0/config/passivity/force_clamp", `{"max_force":5}`},
		{"setting", "/settings/devices/force_scale", `{"value":0.5,"vlaue":0.25}`, "",
			[]string{"vlaue"}, "/settings/devices/force_scale", `0.5`},
		{"deprecated route", "/gravity_compensation", `{"device_id":"{id}","enable":false,"gravity_scaling_factor":0.75,"gravity_scalling":2}`, "",
			[]string{"gravity_scalling"}, "/arm3/0/config/gravity_compensation", `{"enabled":false,"scaling_factor":0.75}`},
		{"deprecated setting", "/force_scale", `{"force_scale":0.75,"scale":1}`, "",
			[]string{"scale"}, "/settings/devices/force_scale", `0.75`},
		{"clean body", "/arm3/0/config/filters/damping?session=:-1", `{"scalar":3}`, "damping",
			nil, "/arm3/0/config/filters/damping?session=:-1", `{"scalar":3}`},
		{"past the cap", "/arm3/0/config/filters/damping?session=:-1", manyUnknown, "damping",
			append(func() (p []string) {
				for i := range 32 {
					p = append(p, fmt.Sprintf("extra%d", i))
				}
				return p
			}(), ""), "/arm3/0/config/filters/damping?session=:-1", `{"scalar":2}`},
	}
	for _, base := range []struct{ name, url string }{{"3.x", ts.base}, {"3.0", ts.legacy + "/3.0"}} {
		for _, tc := range cases {
			t.Run(base.name+"/"+tc.name, func(t *testing.T) {
				body := strings.ReplaceAll(tc.body, "{id}", id)
				r := ts.do("POST", base.url+tc.route, body)
				if r.status != 200 {
					t.Fatalf("POST %s: %v", tc.route, r)
				}
				got := answerWarnings(r)
				if len(got) != len(tc.paths) {
					t.Fatalf("POST %s %s: %d warnings, want %d: %s", tc.route, body, len(got), len(tc.paths), r.body)
				}
				for i, w := range got {
					code := "unknown_field"
					if tc.paths[i] == "" {
						code = "warnings_dropped"
					}
					if w["code"] != code || fmt.Sprint(w["path"]) != tc.paths[i] && !(tc.paths[i] == "" && w["path"] == nil) {
						t.Errorf("warning %d: %v, want code %s at %q", i, w, code, tc.paths[i])
					}
					if msg, _ := w["message"].(string); code == "unknown_field" && !strings.Contains(msg, "ignored") {
						t.Errorf("warning %d: message %q does not say the member was ignored", i, msg)
					}
				}
				if tc.get != "" {
					if g := ts.do("GET", base.url+tc.get, ""); !jsonEqual(t, g.data(), tc.want) {
						t.Errorf("GET %s after the POST: %v, want %s", tc.get, g, tc.want)
					}
				}
				if tc.wsKey == "" || base.name != "3.x" {
					return
				}
				// The same value over WebSocket: the frame warns alike, at
				// the same member under the entry's path in the message.
				f := c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{%q:%s}}]}`, id, tc.wsKey, body))
				if f["errors"] != nil {
					t.Fatalf("configure.%s: %v", tc.wsKey, f["errors"])
				}
				framed, _ := f["warnings"].([]any)
				if len(framed) != len(got) {
					t.Fatalf("the frame has %d warnings, the HTTP answer %d: %v", len(framed), len(got), framed)
				}
				for i, fw := range framed {
					fw := fw.(map[string]any)
					wantPath := "arm3[0].configure." + tc.wsKey
					if p, _ := got[i]["path"].(string); p != "" {
						wantPath += "." + p
					}
					if got[i]["code"] == "warnings_dropped" {
						wantPath = ""
					}
					if fw["code"] != got[i]["code"] || fmt.Sprint(fw["path"]) != wantPath && wantPath != "" {
						t.Errorf("frame warning %d %v, HTTP warning %v", i, fw, got[i])
					}
					if fw["code"] == "unknown_field" && fw["message"] != got[i]["message"] {
						t.Errorf("frame warning %d says %q, the HTTP answer %q", i, fw["message"], got[i]["message"])
					}
				}
			})
		}
	}
}
