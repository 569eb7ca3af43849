package v30

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/protocoltest"
)

// A message decoded in the 3.0 format keeps no byte of its buffer, which
// the transport reuses for the next message (protocol's
// TestDecodedMessageKeepsNoByteOfItsBuffer): device ids come from object
// keys here, escaped or not, and 1,000 of them take the big-message path.
func TestDecodedMessageKeepsNoByteOfItsBuffer(t *testing.T) {
	types, err := protocol.NewTypeTable(map[string]string{"inverse3": "arm3"})
	if err != nil {
		t.Fatal(err)
	}
	var big strings.Builder
	big.WriteString(`{"arm3":{`)
	for i := range 1000 {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprintf(&big, `"D%04d":{"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}},"configure":{"nokey":1}}`, i)
	}
	big.WriteString(`,"D0001":{"commands":{}}}}`)
	messages := []string{
		`{"arm3":{"049D":{"commands":{"probe_position":{}}}}}`,
		`{"arm3":{"0\u00349D":{"commands":{"probe_position":{}},"device_id":"other"},"":{}}}`,
		`{"arm3":{"049D":{"configure":{"damping":{"scalar":1}}},"049D":{"configure":{"basis":{"permutation":"QQ"}}}}}`,
		`{"inverse3":{"AB\u0043D":{"commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":3}}},"zz":1}}}`,
		big.String(),
	}
	var m protocol.ClientMessage
	for range 2 { // the second round reuses what the first decoded
		for _, s := range messages {
			buf := make([]byte, len(s), len(s)+16)
			copy(buf, s)
			errs := DecodeClientMessage(buf, types, &m)
			if found := append(protocoltest.BufferAliases(buf, &m), protocoltest.BufferAliases(buf, errs)...); len(found) > 0 {
				t.Errorf("%.80q: kept aliases of the message buffer: %v", s, found[:min(5, len(found))])
			}
		}
	}
}
