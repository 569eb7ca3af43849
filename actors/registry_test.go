package actors

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// A device added after a session changed its basis and profile is attached
// with them: the registry, which alone attaches, knows the session's
// latest state.
func TestDeviceAddedLaterSeesTheSessionAsItIsNow(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	first := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	f := exchange(t, sess, sink, `{"session":{"configure":{"profile":{"name":"later"},"basis":{"permutation":"-YXZ"}}}}`)
	if codes := f.errorCodes(); len(codes) != 0 {
		t.Fatalf("errors %v", codes)
	}
	second := addArm(t, svc, simArm(1))
	for _, d := range []*Device{first, second} {
		e, err := svc.Entry(d, sess.ID, protocol.KeyBasis)
		if err != nil || e != (protocol.Basis{Permutation: "-YXZ"}) {
			t.Fatalf("%s: basis %v (%v), want the session's -YXZ", d.ID, e, err)
		}
	}
	// The later device also stores under the session's profile.
	if codes := exchange(t, sess, sink, fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"force_gate":{"gain":0.9}}}]}`, second.ID)).errorCodes(); len(codes) != 0 {
		t.Fatalf("errors %v", codes)
	}
	sess.Close(protocol.CloseClientClosed)
	shutdown(t, svc)
	svc2 := startWith(t, Options{StateDir: dir})
	addArm(t, svc2, simArm(0))
	second2 := addArm(t, svc2, simArm(1))
	sess2, sink2 := open(t, svc2, nil)
	exchange(t, sess2, sink2, `{"session":{"configure":{"profile":{"name":"later"}}}}`)
	if e, err := svc2.Entry(second2, sess2.ID, protocol.KeyForceGate); err != nil || e != (protocol.ForceGate{Gain: 0.9}) {
		t.Fatalf("the profile's force gate on the later device: %v (%v), want 0.9", e, err)
	}
}

// Sessions opened and devices added at the same time, from many
// goroutines: every device knows every open session, exactly as listed.
func TestRegistryUnderConcurrentOpensAndAdds(t *testing.T) {
	svc := startWith(t, Options{})
	const n = 8
	var wg sync.WaitGroup
	devs := make([]*Device, n)
	sessions := make([]*Session, n)
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			d, err := svc.AddDevice(simArm(i), false)
			devs[i] = d
			errs <- err
		}()
		go func() {
			defer wg.Done()
			sink := newRecSink()
			s, err := svc.OpenSession(SessionOptions{Remote: "test", Codec: protocol.Codec{}, Sink: sink})
			sessions[i] = s
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sessions {
		t.Cleanup(func() { s.Close(protocol.CloseClientClosed) })
	}
	if got := len(svc.Sessions()); got != n {
		t.Fatalf("%d sessions listed, want %d", got, n)
	}
	if got := len(svc.Devices().All()); got != n {
		t.Fatalf("%d devices listed, want %d", got, n)
	}
	for _, d := range devs {
		for _, s := range sessions {
			if _, err := svc.Entry(d, s.ID, protocol.KeyDamping); err != nil {
				t.Fatalf("device %s does not know session %d: %v", d.ID, s.ID, err)
			}
		}
	}
}

// AddDevice refuses a second device with the same id, and a driver of no
// known kind, and lists neither.
func TestAddDeviceRefusals(t *testing.T) {
	svc := startWith(t, Options{})
	addArm(t, svc, simArm(0))
	if _, err := svc.AddDevice(simArm(0), false); err == nil {
		t.Fatal("a second arm with the same id was adopted")
	}
	if _, err := svc.AddDevice(oddDriver{simArm(5)}, false); err == nil {
		t.Fatal("a driver of unknown kind was adopted")
	}
	if n := len(svc.Devices().All()); n != 1 {
		t.Fatalf("%d devices listed, want 1", n)
	}
	if n := countEvents(t, svc, event.NameDeviceConnected, ""); n != 1 {
		t.Fatalf("%d device-connected events, want 1", n)
	}
}

// oddDriver reports a kind no device type maps to.
type oddDriver struct{ hw.Driver }

func (d oddDriver) Info() hw.Info {
	i := d.Driver.Info()
	i.Kind = 99
	return i
}

// Settings are owned by the registry: a change is stored before it
// applies, survives a restart, and a store that fails leaves it as it was.
func TestSettingsAreDurableOrUnchanged(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	if v, err := svc.SetSetting(protocol.SettingForceScale, 0.25); err != nil || v != 0.25 {
		t.Fatalf("set: %v %v", v, err)
	}
	shutdown(t, svc)

	svc2 := startWith(t, Options{StateDir: dir, WrapStore: func(s Store) Store { return failingStore{Store: s, name: "settings"} }})
	if got := svc2.Settings().ForceScale; got != 0.25 {
		t.Fatalf("after a restart force_scale is %v, want 0.25", got)
	}
	if _, err := svc2.SetSetting(protocol.SettingForceScale, 0.75); errCode(err) != protocol.CodeInternal {
		t.Fatalf("a setting that cannot be stored answered %v, want internal", err)
	}
	if got := svc2.Settings().ForceScale; got != 0.25 {
		t.Fatalf("a setting that could not be stored is in force: %v", got)
	}
	shutdown(t, svc2)

	svc3 := startWith(t, Options{StateDir: dir})
	if v, err := svc3.ResetSetting(protocol.SettingForceScale); err != nil || v != 1.0 {
		t.Fatalf("reset: %v %v, want the default 1", v, err)
	}
}

// Many concurrent writes to one entry through a device actor slower than
// their deadline: each is answered applied or unavailable, and the value
// in force (and on disk after a restart) is one that was answered applied,
// the last of them the actor took.
func TestConcurrentWritesPastTheirDeadline(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir, RequestTimeout: 40 * time.Millisecond,
		DeviceHook: func(*Device) { time.Sleep(2 * time.Millisecond) }})
	arm := addArm(t, svc, simArm(0))
	const n = 60
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		applied []float64
		refused int
	)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := float64(i+1) / 100
			_, err := svc.SetEntry(arm, 0, protocol.GravityCompensation{Enabled: true, ScalingFactor: want})
			mu.Lock()
			defer mu.Unlock()
			switch errCode(err) {
			case "":
				applied = append(applied, want)
			case protocol.CodeUnavailable:
				refused++
			default:
				t.Errorf("write %d answered %v", i, err)
			}
		}()
	}
	wg.Wait()
	if len(applied) == 0 || refused == 0 {
		t.Skipf("%d applied, %d refused: the machine did not make the device actor late enough to test anything", len(applied), refused)
	}
	// The actor may still be refusing the backlog: ask until it answers.
	var e protocol.Entry
	hwtest.EventuallyNil(t, 5*time.Second, "the gravity compensation entry", func() (err error) {
		e, err = svc.Entry(arm, 0, protocol.KeyGravityCompensation)
		return err
	})
	got := e.(protocol.GravityCompensation).ScalingFactor
	if !slices.Contains(applied, got) {
		t.Fatalf("the value in force %v was never answered applied (%d applied, %d refused)", got, len(applied), refused)
	}
	shutdown(t, svc)
	svc2 := startWith(t, Options{StateDir: dir})
	arm2 := addArm(t, svc2, simArm(0))
	e2, err := svc2.Entry(arm2, 0, protocol.KeyGravityCompensation)
	if err != nil || e2 != e {
		t.Fatalf("after a restart %v (%v), want %v", e2, err, e)
	}
}

// heldStore holds every Save or Load (op) of one document until release
// is closed, and says on entered when one starts: a disk that stalls.
type heldStore struct {
	Store
	op, name string
	entered  chan string
	release  chan struct{}
}

func newHeldStore(s Store, op, name string) *heldStore {
	return &heldStore{Store: s, op: op, name: name, entered: make(chan string, 16), release: make(chan struct{})}
}

func (s *heldStore) hold(op, name string) {
	if op == s.op && name == s.name {
		s.entered <- op
		<-s.release
	}
}

func (s *heldStore) Save(name string, v any) error {
	s.hold("save", name)
	return s.Store.Save(name, v)
}

func (s *heldStore) Load(name string, v any) (bool, error) {
	s.hold("load", name)
	return s.Store.Load(name, v)
}

// waitEntered waits for the held store to hold an operation.
func (s *heldStore) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-s.entered:
	case <-time.After(patience):
		t.Fatalf("nothing reached %s within %v", s.name, patience)
	}
}

// pending runs f on a goroutine; the channel closes when it returns.
func pending(f func()) <-chan struct{} {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	return done
}

func stillPending(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
		t.Fatalf("%s returned while its document was held on the disk", what)
	default:
	}
}

func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatalf("%s did not return within %v of the disk answering", what, patience)
	}
}

// While one document's write or read stalls on the disk, the registry and
// every other device actor go on: devices are added, sessions open,
// another device is configured. The stalled request is answered only once
// its write is done (a POST is answered after its durable write), and a
// request to the same device asked after it was answered sees its outcome.
func TestStalledDiskHoldsOnlyItsOwnRequest(t *testing.T) {
	armID := simArm(0).Info().ID
	for _, c := range []struct {
		name    string
		op, doc string
		// stall starts the request that reaches the held document; check
		// runs once it is answered.
		stall func(t *testing.T, svc *Service, arm *Device) (done func(), check func())
	}{
		{"setting write", "save", "settings", func(t *testing.T, svc *Service, _ *Device) (func(), func()) {
			var v any
			var err error
			return func() { v, err = svc.SetSetting(protocol.SettingForceScale, 0.5) },
				func() {
					if err != nil || v != 0.5 || svc.Settings().ForceScale != 0.5 {
						t.Fatalf("set force_scale: %v %v, in force %v", v, err, svc.Settings().ForceScale)
					}
				}
		}},
		{"device config write", "save", storeName(protocol.TypeArm, armID), func(t *testing.T, svc *Service, arm *Device) (func(), func()) {
			want := protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5}
			var err error
			return func() { _, err = svc.SetEntry(arm, 0, want) },
				func() {
					if err != nil {
						t.Fatal(err)
					}
					// Asked after the write: answered after it, with it.
					if got, err := svc.Entry(arm, 0, protocol.KeyGravityCompensation); err != nil || got != want {
						t.Fatalf("read back %v (%v), want %v", got, err, want)
					}
				}
		}},
		{"added device's config read", "load", storeName(protocol.TypeArm, simArm(5).Info().ID), func(t *testing.T, svc *Service, _ *Device) (func(), func()) {
			var d *Device
			var err error
			return func() { d, err = svc.AddDevice(simArm(5), false) },
				func() {
					if err != nil || svc.Devices().Find(protocol.TypeArm, d.ID) != d {
						t.Fatalf("added %v (%v); not listed", d, err)
					}
				}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var held *heldStore
			svc := startWith(t, Options{StateDir: t.TempDir(), RequestTimeout: 10 * time.Second, WrapStore: func(s Store) Store {
				held = newHeldStore(s, c.op, c.doc)
				return held
			}})
			arm := addArm(t, svc, simArm(0))
			other := addArm(t, svc, simArm(1))
			t.Cleanup(func() {
				select {
				case <-held.release:
				default:
					close(held.release) // before the shutdown, should the test fail
				}
			})
			request, check := c.stall(t, svc, arm)
			done := pending(request)
			held.waitEntered(t)

			added := addArm(t, svc, simArm(2))
			if svc.Devices().Find(protocol.TypeArm, added.ID) != added {
				t.Fatal("a device added while the disk stalled is not listed")
			}
			sess, sink := open(t, svc, nil)
			if _, err := svc.SetEntry(other, sess.ID, protocol.ForceGate{Gain: 0.3}); err != nil {
				t.Fatalf("another device's config while the disk stalled: %v", err)
			}
			exchange(t, sess, sink, `{}`)
			stillPending(t, done, c.name)

			close(held.release)
			waitDone(t, done, c.name)
			check()
		})
	}
}

// closeHeldDriver is a simulated arm whose Close stalls until release is
// closed (a USB device that does not answer).
type closeHeldDriver struct {
	*fakeDriver
	closing chan struct{}
	release chan struct{}
}

func (d *closeHeldDriver) Close() error {
	close(d.closing)
	<-d.release
	return d.fakeDriver.Close()
}

// A failed device whose driver takes its time to close is unlisted at
// once, and the registry goes on meanwhile; it leaves (device-disconnected,
// OnDeviceLost) once its driver is closed, and the same device added again
// meanwhile appears after that, never alongside it.
func TestRemovalWaitsOffTheRegistry(t *testing.T) {
	var lost atomic.Int64
	svc := startWith(t, Options{OnDeviceLost: func(hw.Info) { lost.Add(1) }})
	drv := &closeHeldDriver{fakeDriver: &fakeDriver{Arm: simArm(0)}, closing: make(chan struct{}), release: make(chan struct{})}
	arm := addArm(t, svc, drv)
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(drv.release) }) }) // before the shutdown, should the test fail
	drv.panicking.Store(true)
	select {
	case <-drv.closing:
	case <-time.After(patience):
		t.Fatalf("the failed device's driver was not closed within %v", patience)
	}
	if svc.Devices().Find(protocol.TypeArm, arm.ID) != nil {
		t.Fatal("a device being removed is still listed")
	}
	if drv.halts.Load() == 0 {
		t.Fatal("the failed device was not halted before its driver was closed")
	}
	addArm(t, svc, simArm(1))
	var againErr error
	again := pending(func() { _, againErr = svc.AddDevice(simArm(0), false) })
	sess, sink := open(t, svc, nil)
	exchange(t, sess, sink, `{}`)
	if n := countEvents(t, svc, event.NameDeviceDisconnected, arm.ID); n != 0 || lost.Load() != 0 {
		t.Fatalf("the device left (%d events, %d rescans) before its driver was closed", n, lost.Load())
	}

	releaseOnce.Do(func() { close(drv.release) })
	waitDone(t, again, "adding the device again")
	if againErr != nil {
		t.Fatalf("adding the device again: %v", againErr)
	}
	page, err := svc.Activity().Recent(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range page.Events {
		if strings.Contains(string(e.Data), arm.ID) {
			order = append(order, e.Name)
		}
	}
	want := []string{event.NameDeviceConnected, event.NameDeviceFailed, event.NameDeviceDisconnected, event.NameDeviceConnected}
	if !slices.Equal(order, want) {
		t.Fatalf("events of %s: %v, want %v", arm.ID, order, want)
	}
	if lost.Load() != 1 {
		t.Fatalf("OnDeviceLost called %d times, want 1", lost.Load())
	}
}

// sharedIDDriver is a driver that reports the given 16-bit id and UUID, as
// two real arms may share an id.
type sharedIDDriver struct {
	hw.Driver
	id, uuid string
}

func (d *sharedIDDriver) Info() hw.Info {
	i := d.Driver.Info()
	i.ID, i.UUID = d.id, d.uuid
	return i
}

func (d *sharedIDDriver) Configure(s hw.Settings) error { return d.Driver.(hw.Configurer).Configure(s) }

// An arm served on an id derived from its UUID (another arm has its
// 16-bit id) that comes back while its old connection is still leaving
// waits for it and gets the same derived id, with its stored config, as
// an arm on its own id does; it went on to the next free id, with the
// defaults.
func TestDerivedIDKeptWhenTheArmReturnsWhileLeaving(t *testing.T) {
	svc := startWith(t, Options{StateDir: t.TempDir()})
	addArm(t, svc, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
	held := &closeHeldDriver{fakeDriver: &fakeDriver{Arm: simArm(1)}, closing: make(chan struct{}), release: make(chan struct{})}
	b := addArm(t, svc, &sharedIDDriver{Driver: held, id: "0A0A", uuid: "uuid-b"})
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(held.release) }) }
	t.Cleanup(release) // before the shutdown, should the test fail
	if b.ID == "0A0A" {
		t.Fatal("two arms served on one id")
	}
	if _, err := svc.SetEntry(b, 0, protocol.ForceClamp{MaxForceN: 2}); err != nil {
		t.Fatal(err)
	}
	svc.RemoveDevice(b, errors.New("unplugged"))
	select {
	case <-held.closing:
	case <-time.After(patience):
		t.Fatalf("the unplugged arm's driver was not closed within %v", patience)
	}
	var again *Device
	var againErr error
	done := pending(func() {
		again, againErr = svc.AddDevice(&sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"}, false)
	})
	select {
	case <-done: // added without waiting: the id must still be its own
	case <-time.After(200 * time.Millisecond): // waiting for the old connection, as it should
		release()
		waitDone(t, done, "adding the arm again")
	}
	release()
	if againErr != nil {
		t.Fatal(againErr)
	}
	if again.ID != b.ID {
		t.Fatalf("the arm came back as %s, was %s", again.ID, b.ID)
	}
	wantForceClamp(t, svc, again, protocol.ForceClamp{MaxForceN: 2}, "the arm that came back", "its stored 2 N")
}

// Two arms that share a 16-bit id keep their ids, and so their stored
// config, across a restart that finds them in the other order: the arm
// served on a derived id gets it back although its 16-bit id is free, and
// the other arm then finds its own id free. They swapped ids, and each
// loaded the other's config (a 2 N clamp became the other arm's 10 N).
func TestDerivedIDRememberedAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	a := func() hw.Driver { return &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"} }
	b := func() hw.Driver { return &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"} }
	clampOf := func(t *testing.T, svc *Service, d *Device) protocol.Entry {
		t.Helper()
		e, err := svc.Entry(d, 0, protocol.KeyForceClamp)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	first := startWith(t, Options{StateDir: dir})
	armA := addArm(t, first, a())
	armB := addArm(t, first, b())
	if armA.ID != "0A0A" || armB.ID == "0A0A" {
		t.Fatalf("first start: A on %s, B on %s; want A on 0A0A, B on a derived id", armA.ID, armB.ID)
	}
	if _, err := first.SetEntry(armA, 0, protocol.ForceClamp{MaxForceN: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := first.SetEntry(armB, 0, protocol.ForceClamp{MaxForceN: 2}); err != nil {
		t.Fatal(err)
	}
	derived := armB.ID
	shutdown(t, first)

	for _, c := range []struct {
		name  string
		order []string // the arms plugged in, in the order found
	}{
		{"B first", []string{"b", "a"}},
		{"only B", []string{"b"}},
		{"A first", []string{"a", "b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := startWith(t, Options{StateDir: dir})
			defer shutdown(t, svc)
			for _, which := range c.order {
				want, clamp, drv := derived, protocol.Entry(protocol.ForceClamp{MaxForceN: 2}), b()
				if which == "a" {
					want, clamp, drv = "0A0A", protocol.ForceClamp{MaxForceN: 7}, a()
				}
				d := addArm(t, svc, drv)
				if d.ID != want {
					t.Fatalf("arm %s came back as %s, want %s", which, d.ID, want)
				}
				if got := clampOf(t, svc, d); got != clamp {
					t.Fatalf("arm %s's force_clamp is %+v, want its own %+v", which, got, clamp)
				}
			}
		})
	}
}

// A remembered id is no other arm's, even while its arm is away: an arm
// whose own 16-bit id is another UUID's remembered id is served on a
// derived id, so that it never loads that arm's stored config.
func TestRememberedIDNotGivenToAnotherArm(t *testing.T) {
	dir := t.TempDir()
	first := startWith(t, Options{StateDir: dir})
	addArm(t, first, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
	b := addArm(t, first, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
	if _, err := first.SetEntry(b, 0, protocol.ForceClamp{MaxForceN: 2}); err != nil {
		t.Fatal(err)
	}
	shutdown(t, first)

	svc := startWith(t, Options{StateDir: dir})
	c := addArm(t, svc, &sharedIDDriver{Driver: simArm(2), id: b.ID, uuid: "uuid-c"})
	if c.ID == b.ID {
		t.Fatalf("arm C was given %s, arm B's remembered id", c.ID)
	}
	again := addArm(t, svc, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
	if again.ID != b.ID {
		t.Fatalf("arm B came back as %s, want %s", again.ID, b.ID)
	}
}

// A remembered-ids document that cannot be read does not stop the
// service: ids are first-come, and the document is left as it is (a
// corrupt one is moved aside by the store and written afresh).
func TestUnreadableRememberedIDs(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, path string)
		// kept: the planted document must still be there afterwards.
		kept bool
	}{
		{"corrupt", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a directory in its place", func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, idsDocument+".json")
			c.plant(t, path)
			svc := startWith(t, Options{StateDir: dir})
			a := addArm(t, svc, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
			b := addArm(t, svc, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
			if a.ID != "0A0A" || b.ID == "0A0A" {
				t.Fatalf("A on %s, B on %s; want A on 0A0A, B on a derived id", a.ID, b.ID)
			}
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.IsDir() != c.kept {
				t.Fatalf("the document is a directory: %v, want %v", fi.IsDir(), c.kept)
			}
		})
	}
}

// removeArm unplugs d and waits until its id is free again (its driver
// closed and the device-disconnected event sent).
func removeArm(t *testing.T, svc *Service, d *Device) {
	t.Helper()
	svc.RemoveDevice(d, errors.New("unplugged"))
	hwtest.Eventually(t, patience, d.Name+" "+d.ID+" leaving", func() bool {
		return countEvents(t, svc, event.NameDeviceDisconnected, d.ID) > 0
	})
}

// A derived id is never the id of an arm the service knows but that is not
// plugged in now: one with stored config (from an earlier run), or one
// served earlier in this run. The derived arm took that id and loaded the
// absent arm's config; when the absent arm came back, its own id was
// taken (or remembered for the other), so it was moved to a derived id of
// its own and lost its config for good. The test forces the collision: the
// absent arm's 16-bit id is the one arm B's UUID derives to.
func TestDerivedIDAvoidsAnAbsentArmsID(t *testing.T) {
	collides := hw.DerivedID(hw.KindArm, "uuid-b", func(string) bool { return false })
	if collides == "0A0A" {
		t.Fatal("pick another shared id: uuid-b derives to it")
	}
	for _, c := range []struct {
		name    string
		restart bool // the absent arm was served by an earlier run
		stored  bool // it has a stored force_clamp
	}{
		{"stored config, earlier run", true, true},
		{"stored config, this run", false, true},
		{"nothing stored, this run", false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			svc := startWith(t, Options{StateDir: dir})
			k := addArm(t, svc, &sharedIDDriver{Driver: simArm(2), id: collides, uuid: "uuid-k"})
			if c.stored {
				if _, err := svc.SetEntry(k, 0, protocol.ForceClamp{MaxForceN: 3}); err != nil {
					t.Fatal(err)
				}
			}
			if c.restart {
				shutdown(t, svc)
				svc = startWith(t, Options{StateDir: dir})
			} else {
				removeArm(t, svc, k)
			}
			addArm(t, svc, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
			b := addArm(t, svc, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
			if b.ID == collides || b.ID == "0A0A" {
				t.Fatalf("arm B was given %s, arm K's own id (or A's)", b.ID)
			}
			wantForceClamp(t, svc, b, protocol.DefaultDeviceConfig().ForceClamp, "arm B", "the default")
			back := addArm(t, svc, &sharedIDDriver{Driver: simArm(2), id: collides, uuid: "uuid-k"})
			if back.ID != collides {
				t.Fatalf("arm K came back as %s, want its own %s", back.ID, collides)
			}
			if c.stored {
				wantForceClamp(t, svc, back, protocol.ForceClamp{MaxForceN: 3}, "arm K", "its stored 3 N")
			}
		})
	}
}

// A device that reports no UUID is not served on an id remembered for
// another device: it loaded that device's stored config, and the device,
// back, found its id held, was served on its own 16-bit id and forgot its
// remembered id, its config left behind under the other.
func TestDeviceWithoutUUIDNotServedOnARememberedID(t *testing.T) {
	dir := t.TempDir()
	first := startWith(t, Options{StateDir: dir})
	addArm(t, first, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
	b := addArm(t, first, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
	if _, err := first.SetEntry(b, 0, protocol.ForceClamp{MaxForceN: 2}); err != nil {
		t.Fatal(err)
	}
	shutdown(t, first)

	svc := startWith(t, Options{StateDir: dir})
	n := addArm(t, svc, &sharedIDDriver{Driver: simArm(2), id: b.ID, uuid: ""})
	if n.ID == b.ID {
		t.Fatalf("a device without a UUID was given %s, arm B's remembered id", n.ID)
	}
	wantForceClamp(t, svc, n, protocol.DefaultDeviceConfig().ForceClamp, "the device without a UUID", "the default")
	again := addArm(t, svc, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
	if again.ID != b.ID {
		t.Fatalf("arm B came back as %s, want %s", again.ID, b.ID)
	}
	wantForceClamp(t, svc, again, protocol.ForceClamp{MaxForceN: 2}, "arm B", "its stored 2 N")
}

// A device without a UUID that got a derived id keeps it, and its stored
// config, across a plain restart with the same devices plugged in the same
// order. Its derived id had a stored document nobody had been served with
// yet on the restarted service, so it counted as another device's and the
// device was moved on (1CD9 became 1CDA), its 2 N force clamp left behind.
// It still never takes an id whose stored config is an absent arm's.
func TestDeviceWithoutUUIDKeepsItsDerivedIDAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	first := startWith(t, Options{StateDir: dir})
	addArm(t, first, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
	x := addArm(t, first, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-x"})
	removeArm(t, first, x)
	q := addArm(t, first, &sharedIDDriver{Driver: simArm(2), id: x.ID, uuid: ""})
	if q.ID == x.ID {
		t.Fatalf("the device without a UUID was given %s, arm X's remembered id", q.ID)
	}
	if _, err := first.SetEntry(q, 0, protocol.ForceClamp{MaxForceN: 2}); err != nil {
		t.Fatal(err)
	}
	shutdown(t, first)

	svc := startWith(t, Options{StateDir: dir})
	addArm(t, svc, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
	again := addArm(t, svc, &sharedIDDriver{Driver: simArm(2), id: x.ID, uuid: ""})
	if again.ID != q.ID {
		t.Fatalf("the device without a UUID came back as %s, want %s", again.ID, q.ID)
	}
	wantForceClamp(t, svc, again, protocol.ForceClamp{MaxForceN: 2}, "the arm", "its stored 2 N")
}

// A device without a UUID is not served on the id of an absent arm with
// stored config, even after a restart: the config is that arm's.
func TestDeviceWithoutUUIDAvoidsAnAbsentArmsStoredID(t *testing.T) {
	collides := hw.DerivedID(hw.KindArm, "", func(string) bool { return false })
	dir := t.TempDir()
	first := startWith(t, Options{StateDir: dir})
	k := addArm(t, first, &sharedIDDriver{Driver: simArm(2), id: collides, uuid: "uuid-k"})
	if _, err := first.SetEntry(k, 0, protocol.ForceClamp{MaxForceN: 3}); err != nil {
		t.Fatal(err)
	}
	addArm(t, first, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
	x := addArm(t, first, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-x"})
	shutdown(t, first)

	// The device without a UUID reports arm X's remembered id: it is
	// served on a derived id, which must not be arm K's.
	svc := startWith(t, Options{StateDir: dir})
	n := addArm(t, svc, &sharedIDDriver{Driver: simArm(1), id: x.ID, uuid: ""})
	if n.ID == collides || n.ID == x.ID {
		t.Fatalf("the device without a UUID was given %s, arm K's own id (or X's remembered one)", n.ID)
	}
	back := addArm(t, svc, &sharedIDDriver{Driver: simArm(2), id: collides, uuid: "uuid-k"})
	if back.ID != collides {
		t.Fatalf("arm K came back as %s, want %s", back.ID, collides)
	}
	wantForceClamp(t, svc, back, protocol.ForceClamp{MaxForceN: 3}, "arm K", "its stored 3 N")
}

// An arm with a UUID on a derived id gets it back, and its stored config,
// when the remembered-ids document is lost (corrupt and moved aside, or
// gone): its stored config says whose it is. It was moved on to the next
// id (5F6C became 5F6D) and lost its config.
func TestDerivedIDKeptWhenTheRememberedIDsAreLost(t *testing.T) {
	for _, c := range []struct {
		name string
		lose func(t *testing.T, path string)
	}{
		{"corrupt", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"gone", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			first := startWith(t, Options{StateDir: dir})
			addArm(t, first, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
			b := addArm(t, first, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
			if _, err := first.SetEntry(b, 0, protocol.ForceClamp{MaxForceN: 2}); err != nil {
				t.Fatal(err)
			}
			shutdown(t, first)
			c.lose(t, filepath.Join(dir, idsDocument+".json"))

			svc := startWith(t, Options{StateDir: dir})
			addArm(t, svc, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
			again := addArm(t, svc, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
			if again.ID != b.ID {
				t.Fatalf("arm B came back as %s, want %s", again.ID, b.ID)
			}
			wantForceClamp(t, svc, again, protocol.ForceClamp{MaxForceN: 2}, "arm B", "its stored 2 N")
		})
	}
}

// wantForceClamp fails t unless d's force_clamp on svc is want; who names
// the device and desc the value wanted in the message.
func wantForceClamp(t *testing.T, svc *Service, d *Device, want protocol.ForceClamp, who, desc string) {
	t.Helper()
	if e, err := svc.Entry(d, 0, protocol.KeyForceClamp); err != nil || e != want {
		t.Fatalf("%s's force_clamp is %+v (%v), want %s", who, e, err, desc)
	}
}

// The ids the registry keeps for local devices, as a lab gateway reads
// them (Service.LocalIDHolders), follow every device served, remembered
// and removed, one by one (they are no longer rebuilt whole on each add:
// heldIDs), across a restart too: each id with the UUID it is kept for.
func TestLocalIDHoldersFollowTheRegistry(t *testing.T) {
	dir := t.TempDir()
	want := func(t *testing.T, svc *Service, want map[string]string) {
		t.Helper()
		if got := svc.LocalIDHolders(hw.KindArm); !maps.Equal(got, want) {
			t.Fatalf("ids kept for local arms %v, want %v", got, want)
		}
	}
	svc := startWith(t, Options{StateDir: dir})
	want(t, svc, nil)
	a := addArm(t, svc, &sharedIDDriver{Driver: simArm(0), id: "0A0A", uuid: "uuid-a"})
	want(t, svc, map[string]string{"0A0A": "uuid-a"})
	b := addArm(t, svc, &sharedIDDriver{Driver: simArm(1), id: "0A0A", uuid: "uuid-b"})
	want(t, svc, map[string]string{"0A0A": "uuid-a", b.ID: "uuid-b"})
	c := addArm(t, svc, &sharedIDDriver{Driver: simArm(2), id: "0C0C", uuid: "uuid-c"})
	want(t, svc, map[string]string{a.ID: "uuid-a", b.ID: "uuid-b", c.ID: "uuid-c"})
	svc.RemoveDevice(b, errors.New("unplugged"))
	hwtest.Eventually(t, patience, "arm B leaving", func() bool { return svc.Devices().Find(b.Type, b.ID) == nil })
	want(t, svc, map[string]string{a.ID: "uuid-a", b.ID: "uuid-b", c.ID: "uuid-c"}) // absent, still kept
	if err := svc.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	// After a restart: B's remembered id; A's and C's ids have no stored
	// config that says whose, so they are kept only once served again.
	again := startWith(t, Options{StateDir: dir})
	want(t, again, map[string]string{b.ID: "uuid-b"})
	addArm(t, again, &sharedIDDriver{Driver: simArm(2), id: "0C0C", uuid: "uuid-c"})
	want(t, again, map[string]string{b.ID: "uuid-b", c.ID: "uuid-c"})
}

// An addition whose driver panics in the registry (its Info, while the
// registry takes the addition up, or as it spawns the device) is answered at
// once with an error, not at the end of the caller's window (RequestTimeout
// plus a minute), lists nothing, and holds nothing: the same arm, opened
// again, is added.
func TestAdditionThatPanicsIsRefusedAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		panicAt int32 // the Info call that panics
		store   bool
	}{
		{"taken up", 1, true},
		{"spawned, after its config is read", 2, true},
		{"spawned, no state directory", 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{RequestTimeout: 2 * time.Second}
			if tc.store {
				o.StateDir = t.TempDir()
			}
			svc := startWith(t, o)
			errc := make(chan error, 1)
			go func() {
				_, err := svc.AddDevice(&infoPanicDriver{Driver: simArm(0), at: tc.panicAt}, false)
				errc <- err
			}()
			select {
			case err := <-errc:
				if err == nil || !strings.Contains(err.Error(), "info panicked") {
					t.Fatalf("AddDevice of a driver that panics: %v, want an error naming the panic", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("AddDevice of a driver that panics not answered within 30 s")
			}
			if n := len(svc.Devices().All()); n != 0 {
				t.Fatalf("%d devices listed after the panic, want 0", n)
			}
			waitSupervision(t, svc, "", "ResumeDirective") // recorded as the registry's supervisor does
			d := addArm(t, svc, simArm(0))
			if d.ID != simArm(0).Info().ID {
				t.Fatalf("the arm opened again was added on id %s, want its own %s", d.ID, simArm(0).Info().ID)
			}
			if n := countEvents(t, svc, event.NameDeviceConnected, ""); n != 1 {
				t.Fatalf("%d device-connected events, want 1 (the arm opened again)", n)
			}
		})
	}
}

// A driver that panics is the only addition refused for it: another arm
// with the same 16-bit id (another UUID) added while the first waits for
// its stored config is added, on an id derived from its UUID. The registry
// asked the waiting addition's driver for its Info as it took the other
// up, so the other one was refused with the first one's panic.
func TestAdditionThatPanicsRefusesNoOther(t *testing.T) {
	var held *heldStore
	svc := startWith(t, Options{StateDir: t.TempDir(), RequestTimeout: 2 * time.Second, WrapStore: func(s Store) Store {
		held = newHeldStore(s, "load", storeName(protocol.TypeArm, simArm(0).Info().ID))
		return held
	}})
	panicking := &infoPanicDriver{Driver: simArm(0), at: 2, after: true}
	var panickingErr error
	first := pending(func() { _, panickingErr = svc.AddDevice(panicking, false) })
	held.waitEntered(t) // its config read holds it among the additions
	sameID := simArm(0).Info().ID
	other, err := svc.AddDevice(&sharedIDDriver{Driver: simArm(1), id: sameID, uuid: "uuid-other"}, false)
	if err != nil {
		t.Fatalf("another arm with the same id added while the first waits: %v", err)
	}
	if other.ID == sameID {
		t.Fatalf("the other arm was served on the first one's id %s, want one derived from its UUID", sameID)
	}
	close(held.release)
	waitDone(t, first, "the addition that panics")
	if panickingErr == nil || !strings.Contains(panickingErr.Error(), "info panicked") {
		t.Fatalf("the addition that panics: %v, want an error naming the panic", panickingErr)
	}
	if all := svc.Devices().All(); len(all) != 1 || all[0] != other {
		t.Fatalf("listed %v, want the other arm alone", all)
	}
}

// infoPanicDriver panics on its at-th call of Info (and every later one,
// with after).
type infoPanicDriver struct {
	hw.Driver
	at    int32
	after bool
	calls atomic.Int32
}

func (d *infoPanicDriver) Info() hw.Info {
	if n := d.calls.Add(1); n == d.at || d.after && n > d.at {
		panic("info panicked")
	}
	return d.Driver.Info()
}
