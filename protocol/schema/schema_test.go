package schema

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

func mustDoc(t *testing.T, s *Set, name string) Schema {
	t.Helper()
	d, err := s.Document(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// dig follows property names through "properties" (and $refs into $defs).
func dig(t *testing.T, doc Schema, names ...string) Schema {
	t.Helper()
	cur := doc
	for _, n := range names {
		if ref, ok := cur["$ref"].(string); ok {
			cur = doc["$defs"].(Schema)[strings.TrimPrefix(ref, defsPrefix)].(Schema)
		}
		if any, ok := cur["anyOf"].([]any); ok { // orNull: the non-null branch
			cur = any[0].(Schema)
			if ref, ok := cur["$ref"].(string); ok {
				cur = doc["$defs"].(Schema)[strings.TrimPrefix(ref, defsPrefix)].(Schema)
			}
		}
		props, ok := cur["properties"].(Schema)
		if !ok {
			t.Fatalf("%v: no properties at %s", names, n)
		}
		next, ok := props[n].(Schema)
		if !ok {
			t.Fatalf("%v: no property %s", names, n)
		}
		cur = next
	}
	return cur
}

func TestEveryStateCommandHasASchema(t *testing.T) {
	for _, c := range protocol.StateCommands() {
		if _, ok := stateCommandBody(c.Name); !ok {
			t.Errorf("state command %s has no body schema in stateCommandBody", c.Name)
		}
	}
}

func TestEveryEventFieldHasAType(t *testing.T) {
	o := Options{}
	for _, k := range event.Kinds() {
		for _, f := range k.Fields {
			if _, ok := eventField(f, &o); !ok {
				t.Errorf("event %s: field %s has no type in eventField", k.Name, f)
			}
		}
	}
}

// Every published document is self-contained: each reference resolves
// inside it, and the definitions rewritten for OpenAPI keep none of the
// document-local references.
func TestDocumentsResolve(t *testing.T) {
	s := New(Options{})
	if len(s.Published()) < 40 {
		t.Fatalf("only %d schemas published", len(s.Published()))
	}
	for _, p := range s.Published() {
		doc := mustDoc(t, s, p.Name)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		var defs Schema
		if d, ok := doc["$defs"].(Schema); ok {
			defs = d
		}
		for _, part := range strings.Split(string(b), `"$ref":"#/$defs/`)[1:] {
			name := part[:strings.IndexByte(part, '"')]
			if _, ok := defs[name]; !ok {
				t.Errorf("%s refers to %s, which it does not carry", p.Name, name)
			}
		}
		if doc["$schema"] != Dialect {
			t.Errorf("%s: $schema = %v", p.Name, doc["$schema"])
		}
	}
	defs, err := s.Definitions("#/components/schemas/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(defs)
	if strings.Contains(string(b), "#/$defs/") {
		t.Error("Definitions kept a #/$defs/ reference")
	}
	// A dangling reference is an error, not a document that fails later.
	s.Define("broken", Ref("nothing"))
	if _, err := s.Document("broken"); err == nil {
		t.Error("a reference to an undefined name was accepted")
	}
}

// The schemas are generated from protocol's tables: each table's rows
// appear in them.
func TestSchemasFollowTheTables(t *testing.T) {
	s := New(Options{})
	msg := mustDoc(t, s, "client-message")
	for _, k := range protocol.Commands() {
		slug := typeSlug(k.DeviceType())
		cmds := msg["$defs"].(Schema)["commands."+slug].(Schema)["properties"].(Schema)
		if cmds[k.Name()] == nil {
			t.Errorf("command %s is not in commands.%s", k.Name(), slug)
		}
	}
	for _, k := range protocol.Keys() {
		conf := msg["$defs"].(Schema)["configure.arm"].(Schema)["properties"].(Schema)
		c, ok := conf[k.Name()].(Schema)
		if !ok {
			t.Errorf("configure lacks %s", k.Name())
			continue
		}
		if _, refused := c["not"]; refused == k.SessionScoped() {
			t.Errorf("%s: refused=%v, session-scoped=%v", k.Name(), refused, k.SessionScoped())
		}
	}
	for _, name := range []string{"arm3", "grip", "inverse3", "verse_grip", "wireless_verse_grip", "custom_verse_grip", "session"} {
		dig(t, msg, name)
	}
	for _, c := range protocol.DeprecatedCommands() {
		body := dig(t, msg, "session", strings.TrimPrefix(c.Name, "session."))
		if body["anyOf"].([]any)[0].(Schema)["deprecated"] != true {
			t.Errorf("%s is not marked deprecated", c.Name)
		}
	}

	// A frame's errors may carry every code, an HTTP answer those the
	// table marks as HTTP's.
	errs := mustDoc(t, s, "error-envelope")
	var codes, httpCodes []string
	for _, c := range protocol.Codes() {
		codes = append(codes, string(c))
		if c.OverHTTP() {
			httpCodes = append(httpCodes, string(c))
		}
	}
	if got := dig(t, errs, "code")["enum"].([]string); !slices.Equal(got, httpCodes) {
		t.Errorf("error codes %v, table %v", got, httpCodes)
	}
	if got := s.defs["error"]["properties"].(Schema)["code"].(Schema)["enum"].([]string); !slices.Equal(got, codes) {
		t.Errorf("a frame's error codes %v, table %v", got, codes)
	}
	for _, st := range ErrorStatuses() {
		for _, c := range dig(t, mustDoc(t, s, ErrorEnvelopeName(st)), "code")["enum"].([]string) {
			if protocol.Code(c).HTTPStatus() != st {
				t.Errorf("status %d lists %s (status %d)", st, c, protocol.Code(c).HTTPStatus())
			}
		}
	}

	ev := mustDoc(t, s, "event")
	if n := len(ev["oneOf"].([]any)); n != len(event.Kinds()) {
		t.Errorf("event has %d variants, the table %d", n, len(event.Kinds()))
	}

	settings := mustDoc(t, s, "settings")
	for _, k := range protocol.SettingKeys() {
		dig(t, settings, strings.Split(k.Path(), "/")...)
	}

	for _, naming := range []protocol.Naming{protocol.NamingHaply, protocol.NamingReference} {
		types, err := protocol.NewNamedTypeTable(naming, map[string]string{"robot": "arm3"})
		if err != nil {
			t.Fatal(err)
		}
		ns := New(Options{Types: types})
		want := []string{"session_id"}
		for _, c := range types.Collections() {
			want = append(want, c.Key)
		}
		frame := mustDoc(t, ns, StateFrame)
		if got := frame["required"].([]string); !slices.Equal(got, want) {
			t.Errorf("%v: state frame requires %v, want %v", naming, got, want)
		}
		dig(t, mustDoc(t, ns, "client-message"), "robot")
	}
}

func TestFromType(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	type doc struct {
		inner
		Name    string            `json:"name"`
		Opt     string            `json:"opt,omitempty"`
		Ptr     *inner            `json:"ptr"`
		List    []uint8           `json:"-"`
		Items   []inner           `json:"items"`
		Tags    map[string]uint64 `json:"tags,omitempty"`
		When    time.Time         `json:"when"`
		private int
	}
	got, _ := json.Marshal(FromType(reflect.TypeFor[doc]()))
	want := `{"additionalProperties":false,"properties":{` +
		`"items":{"items":{"additionalProperties":false,"properties":{"n":{"type":"integer"}},"required":["n"],"type":"object"},"type":["array","null"]},` +
		`"n":{"type":"integer"},"name":{"type":"string"},"opt":{"type":"string"},` +
		`"ptr":{"anyOf":[{"additionalProperties":false,"properties":{"n":{"type":"integer"}},"required":["n"],"type":"object"},{"type":"null"}]},` +
		`"tags":{"additionalProperties":{"minimum":0,"type":"integer"},"type":"object"},` +
		`"when":{"format":"date-time","type":"string"}},` +
		`"required":["n","name","ptr","items","when"],"type":"object"}`
	if string(got) != want {
		t.Errorf("FromType:\n got %s\nwant %s", got, want)
	}
}
