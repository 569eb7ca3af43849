package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/schema"
)

// The documents come from protocol's tables: the force gate's range is
// protocol.ForceGateMax, and the answer is a closed object while the body
// it accepts leaves room for members a newer client adds.
func Example() {
	set := schema.New(schema.Options{Types: nil}) // nil: the default naming table
	for _, name := range []string{"entry.force_gate", "entry.force_gate.input"} {
		doc, err := set.Document(name)
		if err != nil {
			fmt.Println(err)
			return
		}
		delete(doc, "description")
		b, _ := json.Marshal(doc)
		fmt.Println(string(b))
	}
	fmt.Println(protocol.ForceGateMax)
	// Output:
	// {"$schema":"https://json-schema.org/draft/2020-12/schema","additionalProperties":false,"properties":{"gain":{"maximum":1,"minimum":0,"type":"number"}},"required":["gain"],"type":"object"}
	// {"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"gain":{"maximum":1,"minimum":0,"type":"number"}},"required":["gain"],"type":"object"}
	// 1
}
