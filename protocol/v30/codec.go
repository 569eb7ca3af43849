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
	// A device id given twice counts by its last occurrence, as every
	// repeated member does (docs/protocol.md, Input). Ids are the client's
	// to choose, so a forward scan per id would cost a large object the
	// square of its size: past smallObject members, count them once.
	var later map[string]int
	if devices.Len() > smallObject {
		later = make(map[string]int)
		for d := devices.Members(); d.Next(); {
			later[string(d.Key())]++
		}
	}
	for d := devices.Members(); d.Next(); {
		if later != nil {
			k := string(d.Key())
			if later[k]--; later[k] > 0 {
				continue
			}
		} else if d.Superseded() {
			continue
		}
		m.DecodeDevice(dt, key, 0, d.Key(), d.Value())
	}
}

// smallObject is the largest device object whose repeated ids are found
// by scanning forward, without allocating.
const smallObject = 64

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
