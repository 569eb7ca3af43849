package v30_test

import (
	"encoding/json"
	"testing"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/v30"
)

// FuzzDecodeClientMessage: the 3.0 decoder must never panic, and whatever
// it reports must encode to a valid 3.0 frame.
func FuzzDecodeClientMessage(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"arm3":{"049D":{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}},"configure":{"preset":{"preset":"arm_front"}}}}}`,
		`{"session":{"configure":{"lease":{"ms":20}}},"grip":{"61548":{"commands":{"probe_orientation":{}}}}}`,
		`{"inverse3":{"0\u00349D":{"device_id":"x","configure":{"filters":{"damping":{"scalar":1}}}}}}`,
	} {
		f.Add([]byte(s))
	}
	types, err := protocol.NewTypeTable(map[string]string{"inverse3": "arm3"})
	if err != nil {
		f.Fatal(err)
	}
	var m protocol.ClientMessage
	f.Fuzz(func(t *testing.T, data []byte) {
		errs := v30.DecodeClientMessage(data, types, &m)
		frame := protocol.Frame{SessionID: 1, Errors: errs, Warnings: m.Warnings}
		for _, d := range m.Devices {
			if d.Type == protocol.TypeArm {
				frame.Arms = append(frame.Arms, protocol.ArmFrame{DeviceID: d.DeviceID})
			} else {
				frame.Grips = append(frame.Grips, protocol.GripFrame{DeviceID: d.DeviceID})
			}
		}
		if out := v30.AppendFrame(nil, &frame, types); !json.Valid(out) {
			t.Fatalf("frame for %q is invalid JSON: %s", data, out)
		}
	})
}
