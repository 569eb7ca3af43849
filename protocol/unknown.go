package protocol

import (
	"bytes"
	"strconv"
)

// UnknownMember is a member of a stored document's object that the
// document's decode does not read: a newer build's entry (after a
// downgrade), a misspelt name, anything this build does not know there.
// Name is its name, Value its value's JSON text as the file has it. The
// state directory keeps such members and writes them back, unchanged, at
// each later write of the document (actors/store's KeepsUnknown), so that
// a downgrade does not cost the newer build's settings.
//
// In names the objects it is in, outermost first, when it is not a member
// of the document's object itself: a newer build's setting
// features/haptic_boost/enabled is the member haptic_boost In features,
// which this build knows and writes (UnknownMembersIn); a newer build's
// field inside an entry this build knows, force_clamp's "mode", is the
// member mode In force_clamp (StoredDeviceConfig, StoredSessionConfig,
// DecodeStoredEntry).
type UnknownMember struct {
	Name  string
	Value []byte
	In    []string
}

// unknownMembers collects the members a decode does not read, in the
// order of the document.
type unknownMembers []UnknownMember

// add notes the member at it, copying its name and value out of the
// document's bytes.
func (u *unknownMembers) add(it *MemberIter) {
	*u = append(*u, UnknownMember{Name: string(it.Key()), Value: bytes.Clone(it.Value().Raw())})
}

// addIn is add for a member of the object at in (UnknownMember.In).
func (u *unknownMembers) addIn(it *MemberIter, in []string) {
	u.add(it)
	(*u)[len(*u)-1].In = in
}

// lastOnly is u with each name of an object once, at its last occurrence
// (a name given twice counts by its last occurrence, as every name of a
// stored document does): in the order of the document, nil when u is
// empty. It costs one pass, however many names are unknown
// (MemberIter.Superseded would scan ahead for each).
func (u unknownMembers) lastOnly() []UnknownMember {
	if len(u) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(u))
	keep := make([]bool, len(u))
	n := 0
	for i := len(u) - 1; i >= 0; i-- {
		if k := u[i].place(); !seen[k] {
			seen[k], keep[i] = true, true
			n++
		}
	}
	out := make([]UnknownMember, 0, n)
	for i, m := range u {
		if keep[i] {
			out = append(out, m)
		}
	}
	return out
}

// place is m's In and Name as one string, each part length-prefixed so
// that no two places read the same ("a/b" in x is not b in x/a).
func (m UnknownMember) place() string {
	b := make([]byte, 0, 32)
	for _, part := range append(m.In[:len(m.In):len(m.In)], m.Name) {
		b = strconv.AppendInt(b, int64(len(part)), 10)
		b = append(b, ':')
		b = append(b, part...)
	}
	return string(b)
}

// keptIn is found, the unknown members a stored decode met inside entry e
// (each In e's member name first), without those in an object that e's
// stored form does not have: a form this build reads but writes otherwise
// ({"handedness": "left"}, navigation's {"config": ...} that GET answers)
// has nowhere for them, and the store refuses a write that cannot put a
// kept member back. Those are not kept, as before.
func keptIn(e Entry, found unknownMembers) unknownMembers {
	if len(found) == 0 {
		return nil
	}
	return keptInJSON(e.AppendJSON(nil), found)
}

// keptInJSON is keptIn for the stored form written.
func keptInJSON(written []byte, found unknownMembers) unknownMembers {
	var doc Doc
	if doc.Parse(written) != nil {
		return nil
	}
	out := found[:0:0]
	for _, m := range found {
		v := doc.Root()
		for _, name := range m.In[1:] {
			if v.Kind() != KindObject {
				break
			}
			v = v.Member(name)
		}
		if v.Kind() == KindObject {
			out = append(out, m)
		}
	}
	return out
}

// UnknownMembers is the members of the stored JSON object data whose names
// are not in known (the members its caller's decode reads), as
// UnknownMember has them: in the order of the document, a name given twice
// once, at its last occurrence; nil when there are none. data that is not
// a JSON object is the error. It is for a stored document decoded outside
// this package (a profile's session level); StoredDeviceConfig and
// StoredSessionConfig find their own as they decode.
func UnknownMembers(data []byte, known ...string) ([]UnknownMember, error) {
	var doc Doc
	root, e := parseObject(&doc, data, `{...}`)
	if e != nil {
		return nil, e
	}
	var out unknownMembers
	for it := root.Members(); it.Next(); {
		if !keyIn(&it, known) {
			out.add(&it)
		}
	}
	return out.lastOnly(), nil
}

// keyIn reports whether the member at it is named one of names.
func keyIn(it *MemberIter, names []string) bool {
	for _, n := range names {
		if it.KeyIs(n) {
			return true
		}
	}
	return false
}

// KnownMembers is what a stored document's decode reads, by member name:
// a member mapped to nil is read whole (its value is this build's); one
// mapped to a KnownMembers is an object this build reads member by member
// (a group of settings), whose other members it does not know.
type KnownMembers map[string]KnownMembers

// UnknownMembersIn is UnknownMembers for a document whose known members
// nest (settings.json's groups, device-ids' kinds): the members of the
// object data, and of each object known names as a group, that known does
// not name, each with In its place. The members of one object are in its
// order, a name given twice once, at its last occurrence; a group given
// twice is looked into at its last occurrence only (the one the decode
// reads); a group that is not an object is the decode's to judge, and
// holds nothing kept. data that is not a JSON object is the error.
func UnknownMembersIn(data []byte, known KnownMembers) ([]UnknownMember, error) {
	var doc Doc
	root, e := parseObject(&doc, data, `{...}`)
	if e != nil {
		return nil, e
	}
	var out []UnknownMember
	unknownIn(root, known, nil, &out)
	return out, nil
}

// unknownIn adds to out the members of the object v (at in) that known
// does not name, then those of its known groups.
func unknownIn(v Value, known KnownMembers, in []string, out *[]UnknownMember) {
	var here unknownMembers
	type group struct {
		v     Value
		known KnownMembers
		name  string
	}
	var groups []group
	for it := v.Members(); it.Next(); {
		name := string(it.Key())
		sub, ok := known[name]
		switch {
		case !ok:
			here.addIn(&it, in)
		case sub != nil && !it.Superseded() && it.Value().Kind() == KindObject:
			groups = append(groups, group{it.Value(), sub, name})
		}
	}
	*out = append(*out, here.lastOnly()...)
	for _, g := range groups {
		unknownIn(g.v, g.known, append(in[:len(in):len(in)], g.name), out)
	}
}
