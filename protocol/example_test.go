package protocol_test

import (
	"fmt"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/space"
)

// A session decodes each message into one reused ClientMessage, applies it
// only when there are no errors, and answers with one frame.
func Example() {
	types, err := protocol.NewTypeTable(nil) // product names: inverse3, ...
	if err != nil {
		panic(err)
	}
	var msg protocol.ClientMessage
	errs := protocol.DecodeClientMessage([]byte(`{"inverse3": [{"device_id": "049D",
		"commands": {"set_cursor_force": {"values": {"x": 0, "y": 0, "z": 1.5}}},
		"configure": {"filters": {"force_gate": {"gain": 0.5}}, "handedness": "left"}}]}`), types, &msg)
	for _, e := range errs {
		fmt.Println(e.Code, e.Path, "-", e.Message)
	}

	frame := protocol.Frame{SessionID: 1, Errors: errs}
	out := protocol.AppendFrame(nil, &frame, types)
	fmt.Println(string(out[:71]))
	// Output:
	// http_only_key inverse3[0].configure.handedness - handedness is HTTP-only: use POST /inverse3/049D/config/handedness
	// {"session_id":1,"inverse3":[],"verse_grip":[],"wireless_verse_grip":[],
}

// HTTP bodies go through the same decoders.
func ExampleDecodeEntry() {
	_, err := protocol.DecodeEntry(protocol.KeyForceGate, []byte(`{"gain": 1.5}`), "")
	fmt.Println(err.Code.HTTPStatus(), err.Code, err.Message)
	e, _ := protocol.DecodeEntry(protocol.KeyBasis, []byte(`{"permutation": "+X-Z+Y"}`), "")
	fmt.Println(string(e.AppendJSON(nil)))
	// Output:
	// 400 out_of_range gain 1.5 is out of range 0..1
	// {"permutation":"X-ZY"}
}

// A session declares a floor in its own space (Y up under basis XZY); the
// loop renders it in the device frame, where Z is up.
func ExampleDecodeEffectsUpdate() {
	u, _, err := protocol.DecodeEffectsUpdate([]byte(`{"set":[{"id":"floor","type":"wall",
		"position":{"x":0,"y":0.05,"z":0},"normal":{"x":0,"y":1,"z":0},"stiffness":2500}]}`), "")
	if err != nil {
		fmt.Println(err)
		return
	}
	basis, _ := space.ParsePermutation("XZY")
	view := space.NewView(basis, space.IdentityTransform())
	wall := u.Set[0].ToDevice(&view).Wall
	fmt.Printf("%s: point %v, normal %v, %g N/m\n", u.Set[0].ID, wall.PositionM, wall.Normal, wall.StiffnessNPerM)
	// Output: floor: point {0 0 0.05}, normal {0 0 1}, 2500 N/m
}
