package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw/hwtest"
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
	_, readable := unreadableFor(t, session) // a read error for a moment
	a, sinkA := open(t, svc, nil)
	exchange(t, a, sinkA, pick) // warned: defaults
	readable()
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
	// the profile; readable again before the shutdown stores the joiner's
	// use of the held document.
	_, readable := unreadableFor(t, filepath.Join(dir, filepath.FromSlash(profileFolder("co.example:held")), "session.json"))
	b, sinkB := open(t, svc, nil)
	f := exchange(t, b, sinkB, pick)
	readable()
	if got := b.Basis().Permutation; got != "-YXZ" {
		t.Fatalf("the joiner has basis %q, want the held document's -YXZ", got)
	}
	if codes := f.errorCodes(); len(codes) != 0 || f.raw["warnings"] != nil {
		t.Errorf("the joiner, which has the profile's basis and lease, was answered errors %v, warnings %v; want neither", codes, f.raw["warnings"])
	}
}

// Two sessions of one profile change its session level at the same
// moment, round after round: one its basis, the other its lease. Each
// change goes onto the profile's one document (profileSessions.change,
// which puts the document again when the other's change went on between
// its Put and its update), so after a restart the profile holds the last
// acknowledged basis of the one and the last acknowledged lease of the
// other, neither stored over by the other's copy.
func TestSimultaneousSessionLevelChangesOfOneProfileBothSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	const profile = "co.example:shared"
	pick := fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)
	a, sinkA := open(t, svc, nil)
	b, sinkB := open(t, svc, nil)
	for _, s := range []struct {
		sess *Session
		sink *recSink
	}{{a, sinkA}, {b, sinkB}} {
		if f := exchange(t, s.sess, s.sink, pick); len(f.errorCodes()) != 0 || f.raw["warnings"] != nil {
			t.Fatalf("pick: errors %v, warnings %v", f.errorCodes(), f.raw["warnings"])
		}
	}
	// send delivers msg on sess and returns its frame's problems, if any.
	send := func(sess *Session, sink *recSink, msg string) error {
		sess.Deliver([]byte(msg), 0)
		select {
		case raw := <-sink.frames:
			var f testFrame
			if err := json.Unmarshal(raw, &f.raw); err != nil {
				return err
			}
			if len(f.errorCodes()) != 0 || f.raw["warnings"] != nil {
				return fmt.Errorf("%s: errors %v, warnings %v", msg, f.errorCodes(), f.raw["warnings"])
			}
			return nil
		case <-time.After(patience):
			return fmt.Errorf("%s: no frame within %v", msg, patience)
		}
	}
	bases := []string{"-YXZ", "ZXY", "Y-XZ", "XZ-Y"}
	const rounds = 40
	var lastBasis string
	var lastLease int
	for i := range rounds {
		lastBasis, lastLease = bases[i%len(bases)], 150+i
		start := make(chan struct{})
		errs := make(chan error, 2)
		go func() {
			<-start
			errs <- send(a, sinkA, fmt.Sprintf(`{"session":{"configure":{"basis":{"permutation":%q}}}}`, lastBasis))
		}()
		go func() {
			<-start
			errs <- send(b, sinkB, fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":%d}}}}`, lastLease))
		}()
		close(start)
		for range 2 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
	}
	shutdown(t, svc)
	disk, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ps profileSession
	if found, err := disk.Load(profileFolder(profile)+"/session", &ps); !found || err != nil {
		t.Fatalf("the profile's session document: found %v, %v", found, err)
	}
	if ps.Basis.Permutation != lastBasis || ps.LeaseMs != lastLease {
		t.Fatalf("stored session document %+v, want basis %s and lease %d (each session's last acknowledged change)", ps, lastBasis, lastLease)
	}
	again := startWith(t, Options{StateDir: dir})
	c, sinkC := open(t, again, nil)
	exchange(t, c, sinkC, pick)
	if got := c.Basis().Permutation; got != lastBasis {
		t.Fatalf("after a restart the profile's session has basis %s, want %s", got, lastBasis)
	}
}

// The interleaving the test above can only hope to hit, made certain: the
// lease change of one session runs whole between the other's basis change
// taking its copy of the document and its Put, so that Put carries the
// old lease. The document is put again with both, and the files hold the
// basis and the lease acknowledged, as a reopened store reads them.
func TestASessionLevelChangePutBetweenAnotherOnesCopyAndPutIsKept(t *testing.T) {
	const profile = "co.example:interleaved"
	put, stored := sessionDocumentBehind(t, profile)
	var docs profileSessions
	start := profileSession{Name: profile, Basis: protocol.Basis{Permutation: protocol.IdentityBasis}, LeaseMs: 100}
	docs.join(profile, start, true)
	docs.join(profile, start, true)
	basis := protocol.Basis{Permutation: "-YXZ"}
	var leaseErr error
	first := true
	err := docs.change(profile, profileSessionChange{basis: &basis}, func(ps profileSession) error {
		if first {
			first = false
			leaseErr = docs.change(profile, profileSessionChange{lease: 250}, put)
		}
		return put(ps)
	})
	if err != nil || leaseErr != nil {
		t.Fatalf("basis change: %v; lease change: %v", err, leaseErr)
	}
	if got := stored(); got.Basis != basis || got.LeaseMs != 250 {
		t.Fatalf("stored %+v, want basis %s and lease 250 (both acknowledged)", got, basis.Permutation)
	}
}

// firstLoadHeld holds the first Load of one document once armed, after it
// read the file and until release is closed, and says on entered when it
// has read: a read whose answer is late while later reads go through.
type firstLoadHeld struct {
	Store
	name    string
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (s *firstLoadHeld) Load(name string, v any) (bool, error) {
	found, err := s.Store.Load(name, v)
	if name == s.name && s.armed.CompareAndSwap(true, false) {
		close(s.entered)
		<-s.release
	}
	return found, err
}

// A session J picks a profile and reads its stored basis (-YXZ); before J
// joins, another session H picks the profile, changes its basis to ZXY
// (answered without error) and leaves. J then took its stale copy, stored
// it as the profile's use, and the acknowledged ZXY was gone for J and
// after a restart (review36). J must take ZXY, and the profile keep it.
func TestAJoinerWithACopyReadBeforeAHoldersChangeDoesNotStoreItOver(t *testing.T) {
	dir := t.TempDir()
	const profile = "co.example:stale"
	doc := profileFolder(profile) + "/session"
	held := &firstLoadHeld{name: doc, entered: make(chan struct{}), release: make(chan struct{})}
	svc := startWith(t, Options{StateDir: dir, WrapStore: func(s Store) Store { held.Store = s; return held }})
	var once sync.Once
	release := func() { once.Do(func() { close(held.release) }) }
	t.Cleanup(release)
	pick := fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)
	s0, sink0 := open(t, svc, nil)
	exchange(t, s0, sink0, pick)
	if f := exchange(t, s0, sink0, `{"session":{"configure":{"basis":{"permutation":"-YXZ"}}}}`); len(f.errorCodes()) != 0 {
		t.Fatalf("configure: %v", f.errorCodes())
	}
	s0.Close(protocol.CloseClientClosed)
	hwtest.Eventually(t, patience, "the first session gone", func() bool { return len(svc.Sessions()) == 0 })

	held.armed.Store(true)
	j, sinkJ := open(t, svc, nil)
	joined := pending(func() { j.Deliver([]byte(pick), 0) })
	select {
	case <-held.entered:
	case <-time.After(patience):
		t.Fatal("the joiner's read of the profile never reached the store")
	}
	h, sinkH := open(t, svc, nil)
	if f := exchange(t, h, sinkH, pick); len(f.errorCodes()) != 0 || h.Basis().Permutation != "-YXZ" {
		t.Fatalf("the holder's pick: errors %v, basis %s", f.errorCodes(), h.Basis().Permutation)
	}
	if f := exchange(t, h, sinkH, `{"session":{"configure":{"basis":{"permutation":"ZXY"}}}}`); len(f.errorCodes()) != 0 || f.raw["warnings"] != nil {
		t.Fatalf("the holder's change: errors %v, warnings %v", f.errorCodes(), f.raw["warnings"])
	}
	h.Close(protocol.CloseClientClosed)
	hwtest.Eventually(t, patience, "the holder gone", func() bool { return len(svc.Sessions()) == 1 })
	release()
	waitDone(t, joined, "the joiner's pick")
	sinkJ.next(t)
	if got := j.Basis().Permutation; got != "ZXY" {
		t.Errorf("the joiner has basis %s, want the holder's acknowledged ZXY", got)
	}
	j.Close(protocol.CloseClientClosed)
	shutdown(t, svc)

	again := startWith(t, Options{StateDir: dir})
	c, sinkC := open(t, again, nil)
	exchange(t, c, sinkC, pick)
	if got := c.Basis().Permutation; got != "ZXY" {
		t.Fatalf("after a restart the profile's basis is %s, want the acknowledged ZXY", got)
	}
}

// The same race when the joiner's copy is the holder's document (taken
// from memory, not read from the file): the holder changes the basis and
// leaves between the joiner's copy and its join. What the joiner takes,
// and what its use stores, is the holder's acknowledged change, as a
// reopened store reads it.
func TestAJoinerWithAHeldCopyTakenBeforeAChangeTakesTheChange(t *testing.T) {
	const profile = "co.example:held-copy"
	put, stored := sessionDocumentBehind(t, profile)
	var docs profileSessions
	docs.join(profile, profileSession{Name: profile, Basis: protocol.Basis{Permutation: "-YXZ"}, LeaseMs: 100}, true)
	copied, ok, _ := docs.reading(profile, nil, time.Second) // the joiner's per-tick path
	if !ok {
		t.Fatal("the held document was not handed to the joiner")
	}
	changed := protocol.Basis{Permutation: "ZXY"}
	if err := docs.change(profile, profileSessionChange{basis: &changed}, put); err != nil {
		t.Fatal(err)
	}
	docs.leave(profile) // the holder
	got, _ := docs.join(profile, copied, true)
	docs.doneReading(profile)
	if err := docs.change(profile, profileSessionChange{}, put); err != nil { // the joiner's use
		t.Fatal(err)
	}
	if got.Basis != changed {
		t.Errorf("the joiner took basis %s, want the holder's acknowledged %s", got.Basis.Permutation, changed.Permutation)
	}
	if got := stored(); got.Basis != changed {
		t.Fatalf("stored basis %s, want the acknowledged %s", got.Basis.Permutation, changed.Permutation)
	}
	docs.leave(profile)
	if len(docs.docs) != 0 {
		t.Fatalf("%d documents kept once no session has the profile nor reads it", len(docs.docs))
	}
}

// sessionDocumentBehind returns the put of profile's session document
// through a write-behind on a state directory of the test's (written at
// stored only), and stored, which writes it and reads the document back as
// a reopened store does.
func sessionDocumentBehind(t *testing.T, profile string) (put func(profileSession) error, stored func() profileSession) {
	t.Helper()
	dir := t.TempDir()
	disk, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	wb := disk.NewWriteBehind(time.Hour)
	name := profileFolder(profile) + "/session"
	put = func(ps profileSession) error { return wb.Put(name, ps) }
	stored = func() profileSession {
		t.Helper()
		if err := wb.Close(); err != nil {
			t.Fatal(err)
		}
		reopened, err := store.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		var ps profileSession
		if found, err := reopened.Load(name, &ps); !found || err != nil {
			t.Fatalf("the profile's session document: found %v, %v", found, err)
		}
		return ps
	}
	return put, stored
}

// A removal's claim ended twice (a pass's release in its loop, then its
// deferred one) must not end the claim another pass took on the same
// folder meanwhile: a pick then waits for that second removal (review57).
func TestAProfileRemovalReleasedTwiceKeepsTheNextPasssClaim(t *testing.T) {
	var docs profileSessions
	folder := profileFolder("co.example.lab:a")
	first := docs.claimRemoval([]string{folder}, 1)
	if len(first) != 1 {
		t.Fatalf("first pass claimed %v, want the folder", first)
	}
	docs.removed(first[0])
	second := docs.claimRemoval([]string{folder}, 1)
	if len(second) != 1 {
		t.Fatalf("second pass claimed %v, want the folder", second)
	}
	docs.removed(first[0]) // the first pass's deferred release
	waiting := make(chan struct{})
	docs.waitingRemoval = func(string) { close(waiting) }
	read := make(chan error, 1)
	go func() {
		_, _, err := docs.reading("co.example.lab:a", nil, time.Minute)
		read <- err
	}()
	select {
	case <-waiting:
	case err := <-read:
		t.Fatalf("a pick read the profile (err %v) while the second pass held its removal", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the pick neither waited nor read")
	}
	docs.removed(second[0])
	select {
	case err := <-read:
		if err != nil {
			t.Fatalf("the pick after the removal: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the pick still waits after the second removal ended")
	}
	docs.doneReading("co.example.lab:a")
}

// A pick waiting for a removal that does not finish (a hung disk) gives up
// when its session ends, or after its limit, with an error and no read
// counted: the session is not hung behind the disk, and the profile is not
// kept in use by a read that never happened (review57).
func TestAPickWaitingForARemovalGivesUp(t *testing.T) {
	tests := []struct {
		name    string
		stopped bool
		limit   time.Duration
		want    error
	}{
		{"the session ended", true, time.Hour, errProfileRemovalWaitEnded},
		{"past the limit", false, 20 * time.Millisecond, errProfileBeingRemoved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var docs profileSessions
			claim := docs.claimRemoval([]string{profileFolder("p")}, 1)
			defer docs.removed(claim[0])
			stop := make(chan struct{})
			if tt.stopped {
				close(stop)
			}
			_, ok, err := docs.reading("p", stop, tt.limit)
			if !errors.Is(err, tt.want) || ok {
				t.Fatalf("reading = %v, %v; want %v", ok, err, tt.want)
			}
			if in := docs.inUse(); len(in) != 0 {
				t.Fatalf("profiles in use after the pick gave up: %v", in)
			}
		})
	}
}
