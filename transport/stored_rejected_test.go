package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// storedGood is a value of each device-global entry other than its
// default, as a POST body and as stored.
var storedGood = []struct {
	entry, path, value string
}{
	{"handedness", "handedness", `"left"`},
	{"torque_scaling", "torque_scaling", `{"enabled":false}`},
	{"gravity_compensation", "gravity_compensation", `{"enabled":true,"scaling_factor":0.5}`},
	{"home_return", "home_return", `{"enabled":true}`},
	{"force_clamp", "passivity/force_clamp", `{"max_force":7}`},
	{"force_slew_limit", "passivity/force_slew_limit", `{"max_rate":3000}`},
	{"passivity_controller", "passivity/controller", `{"enabled":false,"scope":"rendered"}`},
}

// A device's stored document with one entry this build does not accept (a
// newer build's value, a typo) keeps every other entry in force; the bad
// one takes its default, and the user is told: the GET of it answers a
// warning naming the file, the entry and where the file as read is kept
// (a copy with its bytes), a stored-entry-rejected event is published, and
// the file is not written over until the entry is set again, which clears
// the warning and stores a clean file.
func TestStoredDeviceEntryRejectedKeepsTheOthers(t *testing.T) {
	bad := map[string]string{
		"handedness":           `"ambidextrous"`,
		"torque_scaling":       `{"enabled":"yes"}`,
		"gravity_compensation": `{"enabled":true,"scaling_factor":"half"}`,
		"home_return":          `{"enabled":1}`,
		"force_clamp":          `{"max_force":"ten"}`,
		"force_slew_limit":     `{"max_rate":-1}`,
		"passivity_controller": `{"enabled":true,"scope":"everything"}`,
	}
	for _, tc := range storedGood {
		t.Run(tc.entry, func(t *testing.T) {
			dir := t.TempDir()
			id, file := storeEveryEntry(t, dir)
			var doc map[string]json.RawMessage
			b, err := os.ReadFile(file)
			if err != nil || json.Unmarshal(b, &doc) != nil {
				t.Fatalf("the stored document %s: %v %s", file, err, b)
			}
			doc[tc.entry] = json.RawMessage(bad[tc.entry])
			original, _ := json.Marshal(doc)
			if err := os.WriteFile(file, original, 0o600); err != nil {
				t.Fatal(err)
			}

			ts := startService(t, serviceConfig{arms: 1, dir: dir})
			if ts.armIDs[0] != id {
				t.Fatalf("the arm's id changed over the restart: %s then %s", id, ts.armIDs[0])
			}
			for _, g := range storedGood {
				r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+g.path, "")
				if r.status != 200 {
					t.Fatalf("GET %s: %v", g.entry, r)
				}
				got, _ := json.Marshal(r.data())
				warnings, _ := r.env["warnings"].([]any)
				if g.entry != tc.entry {
					if !sameJSON(t, got, g.value) || len(warnings) != 0 {
						t.Errorf("GET %s, stored beside the bad %s: %s, want the stored %s and no warning", g.entry, tc.entry, r.body, g.value)
					}
					continue
				}
				def := protocol.DefaultEntry(mustKey(t, g.path))
				want, _ := json.Marshal(def)
				if !sameJSON(t, got, string(want)) {
					t.Errorf("GET %s: %s, want its default %s", g.entry, r.body, want)
				}
				if len(warnings) != 1 {
					t.Errorf("GET %s: %s, want one warning about the stored value", g.entry, r.body)
				}
			}
			if t.Failed() {
				t.FailNow()
			}
			r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+tc.path, "")
			msg, _ := path(r.env, "warnings", 0, "message").(string)
			for _, want := range []string{file, tc.entry, ".rejected-"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the warning %q does not name %q", msg, want)
				}
			}
			if code := path(r.env, "warnings", 0, "code"); code != "internal" {
				t.Errorf("the warning's code: %v", code)
			}
			kept := checkKeptAsRead(t, msg, file, original)
			var ev map[string]any
			hwtest.EventuallyNil(t, 5*time.Second, "a stored-entry-rejected event", func() error {
				ev = ts.eventNamed(t, "stored-entry-rejected")
				if ev == nil {
					return os.ErrNotExist
				}
				return nil
			})
			if path(ev, "data", "entry") != tc.entry || path(ev, "data", "device_id") != id ||
				path(ev, "data", "path") != file || path(ev, "data", "kept_at") != kept || path(ev, "data", "profile") != nil {
				t.Errorf("the event: %v", ev)
			}

			// Set again (its default, which is what is in force): the
			// warning goes, and the file is clean.
			def, _ := json.Marshal(protocol.DefaultEntry(mustKey(t, tc.path)))
			if r := ts.do(http.MethodPost, ts.base+"/arm3/"+id+"/config/"+tc.path, string(def)); r.status != 200 {
				t.Fatalf("POST %s again: %v", tc.entry, r)
			}
			if r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+tc.path, ""); r.env["warnings"] != nil {
				t.Errorf("GET %s after it was set: %s, want no warning", tc.entry, r.body)
			}
			var clean protocol.DeviceConfig
			if b, err := os.ReadFile(file); err != nil || json.Unmarshal(b, &clean) != nil {
				t.Errorf("the file after the entry was set: %s %v, want one that decodes", b, err)
			}
		})
	}
}

// eventNamed is the first event named name in the ring, decoded; nil when
// there is none.
func (ts *testService) eventNamed(t *testing.T, name string) map[string]any {
	t.Helper()
	r := ts.do(http.MethodGet, ts.base+"/events?since=0&limit=10000", "")
	events, _ := path(r.env, "data", "events").([]any)
	for _, e := range events {
		if m, ok := e.(map[string]any); ok && m["name"] == name {
			return m
		}
	}
	return nil
}

func mustKey(t *testing.T, p string) protocol.Key {
	t.Helper()
	k, ok := protocol.KeyFromPath(p)
	if !ok {
		t.Fatalf("no entry at %s", p)
	}
	return k
}

// sameJSON compares two JSON values whatever their members' order.
func sameJSON(t *testing.T, a []byte, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// The same for a profile's document on one device: one entry this build
// does not accept costs only itself. The pick's frame says so (internal,
// at session.configure.profile), the GET of the entry under the profile
// answers a warning naming the file, the entry and the copy kept, an event
// is published, and a POST of the entry clears it and stores a clean file.
func TestStoredProfileEntryRejectedKeepsTheOthers(t *testing.T) {
	const profile = "lab:rig1"
	good := map[string]string{
		"damping":    `{"scalar":7}`,
		"force_gate": `{"gain":0.5}`,
	}
	route := map[string]string{"damping": "filters/damping", "force_gate": "filters/force_gate", "navigation": "navigation"}
	for _, tc := range []struct{ entry, bad string }{
		{"navigation", `{"mode":"bubble","bubble":{"center":{"mode":"a-newer-mode"}}}`},
		{"damping", `{"scalar":"seven"}`},
		{"force_gate", `{"gain":"high"}`},
	} {
		t.Run(tc.entry, func(t *testing.T) {
			dir := t.TempDir()
			ts := startService(t, serviceConfig{arms: 1, dir: dir})
			id := ts.armIDs[0]
			c := ts.dial(t, ts.wsURL())
			c.expect()
			if f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"` + profile + `"}}}}`); f["errors"] != nil {
				t.Fatalf("pick: %v", f["errors"])
			}
			for entry, v := range good {
				if r := ts.do(http.MethodPost, ts.base+"/arm3/"+id+"/config/"+route[entry]+"?session="+profile, v); r.status != 200 {
					t.Fatalf("POST %s: %v", entry, r)
				}
			}
			_ = c.conn.Close()
			ts.stop()
			file := filepath.Join(dir, "profiles.v2", store.HashName(profile), "arm3-"+id+".json")
			var doc map[string]json.RawMessage
			b, err := os.ReadFile(file)
			if err != nil || json.Unmarshal(b, &doc) != nil {
				t.Fatalf("the stored document %s: %v %s", file, err, b)
			}
			doc[tc.entry] = json.RawMessage(tc.bad)
			original, _ := json.Marshal(doc)
			if err := os.WriteFile(file, original, 0o600); err != nil {
				t.Fatal(err)
			}

			ts = startService(t, serviceConfig{arms: 1, dir: dir})
			c = ts.dial(t, ts.wsURL())
			c.expect()
			f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"` + profile + `"}}}}`)
			picked, _ := json.Marshal(f["warnings"])
			if path(f, "warnings", 0, "code") != "internal" || path(f, "warnings", 0, "path") != "session.configure.profile" ||
				!strings.Contains(string(picked), tc.entry) || !strings.Contains(string(picked), ".rejected-") {
				t.Errorf("the pick's frame: warnings %s, want one naming %s and the copy kept", picked, tc.entry)
			}
			for entry, v := range good {
				r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+route[entry]+"?session="+profile, "")
				got, _ := json.Marshal(r.data())
				if entry != tc.entry && (!sameJSON(t, got, v) || r.env["warnings"] != nil) {
					t.Errorf("GET %s, stored beside the bad %s: %s, want the stored %s and no warning", entry, tc.entry, r.body, v)
				}
			}
			r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+route[tc.entry]+"?session="+profile, "")
			msg, _ := path(r.env, "warnings", 0, "message").(string)
			for _, want := range []string{file, tc.entry, ".rejected-"} {
				if !strings.Contains(msg, want) {
					t.Fatalf("GET %s: %s, want a warning naming %q", tc.entry, r.body, want)
				}
			}
			kept := checkKeptAsRead(t, msg, file, original)
			var ev map[string]any
			hwtest.EventuallyNil(t, 5*time.Second, "a stored-entry-rejected event", func() error {
				if ev = ts.eventNamed(t, "stored-entry-rejected"); ev == nil {
					return os.ErrNotExist
				}
				return nil
			})
			if path(ev, "data", "entry") != tc.entry || path(ev, "data", "profile") != profile || path(ev, "data", "kept_at") != kept {
				t.Errorf("the event: %v", ev)
			}

			def, _ := json.Marshal(protocol.DefaultEntry(mustKey(t, route[tc.entry])))
			if r := ts.do(http.MethodPost, ts.base+"/arm3/"+id+"/config/"+route[tc.entry]+"?session="+profile, string(def)); r.status != 200 {
				t.Fatalf("POST %s again: %v", tc.entry, r)
			}
			if r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+route[tc.entry]+"?session="+profile, ""); r.env["warnings"] != nil {
				t.Errorf("GET %s after it was set: %s, want no warning", tc.entry, r.body)
			}
			var clean protocol.SessionConfig
			if b, err := os.ReadFile(file); err != nil || json.Unmarshal(b, &clean) != nil {
				t.Errorf("the file after the entry was set: %s %v, want one that decodes", b, err)
			}
			_ = c.conn.Close()
		})
	}
}

// A profile's stored session level with a member this build does not
// accept keeps the others: a bad lease takes the default while the basis
// stays; a date that does not read (a hand edit) costs only the date (it
// cost the basis and the lease with it: tourstate). The pick's frame says
// so, an event names the member and a copy of the file as read is kept.
func TestStoredProfileSessionLevelRejectedKeepsTheBasis(t *testing.T) {
	const profile = "lab:rig2"
	for _, tc := range []struct {
		name, lease, usedAt string
		wantLeaseMs         float64 // 0: the default
		entry               string
		says, saysNot       string // of what the session has instead
	}{
		{name: "lease", lease: `"long"`, usedAt: `"2026-11-01T00:00:00Z"`, entry: "lease", says: "the default", saysNot: "next change"},
		{name: "date", lease: `250`, usedAt: `"yesterday"`, wantLeaseMs: 250, entry: "used_at", says: "dated by this pick", saysNot: "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ts := startService(t, serviceConfig{arms: 1, dir: dir})
			c := ts.dial(t, ts.wsURL())
			c.expect()
			c.roundTrip(`{"session":{"configure":{"profile":{"name":"` + profile + `"},"lease":{"ms":300}}}}`)
			_ = c.conn.Close()
			ts.stop()
			file := filepath.Join(dir, "profiles.v2", store.HashName(profile), "session.json")
			original := `{"name":"` + profile + `","used_at":` + tc.usedAt + `,"basis":{"permutation":"ZYX"},"lease_ms":` + tc.lease + `}`
			if err := os.WriteFile(file, []byte(original), 0o600); err != nil {
				t.Fatal(err)
			}

			ts = startService(t, serviceConfig{arms: 1, dir: dir})
			c = ts.dial(t, ts.wsURL())
			c.expect()
			f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"` + profile + `"}},"force_render_full_state":{}}}`)
			lease := num(path(f, "session", "config", "lease", "ms"))
			if path(f, "session", "config", "basis", "permutation") != "ZYX" || lease == 300 || tc.wantLeaseMs != 0 && lease != tc.wantLeaseMs {
				t.Errorf("the session level after the pick: %v, want the stored basis ZYX and lease %v (0: the default)", path(f, "session", "config"), tc.wantLeaseMs)
			}
			picked, _ := json.Marshal(f["warnings"])
			// The message as the client reads it (a Windows path's
			// backslashes are escaped in the JSON text).
			pickedMsg, _ := path(f, "warnings", 0, "message").(string)
			if path(f, "warnings", 0, "code") != "internal" || !strings.Contains(string(picked), tc.entry) || !strings.Contains(pickedMsg, file+".rejected-") {
				t.Errorf("the pick's frame: warnings %s, want one naming the %s and the copy kept", picked, tc.entry)
			}
			if !strings.Contains(string(picked), tc.says) || strings.Contains(string(picked), tc.saysNot) {
				t.Errorf("the pick's frame: warnings %s, want them to say %q and not %q", picked, tc.says, tc.saysNot)
			}
			var ev map[string]any
			hwtest.EventuallyNil(t, 5*time.Second, "a stored-entry-rejected event", func() error {
				if ev = ts.eventNamed(t, "stored-entry-rejected"); ev == nil {
					return os.ErrNotExist
				}
				return nil
			})
			kept, _ := path(ev, "data", "kept_at").(string)
			if path(ev, "data", "entry") != tc.entry || path(ev, "data", "profile") != profile || path(ev, "data", "device_id") != nil || path(ev, "data", "path") != file {
				t.Errorf("the event: %v", ev)
			}
			if b, err := os.ReadFile(kept); err != nil || string(b) != original {
				t.Errorf("the copy kept at %q: %q %v, want the file as read", kept, b, err)
			}
			// What the warning says the pick did: the profile stored again,
			// dated by the pick, with the basis read and the lease the
			// session has.
			pickedAt := time.Now().Add(-time.Minute)
			hwtest.EventuallyNil(t, 10*time.Second, "the profile stored again by the pick", func() error {
				var doc struct {
					UsedAt  time.Time `json:"used_at"`
					Basis   struct{ Permutation string }
					LeaseMs float64 `json:"lease_ms"`
				}
				b, err := os.ReadFile(file)
				if err != nil || json.Unmarshal(b, &doc) != nil || doc.UsedAt.Before(pickedAt) || doc.Basis.Permutation != "ZYX" || doc.LeaseMs != lease {
					return fmt.Errorf("%s %v: want it dated by the pick, basis ZYX, lease %v", b, err, lease)
				}
				return nil
			})
			_ = c.conn.Close()
		})
	}
}

// checkKeptAsRead checks that the copy a warning names (msg) holds the
// stored file as read (original), and that the file itself is untouched;
// kept is the copy's path.
func checkKeptAsRead(t *testing.T, msg, file string, original []byte) (kept string) {
	t.Helper()
	// The copy's name is the file's, ".rejected-" and a Unix time: cut at
	// the first byte that is not a digit (a Windows path has a ':' of its
	// own, so the message's punctuation cannot end it).
	at := strings.Index(msg, file+".rejected-")
	if at < 0 {
		t.Fatalf("the warning %q names no copy of %s", msg, file)
	}
	kept = msg[at:]
	digits := len(file + ".rejected-")
	for digits < len(kept) && kept[digits] >= '0' && kept[digits] <= '9' {
		digits++
	}
	kept = kept[:digits]
	if b, err := os.ReadFile(kept); err != nil || string(b) != string(original) {
		t.Errorf("the copy kept at %s: %q %v, want the file as read %s", kept, b, err, original)
	}
	if b, _ := os.ReadFile(file); string(b) != string(original) {
		t.Errorf("the file was written over before the entry was set: %s", b)
	}
	return kept
}

// A device's stored document that is not readable at all (here a byte-order
// mark, as an old Windows editor saves it) is moved aside whole, and every
// entry of it takes its default: the user is told as of one entry lost, by
// a stored-entry-rejected event (entry "*", kept_at the moved file) and a
// warning on the GET of each entry until it is set again. It was told by
// one log line (tourstate), less than one bad entry.
func TestStoredDeviceDocumentMovedAsideIsTold(t *testing.T) {
	dir := t.TempDir()
	id, file := storeEveryEntry(t, dir)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, append([]byte("\xEF\xBB\xBF"), b...), 0o600); err != nil {
		t.Fatal(err)
	}

	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	var ev map[string]any
	hwtest.EventuallyNil(t, 5*time.Second, "a stored-entry-rejected event", func() error {
		if ev = ts.eventNamed(t, "stored-entry-rejected"); ev == nil {
			return os.ErrNotExist
		}
		return nil
	})
	moved, _ := path(ev, "data", "kept_at").(string)
	if path(ev, "data", "entry") != "*" || path(ev, "data", "path") != file || !strings.HasPrefix(moved, file+".corrupt-") {
		t.Fatalf("the event: %v, want entry * for %s, kept_at its moved file", ev, file)
	}
	if got, err := os.ReadFile(moved); err != nil || string(got[3:]) != string(b) {
		t.Errorf("the moved file %s: %v, want the document as it was", moved, err)
	}
	for _, g := range storedGood {
		r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/"+g.path, "")
		warnings, _ := r.env["warnings"].([]any)
		msg, _ := path(r.env, "warnings", 0, "message").(string)
		if r.status != 200 || len(warnings) != 1 || !strings.Contains(msg, moved) {
			t.Errorf("GET %s after the document was moved aside: %v, want its default and one warning naming %s", g.entry, r, moved)
		}
	}
	// Set again, an entry's warning goes; the others' stay.
	if r := ts.do(http.MethodPost, ts.base+"/arm3/"+id+"/config/handedness", `"left"`); r.status != 200 {
		t.Fatalf("POST handedness: %v", r)
	}
	if r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/handedness", ""); r.env["warnings"] != nil {
		t.Errorf("GET handedness once set again: %v, want no warning", r)
	}
	if r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/home_return", ""); r.env["warnings"] == nil {
		t.Errorf("GET home_return, not set again: %v, want its warning still", r)
	}
}

// storeEveryEntry runs a service on dir with one arm, POSTs each of
// storedGood on it and stops: the arm's id, and its document's file.
func storeEveryEntry(t *testing.T, dir string) (id, file string) {
	t.Helper()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	id = ts.armIDs[0]
	for _, g := range storedGood {
		if r := ts.do(http.MethodPost, ts.base+"/arm3/"+id+"/config/"+g.path, g.value); r.status != 200 {
			t.Fatalf("POST %s: %v", g.entry, r)
		}
	}
	ts.stop()
	return id, filepath.Join(dir, "devices", "arm3-"+id+".json")
}
