package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// recorder is a testing.TB whose Errorf is recorded instead of failing, so
// a test can show that a shared check does fail.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.errs
	r.errs = nil
	return out
}

// readRaw reads the next message of c as bytes, unchecked.
func readRaw(t *testing.T, c *wsClient) []byte {
	t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mutate decodes doc, applies f and encodes it again.
func mutate(t *testing.T, doc []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// The shared checks fail on what the service does not write: a frame,
// event or answer with a member the schema does not name (as when a field
// is added to an encoder without its schema), a missing member, or a value
// outside the tables. The same documents unchanged pass.
func TestSchemaChecksFailOnDrift(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	key := protocol.TypeArm.Key()
	c := ts.dial(t, ts.wsURL())
	inventory := readRaw(t, c)
	c.send(`{}`)
	state := readRaw(t, c)
	ev := ts.dial(t, ts.eventsWS)
	if r := ts.do("POST", ts.base+"/force_scale", `{"force_scale":0.5}`); r.status != 200 {
		t.Fatal(r)
	}
	event := readRaw(t, ev)

	rec := &recorder{TB: t}
	frames := []struct {
		name   string
		socket socketKind
		first  bool // the connection's first frame: the inventory
		doc    []byte
		change func(m map[string]any)
	}{
		{"state frame as sent", socket3x, false, state, nil},
		{"inventory as sent", socket3x, true, inventory, nil},
		{"event as sent", socketEvents, false, event, nil},
		{"extra member in an arm element", socket3x, false, state, func(m map[string]any) {
			obj(m[key].([]any)[0])["temperature"] = 21.5
		}},
		{"extra member in arm state", socket3x, false, state, func(m map[string]any) {
			obj(obj(m[key].([]any)[0])["state"])["motor_temperatures"] = map[string]any{"a0": 0, "a1": 0, "a2": 0}
		}},
		{"arm state without cursor_position", socket3x, false, state, func(m map[string]any) {
			delete(obj(obj(m[key].([]any)[0])["state"]), "cursor_position")
		}},
		{"extra member at the top of a frame", socket3x, false, state, func(m map[string]any) { m["tick"] = 1 }},
		{"unknown control mode", socket3x, false, state, func(m map[string]any) {
			obj(obj(m[key].([]any)[0])["state"])["control_mode"] = "dance"
		}},
		{"extra member in an arm's config", socket3x, true, inventory, func(m map[string]any) {
			obj(obj(m[key].([]any)[0])["config"])["serial_number"] = "SN1"
		}},
		{"inventory without config", socket3x, true, inventory, func(m map[string]any) {
			delete(obj(m[key].([]any)[0]), "config")
		}},
		{"extra data field in an event", socketEvents, false, event, func(m map[string]any) {
			obj(m["data"])["user"] = "x"
		}},
		{"event with another level", socketEvents, false, event, func(m map[string]any) { m["level"] = "info" }},
	}
	for _, tt := range frames {
		doc := tt.doc
		if tt.change != nil {
			doc = mutate(t, doc, tt.change)
		}
		fc := &wsClient{t: rec, kind: tt.socket, schema: ts.schema, frames: 2}
		if tt.first {
			fc.frames = 1
		}
		var m map[string]any
		_ = json.Unmarshal(doc, &m)
		fc.check(m, doc)
		if errs := rec.take(); (len(errs) > 0) != (tt.change != nil) {
			t.Errorf("%s: the frame check reported %q", tt.name, errs)
		}
	}

	settings := ts.do("GET", ts.base+"/settings", "")
	answers := []struct {
		name   string
		status int
		body   []byte
	}{
		{"settings as answered", 200, settings.body},
		{"extra member in the data of an answer", 200, mutate(t, settings.body, func(m map[string]any) {
			obj(obj(m["data"])["devices"])["max_force"] = 10
		})},
		{"setting out of range", 200, mutate(t, settings.body, func(m map[string]any) {
			obj(obj(m["data"])["devices"])["force_scale"] = 1.5
		})},
		{"a status the route does not declare", 201, settings.body},
		{"an error envelope whose code is not in the error table", 404, []byte(`{"ok":false,"error":"x","code":"no_such_code"}`)},
		{"an error envelope whose code belongs to another status", 404, []byte(`{"ok":false,"error":"x","code":"invalid_value"}`)},
	}
	for _, tt := range answers {
		req, _ := http.NewRequest("GET", ts.base+"/settings", nil)
		resp := &http.Response{StatusCode: tt.status, Header: http.Header{"Content-Type": {"application/json"}}}
		rts := *ts
		rts.t = rec
		rts.checkAnswer(req, resp, tt.body)
		if errs := rec.take(); (len(errs) > 0) != (tt.name != "settings as answered") {
			t.Errorf("%s: the answer check reported %q", tt.name, errs)
		}
	}
}

// The client-message schema refuses what the service answers with
// "errors" and admits what it takes (harness roundTrip checks the second
// half on every message of the suite), unknown keys included.
func TestClientMessageSchemaMatchesTheDecoder(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	arm, grip := ts.armIDs[0], ts.gripIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	tests := []struct {
		msg     string
		refused bool
	}{
		{`{}`, false},
		{`{"future_device":[{"x":1}],"session":{"future":{}}}`, false},
		{`{"arm3":[{"device_id":"` + arm + `","commands":{"set_cursor_force":{"values":{"x":0,"y":0,"z":0.1}},"future_command":{}}}]}`, false},
		{`{"arm3":[{"device_id":"` + arm + `","configure":{"filters":{"damping":{"scalar":1}},"preset":{"preset":"arm_front"}}}]}`, false},
		{`{"grip":[{"device_id":"` + grip + `","configure":{"damping":{"scalar":1}}}]}`, false},
		{`{"session":{"configure":{"basis":{"permutation":"+X-Z+Y"},"lease":{"ms":200},"profile":{"name":"co.example:a","required_version":">=3.1"}}}}`, false},
		{`{"arm3":[{"device_id":"` + arm + `","commands":{"set_cursor_force":{"vector":{"x":"1","y":0,"z":0}}}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","commands":{"set_cursor_force":{}}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","configure":{"preset":{"preset":"arm_front"},"mount":{"transform":{}}}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","configure":{"damping":{}}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","configure":{"damping":{"scalar":21}}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","configure":{"handedness":"left"}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","configure":{"mount":{"transform":{"rotation":{"w":0,"x":0,"y":0,"z":0}}}}}]}`, true},
		{`{"arm3":[{"commands":{}}]}`, true},
		{`{"arm3":{"` + arm + `":{}}}`, true},
		{`{"session":{"configure":{"lease":{"ms":5}}}}`, true},
		{`{"session":{"configure":{"basis":{"permutation":"XXY"}}}}`, true},
		{`{"session":{"set_coordinate_origin":{"coordinate_origin":"elsewhere"}}}`, true},
		{`{"keep_alive":true,"session":{"keep_alive":{}},"arm3":[{"device_id":"` + arm + `","commands":{"keep_alive":{},"set_gravity_compensation":false,"set_transform":{"position":{"x":0,"y":0,"z":0.1},"scale":null}}}]}`, false},
		{`{"arm3":[{"device_id":"` + arm + `","commands":{"set_gravity_compensation":{"enabled":true}}}]}`, false},
		{`{"arm3":[{"device_id":"` + arm + `","commands":{"set_gravity_compensation":"yes"}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","commands":{"set_transform":{"scale":{"x":0,"y":1,"z":1}}}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","commands":{"set_transform":{"scale":{"x":1e-320,"y":1,"z":1}}}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","configure":{"mount":{"transform":{"scale":{"x":1,"y":-1e308,"z":1}}}}}]}`, true},
		{`{"arm3":[{"device_id":"` + arm + `","configure":{"mount":{"transform":{"scale":{"x":1e-6,"y":-1e6,"z":1}}}}}]}`, false},
		{`[]`, true},
	}
	for _, tt := range tests {
		f := c.roundTrip(tt.msg)
		if refused := f["errors"] != nil; refused != tt.refused {
			t.Fatalf("%s: service refused=%v, want %v: %v", tt.msg, refused, tt.refused, f["errors"])
		}
		err := ts.schema.Check("client-message", []byte(tt.msg))
		if (err != nil) != tt.refused {
			t.Errorf("%s: the service refused=%v, the schema says %v", tt.msg, tt.refused, err)
		}
	}
}

// GET /openapi.json is an OpenAPI 3.1 document of every route in the route
// table, each route with an answer schema; every reference in it resolves
// and every schema in it compiles against the 2020-12 meta-schema.
func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1, aliases: "robot=arm3"})
	doc, err := ts.schema.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v", doc["openapi"])
	}
	a := &api{svc: ts.svc, codec: protocol.Codec{}, servesSchema: true}
	rs := a.routes()
	if missing := undescribed(rs); len(missing) > 0 {
		t.Errorf("routes without a routeDoc (add them in describeRoutes): %v", missing)
	}
	paths := obj(doc["paths"])
	for _, rt := range rs {
		op := obj(obj(paths[openAPIPathOf(rt.path)])[strings.ToLower(rt.method)])
		if op == nil {
			t.Errorf("%s %s is not in the OpenAPI document", rt.method, rt.path)
			continue
		}
		if obj(obj(op["responses"])["200"])["content"] == nil {
			t.Errorf("%s %s: no answer schema", rt.method, rt.path)
		}
	}
	if len(paths) < 30 {
		t.Fatalf("only %d paths", len(paths))
	}
	// Every path template's parameters are declared by each operation.
	for tmpl, item := range paths {
		for method, op := range obj(item) {
			declared := map[string]bool{}
			params, _ := obj(op)["parameters"].([]any)
			for _, p := range params {
				if obj(p)["in"] == "path" && obj(p)["required"] == true {
					declared[obj(p)["name"].(string)] = true
				}
			}
			for _, seg := range strings.Split(tmpl, "/") {
				if strings.HasPrefix(seg, "{") && !declared[strings.Trim(seg, "{}")] {
					t.Errorf("%s %s does not declare path parameter %s", method, tmpl, seg)
				}
			}
		}
	}
	// Every reference resolves.
	var refs int
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && strings.HasPrefix(ref, "#/") {
				refs++
				cur := any(doc)
				for _, tok := range strings.Split(ref[2:], "/") {
					cur = obj(cur)[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
				}
				if cur == nil {
					t.Errorf("reference %s does not resolve", ref)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	if refs < 100 {
		t.Fatalf("only %d references: the walk is not looking", refs)
	}
	// Every answer of every route compiles (which checks the schema
	// against the meta-schema and resolves its references).
	for _, rt := range rs {
		if err := ts.schema.CheckAnswer(rt.method, strings.ReplaceAll(strings.ReplaceAll(rt.path, ":id", "0"), ":name", "event"), 599, "application/json", []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "does not declare") {
			t.Errorf("%s %s: an undeclared status passed: %v", rt.method, rt.path, err)
		}
	}
	// Every published schema is listed, served and compiles.
	index := ts.do("GET", ts.base+"/schema", "")
	schemas := obj(index.env["schemas"])
	if len(schemas) < 40 {
		t.Fatalf("the index lists %d schemas: %s", len(schemas), index.body)
	}
	for name, u := range schemas {
		if u != "/schema/"+name {
			t.Errorf("%s is served at %v", name, u)
		}
		if _, err := ts.schema.Schema(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Every accepted name (aliases included) is documented: config routes
	// and message keys.
	for _, p := range []string{"/robot/{id}/config/preset", "/inverse3/{id}/config/preset", "/*inverse/{id}/config/preset", "/*verse_grip/{id}/config/basis"} {
		if paths[p] == nil {
			t.Errorf("%s is not documented", p)
		}
	}
	if err := ts.schema.Check("client-message", []byte(`{"robot":[{"device_id":"x","configure":{"handedness":"left"}}]}`)); err == nil {
		t.Errorf("the client-message schema does not check entries under the alias")
	}
}

// Frame schemas follow the names the service writes (--type-names): the
// product names by default, the reference's with --type-names reference.
func TestFrameSchemaFollowsTypeNames(t *testing.T) {
	for _, tt := range []struct {
		haply       bool
		want, never []string
	}{
		{true, []string{"inverse3", "wireless_verse_grip", "verse_grip"}, []string{"arm3", "grip"}},
		{false, []string{"arm3", "grip"}, []string{"inverse3", "wireless_verse_grip"}},
	} {
		ts := startService(t, serviceConfig{arms: 1, grips: 1, haplyNames: tt.haply})
		c := ts.dial(t, ts.wsURL())
		inv := c.expect() // validated as the inventory by the harness
		c.roundTrip(`{"session":{"force_render_full_state":{}}}`)
		c.roundTrip(`{}`)
		// Answers under the names and the family selectors validate too
		// (the harness checks each against the OpenAPI document).
		for _, q := range []struct{ method, url, body string }{
			{"GET", "/devices", ""},
			{"GET", "/*inverse/0/config/handedness", ""},
			{"POST", "/*verse_grip/*/config/basis?session=:0", `{"permutation":"XZY"}`},
		} {
			if r := ts.do(q.method, ts.base+q.url, q.body); r.status != 200 {
				t.Fatalf("%s %s: %v", q.method, q.url, r)
			}
		}
		props := ts.do("GET", ts.base+"/schema/inventory-frame", "").env["properties"].(map[string]any)
		for _, k := range tt.want {
			if props[k] == nil || inv[k] == nil {
				t.Errorf("haply=%v: %s: in schema %v, in inventory %v", tt.haply, k, props[k] != nil, inv[k] != nil)
			}
		}
		for _, k := range tt.never {
			if props[k] != nil || inv[k] != nil {
				t.Errorf("haply=%v: %s is written", tt.haply, k)
			}
		}
	}
}

// The schema endpoints are only on the 3.x listener (the schema covers 3.1
// payloads and later), behind the same browser guard as every route.
func TestSchemaEndpoints(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	tests := []struct {
		url     string
		headers []string
		status  int
		code    string
	}{
		{ts.base + "/schema", nil, 200, ""},
		{ts.base + "/schema/client-message", nil, 200, ""},
		{ts.base + "/openapi.json", nil, 200, ""},
		{ts.base + "/schema/no-such-schema", nil, 404, "unknown_route"},
		{ts.legacy + "/3.0/schema", nil, 404, "unknown_route"},
		{ts.legacy + "/3.0/openapi.json", nil, 404, "unknown_route"},
		{ts.base + "/openapi.json", []string{"Origin", "http://evil.example"}, 403, "forbidden_origin"},
		{ts.base + "/schema/event", []string{"Host", "evil.example"}, 403, "forbidden_host"},
	}
	for _, tt := range tests {
		r := ts.do("GET", tt.url, "", tt.headers...)
		if r.status != tt.status || (tt.code != "" && r.env["code"] != tt.code) {
			t.Errorf("GET %s %v: %v", tt.url, tt.headers, r)
		}
	}
	r := ts.do("GET", ts.base+"/schema/client-message", "")
	if r.env["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("client-message: $schema = %v", r.env["$schema"])
	}
}

// docSchemaName is a schema name docs/protocol.md gives a client to fetch:
// after "schema" or "Schemas:", a run of backticked names (a parenthesis
// between two of them is prose), or a GET /schema/NAME; and every name of
// the "Main names" paragraph that is not a template (entry.<key>).
var (
	docSchemaRun  = regexp.MustCompile("(?i)\\bschemas?:?\\s+((?:`[a-z][a-z0-9.\\-]*`(?:\\s*\\([^)]*\\))?(?:,\\s*)?)+)")
	docSchemaGET  = regexp.MustCompile("GET /schema/([a-z][a-z0-9.\\-]*)")
	docSchemaTick = regexp.MustCompile("`([a-z][a-z0-9.\\-]*)`")
	docParens     = regexp.MustCompile(`\([^)]*\)`)
)

// TestEverySchemaTheDocsNameIsServed: each schema name docs/protocol.md
// points a client to answers GET /schema/NAME with a document, not 404.
func TestEverySchemaTheDocsNameIsServed(t *testing.T) {
	raw, err := os.ReadFile("../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	names := map[string]bool{}
	for _, m := range docSchemaRun.FindAllStringSubmatch(doc, -1) {
		for _, n := range docSchemaTick.FindAllStringSubmatch(docParens.ReplaceAllString(m[1], ""), -1) {
			names[n[1]] = true
		}
	}
	for _, m := range docSchemaGET.FindAllStringSubmatch(doc, -1) {
		names[m[1]] = true
	}
	main := doc[strings.Index(doc, "- Main names:"):]
	main = main[:strings.Index(main, "\n- ")]
	for _, n := range docSchemaTick.FindAllStringSubmatch(main, -1) {
		names[n[1]] = true
	}
	if len(names) < 20 || !names["arm-state.passivity"] || !names["navigation-view"] || !names["stats"] {
		t.Fatalf("the docs' schema names were not all found: %v", names)
	}
	ts := startService(t, serviceConfig{arms: 1})
	for name := range names {
		if r := ts.do(http.MethodGet, ts.base+"/schema/"+name, ""); r.status != http.StatusOK {
			t.Errorf("docs/protocol.md names the schema %q; GET /schema/%s: %v", name, name, r)
		}
	}
}
