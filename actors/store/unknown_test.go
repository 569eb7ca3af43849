package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// keepingDoc knows the members a and b (numbers) and lists the others as
// the file has them, as protocol's stored configs do: a KeepsUnknown.
type keepingDoc struct {
	A       float64 `json:"a"`
	B       float64 `json:"b"`
	unknown []Member
	// during, if set, runs as the document is decoded (after the file was
	// read, before Load keeps what it found).
	during func()
}

func (d *keepingDoc) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return fmt.Errorf("not an object: %v", err)
	}
	var unknown []Member
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		switch name := tok.(string); name {
		case "a", "b":
			var f float64
			if err := json.Unmarshal(raw, &f); err != nil {
				return err
			}
			if name == "a" {
				d.A = f
			} else {
				d.B = f
			}
		default:
			unknown = slices.DeleteFunc(unknown, func(m Member) bool { return m.Name == name })
			unknown = append(unknown, Member{Name: name, Value: bytes.Clone(raw)})
		}
	}
	d.unknown = unknown
	if d.during != nil {
		d.during()
	}
	return nil
}

func (d *keepingDoc) UnknownMembers() []Member { return d.unknown }

// fileMembers is the file's members, name=value; in order, each value as
// the file has it.
func fileMembers(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("%s: %v\n%s", p, err, b)
	}
	var out strings.Builder
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%s: %v\n%s", p, err, b)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("%s: %v\n%s", p, err, b)
		}
		fmt.Fprintf(&out, "%s=%s;", tok, raw)
	}
	return out.String()
}

// The members of a document that its KeepsUnknown reader does not know
// are written back, each value byte for byte, first and in the file's
// order, at every later write of the document, whichever way it is
// written; the user is told of them once. A reset of the document (Delete,
// DeleteFolder, a corrupt file moved aside) drops them. On main they were
// gone at the first write.
func TestUnknownMembersSurviveEveryWrite(t *testing.T) {
	const future = `{"x": 1,  "list": [true, null, {"deep": "é"}]}`
	writes := []struct {
		name  string
		write func(t *testing.T, s *Store, name string, v any) error
	}{
		{"Save", func(t *testing.T, s *Store, name string, v any) error { return s.Save(name, v) }},
		{"SaveGated", func(t *testing.T, s *Store, name string, v any) error {
			return s.SaveGated(name, v, func() bool { return true })
		}},
		{"write-behind", func(t *testing.T, s *Store, name string, v any) error {
			w := s.NewWriteBehind(time.Hour)
			defer w.Close()
			if err := w.Put(name, v); err != nil {
				return err
			}
			return w.Flush()
		}},
	}
	for _, w := range writes {
		for _, tc := range []struct {
			name, file string
			want       string // the file's members after a = 2 is written
		}{
			{"beside the known members", `{"future": "first", "a": 1, "future": ` + future + `, "later": null, "b": 3}`,
				`future=` + future + `;later=null;a=2;b=3;`},
			{"only unknown members", `{"future": ` + future + `}`, `future=` + future + `;a=2;b=0;`},
			{"none", `{"a": 1, "b": 3}`, `a=2;b=3;`},
		} {
			t.Run(w.name+"/"+tc.name, func(t *testing.T) {
				s := openTemp(t)
				var told []string
				s.OnUnknown(func(path string, names []string, _ int) { told = append(told, fmt.Sprint(path, names)) })
				const name = "devices/arm"
				p := s.path(name)
				writeRaw(t, p, []byte(tc.file))
				for i := 0; i < 2; i++ { // the second read is of what the first wrote
					var d keepingDoc
					if found, err := s.Load(name, &d); !found || err != nil {
						t.Fatalf("Load: %v %v", found, err)
					}
					d.A = 2
					if err := w.write(t, s, name, &d); err != nil {
						t.Fatalf("write: %v", err)
					}
					if got := fileMembers(t, p); got != tc.want {
						t.Fatalf("write %d: the file has %s\nwant %s", i+1, got, tc.want)
					}
				}
				wantTold := []string(nil)
				if strings.Contains(tc.file, "future") {
					wantTold = []string{fmt.Sprint(p, []string{"future"})}
					if strings.Contains(tc.file, "later") {
						wantTold = []string{fmt.Sprint(p, []string{"future", "later"})}
					}
				}
				if !slices.Equal(told, wantTold) {
					t.Errorf("told %q, want %q (once)", told, wantTold)
				}
			})
		}
	}
}

// A reset of a document drops the members it had that its reader did not
// know: a Delete (DeleteFolder deletes each), a Load that finds the file
// gone (removed by hand: review59) or corrupt and moves it aside. A Delete
// between a Load's read of the file and its keeping of what it found
// wins: the members are the deleted file's. A read into a value that is not a KeepsUnknown changes nothing.
func TestUnknownMembersGoWithTheirDocument(t *testing.T) {
	const name = "profiles/p/arm"
	resets := []struct {
		name  string
		reset func(t *testing.T, s *Store)
	}{
		{"Delete", func(t *testing.T, s *Store) {
			if err := s.Delete(name); err != nil {
				t.Fatal(err)
			}
		}},
		{"DeleteFolder", func(t *testing.T, s *Store) {
			if err := s.DeleteFolder("profiles/p"); err != nil {
				t.Fatal(err)
			}
		}},
		{"moved aside as corrupt", func(t *testing.T, s *Store) {
			writeRaw(t, s.path(name), []byte(`{"future": 1, "a": `))
			var corrupt *CorruptError
			if _, err := s.Load(name, new(keepingDoc)); !errors.As(err, &corrupt) || corrupt.MovedTo == "" {
				t.Fatalf("Load of a torn file: %v", err)
			}
		}},
		{"removed by hand, found gone by a Load", func(t *testing.T, s *Store) {
			if err := os.Remove(s.path(name)); err != nil {
				t.Fatal(err)
			}
			if found, err := s.Load(name, new(keepingDoc)); found || err != nil {
				t.Fatalf("Load of a removed file: %v %v", found, err)
			}
		}},
		{"deleted while a Load reads it", func(t *testing.T, s *Store) {
			if err := s.Delete(name); err != nil {
				t.Fatal(err)
			}
			writeRaw(t, s.path(name), []byte(`{"future": 2, "a": 1}`))
			d := keepingDoc{during: func() {
				if err := s.Delete(name); err != nil {
					t.Error(err)
				}
			}}
			if found, err := s.Load(name, &d); !found || err != nil {
				t.Fatalf("Load: %v %v", found, err)
			}
		}},
	}
	for _, r := range resets {
		t.Run(r.name, func(t *testing.T) {
			s := openTemp(t)
			writeRaw(t, s.path(name), []byte(`{"future": 1, "a": 1}`))
			if found, err := s.Load(name, new(keepingDoc)); !found || err != nil {
				t.Fatalf("Load: %v %v", found, err)
			}
			var plain map[string]any // not a KeepsUnknown: keeps what was kept
			if found, err := s.Load(name, &plain); !found || err != nil {
				t.Fatalf("Load: %v %v", found, err)
			}
			r.reset(t, s)
			if err := s.Save(name, keepingDoc{A: 3}); err != nil {
				t.Fatal(err)
			}
			if got := fileMembers(t, s.path(name)); got != `a=3;b=0;` {
				t.Errorf("after the reset and a write, the file has %s, want a and b only", got)
			}
		})
	}
	// Not reset: a write keeps them after a read that is not a KeepsUnknown.
	s := openTemp(t)
	writeRaw(t, s.path(name), []byte(`{"future": 1, "a": 1}`))
	s.Load(name, new(keepingDoc))
	s.Load(name, new(map[string]any))
	if err := s.Save(name, keepingDoc{A: 3}); err != nil {
		t.Fatal(err)
	}
	if got := fileMembers(t, s.path(name)); got != `future=1;a=3;b=0;` {
		t.Errorf("the file has %s, want future kept", got)
	}
	// A document that is not an object cannot take them: not written.
	if err := s.Save(name, []int{1}); err == nil {
		t.Error("a write of an array over a document with unknown members dropped them")
	}
	if got := fileMembers(t, s.path(name)); got != `future=1;a=3;b=0;` {
		t.Errorf("the file has %s after the refused write", got)
	}
}
