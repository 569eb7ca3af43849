package transport

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// A folder standing where a device's document should be (made by hand or
// by a broken tool while the service runs): the POST that would write the
// document answers 500 internal saying so, naming the path and what to do,
// not "check free space and permissions"; nothing else changes (the value
// in force, the device's other entries, the folder and what is in it); and
// once the folder is moved away the same POST is stored.
func TestFolderInPlaceOfADeviceDocument(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	url := ts.base + "/arm3/" + ts.armIDs[0] + "/config/"
	for entry, body := range map[string]string{"handedness": `"left"`, "gravity_compensation": `{"enabled":true,"scaling_factor":0.5}`} {
		if r := ts.do(http.MethodPost, url+entry, body); r.status != http.StatusOK {
			t.Fatalf("POST %s: %v", entry, r)
		}
	}
	doc := filepath.Join(dir, "devices", "arm3-"+ts.armIDs[0]+".json")
	gravity := ts.do(http.MethodGet, url+"gravity_compensation", "").body
	if err := os.Remove(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(doc, "notes"), 0o700); err != nil {
		t.Fatal(err)
	}

	r := ts.do(http.MethodPost, url+"handedness", `"right"`)
	msg, _ := r.env["error"].(string)
	if r.status != http.StatusInternalServerError || r.env["code"] != string(protocol.CodeInternal) {
		t.Fatalf("POST with a folder where the document should be: %v, want 500 internal", r)
	}
	if !strings.Contains(msg, doc) || !strings.Contains(msg, "is a folder, where the document") || !strings.Contains(msg, "moved away") || strings.Contains(msg, "free space") {
		t.Errorf("message %q: want it to name %s, say it is a folder where the document should be and to move it away, and not to send the reader to free space and permissions", msg, doc)
	}
	if r := ts.do(http.MethodGet, url+"handedness", ""); !jsonEqual(t, r.data(), `"left"`) {
		t.Errorf("handedness after the refused POST: %v, want the value in force before, \"left\"", r)
	}
	if got := ts.do(http.MethodGet, url+"gravity_compensation", "").body; string(got) != string(gravity) {
		t.Errorf("gravity_compensation after the refused POST: %s, want it unchanged, %s", got, gravity)
	}
	if fi, err := os.Stat(filepath.Join(doc, "notes")); err != nil || !fi.IsDir() {
		t.Errorf("the folder in the document's place after the refused POST: %v, want it left as it was", err)
	}

	if err := os.RemoveAll(doc); err != nil {
		t.Fatal(err)
	}
	if r := ts.do(http.MethodPost, url+"handedness", `"right"`); r.status != http.StatusOK {
		t.Fatalf("POST once the folder is gone: %v", r)
	}
	if b, err := os.ReadFile(doc); err != nil || !strings.Contains(string(b), `"right"`) || !strings.Contains(string(b), `"scaling_factor": 0.5`) {
		t.Errorf("%s once the folder is gone: %s, %v; want right and the gravity compensation kept", doc, b, err)
	}
}

// A folder standing where a device's document should be when the service
// starts: the device runs on defaults, the folder is left as an unread
// document is (a POST answers 503 and changes nothing, as for a document
// the service cannot read), and the answer says what is wrong (a folder in
// the document's place, to move away), not to check the state directory's
// permissions.
func TestFolderInPlaceOfADeviceDocumentAtStart(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	doc := filepath.Join(dir, "devices", "arm3-"+ts.armIDs[0]+".json")
	ts.stop()
	if err := os.MkdirAll(doc, 0o700); err != nil {
		t.Fatal(err)
	}
	ts = startService(t, serviceConfig{arms: 1, dir: dir})
	url := ts.base + "/arm3/" + ts.armIDs[0] + "/config/handedness"
	r := ts.do(http.MethodPost, url, `"left"`)
	msg, _ := r.env["error"].(string)
	if r.status != http.StatusServiceUnavailable || r.env["code"] != string(protocol.CodeUnavailable) {
		t.Fatalf("POST with a folder where the document should be: %v, want 503 unavailable", r)
	}
	if !strings.Contains(msg, doc) || !strings.Contains(msg, "is a folder, where the document") || !strings.Contains(msg, "moved away") || strings.Contains(msg, "permissions") {
		t.Errorf("message %q: want it to name %s, say it is a folder where the document should be and to move it away, not to check permissions", msg, doc)
	}
	if err := os.Remove(doc); err != nil {
		t.Fatal(err)
	}
	if r := ts.do(http.MethodPost, url, `"left"`); r.status != http.StatusOK {
		t.Fatalf("POST once the folder is gone: %v", r)
	}
}
