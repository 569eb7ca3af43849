package actors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/store"
)

// A session document of the earlier layout moves to the new one with every
// member a newer build wrote in it, at the top level and inside the basis,
// as every other write of it keeps them; the name is added first.
func TestMigrationKeepsASessionDocumentsUnknownMembers(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	st, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const profile = "co.example:migrated"
	old := filepath.Join(dir, filepath.FromSlash(oldProfilesFolder), store.EscapeName(profile), "session.json")
	if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
		t.Fatal(err)
	}
	const doc = `{"haptic_boost": {"gain": 2}, "used_at": "2026-11-29T20:00:00Z", "basis": {"tilt_deg": 12, "permutation": "-YXZ"}, "lease_ms": 250}`
	if err := os.WriteFile(old, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}

	migrateProfiles(st, zerolog.Nop())

	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("the earlier layout's document is still there (%v)", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(profileFolder(profile)), "session.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Name        string          `json:"name"`
		HapticBoost json.RawMessage `json:"haptic_boost"`
		LeaseMs     int             `json:"lease_ms"`
		Basis       struct {
			Permutation string          `json:"permutation"`
			TiltDeg     json.RawMessage `json:"tilt_deg"`
		} `json:"basis"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("the moved document does not read: %v\n%s", err, data)
	}
	if got.Name != profile || got.LeaseMs != 250 || got.Basis.Permutation != "-YXZ" {
		t.Errorf("the moved document's name, lease or basis is not the file's: %s", data)
	}
	if string(got.HapticBoost) == "" || string(got.Basis.TiltDeg) != "12" {
		t.Errorf("a newer build's member was dropped by the move (haptic_boost %s, basis/tilt_deg %s):\n%s", got.HapticBoost, got.Basis.TiltDeg, data)
	}
}
