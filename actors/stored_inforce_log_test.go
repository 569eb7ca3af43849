package actors

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// A POST of the value in force of an entry holding a newer build's field
// writes to drop it; when that write cannot be made (here: members over
// the kept limit elsewhere in the document) it answers as before, and the
// log says so. A client sending the value in force in a loop must not
// flood the log: the first such request is told, the next ones, failing
// the same way, add no line at warning level or above.
func TestTheValueInForceUnwrittenIsLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	id := simArm(0).Info().ID
	file := filepath.Join(dir, "devices", "arm3-"+id+".json")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	doc := `{"huge_future": "` + strings.Repeat("x", store.MaxKept) + `", "force_clamp": {"mode": "soft", "max_force": 5}}`
	if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs hwtest.LogBuffer
	svc, err := Start(Options{StateDir: dir, SimShards: 1, Log: zerolog.New(&logs).Level(zerolog.WarnLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, svc) })
	d := addArm(t, svc, simArm(0))
	inForce, err := svc.Entry(d, 0, protocol.KeyForceClamp)
	if err != nil {
		t.Fatal(err)
	}
	// Lines at warning level or above.
	told := func() int {
		n := 0
		for _, l := range logs.Lines() {
			var rec struct{ Level string }
			if json.Unmarshal([]byte(l), &rec) == nil && (rec.Level == "warn" || rec.Level == "error") {
				n++
			}
		}
		return n
	}
	post := func() {
		t.Helper()
		if _, err := svc.SetEntry(d, 0, inForce); err != nil {
			t.Fatalf("POST of the value in force: %v, want it answered as before", err)
		}
	}
	before := told()
	post()
	first := told()
	if first == before {
		t.Fatalf("the first POST whose write could not be made added no line at warning level or above")
	}
	for range 5 {
		post()
	}
	if n := told(); n != first {
		t.Errorf("five more POSTs of the value in force, failing the same way, added %d lines at warning level or above, want none", n-first)
	}
	if b, _ := os.ReadFile(file); !bytes.Equal(b, []byte(doc)) {
		t.Errorf("the file changed")
	}
}
