package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// declaredEffects is GET /{type}/{id}/effects without what the loop changes
// tick by tick (the force rendered, the time left), so two reads compare equal
// exactly when the declarations in force are the same.
func declaredEffects(t *testing.T, ts *testService, id string) string {
	t.Helper()
	r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/effects", "")
	if r.status != http.StatusOK {
		t.Fatalf("GET effects: %v", r)
	}
	list, _ := path(r.data(), "effects").([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			delete(m, "rendered_force")
			delete(m, "remaining_ms")
		}
	}
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatalf("marshal effects: %v", err)
	}
	return string(b)
}

// hostileSpring is a valid spring with one member replaced by raw JSON.
func hostileSpring(member, raw string) string {
	m := map[string]string{
		"id": `"h"`, "type": `"spring"`, "position": `{"x":0.01,"y":0,"z":0}`, "stiffness": "400", "damping": "5",
	}
	m[member] = raw
	var parts []string
	for _, k := range []string{"id", "type", "position", "stiffness", "damping", "ttl_ms"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%q:%s", k, v))
		}
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Every malformed or out-of-bounds effect declaration a careless or hostile
// client can send over the WebSocket gets an error entry naming what is wrong,
// and leaves the effects in force exactly as they were (issue 22).
func TestHostileEffectDeclarationsChangeNothing(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	if f := c.roundTrip(effectsMsg(id, `{"set":[`+springAt("keep", 0.01)+`]}`)); effectCount(f) != 1 || f["errors"] != nil {
		t.Fatalf("setup: %v", f)
	}
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = springAt(fmt.Sprintf("ok%d", i), 0.01)
	}
	huge := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	// want is a substring the first error's message or path must contain: the field
	// or the reason, so the client knows what to fix.
	cases := []struct{ name, effects, want string }{
		{"stiffness NaN as string", `{"set":[` + hostileSpring("stiffness", `"NaN"`) + `]}`, "stiffness"},
		{"stiffness 1e308", `{"set":[` + hostileSpring("stiffness", `1e308`) + `]}`, "stiffness"},
		{"stiffness overflowing float", `{"set":[` + hostileSpring("stiffness", `1e400`) + `]}`, "stiffness"},
		{"stiffness negative", `{"set":[` + hostileSpring("stiffness", `-1`) + `]}`, "stiffness"},
		{"stiffness negative denormal", `{"set":[` + hostileSpring("stiffness", `-5e-324`) + `]}`, "stiffness"},
		{"damping negative", `{"set":[` + hostileSpring("damping", `-0.5`) + `]}`, "damping"},
		{"damping 1e308", `{"set":[` + hostileSpring("damping", `1e308`) + `]}`, "damping"},
		{"anchor 1e308", `{"set":[` + hostileSpring("position", `{"x":1e308,"y":0,"z":0}`) + `]}`, "position"},
		{"anchor overflowing", `{"set":[` + hostileSpring("position", `{"x":0,"y":-1e999,"z":0}`) + `]}`, "position"},
		{"anchor missing axis", `{"set":[` + hostileSpring("position", `{"x":0,"y":0}`) + `]}`, "z"},
		{"anchor not an object", `{"set":[` + hostileSpring("position", `[0,0,0]`) + `]}`, "position"},
		{"ttl zero", `{"set":[` + hostileSpring("ttl_ms", `0`) + `]}`, "ttl_ms"},
		{"ttl negative", `{"set":[` + hostileSpring("ttl_ms", `-1`) + `]}`, "ttl_ms"},
		{"ttl overflowing ns", `{"set":[` + hostileSpring("ttl_ms", `9223372036854775807`) + `]}`, "ttl_ms"},
		{"ttl past int64", `{"set":[` + hostileSpring("ttl_ms", `1e30`) + `]}`, "ttl_ms"},
		{"ttl fractional", `{"set":[` + hostileSpring("ttl_ms", `1.5`) + `]}`, "ttl_ms"},
		{"id empty", `{"set":[` + hostileSpring("id", `""`) + `]}`, "id"},
		{"id 65 bytes", `{"set":[` + hostileSpring("id", `"`+strings.Repeat("x", 65)+`"`) + `]}`, "id"},
		{"id not a string", `{"set":[` + hostileSpring("id", `7`) + `]}`, "id"},
		{"id twice in one set", `{"set":[` + springAt("d", 0.01) + `,` + springAt("d", 0.02) + `]}`, "d"},
		{"unknown kind", `{"set":[{"id":"u","type":"tractor_beam"}]}`, "tractor_beam"},
		{"damper negative", `{"set":[{"id":"u","type":"damper","scalar":-1}]}`, "scalar"},
		{"friction negative", `{"set":[{"id":"u","type":"friction","force":-0.4}]}`, "force"},
		{"sphere radius negative", `{"set":[{"id":"u","type":"limit_sphere","center":{"x":0,"y":0,"z":0},"radius":-0.1,"stiffness":100}]}`, "radius"},
		{"sphere radius 1e308", `{"set":[{"id":"u","type":"limit_sphere","center":{"x":0,"y":0,"z":0},"radius":1e308,"stiffness":100}]}`, "radius"},
		{"vibration frequency 1e308", `{"set":[{"id":"u","type":"vibration","frequency":1e308,"amplitude":0.3}]}`, "frequency"},
		{"vibration amplitude negative", `{"set":[{"id":"u","type":"vibration","frequency":100,"amplitude":-0.3}]}`, "amplitude"},
		{"vibration duration overflowing", `{"set":[{"id":"u","type":"vibration","frequency":100,"amplitude":0.3,"duration_ms":1e19}]}`, "duration_ms"},
		{"field radius negative", `{"set":[{"id":"u","type":"field","force":{"x":1,"y":0,"z":0},"origin":{"x":0,"y":0,"z":0},"radius":-1}]}`, "radius"},
		{"field jacobian 1e308", `{"set":[{"id":"u","type":"field","force":{"x":0,"y":0,"z":0},"jacobian":[[1e308,0,0],[0,0,0],[0,0,0]],"origin":{"x":0,"y":0,"z":0},"radius":0.1}]}`, "jacobian"},
		{"field jacobian short row", `{"set":[{"id":"u","type":"field","force":{"x":0,"y":0,"z":0},"jacobian":[[1,0],[0,0,0],[0,0,0]],"origin":{"x":0,"y":0,"z":0},"radius":0.1}]}`, "jacobian"},
		{"field jacobian four rows", `{"set":[{"id":"u","type":"field","force":{"x":0,"y":0,"z":0},"jacobian":[[0,0,0],[0,0,0],[0,0,0],[0,0,0]],"origin":{"x":0,"y":0,"z":0},"radius":0.1}]}`, "jacobian"},
		{"field valid_ms negative", `{"set":[{"id":"u","type":"field","force":{"x":1,"y":0,"z":0},"origin":{"x":0,"y":0,"z":0},"radius":1,"valid_ms":-5}]}`, "valid_ms"},
		{"ten good and one bad", `{"set":[` + strings.Join(ten, ",") + `,{"id":"bad","type":"damper","scalar":-1}]}`, "set[10].scalar"},
		{"seventeen at once", `{"set":[` + strings.Join(append(ten, ten[:7]...), ",") + `]}`, "16"},
		{"remove not a list", `{"remove":"keep"}`, "remove"},
		{"clear not a boolean", `{"clear":"yes"}`, "clear"},
		{"deeply nested", `{"set":[{"id":"n","type":"damper","scalar":` + huge + `}]}`, ""},
		{"set not a list", `{"set":{"id":"x"}}`, "set"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := declaredEffects(t, ts, id)
			f := c.roundTrip(effectsMsg(id, tc.effects))
			errs, _ := f["errors"].([]any)
			if len(errs) == 0 {
				t.Fatalf("accepted: warnings %v, effects %v", f["warnings"], path(f, "arm3", 0, "state", "effects"))
			}
			msg, _ := path(errs[0], "message").(string)
			at, _ := path(errs[0], "path").(string)
			if msg == "" || !strings.Contains(msg+" "+at, tc.want) {
				t.Fatalf("error %v does not name %q", errs[0], tc.want)
			}
			if n := effectCount(f); n != 1 {
				t.Fatalf("a refused declaration changed the effects in force: count %v", n)
			}
			if after := declaredEffects(t, ts, id); after != before {
				t.Fatalf("effects changed:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}
