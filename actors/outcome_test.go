package actors

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// gate is a DeviceHook that holds the device actor while it is shut:
// each held request waits until the gate opens.
type gate struct {
	shut     atomic.Bool
	held     chan struct{} // one token per request held
	release  chan struct{}
	openOnce sync.Once
}

func newGate() *gate {
	return &gate{held: make(chan struct{}, 16), release: make(chan struct{})}
}

// open lets every held request and every later one through.
func (g *gate) open() {
	g.shut.Store(false)
	g.openOnce.Do(func() { close(g.release) })
}

func (g *gate) hook(*Device) {
	if g.shut.Load() {
		g.held <- struct{}{}
		<-g.release
	}
}

// slowStore delays every Save.
type slowStore struct {
	Store
	delay time.Duration
}

func (s slowStore) Save(name string, v any) error {
	time.Sleep(s.delay)
	return s.Store.Save(name, v)
}

// A request the device actor has not taken up by its deadline is answered
// unavailable and never applied, neither in force nor on disk after a
// restart. One it took up is answered with its outcome, however long that
// takes.
func TestRequestOutcomeAtTheDeadline(t *testing.T) {
	const timeout = 100 * time.Millisecond
	for _, c := range []struct {
		name      string
		late      func(*Options, *gate)
		wantCode  protocol.Code
		wantAfter protocol.Entry
	}{
		{"not taken up in time", func(o *Options, g *gate) { o.DeviceHook = g.hook }, protocol.CodeUnavailable, protocol.Handedness("left")},
		{"taken up, slow to store", func(o *Options, g *gate) {
			o.WrapStore = func(s Store) Store { return slowStore{s, 3 * timeout} }
		}, "", protocol.Handedness("right")},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			g := newGate()
			o := Options{StateDir: dir, RequestTimeout: timeout}
			c.late(&o, g)
			svc := startWith(t, o)
			arm := addArm(t, svc, simArm(0))
			if _, err := svc.SetEntry(arm, 0, protocol.Handedness("left")); err != nil {
				t.Fatal(err)
			}

			g.shut.Store(true)
			answered := make(chan error, 1)
			go func() {
				_, err := svc.SetEntry(arm, 0, protocol.Handedness("right"))
				answered <- err
			}()
			var err error
			select {
			case <-g.held:
				err = <-answered
				g.shut.Store(false)
				close(g.release)
			case err = <-answered:
			}
			if errCode(err) != c.wantCode {
				t.Fatalf("the late request answered %v, want code %q", err, c.wantCode)
			}
			e, err := svc.Entry(arm, 0, protocol.KeyHandedness)
			if err != nil || e != c.wantAfter {
				t.Fatalf("after the answer handedness is %v (%v), want %v", e, err, c.wantAfter)
			}

			shutdown(t, svc)
			svc2 := startWith(t, Options{StateDir: dir})
			arm2 := addArm(t, svc2, simArm(0))
			if e, err := svc2.Entry(arm2, 0, protocol.KeyHandedness); err != nil || e != c.wantAfter {
				t.Fatalf("after a restart handedness is %v (%v), want %v", e, err, c.wantAfter)
			}
		})
	}
}

// A store that fails for one device: that device's value is not applied
// (internal error, nothing in force, nothing on disk); others are served.
func TestStoreFailureForOneTargetChangesNothingThere(t *testing.T) {
	dir := t.TempDir()
	failing := "devices/arm3-" + simArm(1).Info().ID
	svc := startWith(t, Options{StateDir: dir, WrapStore: func(s Store) Store { return failingStore{Store: s, name: failing} }})
	ok, bad := addArm(t, svc, simArm(0)), addArm(t, svc, simArm(1))

	if _, err := svc.SetEntry(ok, 0, protocol.Handedness("left")); err != nil {
		t.Fatalf("the healthy device: %v", err)
	}
	_, err := svc.SetEntry(bad, 0, protocol.Handedness("left"))
	if errCode(err) != protocol.CodeInternal {
		t.Fatalf("a failed durable write answered %v, want internal", err)
	}
	if e, _ := svc.Entry(bad, 0, protocol.KeyHandedness); e != protocol.Handedness("right") {
		t.Fatalf("a value that could not be stored is in force: %v", e)
	}

	shutdown(t, svc)
	svc2 := startWith(t, Options{StateDir: dir})
	ok2, bad2 := addArm(t, svc2, simArm(0)), addArm(t, svc2, simArm(1))
	for _, c := range []struct {
		d    *Device
		want protocol.Entry
	}{{ok2, protocol.Handedness("left")}, {bad2, protocol.Handedness("right")}} {
		if e, err := svc2.Entry(c.d, 0, protocol.KeyHandedness); err != nil || e != c.want {
			t.Fatalf("after a restart %s has %v (%v), want %v", c.d.ID, e, err, c.want)
		}
	}
}

// While a configure waits for a slow device actor, the client's later
// messages wait behind it: one frame per message, in order; the configure
// is answered at its deadline as not applied, and it never applies.
func TestFramesStayInOrderWhileAConfigureWaits(t *testing.T) {
	const timeout = 100 * time.Millisecond
	g := newGate()
	svc := startWith(t, Options{RequestTimeout: timeout, DeviceHook: g.hook})
	t.Cleanup(g.open) // a failure must not leave the device actor held for the shutdown
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	r := startReader(t, sess)

	g.shut.Store(true)
	sent := time.Now()
	r.send(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":3}}}]}`, arm.ID))
	<-g.held
	for range 3 {
		r.send(forceMsg(arm.ID, 0.5))
	}
	// No frame comes while the configure waits: the first one is the
	// configure's, answered at its deadline (while the device actor is
	// still held), and no earlier. A frame written before the deadline,
	// the configure's or a later message's, fails here however slow the
	// machine: the deadline starts after sent, and the session's clock
	// cannot answer before it.
	first := sink.next(t)
	if waited := time.Since(sent); waited < timeout {
		t.Fatalf("a frame came %v after the configure was sent, before its %v deadline: %s", waited, timeout, first.text)
	}
	if codes := first.errorCodes(); !slices.Equal(codes, []string{string(protocol.CodeUnavailable)}) {
		t.Fatalf("the first frame's errors are %v, want [unavailable]: %s", codes, first.text)
	}
	for i := range 3 {
		if codes := sink.next(t).errorCodes(); len(codes) != 0 {
			t.Fatalf("frame %d: errors %v", i+2, codes)
		}
	}
	// One frame per message: every message is in, and no fifth came.
	r.settled(t)
	sink.noFrame(t, "a frame beyond one per message")
	g.open()
	e, err := svc.Entry(arm, sess.ID, protocol.KeyDamping)
	if err != nil || e.(protocol.Damping).ScalarOrZero() != 0 {
		t.Fatalf("damping is %v (%v) after a configure answered unavailable, want the default", e, err)
	}
}

// A message that names a profile and configures a device applies the
// configure under that profile: the next session with the profile gets it,
// across a restart.
func TestProfileAndConfigureInOneMessage(t *testing.T) {
	dir := t.TempDir()
	svc := startWith(t, Options{StateDir: dir})
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	msg := fmt.Sprintf(`{"session":{"configure":{"profile":{"name":"lab"},"basis":{"permutation":"XZY"}}},"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":3}}}]}`, arm.ID)
	if codes := exchange(t, sess, sink, msg).errorCodes(); len(codes) != 0 {
		t.Fatalf("errors %v", codes)
	}
	if e, err := svc.Entry(arm, sess.ID, protocol.KeyBasis); err != nil || e != (protocol.Basis{Permutation: "XZY"}) {
		t.Fatalf("basis in force %v (%v), want XZY", e, err)
	}
	sess.Close(protocol.CloseClientClosed)
	shutdown(t, svc)

	svc2 := startWith(t, Options{StateDir: dir})
	arm2 := addArm(t, svc2, simArm(0))
	sess2, sink2 := open(t, svc2, nil)
	f := exchange(t, sess2, sink2, `{"session":{"configure":{"profile":{"name":"lab"}},"force_render_full_state":{}}}`)
	if codes := f.errorCodes(); len(codes) != 0 {
		t.Fatalf("errors %v", codes)
	}
	// The frame that answers the profile change already shows its entries.
	cfg, _ := f.device(arm2.ID)["config"].(map[string]any)
	if fmt.Sprint(cfg["filters"]) != "map[damping:map[scalar:3] force_gate:map[gain:0.3]]" {
		t.Fatalf("the frame answering the profile change shows filters %v, want the profile's damping 3", cfg["filters"])
	}
	if e, err := svc2.Entry(arm2, sess2.ID, protocol.KeyDamping); err != nil || e.(protocol.Damping).ScalarOrZero() != 3 {
		t.Fatalf("the profile's damping is %v (%v), want 3", e, err)
	}
	if b := sess2.Basis(); b.Permutation != "XZY" {
		t.Fatalf("the profile's basis is %v, want XZY", b)
	}
}

// Sessions open and close through the registry: every open session is
// listed once, in connection order, and a closed one leaves the listing
// and every device.
func TestRegistryListsSessionsInOrder(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	var opened []*Session
	for range 5 {
		s, _ := open(t, svc, nil)
		opened = append(opened, s)
	}
	if got := svc.Sessions(); !slices.Equal(got, opened) {
		t.Fatalf("listed %v, want %v", got, opened)
	}
	refs := svc.SessionRefs()
	for i, r := range refs {
		if r.ID != opened[i].ID {
			t.Fatalf("ref %d is session %d, want %d", i, r.ID, opened[i].ID)
		}
	}
	gone := opened[2]
	gone.Close(protocol.CloseClientClosed)
	hwtest.EventuallyNil(t, 5*time.Second, "the closed session to leave the list", func() error {
		if slices.Contains(svc.Sessions(), gone) {
			return fmt.Errorf("session %d is still listed", gone.ID)
		}
		if _, err := svc.Entry(arm, gone.ID, protocol.KeyDamping); errCode(err) != protocol.CodeUnknownSession {
			return fmt.Errorf("the device still knows session %d: %v", gone.ID, err)
		}
		return nil
	})
	if n := len(svc.Sessions()); n != 4 {
		t.Fatalf("%d sessions listed, want 4", n)
	}
}

// A client's messages are answered one frame each, in order, whether each
// is handled by the per-tick path alone or waits for the session actor
// (a configure the device actor answers, on its own goroutine).
func TestFramesStayInOrderWithAndWithoutTheActor(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	const n = 1000
	for i := range n {
		msg := fmt.Sprintf(`{"arm3":[{"device_id":"ghost-%03d","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`, i)
		if i%2 == 0 {
			// Also a configure that changes something: the device actor
			// answers it, so the messages after it queue until it does.
			msg = fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":%d}}},{"device_id":"ghost-%03d","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`, arm.ID, 1+i%3, i)
		}
		sess.Deliver([]byte(msg), 0)
	}
	for i := range n {
		f := sink.next(t)
		if want := fmt.Sprintf("ghost-%03d", i); !strings.Contains(f.text, want) {
			t.Fatalf("frame %d does not answer message %d (no %s in it): %s", i, i, want, f.text)
		}
	}
	// A sentinel: its frame is written after any frame of the messages
	// before it (one frame per message, in order), so a frame more than
	// the messages would be read here first. It changes the damping, so it
	// also queues behind whatever the session and device actors still had
	// of the earlier messages.
	sentinel := fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":17}}},{"device_id":"sentinel","commands":{"probe_position":{}}}]}`, arm.ID)
	if f := exchange(t, sess, sink, sentinel); !strings.Contains(f.text, "sentinel") {
		t.Fatalf("a frame more than the messages (not the sentinel's): %s", f.text)
	}
	sink.noFrame(t, "a frame more than the messages, after the sentinel's")
}
