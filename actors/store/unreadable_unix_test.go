//go:build unix

package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// unreadableEnv names the state directory to the child run of
// TestUnreadableDocumentIsNeverOverwritten (as an unprivileged user when
// the test runs as root, which reads any file).
const unreadableEnv = "HAPTICD_STORE_UNREADABLE_DIR"

// unreadableBody is what an administrator left: a settings document the
// service's user may not read (root-owned, mode 0600, say), holding values
// acknowledged earlier.
const unreadableBody = `{"force_scale": 0.25, "serial_enable": false}` + "\n"

// A document that exists but cannot be read (not a corrupt one, which is
// moved aside) may hold acknowledged values: the service runs on defaults
// without them and must not write over it, as the next Save, a
// write-behind flush or a Delete would otherwise do.
func TestUnreadableDocumentIsNeverOverwritten(t *testing.T) {
	if dir := os.Getenv(unreadableEnv); dir != "" {
		refusesUnreadable(t, dir)
		return
	}
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(path, []byte(unreadableBody), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		refusesUnreadable(t, dir)
	} else {
		runUnprivileged(t, dir)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != unreadableBody {
		t.Fatalf("%s = %q, %v after the service's writes; want it left as it was, %q", path, got, err, unreadableBody)
	}
}

// refusesUnreadable runs as the service's user: dir/settings.json exists
// and it may not read it.
func refusesUnreadable(t *testing.T, dir string) {
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	found, err := s.Load("settings", &got)
	var corrupt *CorruptError
	if found || err == nil || errors.As(err, &corrupt) {
		t.Fatalf("Load of a file it may not read = %v, %v; want a read error, not a corrupt file", found, err)
	}
	if err := s.Save("settings", map[string]any{"force_scale": 1}); err == nil || !strings.Contains(err.Error(), "left as it is") {
		t.Errorf("Save over a file it could not read = %v; want a refusal saying the file is left as it is", err)
	}
	w := s.NewWriteBehind(time.Hour)
	w.Put("settings", map[string]any{"force_scale": 1})
	if err := w.Close(); err == nil {
		t.Error("a write-behind flush over a file it could not read succeeded; want it refused")
	}
	if err := s.Delete("settings"); err == nil {
		t.Error("Delete of a file it could not read succeeded; want it refused")
	}
	// A document it never tried to read is written as ever.
	if err := s.Save("devices/arm3-049D", map[string]any{"handedness": "left"}); err != nil {
		t.Errorf("Save of another document: %v", err)
	}
}

// runUnprivileged re-runs this test as nobody on dir: root reads every
// file, so only another user meets a file it may not read.
func runUnprivileged(t *testing.T, dir string) {
	bin, base := hwtest.BinaryForNobody(t)
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, hwtest.Nobody, hwtest.Nobody); err != nil {
		t.Fatal(err)
	}
	cmd := hwtest.CommandAsNobody(bin, "TestUnreadableDocumentIsNeverOverwritten", unreadableEnv+"="+dir, "TMPDIR="+dir, "HOME="+dir)
	cmd.Dir = base
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the run as uid %d failed: %v\n%s", hwtest.Nobody, err, out)
	}
}
