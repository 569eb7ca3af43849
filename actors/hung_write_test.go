package actors

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/rs/zerolog"
)

// While a device's config write hangs on the disk (an fsync that does not
// return), a read of the device's config is answered at once with the
// value in force, which the write has not changed yet: it waited behind
// the write until its RequestTimeout, then answered 503, though the
// device actor had the answer in memory all along.
func TestReadsDoNotWaitBehindAHungWrite(t *testing.T) {
	armID := simArm(0).Info().ID
	var held *heldStore
	svc := startWith(t, Options{StateDir: t.TempDir(), RequestTimeout: 10 * time.Second, WrapStore: func(s Store) Store {
		held = newHeldStore(s, "save", storeName(protocol.TypeArm, armID))
		return held
	}})
	arm := addArm(t, svc, simArm(0))
	t.Cleanup(func() {
		select {
		case <-held.release:
		default:
			close(held.release)
		}
	})
	before, err := svc.Entry(arm, 0, protocol.KeyGravityCompensation)
	if err != nil {
		t.Fatal(err)
	}
	set := protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5}
	wrote := pending(func() { _, _ = svc.SetEntry(arm, 0, set) })
	held.waitEntered(t)

	type answer struct {
		e   protocol.Entry
		err error
	}
	for _, k := range []protocol.Key{protocol.KeyGravityCompensation, protocol.KeyHandedness} {
		read := make(chan answer, 1)
		go func() {
			e, err := svc.Entry(arm, 0, k)
			read <- answer{e, err}
		}()
		select {
		case a := <-read:
			if a.err != nil {
				t.Fatalf("read %s while a write hangs: %v", k.Path(), a.err)
			}
			if k == protocol.KeyGravityCompensation && a.e != before {
				t.Fatalf("read %s while its write hangs: %v, want the value in force %v", k.Path(), a.e, before)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("read %s still waiting 5 s behind a hung write of the device's config", k.Path())
		}
	}
	stillPending(t, wrote, "the hung write")
	close(held.release)
	waitDone(t, wrote, "the write")
	if got, err := svc.Entry(arm, 0, protocol.KeyGravityCompensation); err != nil || got != set {
		t.Fatalf("after the write: %v (%v), want %v", got, err, set)
	}
}

// hungFsyncStore is the state directory with the durable writes of one
// document hung before they take effect, as an fsync that does not return
// holds them: the write is on its way when the test lets it go on.
type hungFsyncStore struct {
	Store
	disk     *store.Store
	name     string
	spare    atomic.Int32 // writes of name let through before they hang
	entered  chan struct{}
	release  chan struct{}
	returned chan error
}

// Save hangs the same way, with no commit point to call it off at.
func (s *hungFsyncStore) Save(name string, v any) error {
	if name == s.name {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-s.release
	}
	return s.Store.Save(name, v)
}

func (s *hungFsyncStore) SaveGated(name string, v any, commit func() bool) error {
	if name != s.name || s.spare.Add(-1) >= 0 {
		return s.disk.SaveGated(name, v, commit)
	}
	err := s.disk.SaveGated(name, v, func() bool {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-s.release
		return commit()
	})
	select {
	case s.returned <- err:
	default:
	}
	return err
}

// A config write the disk does not take (an fsync hung) is answered 503
// unavailable within Options.WriteTimeout, not after RequestTimeout plus a
// minute; the value is not in force, not on disk once the disk answers
// again, and not in force after a restart; the device's next write goes
// through.
func TestHungWriteAnsweredUnavailableAndNeverApplied(t *testing.T) {
	armID := simArm(0).Info().ID
	dir := t.TempDir()
	svc, hung, release := startHungOn(t, dir, storeName(protocol.TypeArm, armID))
	arm := addArm(t, svc, simArm(0))
	before, err := svc.Entry(arm, 0, protocol.KeyGravityCompensation)
	if err != nil {
		t.Fatal(err)
	}
	set := protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5}
	wantUnavailable(t, hung, "a write", func() error { _, err := svc.SetEntry(arm, 0, set); return err })
	if got, err := svc.Entry(arm, 0, protocol.KeyGravityCompensation); err != nil || got != before {
		t.Fatalf("after the 503: %v (%v) in force, want %v", got, err, before)
	}
	release() // the disk answers again: the called-off write must not land
	wantCalledOff(t, hung)
	// The disk answering, the device's next write goes through; after a
	// restart it is in force, the called-off one nowhere.
	handed, pe := protocol.DecodeEntry(protocol.KeyHandedness, []byte(`"left"`), "")
	if pe != nil {
		t.Fatal(pe)
	}
	if _, err := svc.SetEntry(arm, 0, handed); err != nil {
		t.Fatalf("the next write, the disk answering: %v", err)
	}
	shutdown(t, svc)
	again := startWith(t, Options{StateDir: dir})
	arm = addArm(t, again, simArm(0))
	if got, err := again.Entry(arm, 0, protocol.KeyGravityCompensation); err != nil || got != before {
		t.Fatalf("after a restart: %v (%v) in force, want %v: a set answered 503 came back", got, err, before)
	}
	if got, err := again.Entry(arm, 0, protocol.KeyHandedness); err != nil || got != handed {
		t.Fatalf("after a restart: handedness %v (%v), want %v: an acknowledged write was lost", got, err, handed)
	}
}

// A settings write (PUT /settings/...) the disk does not take is answered
// 503 unavailable within Options.WriteTimeout, as a device's config write
// is (docs/protocol.md), not after RequestTimeout plus a minute with its
// outcome unknown and applied whenever the disk answered: the setting is
// not in force, not on disk once the disk answers again, and not in force
// after a restart; the next setting change goes through.
func TestHungSettingsWriteAnsweredUnavailableAndNeverApplied(t *testing.T) {
	dir := t.TempDir()
	svc, hung, release := startHungOn(t, dir, "settings")
	before := svc.Settings().ForceScale
	wantUnavailable(t, hung, "a settings write", func() error { _, err := svc.SetSetting(protocol.SettingForceScale, 0.5); return err })
	if got := svc.Settings().ForceScale; got != before {
		t.Fatalf("after the 503: force scale %v in force, want %v", got, before)
	}
	release() // the disk answers again: the called-off write must not land
	wantCalledOff(t, hung)
	if got := svc.Settings().ForceScale; got != before {
		t.Fatalf("after the disk answered: force scale %v in force, want %v", got, before)
	}
	if _, err := svc.SetSetting(protocol.SettingForceScale, 0.75); err != nil {
		t.Fatalf("the next settings write, the disk answering: %v", err)
	}
	shutdown(t, svc)
	again := startWith(t, Options{StateDir: dir})
	if got := again.Settings().ForceScale; got != 0.75 {
		t.Fatalf("after a restart: force scale %v, want 0.75 (the acknowledged write; 0.5 was called off)", got)
	}
}

// A device that leaves while its config write hangs on the disk answers
// the write 503 unavailable, and calls the write off: the value the user
// was told failed does not land once the disk answers, nor come back with
// the device after a restart. The write was answered 503 and left to land
// whenever the disk took it.
func TestDeviceLeavingCallsItsHungWriteOff(t *testing.T) {
	armID := simArm(0).Info().ID
	dir := t.TempDir()
	// A WriteTimeout far beyond the test: only the device leaving may
	// answer the write.
	svc, hung, release := startHungWithin(t, dir, storeName(protocol.TypeArm, armID), MaxWriteTimeout)
	arm := addArm(t, svc, simArm(0))
	before, err := svc.Entry(arm, 0, protocol.KeyGravityCompensation)
	if err != nil {
		t.Fatal(err)
	}
	set := protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5}
	answered := make(chan error, 1)
	go func() { _, err := svc.SetEntry(arm, 0, set); answered <- err }()
	select {
	case <-hung.entered:
	case <-time.After(patience):
		t.Fatal("the write never reached the disk")
	}
	svc.RemoveDevice(arm, errors.New("unplugged"))
	select {
	case err := <-answered:
		if errCode(err) != protocol.CodeUnavailable {
			t.Fatalf("a write whose device left answered %v, want %s", err, protocol.CodeUnavailable)
		}
	case <-time.After(patience):
		t.Fatalf("a write whose device left still unanswered after %v", patience)
	}
	release()
	wantCalledOff(t, hung)
	shutdown(t, svc)
	again := startWith(t, Options{StateDir: dir})
	arm = addArm(t, again, simArm(0))
	if got, err := again.Entry(arm, 0, protocol.KeyGravityCompensation); err != nil || got != before {
		t.Fatalf("after a restart: %v (%v) in force, want %v: a write answered 503 as its device left came back", got, err, before)
	}
}

// A reset of an entry across sessions of several profiles writes one
// document per profile; when the first is written and the next hangs on
// the disk, the reset is answered 503 unavailable within WriteTimeout, in
// the documented partial state: reset for the sessions whose documents
// were written, called off for the rest, which keep their value in force
// and on disk. It waited without bound: the first write had committed the
// whole request, so nothing could be called off.
func TestResetAcrossProfilesHungOnOneAnsweredWithinWriteTimeout(t *testing.T) {
	armID := simArm(0).Info().ID
	const written, hungProfile = "co.example:reset-written", "co.example:reset-hung"
	svc, hung, release := startHungOn(t, t.TempDir(), profileFolder(hungProfile)+"/"+protocol.TypeArm.Key()+"-"+armID)
	hung.spare.Store(1) // the set below goes through; the reset's write hangs
	arm := addArm(t, svc, simArm(0))
	set := protocol.ForceGate{Gain: 0.5}
	ids := sessionsSetting(t, svc, arm, set, written, hungProfile)
	wantUnavailable(t, hung, "a reset across profiles", func() error { _, err := svc.ResetEntry(arm, ids, protocol.KeyForceGate); return err })
	def := protocol.DefaultEntry(protocol.KeyForceGate)
	for i, want := range []protocol.Entry{def, set} {
		if got, err := svc.Entry(arm, ids[i], protocol.KeyForceGate); err != nil || got != want {
			t.Errorf("after the 503, session %d has %v (%v) in force, want %v", i, got, err, want)
		}
	}
	release()
	wantCalledOff(t, hung)
	var stored protocol.SessionConfig
	if found, err := hung.disk.Load(hung.name, &stored); !found || err != nil || stored.ForceGate != set {
		t.Fatalf("the called-off profile's document holds %v (found %v, %v), want %v", stored.ForceGate, found, err, set)
	}
}

// sessionsSetting opens a session for each profile, each setting entry e
// on device arm, and returns their ids.
func sessionsSetting(t *testing.T, svc *Service, arm *Device, e protocol.Entry, profiles ...string) []uint64 {
	t.Helper()
	var ids []uint64
	for _, profile := range profiles {
		sess, sink := open(t, svc, nil)
		if f := exchange(t, sess, sink, fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)); len(f.errorCodes()) != 0 {
			t.Fatalf("pick %s: %v", profile, f.errorCodes())
		}
		if _, err := svc.SetEntry(arm, sess.ID, e); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	return ids
}

// startHungOn starts a service on dir whose writes of the document name
// hang on fsync until release (also at the test's end), with a 300 ms
// WriteTimeout.
func startHungOn(t *testing.T, dir, name string) (svc *Service, hung *hungFsyncStore, release func()) {
	t.Helper()
	return startHungWithin(t, dir, name, 300*time.Millisecond)
}

// startHungWithin is startHungOn with the WriteTimeout within.
func startHungWithin(t *testing.T, dir, name string, within time.Duration) (svc *Service, hung *hungFsyncStore, release func()) {
	t.Helper()
	hung = &hungFsyncStore{name: name, entered: make(chan struct{}, 1), release: make(chan struct{}), returned: make(chan error, 1)}
	svc = startWith(t, Options{StateDir: dir, WriteTimeout: within, WrapStore: func(s Store) Store {
		hung.Store, hung.disk = s, s.(*store.Store)
		return hung
	}})
	var once sync.Once
	release = func() { once.Do(func() { close(hung.release) }) }
	t.Cleanup(release)
	return svc, hung, release
}

// wantUnavailable runs write, which must reach the hung disk and be
// answered 503 unavailable well within 10 s (its WriteTimeout is 300 ms).
func wantUnavailable(t *testing.T, hung *hungFsyncStore, what string, write func() error) {
	t.Helper()
	answered := make(chan error, 1)
	start := time.Now()
	go func() { answered <- write() }()
	select {
	case <-hung.entered:
	case <-time.After(patience):
		t.Fatalf("%s never reached the disk", what)
	}
	select {
	case err := <-answered:
		var perr *protocol.Error
		if !errors.As(err, &perr) || perr.Code != protocol.CodeUnavailable {
			t.Fatalf("%s hung on the disk answered %v, want %s", what, err, protocol.CodeUnavailable)
		}
		t.Logf("answered after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(10 * time.Second):
		t.Fatalf("%s hung on the disk still unanswered after 10 s (its WriteTimeout is 300 ms)", what)
	}
}

// wantCalledOff waits for the hung write, released, to return
// store.ErrNotCommitted: called off at the commit point, not landed.
func wantCalledOff(t *testing.T, hung *hungFsyncStore) {
	t.Helper()
	select {
	case err := <-hung.returned:
		if !errors.Is(err, store.ErrNotCommitted) {
			t.Fatalf("the called-off write returned %v, want store.ErrNotCommitted", err)
		}
	case <-time.After(patience):
		t.Fatal("the hung write never returned")
	}
}

// While one device's config write hangs on the disk, another device whose
// document shares the hung one's lock stripe in the store is
// added, read and written as if the disk were well: it waited behind the
// hung write, without bound, from its addition (which loads its document)
// on.
func TestAnotherDeviceServedWhileAWriteHangs(t *testing.T) {
	armID := simArm(0).Info().ID
	hungName := storeName(protocol.TypeArm, armID)
	other := 0
	for i := 1; other == 0 && i < 10000; i++ {
		if store.SameStripe(storeName(protocol.TypeArm, simArm(i).Info().ID), hungName) {
			other = i
		}
	}
	if other == 0 {
		t.Fatal("no simulated arm's document shares the hung one's stripe")
	}
	svc, hung, _ := startHungWithin(t, t.TempDir(), hungName, MaxWriteTimeout)
	arm := addArm(t, svc, simArm(0))
	go func() { _, _ = svc.SetEntry(arm, 0, protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5}) }()
	select {
	case <-hung.entered:
	case <-time.After(patience):
		t.Fatal("the write never reached the disk")
	}
	served := make(chan error, 1)
	go func() {
		dev, err := svc.AddDevice(simArm(other), false)
		if err == nil {
			set := protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.25}
			if _, err = svc.SetEntry(dev, 0, set); err == nil {
				var got protocol.Entry
				if got, err = svc.Entry(dev, 0, protocol.KeyGravityCompensation); err == nil && got != set {
					err = fmt.Errorf("read %v after writing %v", got, set)
				}
			}
		}
		served <- err
	}()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("another device while a write hangs: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("another device's addition, write and read still waiting 10 s behind a hung write of its stripe")
	}
}

// failingAfterCommitStore is the state directory with one write of one
// document that passes its commit point, then hangs (in the rename and the
// directory's fsync still to come) until release, and fails: the document
// keeps its old value.
type failingAfterCommitStore struct {
	Store
	disk    *store.Store
	name    string
	spare   atomic.Int32 // writes of name let through first
	entered chan struct{}
	release chan struct{}
}

func (s *failingAfterCommitStore) SaveGated(name string, v any, commit func() bool) error {
	if name != s.name || s.spare.Add(-1) >= 0 {
		return s.disk.SaveGated(name, v, commit)
	}
	admitted := false
	_ = s.disk.SaveGated(name, v, func() bool {
		if admitted = commit(); admitted {
			close(s.entered)
			<-s.release
		}
		return false // the rename fails: the document stays as it was
	})
	if !admitted {
		return fmt.Errorf("store: save %s: %w", name, store.ErrNotCommitted)
	}
	return fmt.Errorf("store: save %s: rename: input/output error", name)
}

// A reset across profiles whose first document has passed its commit point
// when WriteTimeout passes, but not its rename and directory fsync, which
// then fail, leaves each session with the value its document holds: it
// was answered at the timeout as in force for that session, which the
// disk never had (memory ahead of disk; a restart took the reset back).
func TestResetAcrossProfilesFailingPastItsCommitPointNotApplied(t *testing.T) {
	armID := simArm(0).Info().ID
	const failing, other = "co.example:reset-failing", "co.example:reset-other"
	hung := &failingAfterCommitStore{name: profileFolder(failing) + "/" + protocol.TypeArm.Key() + "-" + armID,
		entered: make(chan struct{}), release: make(chan struct{})}
	hung.spare.Store(1) // the set below goes through; the reset's write fails
	svc := startWith(t, Options{StateDir: t.TempDir(), WriteTimeout: 300 * time.Millisecond, WrapStore: func(s Store) Store {
		hung.Store, hung.disk = s, s.(*store.Store)
		return hung
	}})
	var once sync.Once
	release := func() { once.Do(func() { close(hung.release) }) }
	t.Cleanup(release)
	arm := addArm(t, svc, simArm(0))
	set := protocol.ForceGate{Gain: 0.5}
	ids := sessionsSetting(t, svc, arm, set, failing, other)
	answered := make(chan error, 1)
	go func() { _, err := svc.ResetEntry(arm, ids, protocol.KeyForceGate); answered <- err }()
	select {
	case <-hung.entered:
	case <-time.After(patience):
		t.Fatal("the reset never reached the disk")
	}
	time.Sleep(time.Second) // past the WriteTimeout, as the disk hangs on
	release()
	select {
	case err := <-answered:
		if err == nil {
			t.Fatal("the reset whose first document failed answered success")
		}
		t.Logf("answered: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the reset still unanswered 10 s after its write failed")
	}
	var stored protocol.SessionConfig
	if found, err := hung.disk.Load(hung.name, &stored); !found || err != nil || stored.ForceGate != set {
		t.Fatalf("the failed document holds %v (found %v, %v), want %v", stored.ForceGate, found, err, set)
	}
	for i, id := range ids {
		if got, err := svc.Entry(arm, id, protocol.KeyForceGate); err != nil || got != set {
			t.Errorf("session %d has %v (%v) in force, want %v: what its profile's document holds", i, got, err, set)
		}
	}
}

// A profile write behind hung on the disk holds a session's end and the
// service's shutdown no longer than WriteTimeout, where both waited for it
// without bound: a WebSocket close that never finished its cleanup, a
// SIGTERM that never exited. The shutdown goes on and fails, naming the
// document not on disk (acknowledged to its client, lost with the process).
func TestSessionEndAndShutdownBoundedByAHungProfileWrite(t *testing.T) {
	armID := simArm(0).Info().ID
	const profile = "co.example:hung-behind"
	hung := &hungFsyncStore{name: profileFolder(profile) + "/" + protocol.TypeArm.Key() + "-" + armID,
		entered: make(chan struct{}, 1), release: make(chan struct{}), returned: make(chan error, 1)}
	// Not startWith: its cleanup wants a shutdown without error.
	dir := t.TempDir()
	svc, err := Start(Options{StateDir: dir, WriteTimeout: 300 * time.Millisecond, Log: zerolog.Nop(), SimShards: 1,
		WrapStore: func(s Store) Store {
			hung.Store, hung.disk = s, s.(*store.Store)
			return hung
		}})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { close(hung.release) }) }
	t.Cleanup(func() {
		release()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
		// The writes given up on land now: wait, so that they are over
		// before the state directory is removed.
		wantCalledOff(t, hung)
		hwtest.EventuallyNil(t, patience, "the profile written behind landed", func() error {
			if svc.writeBehind.Queued(hung.name) {
				return errors.New("still queued")
			}
			return nil
		})
		// A write the shutdown gave up on may still be renaming its
		// file in: the directory goes once it has (t.TempDir's own
		// removal, tried once, failed on a loaded machine).
		hwtest.EventuallyNil(t, patience, "the state directory removed", func() error { return os.RemoveAll(dir) })
	})
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	if f := exchange(t, sess, sink, fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile)); len(f.errorCodes()) != 0 {
		t.Fatalf("pick %s: %v", profile, f.errorCodes())
	}
	// An HTTP write of the profile's document hangs on the disk, holding
	// the document: the session's configure, written behind, hangs behind it.
	wantUnavailable(t, hung, "a profile's entry", func() error {
		_, err := svc.SetEntry(arm, sess.ID, protocol.ForceGate{Gain: 0.25})
		return err
	})
	configure := fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"force_gate":{"gain":0.5}}}]}`, arm.ID)
	if f := exchange(t, sess, sink, configure); len(f.errorCodes()) != 0 {
		t.Fatalf("configure: %v", f.errorCodes())
	}

	ended := pending(func() { sess.Close(protocol.CloseClientClosed) })
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's end still waiting 10 s behind a hung profile write (WriteTimeout 300 ms)")
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		shut <- svc.Shutdown(ctx)
	}()
	select {
	case err := <-shut:
		if !errors.Is(err, store.ErrWriteTimeout) || !strings.Contains(err.Error(), hung.name) {
			t.Fatalf("Shutdown = %v; want store.ErrWriteTimeout naming %s", err, hung.name)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Shutdown still waiting 10 s behind a hung profile write (WriteTimeout 300 ms, context 2 s)")
	}
}

// A write hung on the disk is called off and answered 503 (the disk did
// not take it in time); when the disk then answers but refuses the next
// write for a real reason (here a file where the folder belongs, or a
// folder where the file belongs, as a full disk or a permission would),
// the next write's answer names that reason, not the stale timeout, and
// nothing is applied.
func TestAfterAHungWriteTheNextFailureNamesItsRealCause(t *testing.T) {
	armID := simArm(0).Info().ID
	for _, c := range []struct {
		name, doc string
		refuse    func(t *testing.T, dir string) // the disk's real refusal
		write     func(svc *Service, arm *Device) error
		inForce   func(svc *Service, arm *Device) any
		cause     string // in the answer
	}{
		{"device config", storeName(protocol.TypeArm, armID),
			func(t *testing.T, dir string) {
				devices := filepath.Join(dir, "devices")
				if err := os.Rename(devices, devices+".aside"); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(devices, []byte("a file where a folder belongs"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			func(svc *Service, arm *Device) error {
				_, err := svc.SetEntry(arm, 0, protocol.ForceClamp{MaxForceN: 3})
				return err
			},
			func(svc *Service, arm *Device) any { e, _ := svc.Entry(arm, 0, protocol.KeyForceClamp); return e },
			"not a directory"},
		{"settings", "settings",
			func(t *testing.T, dir string) {
				settings := filepath.Join(dir, "settings.json")
				if err := os.Remove(settings); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
				if err := os.Mkdir(settings, 0o700); err != nil {
					t.Fatal(err)
				}
			},
			func(svc *Service, _ *Device) error {
				_, err := svc.SetSetting(protocol.SettingForceScale, 0.25)
				return err
			},
			func(svc *Service, _ *Device) any { return svc.Settings().ForceScale },
			"is a folder, where the document's file should be"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			// Time enough for the next write on a loaded machine: its
			// answer must be the disk's refusal, not a timeout of its own.
			svc, hung, release := startHungWithin(t, dir, c.doc, 2*time.Second)
			arm := addArm(t, svc, simArm(0))
			// One write on disk first (the device's), so that its folder
			// exists.
			if c.doc != "settings" {
				hung.spare.Store(1)
			}
			if _, err := svc.SetEntry(arm, 0, protocol.Handedness("left")); err != nil {
				t.Fatal(err)
			}
			before := c.inForce(svc, arm)
			wantUnavailable(t, hung, "a write", func() error { return c.write(svc, arm) })
			c.refuse(t, dir)
			release()
			wantCalledOff(t, hung)
			err := c.write(svc, arm)
			if err == nil || errCode(err) == protocol.CodeUnavailable || !strings.Contains(err.Error(), c.cause) {
				t.Fatalf("the next write, the disk refusing it: %v; want the real cause (%q), not the timeout", err, c.cause)
			}
			t.Logf("answered: %v", err)
			if got := c.inForce(svc, arm); got != before {
				t.Errorf("after the refused write: %v in force, want %v", got, before)
			}
		})
	}
}
