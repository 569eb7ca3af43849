package cluster

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// Colliding short ids from two nodes get distinct gateway ids, the same ones
// whatever order the inventories arrive in, and a device already connected
// is never renamed.
func TestAssignIDs(t *testing.T) {
	a := newcomer{uuid: "aaaa", id: "049D", kind: hw.KindArm}
	b := newcomer{uuid: "bbbb", id: "049D", kind: hw.KindArm}
	g := newcomer{uuid: "cccc", id: "049D", kind: hw.KindGrip} // another kind: no clash

	for _, order := range [][]newcomer{{a, b, g}, {g, b, a}} {
		got := assignIDs(map[hw.Kind]map[string]bool{}, idMemory{}, order, time.Now())
		if got["aaaa"] != "049D" {
			t.Errorf("lowest UUID lost its own id: %v", got)
		}
		if got["bbbb"] == "049D" || len(got["bbbb"]) != 4 {
			t.Errorf("second arm with 049D got %q, want another 4-hex id", got["bbbb"])
		}
		if got["cccc"] != "049D" {
			t.Errorf("grip renamed although no grip holds its id: %v", got)
		}
		again := assignIDs(map[hw.Kind]map[string]bool{}, idMemory{}, order, time.Now())
		if again["bbbb"] != got["bbbb"] {
			t.Errorf("derived id not stable: %q then %q", got["bbbb"], again["bbbb"])
		}
	}

	// b is connected first under its own id; a arrives later and must not
	// take it away.
	used := map[hw.Kind]map[string]bool{hw.KindArm: {"049D": true}}
	got := assignIDs(used, idMemory{}, []newcomer{a}, time.Now())
	if got["aaaa"] == "049D" {
		t.Errorf("a newcomer took the id of a connected device: %v", got)
	}
	if !used[hw.KindArm][got["aaaa"]] {
		t.Errorf("assigned id %q not recorded as used", got["aaaa"])
	}
}

// A restarted gateway gives each UUID the id it remembers for it, whatever
// order the devices come back in: a remembered id is reserved for its UUID
// until idReservedFor after it was last seen, and a newcomer whose own id
// is reserved for another gets one derived from its UUID instead.
func TestAssignIDsRemembered(t *testing.T) {
	now := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	recent, old := now.Add(-time.Hour), now.Add(-idReservedFor-time.Hour)
	// "bbbb" had 049D before the restart, "aaaa" (lower UUID, the same
	// own id) a derived one.
	derivedA := derivedID(hw.KindArm, "aaaa", map[string]bool{"049D": true})
	a := newcomer{uuid: "aaaa", id: "049D", kind: hw.KindArm}
	b := newcomer{uuid: "bbbb", id: "049D", kind: hw.KindArm}
	c := newcomer{uuid: "cccc", id: "049D", kind: hw.KindArm}
	swapped := func(seen time.Time) idMemory {
		return idMemory{hw.KindArm: {"bbbb": {ID: "049D", Seen: seen}, "aaaa": {ID: derivedA, Seen: seen}}}
	}
	tests := []struct {
		name string
		mem  idMemory
		used []string // arm ids held by devices already connected
		// batches arrive one after the other (one node's inventory each).
		batches [][]newcomer
		want    map[string]string
	}{
		{"each back to its own, a first", swapped(recent), nil, [][]newcomer{{a}, {b}}, map[string]string{"aaaa": derivedA, "bbbb": "049D"}},
		{"each back to its own, b first", swapped(recent), nil, [][]newcomer{{b}, {a}}, map[string]string{"aaaa": derivedA, "bbbb": "049D"}},
		{"each back to its own, together", swapped(recent), nil, [][]newcomer{{a, b}}, map[string]string{"aaaa": derivedA, "bbbb": "049D"}},
		{"a newcomer does not take a reserved id", swapped(recent), nil, [][]newcomer{{c}, {b}},
			map[string]string{"cccc": derivedID(hw.KindArm, "cccc", map[string]bool{"049D": true, derivedA: true}), "bbbb": "049D"}},
		{"a reservation ends: a newcomer gets its own id", swapped(old), nil, [][]newcomer{{c}, {b}},
			map[string]string{"cccc": "049D", "bbbb": derivedID(hw.KindArm, "bbbb", map[string]bool{"049D": true})}},
		{"an ended reservation's id comes back if still free", idMemory{hw.KindArm: {"cccc": {ID: "7777", Seen: old}}}, nil, [][]newcomer{{c}},
			map[string]string{"cccc": "7777"}},
		{"two records want one id: the last seen wins",
			idMemory{hw.KindArm: {"aaaa": {ID: "1234", Seen: recent.Add(-time.Minute)}, "bbbb": {ID: "1234", Seen: recent}}}, nil, [][]newcomer{{a}, {b}},
			map[string]string{"aaaa": "049D", "bbbb": "1234"}},
		{"two records seen at once: the lower UUID wins",
			idMemory{hw.KindArm: {"aaaa": {ID: "1234", Seen: recent}, "bbbb": {ID: "1234", Seen: recent}}}, nil, [][]newcomer{{b}, {a}},
			map[string]string{"aaaa": "1234", "bbbb": "049D"}},
		{"a remembered id a connected device holds is not taken", swapped(recent), []string{"049D"}, [][]newcomer{{b}},
			map[string]string{"bbbb": derivedID(hw.KindArm, "bbbb", map[string]bool{"049D": true, derivedA: true})}},
		{"another kind's record reserves nothing", idMemory{hw.KindGrip: {"gggg": {ID: "1234", Seen: recent}}}, nil,
			[][]newcomer{{{uuid: "aaaa", id: "1234", kind: hw.KindArm}}}, map[string]string{"aaaa": "1234"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			used := map[hw.Kind]map[string]bool{hw.KindArm: {}}
			for _, id := range tt.used {
				used[hw.KindArm][id] = true
			}
			got := map[string]string{}
			for _, batch := range tt.batches {
				maps.Copy(got, assignIDs(used, tt.mem, batch, now))
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("ids %v, want %v", got, tt.want)
			}
			for uuid, id := range got {
				if r := tt.mem[hw.KindArm][uuid]; r.ID != id || !r.Seen.Equal(now) {
					t.Errorf("%s remembered as %+v, want %s seen now", uuid, r, id)
				}
			}
		})
	}
}

// The remembered ids survive their document's round trip; records of an
// unknown kind or with a badly spelled id are left out.
func TestIDsDocument(t *testing.T) {
	seen := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	mem := idMemory{hw.KindArm: {"aaaa": {ID: "049D", Seen: seen}}, hw.KindGrip: {"gggg": {ID: "12", Seen: seen}}}
	b, err := json.Marshal(mem.file())
	if err != nil {
		t.Fatal(err)
	}
	var f idsFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	f.IDs["arm"]["bad"] = rememberedID{ID: "a/b", Seen: seen}
	f.IDs["pedal"] = map[string]rememberedID{"pppp": {ID: "1", Seen: seen}}
	back := memoryOf(f, seen)
	if len(back) != 2 || len(back[hw.KindArm]) != 1 || back[hw.KindArm]["aaaa"] != mem[hw.KindArm]["aaaa"] || back[hw.KindGrip]["gggg"] != mem[hw.KindGrip]["gggg"] {
		t.Errorf("read back %+v from %s, want %+v", back, b, mem)
	}
}

// A gateway's ids document written while devices reported their UUIDs in
// the dashed lower-case form reads back under the UUIDs they report now
// (a node's simulated Inverse3 7 ends in its id, A696; a real arm keeps
// its bytes), so each keeps its gateway id: under the old keys they were
// newcomers whose own ids the absent old records held for 30 days.
func TestIDsDocumentInTheOldUUIDForm(t *testing.T) {
	seen := time.Date(2026, 11, 26, 23, 0, 0, 0, time.UTC)
	f := idsFile{IDs: map[string]map[string]rememberedID{"arm": {
		"5c4f3587-3022-5ba7-9565-578b3c2ad177": {ID: "A696", Seen: seen},
		"2d35f80d-d900-5f59-9b68-f49944cb04ba": {ID: "04BA", Seen: seen},
	}}}
	got := memoryOf(f, seen)[hw.KindArm]
	want := map[string]rememberedID{sim.ArmUUID(7): {ID: "A696", Seen: seen}, "2D35F80DD9005F599B68F49944CB04BA": {ID: "04BA", Seen: seen}}
	if !maps.Equal(got, want) {
		t.Errorf("read back %v, want %v", got, want)
	}
}

// Pruning the remembered ids: an ended reservation goes unless its device
// is connected now (its Seen lags the hourly refresh, or a wall clock
// stepped forward); beyond maxRememberedIDs per kind the least recently
// seen of the devices not connected go; a record from the future (a clock
// stepped back) is read back as seen now, so its reservation still ends.
func TestRememberedIDsArePruned(t *testing.T) {
	now := time.Date(2026, 11, 27, 1, 0, 0, 0, time.UTC)
	old := now.Add(-idReservedFor - time.Hour)
	connected := func(uuid string) bool { return uuid == "conn" }

	mem := idMemory{hw.KindArm: {"conn": {ID: "0001", Seen: old}, "gone": {ID: "0002", Seen: old}, "fresh": {ID: "0003", Seen: now}}}
	mem.prune(now, connected)
	if _, ok := mem[hw.KindArm]["gone"]; ok || len(mem[hw.KindArm]) != 2 {
		t.Errorf("after pruning ended reservations: %v, want conn and fresh only", mem[hw.KindArm])
	}

	many := idMemory{hw.KindArm: {"conn": {ID: "0000", Seen: now.Add(-time.Hour)}}}
	for i := range maxRememberedIDs + 10 {
		many.set(hw.KindArm, fmt.Sprintf("u%05d", i), rememberedID{ID: fmt.Sprintf("%04X", i+1), Seen: now.Add(time.Duration(i) * time.Second)})
	}
	many.prune(now.Add(time.Hour*24), connected)
	arms := many[hw.KindArm]
	if len(arms) != maxRememberedIDs {
		t.Fatalf("%d records after pruning, want %d", len(arms), maxRememberedIDs)
	}
	if _, ok := arms["conn"]; !ok {
		t.Error("the connected device's record was pruned")
	}
	for i := range 11 {
		if _, ok := arms[fmt.Sprintf("u%05d", i)]; ok {
			t.Errorf("u%05d, among the least recently seen, was kept", i)
		}
	}

	future := memoryOf(idsFile{IDs: map[string]map[string]rememberedID{"arm": {"late": {ID: "0004", Seen: now.Add(365 * 24 * time.Hour)}}}}, now)
	if r := future[hw.KindArm]["late"]; !r.Seen.Equal(now) {
		t.Errorf("a record seen a year ahead read back as %+v, want seen now", r)
	}
	future.prune(now.Add(idReservedFor), connected)
	if len(future[hw.KindArm]) != 0 {
		t.Errorf("a record from the future never expires: %v", future[hw.KindArm])
	}
}

// A remembered-ids document the gateway cannot read (an I/O or permission
// error) is left for a later start that can: the gateway runs with
// first-come ids and never writes over it. A corrupt one, which the store
// moved aside, is simply replaced.
func TestUnreadableIDsAreNotOverwritten(t *testing.T) {
	tests := []struct {
		name     string
		plant    func(t *testing.T, path string)
		wantKept bool
	}{
		{"unreadable (a directory where the file goes)", func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Join(path, "x"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"corrupt", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte(`{"ids":`), 0o644); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"absent", func(*testing.T, string) {}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "cluster"), 0o755); err != nil {
				t.Fatal(err)
			}
			tt.plant(t, filepath.Join(dir, filepath.FromSlash(idsDocument)+".json"))
			svc, shutdown := testServiceWith(t, actors.Options{StateDir: dir})
			t.Cleanup(shutdown)
			mem, kept := loadIDs(svc, zerolog.Nop())
			if kept != tt.wantKept || len(mem) != 0 {
				t.Fatalf("loadIDs: %d kinds remembered, kept %v; want none, kept %v", len(mem), kept, tt.wantKept)
			}
		})
	}
}

// A gateway whose state directory holds the local registry's memory of
// derived ids (a standalone host turned gateway) serves a node's device
// on the id the gateway gave it: the registry moved it to the id it
// remembered for the UUID, so the gateway's events and remembered ids
// named an id that was not listed.
func TestGatewayIDNotMovedByTheLocalIDMemory(t *testing.T) {
	dir := t.TempDir()
	const uuid = "11111111-2222-3333-4444-555555555555"
	doc := `{"ids":{"arm":{"` + uuid + `":{"id":"BEEF","seen":"2026-01-01T00:00:00Z"}}}}`
	if err := os.WriteFile(filepath.Join(dir, "device-ids.json"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	svc, shutdown := testServiceWith(t, actors.Options{StateDir: dir})
	g := newTestGateway(svc, time.Minute)
	serveTestGateway(t, g, shutdown, false)
	g.inventory(&wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm(uuid, "0A0A")}})
	waitAdded(t, g)
	listed := g.svc.Devices().All()[0].ID
	if gave := g.gatewayID("n", "0A0A"); gave != listed {
		t.Fatalf("the gateway gave the node's arm %s, the service lists it as %s", gave, listed)
	}
}

// A gateway's remembered ids keep what a newer build wrote there and this
// one does not know (a member beside "ids", a device kind among them),
// byte for byte, over the write of a new device's id: a downgraded
// gateway for a day and an upgrade back lose nothing. On main they were
// gone at that write.
func TestGatewayIDsKeepTheirUnknownMembers(t *testing.T) {
	const pedal = `{"pppp": {"id": "P-1",  "seen": "2026-01-01T00:00:00Z"}}`
	const future = `{"x": 1,  "list": [true, null]}`
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cluster"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, filepath.FromSlash(idsDocument)+".json")
	doc := `{"format": ` + future + `, "ids": {"pedal": ` + pedal + `, "arm": {"aaaa": {"id": "049D", "seen": "2026-01-01T00:00:00Z"}}}}`
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	svc, shutdown := testServiceWith(t, actors.Options{StateDir: dir})
	t.Cleanup(shutdown)
	mem, kept := loadIDs(svc, zerolog.Nop())
	if kept || mem[hw.KindArm]["aaaa"].ID != "049D" {
		t.Fatalf("loadIDs: %v, kept %v", mem, kept)
	}
	hw.IDMemory(mem).Set(hw.KindArm, "bbbb", rememberedID{ID: "0A0A", Seen: time.Now()})
	if err := svc.SaveDocument(idsDocument, mem.file()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var top, ids map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	json.Unmarshal(top["ids"], &ids)
	if string(top["format"]) != future || string(ids["pedal"]) != pedal {
		t.Errorf("the file after the write:\n%s\nwant format %s and ids.pedal %s byte for byte", data, future, pedal)
	}
	var arms map[string]rememberedID
	json.Unmarshal(ids["arm"], &arms)
	if arms["bbbb"].ID != "0A0A" || arms["aaaa"].ID != "049D" {
		t.Errorf("arms in the file: %v, want aaaa and bbbb", arms)
	}
}
