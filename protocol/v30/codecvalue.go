package v30

import "github.com/hapticd/hapticd/protocol"

// Codec is the 3.0 format as a value: the twin of protocol.Codec.
type Codec struct{}

// Decode is DecodeClientMessage.
func (Codec) Decode(data []byte, types *protocol.TypeTable, dst *protocol.ClientMessage) []protocol.Error {
	return DecodeClientMessage(data, types, dst)
}

// AppendFrame is AppendFrame.
func (Codec) AppendFrame(dst []byte, f *protocol.Frame, types *protocol.TypeTable) []byte {
	return AppendFrame(dst, f, types)
}

// APIVersion names the format.
func (Codec) APIVersion() string { return "3.0" }

// AppendArmElement is protocol.AppendArmElement in the 3.0 spelling, for
// protocol.ArmFrame.Element.
func (Codec) AppendArmElement(dst []byte, a *protocol.ArmFrame) []byte {
	return protocol.AppendArmElement(dst, a, spelling())
}

// AppendGripElement is protocol.AppendGripElement in the 3.0 spelling.
func (Codec) AppendGripElement(dst []byte, g *protocol.GripFrame) []byte {
	return protocol.AppendGripElement(dst, g, spelling())
}
