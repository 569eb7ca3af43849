package actors

import (
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// The device actor's entry semantics, as HTTP reaches them: device-global
// entries need no session, session-scoped ones need an attached session, a
// reset without sessions resets every session of the device, and every
// answer is the value now in force.
func TestDeviceEntrySemantics(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	s1, sink1 := open(t, svc, nil)
	s2, _ := open(t, svc, nil)
	// Both attached once the device answers for them.
	for _, s := range []*Session{s1, s2} {
		if _, err := svc.Entry(arm, s.ID, protocol.KeyDamping); err != nil {
			t.Fatal(err)
		}
	}
	gate := func(g float64) protocol.Entry { return protocol.ForceGate{Gain: g} }
	steps := []struct {
		name   string
		do     func() (protocol.Entry, error)
		want   protocol.Entry
		code   protocol.Code
		s1, s2 protocol.Entry // force gate in force for each session after the step
	}{
		{"set for one session", func() (protocol.Entry, error) { return svc.SetEntry(arm, s1.ID, gate(0.8)) },
			gate(0.8), "", gate(0.8), gate(0.3)},
		{"set for the other", func() (protocol.Entry, error) { return svc.SetEntry(arm, s2.ID, gate(0.6)) },
			gate(0.6), "", gate(0.8), gate(0.6)},
		{"reset one session", func() (protocol.Entry, error) { return svc.ResetEntry(arm, []uint64{s1.ID}, protocol.KeyForceGate) },
			gate(0.3), "", gate(0.3), gate(0.6)},
		{"reset every session", func() (protocol.Entry, error) {
			if _, err := svc.SetEntry(arm, s1.ID, gate(0.9)); err != nil {
				return nil, err
			}
			return svc.ResetEntry(arm, nil, protocol.KeyForceGate)
		}, gate(0.3), "", gate(0.3), gate(0.3)},
		{"session-scoped without a session", func() (protocol.Entry, error) { return svc.SetEntry(arm, 0, gate(0.5)) },
			nil, protocol.CodeInvalidValue, gate(0.3), gate(0.3)},
		{"a session the device does not know", func() (protocol.Entry, error) { return svc.SetEntry(arm, 9999, gate(0.5)) },
			nil, protocol.CodeUnknownSession, gate(0.3), gate(0.3)},
		{"device-global", func() (protocol.Entry, error) { return svc.SetEntry(arm, 0, protocol.TorqueScaling{Enabled: false}) },
			protocol.TorqueScaling{Enabled: false}, "", gate(0.3), gate(0.3)},
		{"device-global reset", func() (protocol.Entry, error) { return svc.ResetEntry(arm, nil, protocol.KeyTorqueScaling) },
			protocol.TorqueScaling{Enabled: true}, "", gate(0.3), gate(0.3)},
	}
	for _, c := range steps {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.do()
			if errCode(err) != c.code || (c.code == "" && got != c.want) {
				t.Fatalf("answered %v (%v), want %v (code %q)", got, err, c.want, c.code)
			}
			for _, s := range []struct {
				sess *Session
				want protocol.Entry
			}{{s1, c.s1}, {s2, c.s2}} {
				e, err := svc.Entry(arm, s.sess.ID, protocol.KeyForceGate)
				if err != nil || e != s.want {
					t.Fatalf("session %d: force gate %v (%v), want %v", s.sess.ID, e, err, s.want)
				}
				// The session reads the same through its view.
				if v := arm.ViewFor(s.sess.ID).Config.Session.ForceGate; protocol.Entry(v) != s.want {
					t.Fatalf("session %d's view has %v, want %v", s.sess.ID, v, s.want)
				}
			}
		})
	}
	// The session's frame reports the entries in force.
	f := exchange(t, s1, sink1, `{"session":{"force_render_full_state":{}}}`)
	cfg, _ := f.device(arm.ID)["config"].(map[string]any)
	if ts, _ := cfg["torque_scaling"].(map[string]any); ts["enabled"] != true {
		t.Fatalf("the frame's torque_scaling: %v", cfg["torque_scaling"])
	}
}

// A device-global entry is shared by every session's view; a session-scoped
// one by none but its own, and a session with only defaults shares the
// device's default view (one encoding per tick for all of them).
func TestViewsAreSharedWhereTheyCanBe(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	s1, _ := open(t, svc, nil)
	s2, _ := open(t, svc, nil)
	if _, err := svc.Entry(arm, s2.ID, protocol.KeyDamping); err != nil {
		t.Fatal(err)
	}
	if arm.ViewFor(s1.ID) != arm.ViewFor(s2.ID) || arm.ViewFor(s1.ID) != arm.defaultView.Load() {
		t.Fatal("sessions with default entries do not share the default view")
	}
	if _, err := svc.SetEntry(arm, s1.ID, protocol.Basis{Permutation: "YXZ"}); err != nil {
		t.Fatal(err)
	}
	if arm.ViewFor(s1.ID) == arm.ViewFor(s2.ID) {
		t.Fatal("a session's own basis is shared with another session")
	}
	if _, err := svc.SetEntry(arm, 0, protocol.Handedness("left")); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Session{s1, s2} {
		if h := arm.ViewFor(s.ID).Config.Device.Handedness; h != "left" {
			t.Fatalf("session %d's view reports handedness %q after a device-global change", s.ID, h)
		}
	}
	if _, err := svc.ResetEntry(arm, []uint64{s1.ID}, protocol.KeyBasis); err != nil {
		t.Fatal(err)
	}
	if arm.ViewFor(s1.ID) != arm.defaultView.Load() {
		t.Fatal("a session back at defaults does not share the default view again")
	}
}

// TestSessionSlots: a slot set for a session is found by it alone, in
// whichever shard, until removed; removing an absent session changes
// nothing; readers on other goroutines see each published shard whole.
func TestSessionSlots(t *testing.T) {
	var s sessionSlots
	slots := map[uint64]*viewSlot{}
	for _, id := range []uint64{1, 2, 17, 33, sessionSlotShards, 1 << 40} {
		slots[id] = &viewSlot{}
		s.set(id, slots[id])
	}
	done := make(chan struct{})
	go func() { // a reader, for the race detector
		defer close(done)
		for range 1000 {
			if v, ok := s.get(1); !ok || v != slots[1] {
				t.Error("session 1's slot vanished while others changed")
				return
			}
		}
	}()
	s.remove(17)
	s.remove(99) // never set
	s.set(2, slots[2])
	<-done
	for _, tc := range []struct {
		id   uint64
		want bool
	}{{1, true}, {2, true}, {17, false}, {33, true}, {sessionSlotShards, true}, {1 << 40, true}, {99, false}, {3, false}} {
		v, ok := s.get(tc.id)
		if ok != tc.want || (ok && v != slots[tc.id]) {
			t.Errorf("get(%d) = %p, %v; want %p, %v", tc.id, v, ok, slots[tc.id], tc.want)
		}
	}
}
