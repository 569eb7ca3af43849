package actors

import (
	"fmt"
	"sync"
	"sync/atomic"
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

// deliver has sess take msg on a goroutine of its own (its pick may wait
// for the disk the test holds); the channel closes once the frame is sent,
// for the test to read with answered.
func deliver(sess *Session, msg string) <-chan struct{} {
	return pending(func() { sess.Deliver([]byte(msg), 0) })
}

// answered waits for done (deliver) and fails the test if the frame sink
// got has errors.
func answered(t *testing.T, done <-chan struct{}, sink *recSink, what string) {
	t.Helper()
	waitDone(t, done, what)
	if codes := sink.next(t).errorCodes(); len(codes) != 0 {
		t.Fatalf("%s: %v", what, codes)
	}
}

func pickMsg(name string, arm *Device, damping float64) string {
	return fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":%g}}}]}`, name, arm.ID, damping)
}

// pickOneTooMany has a new session pick a new profile, one too many for
// the bound, on a goroutine of its own, and waits until its pass of the
// profiles' bound reaches the point the test holds (entered; what names it
// for the failure). creating closes once that session's frame is sent.
func pickOneTooMany(t *testing.T, svc *Service, arm *Device, entered <-chan struct{}, what string) (asink *recSink, creating <-chan struct{}) {
	t.Helper()
	a, asink := open(t, svc, nil)
	t.Cleanup(func() { a.Close(protocol.CloseClientClosed) })
	creating = deliver(a, pickMsg("new", arm, 3))
	select {
	case <-entered:
	case <-time.After(patience):
		t.Fatal("the profiles' bound never " + what)
	}
	return asink, creating
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
	asink, creating := pickOneTooMany(t, svc, arm, held.entered, "read the candidates' session documents")
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
	answered(t, creating, asink, "session a's pick of a new profile")
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

// holdDeleteFolder holds the removal of one folder until release is
// closed: a disk slow for a moment, under the profiles' bound's pass. At
// the removal it notes whether the document queued is still in the
// write-behind's queue.
type holdDeleteFolder struct {
	Store
	folder  string
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
	free    func()
	// queued, if set, is asked at the removal; its answer goes to
	// queuedThen.
	queued     func() bool
	queuedThen atomic.Bool
}

func newHoldDeleteFolder(s Store, folder string) *holdDeleteFolder {
	h := &holdDeleteFolder{Store: s, folder: folder, entered: make(chan struct{}), release: make(chan struct{})}
	h.free = sync.OnceFunc(func() { close(h.release) })
	return h
}

func (h *holdDeleteFolder) DeleteFolder(name string) error {
	if name == h.folder && h.armed.CompareAndSwap(true, false) {
		if h.queued != nil {
			h.queuedThen.Store(h.queued())
		}
		close(h.entered)
		<-h.release
	}
	return h.Store.DeleteFolder(name)
}

// The other order: a session picks a stored profile while the profiles'
// bound is removing it (its files going one by one on a slow disk). The
// pick must then wait for the removal and find no stored profile, as for
// a name never used: it read the stored basis and damping, was told it
// has them, and the removal took them from disk under it, so that a
// restart gave the profile back empty or partial (whatever the session
// wrote later).
func TestAProfilePickedWhileTheBoundRemovesItStartsAfresh(t *testing.T) {
	dir := t.TempDir()
	var held *holdDeleteFolder
	svc := startWith(t, Options{StateDir: dir, MaxStoredProfiles: 2, WrapStore: func(s Store) Store {
		held = newHoldDeleteFolder(s, profileFolder("picked"))
		return held
	}})
	t.Cleanup(held.free)
	waiting := make(chan struct{})
	waitingOnce := sync.OnceFunc(func() { close(waiting) })
	svc.profileSessions.mu.Lock()
	svc.profileSessions.waitingRemoval = func(string) { waitingOnce() }
	svc.profileSessions.mu.Unlock()
	arm := addArm(t, svc, simArm(0))
	storeProfile(t, svc, arm, "picked", storedPick{basis: "-YXZ", damping: 2}) // the least recently picked
	storeProfile(t, svc, arm, "other", storedPick{basis: "XZY", damping: 5})
	held.armed.Store(true)
	asink, creating := pickOneTooMany(t, svc, arm, held.entered, "removed the least recently picked profile")
	// Session b picks "picked" while its removal is under way.
	b, bsink := open(t, svc, nil)
	defer b.Close(protocol.CloseClientClosed)
	picking := deliver(b, `{"session":{"configure":{"profile":{"name":"picked"}}}}`)
	select {
	case <-picking: // told what it has before the removal is done
	case <-waiting: // waits for the removal
	case <-time.After(patience):
		t.Fatal("session b's pick neither returned nor waited for the removal")
	}
	held.free()
	answered(t, picking, bsink, "session b's pick")
	answered(t, creating, asink, "session a's pick of a new profile")
	told := inForce(t, svc, b, arm)
	// What the session sets from now on is stored in the profile.
	if c := exchangeErrors(t, b, bsink, fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":7}}}]}`, arm.ID)); len(c.errors) != 0 {
		t.Fatalf("damping: %v", c.errors)
	}
	want := storedPick{basis: told.basis, damping: 7}
	if got := inForce(t, svc, b, arm); got != want {
		t.Fatalf("the session has %+v in force, want %+v", got, want)
	}
	if got := pickedAfterRestart(t, svc, dir, "picked"); got != want {
		t.Errorf("after a restart the profile holds %+v, while the session that picked it had %+v in force (told it had the stored basis %q on picking it): the profiles' bound removed the documents the pick had read", got, want, told.basis)
	}
}

// A profile the bound removes whose device document is still in the
// write-behind's queue, never written (the arm's first entry in the
// profile, set within the second before the session went on to another
// profile): the removal must take it too. It removed only the files on
// disk, so the flush wrote the arm's document after it: half the profile
// came back, without the session document that dates it, which the bound
// then never removes, and a session that picks the name after a restart
// gets the removed profile's damping.
func TestTheBoundRemovesAProfilesDocumentsStillQueued(t *testing.T) {
	dir := t.TempDir()
	var held *holdDeleteFolder
	var svc *Service
	svc = startWith(t, Options{StateDir: dir, MaxStoredProfiles: 1, WrapStore: func(s Store) Store {
		held = newHoldDeleteFolder(s, profileFolder("half"))
		return held
	}})
	arm := addArm(t, svc, simArm(0))
	armDoc := profileFolder("half") + "/arm3-" + arm.ID
	held.queued = func() bool { return svc.writeBehind.Queued(armDoc) }
	held.free() // not held: only noted
	// "half" is stored with its session document only.
	s, sink := open(t, svc, nil)
	defer s.Close(protocol.CloseClientClosed)
	if c := exchangeErrors(t, s, sink, `{"session":{"configure":{"profile":{"name":"half"}}}}`); len(c.errors) != 0 {
		t.Fatalf("pick: %v", c.errors)
	}
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	// The session sets the arm's first entry in it, then picks a new
	// profile at once: "half" is one too many.
	if c := exchangeErrors(t, s, sink, fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":4}}}]}`, arm.ID)); len(c.errors) != 0 {
		t.Fatalf("damping: %v", c.errors)
	}
	held.armed.Store(true)
	if c := exchangeErrors(t, s, sink, `{"session":{"configure":{"profile":{"name":"new"}}}}`); len(c.errors) != 0 {
		t.Fatalf("pick: %v", c.errors)
	}
	if held.armed.Load() {
		t.Fatal("the profiles' bound did not remove the profile not in use")
	}
	if !held.queuedThen.Load() {
		t.Skip("the write-behind wrote the arm's document before the bound removed the profile (its second passed): nothing queued to remove")
	}
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	if names, err := svc.store.List(profileFolder("half")); err != nil || len(names) != 0 {
		t.Errorf("the profile the bound removed holds %v on disk (%v), want nothing", names, err)
	}
	if got, want := pickedAfterRestart(t, svc, dir, "half"), (storedPick{basis: protocol.IdentityBasis}); got != want {
		t.Errorf("after a restart, picking the name of a profile the bound removed gives %+v, want a new profile's %+v", got, want)
	}
}

// holdAfterLoad holds the first Load of one document once it has read it,
// until release is closed: what was read is then answered, as of then.
type holdAfterLoad struct {
	holdFirstLoad
}

func (s *holdAfterLoad) Load(name string, v any) (bool, error) {
	found, err := s.Store.Load(name, v)
	if name == s.name && s.armed.Load() && s.first.CompareAndSwap(false, true) {
		close(s.entered)
		<-s.release
	}
	return found, err
}

// A profile picked and left again while the profiles' bound's pass is
// choosing what to remove, after it read the profile's session document,
// is the most recently used: the pass must not remove it on the date it
// read before the pick. It did, with the entries the session had just
// set in it.
func TestStoredProfilesBoundKeepsAProfilePickedAndLeftDuringItsPass(t *testing.T) {
	dir := t.TempDir()
	var held *holdAfterLoad
	svc := startWith(t, Options{StateDir: dir, MaxStoredProfiles: 1, WrapStore: func(s Store) Store {
		held = &holdAfterLoad{holdFirstLoad{Store: s, name: profileFolder("picked") + "/session", entered: make(chan struct{}), release: make(chan struct{})}}
		return held
	}})
	t.Cleanup(held.free)
	arm := addArm(t, svc, simArm(0))
	storeProfile(t, svc, arm, "picked", storedPick{basis: "-YXZ", damping: 2})
	held.armed.Store(true)
	// Session a picks a new profile, one too many: its pass reads when
	// "picked" was last picked, and is held there.
	asink, creating := pickOneTooMany(t, svc, arm, held.entered, "read the candidate's session document")
	// Session b picks "picked" meanwhile, sets a damping, and leaves.
	b, bsink := open(t, svc, nil)
	pickProfile(t, svc, b, bsink, arm, "picked", 6)
	leaveSession(t, svc, b, "picked")
	held.free()
	answered(t, creating, asink, "session a's pick of a new profile")
	if err := svc.writeBehind.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := pickedAfterRestart(t, svc, dir, "picked"), (storedPick{basis: "-YXZ", damping: 6}); got != want {
		t.Errorf("after a restart the profile picked last holds %+v, want %+v: the profiles' bound removed it on the date of the pick before", got, want)
	}
}

// Two passes of the profiles' bound at once (several sessions picking new
// profiles past it): a folder the other pass is removing, whose session
// document it has deleted already, counts toward this pass's removals.
// This pass found nothing to date it by, warned that it would never
// remove it, and removed one profile too many in its place (soak2: 998
// profiles stored under a bound of 1,000).
func TestTheBoundCountsAProfileAnotherPassIsRemoving(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir, MaxStoredProfiles: 2})
	arm := addArm(t, svc, simArm(0))
	storeProfile(t, svc, arm, "doomed", storedPick{basis: "-YXZ", damping: 2}) // the least recently picked
	want := storedPick{basis: "XZY", damping: 5}
	storeProfile(t, svc, arm, "kept", want)
	// The other pass, mid-removal of "doomed": claimed, its session
	// document deleted, its arm document not yet.
	doomed := profileFolder("doomed")
	claim := svc.profileSessions.claimRemoval([]string{doomed}, 1)
	if len(claim) != 1 {
		t.Fatalf("claimed %v, want %s", claim, doomed)
	}
	if err := svc.store.Delete(doomed + "/session"); err != nil {
		t.Fatal(err)
	}
	if names, err := svc.store.List(doomed); err != nil || len(names) == 0 {
		t.Fatalf("the folder being removed holds %v (%v), want its arm document still", names, err)
	}
	// A session picks a new profile, one too many: this pass runs before
	// its frame is sent.
	s, sink := open(t, svc, nil)
	pickProfile(t, svc, s, sink, arm, "new", 3)
	svc.profileSessions.removed(claim[0])
	leaveSession(t, svc, s, "new")
	if got := pickedAfterRestart(t, svc, dir, "kept"); got != want {
		t.Fatalf("after a restart the profile picked more recently than the one being removed holds %+v, want %+v: the bound removed it too", got, want)
	}
}

// removedMidPass is a store that, once armed, removes a profile's whole
// folder as the pass reaches for its session document: another pass that
// removed it (claimed, deleted, released) after this one listed it.
type removedMidPass struct {
	Store
	folder string
	armed  atomic.Bool
}

func (s *removedMidPass) Load(name string, v any) (bool, error) {
	if name == s.folder+"/session" && s.armed.CompareAndSwap(true, false) {
		if err := s.Store.DeleteFolder(s.folder); err != nil {
			return false, err
		}
	}
	return s.Store.Load(name, v)
}

// A profile another pass removed whole after this pass listed the stored
// profiles counts toward this pass's removals: the listing counted it
// over the bound, and it is gone. This pass took it for undated (it
// warned "never removed", thousands of times in a long churn of three
// clients) and removed one more profile in its place: the count fell
// under the bound, and a profile picked more recently was lost.
func TestTheBoundCountsAProfileAnotherPassRemovedSinceItListed(t *testing.T) {
	dir := t.TempDir()
	wrapped := &removedMidPass{folder: profileFolder("doomed")}
	svc := startWith(t, Options{StateDir: dir, MaxStoredProfiles: 2, WrapStore: func(s Store) Store { wrapped.Store = s; return wrapped }})
	arm := addArm(t, svc, simArm(0))
	storeProfile(t, svc, arm, "doomed", storedPick{basis: "-YXZ", damping: 2}) // the least recently picked
	want := storedPick{basis: "XZY", damping: 5}
	storeProfile(t, svc, arm, "kept", want)
	wrapped.armed.Store(true)
	// A session picks a new profile, one too many: its pass lists doomed,
	// kept and new, and finds doomed gone when it reads it.
	s, sink := open(t, svc, nil)
	pickProfile(t, svc, s, sink, arm, "new", 3)
	leaveSession(t, svc, s, "new")
	if wrapped.armed.Load() {
		t.Fatal("the pass never read the removed profile's session document")
	}
	if got := pickedAfterRestart(t, svc, dir, "kept"); got != want {
		t.Fatalf("after a restart the profile picked second holds %+v, want %+v: the bound removed it in the place of one another pass had removed", got, want)
	}
}
