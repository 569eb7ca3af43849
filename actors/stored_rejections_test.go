package actors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// A device states the device-global entries it holds rejected
// (StoredRejections, what a lab node's inventory carries to a gateway that
// joined after the read): the events its read published, for as long as a
// GET of one warns. A document moved aside whole is one event, entry "*",
// while any of its entries is not set again; an entry not accepted is its
// own, gone once it is set again.
func TestStoredRejectionsFollowTheWarnings(t *testing.T) {
	entryOf := func(t *testing.T, r *StoredRejections) []string {
		t.Helper()
		if r == nil {
			return nil
		}
		var out []string
		for _, e := range r.Events {
			var d struct {
				Entry string `json:"entry"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			out = append(out, d.Entry)
		}
		return out
	}
	set := func(t *testing.T, svc *Service, d *Device, k protocol.Key) {
		t.Helper()
		if _, err := svc.SetEntry(d, 0, protocol.DefaultEntry(k)); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("an entry not accepted", func(t *testing.T) {
		dir := t.TempDir()
		id := simArm(0).Info().ID
		file := filepath.Join(dir, "devices", "arm3-"+id+".json")
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(`{"handedness":"left","force_clamp":{"max_force":"ten"}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		svc := startWith(t, Options{StateDir: dir})
		d := addArm(t, svc, simArm(0))
		if got := entryOf(t, d.StoredRejections()); len(got) != 1 || got[0] != "force_clamp" {
			t.Fatalf("after the read: %v, want [force_clamp]", got)
		}
		set(t, svc, d, protocol.KeyHandedness)
		if got := entryOf(t, d.StoredRejections()); len(got) != 1 {
			t.Fatalf("after a set of another entry: %v, want [force_clamp]", got)
		}
		set(t, svc, d, protocol.KeyForceClamp)
		if r := d.StoredRejections(); r != nil {
			t.Fatalf("after the entry was set again: %v, want none", entryOf(t, r))
		}
	})
	t.Run("a document moved aside whole", func(t *testing.T) {
		dir := t.TempDir()
		id := simArm(0).Info().ID
		file := filepath.Join(dir, "devices", "arm3-"+id+".json")
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(`{"handedness":"left"} trailing`), 0o600); err != nil {
			t.Fatal(err)
		}
		svc := startWith(t, Options{StateDir: dir})
		d := addArm(t, svc, simArm(0))
		if got := entryOf(t, d.StoredRejections()); len(got) != 1 || got[0] != "*" {
			t.Fatalf("after the read: %v, want [*]", got)
		}
		set(t, svc, d, protocol.KeyForceClamp)
		if got := entryOf(t, d.StoredRejections()); len(got) != 1 || got[0] != "*" {
			t.Fatalf("after a set of one of its entries: %v, want [*] (the others still warn)", got)
		}
	})
}
