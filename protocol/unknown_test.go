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

// A member of an entry's object that the decode does not read (a newer
// build's field: force_clamp's "mode") is listed too, In its place, at
// any depth the decode reads member by member, as the file has it: a name
// given twice once, at its last occurrence, and only from the occurrence
// of the entry that counts. An entry rejected (its default is written)
// keeps nothing, nor does a form this build reads but writes otherwise
// (a bare handedness, navigation's GET answer), where the store could not
// put it back. On main the decode ignored them all, and the next write
// dropped them.
func TestStoredConfigListsTheFieldsInsideEntriesItDoesNotKnow(t *testing.T) {
	const raw = `{"x": 1,  "list": [true]}`
	device := func(doc string) ([]UnknownMember, string, error) {
		var s StoredDeviceConfig
		err := json.Unmarshal([]byte(doc), &s)
		return s.Unknown, fmt.Sprintf("%s", s.Config.AppendJSON(nil)), err
	}
	profile := func(doc string) ([]UnknownMember, string, error) {
		var s StoredSessionConfig
		err := json.Unmarshal([]byte(doc), &s)
		return s.Unknown, fmt.Sprintf("%s", s.Config.AppendJSON(nil)), err
	}
	for _, tc := range []struct {
		name   string
		decode func(string) ([]UnknownMember, string, error)
		doc    string
		want   string // the unknown members, in/name=value;…
		// inForce is in the config decoded.
		inForce string
	}{
		{"a field of force_clamp", device, `{"force_clamp": {"max_force": 5, "mode": ` + raw + `}}`, `force_clamp/mode=` + raw + `;`, `"force_clamp":{"max_force":5}`},
		{"beside a member of the document", device, `{"future": 1, "force_clamp": {"mode": "soft", "max_force": 5}}`, `future=1;force_clamp/mode="soft";`, `"max_force":5`},
		{"given twice", device, `{"force_clamp": {"mode": 1, "max_force": 5, "mode": 2}}`, `force_clamp/mode=2;`, `"max_force":5`},
		{"in a superseded occurrence", device, `{"force_clamp": {"mode": 1, "max_force": 4}, "force_clamp": {"max_force": 5}}`, ``, `"max_force":5`},
		{"in a rejected entry", device, `{"force_clamp": {"max_force": -1, "mode": 1}, "handedness": "left"}`, ``, `"handedness":"left"`},
		{"in a form written otherwise", device, `{"handedness": {"handedness": "left", "hand": 1}}`, ``, `"handedness":"left"`},
		{"of two entries", device, `{"gravity_compensation": {"enabled": true, "g": 1, "scaling_factor": 1}, "passivity_controller": {"enabled": true, "p": 2}}`, `gravity_compensation/g=1;passivity_controller/p=2;`, `"passivity_controller":{"enabled":true,"scope":"rendered"}`},
		{"a field of damping", profile, `{"damping": {"scalar": 7, "mode": ` + raw + `}}`, `damping/mode=` + raw + `;`, `"damping":{"scalar":7}`},
		{"deep in navigation", profile, `{"navigation": {"mode": "bubble", "bubble": {"center": {"tilt": 1, "position": {"x": 0, "y": 0, "z": 0.01, "w": 2}}}}}`, `navigation/bubble/center/tilt=1;navigation/bubble/center/position/w=2;`, `"z":0.01`},
		{"in navigation's GET answer", profile, `{"navigation": {"config": {"mode": "bubble", "n": 1}}}`, ``, `"mode":"bubble"`},
		{"in a custom mount", profile, `{"preset": "custom", "mount": {"transform": {"position": {"x": 0.1, "y": 0, "z": 0, "w": 1}, "skew": 3}, "m": 2}}`, `mount/m=2;mount/transform/position/w=1;mount/transform/skew=3;`, `"x":0.1`},
		{"in a mount not read", profile, `{"mount": {"transform": {}, "m": 2}}`, ``, `"preset":"defaults"`},
		{"in the basis", profile, `{"basis": {"permutation": "ZYX", "handed": "r"}}`, `basis/handed="r";`, `"basis":{"permutation":"ZYX"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unknown, cfg, err := tc.decode(tc.doc)
			if err != nil {
				t.Fatalf("%s: %v", tc.doc, err)
			}
			got := ""
			for _, m := range unknown {
				got += strings.Join(append(m.In[:len(m.In):len(m.In)], m.Name), "/") + "=" + string(m.Value) + ";"
			}
			if got != tc.want {
				t.Errorf("%s: unknown %q, want %q", tc.doc, got, tc.want)
			}
			if !strings.Contains(cfg, tc.inForce) {
				t.Errorf("%s: in force %s, want it to have %s", tc.doc, cfg, tc.inForce)
			}
		})
	}

	// A profile's session level reads its basis alone.
	e, unknown, err := DecodeStoredEntry(KeyBasis, []byte(`{"handed": "r", "permutation": "ZYX", "handed": `+raw+`}`))
	if err != nil || e.(Basis).Permutation != "ZYX" || len(unknown) != 1 || strings.Join(unknown[0].In, "/") != "basis" || unknown[0].Name != "handed" || string(unknown[0].Value) != raw {
		t.Errorf("DecodeStoredEntry: %v %v %v, want basis ZYX and basis/handed %s", e, unknown, err, raw)
	}
}
