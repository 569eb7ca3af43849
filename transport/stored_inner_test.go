package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
)

// insertInside writes member (`"name": value`) first into the object at
// path (member names, outermost first) of the stored document file, as a
// newer build whose entry there has a field this build does not know
// would have it. The store writes documents indented, each name once on
// the way down, so the text is walked name by name.
func insertInside(t *testing.T, file, member string, path ...string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	at := 0
	for _, name := range path {
		i := strings.Index(s[at:], `"`+name+`":`)
		if i < 0 {
			t.Fatalf("%s has no %s on the way to %v:\n%s", file, name, path, s)
		}
		at += i
	}
	open := at + strings.IndexByte(s[at:], '{')
	s = s[:open+1] + member + "," + s[open+1:]
	if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// memberAt is the value text the stored document file has at path, and
// how many times its last name is in its object; nil and 0 when it has
// none.
func memberAt(t *testing.T, file string, path ...string) (json.RawMessage, int) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	obj := json.RawMessage(b)
	for i, name := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(obj, &m); err != nil {
			t.Fatalf("%s at %v: %v\n%s", file, path[:i], err, b)
		}
		if i == len(path)-1 {
			if m[name] == nil {
				return nil, 0
			}
			return m[name], strings.Count(string(obj), `"`+name+`":`)
		}
		obj = m[name]
	}
	return nil, 0
}

// A newer build's field inside an entry this build knows (force_clamp's
// "mode", a field of damping, of navigation's bubble centre, of the
// profile's basis) is kept, its value's text as the file has it, over a
// change of another entry of the document; a change of that entry (a
// POST, even of the value in force, a DELETE, a WebSocket change) sets it
// anew, whole, as the wire does (members left out take their defaults),
// and the field goes with the value it was part of. The value in force is
// the file's all along. On main the field was gone at the document's next
// write, whichever entry it changed.
func TestStoredFieldInsideAnEntryFollowsItsEntry(t *testing.T) {
	const profile = "lab:inner"
	const field = "future_field"
	type write func(t *testing.T, ts *testService, c *wsClient, id string)
	post := func(route, body string) write {
		return func(t *testing.T, ts *testService, _ *wsClient, id string) {
			t.Helper()
			if r := ts.do(http.MethodPost, ts.base+"/arm3/"+id+"/config/"+route, body); r.status != 200 {
				t.Fatalf("POST %s: %v", route, r)
			}
		}
	}
	// postInForce POSTs back what a GET of the entry answers.
	postInForce := func(route string) write {
		return func(t *testing.T, ts *testService, _ *wsClient, id string) {
			t.Helper()
			r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+route, "")
			b, _ := json.Marshal(r.data())
			if r.status != 200 {
				t.Fatalf("GET %s: %v", route, r)
			}
			post(route, string(b))(t, ts, nil, id)
		}
	}
	del := func(route string) write {
		return func(t *testing.T, ts *testService, _ *wsClient, id string) {
			t.Helper()
			if r := ts.do(http.MethodDelete, ts.base+"/arm3/"+id+"/config/"+route, ""); r.status != 200 {
				t.Fatalf("DELETE %s: %v", route, r)
			}
		}
	}
	configure := func(format string) write {
		return func(t *testing.T, _ *testService, c *wsClient, id string) {
			t.Helper()
			msg := format
			if strings.Contains(format, "%q") {
				msg = fmt.Sprintf(format, id)
			}
			if f := c.roundTrip(msg); f["errors"] != nil {
				t.Fatalf("configure %s: %v", msg, f["errors"])
			}
		}
	}
	type change struct {
		name  string
		write write
		keeps bool // the field is still there after it
	}
	for _, tc := range []struct {
		name string
		kind string   // which stored document
		in   []string // the object the field is in
		// route: the entry's GET, whose value must be the file's before
		// and after a change of another entry.
		route   string
		changes []change
	}{
		{"device force_clamp", "device", []string{"force_clamp"}, "passivity/force_clamp", []change{
			{"POST of another entry", post("handedness", `"right"`), true},
			{"POST of the entry, the value in force", postInForce("passivity/force_clamp"), false},
			{"POST of the entry, another value", post("passivity/force_clamp", `{"max_force": 0}`), false},
			{"DELETE of the entry", del("passivity/force_clamp"), false},
		}},
		{"profile damping", "profile device", []string{"damping"}, "filters/damping?session=" + profile, []change{
			{"POST of another entry", post("filters/force_gate?session="+profile, `{"gain": 0.5}`), true},
			{"configure of another entry", configure(`{"arm3":[{"device_id":%q,"configure":{"force_gate":{"gain":0.6}}}]}`), true},
			{"POST of the entry, the value in force", postInForce("filters/damping?session=" + profile), false},
			{"configure of the entry", configure(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":8}}}]}`), false},
			{"DELETE of the entry", del("filters/damping?session=" + profile), false},
		}},
		{"profile navigation's bubble centre", "profile device", []string{"navigation", "bubble", "center"}, "navigation?session=" + profile, []change{
			{"POST of another entry", post("filters/damping?session="+profile, `{"scalar": 9}`), true},
			{"POST of the entry", post("navigation?session="+profile, `{"mode": "bubble"}`), false},
		}},
		{"profile session level basis", "profile session", []string{"basis"}, "", []change{
			{"configure of another member", configure(`{"session":{"configure":{"lease":{"ms":400}}}}`), true},
			{"configure of the basis", configure(`{"session":{"configure":{"basis":{"permutation":"ZYX"}}}}`), false},
		}},
	} {
		for _, ch := range tc.changes {
			t.Run(tc.name+", "+ch.name, func(t *testing.T) {
				dir := t.TempDir()
				id, files := storedDocs(t, dir, profile)
				file := files[tc.kind]
				stored, _ := memberAt(t, file, tc.in[0])
				insertInside(t, file, `"`+field+`": `+unknownRaw, tc.in...)
				at := append(tc.in[:len(tc.in):len(tc.in)], field)

				ts := startService(t, serviceConfig{arms: 1, dir: dir})
				c := ts.dial(t, ts.wsURL())
				c.expect()
				if f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)); f["errors"] != nil {
					t.Fatalf("pick: %v", f["errors"])
				}
				var before any
				if tc.route != "" {
					r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+tc.route, "")
					if r.status != 200 || !jsonEqual(t, path(r.data(), "config"), string(stored)) && !jsonEqual(t, r.data(), string(stored)) {
						t.Fatalf("GET %s with the field in the file: %v, want the file's %s", tc.route, r, stored)
					}
					before = r.data()
				}
				ch.write(t, ts, c, id)
				if tc.route != "" && ch.keeps {
					r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+tc.route, "")
					b, _ := json.Marshal(before)
					if !jsonEqual(t, r.data(), string(b)) {
						t.Errorf("GET %s after a change of another entry: %v, want %s as before", tc.route, r.data(), b)
					}
				}
				_ = c.conn.Close()
				ts.stop()

				check := func(when string) {
					t.Helper()
					got, n := memberAt(t, file, at...)
					b, _ := os.ReadFile(file)
					switch {
					case ch.keeps && (string(got) != unknownRaw || n != 1):
						t.Errorf("%s after %s: %q (%d times), want %q once, its text as it was; the file:\n%s", strings.Join(at, "/"), when, got, n, unknownRaw, b)
					case !ch.keeps && got != nil:
						t.Errorf("%s after %s: %q, want it gone with the value it was part of; the file:\n%s", strings.Join(at, "/"), when, got, b)
					}
				}
				check("a " + ch.name)
				if !ch.keeps || t.Failed() {
					return
				}
				// The next start reads it where the write put it, and
				// writes it back there again.
				ts = startService(t, serviceConfig{arms: 1, dir: dir})
				c = ts.dial(t, ts.wsURL())
				c.expect()
				c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile))
				ch.write(t, ts, c, id)
				_ = c.conn.Close()
				ts.stop()
				check("a second start and " + ch.name)
			})
		}
	}
}
