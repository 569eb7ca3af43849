package protocol

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// JSONKind is the kind of a JSON value.
type JSONKind uint8

const (
	KindInvalid JSONKind = iota
	KindObject
	KindArray
	KindString
	KindNumber
	KindBool
	KindNull
)

func (k JSONKind) String() string {
	switch k {
	case KindObject:
		return "an object"
	case KindArray:
		return "an array"
	case KindString:
		return "a string"
	case KindNumber:
		return "a number"
	case KindBool:
		return "a boolean"
	case KindNull:
		return "null"
	}
	return "nothing"
}

// maxDepth bounds nesting so that a hostile message cannot exhaust the stack.
const maxDepth = 64

// node is one value on the tape. Objects are followed by their members as
// key, value pairs; arrays by their elements. next is the tape index just
// past the node's subtree, so a reader skips a value in one step.
type node struct {
	kind    JSONKind
	escaped bool   // string with backslash escapes
	truth   bool   // KindBool value
	start   uint32 // string: first byte after the quote; others: first byte
	end     uint32 // string: the closing quote; others: one past the last byte
	next    uint32
}

// Doc is a parsed JSON document: a flat tape over the caller's bytes. A Doc
// is reused across messages (Parse keeps its capacity), which is what keeps
// per-tick decoding free of allocation. The bytes must not change while the
// Doc is in use. A Doc is not safe for concurrent use.
//
// Doc and Value are exported for the codecs of this module (3.x here, 3.0 in
// protocol/v30): both walk the same tape with the same entry decoders.
type Doc struct {
	data    []byte
	tape    []node
	scratch []byte // unescaped strings
}

// Scratch a Doc keeps between parses, at most: a message over these
// (about 4,000 values, 4 KiB of escaped strings) has its scratch dropped
// after use.
const (
	maxKeptTapeNodes    = 4096
	maxKeptScratchBytes = 4 << 10
)

// release drops the reference to the parsed bytes and any scratch grown
// past the kept sizes. Values of d are invalid afterwards.
func (d *Doc) release() {
	d.data = nil
	if cap(d.tape) > maxKeptTapeNodes {
		d.tape = nil
	}
	if cap(d.scratch) > maxKeptScratchBytes {
		d.scratch = nil
	}
}

// Value is one value of a Doc. The zero Value is invalid (Kind() ==
// KindInvalid), which is what Member answers for a missing key.
type Value struct {
	doc *Doc
	i   uint32
	ok  bool
}

// Parse validates data as one JSON value (RFC 8259, UTF-8, no trailing
// data) and builds the tape. On failure it returns a CodeInvalidJSON error
// naming the byte offset.
func (d *Doc) Parse(data []byte) *Error {
	d.data = data
	d.tape = d.tape[:0]
	if !utf8.Valid(data) {
		return Errorf(CodeInvalidJSON, "", "the message is not valid UTF-8: send UTF-8 JSON")
	}
	p := parser{d: d, data: data}
	p.skipSpace()
	if msg := p.value(0); msg != "" {
		return Errorf(CodeInvalidJSON, "", "not valid JSON at byte %d: %s", p.pos, msg)
	}
	p.skipSpace()
	if p.pos != len(data) {
		return Errorf(CodeInvalidJSON, "", "not valid JSON at byte %d: data after the end of the value", p.pos)
	}
	return nil
}

// Root is the document's value. It is invalid before a successful Parse.
func (d *Doc) Root() Value {
	if len(d.tape) == 0 {
		return Value{}
	}
	return Value{doc: d, i: 0, ok: true}
}

type parser struct {
	d    *Doc
	data []byte
	pos  int
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) push(n node) uint32 {
	p.d.tape = append(p.d.tape, n)
	return uint32(len(p.d.tape) - 1)
}

// value parses one value at p.pos and returns "" or what is wrong.
func (p *parser) value(depth int) string {
	if depth >= maxDepth { // depth counts from 0 at the root
		return "nested deeper than 64 levels"
	}
	if p.pos >= len(p.data) {
		return "unexpected end of input"
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true", KindBool, true)
	case c == 'f':
		return p.literal("false", KindBool, false)
	case c == 'n':
		return p.literal("null", KindNull, false)
	}
	// The data is valid UTF-8 (Parse checked): name the character, not
	// its first byte ("ï" was the first of a byte order mark's three).
	c, _ := utf8.DecodeRune(p.data[p.pos:])
	if c == '\uFEFF' {
		return "a UTF-8 byte order mark (bytes EF BB BF, U+FEFF) is not JSON: send the JSON without it"
	}
	return "unexpected character " + strconv.QuoteRune(c)
}

func (p *parser) literal(word string, k JSONKind, truth bool) string {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return "unknown literal (numbers must be finite; NaN and Infinity are not JSON)"
	}
	p.push(node{kind: k, truth: truth, start: uint32(p.pos), end: uint32(p.pos + len(word)), next: uint32(len(p.d.tape) + 1)})
	p.pos += len(word)
	return ""
}

func (p *parser) object(depth int) string {
	at := p.push(node{kind: KindObject, start: uint32(p.pos)})
	p.pos++
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.close(at)
		return ""
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return "expected a member name in quotes"
		}
		if msg := p.str(); msg != "" {
			return msg
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return "expected ':' after a member name"
		}
		p.pos++
		p.skipSpace()
		if msg := p.value(depth + 1); msg != "" {
			return msg
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return "unexpected end of input in an object"
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			p.close(at)
			return ""
		default:
			return "expected ',' or '}' in an object"
		}
	}
}

func (p *parser) array(depth int) string {
	at := p.push(node{kind: KindArray, start: uint32(p.pos)})
	p.pos++
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.close(at)
		return ""
	}
	for {
		p.skipSpace()
		if msg := p.value(depth + 1); msg != "" {
			return msg
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return "unexpected end of input in an array"
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			p.close(at)
			return ""
		default:
			return "expected ',' or ']' in an array"
		}
	}
}

func (p *parser) close(at uint32) {
	n := &p.d.tape[at]
	n.end = uint32(p.pos)
	n.next = uint32(len(p.d.tape))
}

func (p *parser) str() string {
	start := p.pos + 1
	escaped := false
	i := start
	for i < len(p.data) {
		c := p.data[i]
		switch {
		case c == '"':
			p.push(node{kind: KindString, escaped: escaped, start: uint32(start), end: uint32(i), next: uint32(len(p.d.tape) + 1)})
			p.pos = i + 1
			return ""
		case c == '\\':
			escaped = true
			if i+1 >= len(p.data) {
				p.pos = i
				return "unterminated escape"
			}
			switch p.data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(p.data) || !isHex4(p.data[i+2:i+6]) {
					p.pos = i
					return `\u needs four hex digits`
				}
				i += 6
			default:
				p.pos = i
				return "invalid escape"
			}
		case c < 0x20:
			p.pos = i
			return "control character in a string"
		default:
			i++
		}
	}
	p.pos = i
	return "unterminated string"
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func (p *parser) number() string {
	start := p.pos
	i := p.pos
	if p.data[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(p.data) && p.data[i] >= '0' && p.data[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(p.data) && p.data[i] == '0' {
		i++
	} else if digits() == 0 {
		p.pos = i
		return "a number needs digits (NaN and Infinity are not JSON)"
	}
	if i < len(p.data) && p.data[i] == '.' {
		i++
		if digits() == 0 {
			p.pos = i
			return "a number needs digits after '.'"
		}
	}
	if i < len(p.data) && (p.data[i] == 'e' || p.data[i] == 'E') {
		i++
		if i < len(p.data) && (p.data[i] == '+' || p.data[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.pos = i
			return "a number needs digits in its exponent"
		}
	}
	p.push(node{kind: KindNumber, start: uint32(start), end: uint32(i), next: uint32(len(p.d.tape) + 1)})
	p.pos = i
	return ""
}

func (v Value) n() *node { return &v.doc.tape[v.i] }

// Kind is the value's kind; KindInvalid for the zero Value.
func (v Value) Kind() JSONKind {
	if !v.ok {
		return KindInvalid
	}
	return v.n().kind
}

// Exists reports whether v is present and not null: the rule "null counts as
// absent" in one place.
func (v Value) Exists() bool { k := v.Kind(); return k != KindInvalid && k != KindNull }

// Raw is the value's JSON text (for objects and arrays, the whole text).
func (v Value) Raw() []byte {
	if !v.ok {
		return nil
	}
	n := v.n()
	if n.kind == KindString {
		return v.doc.data[n.start-1 : n.end+1]
	}
	return v.doc.data[n.start:n.end]
}

// Bool is the value of a boolean.
func (v Value) Bool() (bool, bool) {
	if v.Kind() != KindBool {
		return false, false
	}
	return v.n().truth, true
}

// Float parses a number. It fails for non-numbers and for numbers whose
// magnitude does not fit a float64 (1e400): those are not finite.
func (v Value) Float() (float64, bool) {
	if v.Kind() != KindNumber {
		return 0, false
	}
	n := v.n()
	return numberFloat(v.doc.data[n.start:n.end])
}

// numberFloat converts a JSON number the grammar accepted: false when its
// magnitude does not fit a float64, too large (1e400) or too small for
// any but zero (1e-400, which strconv rounds to 0 without an error: a
// rate, a normal or a scale the client sent as non-zero read as zero).
// Value.Float and the command fast path (decodefast.go) share it, so both
// give the same float64 for a text.
func numberFloat(text []byte) (float64, bool) {
	if f, ok := exactDecimal(text); ok {
		return f, true
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || f == 0 && !zeroDigits(text) {
		return 0, false
	}
	return f, true
}

// zeroDigits says whether a JSON number's digits before its exponent are
// all zeros (0, -0.000, 0e5): a number that is zero, not one that
// underflowed.
func zeroDigits(text []byte) bool {
	for _, c := range text {
		switch {
		case c == 'e' || c == 'E':
			return true
		case c >= '1' && c <= '9':
			return false
		}
	}
	return true
}

// exactPow10 holds the powers of ten a float64 represents exactly.
var exactPow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22} // never written

// exactDecimal converts the numbers clients send most (0, 1.5, -0.125: no
// exponent, at most 15 digits) without strconv, whose general path cost
// about a tenth of decoding a force command. The digits form an integer m
// below 2^53 and the fraction has k digits, so m and 10^k are exact
// float64 values and m / 10^k is one correctly rounded division: the same
// float64 strconv.ParseFloat returns (which also takes this path). Other
// numbers report false. text is a JSON number the parser validated.
func exactDecimal(text []byte) (float64, bool) {
	neg := len(text) > 0 && text[0] == '-'
	if neg {
		text = text[1:]
	}
	if len(text) == 0 || len(text) > 16 { // 15 digits and a point
		return 0, false
	}
	var m uint64
	digits := 0
	frac := -1 // digits after the point; -1 before it
	for _, c := range text {
		switch {
		case c >= '0' && c <= '9':
			if digits++; digits > 15 { // m could reach 2^53
				return 0, false
			}
			m = m*10 + uint64(c-'0')
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0:
			frac = 0
		default: // an exponent
			return 0, false
		}
	}
	f := float64(m)
	if frac > 0 {
		f /= exactPow10[frac]
	}
	if neg {
		f = -f
	}
	return f, true
}

// StringBytes is a string's content, unescaped. Unescaped strings come
// straight from the message; escaped ones are decoded into the Doc's scratch
// space and stay valid until the next StringBytes call on the same Doc.
func (v Value) StringBytes() ([]byte, bool) {
	if v.Kind() != KindString {
		return nil, false
	}
	n := v.n()
	raw := v.doc.data[n.start:n.end]
	if !n.escaped {
		return raw, true
	}
	v.doc.scratch = unescape(v.doc.scratch[:0], raw)
	return v.doc.scratch, true
}

// String is a string's content as a new Go string.
func (v Value) String() (string, bool) {
	b, ok := v.StringBytes()
	return string(b), ok
}

// unescape decodes JSON escapes; raw was validated by the parser.
func unescape(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			dst = append(dst, c)
			i++
			continue
		}
		switch raw[i+1] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := rune(hex4(raw[i+2 : i+6]))
			i += 6
			if r >= 0xD800 && r < 0xDC00 && i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
				lo := rune(hex4(raw[i+2 : i+6]))
				if lo >= 0xDC00 && lo < 0xE000 {
					r = (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000
					i += 6
				}
			}
			dst = utf8.AppendRune(dst, r) // lone surrogates become U+FFFD
			continue
		default: // '"', '\\', '/'
			dst = append(dst, raw[i+1])
		}
		i += 2
	}
	return dst
}

func hex4(b []byte) uint16 {
	var r uint16
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= uint16(c - '0')
		case c >= 'a' && c <= 'f':
			r |= uint16(c - 'a' + 10)
		default:
			r |= uint16(c - 'A' + 10)
		}
	}
	return r
}

// Members iterates over an object's members; it yields nothing for other
// kinds.
//
//	for it := v.Members(); it.Next(); { it.Key(); it.Value() }
func (v Value) Members() MemberIter {
	if v.Kind() != KindObject {
		return MemberIter{}
	}
	return MemberIter{doc: v.doc, cur: v.i + 1, end: v.n().next, key: ^uint32(0)}
}

// Len is the number of members of an object or elements of an array.
func (v Value) Len() int {
	n := 0
	switch v.Kind() {
	case KindObject:
		for it := v.Members(); it.Next(); {
			n++
		}
	case KindArray:
		for it := v.Elements(); it.Next(); {
			n++
		}
	}
	return n
}

// Member is the value under key, or the zero Value. With duplicate keys the
// last one wins, as in encoding/json.
func (v Value) Member(key string) Value {
	var found Value
	for it := v.Members(); it.Next(); {
		if it.KeyIs(key) {
			found = it.Value()
		}
	}
	return found
}

// MemberIter walks an object's members in order.
type MemberIter struct {
	doc      *Doc
	cur, end uint32
	key      uint32
}

// Next advances to the next member.
func (it *MemberIter) Next() bool {
	if it.doc == nil || it.cur >= it.end {
		return false
	}
	it.key = it.cur
	it.cur = it.doc.tape[it.key+1].next
	return true
}

// Key is the member's name, unescaped (see StringBytes for its lifetime).
func (it *MemberIter) Key() []byte {
	b, _ := Value{doc: it.doc, i: it.key, ok: true}.StringBytes()
	return b
}

// KeyIs compares the member's name with s without allocating.
func (it *MemberIter) KeyIs(s string) bool {
	n := &it.doc.tape[it.key]
	if !n.escaped {
		return string(it.doc.data[n.start:n.end]) == s
	}
	return string(it.Key()) == s
}

// Value is the member's value.
func (it *MemberIter) Value() Value { return Value{doc: it.doc, i: it.key + 1, ok: true} }

// Superseded reports whether a later member of the same object has this
// member's name. A name given twice counts by its last occurrence (as in
// Member and encoding/json, and as docs/protocol.md promises), so a decoder
// that acts on members one by one skips a superseded one: a null or {}
// given last must undo a command given first.
//
// It scans forward to the next member of the same name, so call it only
// for the few names a decoder knows: for each such name the scans of its
// occurrences add up to one pass over the object, and a message of many
// unknown names costs nothing.
func (it *MemberIter) Superseded() bool {
	n := &it.doc.tape[it.key]
	if n.escaped {
		// Rare: compare unescaped names, from a copy (the scratch space is
		// reused by the next string read).
		name := string(it.Key())
		for later := *it; later.Next(); {
			if later.KeyIs(name) {
				return true
			}
		}
		return false
	}
	name := it.doc.data[n.start:n.end]
	for later := *it; later.Next(); {
		ln := &later.doc.tape[later.key]
		if ln.escaped {
			if string(later.Key()) == string(name) {
				return true
			}
			continue
		}
		if string(later.doc.data[ln.start:ln.end]) == string(name) {
			return true
		}
	}
	return false
}

// Elements iterates over an array's elements; it yields nothing for other
// kinds.
func (v Value) Elements() ElementIter {
	if v.Kind() != KindArray {
		return ElementIter{}
	}
	return ElementIter{doc: v.doc, cur: v.i + 1, end: v.n().next, at: ^uint32(0), index: -1}
}

// ElementIter walks an array's elements in order.
type ElementIter struct {
	doc      *Doc
	cur, end uint32
	at       uint32
	index    int
}

// Next advances to the next element.
func (it *ElementIter) Next() bool {
	if it.doc == nil || it.cur >= it.end {
		return false
	}
	it.at = it.cur
	it.cur = it.doc.tape[it.at].next
	it.index++
	return true
}

// Index is the element's 0-based position.
func (it *ElementIter) Index() int { return it.index }

// Value is the element.
func (it *ElementIter) Value() Value { return Value{doc: it.doc, i: it.at, ok: true} }
