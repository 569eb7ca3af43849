package transport

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
