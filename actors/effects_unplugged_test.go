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
			id, typ := dev.ID, dev.Type
			sess, sink := open(t, svc, nil)
			msg := forceMsg(id, 0.5)
			if declare {
				msg = fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}},"effects":{"set":[{"id":"d","type":"damper","scalar":2}]}}]}`, id)
			}
			if f := exchange(t, sess, sink, msg); len(f.errorCodes()) > 0 {
				t.Fatalf("first message: %v", f.errorCodes())
			}
			freed := make(chan struct{})
			runtime.AddCleanup(dev, func(ch chan struct{}) { close(ch) }, freed)
			svc.RemoveDevice(dev, errors.New("unplugged"))
			dev = nil
			deadline := time.Now().Add(10 * time.Second)
			for svc.Devices().Find(typ, id) != nil {
				if time.Now().After(deadline) {
					t.Fatal("the arm still listed 10 s after RemoveDevice")
				}
				exchange(t, sess, sink, forceMsg(id, 0.5))
			}
			addArm(t, svc, simArm(0))
			for {
				exchange(t, sess, sink, forceMsg(id, 0.5))
				runtime.GC()
				select {
				case <-freed:
					return
				default:
				}
				if time.Now().After(deadline) {
					t.Fatal("the unplugged arm's Device is still reachable 10 s after it left: the session keeps it")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
