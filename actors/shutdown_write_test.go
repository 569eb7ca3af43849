package actors

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/actors/store/storetest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
)

// startUnowned starts a service on dir whose shutdown the test does
// itself (startWith's cleanup would fail on a shutdown's deliberate error),
// with wrap as its WrapStore.
func startUnowned(t *testing.T, dir string, within time.Duration, wrap func(Store) Store) *Service {
	t.Helper()
	svc, err := Start(Options{StateDir: dir, WriteTimeout: within, WrapStore: wrap, Log: zerolog.Nop(), SimShards: 1})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// actorGone waits until svc's actor system no longer has the device's actor.
func actorGone(t *testing.T, svc *Service, d *Device) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		if _, ok := svc.system.ProcessRegistry.Get(d.pid); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the device actor of %s still running %v into the shutdown", d.ID, patience)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A config write past its commit point when the service shuts down lands
// (the shutdown waits for it): its POST is answered 200, as the value is
// stored, not 503 "left". When the disk does not confirm it within the
// write timeout, the answer is 503 naming the shutdown and saying the
// value may be stored.
func TestShutdownAnswersAWritePastItsCommitPointWithWhatLanded(t *testing.T) {
	armID := simArm(0).Info().ID
	set := protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5}
	for _, tc := range []struct {
		name     string
		within   time.Duration
		landsNow bool // released once the device actor stopped, else only after the answer
	}{
		{"lands within the wait", MaxWriteTimeout, true},
		{"not confirmed within the wait", 300 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			held := storetest.New()
			held.Hold(storeName(protocol.TypeArm, armID))
			release := held.Release
			defer release()
			svc := startUnowned(t, dir, tc.within, func(s Store) Store { return held.Over(s.(*store.Store)) })
			arm := addArm(t, svc, simArm(0))
			answered := make(chan error, 1)
			go func() { _, err := svc.SetEntry(arm, 0, set); answered <- err }()
			select {
			case <-held.Entered():
			case <-time.After(patience):
				t.Fatal("the write never reached its commit point")
			}
			stopped := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				stopped <- svc.Shutdown(ctx)
			}()
			actorGone(t, svc, arm)
			if tc.landsNow {
				release()
			}
			var err error
			select {
			case err = <-answered:
			case <-time.After(patience):
				t.Fatal("the write still unanswered")
			}
			release()
			<-stopped
			if tc.landsNow {
				if err != nil {
					t.Fatalf("a write that landed during the shutdown answered %v, want its value", err)
				}
			} else {
				var perr *protocol.Error
				if !errors.As(err, &perr) || perr.Code != protocol.CodeUnavailable || !strings.Contains(perr.Message, "shut down") || strings.Contains(perr.Message, "left") {
					t.Fatalf("a write the disk did not confirm within the wait answered %v, want %s naming the shutdown", err, protocol.CodeUnavailable)
				}
			}
			again := startWith(t, Options{StateDir: dir})
			arm = addArm(t, again, simArm(0))
			if got, err := again.Entry(arm, 0, protocol.KeyGravityCompensation); err != nil || got != set {
				t.Fatalf("after a restart: %v (%v), want %v (the write was past its commit point)", got, err, set)
			}
		})
	}
}

// A settings write not past its commit point when the service shuts down
// is called off: answered 503, it does not land once the disk answers, and
// the next run has the old value. It was answered 503 "read it back" and
// left to land whenever the disk took it.
func TestShutdownCallsAHungSettingsWriteOff(t *testing.T) {
	dir := t.TempDir()
	hung := &hungFsyncStore{name: "settings", entered: make(chan struct{}, 1), release: make(chan struct{}), returned: make(chan error, 1)}
	var once sync.Once
	release := func() { once.Do(func() { close(hung.release) }) }
	defer release()
	svc := startUnowned(t, dir, MaxWriteTimeout, func(s Store) Store {
		hung.Store, hung.disk = s, s.(*store.Store)
		return hung
	})
	before := svc.Settings().ForceScale
	answered := make(chan error, 1)
	go func() { _, err := svc.SetSetting(protocol.SettingForceScale, 0.5); answered <- err }()
	select {
	case <-hung.entered:
	case <-time.After(patience):
		t.Fatal("the settings write never reached the disk")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_ = svc.Shutdown(ctx) // its error names the write still on the disk
	select {
	case err := <-answered:
		if errCode(err) != protocol.CodeUnavailable {
			t.Fatalf("a settings write hung as the service shut down answered %v, want %s", err, protocol.CodeUnavailable)
		}
	case <-time.After(patience):
		t.Fatal("the settings write still unanswered after the shutdown")
	}
	release()
	wantCalledOff(t, hung)
	again := startWith(t, Options{StateDir: dir})
	if got := again.Settings().ForceScale; got != before {
		t.Fatalf("after a restart: force scale %v, want %v (the write was answered 503)", got, before)
	}
}

// heldLeavingWrite is an arm that left while a config write of its
// document was held past its commit point, and whose addition, back, was
// asked for right after.
type heldLeavingWrite struct {
	svc      *Service
	dir      string
	set      protocol.GravityCompensation // the value being written
	answered chan error                   // the write's answer
	added    chan addition                // the addition's answer
	release  func()                       // lets the disk take the write
}

type addition struct {
	dev *Device
	err error
}

// leaveDuringAHeldWrite starts a service writing its config within,
// sets an arm's gravity compensation, removes the arm once the write is
// past its commit point and held there, and adds the arm again.
func leaveDuringAHeldWrite(t *testing.T, within time.Duration) *heldLeavingWrite {
	t.Helper()
	armID := simArm(0).Info().ID
	w := &heldLeavingWrite{dir: t.TempDir(), set: protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5},
		answered: make(chan error, 1), added: make(chan addition, 1)}
	held := storetest.New()
	held.Hold(storeName(protocol.TypeArm, armID))
	w.release = held.Release
	w.svc = startWith(t, Options{StateDir: w.dir, WriteTimeout: within, WrapStore: func(s Store) Store { return held.Over(s.(*store.Store)) }})
	t.Cleanup(w.release) // before the service's shutdown (cleanups run last first), which waits for the write
	arm := addArm(t, w.svc, simArm(0))
	if got, err := w.svc.Entry(arm, 0, protocol.KeyGravityCompensation); err != nil || got == protocol.Entry(w.set) {
		t.Fatalf("the arm starts with %v (%v): pick a value it does not have", got, err)
	}
	go func() { _, err := w.svc.SetEntry(arm, 0, w.set); w.answered <- err }()
	select {
	case <-held.Entered():
	case <-time.After(patience):
		t.Fatal("the write never reached its commit point")
	}
	removeArm(t, w.svc, arm)
	go func() { d, err := w.svc.AddDevice(simArm(0), false); w.added <- addition{d, err} }()
	return w
}

// answer waits for the write's answer.
func (w *heldLeavingWrite) answer(t *testing.T) error {
	t.Helper()
	select {
	case err := <-w.answered:
		return err
	case <-time.After(patience):
		t.Fatal("the write still unanswered")
	}
	return nil
}

// back waits for the arm to be back.
func (w *heldLeavingWrite) back(t *testing.T) *Device {
	t.Helper()
	select {
	case a := <-w.added:
		if a.err != nil {
			t.Fatal(a.err)
		}
		return a.dev
	case <-time.After(patience):
		t.Fatal("the device never came back")
	}
	return nil
}

// changeThenRestart makes the next change of the arm that came back (its
// document is written from what it has in force), restarts the service on
// the same directory and answers the gravity compensation in force then.
func (w *heldLeavingWrite) changeThenRestart(t *testing.T, back *Device) protocol.Entry {
	t.Helper()
	if _, err := w.svc.SetEntry(back, 0, protocol.Handedness("left")); err != nil {
		t.Fatal(err)
	}
	shutdown(t, w.svc)
	next := startWith(t, Options{StateDir: w.dir})
	arm := addArm(t, next, simArm(0))
	got, err := next.Entry(arm, 0, protocol.KeyGravityCompensation)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// A device that leaves while its config write is past its commit point,
// and comes back before the write lands, is re-added only once the write
// has returned: it then has the value its leaving actor answered 200, and
// its next change does not store the old one over it (review35: the
// device came back with the old value, and after a restart the 200'd value
// was gone).
func TestDeviceBackDuringItsLeavingWriteHasTheValueAnswered(t *testing.T) {
	w := leaveDuringAHeldWrite(t, MaxWriteTimeout)
	// Before the fix the device came back at once, with the write still
	// held; with it, the addition waits for the write. Either way the
	// write is released after this, so the window only lets the old way
	// show itself; it decides nothing.
	select {
	case a := <-w.added:
		w.added <- a
	case <-time.After(200 * time.Millisecond):
	}
	w.release()
	back := w.back(t)
	if err := w.answer(t); err != nil {
		t.Fatalf("the write that landed was answered %v, want its value", err)
	}
	if got, err := w.svc.Entry(back, 0, protocol.KeyGravityCompensation); err != nil || got != w.set {
		t.Errorf("the device that came back has %v (%v), want the %v its write was answered 200 for", got, err, w.set)
	}
	if got := w.changeThenRestart(t, back); got != w.set {
		t.Errorf("after a restart: %v, want the %v answered 200", got, w.set)
	}
}

// A device that leaves while its config write is past its commit point,
// and whose disk holds that write past the write timeout, comes back only
// once the disk has answered: the write's 503 says "read it back", and
// what it reads back is what a restart has, and what its next change
// keeps (review36: re-added at the 503, it read its document before the
// held write renamed it in, so it read back the old value, a restart had
// the new one, and its next change stored the old one over it).
func TestDeviceBackAfterItsLeavingWriteTimedOutReadsBackWhatARestartHas(t *testing.T) {
	w := leaveDuringAHeldWrite(t, 300*time.Millisecond)
	if errCode(w.answer(t)) != protocol.CodeUnavailable {
		t.Fatal("the write held past the write timeout was not answered 503")
	}
	// The window lets the old way show itself (the device back at the
	// 503); the read back below decides.
	select {
	case a := <-w.added:
		t.Errorf("the device came back (%v) while its write was still on the disk", a.err)
		w.added <- a
	case <-time.After(200 * time.Millisecond):
	}
	w.release()
	back := w.back(t)
	readBack, err := w.svc.Entry(back, 0, protocol.KeyGravityCompensation)
	if err != nil {
		t.Fatal(err)
	}
	if after := w.changeThenRestart(t, back); after != readBack || readBack != w.set {
		t.Errorf("read back %v once back, %v after its next change and a restart; want the %v the write landed", readBack, after, w.set)
	}
}

// An arm back while the config write it left with is still on the disk
// waits for that write; a caller that gives up waiting (62 s by default)
// closes the driver it asked with and retries with a new one. Once the
// disk answers, the retry is what is added: the given-up addition stayed
// queued, was added first with its closed driver, and the retry was
// refused as a device already connected (land36).
func TestAnAdditionWhoseCallerGaveUpIsNotAdded(t *testing.T) {
	armID := simArm(0).Info().ID
	held := storetest.New()
	held.Hold(storeName(protocol.TypeArm, armID))
	svc := startWith(t, Options{StateDir: t.TempDir(), WriteTimeout: 300 * time.Millisecond, WrapStore: func(s Store) Store { return held.Over(s.(*store.Store)) }})
	t.Cleanup(held.Release) // before the service's shutdown, which waits for the write
	arm := addArm(t, svc, simArm(0))
	answered := pending(func() {
		_, _ = svc.SetEntry(arm, 0, protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5})
	})
	select {
	case <-held.Entered():
	case <-time.After(patience):
		t.Fatal("the write never reached its commit point")
	}
	removeArm(t, svc, arm)

	giveUpAddingArm(t, svc, 200*time.Millisecond, func() {}, "the arm's leaving write was still on the disk")
	retry := retryAddingArm(t, svc, held.Release)
	if listed := svc.Devices().Find(protocol.TypeArm, armID); listed != retry {
		t.Fatalf("the arm listed is %p, not the retry's %p", listed, retry)
	}
	waitDone(t, answered, "the leaving write")
}

// giveUpAddingArm asks for simArm(0) with a wait of within, calls taken,
// and is the caller whose wait ends: it wants an error (the addition held
// up by what heldBy says), then closes the driver as the hardware watcher
// and the gateway do.
func giveUpAddingArm(t *testing.T, svc *Service, within time.Duration, taken func(), heldBy string) {
	t.Helper()
	gaveUp, first := simArm(0), make(chan error, 1)
	svc.addDeviceThen(&addDevice{driver: gaveUp}, within, func(_ *Device, err error) { first <- err })
	taken()
	select {
	case err := <-first:
		if err == nil {
			t.Fatalf("the addition was answered while %s", heldBy)
		}
		_ = gaveUp.Close()
	case <-time.After(patience):
		t.Fatal("the caller's wait never ended")
	}
}

// retryAddingArm asks for a new simArm(0), calls release (the disk
// answers), and returns the device the retry is answered with, which must
// drive the retry's arm.
func retryAddingArm(t *testing.T, svc *Service, release func()) *Device {
	t.Helper()
	retried := simArm(0)
	type outcome struct {
		dev *Device
		err error
	}
	retry := make(chan outcome, 1)
	svc.AddDeviceThen(retried, false, func(d *Device, err error) { retry <- outcome{d, err} })
	release()
	select {
	case o := <-retry:
		if o.err != nil {
			t.Fatalf("the retry was refused (%v); want it added, the given-up addition called off", o.err)
		}
		if o.dev.rt.Driver() != retried {
			t.Fatal("the retry was answered with a device that does not drive its arm")
		}
		return o.dev
	case <-time.After(patience):
		t.Fatal("the retry was never answered")
	}
	return nil
}

// heldReads is a state directory whose reads of one document hang, as a
// disk that stops answering holds them, from Hold until Release.
type heldReads struct {
	*store.Store
	name    string
	holding atomic.Bool
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func newHeldReads(name string) *heldReads {
	return &heldReads{name: name, entered: make(chan struct{}, 1), release: make(chan struct{})}
}

func (h *heldReads) Load(name string, v any) (bool, error) {
	if name == h.name && h.holding.Load() {
		select {
		case h.entered <- struct{}{}:
		default: // the test waits for the first
		}
		<-h.release
	}
	return h.Store.Load(name, v)
}

func (h *heldReads) Entered() <-chan struct{} { return h.entered }

func (h *heldReads) Release() { h.once.Do(func() { close(h.release) }) }

// An addition the registry took up (its id given, its stored config being
// read) whose caller gives up because the disk hangs past its wait is not
// added: the caller closes its driver and retries, and the retry is what is
// listed once the disk answers. The given-up addition held the id until its
// read returned, so the retry was refused as a device already connected,
// and then the given-up one was listed with its closed driver (review43,
// the land36 symptom after the ticket of store37).
func TestAnAdditionWhoseCallerGaveUpAfterItWasTakenUpIsNotAdded(t *testing.T) {
	armID := simArm(0).Info().ID
	held := newHeldReads(storeName(protocol.TypeArm, armID))
	svc := startWith(t, Options{StateDir: t.TempDir(), WrapStore: func(s Store) Store {
		held.Store = s.(*store.Store)
		return held
	}})
	t.Cleanup(held.Release) // before the service's shutdown
	held.holding.Store(true)
	giveUpAddingArm(t, svc, 300*time.Millisecond, func() {
		select {
		case <-held.Entered():
		case <-time.After(patience):
			t.Fatal("the addition never read its stored config")
		}
	}, "its stored config was still being read")
	retry := retryAddingArm(t, svc, held.Release)
	// The given-up addition's read has returned too by now or soon: it
	// must not replace the retry, nor be listed beside it.
	deadline := time.Now().Add(patience)
	for {
		all := svc.Devices().All()
		if len(all) == 1 && all[0] == retry {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("listed %d devices, want only the retry's arm", len(all))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Whenever its caller's wait ends, an addition is listed only if it was
// answered with its device: a caller answered with an error closes its
// driver, which must not be listed, and its retry is added. The waits
// sweep the moments of an addition (queued, taken up, its config read,
// listed) on a disk that answers.
func TestAnAdditionIsListedOnlyIfItsCallerIsAnsweredWithIt(t *testing.T) {
	svc := startWith(t, Options{StateDir: t.TempDir()})
	armID := simArm(0).Info().ID
	gone := func(d *Device) {
		t.Helper()
		svc.RemoveDevice(d, errors.New("unplugged"))
		deadline := time.Now().Add(patience)
		for svc.Devices().Find(protocol.TypeArm, armID) != nil {
			if time.Now().After(deadline) {
				t.Fatal("the arm removed is still listed")
			}
			time.Sleep(time.Millisecond)
		}
	}
	listedWith := func(driver hw.Driver) bool {
		d := svc.Devices().Find(protocol.TypeArm, armID)
		return d != nil && d.rt.Driver() == driver
	}
	for i := range 60 {
		within := time.Duration(i%30) * 25 * time.Microsecond
		asked := simArm(0)
		dev, answered := svc.askAddition(&addDevice{driver: asked}, within)()
		if answered == nil {
			if !listedWith(asked) || dev.rt.Driver() != asked {
				t.Fatalf("wait %v: answered with a device, but not the one listed with the driver asked with", within)
			}
			gone(dev)
			continue
		}
		_ = asked.Close()
		retried := simArm(0)
		dev, err := svc.AddDevice(retried, false)
		if err != nil {
			t.Fatalf("wait %v: the retry after an addition answered %q was refused: %v", within, answered, err)
		}
		if !listedWith(retried) {
			t.Fatalf("wait %v: the retry was answered with a device, but another is listed", within)
		}
		gone(dev)
	}
}
