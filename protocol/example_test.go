package protocol_test

import (
	"fmt"

	"github.com/hapticd/hapticd/protocol"
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
