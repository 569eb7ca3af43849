package protocol

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A stored document's members its decode does not read (a newer build's
// entry, a misspelt name) are listed as the file has them, for the store
// to write back: in the document's order, a name given twice at its last
// occurrence, each value's text byte for byte. The entries the decode
// knows are in force beside them, as before.
func TestStoredConfigListsTheMembersItDoesNotKnow(t *testing.T) {
	const raw = `{"x": 1,  "list": [true, null, {"deep": "é"}]}`
	decoders := []struct {
		name string
		// entry is a member the decode reads; decode answers what it
		// found unknown, and whether the entry is in force.
		entry  string
		decode func(doc []byte) ([]UnknownMember, bool, error)
	}{
		{"device", `"handedness": "left"`, func(doc []byte) ([]UnknownMember, bool, error) {
			var s StoredDeviceConfig
			err := json.Unmarshal(doc, &s)
			return s.Unknown, s.Config.Handedness == "left", err
		}},
		{"profile device", `"force_gate": {"gain": 0.5}`, func(doc []byte) ([]UnknownMember, bool, error) {
			var s StoredSessionConfig
			err := json.Unmarshal(doc, &s)
			return s.Unknown, s.Config.ForceGate.Gain == 0.5, err
		}},
		{"profile session (UnknownMembers)", `"lease_ms": 300`, func(doc []byte) ([]UnknownMember, bool, error) {
			u, err := UnknownMembers(doc, "name", "used_at", "basis", "lease_ms")
			return u, true, err
		}},
	}
	docs := []struct {
		name, doc string
		want      string // the unknown members, name=value;…
	}{
		{"none", `{ENTRY}`, ``},
		{"one, before the entry", `{"future_entry": ` + raw + `, ENTRY}`, `future_entry=` + raw + `;`},
		{"only unknown members and the entry", `{"a": 1, ENTRY, "b": "two"}`, `a=1;b="two";`},
		{"given twice: the last counts, at its place", `{"a": "first", "b": null, ENTRY, "a": ` + raw + `}`, `b=null;a=` + raw + `;`},
		{"an escaped name", `{"fu\u0074ure": [1, 2], ENTRY}`, `future=[1, 2];`},
		{"another scope's entry", `{OTHER, ENTRY}`, `OTHER;`},
	}
	for _, d := range decoders {
		for _, tc := range docs {
			t.Run(d.name+"/"+tc.name, func(t *testing.T) {
				doc, want := tc.doc, tc.want
				// An entry of the other scope is a member this document
				// does not read: kept too.
				other, otherWant := `"preset": "defaults"`, `preset="defaults";`
				if d.name == "profile device" {
					other, otherWant = `"handedness": "left"`, `handedness="left";`
				}
				doc = strings.NewReplacer("ENTRY", d.entry, "OTHER", other).Replace(doc)
				want = strings.ReplaceAll(want, "OTHER;", otherWant)
				unknown, inForce, err := d.decode([]byte(doc))
				if err != nil {
					t.Fatalf("%s: %v", doc, err)
				}
				got := ""
				for _, m := range unknown {
					got += fmt.Sprintf("%s=%s;", m.Name, m.Value)
				}
				if got != want || !inForce {
					t.Errorf("%s: unknown %q (entry in force: %v), want %q", doc, got, inForce, want)
				}
			})
		}
	}
	if _, err := UnknownMembers([]byte(`[1]`)); err == nil {
		t.Error("UnknownMembers took an array")
	}
}
