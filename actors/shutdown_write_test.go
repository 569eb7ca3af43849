package actors

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/protocol"
)

// pastCommitStore is the state directory with the durable writes of one
// document held just past their commit point (the value in its temp file,
// synced, the rename and the directory's fsync left), as a slow directory
// fsync holds them: once released, the write lands.
type pastCommitStore struct {
	Store
	disk    *store.Store
	name    string
	entered chan struct{}
	release chan struct{}
}

func (s *pastCommitStore) SaveGated(name string, v any, commit func() bool) error {
	if name != s.name {
		return s.disk.SaveGated(name, v, commit)
	}
	return s.disk.SaveGated(name, v, func() bool {
		if !commit() {
			return false
		}
		s.entered <- struct{}{}
		<-s.release
		return true
	})
}

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
			held := &pastCommitStore{name: storeName(protocol.TypeArm, armID), entered: make(chan struct{}, 1), release: make(chan struct{})}
			var once sync.Once
			release := func() { once.Do(func() { close(held.release) }) }
			defer release()
			svc := startUnowned(t, dir, tc.within, func(s Store) Store {
				held.Store, held.disk = s, s.(*store.Store)
				return held
			})
			arm := addArm(t, svc, simArm(0))
			answered := make(chan error, 1)
			go func() { _, err := svc.SetEntry(arm, 0, set); answered <- err }()
			select {
			case <-held.entered:
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

// A device that leaves while its config write is past its commit point,
// and comes back before the write lands, is re-added only once the write
// has returned: it then has the value its leaving actor answered 200, and
// its next change does not store the old one over it (review35: the
// device came back with the old value, and after a restart the 200'd value
// was gone).
func TestDeviceBackDuringItsLeavingWriteHasTheValueAnswered(t *testing.T) {
	armID := simArm(0).Info().ID
	dir := t.TempDir()
	held := &pastCommitStore{name: storeName(protocol.TypeArm, armID), entered: make(chan struct{}, 4), release: make(chan struct{})}
	var once sync.Once
	release := func() { once.Do(func() { close(held.release) }) }
	defer release()
	svc := startWith(t, Options{StateDir: dir, WriteTimeout: MaxWriteTimeout, WrapStore: func(s Store) Store {
		held.Store, held.disk = s, s.(*store.Store)
		return held
	}})
	arm := addArm(t, svc, simArm(0))
	set := protocol.GravityCompensation{Enabled: true, ScalingFactor: 0.5}
	answered := make(chan error, 1)
	go func() { _, err := svc.SetEntry(arm, 0, set); answered <- err }()
	select {
	case <-held.entered:
	case <-time.After(patience):
		t.Fatal("the write never reached its commit point")
	}
	removeArm(t, svc, arm)
	type addition struct {
		dev *Device
		err error
	}
	added := make(chan addition, 1)
	go func() { d, err := svc.AddDevice(simArm(0), false); added <- addition{d, err} }()
	// Before the fix the device came back at once, with the write still
	// held; with it, the addition waits for the write. Either way the
	// write is released after this, so the window only lets the old way
	// show itself; it decides nothing.
	var back addition
	select {
	case back = <-added:
	case <-time.After(200 * time.Millisecond):
	}
	release()
	if back.dev == nil && back.err == nil {
		select {
		case back = <-added:
		case <-time.After(patience):
			t.Fatal("the device never came back")
		}
	}
	if back.err != nil {
		t.Fatal(back.err)
	}
	var werr error
	select {
	case werr = <-answered:
	case <-time.After(patience):
		t.Fatal("the write still unanswered")
	}
	if werr != nil {
		t.Fatalf("the write that landed was answered %v, want its value", werr)
	}
	if got, err := svc.Entry(back.dev, 0, protocol.KeyGravityCompensation); err != nil || got != set {
		t.Errorf("the device that came back has %v (%v), want the %v its write was answered 200 for", got, err, set)
	}
	// Its next change writes its document from what it has in force.
	if _, err := svc.SetEntry(back.dev, 0, protocol.Handedness("left")); err != nil {
		t.Fatal(err)
	}
	shutdown(t, svc)
	next := startWith(t, Options{StateDir: dir})
	arm = addArm(t, next, simArm(0))
	if got, err := next.Entry(arm, 0, protocol.KeyGravityCompensation); err != nil || got != set {
		t.Errorf("after a restart: %v (%v), want the %v answered 200", got, err, set)
	}
}
