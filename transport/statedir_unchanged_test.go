package transport

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/protocol"
)

// A POST of the value already in force promises, as any POST, that the
// value is stored. With a folder standing where its document's file should
// be, it answers 500 internal naming the folder and what to do, as a
// changed value does, and leaves the folder as it is; with the file
// removed by hand, it writes it again. Once the folder is moved away the
// same POST is stored. On main it answered 200 and stored nothing: the
// value was gone at the next restart (tourlabwarn). A DELETE of an entry
// at its default in a stored document promises the same, and does the
// same: a profile's entry on a device answered 200 unchecked until
// storedsmall.
func TestFolderInPlaceOfAnUnchangedValuesDocument(t *testing.T) {
	const profile = "lab:same"
	type target struct {
		name string
		// route and body: the POST; file: its document, below the state
		// directory; want: what the file holds once stored.
		route, body, file, want string
	}
	for _, tc := range []func(id string) target{
		func(id string) target {
			return target{"device", "/arm3/" + id + "/config/handedness", `"left"`, "devices/arm3-" + id + ".json", `"handedness": "left"`}
		},
		func(id string) target {
			return target{"profile on the device", "/arm3/" + id + "/config/filters/damping?session=" + profile, `{"scalar":7}`,
				"profiles.v2/" + store.HashName(profile) + "/arm3-" + id + ".json", `"scalar": 7`}
		},
		func(string) target {
			return target{"settings", "/settings/devices/force_scale", `{"value":0.5}`, "settings.json", `"force_scale": 0.5`}
		},
	} {
		for _, c := range []struct{ method, gone string }{
			{http.MethodPost, "folder"}, {http.MethodPost, "removed"},
			{http.MethodDelete, "folder"}, {http.MethodDelete, "removed"},
		} {
			method, gone := c.method, c.gone
			dir := t.TempDir()
			ts := startService(t, serviceConfig{arms: 1, dir: dir})
			tg := tc(ts.armIDs[0])
			t.Run(tg.name+"/"+method+"/"+gone, func(t *testing.T) {
				c := ts.dial(t, ts.wsURL())
				c.expect()
				if f := c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)); f["errors"] != nil {
					t.Fatalf("pick: %v", f["errors"])
				}
				defer c.conn.Close()
				post := func() reply { return ts.do(http.MethodPost, ts.base+tg.route, tg.body) }
				if r := post(); r.status != http.StatusOK {
					t.Fatalf("first POST: %v", r)
				}
				if method == http.MethodDelete {
					// The default, stored: the next DELETE sets the value
					// in force.
					post = func() reply { return ts.do(http.MethodDelete, ts.base+tg.route, "") }
					if r := post(); r.status != http.StatusOK {
						t.Fatalf("first DELETE: %v", r)
					}
				}
				doc := filepath.Join(dir, filepath.FromSlash(tg.file))
				if err := os.Remove(doc); err != nil {
					t.Fatal(err)
				}
				if gone == "folder" {
					if err := os.MkdirAll(filepath.Join(doc, "notes"), 0o700); err != nil {
						t.Fatal(err)
					}
					r := post()
					msg, _ := r.env["error"].(string)
					if r.status != http.StatusInternalServerError || r.env["code"] != string(protocol.CodeInternal) {
						t.Fatalf("%s of the value in force with a folder where its document should be: %v, want 500 internal", method, r)
					}
					if !strings.Contains(msg, doc) || !strings.Contains(msg, "is a folder, where the document") || !strings.Contains(msg, "moved away") {
						t.Errorf("message %q: want it to name %s, say it is a folder where the document should be and to move it away", msg, doc)
					}
					if fi, err := os.Stat(filepath.Join(doc, "notes")); err != nil || !fi.IsDir() {
						t.Errorf("the folder after the refused %s: %v, want it left as it was", method, err)
					}
					if err := os.RemoveAll(doc); err != nil {
						t.Fatal(err)
					}
				}
				if r := post(); r.status != http.StatusOK {
					t.Fatalf("%s of the value in force, the file gone: %v", method, r)
				}
				b, err := os.ReadFile(doc)
				switch {
				case err != nil:
					t.Errorf("%s after the %s of the value in force: %v; want it stored", doc, method, err)
				case method == http.MethodPost && !strings.Contains(string(b), tg.want):
					t.Errorf("%s after the POST: %s; want it stored, with %s", doc, b, tg.want)
				case method == http.MethodDelete && strings.Contains(string(b), tg.want):
					t.Errorf("%s after the DELETE: %s; want the default stored, not %s", doc, b, tg.want)
				}
			})
			ts.stop()
		}
	}
}
