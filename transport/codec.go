package transport

import (
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/v30"
)

// The two API formats differ only here: the same session actor and the same
// handlers run behind each (issue: no copied route or session logic).

// codec3x is the current format (port 10001).
type codec3x struct{}

func (codec3x) Decode(data []byte, types *protocol.TypeTable, dst *protocol.ClientMessage) []protocol.Error {
	return protocol.DecodeClientMessage(data, types, dst)
}

func (codec3x) AppendFrame(dst []byte, f *protocol.Frame, types *protocol.TypeTable) []byte {
	return protocol.AppendFrame(dst, f, types)
}

func (codec3x) APIVersion() string { return "3.x" }

// codec30 is the legacy format (port 10000, PROTOCOL.md 7).
type codec30 struct{}

func (codec30) Decode(data []byte, types *protocol.TypeTable, dst *protocol.ClientMessage) []protocol.Error {
	return v30.DecodeClientMessage(data, types, dst)
}

func (codec30) AppendFrame(dst []byte, f *protocol.Frame, types *protocol.TypeTable) []byte {
	return v30.AppendFrame(dst, f, types)
}

func (codec30) APIVersion() string { return "3.0" }
