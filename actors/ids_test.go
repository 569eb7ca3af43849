package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
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
	connected := func(k hw.Kind, uuid string) bool { return k == hw.KindArm && uuid == "u00000" }
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

// The bound keeps the records of connected devices of every kind, not only
// of the kind of the device just given an id: a grip connected on its
// remembered id lost its record when an arm was given one, so that after a
// restart it was first-come again (and could load another's config).
func TestLocalIDsBoundKeepsConnectedDevicesOfEveryKind(t *testing.T) {
	l := &localIDs{mem: hw.IDMemory{}, saver: &idsSaver{}}
	now := time.Now()
	for i := range maxRememberedIDs + 1 {
		l.mem.Set(hw.KindGrip, fmt.Sprintf("g%05d", i), hw.RememberedID{ID: fmt.Sprint(i + 1), Seen: now.Add(time.Duration(i) * time.Second)})
	}
	// g00000 is the least recently seen grip record, and connected.
	connected := func(k hw.Kind, uuid string) bool { return k == hw.KindGrip && uuid == "g00000" }
	f, _, ok := l.note(hw.KindArm, "arm", "0A0A", "5F6C", now, connected)
	if !ok {
		t.Fatal("a new derived id is not saved")
	}
	grips := f.IDs[hw.KindGrip.String()]
	if _, kept := grips["g00000"]; !kept {
		t.Fatal("the record of a connected grip was dropped when an arm was given an id")
	}
	if _, kept := grips["g00001"]; kept || len(grips) != maxRememberedIDs {
		t.Fatalf("%d grip records kept (g00001 among them: %v), want %d without the least recently seen of those not connected", len(grips), kept, maxRememberedIDs)
	}
}

// The ids with stored documents, device-global config or a profile's
// entries, are known as some device's own from the start: a derived id
// avoids them for every UUID, and an id served since is avoided for every
// UUID but the one served on it.
func TestKnownIDsFromStoredDocuments(t *testing.T) {
	st, err := store.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	docs := []string{
		storeName(protocol.TypeArm, "1111"),
		profileFolder("lab") + "/" + protocol.TypeArm.Key() + "-2222",
		profileFolder("lab") + "/" + protocol.TypeGrip.Key() + "-77",
		profileFolder("lab") + "/session",
	}
	for _, name := range docs {
		if err := st.Save(name, map[string]any{}); err != nil {
			t.Fatal(err)
		}
	}
	l := loadLocalIDs(st, zerolog.Nop())
	l.served(hw.KindArm, "3333", "uuid-c", false)
	for _, c := range []struct {
		kind  hw.Kind
		id    string
		uuid  string
		known bool
	}{
		{hw.KindArm, "1111", "uuid-a", true},
		{hw.KindArm, "2222", "uuid-a", true},
		{hw.KindGrip, "77", "uuid-a", true},
		{hw.KindArm, "77", "uuid-a", false}, // a grip's id is no arm's
		{hw.KindArm, "3333", "uuid-a", true},
		{hw.KindArm, "3333", "uuid-c", false}, // its own
		{hw.KindArm, "4444", "uuid-a", false},
	} {
		if got := l.knownElse(c.kind, c.id, c.uuid); got != c.known {
			t.Errorf("%v %s for %s: known as another's %v, want %v", c.kind, c.id, c.uuid, got, c.known)
		}
	}
}
