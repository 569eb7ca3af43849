package protocol

import (
	"strconv"
	"strings"
)

// DeviceSelector is the {id} segment of /{type}/{id}/...: a device id, a
// 0-based index within the type, or "*" for every device of the type.
type DeviceSelector struct {
	All   bool
	ID    string // the segment as given (also set for an index: grip ids are decimal)
	Index int    // -1: not an index
}

// ParseDeviceSelector parses an {id} path segment.
func ParseDeviceSelector(s string) (DeviceSelector, *Error) {
	if s == "" {
		return DeviceSelector{}, Errorf(CodeInvalidValue, "id", "empty device selector: give a device id, an index or *")
	}
	if s == "*" {
		return DeviceSelector{All: true, Index: -1}, nil
	}
	sel := DeviceSelector{ID: s, Index: -1}
	if n, err := strconv.Atoi(s); err == nil && n >= 0 && s[0] != '+' {
		sel.Index = n
	}
	return sel, nil
}

func (s DeviceSelector) String() string {
	if s.All {
		return "*"
	}
	return s.ID
}

// Match returns the indices into ids that s selects. An exact id match wins
// over an index reading (grip ids are decimal strings, so "1" may be both);
// then a case-insensitive id match ("049d"); then the index.
func (s DeviceSelector) Match(ids []string) []int {
	if s.All {
		out := make([]int, len(ids))
		for i := range ids {
			out[i] = i
		}
		return out
	}
	if out := s.MatchID(ids); len(out) > 0 {
		return out
	}
	if s.Index >= 0 && s.Index < len(ids) {
		return []int{s.Index}
	}
	return nil
}

// MatchID is Match without the index and "*" readings: the indices of ids
// that s's id names (NamesDeviceID), the exact ones if there are any.
func (s DeviceSelector) MatchID(ids []string) []int {
	if s.All {
		return nil
	}
	var exact, folded []int
	for i, id := range ids {
		switch NamesDeviceID(s.ID, id) {
		case IDExact:
			exact = append(exact, i)
		case IDFolded:
			folded = append(folded, i)
		}
	}
	if len(exact) > 0 {
		return exact
	}
	return folded
}

// IDMatch is how a device id a client gave names a device's id.
type IDMatch uint8

const (
	IDNone   IDMatch = iota
	IDFolded         // equal but for case
	IDExact
)

// NamesDeviceID is the one rule by which a device id a client gives (an
// HTTP path's {id}, a deprecated route's device_id, a WebSocket device
// entry's device_id or 3.0 key, a subscription's device_id) names the
// device whose id is id: exactly, or else regardless of case, since arm
// ids are hex that clients write in either case ("049d" is 049D). Where
// one id names several devices, the exact ones win, so ids that differ in
// case alone stay apart.
func NamesDeviceID(given, id string) IDMatch {
	switch {
	case given == id:
		return IDExact
	case strings.EqualFold(given, id):
		return IDFolded
	}
	return IDNone
}

// FamilySelector is the HTTP path segment that selects every device of
// type t whatever its name: "*inverse" for arms, "*verse_grip" for grips.
func FamilySelector(t DeviceType) string { return "*" + t.Family() }

// ParseFamilySelector resolves a family selector path segment to the
// collection it selects: every device of its type.
func ParseFamilySelector(seg string) (Collection, bool) {
	for _, t := range deviceTypes {
		if seg == FamilySelector(t) {
			return Collection{Key: seg, Type: t, Link: LinkAny}, true
		}
	}
	return Collection{}, false
}

// SessionRef is what a session selector matches against: one live session,
// listed in connection order.
type SessionRef struct {
	ID      uint64
	Profile string // "" when the session has no profile
}

type sessionSelKind uint8

const (
	selByID sessionSelKind = iota + 1
	selByIndex
	selByName
	selByNameIndex
)

// SessionSelector is a parsed ?session= value (PROTOCOL 3.2): "N" or "#N"
// (session id), ":I" (index in connection order, negative from the newest),
// "NAME" (profile name; '*' globs), "NAME:I" (index among those), and the
// vendor's ":NAME:I" (its selectors page: ":default:0", the first session
// of profile "default"), which is NAME:I read as an index always.
type SessionSelector struct {
	raw   string
	kind  sessionSelKind
	id    uint64
	name  string
	index int
	// indexOnly: the colon form, whose NAME:I is never a literal
	// profile name (NAME:I alone lets a profile so named win).
	indexOnly bool
}

// ParseSessionSelector parses a ?session= value.
func ParseSessionSelector(s string) (SessionSelector, *Error) {
	bad := func(why string) (SessionSelector, *Error) {
		return SessionSelector{}, Errorf(CodeInvalidValue, "session",
			"session selector %q %s: use N, #N, :I, :-1, NAME, NAME:I or :NAME:I", s, why)
	}
	sel := SessionSelector{raw: s}
	switch {
	case s == "":
		return bad("is empty")
	case s[0] == '#':
		id, err := strconv.ParseUint(s[1:], 10, 64)
		if err != nil || id == 0 || s[1] == '+' {
			return bad("is not a session id")
		}
		sel.kind, sel.id = selByID, id
	case s[0] == ':':
		if i, err := strconv.Atoi(s[1:]); err == nil && s[1] != '+' {
			sel.kind, sel.index = selByIndex, i
			break
		}
		name, i, ok := splitNameIndex(s[1:])
		if !ok {
			return bad("is neither an index nor :NAME:I")
		}
		sel.kind, sel.name, sel.index, sel.indexOnly = selByNameIndex, name, i, true
	case isDigits(s):
		id, err := strconv.ParseUint(s, 10, 64)
		if err != nil || id == 0 {
			return bad("is not a session id (ids start at 1)")
		}
		sel.kind, sel.id = selByID, id
	default:
		sel.kind, sel.name = selByName, s
		if name, i, ok := splitNameIndex(s); ok {
			sel.kind, sel.name, sel.index = selByNameIndex, name, i
		}
	}
	return sel, nil
}

// splitNameIndex splits NAME:I at its last colon when NAME is not empty and
// I is an integer (without a sign of +).
func splitNameIndex(s string) (name string, index int, ok bool) {
	at := strings.LastIndexByte(s, ':')
	if at <= 0 {
		return "", 0, false
	}
	i, err := strconv.Atoi(s[at+1:])
	if err != nil || s[at+1] == '+' {
		return "", 0, false
	}
	return s[:at], i, true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func (s SessionSelector) String() string { return s.raw }

// Match returns the ids of the sessions s selects, in connection order.
// For NAME:I, a profile literally named "NAME:I" wins over the index reading.
func (s SessionSelector) Match(refs []SessionRef) []uint64 {
	switch s.kind {
	case selByID:
		for _, r := range refs {
			if r.ID == s.id {
				return []uint64{r.ID}
			}
		}
	case selByIndex:
		if r, ok := pick(refs, s.index); ok {
			return []uint64{r.ID}
		}
	case selByName:
		return matchName(refs, s.name)
	case selByNameIndex:
		if exact := matchName(refs, s.raw); len(exact) > 0 && !s.indexOnly {
			return exact
		}
		var named []SessionRef
		for _, r := range refs {
			if r.Profile != "" && globMatch(s.name, r.Profile) {
				named = append(named, r)
			}
		}
		if r, ok := pick(named, s.index); ok {
			return []uint64{r.ID}
		}
	}
	return nil
}

func pick(refs []SessionRef, i int) (SessionRef, bool) {
	if i < 0 {
		i += len(refs)
	}
	if i < 0 || i >= len(refs) {
		return SessionRef{}, false
	}
	return refs[i], true
}

func matchName(refs []SessionRef, pattern string) []uint64 {
	var out []uint64
	for _, r := range refs {
		if r.Profile != "" && globMatch(pattern, r.Profile) {
			out = append(out, r.ID)
		}
	}
	return out
}

// globMatch matches name against pattern where only '*' is special (any run
// of characters): profile names are reverse-DNS strings that may hold '?',
// '[' or '\' literally, so path.Match's syntax would misread them.
func globMatch(pattern, name string) bool {
	// Iterative match with one backtrack point: linear in practice.
	p, n := 0, 0
	star, mark := -1, 0
	for n < len(name) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, n
			p++
		case p < len(pattern) && pattern[p] == name[n]:
			p++
			n++
		case star >= 0:
			p = star + 1
			mark++
			n = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
