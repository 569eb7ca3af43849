package v30_test

import (
	"fmt"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/v30"
)

// A 3.0 client keys devices by id; the decoded message is the same
// protocol.ClientMessage a 3.x client produces.
func Example() {
	var msg protocol.ClientMessage
	errs := v30.DecodeClientMessage([]byte(`{"arm3": {"049D": {"commands": {"set_cursor_force": {"vector": {"x": 0, "y": 0, "z": 1.5}}}}}}`), nil, &msg)
	d := msg.Devices[0]
	fmt.Println(len(errs), d.Path, d.DeviceID, d.Command.Kind, d.Command.Vec.Z)

	frame := protocol.Frame{SessionID: 1, Arms: []protocol.ArmFrame{{DeviceID: "049D"}}}
	out := v30.AppendFrame(nil, &frame, nil)
	fmt.Println(string(out[:60]))
	// Output:
	// 0 arm3.049D 049D set_cursor_force 1.5
	// {"session_id":1,"inverse3":{"049D":{"state":{"cursor_positio
}
