package protocol

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// pathSeg is a lazily rendered path into a message
// ("arm3[0].configure.damping"): a string is built only when an error or
// warning needs it, so valid messages cost no allocation. It is a value with
// no pointers to other segments on purpose: a linked list of stack segments
// would escape to the heap as soon as one name reaches an error message
// (escape analysis is field-insensitive), costing an allocation per level
// per message.
type pathSeg struct {
	n     int
	names [maxPathDepth]string
	index [maxPathDepth]int32 // >= 0: an array index "[i]"; name unused
	// errs is where a message's errors at this path go, or nil: once its
	// list holds MaxErrors, an error is counted, not listed, and errAt
	// does not format it (a message of 20,000 bad entries must not cost
	// 20,000 formatted errors).
	errs *errorList
}

// errorList is a message's list of errors, and the one unlisted error
// errAt answers past MaxErrors (only its code is set: the caller counts it
// and reads nothing else of it).
type errorList struct {
	list     *[]Error
	unlisted Error
}

// maxPathDepth bounds the rendered depth; deeper levels render as "…".
// Known members nest at most 7 levels.
const maxPathDepth = 10

func rootPath(name string) pathSeg {
	var p pathSeg
	if name != "" {
		p.names[0], p.index[0], p.n = name, -1, 1
	}
	return p
}

func (p *pathSeg) child(name string) pathSeg {
	var c pathSeg
	if p != nil {
		c = *p
	}
	if c.n < maxPathDepth {
		c.names[c.n], c.index[c.n] = name, -1
	}
	c.n++
	return c
}

// push appends name to p in place for the duration of a call, and pop
// takes it off again: the per-message path uses them where child would
// copy all 208 bytes of the path for each level it descends.
func (p *pathSeg) push(name string) {
	if p.n < maxPathDepth {
		p.names[p.n], p.index[p.n] = name, -1
	}
	p.n++
}

func (p *pathSeg) pop() { p.n-- }

func (p *pathSeg) elem(i int) pathSeg {
	c := p.child("")
	if c.n <= maxPathDepth {
		c.index[c.n-1] = int32(i)
	}
	return c
}

// memberNames is p as the names of the members it goes through, outermost
// first; ok is false when it goes through an array element or deeper than
// p holds, where no UnknownMember.In can point.
func (p *pathSeg) memberNames() (names []string, ok bool) {
	if p.n > maxPathDepth {
		return nil, false
	}
	names = make([]string, p.n)
	for i := range names {
		if p.index[i] >= 0 {
			return nil, false
		}
		names[i] = p.names[i]
	}
	return names, true
}

// String renders the path.
func (p *pathSeg) String() string {
	if p == nil || p.n == 0 {
		return ""
	}
	var b []byte
	for i := 0; i < p.n && i < maxPathDepth; i++ {
		if p.index[i] >= 0 {
			b = append(b, '[')
			b = strconv.AppendInt(b, int64(p.index[i]), 10)
			b = append(b, ']')
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, ClipQuoted(p.names[i])...)
	}
	if p.n > maxPathDepth {
		b = append(b, ".…"...)
	}
	return string(b)
}

// last is the final name of the path, for messages ("gain is out of range").
func (p *pathSeg) last() string {
	if p == nil {
		return "value"
	}
	for i := min(p.n, maxPathDepth) - 1; i >= 0; i-- {
		if p.index[i] < 0 && p.names[i] != "" {
			return p.names[i]
		}
	}
	return "value"
}

// errAt is the error at path at. Past MaxErrors of a message's list it is
// not formatted: the caller only counts it.
func errAt(code Code, at *pathSeg, format string, args ...any) *Error {
	if at.pastCap() {
		at.errs.unlisted = Error{Code: code}
		return &at.errs.unlisted
	}
	msg := messagef(format, args)
	if msg == "" {
		msg = code.DefaultMessage()
	}
	return &Error{Code: code, Message: msg, Path: at.String()}
}

// pastCap reports whether an error at p would be counted, not listed.
func (p *pathSeg) pastCap() bool {
	return p != nil && p.errs != nil && len(*p.errs.list) >= MaxErrors
}

// nameList is an argument of errAt printed as its names joined by ", ",
// joined only when the message is formatted.
type nameList []string

// maxQuotedBytes bounds what an error repeats of the client's own text (a
// member's name, a value's token), in its message and its path alike: a
// 480 KB unknown member's name came back twice in a 962 KB frame, past a
// client's frame limit (tourfx2).
const maxQuotedBytes = 200

// ClipQuoted is s, or its first maxQuotedBytes (whole UTF-8 characters) and
// how long it was: what an error repeats of the client's text (the decoders
// clip their own; a layer above clips what it quotes).
func ClipQuoted(s string) string {
	if len(s) <= maxQuotedBytes {
		return s
	}
	cut := maxQuotedBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// messagef is fmt.Sprintf(format, args...) for errAt and warnings.add, whose
// args, unlike fmt's, do not escape: their callers box the arguments on the
// stack, so an error or warning past its cap, never formatted, costs no
// allocation. It copies each argument by value for fmt; the types below
// are those the decoders pass (TestMessageArgumentsAreCopied), and another
// is named, not formatted.
func messagef(format string, args []any) string {
	if len(args) == 0 {
		return format
	}
	copied := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			copied[i] = strings.Clone(ClipQuoted(v))
		case []byte:
			copied[i] = ClipQuoted(string(v)) // %s and %q print both alike
		case []string:
			copied[i] = "[" + strings.Join(v, " ") + "]" // as %v prints it
		case nameList:
			copied[i] = strings.Join(v, ", ")
		case int:
			copied[i] = v
		case float64:
			copied[i] = v
		case JSONKind:
			copied[i] = v
		case Key:
			copied[i] = v
		default:
			copied[i] = "(an argument errAt cannot format)"
		}
	}
	return fmt.Sprintf(format, copied...)
}

// partErrors passes on the errors of a part of a message that reports each
// of them rather than the first (a device's commands, an effects
// declaration), and counts them: the part failed when n grew.
type partErrors struct {
	to failer
	n  int
}

// failer takes a part's errors: a message's list (ClientMessage.fail, which
// counts those past MaxErrors), or the first of a part decoded alone.
type failer interface{ fail(*Error) }

// note passes on err, if any.
func (p *partErrors) note(err *Error) {
	if err == nil {
		return
	}
	p.n++
	p.to.fail(err)
}

// firstError keeps the first error of a part decoded alone.
type firstError struct{ err *Error }

func (f *firstError) fail(e *Error) {
	if f.err == nil {
		f.err = e
	}
}

// warnings collects warnings; a nil list discards them (a stored document
// read back, whose unknown members nobody is there to hear of).
type warnings struct {
	list    *[]Error
	dropped *int // counts warnings past MaxWarnings; nil: list is nil too
	// kept, when set, collects each unknown member with its place (a
	// stored document's, for the store to write back: a newer build's
	// field inside an entry this build knows).
	kept *unknownMembers
}

// full reports a list with no room left: the warning is counted, never
// formatted (a message of 60,000 unknown fields costs no more than one).
func (w warnings) full() bool {
	if w.list == nil {
		return true
	}
	if len(*w.list) >= MaxWarnings {
		*w.dropped++
		return true
	}
	return false
}

func (w warnings) add(code Code, at *pathSeg, format string, args ...any) {
	if w.full() {
		return
	}
	// Not errAt: the cap on errors is not the warnings'.
	*w.list = append(*w.list, Error{Code: code, Message: messagef(format, args), Path: at.String()})
}

func (w warnings) unknownField(at *pathSeg, it *MemberIter) {
	if w.kept != nil {
		if in, ok := at.memberNames(); ok {
			w.kept.addIn(it, in)
		}
	}
	if w.full() {
		return
	}
	key := string(it.Key())
	c := at.child(key)
	w.add(CodeUnknownField, &c, "unknown field %q in %s: ignored", key, at.last())
}

// bodyWarnings collects the warnings of one body decoded alone (an HTTP
// POST body, a deprecated route's body): the same unknown members a
// frame's warnings name (warnings.unknownField decides for both), capped as
// a frame's list is.
type bodyWarnings struct {
	list    []Error
	dropped int
}

func (b *bodyWarnings) sink() warnings { return warnings{list: &b.list, dropped: &b.dropped} }

// done is the list, capped (TrimWarnings), with root, the name the body's
// root was given for the messages ("damping" in "unknown field "x" in
// damping"), taken off the paths: a path points into the body.
func (b *bodyWarnings) done(root string) []Error {
	for i := range b.list {
		b.list[i].Path = trimRoot(root, b.list[i].Path)
	}
	return TrimWarnings(b.list, b.dropped)
}

// trimRoot takes the root's name off path p ("damping.x" is "x" in the
// body of damping).
func trimRoot(root, p string) string {
	return strings.TrimPrefix(strings.TrimPrefix(p, root), ".")
}

// expectObject checks that v is an object; example shows the right shape.
func expectObject(v Value, at *pathSeg, example string) *Error {
	if v.Kind() == KindObject {
		return nil
	}
	return errAt(CodeInvalidValue, at, "%s must be an object like %s, got %s", at.last(), example, v.Kind())
}

// parseObject parses a stored document or body into doc and returns its
// root, which must be an object; example shows the right shape.
func parseObject(doc *Doc, data []byte, example string) (Value, *Error) {
	if err := doc.Parse(data); err != nil {
		return Value{}, err
	}
	root := doc.Root()
	at := rootPath("")
	if e := expectObject(root, &at, example); e != nil {
		return Value{}, e
	}
	return root, nil
}

// readFloat reads a finite number.
func readFloat(v Value, at *pathSeg) (float64, *Error) {
	if v.Kind() != KindNumber {
		return 0, errAt(CodeInvalidValue, at, "%s must be a number, got %s", at.last(), v.Kind())
	}
	f, ok := v.Float()
	if !ok {
		return 0, errAt(CodeInvalidValue, at, "%s is not a number a float64 holds (finite, and 0 or at least 5e-324 in size): %s", at.last(), v.Raw())
	}
	return f, nil
}

// readRange reads a finite number within lo..hi (inclusive).
func readRange(v Value, at *pathSeg, lo, hi float64) (float64, *Error) {
	f, e := readFloat(v, at)
	if e != nil {
		return 0, e
	}
	if f < lo || f > hi {
		return 0, errAt(CodeOutOfRange, at, "%s %g is out of range %g..%g", at.last(), f, lo, hi)
	}
	return f, nil
}

// readInt reads an integral number within lo..hi.
func readInt(v Value, at *pathSeg, lo, hi int) (int, *Error) {
	f, e := readFloat(v, at)
	if e != nil {
		return 0, e
	}
	// The range first: past int64 (1e300), int64(f) is not f and a
	// whole number would be called fractional.
	if f < float64(lo) || f > float64(hi) {
		// A whole number as one (3600001, not 3.600001e+06), as the
		// range beside it is written.
		num := strconv.FormatFloat(f, 'g', -1, 64)
		if f == math.Trunc(f) && math.Abs(f) < 1e15 {
			num = strconv.FormatFloat(f, 'f', 0, 64)
		}
		return 0, errAt(CodeOutOfRange, at, "%s %s is out of range %d..%d", at.last(), num, lo, hi)
	}
	if f != math.Trunc(f) {
		return 0, errAt(CodeInvalidValue, at, "%s must be a whole number, got %s", at.last(), v.Raw())
	}
	return int(f), nil
}

func readBool(v Value, at *pathSeg) (bool, *Error) {
	b, ok := v.Bool()
	if !ok {
		return false, errAt(CodeInvalidValue, at, "%s must be true or false, got %s", at.last(), v.Kind())
	}
	return b, nil
}

// soleMember is the value of member name of object v, the last occurrence
// when the name repeats (the rule Value.Member documents: a later null
// removes an earlier value), and the path to it. Other members are warnings.
// v must be an object; example shows the right shape. The value does not
// exist when the member is missing or null.
func soleMember(v Value, at *pathSeg, w warnings, name, example string) (Value, pathSeg, *Error) {
	if e := expectObject(v, at, example); e != nil {
		return Value{}, pathSeg{}, e
	}
	var val Value
	for it := v.Members(); it.Next(); {
		if it.KeyIs(name) {
			val = it.Value()
			continue
		}
		w.unknownField(at, &it)
	}
	return val, at.child(name), nil
}

// readComponents reads an object of finite numbers named by names (all
// required, at most 4) into out; unknown members are warnings. A repeated
// name counts by its last occurrence, as in soleMember.
func readComponents(v Value, at *pathSeg, names []string, out []float64, example string, w warnings) *Error {
	if e := expectObject(v, at, example); e != nil {
		return e
	}
	var vals [4]Value
	for it := v.Members(); it.Next(); {
		matched := false
		for i, n := range names {
			if it.KeyIs(n) {
				vals[i], matched = it.Value(), true
				break
			}
		}
		if !matched {
			w.unknownField(at, &it)
		}
	}
	complete := true
	for i, n := range names {
		if !vals[i].Exists() {
			complete = false
			continue
		}
		f, ok := vals[i].Float()
		if !ok { // the path is built only for the error: it is a 200-byte copy
			c := at.child(n)
			_, e := readFloat(vals[i], &c)
			return e
		}
		out[i] = f
	}
	if !complete {
		return errAt(CodeInvalidValue, at, "%s needs all of %v: send %s", at.last(), names, example)
	}
	return nil
}

// Component names; never written.
var (
	vec3Names    = []string{"x", "y", "z"}
	quatNames    = []string{"w", "x", "y", "z"}
	angles3Names = []string{"a0", "a1", "a2"}
)

func readVec3(v Value, at *pathSeg, w warnings) (Vec3, *Error) {
	var c [3]float64
	if e := readComponents(v, at, vec3Names, c[:], `{"x": 0, "y": 0, "z": 0}`, w); e != nil {
		return Vec3{}, e
	}
	return Vec3{X: c[0], Y: c[1], Z: c[2]}, nil
}

func readQuat(v Value, at *pathSeg, w warnings) (Quat, *Error) {
	var c [4]float64
	if e := readComponents(v, at, quatNames, c[:], `{"w": 1, "x": 0, "y": 0, "z": 0}`, w); e != nil {
		return Quat{}, e
	}
	return Quat{W: c[0], X: c[1], Y: c[2], Z: c[3]}, nil
}

func readAngles3(v Value, at *pathSeg, w warnings) (Angles3, *Error) {
	var c [3]float64
	if e := readComponents(v, at, angles3Names, c[:], `{"a0": 0, "a1": 0, "a2": 0}`, w); e != nil {
		return Angles3{}, e
	}
	return Angles3{A0: c[0], A1: c[1], A2: c[2]}, nil
}

// readEnum reads a string and interns it against a table of known values,
// so the common values cost no allocation. An unknown value is returned
// with known false, as "" where an error at at is past the cap (it is
// counted, and named nowhere).
func readEnum(v Value, at *pathSeg, table []string) (string, bool, *Error) {
	b, ok := v.StringBytes()
	if !ok {
		return "", false, errAt(CodeInvalidValue, at, "%s must be a string, got %s", at.last(), v.Kind())
	}
	for _, s := range table {
		if string(b) == s {
			return s, true, nil
		}
	}
	if at.pastCap() {
		return "", false, nil // named only in an error that is counted, not listed
	}
	return string(b), false, nil
}
