package actors

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// TestUnchangedByAgreesWithTheDeviceActor checks the session's shortcut for
// a re-sent configure against the device actor itself: wherever
// unchangedBy says the entries change nothing, the actor must accept them
// and leave the session's config as it was; wherever the actor changes the
// config or refuses, unchangedBy must have said no.
func TestUnchangedByAgreesWithTheDeviceActor(t *testing.T) {
	svc, d := startTestService(t, "", zerolog.Nop())
	sink := newChanSink()
	sess, err := svc.OpenSession(SessionOptions{Remote: "test", Codec: protocol.Codec{}, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close(protocol.CloseClientClosed) })
	<-sink.frames // the inventory
	// The registry queued the attachment before it listed the session, so
	// the device has published the session's slot once it answers this.
	if _, err := svc.Entry(d, sess.ID, protocol.KeyDamping); err != nil {
		t.Fatal(err)
	}

	mount := protocol.Mount{Transform: protocol.Transform{
		Position: protocol.Vec3{X: 1}, Rotation: protocol.Quat{W: 1}, Scale: protocol.Vec3{X: 1, Y: 1, Z: 1}}}
	steps := [][]protocol.Entry{
		{protocol.DampingScalar(0)}, // the default
		{protocol.DampingScalar(2)},
		{protocol.DampingScalar(2)},
		{protocol.DampingScalar(2), protocol.ForceGate{Gain: 0.5}},
		{protocol.ForceGate{Gain: 0.5}},
		{protocol.Basis{Permutation: "XZY"}},
		{protocol.Basis{Permutation: "XZY"}, protocol.DampingScalar(2)},
		{protocol.Basis{Permutation: "XYZ"}},
		{protocol.Preset{Preset: "arm_front"}},
		{protocol.Preset{Preset: "arm_front"}},
		{mount},
		{mount},
		{protocol.Preset{Preset: "arm_front"}},
		{protocol.Damping{Vector: &protocol.Vec3{X: 1}}},
		{protocol.Damping{Vector: &protocol.Vec3{X: 1}}},
		{protocol.Handedness("left")}, // device-global: the actor refuses it
	}
	for i, entries := range steps {
		skip := d.unchangedBy(sess.ID, entries)
		before := d.ViewFor(sess.ID).Config.Session
		r, err := svc.ask(d.pid, &setEntries{session: sess.ID, entries: entries})
		if err == nil {
			err = r.(*entryReply).err
		}
		after := d.ViewFor(sess.ID).Config.Session
		changed := !after.Equal(&before)
		if skip && (err != nil || changed) {
			t.Fatalf("step %d %v: unchangedBy said unchanged, but the actor answered %v and changed=%v", i, entries, err, changed)
		}
		if !skip && err == nil && !changed {
			t.Errorf("step %d %v: unchangedBy missed a no-op", i, entries)
		}
	}
	if d.unchangedBy(sess.ID+1000, []protocol.Entry{protocol.DampingScalar(0)}) {
		t.Fatal("unchangedBy answered for a session the device does not know (the actor answers unknown_session)")
	}

	entries := []protocol.Entry{protocol.Basis{Permutation: "XYZ"}, protocol.DampingScalar(1), protocol.ForceGate{Gain: 0.3}}
	if n := testing.AllocsPerRun(100, func() { d.unchangedBy(sess.ID, entries) }); n != 0 {
		t.Fatalf("unchangedBy allocates %v times per call; it runs per device per tick", n)
	}
}

// simArmCore is a device actor's core for a simulated arm, with the
// default config and settings, whose loop never runs: the test publishes
// states and attaches sessions itself.
func simArmCore() (*Device, *deviceCore) {
	arm := sim.NewArm(sim.ArmOptions{PeriodS: 0.001})
	info := arm.Info()
	d := &Device{Type: protocol.TypeArm, ID: info.ID, Info: info}
	d.rt = loop.NewDevice(arm, loop.DeviceOptions{})
	core := &deviceCore{dev: d, log: zerolog.Nop(), settings: protocol.DefaultSettings()}
	core.init(protocol.DefaultDeviceConfig())
	return d, core
}

// TestHaltIsNotServedAStaleCachedBody frames a device that a command drives,
// halts it between ticks (Halt republishes the same tick with the mode
// idle), and frames it again: the encoded-state cache must not answer with
// the body it encoded before the Halt.
func TestHaltIsNotServedAStaleCachedBody(t *testing.T) {
	d, _ := simArmCore() // the core's init publishes the device's config, which framing reads
	devs := (&DeviceSet{}).with(d)

	now := loop.SystemClock().Now()
	reg := d.Register()
	if reg.Claim(1) != 1 || !reg.Write(1, 1, now+int64(time.Second), &hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 0.5}}, nil) {
		t.Fatal("could not command the device")
	}
	d.rt.Step(now)

	var f protocol.Frame
	var snap loop.Snapshot
	frame := func(session uint64) string {
		f.Arms = f.Arms[:0]
		fillFrame(devs, session, &f, &snap, false, nil, protocol.Codec{}, nil, nil, 0)
		if len(f.Arms) != 1 || f.Arms[0].Element == nil {
			t.Fatalf("no cached element: %+v", f.Arms)
		}
		return string(f.Arms[0].Element)
	}
	// Framed by two sessions: an encoding another session reused keeps the
	// cache storing (worthStoring), so the frame after Halt is cached too.
	for session := range uint64(2) {
		if b := frame(session); !strings.Contains(b, `"control_mode":"force"`) {
			t.Fatalf("before Halt: %s", b)
		}
	}
	d.rt.Halt()
	if b := frame(0); !strings.Contains(b, `"control_mode":"idle"`) {
		t.Fatalf("after Halt the frame still reads the tick before it: %s", b)
	}
}

// noteBusy rate-limits by the service clock, per device and owner, and
// forgets devices once their interval has passed (a removed device must not
// stay reachable from the session).
func TestNoteBusyRateLimitsAndForgets(t *testing.T) {
	svc, d := startTestService(t, "", zerolog.Nop())
	a := &tickPath{sess: &Session{ID: 42}, svc: svc, busy: make(map[busyKey]busyNote)}
	gone := &Device{Type: protocol.TypeArm, ID: "gone"}
	ms := int64(time.Millisecond)
	a.noteBusy(d, 7, 0)
	a.noteBusy(d, 7, 500*ms) // suppressed
	a.noteBusy(d, 8, 600*ms) // another owner
	a.noteBusy(gone, 7, 700*ms)
	a.noteBusy(d, 8, 1650*ms) // over a second after the last one for owner 8
	if len(a.busy) != 2 {
		t.Fatalf("busy notes %v; want only the two within the last second", a.busy)
	}
	a.noteBusy(d, 8, 5000*ms)
	if _, ok := a.busy[busyKey{gone.Type, gone.ID}]; ok || len(a.busy) != 1 {
		t.Fatalf("busy notes %v; the device that left is still held", a.busy)
	}
	// Events: owner 7, owner 8, the other device, owner 8 again, and the
	// last one; the second was suppressed.
	hwtest.EventuallyNil(t, 5*time.Second, "five device-busy events", func() error {
		page, err := svc.Activity().Recent(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range page.Events {
			if e.Name == event.NameDeviceBusy {
				n++
			}
		}
		if n > 5 {
			t.Fatalf("%d device-busy events, want 5", n)
		}
		if n != 5 {
			return fmt.Errorf("%d device-busy events so far", n)
		}
		return nil
	})
}

// TestSessionAndDeviceArrivingTogetherAreAttached opens sessions while
// devices are added: whichever lands first, every device must know every
// session once both are visible (a session a device does not know gets
// unknown_session for as long as it stays connected).
func TestSessionAndDeviceArrivingTogetherAreAttached(t *testing.T) {
	svc, _ := startTestService(t, "", zerolog.Nop())
	for round := range 40 {
		var (
			d      *Device
			addErr error
			added  = make(chan struct{})
		)
		go func() {
			defer close(added)
			d, addErr = svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: round + 1, PeriodS: 0.001}), false)
		}()
		sink := newChanSink()
		sess, err := svc.OpenSession(SessionOptions{Remote: "test", Codec: protocol.Codec{}, Sink: sink})
		if err != nil {
			t.Fatal(err)
		}
		<-sink.frames // the inventory: the session is started
		<-added
		if addErr != nil {
			t.Fatal(addErr)
		}
		// Attachments travel as actor messages: allow them to land.
		hwtest.EventuallyNil(t, 5*time.Second, fmt.Sprintf("round %d: device %s to know session %d", round, d.ID, sess.ID), func() error {
			_, err := svc.Entry(d, sess.ID, protocol.KeyDamping)
			return err
		})
		sess.Close(protocol.CloseClientClosed)
	}
}

// TestCommandsReachTheirDevicesWhenTheSetShifts: a session looks up the
// devices a message names where it found them last time; after a device
// before them is removed, the same message must still command each named
// arm, not the one now at its old place, and a removed arm is reported.
func TestCommandsReachTheirDevicesWhenTheSetShifts(t *testing.T) {
	svc := startWith(t, Options{})
	drv := &fakeDriver{Arm: simArm(0)}
	first := addArm(t, svc, drv)
	b := addArm(t, svc, simArm(1))
	c := addArm(t, svc, simArm(2))
	sess, sink := open(t, svc, nil)
	twoArms := fmt.Sprintf(`{"arm3":[`+
		`{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.5}}}},`+
		`{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`, c.ID, b.ID)
	applied := func() error {
		f := exchange(t, sess, sink, twoArms)
		if codes := f.errorCodes(); len(codes) != 0 {
			return fmt.Errorf("errors %v", codes)
		}
		if zc, zb := f.forceZ(t, c.ID), f.forceZ(t, b.ID); zc != 1.5 || zb != 0.5 {
			return fmt.Errorf("force z: %s %v, %s %v; want 1.5 and 0.5", c.ID, zc, b.ID, zb)
		}
		return nil
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the forces on both arms", applied)

	// The first arm fails and leaves the set: b and c move down one place.
	// (A commanded arm is stepped every tick, so its driver's panic comes.)
	exchange(t, sess, sink, forceMsg(first.ID, 1.5))
	drv.panicking.Store(true)
	waitEvent(t, svc, event.NameDeviceFailed, first.ID)
	hwtest.EventuallyNil(t, 5*time.Second, "the failed arm to leave the frame", func() error {
		if exchange(t, sess, sink, `{}`).device(first.ID) != nil {
			return errors.New("the failed arm is still in the frame")
		}
		return nil
	})
	// Zero both, then command them again: each force must land on its arm.
	zero := fmt.Sprintf(`{"arm3":[`+
		`{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}},`+
		`{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`, c.ID, b.ID)
	hwtest.EventuallyNil(t, 5*time.Second, "the forces to return to zero", func() error {
		f := exchange(t, sess, sink, zero)
		if f.forceZ(t, c.ID) != 0 || f.forceZ(t, b.ID) != 0 {
			return errors.New("forces not at zero yet")
		}
		return nil
	})
	hwtest.EventuallyNil(t, 5*time.Second, "the forces on the arms that stayed", applied)

	if w := exchange(t, sess, sink, forceMsg(first.ID, 1)).text; !strings.Contains(w, string(protocol.CodeUnknownDevice)) {
		t.Fatalf("a command to the removed arm is not reported as an unknown device: %s", w)
	}
}

// A device entry naming no connected device is a warning that quotes at
// most a clipped part of the id the client sent: a 300 KB id came back
// whole in a 300 KB frame (review55), past a client's frame limit.
func TestUnknownDeviceWarningClipsTheID(t *testing.T) {
	svc := startWith(t, Options{})
	addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	id := strings.Repeat("9", 300_000)
	f := exchange(t, sess, sink, `{"arm3":[{"device_id":"`+id+`","commands":{}}]}`)
	if !strings.Contains(f.text, "unknown_device") || len(f.text) > 4096 {
		t.Fatalf("a %d-byte frame for a 300 KB unknown device id: %.200s…", len(f.text), f.text)
	}
}
