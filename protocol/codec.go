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

// AppendArmElement is AppendArmElement in the 3.x spelling.
func (Codec) AppendArmElement(dst []byte, a *ArmFrame) []byte {
	return AppendArmElement(dst, a, Spelling3x())
}

// AppendGripElement is AppendGripElement in the 3.x spelling.
func (Codec) AppendGripElement(dst []byte, g *GripFrame) []byte {
	return AppendGripElement(dst, g, Spelling3x())
}
