package cluster

import (
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// Colliding short ids from two nodes get distinct gateway ids, the same ones
// whatever order the inventories arrive in, and a device already connected
// is never renamed.
func TestAssignIDs(t *testing.T) {
	a := newcomer{uuid: "aaaa", id: "049D", kind: hw.KindArm}
	b := newcomer{uuid: "bbbb", id: "049D", kind: hw.KindArm}
	g := newcomer{uuid: "cccc", id: "049D", kind: hw.KindGrip} // another kind: no clash

	for _, order := range [][]newcomer{{a, b, g}, {g, b, a}} {
		got := assignIDs(map[hw.Kind]map[string]bool{}, order)
		if got["aaaa"] != "049D" {
			t.Errorf("lowest UUID lost its own id: %v", got)
		}
		if got["bbbb"] == "049D" || len(got["bbbb"]) != 4 {
			t.Errorf("second arm with 049D got %q, want another 4-hex id", got["bbbb"])
		}
		if got["cccc"] != "049D" {
			t.Errorf("grip renamed although no grip holds its id: %v", got)
		}
		again := assignIDs(map[hw.Kind]map[string]bool{}, order)
		if again["bbbb"] != got["bbbb"] {
			t.Errorf("derived id not stable: %q then %q", got["bbbb"], again["bbbb"])
		}
	}

	// b is connected first under its own id; a arrives later and must not
	// take it away.
	used := map[hw.Kind]map[string]bool{hw.KindArm: {"049D": true}}
	got := assignIDs(used, []newcomer{a})
	if got["aaaa"] == "049D" {
		t.Errorf("a newcomer took the id of a connected device: %v", got)
	}
	if !used[hw.KindArm][got["aaaa"]] {
		t.Errorf("assigned id %q not recorded as used", got["aaaa"])
	}
}
