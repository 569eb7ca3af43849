package actors

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

// A state directory written while hapticd reported UUIDs in the dashed
// lower-case form keeps working now that it reports the vendor's (32
// upper-case hex digits, ending in the id for its own devices): an arm
// served on a derived id gets that id back, and its stored config, from
// the remembered ids, and a real arm from its config's owner when they are
// lost. Read under the old keys, the arm came back on its own 16-bit id
// (held by the other arm: on a new derived id) without its config.
func TestOldUUIDFormStateDirKeepsIDs(t *testing.T) {
	for _, c := range []struct {
		name     string
		old, now string // arm B's UUID as stored then, and as reported now
		lose     bool   // the remembered-ids document is lost
	}{
		{"a real arm, remembered ids", "2d35f80d-d900-5f59-9b68-f49944cb04ba", "2D35F80DD9005F599B68F49944CB04BA", false},
		{"a real arm, remembered ids lost", "2d35f80d-d900-5f59-9b68-f49944cb04ba", "2D35F80DD9005F599B68F49944CB04BA", true},
		// Simulated inverse3 7: its UUID now ends in its id, A696.
		{"a simulated arm, remembered ids", "5c4f3587-3022-5ba7-9565-578b3c2ad177", sim.ArmUUID(7), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			first := startWith(t, Options{StateDir: dir})
			addArm(t, first, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
			b := addArm(t, first, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: c.old})
			if b.ID == "0A0A" {
				t.Fatalf("arm B on %s, want a derived id", b.ID)
			}
			if _, err := first.SetEntry(b, 0, protocol.ForceClamp{MaxForceN: 2}); err != nil {
				t.Fatal(err)
			}
			shutdown(t, first)
			if c.lose {
				if err := os.Remove(filepath.Join(dir, idsDocument+".json")); err != nil {
					t.Fatal(err)
				}
			}

			svc := startWith(t, Options{StateDir: dir})
			addArm(t, svc, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
			again := addArm(t, svc, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: c.now})
			if again.ID != b.ID {
				t.Fatalf("arm B (%s, stored as %s) came back as %s, want %s", c.now, c.old, again.ID, b.ID)
			}
			wantForceClamp(t, svc, again, protocol.ForceClamp{MaxForceN: 2}, "arm B", "its stored 2 N")
		})
	}
}
