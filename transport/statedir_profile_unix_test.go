//go:build unix

package transport

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/rs/zerolog"
)

// A folder in profiles.v2/ that is not a profile's (an operator's backup
// copy, made as root) refused the whole start (review59). It is not the
// service's: the service starts and is ready, whatever its mode.
func TestAStrayFolderAmongTheProfilesDoesNotRefuseTheStart(t *testing.T) {
	if asNobody(t) {
		return
	}
	dir := t.TempDir()
	stray := filepath.Join(dir, "profiles.v2", "backup-before-upgrade")
	if err := os.MkdirAll(filepath.Join(stray, store.HashName("co.example:old")), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(stray, 0o700) })
	for _, mode := range []os.FileMode{0o555, 0o000} {
		if err := os.Chmod(stray, mode); err != nil {
			t.Fatal(err)
		}
		svc, err := actors.Start(actors.Options{StateDir: dir, LoopHz: 1000, Log: testLogger()})
		if err != nil {
			t.Fatalf("start refused by a folder of mode %v that is not the service's: %v", mode, err)
		}
		if err := svc.CheckStateDir(); err != nil {
			t.Errorf("state dir check with a folder of mode %v that is not the service's: %v", mode, err)
		}
		svc.Shutdown(t.Context())
	}
}

// syncBuffer is a log sink safe for the service's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// One profile's folder the service may not write into (a run with sudo
// made it root's) refused the start of every device (review59). It refuses
// that profile's changes only: the service starts, warning with the folder
// and the fix, and /readyz fails naming it until it is writable again.
func TestAProfileFolderItMayNotWriteWarnsAtStart(t *testing.T) {
	if asNobody(t) {
		return
	}
	dir := t.TempDir()
	profile := filepath.Join(dir, "profiles.v2", store.HashName("co.example:sudo"))
	if err := os.MkdirAll(profile, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(profile, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(profile, 0o700) })

	var logged syncBuffer
	svc, err := actors.Start(actors.Options{StateDir: dir, LoopHz: 1000, Log: zerolog.New(&logged)})
	if err != nil {
		t.Fatalf("start refused by one profile's folder: %v", err)
	}
	svc.Shutdown(t.Context())
	var warned bool
	for _, line := range strings.Split(logged.String(), "\n") {
		if strings.Contains(line, `"level":"warn"`) && strings.Contains(line, profile+" (permission denied)") && strings.Contains(line, "chown -R ") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no warning naming %s and chown at start; logged:\n%s", profile, logged.String())
	}

	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	hwtest.EventuallyNil(t, 10*time.Second, "/readyz to fail naming the profile's folder", func() error {
		r := ts.do(http.MethodGet, ts.base+"/readyz", "")
		failed := failedChecks(r)
		if r.status != http.StatusServiceUnavailable || len(failed) != 1 || !strings.HasPrefix(failed[0], "state_dir: ") ||
			!strings.Contains(failed[0], profile+" (permission denied)") || !strings.Contains(failed[0], "chown -R ") {
			return fmt.Errorf("/readyz: %v, failed %q; want 503, state_dir naming %s and chown", r.status, failed, profile)
		}
		return nil
	})
	url := ts.base + "/arm3/" + ts.armIDs[0] + "/config/handedness"
	if r := ts.do(http.MethodPost, url, `"left"`); r.status != http.StatusOK {
		t.Errorf("POST of a device's entry with a profile's folder refused: %v; want 200", r)
	}
	if err := os.Chmod(profile, 0o700); err != nil {
		t.Fatal(err)
	}
	hwtest.EventuallyNil(t, 10*time.Second, "/readyz to say ready once the folder is writable", func() error {
		if r := ts.do(http.MethodGet, ts.base+"/readyz", ""); r.status != http.StatusOK {
			return fmt.Errorf("/readyz: %v", r)
		}
		return nil
	})
}
