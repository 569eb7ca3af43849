package actors

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
		leaveSession(t, svc, s, name)
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

// holdFirstLoad holds the first Load of one document until release is
// closed: a disk slow for a moment, under one session's read.
type holdFirstLoad struct {
	Store
	name     string
	armed    atomic.Bool
	first    atomic.Bool
	entered  chan struct{}
	release  chan struct{}
	released sync.Once
}

func (s *holdFirstLoad) Load(name string, v any) (bool, error) {
	if name == s.name && s.armed.Load() && s.first.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.release
	}
	return s.Store.Load(name, v)
}

func (s *holdFirstLoad) free() { s.released.Do(func() { close(s.release) }) }

// A profile a session is picking (reading its stored documents) is in
// use: the profiles' bound must not remove it under that session, whose
// pick would then find nothing stored and take none of the profile's
// acknowledged entries, which are gone from disk. It looked only at the
// profiles the connected sessions had already, and a session reading one
// to join it has not got it yet.
func TestStoredProfilesBoundKeepsAProfileBeingPicked(t *testing.T) {
	dir := t.TempDir()
	var held *holdFirstLoad
	svc := startWith(t, Options{StateDir: dir, MaxStoredProfiles: 2, WrapStore: func(s Store) Store {
		held = &holdFirstLoad{Store: s, name: profileFolder("picked") + "/session", entered: make(chan struct{}), release: make(chan struct{})}
		return held
	}})
	t.Cleanup(held.free)
	arm := addArm(t, svc, simArm(0))
	for _, name := range []string{"picked", "other"} {
		s, sink := open(t, svc, nil)
		pickProfile(t, svc, s, sink, arm, name, 2)
		leaveSession(t, svc, s, name)
	}
	held.armed.Store(true)
	// Session b picks "picked" (stored first, so the least recently
	// picked); its read of the profile's session document is slow.
	b, _ := open(t, svc, nil)
	picking := pending(func() { b.Deliver([]byte(`{"session":{"configure":{"profile":{"name":"picked"}}}}`), 0) })
	select {
	case <-held.entered:
	case <-time.After(patience):
		t.Fatal("session b never read the profile it picks")
	}
	// Meanwhile session a picks a new profile: one too many.
	a, asink := open(t, svc, nil)
	pickProfile(t, svc, a, asink, arm, "new", 3)
	held.free()
	waitDone(t, picking, "session b's pick")
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	found, err := svc.store.Load(profileFolder("picked")+"/arm3-"+arm.ID, &doc)
	if err != nil || !found {
		t.Errorf("the profile session b was picking lost its stored entries on the arm to the profiles' bound (found %v, %v); the one picked after it was kept: %v", found, err, func() bool {
			f, _ := svc.store.Load(profileFolder("other")+"/arm3-"+arm.ID, &doc)
			return f
		}())
	}
}
