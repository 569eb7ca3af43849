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
//	{ MEMBER , ... }
//	MEMBER  = TYPE : [ ENTRY , ... ]   (an empty array too; each TYPE once, at most 4)
//	        | "keep_alive" : LIVE
//	ENTRY   = { "device_id" : ID , "commands" : { ITEM , ... } }   (no ITEM too)
//	ITEM    = COMMAND : BODY                   (at most one)
//	        | "set_gravity_compensation" : BOOL (at most once; arms only)
//	        | "keep_alive" : LIVE               (at most once)
//	BODY    = { FIELD : { C0 : number , C1 : number , C2 : number } }  (a control command)
//	        | { }                                                      (a probe)
//	BOOL    = true | false
//	LIVE    = { } | true | false | null
//
// TYPE is a key of the type table (not "session" or "keep_alive"), ID a
// non-empty string, COMMAND a command of TYPE's device type, FIELD its
// documented field or the alternative spelling, C0..C2 its components in
// order (x, y, z or a0, a1, a2). Strings must be printable ASCII without
// escapes; numbers must fit a float64. The state commands are the ones
// real clients send beside every control command (sawHaplyService's
// set_gravity_compensation with a grip's probe under each grip name, the
// ROS 2 handle node's keep_alive); set_transform and their other
// spellings go to the general decoder.

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

// word reads the literal w (true, false or null) after optional
// whitespace. What follows it is the caller's next token, so "truex" fails
// there.
func (s *fastScan) word(w string) bool {
	s.space()
	if len(s.data)-s.pos < len(w) || string(s.data[s.pos:s.pos+len(w)]) != w {
		return false
	}
	s.pos += len(w)
	return true
}

// boolean reads true or false.
func (s *fastScan) boolean() (value, ok bool) {
	if s.word("true") {
		return true, true
	}
	return false, s.word("false")
}

// liveness reads the value of a keep_alive the fast path takes: {}, true,
// false or null. Any value means the same (nothing but the frame every
// message gets), but only these are read without a general JSON scan.
func (s *fastScan) liveness() bool {
	s.space()
	if s.pos < len(s.data) && s.data[s.pos] == '{' {
		s.pos++
		return s.token('}')
	}
	return s.word("true") || s.word("false") || s.word("null")
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
	// The type keys read so far: a key given twice counts by its last
	// occurrence, which is the general decoder's to decide.
	var seen [4][]byte
	nseen := 0
	for {
		name, ok := s.plain()
		if !ok || string(name) == "session" || !s.token(':') {
			return false
		}
		if string(name) == keepAlive {
			if !s.liveness() {
				return false
			}
		} else {
			for _, k := range seen[:nseen] {
				if string(k) == string(name) {
					return false
				}
			}
			if nseen == len(seen) {
				return false
			}
			seen[nseen] = name
			nseen++
			if !m.decodeArrayFast(&s, types, name) {
				return false
			}
		}
		if s.token('}') {
			break
		}
		if !s.token(',') {
			return false
		}
	}
	s.space()
	return s.pos == len(data)
}

// decodeArrayFast decodes the array of one TYPE member named typeKey as
// decodeDeviceArray would.
func (m *ClientMessage) decodeArrayFast(s *fastScan, types *TypeTable, typeKey []byte) bool {
	dt, key, ok := types.Lookup(typeKey)
	if !ok || !s.token('[') {
		return false
	}
	if s.token(']') {
		return true
	}
	for index := 0; ; index++ {
		if !m.decodeEntryFast(s, dt, key, index) {
			return false
		}
		if s.token(']') {
			return true
		}
		if !s.token(',') {
			return false
		}
	}
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
	var (
		cmd     DeviceCommand
		gravity OptionalBool
		live    bool
	)
	if !s.token('}') {
		for {
			name, ok := s.plain()
			if !ok || !s.token(':') {
				return false
			}
			if kind := commandFromName(name); kind != CmdNone {
				// A second command is the general decoder's: it picks
				// one by precedence and warns about the other.
				if cmd.Kind != CmdNone {
					return false
				}
				if cmd, ok = s.command(kind, dt); !ok {
					return false
				}
			} else if string(name) == setGravityCompensation {
				// A repeat is the general decoder's (the last wins);
				// another device type warns there.
				if gravity.Given || dt != TypeArm {
					return false
				}
				if gravity.Value, ok = s.boolean(); !ok {
					return false
				}
				gravity.Given = true
			} else if string(name) == keepAlive && !live {
				if !s.liveness() {
					return false
				}
				live = true
			} else {
				return false
			}
			if s.token('}') {
				break
			}
			if !s.token(',') {
				return false
			}
		}
	}
	if !s.token('}') {
		return false
	}
	e := m.nextDevice()
	e.Type, e.TypeKey = dt, typeKey
	m.pathBuf = append(strconv.AppendInt(append(append(m.pathBuf[:0], typeKey...), '['), int64(index), 10), ']')
	e.Path = reuse(e.Path, m.pathBuf)
	e.DeviceID = reuse(e.DeviceID, id)
	e.Command = cmd
	e.GravityCompensation = gravity
	return true
}

// command reads the BODY of a command of kind, sent to a device of type
// dt.
func (s *fastScan) command(kind CommandKind, dt DeviceType) (cmd DeviceCommand, ok bool) {
	info := &commandTable[kind]
	if info.dt != dt || !s.token('{') {
		return cmd, false
	}
	cmd.Kind = kind
	if !info.control {
		return cmd, s.token('}') // a probe's body is {}
	}
	field, ok := s.plain()
	if !ok || (string(field) != info.fields[0] && (info.fields[1] == "" || string(field) != info.fields[1])) || !s.token(':') {
		return cmd, false
	}
	names := vec3Names
	if kind == CmdSetAngularTorques || kind == CmdSetAngularPosition {
		names = angles3Names
	}
	var c [3]float64
	if !s.token('{') {
		return cmd, false
	}
	for i, n := range names {
		if i > 0 && !s.token(',') {
			return cmd, false
		}
		if !s.key(n) {
			return cmd, false
		}
		if c[i], ok = s.number(); !ok {
			return cmd, false
		}
	}
	if !s.token('}') || !s.token('}') {
		return cmd, false
	}
	if names[0] == "x" {
		cmd.Vec = Vec3{X: c[0], Y: c[1], Z: c[2]}
	} else {
		cmd.Angles = Angles3{A0: c[0], A1: c[1], A2: c[2]}
	}
	return cmd, true
}
