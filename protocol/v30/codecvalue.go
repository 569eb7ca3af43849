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

// AppendArmState is protocol.AppendArmState in the 3.0 spelling, for
// protocol.ArmFrame.Body.
func (Codec) AppendArmState(dst []byte, a *protocol.ArmFrame) []byte {
	return protocol.AppendArmState(dst, a, spelling())
}

// AppendGripState is protocol.AppendGripState (a grip's state is spelled
// alike in both formats).
func (Codec) AppendGripState(dst []byte, g *protocol.GripFrame) []byte {
	return protocol.AppendGripState(dst, g)
}
