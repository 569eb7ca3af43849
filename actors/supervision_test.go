package actors

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// A device actor that panics restarts with its config and its loop as they
// were; the request it was handling is answered at once, unapplied.
func TestDeviceActorRestartKeepsConfigAndLoop(t *testing.T) {
	var boom atomic.Bool
	svc := startWith(t, Options{DeviceHook: func(*Device) {
		if boom.CompareAndSwap(true, false) {
			panic("test hook: device actor")
		}
	}})
	arm := addArm(t, svc, simArm(0))
	if _, err := svc.SetEntry(arm, 0, protocol.Handedness("left")); err != nil {
		t.Fatal(err)
	}
	ticks := arm.Stats().Ticks

	boom.Store(true)
	start := time.Now()
	_, err := svc.SetEntry(arm, 0, protocol.Handedness("right"))
	if errCode(err) != protocol.CodeInternal {
		t.Fatalf("the request the actor panicked on answered %v, want code internal", err)
	}
	if waited := time.Since(start); waited > svc.opts.RequestTimeout {
		t.Fatalf("the request the actor panicked on was answered after %v, past its deadline", waited)
	}
	waitSupervision(t, svc, "", "RestartDirective")

	e, err := svc.Entry(arm, 0, protocol.KeyHandedness)
	if err != nil || e != protocol.Handedness("left") {
		t.Fatalf("after the restart handedness is %v (%v), want left: the panicked request must not apply", e, err)
	}
	if svc.Devices().Find(arm.Type, arm.ID) != arm {
		t.Fatal("the restarted device left the inventory")
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the loop to keep ticking", func() error {
		if now := arm.Stats().Ticks; now <= ticks {
			return fmt.Errorf("the loop stopped at tick %d", now)
		}
		return nil
	})
	if n := countEvents(t, svc, event.NameDeviceFailed, arm.ID); n != 0 {
		t.Fatalf("%d device-failed events for a device actor that restarted", n)
	}
}

// A device actor that runs out of restarts halts its device, leaves every
// inventory, emits device-failed, and is re-created when the device is
// seen again.
func TestDeviceActorPastItsRestartBudgetIsGivenUp(t *testing.T) {
	var panicking atomic.Bool
	var lost atomic.Int64
	svc := startWith(t, Options{
		DeviceRestarts: 2,
		DeviceHook: func(*Device) {
			if panicking.Load() {
				panic("test hook: device actor keeps failing")
			}
		},
		OnDeviceLost: func(hw.Info) { lost.Add(1) },
	})
	drv := &fakeDriver{Arm: simArm(0)}
	arm := addArm(t, svc, drv)
	other := addArm(t, svc, simArm(1))
	sess, sink := open(t, svc, nil)
	exchange(t, sess, sink, forceMsg(arm.ID, 1.5))

	panicking.Store(true)
	for i := 0; i < 10 && svc.Devices().Find(arm.Type, arm.ID) != nil; i++ {
		_, err := svc.Entry(arm, 0, protocol.KeyHandedness)
		if err == nil {
			t.Fatal("a device actor that panics answered a request as if it had succeeded")
		}
	}
	data := waitEvent(t, svc, event.NameDeviceFailed, arm.ID)
	if r, _ := eventData(t, data, "reason").(string); r == "" {
		t.Fatalf("device-failed gives no reason: %s", data)
	}
	waitEvent(t, svc, event.NameDeviceDisconnected, arm.ID)
	waitSupervision(t, svc, "", "StopDirective")

	if svc.Devices().Find(arm.Type, arm.ID) != nil {
		t.Fatal("the failed device is still listed")
	}
	if f := exchange(t, sess, sink, `{}`); f.device(arm.ID) != nil || f.device(other.ID) == nil {
		t.Fatalf("the session's frame after the failure: %s", f.text)
	}
	if drv.halts.Load() == 0 || drv.closes.Load() == 0 {
		t.Fatalf("the failed device's driver was halted %d and closed %d times", drv.halts.Load(), drv.closes.Load())
	}
	if lost.Load() != 1 {
		t.Fatalf("OnDeviceLost called %d times, want 1 (discovery rescans the port)", lost.Load())
	}
	if _, err := svc.Entry(arm, 0, protocol.KeyHandedness); errCode(err) != protocol.CodeUnavailable {
		t.Fatalf("a request to the failed device answered %v, want unavailable", err)
	}

	// Seen again: a new device actor serves it.
	panicking.Store(false)
	again := addArm(t, svc, simArm(0))
	if again.ID != arm.ID {
		t.Fatalf("re-created as %s, want %s", again.ID, arm.ID)
	}
	if _, err := svc.SetEntry(again, 0, protocol.Handedness("left")); err != nil {
		t.Fatalf("the re-created device does not answer: %v", err)
	}
	if f := exchange(t, sess, sink, `{}`); f.device(arm.ID) == nil {
		t.Fatalf("the re-created device is not in the frame: %s", f.text)
	}
}

// A driver that panics fails its device alone: halted, unlisted, reported.
func TestDriverThatPanicsFailsItsDeviceOnly(t *testing.T) {
	svc := startWith(t, Options{})
	drv := &fakeDriver{Arm: simArm(0)}
	arm := addArm(t, svc, drv)
	other := addArm(t, svc, simArm(1))
	sess, sink := open(t, svc, nil)
	exchange(t, sess, sink, forceMsg(arm.ID, 1.5))

	drv.panicking.Store(true)
	waitEvent(t, svc, event.NameDeviceFailed, arm.ID)
	hwtest.EventuallyNil(t, 5*time.Second, "the failed device to leave the frame", func() error {
		if f := exchange(t, sess, sink, `{}`); f.device(arm.ID) != nil {
			return errors.New("the failed device is still in the frame")
		}
		return nil
	})
	if drv.halts.Load() == 0 {
		t.Fatal("the driver that panicked was never halted")
	}
	ticks := other.Stats().Ticks
	hwtest.EventuallyNil(t, 5*time.Second, "the other device's loop to keep ticking", func() error {
		if other.Stats().Ticks <= ticks {
			return errors.New("the other device's loop stopped")
		}
		return nil
	})
	if codes := exchange(t, sess, sink, forceMsg(other.ID, 0.5)).errorCodes(); len(codes) != 0 {
		t.Fatalf("the other device refuses commands: %v", codes)
	}
}

// A device whose driver's owner knows it is gone (a lab gateway that lost
// the node) is removed at once, its driver still answering: a force
// stopped, the device unlisted and reported with the cause, the driver
// closed once. Removing it again, once it came back, changes nothing.
func TestRemoveDeviceUnlistsAndReportsTheCause(t *testing.T) {
	svc := startWith(t, Options{})
	drv := &fakeDriver{Arm: simArm(0)}
	arm := addArm(t, svc, drv)
	sess, sink := open(t, svc, nil)
	exchange(t, sess, sink, forceMsg(arm.ID, 1.5))

	cause := errors.New("node n1 lost")
	svc.RemoveDevice(arm, cause)
	data := waitEvent(t, svc, event.NameDeviceFailed, arm.ID)
	if !strings.Contains(data, cause.Error()) {
		t.Fatalf("device-failed %s does not say the cause %q", data, cause)
	}
	waitEvent(t, svc, event.NameDeviceDisconnected, arm.ID)
	if f := exchange(t, sess, sink, `{}`); f.device(arm.ID) != nil {
		t.Fatalf("the removed device is still in the frame: %s", f.text)
	}
	if drv.halts.Load() == 0 || drv.closes.Load() != 1 {
		t.Fatalf("the removed device's driver: %d halts, %d closes; want halted, closed once", drv.halts.Load(), drv.closes.Load())
	}
	// The same arm plugged in again is another Device under the same id: a
	// late removal of the old one (a gateway's, racing the node's return)
	// leaves it listed. The registry unlists synchronously, so the round
	// trip of the next AddDevice shows it.
	again := addArm(t, svc, simArm(0))
	if again.ID != arm.ID {
		t.Fatalf("the arm came back as %s, was %s", again.ID, arm.ID)
	}
	svc.RemoveDevice(arm, cause)
	addArm(t, svc, simArm(1)) // a registry round trip after the late removal
	if svc.Devices().Find(again.Type, again.ID) != again {
		t.Fatal("a late removal of the old device unlisted the arm that came back under its id")
	}
	if f := exchange(t, sess, sink, forceMsg(again.ID, 0.5)); f.device(again.ID) == nil || len(f.errorCodes()) != 0 {
		t.Fatalf("the arm that came back does not answer: %s", f.text)
	}
}

// Shutting down stops every device actor with the registry: that is no
// failure, so no rescan and no second close of the driver.
func TestShutdownIsNoDeviceFailure(t *testing.T) {
	var lost atomic.Int64
	svc, err := Start(Options{SimShards: 1, OnDeviceLost: func(hw.Info) { lost.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	drv := &fakeDriver{Arm: simArm(0)}
	addArm(t, svc, drv)
	// Shutdown returns once the registry and its device actors stopped.
	shutdown(t, svc)
	if lost.Load() != 0 {
		t.Fatalf("shutdown reported the device lost %d times", lost.Load())
	}
	if drv.closes.Load() != 1 {
		t.Fatalf("the driver was closed %d times, want once", drv.closes.Load())
	}
}

// A driver is closed once, however many paths close it at the same time
// (the registry removing a failed device while Shutdown closes every device
// it listed; both after the device's loop stopped): the first Close's
// error answers them all.
func TestDriverIsClosedOnceWhateverClosesIt(t *testing.T) {
	drv := &fakeDriver{Arm: simArm(0)}
	d := &Device{rt: loop.NewDevice(drv, loop.DeviceOptions{})}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { _ = d.closeDriver() })
	}
	wg.Wait()
	if n := drv.closes.Load(); n != 1 {
		t.Fatalf("the driver was closed %d times, want once", n)
	}
}

// A panic in a message that waited behind another (in the socket, while
// the first one's configure waited for its device actor) stops the session
// the same way: 1011, internal_error, and nothing more is answered.
func TestSessionThatPanicsBehindAWaitingMessageIsStopped(t *testing.T) {
	g := newGate()
	svc := startWith(t, Options{RequestTimeout: 100 * time.Millisecond, DeviceHook: g.hook})
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, panicCodec{trigger: "boom"})

	r := startReader(t, sess)
	g.shut.Store(true)
	r.send(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":3}}}]}`, arm.ID))
	<-g.held
	r.send(`{"boom": 1}`) // waits behind the configure
	first := sink.next(t) // the configure, answered at its deadline
	if codes := first.errorCodes(); !slices.Equal(codes, []string{string(protocol.CodeUnavailable)}) {
		t.Fatalf("the first frame's errors are %v, want [unavailable]: %s", codes, first.text)
	}
	sink.waitClosed(t, 1011) // the session that panicked
	g.shut.Store(false)
	close(g.release)
	waitSupervision(t, svc, "session-", "StopDirective")
	if r := sess.CloseReason(); r != protocol.CloseInternalError {
		t.Fatalf("session ended with reason %q, want %s", r, protocol.CloseInternalError)
	}
	r.send(`{}`)
	r.settled(t) // every frame the reader's messages got is in the sink
	sink.noFrame(t, "the stopped session answered")
}
