package actors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
)

// The remembered ids keep a newer build's device kind (ids/pedal) as one
// kept member, some 128 bytes a record; a lab gateway remembers up to 8192
// records per kind. 800 of them (100 KiB) were over the 64 KiB MaxKept
// had: after a downgrade every write of the ids was refused, and no new
// device's id was remembered. Written now (MaxKept is 4 MiB; the tests of
// the cap itself, TestKeptMembersOverTheLimit*, go over it).
func TestIDsOfANewKindWithHundredsOfDevicesAreWritten(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pedals := map[string]hw.RememberedID{}
	for i := 0; i < 800; i++ {
		pedals[fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)] = hw.RememberedID{ID: fmt.Sprintf("%04X", i), Seen: time.Now()}
	}
	arms := hw.IDMemory{}
	arms.Set(hw.KindArm, "uuid-a", hw.RememberedID{ID: "1A2B", Seen: time.Now()})
	f := arms.File()
	f.IDs["pedal"] = pedals
	if err := st.Save(idsDocument, f); err != nil { // the newer build's write
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, idsDocument+".json"))
	var read StoredIDs
	if _, err := st.Load(idsDocument, &read); err != nil {
		t.Fatal(err)
	}
	m := read.Memory(time.Now())
	m.Set(hw.KindArm, "uuid-b", hw.RememberedID{ID: "1A2C", Seen: time.Now()})
	if err := st.Save(idsDocument, m.File()); errors.Is(err, store.ErrKeptTooLarge) {
		t.Errorf("a file of %d bytes with 800 records of a newer kind: every write of the remembered ids is refused: %.200v", len(b), err)
	}
}

// encoding/json matches member names in any case: "IDs" was read as the
// ids, and listed as unknown too, so it was kept and written back beside
// the "ids" this build writes, the same records twice. Only the exact
// "ids" is the ids now; a case variant is a member kept once, as the file
// has it.
func TestIDsMemberNameIsExact(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, idsDocument+".json")
	if err := os.WriteFile(p, []byte(`{"IDs": {"grip": {"uuid-g": {"id": "123", "seen": "2026-01-01T00:00:00Z"}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var read StoredIDs
	if _, err := st.Load(idsDocument, &read); err != nil {
		t.Fatal(err)
	}
	if len(read.IDs) != 0 {
		t.Errorf("\"IDs\" is read as the ids: %v", read.IDs)
	}
	if len(read.unknown) != 1 || read.unknown[0].Name != "IDs" {
		t.Fatalf("kept: %v, want \"IDs\" once", read.unknown)
	}
	m := read.Memory(time.Now())
	m.Set(hw.KindArm, "uuid-b", hw.RememberedID{ID: "1A2C", Seen: time.Now()})
	if err := st.Save(idsDocument, m.File()); err != nil {
		t.Fatal(err)
	}
	var again StoredIDs
	if _, err := st.Load(idsDocument, &again); err != nil {
		t.Fatal(err)
	}
	if _, ok := again.IDs["grip"]; ok || len(again.IDs["arm"]) != 1 {
		t.Errorf("ids read after the write: %v, want the arm alone", again.IDs)
	}
	if b, _ := os.ReadFile(p); strings.Count(string(b), "uuid-g") != 1 {
		t.Errorf("the file after the write has the grip's record %d times, want once:\n%s", strings.Count(string(b), "uuid-g"), b)
	}
}
