package v30

import "github.com/hapticd/hapticd/protocol"

// DecodeClientMessage decodes and validates a 3.0 message into dst, with
// the same rules as protocol.DecodeClientMessage:
//
//	{"arm3": {"049D": {"commands": {...}, "configure": {...}}}, "session": {...}}
//
// Paths in errors and warnings use dots ("arm3.049D.configure.damping").
func DecodeClientMessage(data []byte, types *protocol.TypeTable, dst *protocol.ClientMessage) []protocol.Error {
	return dst.Decode(data, types, decodeDeviceObject)
}

// decodeDeviceObject decodes a 3.0 device collection: an object keyed by
// device id.
func decodeDeviceObject(m *protocol.ClientMessage, dt protocol.DeviceType, key string, devices protocol.Value) {
	if devices.Kind() != protocol.KindObject {
		m.Fail(protocol.CodeInvalidValue, key,
			`%s must be an object keyed by device id like {"049D": {"commands": {...}}}, got %s`, key, devices.Kind())
		return
	}
	for d := devices.Members(); d.Next(); {
		m.DecodeDevice(dt, key, 0, d.Key(), d.Value())
	}
}

// spelling is the 3.0 member names and layout.
func spelling() protocol.Spelling {
	return protocol.Spelling{MajorVersion: "firmware_version", MinorVersion: "hardware_version", ControlMode: "mode", KeyedByID: true}
}

// AppendFrame appends the 3.0 JSON of f:
//
//	{"session_id": 1, "inverse3": {"049D": {"config", "state", "status"}}, "wireless_verse_grip": {...}, ...}
//
// Every collection of the naming table is present, each device in one.
// Devices whose ids collide (arm ids are 4 hex digits) repeat a member
// name; 3.x frames, which are arrays, do not have that limit.
func AppendFrame(dst []byte, f *protocol.Frame, types *protocol.TypeTable) []byte {
	return protocol.AppendFrameAs(dst, f, types, spelling())
}
