package actors

import (
	"fmt"
	"testing"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// storedPick is what a profile holds in the tests below: a basis at the
// session level and a damping on the arm.
type storedPick struct {
	basis   string
	damping float64
}

// storeProfile has a new session pick profile name, set p in it, store it
// and leave.
func storeProfile(t *testing.T, svc *Service, arm *Device, name string, p storedPick) {
	t.Helper()
	s, sink := open(t, svc, nil)
	pickProfile(t, svc, s, sink, arm, name, p.damping)
	if c := exchangeErrors(t, s, sink, fmt.Sprintf(`{"session":{"configure":{"basis":{"permutation":%q}}}}`, p.basis)); len(c.errors) != 0 {
		t.Fatalf("%s: basis: %v", name, c.errors)
	}
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	leaveSession(t, svc, s, name)
}

// inForce returns what sess has in force: its basis and its damping on arm
// (0 when it has none of its own).
func inForce(t *testing.T, svc *Service, sess *Session, arm *Device) storedPick {
	t.Helper()
	e, err := svc.Entry(arm, sess.ID, protocol.KeyDamping)
	if err != nil {
		t.Fatal(err)
	}
	got := storedPick{basis: sess.Basis().Permutation}
	if d, ok := e.(protocol.Damping); ok && d.Scalar != nil {
		got.damping = *d.Scalar
	}
	return got
}

// pickedAfterRestart stops svc, starts the service again on dir, and
// returns what a session that picks profile name has in force.
func pickedAfterRestart(t *testing.T, svc *Service, dir, name string) storedPick {
	t.Helper()
	shutdown(t, svc)
	again := startWith(t, Options{StateDir: dir})
	arm := addArm(t, again, simArm(0))
	s, sink := open(t, again, nil)
	defer s.Close(protocol.CloseClientClosed)
	if c := exchangeErrors(t, s, sink, fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, name)); len(c.errors) != 0 {
		t.Fatalf("after a restart, pick %s: %v", name, c.errors)
	}
	return inForce(t, again, s, arm)
}

// A session that picks a stored profile while the profiles' bound is
// choosing which to remove, after the pass listed the profiles in use:
// the pick and the removal must be ordered. Here the pick comes first
// (the pass is held reading the candidates' session documents, after its
// list of the profiles in use was made), so the profile is in use when
// the pass removes profiles, and must be kept: the session has its stored
// basis and damping, and a restart finds them stored. The pass removed it
// all the same, under the session that had just been told it has it.
func TestStoredProfilesBoundKeepsAProfilePickedDuringItsPass(t *testing.T) {
	dir := t.TempDir()
	var held *holdFirstLoad
	svc := startWith(t, Options{StateDir: dir, MaxStoredProfiles: 2, WrapStore: func(s Store) Store {
		held = &holdFirstLoad{Store: s, name: profileFolder("picked") + "/session", entered: make(chan struct{}), release: make(chan struct{})}
		return held
	}})
	t.Cleanup(held.free)
	arm := addArm(t, svc, simArm(0))
	want := storedPick{basis: "-YXZ", damping: 2}
	storeProfile(t, svc, arm, "picked", want) // the least recently picked
	storeProfile(t, svc, arm, "other", storedPick{basis: "XZY", damping: 5})
	held.armed.Store(true)
	// Session a picks a new profile, one too many: its pass lists the
	// profiles in use (none), then reads the candidates' session
	// documents, and is held at "picked"'s.
	a, asink := open(t, svc, nil)
	defer a.Close(protocol.CloseClientClosed)
	creating := pending(func() { pickProfile(t, svc, a, asink, arm, "new", 3) })
	select {
	case <-held.entered:
	case <-time.After(patience):
		t.Fatal("the profiles' bound never read the candidates' session documents")
	}
	// Session b picks "picked" meanwhile, and is told it has it.
	b, bsink := open(t, svc, nil)
	defer b.Close(protocol.CloseClientClosed)
	if c := exchangeErrors(t, b, bsink, `{"session":{"configure":{"profile":{"name":"picked"}}}}`); len(c.errors) != 0 {
		t.Fatalf("pick: %v", c.errors)
	}
	if got := inForce(t, svc, b, arm); got != want {
		t.Fatalf("the session that picked the stored profile has %+v in force, want its stored %+v", got, want)
	}
	held.free()
	waitDone(t, creating, "session a's pick of a new profile")
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	otherKept, _ := svc.store.Load(profileFolder("other")+"/session", &doc)
	if got := inForce(t, svc, b, arm); got != want {
		t.Errorf("once the profiles' bound ran, the session that picked the profile has %+v in force, want %+v", got, want)
	}
	if got := pickedAfterRestart(t, svc, dir, "picked"); got != want {
		t.Errorf("after a restart the profile a connected session had picked holds %+v, want %+v: the profiles' bound removed it under that session", got, want)
	}
	if otherKept {
		t.Errorf("the profiles' bound kept the one profile not in use: 3 stored, bound 2")
	}
}
