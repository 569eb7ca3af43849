package actors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
)

// Each stored document's reader knows every member its writer writes: a
// document this build wrote reads with no unknown member, or the store
// would write a second copy of one (a stale owner, lease, …) before the
// writer's own at each write. The readers name as unknown what is not
// theirs, and nothing else.
func TestStoredReadersKnowWhatTheirWritersWrite(t *testing.T) {
	basis := protocol.Basis{Permutation: "ZYX"}
	custom := protocol.DefaultSessionConfig()
	custom.Set(protocol.Mount{Transform: custom.Mount})
	custom.Basis = &basis
	ids := hw.IDMemory{}
	ids.Set(hw.KindArm, "uuid-a", hw.RememberedID{ID: "1A2B", Seen: time.Now()})
	ids.Set(hw.KindGrip, "uuid-g", hw.RememberedID{ID: "123", Seen: time.Now()})
	for _, tc := range []struct {
		name   string
		writes any
		reader store.KeepsUnknown
	}{
		{"device (ownedConfig)", ownedConfig{config: protocol.DefaultDeviceConfig(), owner: "986F62C11E805BD4A1F5F15B3FB7CBBD"}, &storedOwnedConfig{}},
		{"profile on a device (SessionConfig)", custom, &storedProfileConfig{}},
		{"profile session level (profileSession)", profileSession{Name: "lab:rig", UsedAt: time.Now(), Basis: basis, LeaseMs: 300}, &storedSession{}},
		{"settings (Settings)", protocol.Settings{ForceScale: 0.5, GripHook: true}, &storedSettings{}},
		{"remembered ids (IDsFile)", ids.File(), &StoredIDs{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.writes)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, tc.reader); err != nil {
				t.Fatal(err)
			}
			if u := tc.reader.UnknownMembers(); len(u) != 0 {
				t.Errorf("%s read as unknown: %v", b, u)
			}
			var doc map[string]json.RawMessage
			json.Unmarshal(b, &doc)
			doc["future_entry"] = json.RawMessage(`{"x": 1}`)
			b, _ = json.Marshal(doc)
			if err := json.Unmarshal(b, tc.reader); err != nil {
				t.Fatal(err)
			}
			if u := tc.reader.UnknownMembers(); len(u) != 1 || u[0].Name != "future_entry" || string(u[0].Value) != `{"x":1}` {
				t.Errorf("%s read as unknown %v, want future_entry only", b, u)
			}
		})
	}
}

// A session document encoding/json reads but the wire's parser does not
// (a hand edit saved in Latin-1) keeps its basis and lease: the members
// this build does not know are what it cannot list, not the document.
// Listing them made it corrupt, moved aside whole (review59).
func TestStoredSessionTheMembersParserRefusesStillReads(t *testing.T) {
	data := []byte("{\"name\":\"caf\xe9\",\"used_at\":\"2026-11-29T20:00:00Z\",\"basis\":{\"permutation\":\"ZYX\"},\"lease_ms\":300}")
	var s storedSession
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("the document: %v, want it read", err)
	}
	if s.ps.Basis.Permutation != "ZYX" || s.ps.LeaseMs != 300 || len(s.rejected) != 0 {
		t.Errorf("read %+v, rejected %v; want basis ZYX and lease 300", s.ps, s.rejected)
	}
}

// The remembered ids (device-ids) keep what a newer build wrote there and
// this build does not know (a member beside "ids", a device kind among
// them), byte for byte, over the write a new device's derived id makes:
// a downgrade for a day, with a device plugged in, and an upgrade back
// lose nothing. On main they were gone from the file at that write.
func TestRememberedIDsKeepTheirUnknownMembers(t *testing.T) {
	const pedal = `{"uuid-p": {"id": "P-1",  "seen": "2026-01-01T00:00:00Z", "future": [1, {"deep": "é"}]}}`
	const future = `{"x": 1,  "list": [true, null]}`
	dir := t.TempDir()
	path := filepath.Join(dir, idsDocument+".json")
	doc := `{"format": ` + future + `, "ids": {"pedal": ` + pedal + `, "arm": {"uuid-z": {"id": "0C0C", "seen": "2026-01-01T00:00:00Z"}}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	svc := startWith(t, Options{StateDir: dir})
	defer shutdown(t, svc)
	addArm(t, svc, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
	b := addArm(t, svc, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
	var f struct {
		Format json.RawMessage `json:"format"`
		IDs    map[string]map[string]json.RawMessage
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if _, ok := f.IDs["arm"]["uuid-b"]; !ok || b.ID == "0A0A" {
		t.Fatalf("arm B on %s, the file %s: want B's derived id remembered", b.ID, data)
	}
	if _, ok := f.IDs["arm"]["uuid-z"]; !ok {
		t.Errorf("the file %s lost the arm it remembered", data)
	}
	if string(f.Format) != future {
		t.Errorf("format in the file: %s, want %s byte for byte\n%s", f.Format, future, data)
	}
	var ids map[string]json.RawMessage
	var top map[string]json.RawMessage
	json.Unmarshal(data, &top)
	json.Unmarshal(top["ids"], &ids)
	if string(ids["pedal"]) != pedal {
		t.Errorf("ids.pedal in the file: %s, want %s byte for byte\n%s", ids["pedal"], pedal, data)
	}
}

// A device's document names as unknown a newer build's field inside an
// entry even when it is called "owner": only the document's own owner
// member is ownedConfig's, written by it. Left out, the field would be
// gone at the next write.
func TestStoredDeviceKeepsAFieldNamedOwnerInsideAnEntry(t *testing.T) {
	var s storedOwnedConfig
	doc := `{"owner": {"uuid": "986F62C11E805BD4A1F5F15B3FB7CBBD"}, "force_clamp": {"max_force": 3, "owner": "newer"}}`
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	u := s.UnknownMembers()
	if len(u) != 1 || u[0].Name != "owner" || len(u[0].In) != 1 || u[0].In[0] != "force_clamp" || string(u[0].Value) != `"newer"` {
		t.Errorf("%s read as unknown %v, want force_clamp/owner only", doc, u)
	}
}
