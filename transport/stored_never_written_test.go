package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/actors/store"
)

// settings.json removed by hand (with a newer build's member in it), then
// a POST of the value in force: the file is written again, without the
// member the user removed with it. It came back before.
func TestSettingsRemovedByHandAreWrittenWithoutTheirUnknown(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(file, []byte(`{"audio": {"volume": 3}, "devices": {"force_scale": 0.75}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startService(t, serviceConfig{dir: dir})
	defer ts.stop()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if r := ts.do(http.MethodPost, ts.base+"/settings/devices/force_scale", `{"value":0.75}`); r.status != http.StatusOK {
		t.Fatalf("POST: %v", r)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "audio") {
		t.Errorf("the file removed by hand came back with the member it had: %s", b)
	}
}

// A DELETE of a setting at its default, on a service with no
// settings.json, writes none: one would pin every setting at this build's
// defaults (a later build's changed default would no longer apply). It
// wrote one before.
func TestUnchangedDeleteWritesNoSettings(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{dir: dir})
	defer ts.stop()
	if r := ts.do(http.MethodDelete, ts.base+"/settings/devices/force_scale", ""); r.status != http.StatusOK {
		t.Fatalf("DELETE: %v", r)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "settings.json")); err == nil {
		t.Errorf("a DELETE that changed nothing wrote settings.json: %s", b)
	}
}

// A document never stored, with a folder made in its place after the
// start: a POST of the value in force, or a DELETE of an entry at its
// default, has nothing to store (the defaults in force are what a restart
// gives, and the folder holds none of the document's values), so it
// answers 200 and leaves the folder; a changed value, which must be
// stored, answers 500 naming the folder.
func TestFolderInPlaceOfANeverStoredDocument(t *testing.T) {
	const profile = "lab:never"
	type target struct {
		name, route, changed, file string
	}
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	defer ts.stop()
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	if f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)); f["errors"] != nil {
		t.Fatalf("pick: %v", f["errors"])
	}
	defer c.conn.Close()
	for _, tg := range []target{
		{"device", "/arm3/" + id + "/config/handedness", `"left"`, "devices/arm3-" + id + ".json"},
		{"profile on the device", "/arm3/" + id + "/config/filters/damping?session=" + profile, `{"scalar":7}`,
			"profiles.v2/" + store.HashName(profile) + "/arm3-" + id + ".json"},
		{"settings", "/settings/devices/force_scale", `{"value":0.5}`, "settings.json"},
	} {
		t.Run(tg.name, func(t *testing.T) {
			doc := filepath.Join(dir, filepath.FromSlash(tg.file))
			if err := os.MkdirAll(filepath.Join(doc, "notes"), 0o700); err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(doc)
			got := ts.do(http.MethodGet, ts.base+tg.route, "")
			if got.status != http.StatusOK {
				t.Fatalf("GET: %v", got)
			}
			inForce, err := json.Marshal(got.env["data"])
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range []struct {
				method, body string
				want         int
			}{
				{http.MethodPost, string(inForce), http.StatusOK},
				{http.MethodDelete, "", http.StatusOK},
				{http.MethodPost, tg.changed, http.StatusInternalServerError},
			} {
				if a := ts.do(r.method, ts.base+tg.route, r.body); a.status != r.want {
					t.Errorf("%s %s: %v, want %d", r.method, r.body, a, r.want)
				}
				if fi, err := os.Stat(filepath.Join(doc, "notes")); err != nil || !fi.IsDir() {
					t.Errorf("the folder after %s %s: %v, want it left as it was", r.method, r.body, err)
				}
			}
		})
	}
}

// A profile's document on a device removed by hand, then read again (the
// profile picked anew): the session runs on the defaults, as after a
// restart, so a POST of the value in force has nothing to store and
// writes no file of defaults. It wrote one before: the store still took
// the document for one on disk.
func TestDocumentRemovedByHandAndReadAgainIsNotWrittenUnchanged(t *testing.T) {
	const profile, other = "lab:gone", "lab:other"
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	defer ts.stop()
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	defer c.conn.Close()
	pick := func(p string) {
		t.Helper()
		if f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, p)); f["errors"] != nil {
			t.Fatalf("pick %s: %v", p, f["errors"])
		}
	}
	route := ts.base + "/arm3/" + id + "/config/filters/damping?session=" + profile
	doc := filepath.Join(dir, "profiles.v2", store.HashName(profile), "arm3-"+id+".json")
	pick(profile)
	if r := ts.do(http.MethodPost, route, `{"scalar":7}`); r.status != http.StatusOK {
		t.Fatalf("POST: %v", r)
	}
	if r := ts.do(http.MethodDelete, route, ""); r.status != http.StatusOK {
		t.Fatalf("DELETE: %v", r)
	}
	pick(other) // the device drops the profile's document
	if err := os.Remove(doc); err != nil {
		t.Fatal(err)
	}
	pick(profile) // and reads it again: there is none
	got := ts.do(http.MethodGet, route, "")
	if got.status != http.StatusOK {
		t.Fatalf("GET: %v", got)
	}
	inForce, err := json.Marshal(got.env["data"])
	if err != nil {
		t.Fatal(err)
	}
	if r := ts.do(http.MethodPost, route, string(inForce)); r.status != http.StatusOK {
		t.Fatalf("POST of the value in force: %v", r)
	}
	if b, err := os.ReadFile(doc); err == nil {
		t.Errorf("a POST of the defaults in force, read from no file, wrote %s:\n%s", doc, b)
	}
}
