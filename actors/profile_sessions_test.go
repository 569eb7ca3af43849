package actors

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// TestAnUnreadSessionDocumentDoesNotStandForTheStoredOne: a session that
// could not read its profile's session document (a read error for a
// moment) has the defaults; the next session of the profile, whose read
// succeeds, must take the stored lease and basis, not the first one's
// defaults, and must not store the defaults over them (review33).
func TestAnUnreadSessionDocumentDoesNotStandForTheStoredOne(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	const pick = `{"session":{"configure":{"profile":{"name":"co.example:probe"}}}}`
	s0, sink0 := open(t, svc, nil)
	if f := exchange(t, s0, sink0, pick); len(f.errorCodes()) != 0 {
		t.Fatalf("pick: %v", f.errorCodes())
	}
	if f := exchange(t, s0, sink0, `{"session":{"configure":{"basis":{"permutation":"-YXZ"},"lease":{"ms":250}}}}`); len(f.errorCodes()) != 0 {
		t.Fatalf("configure: %v", f.errorCodes())
	}
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	s0.Close(protocol.CloseClientClosed)
	deadline := time.Now().Add(10 * time.Second)
	for len(svc.Sessions()) != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	session := filepath.Join(dir, filepath.FromSlash(profileFolder("co.example:probe")), "session.json")
	good, err := os.ReadFile(session)
	if err != nil {
		t.Fatal(err)
	}
	// A read error for a moment: the file is a directory.
	if err := os.Remove(session); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(session, 0o755); err != nil {
		t.Fatal(err)
	}
	a, sinkA := open(t, svc, nil)
	exchange(t, a, sinkA, pick) // warned: defaults
	if err := os.Remove(session); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(session, good, 0o644); err != nil {
		t.Fatal(err)
	}
	b, sinkB := open(t, svc, nil)
	exchange(t, b, sinkB, pick)
	if got := b.Basis().Permutation; got != "-YXZ" {
		t.Errorf("the session whose read succeeded has basis %q, want the stored -YXZ", got)
	}
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	var ps profileSession
	if _, err := svc.store.Load(profileFolder("co.example:probe")+"/session", &ps); err != nil {
		t.Fatal(err)
	}
	if ps.LeaseMs != 250 || ps.Basis.Permutation != "-YXZ" {
		t.Errorf("stored session document now %+v, want the acknowledged lease 250 and basis -YXZ kept", ps)
	}
}

// A session that joins a profile another session holds takes that
// session's document, the profile's latest, even when its own read of the
// stored file fails: it has the profile's basis and lease, and its frame
// must not warn that it has the default ones (it was warned so while it
// had the stored -YXZ and 250).
func TestAJoinerOfAHeldProfileIsNotWarnedOfDefaultsItDoesNotHave(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	const pick = `{"session":{"configure":{"profile":{"name":"co.example:held"}}}}`
	a, sinkA := open(t, svc, nil)
	if f := exchange(t, a, sinkA, pick); len(f.errorCodes()) != 0 {
		t.Fatalf("pick: %v", f.errorCodes())
	}
	if f := exchange(t, a, sinkA, `{"session":{"configure":{"basis":{"permutation":"-YXZ"},"lease":{"ms":250}}}}`); len(f.errorCodes()) != 0 {
		t.Fatalf("configure: %v", f.errorCodes())
	}
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	// The stored file unreadable (a directory in its place) while a holds
	// the profile.
	session := filepath.Join(dir, filepath.FromSlash(profileFolder("co.example:held")), "session.json")
	if err := os.Remove(session); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(session, 0o755); err != nil {
		t.Fatal(err)
	}
	b, sinkB := open(t, svc, nil)
	f := exchange(t, b, sinkB, pick)
	if got := b.Basis().Permutation; got != "-YXZ" {
		t.Fatalf("the joiner has basis %q, want the held document's -YXZ", got)
	}
	if codes := f.errorCodes(); len(codes) != 0 || f.raw["warnings"] != nil {
		t.Errorf("the joiner, which has the profile's basis and lease, was answered errors %v, warnings %v; want neither", codes, f.raw["warnings"])
	}
}
