package protocol

import "strconv"

// The command fast path: the message a streaming client sends every tick,
//
//	{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}
//
// decoded in one pass over the bytes, without the tape and the walk of the
// general decoder (Doc.Parse, then the members). That was most of a
// lock-step message's cost inside the service. The path accepts only the
// exact shape below and only what the general decoder would accept without
// a warning; on anything else it reports false and the general decoder
// decodes the message from the start, so every error, warning and unusual
// spelling keeps the one meaning the general decoder gives it
// (TestFastDecodeAgreesWithGeneral, FuzzFastDecodeAgreesWithGeneral).
//
// The shape, whitespace allowed between tokens as JSON allows it:
//
//	{ TYPE : [ ENTRY , ... ] }
//	ENTRY   = { "device_id" : ID , "commands" : { COMMAND : BODY } }
//	BODY    = { FIELD : { C0 : number , C1 : number , C2 : number } }  (a control command)
//	        | { }                                                      (a probe)
//
// TYPE is a key of the type table (not "session" or "keep_alive"), ID a
// non-empty string, COMMAND a command of TYPE's device type, FIELD its
// documented field or the alternative spelling, C0..C2 its components in
// order (x, y, z or a0, a1, a2). Strings must be printable ASCII without
// escapes; numbers must fit a float64.

// fastScan reads data from pos. Every method reports false, and may leave
// pos anywhere, when data does not continue as asked.
type fastScan struct {
	data []byte
	pos  int
}

func (s *fastScan) space() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// token reads c after optional whitespace.
func (s *fastScan) token(c byte) bool {
	if s.pos < len(s.data) && s.data[s.pos] == c { // compact JSON: no whitespace
		s.pos++
		return true
	}
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// plain reads a string of printable ASCII without escapes and returns its
// content: such a string means its bytes, as the general decoder reads it.
func (s *fastScan) plain() ([]byte, bool) {
	s.space()
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return nil, false
	}
	start := s.pos + 1
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			return s.data[start:i], true
		case c < 0x20 || c >= 0x7f || c == '\\':
			return nil, false
		}
	}
	return nil, false
}

// key reads the member name k and its colon. k is one of the path's
// names, plain ASCII: the string "k" is read exactly as plain would read
// it, compared at once rather than scanned byte by byte.
func (s *fastScan) key(k string) bool {
	s.space()
	d := s.data[s.pos:]
	if len(d) < len(k)+2 || d[0] != '"' || string(d[1:1+len(k)]) != k || d[1+len(k)] != '"' {
		return false
	}
	s.pos += len(k) + 2
	return s.token(':')
}

// number reads a JSON number (the grammar of parser.number) and converts
// it as Value.Float does.
func (s *fastScan) number() (float64, bool) {
	s.space()
	d := s.data
	start, i := s.pos, s.pos
	digits := func() int {
		n := 0
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(d) && d[i] == '-' {
		i++
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if digits() == 0 {
		return 0, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if digits() == 0 {
			return 0, false
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	s.pos = i
	return numberFloat(d[start:i])
}

// decodeCommandFast decodes data into m (reset first) when data has the
// fast path's shape, and reports whether it did. When it reports false, m
// holds nothing meaningful: decode data with the general decoder.
func (m *ClientMessage) decodeCommandFast(data []byte, types *TypeTable) bool {
	m.Reset()
	m.types = types
	s := fastScan{data: data}
	if !s.token('{') {
		return false
	}
	typeKey, ok := s.plain()
	if !ok || string(typeKey) == "session" || string(typeKey) == keepAlive || !s.token(':') {
		return false
	}
	dt, key, ok := types.Lookup(typeKey)
	if !ok || !s.token('[') {
		return false
	}
	for index := 0; ; index++ {
		if !m.decodeEntryFast(&s, dt, key, index) {
			return false
		}
		if s.token(']') {
			break
		}
		if !s.token(',') {
			return false
		}
	}
	if !s.token('}') {
		return false
	}
	s.space()
	return s.pos == len(data)
}

// decodeEntryFast decodes one ENTRY of the fast path's shape as
// DecodeDevice would.
func (m *ClientMessage) decodeEntryFast(s *fastScan, dt DeviceType, typeKey string, index int) bool {
	if !s.token('{') || !s.key("device_id") {
		return false
	}
	id, ok := s.plain()
	if !ok || len(id) == 0 || !s.token(',') || !s.key("commands") || !s.token('{') {
		return false
	}
	name, ok := s.plain()
	if !ok || !s.token(':') {
		return false
	}
	kind := commandFromName(name)
	if kind == CmdNone {
		return false
	}
	info := &commandTable[kind]
	if info.dt != dt || !s.token('{') {
		return false
	}
	cmd := DeviceCommand{Kind: kind}
	if info.control {
		field, ok := s.plain()
		if !ok || (string(field) != info.fields[0] && (info.fields[1] == "" || string(field) != info.fields[1])) || !s.token(':') {
			return false
		}
		names := vec3Names
		if kind == CmdSetAngularTorques || kind == CmdSetAngularPosition {
			names = angles3Names
		}
		var c [3]float64
		if !s.token('{') {
			return false
		}
		for i, n := range names {
			if i > 0 && !s.token(',') {
				return false
			}
			if !s.key(n) {
				return false
			}
			if c[i], ok = s.number(); !ok {
				return false
			}
		}
		if !s.token('}') || !s.token('}') {
			return false
		}
		if names[0] == "x" {
			cmd.Vec = Vec3{X: c[0], Y: c[1], Z: c[2]}
		} else {
			cmd.Angles = Angles3{A0: c[0], A1: c[1], A2: c[2]}
		}
	} else if !s.token('}') { // a probe's body is {}
		return false
	}
	if !s.token('}') || !s.token('}') {
		return false
	}
	e := m.nextDevice()
	e.Type, e.TypeKey = dt, typeKey
	m.pathBuf = append(strconv.AppendInt(append(append(m.pathBuf[:0], typeKey...), '['), int64(index), 10), ']')
	e.Path = reuse(e.Path, m.pathBuf)
	e.DeviceID = reuse(e.DeviceID, id)
	e.Command = cmd
	return true
}
