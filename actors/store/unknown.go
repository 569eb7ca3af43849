package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// MaxKept is the most a document's kept members (KeepsUnknown) may hold,
// in bytes of their names and values, for a write of the document to
// write them back: 4 MiB. The largest kept member a newer build writes is
// a device kind of its own in the remembered ids, one member holding its
// every record (some 130 bytes each): a lab gateway remembers up to 8192
// devices per kind, about 1 MiB. Copying and fsyncing 4 MiB on the rare
// writes of such a document takes milliseconds. Above it every write of
// the document is refused, changing nothing (ErrKeptTooLarge): a member
// that large is no newer build's, but dropping it would lose it without
// a word. The document is still read and in force.
const MaxKept = 4 << 20

// ErrKeptTooLarge is wrapped by the error of a write of a document whose
// kept members are over MaxKept: nothing was changed.
var ErrKeptTooLarge = errors.New("members this build does not know, over what it writes back")

// keptSize is the bytes of kept counted against MaxKept.
func keptSize(kept []Member) int {
	n := 0
	for _, m := range kept {
		n += len(m.Name) + len(m.Value)
		for _, in := range m.In {
			n += len(in)
		}
	}
	return n
}

// keptTooLarge is the error of a write of the document at p whose kept
// members are over MaxKept; nil when they are not.
func keptTooLarge(p string, kept []Member) error {
	size := keptSize(kept)
	if size <= MaxKept {
		return nil
	}
	big := slices.Clone(kept)
	slices.SortStableFunc(big, func(a, b Member) int { return len(b.Value) - len(a.Value) })
	var names []string
	for i, m := range big {
		if i == 3 {
			names = append(names, fmt.Sprintf("and %d more", len(big)-3))
			break
		}
		names = append(names, fmt.Sprintf("%s: %d bytes", m.path(), len(m.Value)))
	}
	return fmt.Errorf("%s holds %d bytes of %w (%s), over the %d MiB limit (store.MaxKept): nothing was changed, and no change of the document is stored while it holds them (the values it has are in force); run the newer build that wrote them, or move them out of the file by hand (keeping a copy if that build needs them) and restart the service",
		p, size, ErrKeptTooLarge, strings.Join(names, ", "), MaxKept>>20)
}

// path is m's name with the objects it is in: "features/haptic_boost".
func (m Member) path() string {
	if len(m.In) == 0 {
		return m.Name
	}
	return strings.Join(m.In, "/") + "/" + m.Name
}

// withKept is the encoded document data with kept (its file's members the
// reader did not know) written back into its object, or the object in it
// that each member is In: first, in their order, each as its file had
// it, then data's own members. Written first, a name data has as well
// counts by data's (its last occurrence), so a member this build writes
// is never overridden by a kept one. data is returned as it is when
// nothing is kept; data that is not an object, or has no object where a
// member is In, cannot take them, and is an error rather than a write
// that drops them.
func withKept(data []byte, kept []Member) ([]byte, error) {
	if len(kept) == 0 {
		return data, nil
	}
	// One insertion per object, in the order the objects first come in
	// kept; each finds its object in the data as it is by then.
	var done [][]string
	for _, m := range kept {
		if slices.ContainsFunc(done, func(in []string) bool { return slices.Equal(in, m.In) }) {
			continue
		}
		done = append(done, m.In)
		var here []Member
		for _, o := range kept {
			if slices.Equal(o.In, m.In) {
				here = append(here, o)
			}
		}
		open, err := objectAt(data, m.In)
		if err != nil {
			return nil, err
		}
		if data, err = insertMembers(data, open, here); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// objectAt is the offset of the '{' that opens the object at in (names of
// members, outermost first; each at its last occurrence, the one that
// counts) in data; an error naming it when there is none.
func objectAt(data []byte, in []string) (int, error) {
	open := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
	if open == len(data) || data[open] != '{' {
		return 0, errors.New("the document is not a JSON object, so the members its file has that this build does not know cannot be written back; it was not written")
	}
	for depth, name := range in {
		dec := json.NewDecoder(bytes.NewReader(data[open:]))
		at := -1
		if _, err := dec.Token(); err != nil {
			return 0, fmt.Errorf("find %s in the document: %w", strings.Join(in[:depth+1], "/"), err)
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return 0, fmt.Errorf("find %s in the document: %w", strings.Join(in[:depth+1], "/"), err)
			}
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return 0, fmt.Errorf("find %s in the document: %w", strings.Join(in[:depth+1], "/"), err)
			}
			if key, _ := tok.(string); key == name {
				at = -1
				if len(raw) > 0 && raw[0] == '{' {
					at = open + int(dec.InputOffset()) - len(raw)
				}
			}
		}
		if at < 0 {
			return 0, fmt.Errorf("the document has no object %s, where its file has members this build does not know, so they cannot be written back; it was not written", strings.Join(in[:depth+1], "/"))
		}
		open = at
	}
	return open, nil
}

// insertMembers is data with members written first into the object whose
// '{' is at open.
func insertMembers(data []byte, open int, members []Member) ([]byte, error) {
	rest := data[open+1:]
	empty := bytes.HasPrefix(bytes.TrimLeft(rest, " \t\r\n"), []byte("}"))
	size := len(data)
	for _, m := range members {
		size += len(m.Name) + len(m.Value) + 8
	}
	out := make([]byte, 0, size)
	out = append(out, data[:open+1]...)
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		name, err := encodeName(m.Name)
		if err != nil {
			return nil, err
		}
		out = append(out, "\n  "...)
		out = append(out, name...)
		out = append(out, ": "...)
		out = append(out, m.Value...)
	}
	if empty {
		out = append(out, '\n')
	} else {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}

// encodeName is name as a JSON string, escaping only what JSON needs.
func encodeName(name string) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(name); err != nil {
		return nil, fmt.Errorf("encode the name of a kept member: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Replacing is a document value, Doc, whose write replaces whole the
// objects Objects names in it (each by the names of the members it is
// at, outermost first, as Member.In names them): an entry that this
// build sets anew, with the wire's rule that a value given is the whole
// entry (members left out take their defaults). The members kept in such
// an object, or in one inside it (a newer build's field of that entry),
// belonged to the value replaced: the write drops them, as the newer
// build would have reset them, rather than writing them back into the
// new value. Those kept elsewhere in the document are written back as
// ever. A write that does not land (refused, failed, called off) drops
// nothing. Save, SaveGated and WriteBehind.Put take it as they take Doc.
type Replacing struct {
	Doc     any
	Objects [][]string
}

// MarshalJSON is Doc's JSON.
func (r Replacing) MarshalJSON() ([]byte, error) { return json.Marshal(r.Doc) }

// replacedObjects is the objects v replaces whole, if it is a Replacing.
func replacedObjects(v any) [][]string {
	switch r := v.(type) {
	case Replacing:
		return r.Objects
	case *Replacing:
		return r.Objects
	}
	return nil
}

// unionObjects is a with the objects of b it does not have.
func unionObjects(a, b [][]string) [][]string {
	out := a[:len(a):len(a)]
	for _, o := range b {
		if !slices.ContainsFunc(out, func(p []string) bool { return slices.Equal(p, o) }) {
			out = append(out, o)
		}
	}
	return out
}

// inside reports whether m is a member of the object at, or of one inside
// it. The document's own object (an empty at) is never replaced whole.
func (m Member) inside(at []string) bool {
	return len(at) > 0 && len(at) <= len(m.In) && slices.Equal(m.In[:len(at)], at)
}

// withoutReplaced is kept without the members inside one of objects;
// dropped reports whether there were any.
func withoutReplaced(kept []Member, objects [][]string) (out []Member, dropped bool) {
	if len(kept) == 0 || len(objects) == 0 {
		return kept, false
	}
	out = make([]Member, 0, len(kept))
	for _, m := range kept {
		if slices.ContainsFunc(objects, m.inside) {
			dropped = true
			continue
		}
		out = append(out, m)
	}
	return out, dropped
}

// replacedUpTo is what the write doc of name replaces, with what the
// values of name queued before it in a write-behind replace: doc, the
// newer, supersedes them on disk (their writes will be skipped), and as
// their writer's later value it holds their changes.
func (s *Store) replacedUpTo(name string, doc pendingDoc) [][]string {
	s.behindMu.Lock()
	behind := s.behind
	s.behindMu.Unlock()
	out := doc.replaces
	for _, w := range behind {
		out = unionObjects(out, w.replacedBefore(name, doc.order))
	}
	return out
}

// KeepsInside reports whether document name has members kept (its file's
// members this build does not know) inside the object at object (by the
// names of the members it is at, as Member.In): a write of it Replacing
// that object drops them, so a change of the entry there must be written
// even when its value is the one in force. It takes only the store's
// bookkeeping lock, never held across I/O, so an actor may ask.
func (s *Store) KeepsInside(name string, object ...string) bool {
	for _, m := range s.stripeOf(name).keptOf(name) {
		if m.inside(object) {
			return true
		}
	}
	return false
}
