package schema

import (
	"slices"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// The effect schemas name exactly the members the decoder reads, per type:
// a member added to one and not the other fails here.
func TestEffectSchemasFollowTheDecoder(t *testing.T) {
	for i, name := range protocol.EffectTypeNames() {
		typ := protocol.EffectType(i + 1)
		want := protocol.EffectFields(typ)
		slices.Sort(want)
		for _, input := range []bool{true, false} {
			props, _ := effectProps(typ, input)
			got := sortedKeys(props)
			w := want
			if !input {
				// "params" is the flat SDF form's, accepted, never written.
				w = slices.DeleteFunc(slices.Clone(want), func(s string) bool { return s == "params" })
			}
			if !slices.Equal(got, w) {
				t.Errorf("%s (input %v): schema names %v, the decoder reads %v", name, input, got, w)
			}
		}
	}
	if n := len(effect(true, false)["oneOf"].([]Schema)); n != len(protocol.EffectTypeNames()) {
		t.Errorf("effect.input has %d alternatives for %d types", n, len(protocol.EffectTypeNames()))
	}
	if n := len(sdfShape(true, 1)["oneOf"].([]Schema)); n != len(protocol.SDFPrimitiveNames()) {
		t.Errorf("sdf-shape has %d alternatives for %d primitives", n, len(protocol.SDFPrimitiveNames()))
	}
}
