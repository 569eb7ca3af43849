package protocol

// Codec is the 3.x format as a value, for code that serves both formats
// through one interface (the session actor takes a codec; protocol/v30 has
// the 3.0 one).
type Codec struct{}

// Decode is DecodeClientMessage.
func (Codec) Decode(data []byte, types *TypeTable, dst *ClientMessage) []Error {
	return DecodeClientMessage(data, types, dst)
}

// AppendFrame is AppendFrame.
func (Codec) AppendFrame(dst []byte, f *Frame, types *TypeTable) []byte {
	return AppendFrame(dst, f, types)
}

// APIVersion names the format.
func (Codec) APIVersion() string { return "3.x" }

// AppendArmState encodes an arm's state and status (no config) for
// ArmFrame.Body.
func (Codec) AppendArmState(dst []byte, a *ArmFrame) []byte {
	s := *a
	s.Config, s.Body = nil, nil
	return AppendArmBody(dst, &s, "", Spelling3x())
}

// AppendGripState encodes a grip's state and status for GripFrame.Body.
func (Codec) AppendGripState(dst []byte, g *GripFrame) []byte {
	s := *g
	s.Config, s.Body = nil, nil
	return AppendGripBody(dst, &s, "", Spelling3x())
}
