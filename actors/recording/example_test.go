package recording_test

import (
	"fmt"

	"github.com/hapticd/hapticd/actors/recording"
)

// A device state as a recording holds it: an id from firmware, control
// character and all, is escaped as JSON asks.
func ExampleState_AppendJSON() {
	st := recording.State{Device: "arm\x01\"7\"", Type: "arm3", Tick: 42, Position: [3]float64{0.1, 0, -0.05}}
	fmt.Println(string(st.AppendJSON(nil)))
	// Output:
	// {"device":"arm\u0001\"7\"","type":"arm3","status":0,"tick":42,"time_ns":0,"age_ns":0,"mode":0,"owner":0,"applied_seq":0,"failed":false,"target":[0,0,0],"position":[0.1,0,-0.05],"velocity":[0,0,0],"force":[0,0,0]}
}
