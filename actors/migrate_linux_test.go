package actors

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/store"
)

// A profile document of the earlier layout whose removal failed after it
// was copied to the new layout (here a bind mount makes the unlink EBUSY;
// in the field, a folder a root run of an earlier version left) is met
// again at every start. The copy in the new layout has moved on since
// (sessions wrote it, each change acknowledged): the old one must never be
// copied over it again.
func TestMigrationNeverWritesOverANewerDocument(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const profile = "co.example:migrated"
	const doc = "arm3-049D"
	old := oldProfilesFolder + "/" + store.EscapeName(profile) + "/" + doc
	if err := st.Save(old, map[string]any{"force_gate": map[string]any{"gain": 0.5}}); err != nil {
		t.Fatal(err)
	}
	oldPath := filepath.Join(dir, filepath.FromSlash(old)+".json")
	if err := syscall.Mount(oldPath, oldPath, "", syscall.MS_BIND, ""); err != nil {
		t.Skipf("a document that cannot be removed needs a bind mount, not permitted here: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(oldPath, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", oldPath, err)
		}
	})

	migrateProfiles(st, zerolog.Nop()) // the first start of the new layout
	name := profileFolder(profile) + "/" + doc
	var got map[string]map[string]float64
	if found, err := st.Load(name, &got); !found || err != nil || got["force_gate"]["gain"] != 0.5 {
		t.Fatalf("after the move, %s = %v (%v, %v); want gain 0.5", name, got, found, err)
	}
	if _, err := os.Stat(oldPath); err != nil {
		t.Fatalf("the old document was removed after all (%v): the test has no case", err)
	}
	// A session of the profile changes it; the POST is answered 200.
	if err := st.Save(name, map[string]any{"force_gate": map[string]any{"gain": 0.9}}); err != nil {
		t.Fatal(err)
	}

	migrateProfiles(st, zerolog.Nop()) // the next start
	if found, err := st.Load(name, &got); !found || err != nil || got["force_gate"]["gain"] != 0.9 {
		t.Errorf("after a restart, %s = %v (%v, %v); want the acknowledged gain 0.9, not the earlier layout's copy", name, got, found, err)
	}
}
