package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// groupDoc knows the member g, an object of which it knows a (a number),
// as settings.json's groups are read: it lists the other members of the
// document and of g, those of g In g.
type groupDoc struct {
	A       float64
	unknown []Member
}

func (d groupDoc) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]map[string]float64{"g": {"a": d.A}})
}

func (d *groupDoc) UnmarshalJSON(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return err
	}
	d.unknown = nil
	for _, name := range orderOf(data) {
		if name != "g" {
			d.unknown = append(d.unknown, Member{Name: name, Value: top[name]})
		}
	}
	var g map[string]json.RawMessage
	if err := json.Unmarshal(top["g"], &g); err != nil {
		return err
	}
	for _, name := range orderOf(top["g"]) {
		if name != "a" {
			d.unknown = append(d.unknown, Member{Name: name, Value: g[name], In: []string{"g"}})
		}
	}
	return json.Unmarshal(g["a"], &d.A)
}

func (d *groupDoc) UnknownMembers() []Member { return d.unknown }

// orderOf is the names of the object data's members, in its order.
func orderOf(data []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.Token()
	var names []string
	for dec.More() {
		tok, _ := dec.Token()
		var skip json.RawMessage
		dec.Decode(&skip)
		names = append(names, tok.(string))
	}
	return names
}

// Members a reader does not know inside an object it knows (a newer
// build's setting in a group this build writes) go back into that object,
// each value byte for byte, at every write; those of the document's own
// object go back there. On main a member could only be kept at the top,
// so a newer build's setting in a known group was gone at the next write.
func TestKeptMembersGoBackIntoTheirObject(t *testing.T) {
	const future = `{"x": 1,  "list": [true, null, {"deep": "é"}]}`
	s := openTemp(t)
	var told []string
	s.OnUnknown(func(path string, names []string, _ int) { told = append(told, names...) })
	const name = "settings"
	p := s.path(name)
	writeRaw(t, p, []byte(`{"top": [1, 2], "g": {"new": `+future+`, "a": 1, "other": true}}`))
	for i := 0; i < 2; i++ {
		var d groupDoc
		if found, err := s.Load(name, &d); !found || err != nil {
			t.Fatalf("Load: %v %v", found, err)
		}
		if d.A != float64(1+i) {
			t.Fatalf("read a = %v", d.A)
		}
		if err := s.Save(name, groupDoc{A: float64(2 + i)}); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
		b, _ := os.ReadFile(p)
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatalf("write %d: %v\n%s", i+1, err, b)
		}
		if got := fileMembers(t, p); !strings.HasPrefix(got, `top=[1, 2];g=`) {
			t.Errorf("write %d: the file has %s, want top kept first", i+1, got)
		}
		var g map[string]json.RawMessage
		json.Unmarshal(top["g"], &g)
		if string(g["new"]) != future || string(g["other"]) != "true" || len(g) != 3 || string(g["a"]) != strconv.Itoa(2+i) {
			t.Errorf("write %d: g is %s, want new byte for byte, other, and a = %d", i+1, top["g"], 2+i)
		}
	}
	if strings.Join(told, ",") != "top,g/new,g/other" {
		t.Errorf("told of %q, want top, g/new and g/other once", told)
	}
	// A document written without the object they are in cannot take
	// them: refused, nothing changed.
	before, _ := os.ReadFile(p)
	if err := s.Save(name, map[string]int{"a": 1}); err == nil || !strings.Contains(err.Error(), "no object g") {
		t.Errorf("a write without g: %v, want it refused naming g", err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(after, before) {
		t.Errorf("the refused write changed the file:\n%s\nwas\n%s", after, before)
	}
}

// A document whose kept members are over MaxKept is still read (its
// values in force), and every write of it is refused with an error naming
// the file, the largest member and the fix, changing nothing: the members
// are never dropped without a word. Once they are moved out of the file
// (and the file read again) the write goes through. On main such a member
// was copied and fsynced at every write, however large.
func TestKeptMembersOverTheLimitRefuseTheWrite(t *testing.T) {
	s := openTemp(t)
	var size int
	s.OnUnknown(func(_ string, _ []string, n int) { size = n })
	const name = "devices/arm"
	p := s.path(name)
	big := `"` + strings.Repeat("x", MaxKept) + `"`
	file := []byte(`{"small": 1, "huge": ` + big + `, "a": 5}`)
	writeRaw(t, p, file)
	var d keepingDoc
	if found, err := s.Load(name, &d); !found || err != nil || d.A != 5 {
		t.Fatalf("Load: %v %v, a = %v; want it read, a = 5", found, err, d.A)
	}
	if size <= MaxKept {
		t.Errorf("told of %d bytes kept, want over %d", size, MaxKept)
	}
	d.A = 6
	writes := map[string]func() error{
		"Save":      func() error { return s.Save(name, &d) },
		"SaveGated": func() error { return s.SaveGated(name, &d, func() bool { return true }) },
	}
	for wname, write := range writes {
		err := write()
		if !errors.Is(err, ErrKeptTooLarge) {
			t.Fatalf("%s: %v, want ErrKeptTooLarge", wname, err)
		}
		for _, want := range []string{p, "huge", "nothing was changed", "restart"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", wname, err, want)
			}
		}
		if b, _ := os.ReadFile(p); !bytes.Equal(b, file) {
			t.Fatalf("%s: the refused write changed the file", wname)
		}
	}
	// Moved out by hand, read again: written, the small one kept.
	writeRaw(t, p, []byte(`{"small": 1, "a": 5}`))
	if found, err := s.Load(name, &d); !found || err != nil {
		t.Fatal(err)
	}
	d.A = 6
	if err := s.Save(name, &d); err != nil {
		t.Fatal(err)
	}
	if got := fileMembers(t, p); got != `small=1;a=6;b=0;` {
		t.Errorf("the file has %s", got)
	}
}

// A write Replacing an object of the document (an entry set anew, whole,
// as the wire sets it) drops the members kept inside it, the value it
// replaced's, and writes back the others; a write that does not land
// drops nothing. A value queued behind that replaced one still drops
// them when a later write supersedes it, or a later value Put over it.
// On main every kept member was written back at every write: a newer
// build's field of an entry outlived the entry's replacement.
func TestReplacingDropsTheMembersKeptInsideIt(t *testing.T) {
	const future = `{"x": 1,  "y": [true]}`
	const name = "devices/arm"
	g := [][]string{{"g"}}
	later := time.Hour // a write-behind that flushes only when told
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, s *Store, w *WriteBehind)
		// inG: whether g/new is still in the file and kept after it.
		inG bool
	}{
		{"a write of the document", func(t *testing.T, s *Store, _ *WriteBehind) {
			must(t, s.Save(name, groupDoc{A: 2}))
		}, true},
		{"a write replacing another object", func(t *testing.T, s *Store, _ *WriteBehind) {
			must(t, s.Save(name, Replacing{Doc: groupDoc{A: 2}, Objects: [][]string{{"h"}, {"top", "g"}}}))
		}, true},
		{"a write replacing g", func(t *testing.T, s *Store, _ *WriteBehind) {
			must(t, s.Save(name, Replacing{Doc: groupDoc{A: 2}, Objects: g}))
		}, false},
		{"a gated write replacing g", func(t *testing.T, s *Store, _ *WriteBehind) {
			must(t, s.SaveGated(name, Replacing{Doc: groupDoc{A: 2}, Objects: g}, func() bool { return true }))
		}, false},
		{"a write replacing g, called off", func(t *testing.T, s *Store, _ *WriteBehind) {
			if err := s.SaveGated(name, Replacing{Doc: groupDoc{A: 2}, Objects: g}, func() bool { return false }); !errors.Is(err, ErrNotCommitted) {
				t.Fatalf("called off: %v", err)
			}
			must(t, s.Save(name, groupDoc{A: 2}))
		}, true},
		{"a queued value replacing g, flushed", func(t *testing.T, s *Store, w *WriteBehind) {
			must(t, w.Put(name, Replacing{Doc: groupDoc{A: 2}, Objects: g}))
			must(t, w.Flush())
		}, false},
		{"a queued value replacing g, then a value Put over it", func(t *testing.T, s *Store, w *WriteBehind) {
			must(t, w.Put(name, Replacing{Doc: groupDoc{A: 2}, Objects: g}))
			must(t, w.Put(name, groupDoc{A: 3}))
			must(t, w.Flush())
		}, false},
		{"a queued value replacing g, superseded by a write", func(t *testing.T, s *Store, w *WriteBehind) {
			must(t, w.Put(name, Replacing{Doc: groupDoc{A: 2}, Objects: g}))
			must(t, s.Save(name, groupDoc{A: 3}))
			must(t, w.Flush())
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTemp(t)
			w := s.NewWriteBehind(later)
			defer w.Close()
			p := s.path(name)
			writeRaw(t, p, []byte(`{"top": [1,  2], "g": {"new": `+future+`, "a": 1}}`))
			var d groupDoc
			if found, err := s.Load(name, &d); !found || err != nil {
				t.Fatalf("Load: %v %v", found, err)
			}
			if !s.KeepsInside(name, "g") || s.KeepsInside(name, "h") || s.KeepsInside(name) {
				t.Fatalf("KeepsInside g, h, the document: %v %v %v; want g only", s.KeepsInside(name, "g"), s.KeepsInside(name, "h"), s.KeepsInside(name))
			}
			tc.write(t, s, w)
			// One more write, as the next change of another entry: what
			// was dropped does not come back, what was kept stays.
			must(t, s.Save(name, groupDoc{A: 4}))
			b, _ := os.ReadFile(p)
			var top map[string]json.RawMessage
			var inG map[string]json.RawMessage
			if err := json.Unmarshal(b, &top); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			json.Unmarshal(top["g"], &inG)
			if string(top["top"]) != `[1,  2]` {
				t.Errorf("top in the file: %s, want it kept byte for byte\n%s", top["top"], b)
			}
			if got := inG["new"] != nil; got != tc.inG || tc.inG && string(inG["new"]) != future {
				t.Errorf("g/new in the file: %s, want it there: %v\n%s", inG["new"], tc.inG, b)
			}
			if got := s.KeepsInside(name, "g"); got != tc.inG {
				t.Errorf("KeepsInside g after: %v, want %v", got, tc.inG)
			}
		})
	}
}

// Members kept inside an object count toward MaxKept as those of the
// document's object do: over it a write is refused, changing nothing,
// unless it replaces that object, which drops them (the value they were
// part of is set anew), and is then written.
func TestKeptMembersInsideAnObjectCountTowardTheLimit(t *testing.T) {
	s := openTemp(t)
	const name = "devices/arm"
	p := s.path(name)
	file := []byte(`{"top": 1, "g": {"huge": "` + strings.Repeat("x", MaxKept) + `", "a": 1}}`)
	writeRaw(t, p, file)
	var d groupDoc
	if found, err := s.Load(name, &d); !found || err != nil {
		t.Fatalf("Load: %v %v", found, err)
	}
	if err := s.Save(name, groupDoc{A: 2}); !errors.Is(err, ErrKeptTooLarge) || !strings.Contains(err.Error(), "g/huge") {
		t.Fatalf("a write of the document: %v, want ErrKeptTooLarge naming g/huge", err)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, file) {
		t.Fatalf("the refused write changed the file")
	}
	must(t, s.Save(name, Replacing{Doc: groupDoc{A: 2}, Objects: [][]string{{"g"}}}))
	b, _ := os.ReadFile(p)
	var top struct {
		Top int
		G   map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &top); err != nil || top.Top != 1 || len(top.G) != 1 || string(top.G["a"]) != "2" {
		t.Errorf("the file after a write replacing g: %v\n%s\nwant top kept, g as written", err, b)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
