package actors

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// TestUnpluggedArmNotKeptBySessionEffects unplugs an arm (RemoveDevice, as
// a lab gateway does when the arm's node dies) while a session holds it,
// with effects declared or without, plugs an arm with the same id back
// and goes on naming it: the Device that left must be freed, not kept
// alive by the session for as long as it lives (one Device, with its
// loop's buffers and driver, per unplug or node restart).
func TestUnpluggedArmNotKeptBySessionEffects(t *testing.T) {
	for _, declare := range []bool{false, true} {
		t.Run(fmt.Sprintf("effects=%v", declare), func(t *testing.T) {
			svc := startWith(t, Options{})
			dev := addArm(t, svc, simArm(0))
			id := dev.ID
			sess, sink := open(t, svc, nil)
			msg := forceMsg(id, 0.5)
			if declare {
				msg = fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}},"effects":{"set":[{"id":"d","type":"damper","scalar":2}]}}]}`, id)
			}
			if f := exchange(t, sess, sink, msg); len(f.errorCodes()) > 0 {
				t.Fatalf("first message: %v", f.errorCodes())
			}
			talk := func() { exchange(t, sess, sink, forceMsg(id, 0.5)) }
			unplugAndWaitFreed(t, svc, dev, 0, talk, func() {})
		})
	}
}

// TestLeftArmNotKeptBySession: a session that goes on with one arm while
// another leaves must not keep the Device that left through the device set
// of an earlier message: the set its effects were last checked against
// once those effects ended, or the set its last session.configure handed
// to its actor.
func TestLeftArmNotKeptBySession(t *testing.T) {
	for _, tc := range []struct {
		name string
		// before runs with both arms listed; after, once one has left,
		// before the wait for it to be freed.
		before, after func(t *testing.T, x func(string) testFrame, stay string)
	}{
		{
			name: "effects ended before the arm left",
			before: func(t *testing.T, x func(string) testFrame, stay string) {
				x(`{"session":{"configure":{"lease":{"ms":20}}}}`)
				x(fmt.Sprintf(`{"arm3":[{"device_id":%q,"effects":{"set":[{"id":"d","type":"damper","scalar":2}]}}]}`, stay))
				x(fmt.Sprintf(`{"arm3":[{"device_id":%q}]}`, stay)) // effects held: checked against both arms
				time.Sleep(100 * time.Millisecond)                  // the lease lapses: the effects end
				x(fmt.Sprintf(`{"arm3":[{"device_id":%q}]}`, stay))
			},
			// A configure after the removal, so that the set the first
			// configure handed the actor is not what keeps the arm.
			after: func(t *testing.T, x func(string) testFrame, stay string) {
				x(`{"session":{"configure":{"lease":{"ms":30}}}}`)
			},
		},
		{
			name: "a configure before the arm left",
			before: func(t *testing.T, x func(string) testFrame, stay string) {
				x(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
			},
			after: func(*testing.T, func(string) testFrame, string) {},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := startWith(t, Options{})
			stay := addArm(t, svc, simArm(0)).ID
			leave := addArm(t, svc, simArm(1))
			sess, sink := open(t, svc, nil)
			x := func(msg string) testFrame { return exchange(t, sess, sink, msg) }
			tc.before(t, x, stay)
			unplugAndWaitFreed(t, svc, leave, 2, func() { x(forceMsg(stay, 0)) }, func() { tc.after(t, x, stay) })
		})
	}
}

// unplugAndWaitFreed removes dev while talk keeps its session busy, runs
// after once the arm is unlisted, plugs simulated arm index in (the
// registry's own last message holds a removed Device until its next one)
// and fails t unless dev is collected within 10 s while talk goes on.
func unplugAndWaitFreed(t *testing.T, svc *Service, dev *Device, index int, talk, after func()) {
	t.Helper()
	typ, id := dev.Type, dev.ID
	freed := make(chan struct{})
	runtime.AddCleanup(dev, func(ch chan struct{}) { close(ch) }, freed)
	svc.RemoveDevice(dev, errors.New("unplugged"))
	dev = nil
	deadline := time.Now().Add(10 * time.Second)
	for svc.Devices().Find(typ, id) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the arm still listed 10 s after RemoveDevice")
		}
		talk()
	}
	after()
	addArm(t, svc, simArm(index))
	for {
		talk()
		runtime.GC()
		select {
		case <-freed:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the arm that left is still reachable 10 s after it left: the session keeps it")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
