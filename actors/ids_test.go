package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
)

// The remembered ids stay bounded: past maxRememberedIDs, the least
// recently seen record of a device not connected goes, never the one just
// given nor a connected device's; and a device served on its own hardware
// id again is forgotten.
func TestLocalIDsBounded(t *testing.T) {
	l := &localIDs{mem: hw.IDMemory{}, saver: &idsSaver{}}
	now := time.Now()
	for i := range maxRememberedIDs {
		l.mem.Set(hw.KindArm, fmt.Sprintf("u%05d", i), hw.RememberedID{ID: fmt.Sprintf("%04X", i), Seen: now.Add(time.Duration(i) * time.Second)})
	}
	connected := func(uuid string) bool { return uuid == "u00000" }
	f, _, ok := l.note(hw.KindArm, "new", "0A0A", "5F6C", now.Add(-time.Hour), connected)
	if !ok {
		t.Fatal("a new derived id is not saved")
	}
	arms := f.IDs[hw.KindArm.String()]
	if len(arms) != maxRememberedIDs {
		t.Fatalf("%d records kept, want %d", len(arms), maxRememberedIDs)
	}
	for _, kept := range []string{"u00000", "new"} {
		if _, ok := arms[kept]; !ok {
			t.Fatalf("record of %s dropped", kept)
		}
	}
	if _, ok := arms["u00001"]; ok {
		t.Fatal("the least recently seen record of a device not connected was kept")
	}
	f, _, ok = l.note(hw.KindArm, "new", "0A0A", "0A0A", now, connected)
	if _, still := f.IDs[hw.KindArm.String()]["new"]; !ok || still {
		t.Fatalf("a device back on its own id: saved %v, record kept %v; want saved, dropped", ok, still)
	}
	if _, _, ok := l.note(hw.KindArm, "plain", "0B0B", "0B0B", now, connected); ok {
		t.Fatal("a device on its own id without a record made a write")
	}
}
