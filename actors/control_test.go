package actors

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// One controller per device: a second session's command is refused with
// device_busy (the rest of its message still applies) and one device-busy
// event names both sessions; once the first lets go, the second may take
// control.
func TestOneControllerPerDevice(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	first, sink1 := open(t, svc, nil)
	second, sink2 := open(t, svc, nil)
	if c := exchangeErrors(t, first, sink1, forceMsg(arm.ID, 1)); len(c.errors) != 0 {
		t.Fatalf("the first session: %v", c.errors)
	}
	msg := fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":500}}},"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}}]}`, arm.ID)
	if c := exchangeErrors(t, second, sink2, msg); !slices.Equal(c.errors, []string{string(protocol.CodeDeviceBusy)}) {
		t.Fatalf("the second session's command: errors %v, want [device_busy]", c.errors)
	}
	f := exchange(t, second, sink2, `{"session":{"force_render_full_state":{}}}`)
	if lease := f.raw["session"].(map[string]any)["config"].(map[string]any)["lease"].(map[string]any)["ms"]; lease != 500.0 {
		t.Fatalf("the rest of the refused message did not apply: lease %v", lease)
	}
	waitEvent(t, svc, event.NameDeviceBusy, fmt.Sprintf(`"session_id":%d,"owner_session_id":%d`, second.ID, first.ID))

	first.Close(protocol.CloseClientClosed)
	hwtest.EventuallyNil(t, 5*time.Second, "the second session to command the arm", func() error {
		if c := exchangeErrors(t, second, sink2, forceMsg(arm.ID, 2)); len(c.errors) != 0 {
			return fmt.Errorf("after the first session closed: %v", c.errors)
		}
		return nil
	})
	if ctl := second.Controls(); len(ctl) != 1 || ctl[0] != arm {
		t.Fatalf("the second session controls %v", ctl)
	}
}

// A controlling session that goes quiet past its lease loses the device:
// the force ramps to zero, as another session sees it, and
// control-lease-expired names the session. The observer sees the force
// on first: a zero it only ever saw would prove nothing.
func TestLeaseLapseReleasesTheDevice(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	quiet, sink := open(t, svc, nil)
	observer, obsSink := open(t, svc, nil)
	exchange(t, quiet, sink, `{"session":{"configure":{"lease":{"ms":20}}}}`)
	hwtest.EventuallyNil(t, 5*time.Second, "the force to reach the observer", func() error {
		exchange(t, quiet, sink, forceMsg(arm.ID, 1.5)) // renews the lease while we wait
		if z := exchange(t, observer, obsSink, `{}`).forceZ(t, arm.ID); z != 1.5 {
			return fmt.Errorf("force z=%v, want 1.5", z)
		}
		return nil
	})
	waitEvent(t, svc, event.NameControlLeaseExpired, fmt.Sprintf(`"session_id":%d`, quiet.ID))
	hwtest.EventuallyNil(t, 5*time.Second, "the force to end with the lapsed lease", func() error {
		f := exchange(t, observer, obsSink, `{}`)
		if z := f.forceZ(t, arm.ID); z != 0 {
			return fmt.Errorf("force z=%v after the lease lapsed, want 0", z)
		}
		if mode := f.device(arm.ID)["state"].(map[string]any)["control_mode"]; mode != "idle" {
			return fmt.Errorf("control_mode %v, want idle", mode)
		}
		return nil
	})
	if n := len(quiet.Controls()); n != 0 {
		t.Fatalf("a session whose lease lapsed still controls %d devices", n)
	}
}

// Stored profiles are bounded: past Options.MaxStoredProfiles the least
// recently picked go, never one a connected session has, nor one whose
// session document is missing (nothing says when it was used: a service
// killed before writing it, after the profile's acknowledged entries).
func TestStoredProfilesAreBounded(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir, MaxStoredProfiles: 2})
	arm := addArm(t, svc, simArm(0))
	orphan := profileFolder("orphan") + "/arm3-" + arm.ID
	if err := svc.store.Save(orphan, map[string]any{"damping": map[string]any{"scalar": 3}}); err != nil {
		t.Fatal(err)
	}
	keeper, ksink := open(t, svc, nil)
	pickProfile(t, svc, keeper, ksink, arm, "kept: connected", 2)
	for _, name := range []string{"old", "newer", "newest"} {
		s, sink := open(t, svc, nil)
		pickProfile(t, svc, s, sink, arm, name, 2)
		leaveSession(t, svc, s, name)
	}
	stored := map[string]bool{}
	names, err := svc.store.List(profilesFolder)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasSuffix(n, "/session") {
			var ps profileSession
			if _, err := svc.store.Load(n, &ps); err != nil {
				t.Fatal(err)
			}
			stored[ps.Name] = true
		}
	}
	if !stored["kept: connected"] || !stored["newest"] || stored["old"] || len(stored) != 2 {
		t.Fatalf("stored profiles %v: want the connected session's and the newest, not the oldest", stored)
	}
	var doc map[string]any
	if found, err := svc.store.Load(orphan, &doc); !found || err != nil {
		t.Fatalf("the undated profile's entries were removed (found %v, %v)", found, err)
	}
}

// A profile whose session document cannot be read at the moment (here a
// read error: the file is a directory) is never removed to make room: it
// may hold a user's settings. The least recently picked readable one goes.
func TestStoredProfileUnreadableIsKept(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir, MaxStoredProfiles: 2})
	arm := addArm(t, svc, simArm(0))
	pick := func(name string) {
		t.Helper()
		s, sink := open(t, svc, nil)
		pickProfile(t, svc, s, sink, arm, name, 2)
		leaveSession(t, svc, s, name)
	}
	folderOf := func(name string) string {
		return filepath.Join(dir, filepath.FromSlash(profileFolder(name)))
	}
	pick("readable")
	pick("unreadable")
	session := filepath.Join(folderOf("unreadable"), "session.json")
	if err := os.Remove(session); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(session, 0o755); err != nil {
		t.Fatal(err)
	}
	pick("newest")
	devices := func(name string) int {
		entries, _ := os.ReadDir(folderOf(name))
		n := 0
		for _, e := range entries {
			if !e.IsDir() && strings.HasPrefix(e.Name(), "arm3-") {
				n++
			}
		}
		return n
	}
	if n := devices("unreadable"); n != 1 {
		t.Errorf("the unreadable profile holds %d device documents, want its 1 kept", n)
	}
	if n := devices("readable"); n != 0 {
		t.Errorf("the least recently picked readable profile holds %d device documents, want it removed to make room", n)
	}
	if n := devices("newest"); n != 1 {
		t.Errorf("the new profile holds %d device documents, want 1", n)
	}
}

// pickProfile has sess pick the profile name and set a damping on arm in
// it, then writes what the write-behind holds, so the profile is stored.
func pickProfile(t *testing.T, svc *Service, sess *Session, sink *recSink, arm *Device, name string, damping float64) {
	t.Helper()
	msg := fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":%g}}}]}`, name, arm.ID, damping)
	if c := exchangeErrors(t, sess, sink, msg); len(c.errors) != 0 {
		t.Fatalf("%s: %v", name, c.errors)
	}
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
}

// leaveSession closes sess and waits until the service no longer lists it
// (its profile no longer in use).
func leaveSession(t *testing.T, svc *Service, sess *Session, name string) {
	t.Helper()
	sess.Close(protocol.CloseClientClosed)
	hwtest.EventuallyNil(t, 5*time.Second, name+" to leave the session list", func() error {
		if slices.Contains(svc.Sessions(), sess) {
			return fmt.Errorf("%s still listed", name)
		}
		return nil
	})
}
