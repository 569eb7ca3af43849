package actors

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// The profiles' bound removes the profile least recently picked. A pick
// is recorded in the profile's session document, written behind: for up
// to a second the disk has the pick before it. A profile picked again and
// left within that second (a session that picks it, then another) was
// dated by its previous pick, so the bound removed it, with its
// acknowledged entries, and kept one picked earlier.
func TestStoredProfilesBoundDatesAPickNotOnDiskYet(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir, MaxStoredProfiles: 2})
	arm := addArm(t, svc, simArm(0))
	pick := func(sess *Session, sink *recSink, name string, damping float64) {
		t.Helper()
		msg := fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":%g}}}]}`, name, arm.ID, damping)
		if c := exchangeErrors(t, sess, sink, msg); len(c.errors) != 0 {
			t.Fatalf("%s: %v", name, c.errors)
		}
	}
	flush := func() {
		t.Helper()
		if err := svc.writeBehind.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// "recent" first, then "older": both stored, "recent" dated first.
	for _, name := range []string{"recent", "older"} {
		s, sink := open(t, svc, nil)
		pick(s, sink, name, 2)
		flush()
		s.Close(protocol.CloseClientClosed)
		hwtest.EventuallyNil(t, 5*time.Second, name+" to leave the session list", func() error {
			if slices.Contains(svc.Sessions(), s) {
				return fmt.Errorf("%s still listed", name)
			}
			return nil
		})
	}
	// A session picks "recent" again, then a new profile at once (within
	// the write-behind's second): "recent" is now the more recently
	// picked of the two, and "older" must make room for the new one.
	s, sink := open(t, svc, nil)
	defer s.Close(protocol.CloseClientClosed)
	pick(s, sink, "recent", 4)
	pick(s, sink, "new", 4)
	flush()
	has := func(name string) bool {
		entries, _ := os.ReadDir(filepath.Join(dir, filepath.FromSlash(profileFolder(name))))
		for _, e := range entries {
			if e.Name() == "arm3-"+arm.ID+".json" {
				return true
			}
		}
		return false
	}
	if !has("recent") {
		t.Errorf("the profile picked a moment ago was removed by the profiles' bound, its stored entries with it (its pick was still written behind, so its previous pick dated it)")
	}
	if has("older") {
		t.Errorf("the least recently picked profile was kept")
	}
	if !has("new") {
		t.Errorf("the new profile has no entries stored")
	}
}
