//go:build unix

package transport

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// A folder of the state directory the service saves documents into, and
// may not write into (a run with sudo left it root's): /readyz answered
// 200 "writable" (it wrote a probe at the top only) while every POST
// stored there answered 500 (tourstate). Each such folder fails /readyz's
// state_dir check, naming the folder and the fix, and a service started on
// it refuses to start saying the same; once it is writable again the
// service is ready with nothing to restart.
func TestReadyzFailsOnAStateFolderItMayNotWrite(t *testing.T) {
	if asNobody(t) {
		return
	}
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	url := ts.base + "/arm3/" + ts.armIDs[0] + "/config/handedness"
	if r := ts.do(http.MethodPost, url, `"left"`); r.status != http.StatusOK {
		t.Fatalf("POST: %v", r)
	}
	c := ts.dial(t, ts.wsURL())
	c.expect()
	if f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"co.example:perm"}}}}`); f["errors"] != nil {
		t.Fatalf("pick a profile: %v", f["errors"])
	}
	if f := c.roundTrip(`{"arm3":[{"device_id":"` + ts.armIDs[0] + `","configure":{"force_gate":{"gain":0.5}}}]}`); f["errors"] != nil {
		t.Fatalf("configure: %v", f["errors"])
	}
	var profile string
	hwtest.EventuallyNil(t, 10*time.Second, "the profile's folder written", func() error {
		m, _ := filepath.Glob(filepath.Join(dir, "profiles.v2", "*", "arm3-*.json"))
		if len(m) != 1 {
			return fmt.Errorf("profile documents %v", m)
		}
		profile = filepath.Dir(m[0])
		return nil
	})
	ready := func() {
		t.Helper()
		hwtest.EventuallyNil(t, 5*time.Second, "/readyz to say ready", func() error {
			if r := ts.do(http.MethodGet, ts.base+"/readyz", ""); r.status != http.StatusOK {
				return fmt.Errorf("/readyz: %v", r)
			}
			return nil
		})
	}
	ready()

	for _, folder := range []string{filepath.Join(dir, "devices"), filepath.Join(dir, "profiles.v2"), profile} {
		if err := os.Chmod(folder, 0o555); err != nil {
			t.Fatal(err)
		}
		// A profile's folder is rechecked once a second (the cost of
		// 1,000 of them at every poll): not necessarily at the next call.
		hwtest.EventuallyNil(t, 5*time.Second, "/readyz to fail naming "+folder, func() error {
			r := ts.do(http.MethodGet, ts.base+"/readyz", "")
			if r.status != http.StatusServiceUnavailable || r.env["status"] != "not ready" {
				return fmt.Errorf("/readyz with %s not writable: %v, want 503 not ready", folder, r)
			} else if failed := failedChecks(r); len(failed) != 1 || !strings.HasPrefix(failed[0], "state_dir: ") ||
				!strings.Contains(failed[0], folder+" (permission denied)") || !strings.Contains(failed[0], "chown -R ") || !strings.Contains(failed[0], "chmod u+rwx") {
				return fmt.Errorf("/readyz with %s not writable: failed checks %q; want only state_dir, naming the folder, chown and chmod", folder, failed)
			}
			return nil
		})
		if folder == filepath.Join(dir, "devices") {
			// What /readyz says, a POST meets.
			if r := ts.do(http.MethodPost, url, `"right"`); r.status != http.StatusInternalServerError || r.env["code"] != string(protocol.CodeInternal) {
				t.Errorf("POST with %s not writable: %v, want 500 internal", folder, r)
			}
		}
		if err := os.Chmod(folder, 0o700); err != nil {
			t.Fatal(err)
		}
		ready()
	}
	if r := ts.do(http.MethodPost, url, `"right"`); r.status != http.StatusOK {
		t.Fatalf("POST once every folder is writable again: %v", r)
	}
	ts.stop()

	// A service started on such a folder refuses to start, saying the same:
	// readable, or private as a run with sudo makes it (root's, 0700: not
	// even listed, which the start's scan for temp files met first and
	// said without the fix: tourlabwarn).
	devices := filepath.Join(dir, "devices")
	defer os.Chmod(devices, 0o700)
	for _, mode := range []os.FileMode{0o555, 0o000} {
		if err := os.Chmod(devices, mode); err != nil {
			t.Fatal(err)
		}
		svc, err := actors.Start(actors.Options{StateDir: dir, LoopHz: 1000, Log: testLogger()})
		if err == nil {
			svc.Shutdown(t.Context())
			t.Fatalf("the service started on %s of mode %v; want it refused", devices, mode)
		}
		if msg := err.Error(); !strings.Contains(msg, devices+" (permission denied)") || !strings.Contains(msg, "chown -R ") {
			t.Errorf("start with %s of mode %v: %v; want it to name the folder and chown", devices, mode, err)
		}
	}
}

// failedChecks lists a /readyz answer's failed checks as "name: detail".
func failedChecks(r reply) []string {
	var failed []string
	checks, _ := r.env["checks"].([]any)
	for _, c := range checks {
		if c, _ := c.(map[string]any); c["ok"] == false {
			failed = append(failed, fmt.Sprint(c["name"], ": ", c["detail"]))
		}
	}
	return failed
}

// unprivilegedEnv marks the run of a test asNobody started.
const unprivilegedEnv = "HAPTICD_TRANSPORT_AS_NOBODY"

// asNobody runs the calling test again as nobody (uid 65534) in a child
// process when it runs as root, which writes into any folder whatever its
// mode, and reports true: the child did the test, and the caller returns.
// It reports false otherwise: the caller goes on as the user it is. The
// test binary is copied where nobody may run it; the child's temp folders
// are its own.
func asNobody(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	if os.Getenv(unprivilegedEnv) != "" {
		t.Fatal("the run as nobody is root")
	}
	bin, base := hwtest.BinaryForNobody(t)
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, hwtest.Nobody, hwtest.Nobody); err != nil {
		t.Fatal(err)
	}
	cmd := hwtest.CommandAsNobody(bin, t.Name(), unprivilegedEnv+"=1", "TMPDIR="+tmp, "HOME="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("the run as nobody (uid %d): %v\n%s", hwtest.Nobody, err, out)
	}
	return true
}
