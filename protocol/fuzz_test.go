package protocol

import (
	"encoding/json"
	"testing"
)

var fuzzSeeds = []string{
	`{}`,
	`{"arm3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.5}}}}]}`,
	`{"session":{"configure":{"profile":{"name":"co.example.app:main","required_version":">=3.5"},"basis":{"permutation":"XZY"},"lease":{"ms":100}},"force_render_full_state":{"device_types":["arm3"]},"set_coordinate_origin":{"coordinate_origin":"device_base"},"set_basis":{"basis":{"permutation":"-XZY"}}}}`,
	`{"arm3":[{"device_id":"049D","configure":{"preset":{"preset":"arm_front"},"basis":{"permutation":"+X-Z+Y"},"filters":{"damping":{"scalar":1,"vector":{"x":1,"y":2,"z":3}},"force_gate":{"gain":0.5}}}}]}`,
	`{"arm3":[{"device_id":"049D","configure":{"mount":{"transform":{"position":{"x":1,"y":2,"z":3},"rotation":{"w":1,"x":0,"y":0,"z":0},"scale":{"x":1,"y":1,"z":1}}}}}]}`,
	`{"inverse3":[{"device_id":"049D","commands":{"set_angular_torques":{"torques":{"a0":1,"a1":2,"a2":3}},"set_angular_position":{"angles":{"a0":1,"a1":2,"a2":3}}}}]}`,
	`{"grip":[{"device_id":"61548","commands":{"probe_orientation":{}},"configure":{"preset":{"preset":"led_front"}}}]}`,
	`{"arm3":{"049D":{"commands":{"probe_position":{}}}}}`,
	`{"arm3":[{"device_id":"0\u00349D","configure":{"handedness":"left"}}]}`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`{"a":1e400,"b":-0.0,"c":"\ud800","d":[true,false,null]}`,
	`{"inverse3":[{"device_id":"049D","effects":{"clear":true,"remove":["x"],"set":[{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":0},"normal":{"x":0,"y":0,"z":1},"stiffness":2000},{"id":"m","type":"field","jacobian":[[1,0,0],[0,1,0],[0,0,1]],"origin":{"x":0,"y":0,"z":0},"radius":0.1}]},"configure":{"navigation":{"mode":"bubble"}}}]}`,
	`{"keep_alive":{},"inverse3":[{"device_id":"049D","commands":{"set_transform":{"position":{"x":1,"y":0,"z":0},"rotation":{"w":1,"x":0,"y":0,"z":1},"scale":{"x":2,"y":2,"z":2}},"set_gravity_compensation":true,"keep_alive":{}}}],"wireless_verse_grip":[{"device_id":"1","commands":{"keep_alive":true}}]}`,
}

// FuzzDecodeClientMessage: decoding must never panic, must reject whatever
// encoding/json rejects, and whatever it reports must encode to valid JSON.
func FuzzDecodeClientMessage(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	types, err := NewTypeTable(map[string]string{"inverse3": "arm3", "verse_grip": "grip"})
	if err != nil {
		f.Fatal(err)
	}
	var m ClientMessage
	f.Fuzz(func(t *testing.T, data []byte) {
		errs := DecodeClientMessage(data, types, &m)
		var doc Doc
		if doc.Parse(data) == nil && !json.Valid(data) {
			t.Fatalf("accepted JSON that encoding/json rejects: %q", data)
		}
		for _, e := range append(append([]Error(nil), errs...), m.Warnings...) {
			if e.Code == "" || e.Message == "" {
				t.Fatalf("empty error %+v for %q", e, data)
			}
		}
		frame := Frame{SessionID: 1, Errors: errs, Warnings: m.Warnings}
		for _, d := range m.Devices {
			if d.Type == TypeArm {
				frame.Arms = append(frame.Arms, ArmFrame{DeviceID: d.DeviceID, State: ArmState{CurrentCursorForce: d.Command.Vec, Transform: d.Transform.Apply(Transform{})}})
			} else {
				frame.Grips = append(frame.Grips, GripFrame{DeviceID: d.DeviceID})
			}
			for _, e := range d.Configure {
				if !json.Valid(e.AppendJSON(nil)) {
					t.Fatalf("entry %#v encodes to invalid JSON", e)
				}
			}
		}
		if out := AppendFrame(nil, &frame, types); !json.Valid(out) {
			t.Fatalf("frame for %q is invalid JSON: %s", data, out)
		}
	})
}

// FuzzDecodeEntry: every key's decoder must never panic, and what it
// accepts must encode to a body it accepts again.
func FuzzDecodeEntry(f *testing.F) {
	for _, s := range []string{`{"gain":0.5}`, `"left"`, `{"transform":{}}`, `{"scalar":1}`, `{"permutation":"XZY"}`, `{"enabled":true,"scaling_factor":1}`} {
		f.Add(uint8(1), []byte(s))
	}
	// A mount's rotation that normalising again would move by a bit.
	f.Add(uint8(1), []byte(`{"transform":{"rotation":{"w":2,"x":1,"y":0,"z":0}}}`))
	f.Fuzz(func(t *testing.T, key uint8, data []byte) {
		k := Key(key%uint8(numKeys) + 1)
		e, err := DecodeEntry(k, data, "")
		if err != nil {
			return
		}
		again, err := DecodeEntry(k, e.AppendJSON(nil), "")
		if err != nil {
			t.Fatalf("%s %q decoded to %#v whose encoding is rejected: %v", k, data, e, err)
		}
		if string(again.AppendJSON(nil)) != string(e.AppendJSON(nil)) {
			t.Fatalf("%s %q: %s then %s", k, data, e.AppendJSON(nil), again.AppendJSON(nil))
		}
	})
}
