package actors

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// The session actor owns profile, basis and lease: each message's session
// part changes them (or, when invalid, changes nothing), and the full-state
// frame that answers it shows them.
func TestSessionStateIsTheActorsOwn(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	type view struct {
		profile, basis string
		lease          float64
	}
	for _, c := range []struct {
		name       string
		msg        string
		errors     []string
		warnings   []string
		want       view
		deprecated string // a command-deprecated event it must emit
	}{
		{"defaults", `{}`, nil, nil, view{"", "XYZ", 100}, ""},
		{"lease", `{"session":{"configure":{"lease":{"ms":250}}}}`, nil, nil, view{"", "XYZ", 250}, ""},
		{"lease out of range changes nothing", `{"session":{"configure":{"lease":{"ms":5}}}}`, []string{"out_of_range"}, nil, view{"", "XYZ", 250}, ""},
		{"basis", `{"session":{"configure":{"basis":{"permutation":"ZXY"}}}}`, nil, nil, view{"", "ZXY", 250}, ""},
		{"bad basis changes nothing", `{"session":{"configure":{"basis":{"permutation":"XXY"}}}}`, []string{"invalid_permutation"}, nil, view{"", "ZXY", 250}, ""},
		{"set_basis is the deprecated spelling", `{"session":{"set_basis":{"basis":{"permutation":"-XYZ"}}}}`, nil, nil, view{"", "-XYZ", 250}, protocol.CommandSetBasis},
		{"both spellings: the current one wins", `{"session":{"set_basis":{"basis":{"permutation":"YXZ"}},"configure":{"basis":{"permutation":"YZX"}}}}`, nil, nil, view{"", "YZX", 250}, ""},
		{"profile", `{"session":{"configure":{"profile":{"name":"co.example:one"}}}}`, nil, nil, view{"co.example:one", "YZX", 250}, ""},
		{"unknown session key is a warning", `{"session":{"configure":{"colour":"red"}}}`, nil, []string{"unknown_key"}, view{"co.example:one", "YZX", 250}, ""},
		{"an error anywhere applies nothing", `{"session":{"configure":{"lease":{"ms":500}}},"arm3":[{"device_id":"` + arm.ID + `","configure":{"damping":{}}}]}`, []string{"damping_empty"}, nil, view{"co.example:one", "YZX", 250}, ""},
		{"HTTP-only keys are refused", `{"arm3":[{"device_id":"` + arm.ID + `","configure":{"handedness":"left"}}]}`, []string{"http_only_key"}, nil, view{"co.example:one", "YZX", 250}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := exchangeErrors(t, sess, sink, c.msg)
			if !slices.Equal(g.errors, c.errors) || !slices.Equal(g.warnings, c.warnings) {
				t.Fatalf("errors %v warnings %v, want %v and %v", g.errors, g.warnings, c.errors, c.warnings)
			}
			f := exchange(t, sess, sink, `{"session":{"force_render_full_state":{}}}`)
			sv, _ := f.raw["session"].(map[string]any)
			cfg, _ := sv["config"].(map[string]any)
			got := view{basis: fmt.Sprint(cfg["basis"].(map[string]any)["permutation"]), lease: cfg["lease"].(map[string]any)["ms"].(float64)}
			if p, ok := cfg["profile"].(map[string]any); ok {
				got.profile = fmt.Sprint(p["name"])
			}
			if got != c.want {
				t.Fatalf("session view %+v, want %+v", got, c.want)
			}
			if b := sess.Basis(); b.Permutation != c.want.basis || sess.Profile() != c.want.profile {
				t.Fatalf("the session reads %q/%q to others, want %q/%q", sess.Profile(), b.Permutation, c.want.profile, c.want.basis)
			}
			if c.deprecated != "" {
				waitEvent(t, svc, event.NameCommandDeprecated, `"command":"`+c.deprecated+`"`)
			}
		})
	}
}

type codes struct{ errors, warnings []string }

// exchangeErrors sends msg and returns the codes of its frame's errors and
// warnings.
func exchangeErrors(t *testing.T, sess *Session, sink *recSink, msg string) codes {
	t.Helper()
	f := exchange(t, sess, sink, msg)
	var c codes
	c.errors = f.errorCodes()
	list, _ := f.raw["warnings"].([]any)
	for _, w := range list {
		c.warnings = append(c.warnings, fmt.Sprint(w.(map[string]any)["code"]))
	}
	return c
}

// The deprecated set_coordinate_origin sets the preset on every device of
// the session, arms and grips, and says so with an event.
func TestSetCoordinateOriginPresetsEveryDevice(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	grip, err := svc.AddDevice(sim.NewGrip(sim.GripOptions{Index: 0, PeriodS: 0.001}), false)
	if err != nil {
		t.Fatal(err)
	}
	sess, sink := open(t, svc, nil)
	if c := exchangeErrors(t, sess, sink, `{"session":{"set_coordinate_origin":{"coordinate_origin":"workspace_center"}}}`); len(c.errors) != 0 {
		t.Fatalf("errors %v", c.errors)
	}
	for _, d := range []*Device{arm, grip} {
		if e, err := svc.Entry(d, sess.ID, protocol.KeyPreset); err != nil || e != (protocol.Preset{Preset: "arm_front_centered"}) {
			t.Fatalf("%s %s: preset %v (%v), want arm_front_centered", d.Type.Key(), d.ID, e, err)
		}
	}
	waitEvent(t, svc, event.NameCommandDeprecated, `"command":"`+protocol.CommandSetCoordinateOrigin+`"`)
	if c := exchangeErrors(t, sess, sink, `{"session":{"set_coordinate_origin":{"coordinate_origin":"moon"}}}`); len(c.errors) != 1 {
		t.Fatalf("an unknown coordinate_origin answered errors %v, want one", c.errors)
	}
}

// Errors of one message come in the message's order, whichever device
// actor answers first.
func TestErrorsComeInMessageOrder(t *testing.T) {
	g := newGate()
	var slow string
	svc := startWith(t, Options{RequestTimeout: 100 * time.Millisecond, DeviceHook: func(d *Device) {
		switch {
		case d.ID == slow:
			g.hook(d) // held past the deadline: unavailable, late
		case g.shut.Load():
			panic("test hook: fails at once") // internal, early
		}
	}})
	a0, a1 := addArm(t, svc, simArm(0)), addArm(t, svc, simArm(1))
	slow = a0.ID
	sess, sink := open(t, svc, nil)
	g.shut.Store(true)
	msg := fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"damping":{"scalar":1}}},{"device_id":%q,"configure":{"damping":{"scalar":2}}}]}`, a0.ID, a1.ID)
	f := exchange(t, sess, sink, msg)
	g.shut.Store(false)
	close(g.release)
	list, _ := f.raw["errors"].([]any)
	var got []string
	for _, e := range list {
		m := e.(map[string]any)
		got = append(got, fmt.Sprint(m["path"], " ", m["code"]))
	}
	want := []string{"arm3[0].configure unavailable", "arm3[1].configure internal"}
	if !slices.Equal(got, want) {
		t.Fatalf("errors %v, want %v", got, want)
	}
}

// Closing a session releases its devices at once (an observer sees the
// force at zero), unlists it, detaches it from every device and reports
// session-ended.
func TestSessionCloseReleasesAndUnlists(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	observer, obsSink := open(t, svc, nil)
	exchange(t, sess, sink, forceMsg(arm.ID, 1.5))
	hwtest.EventuallyNil(t, 5*time.Second, "the commanded force", func() error {
		if z := exchange(t, observer, obsSink, `{}`).forceZ(t, arm.ID); z < 0.1 {
			return fmt.Errorf("force z=%v, want the commanded force", z)
		}
		return nil
	})
	if ctl := sess.Controls(); len(ctl) != 1 || ctl[0] != arm {
		t.Fatalf("the session controls %v, want the arm", ctl)
	}

	sess.Close(protocol.CloseClientClosed)
	hwtest.EventuallyNil(t, 5*time.Second, "the force to end after the close", func() error {
		if z := exchange(t, observer, obsSink, `{}`).forceZ(t, arm.ID); z != 0 {
			return fmt.Errorf("force z=%v after the session closed, want 0", z)
		}
		if slices.Contains(svc.Sessions(), sess) {
			return errors.New("still listed")
		}
		if _, err := svc.Entry(arm, sess.ID, protocol.KeyDamping); errCode(err) != protocol.CodeUnknownSession {
			return fmt.Errorf("the device still knows the session: %v", err)
		}
		return nil
	})
	data := waitEvent(t, svc, event.NameSessionEnded, fmt.Sprintf(`"session_id":%d`, sess.ID))
	if r := eventData(t, data, "reason"); r != "client_closed" {
		t.Fatalf("session-ended reports reason %v, want client_closed: %s", r, data)
	}
	if r := sess.CloseReason(); r != protocol.CloseClientClosed {
		t.Fatalf("ended with %q (%s), want %s", r, data, protocol.CloseClientClosed)
	}
	if n := len(sess.Controls()); n != 0 {
		t.Fatalf("a closed session controls %d devices", n)
	}
}

// closingCodec is the 3.x codec, except that it closes its session while
// it decodes a message that contains trigger: the close lands between a
// message's arrival and its commands and effects, as a client's
// disconnect can.
type closingCodec struct {
	protocol.Codec
	trigger string
	sess    *atomic.Pointer[Session]
}

func (c closingCodec) Decode(data []byte, types *protocol.TypeTable, dst *protocol.ClientMessage) []protocol.Error {
	if s := c.sess.Load(); s != nil && strings.Contains(string(data), c.trigger) {
		s.Close(protocol.CloseClientClosed)
	}
	return c.Codec.Decode(data, types, dst)
}

// A session that closes while a message of its is on its way leaves no
// claim behind, whatever the message held: another session commands the
// arm at once, not after the claim's lease lapses.
func TestSessionClosedMidMessageLeavesTheArmFree(t *testing.T) {
	for _, tc := range []struct{ name, entry string }{
		{"command", `"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}`},
		{"effects", `"effects":{"set":[{"id":"d","type":"damper","scalar":2}]}`},
		{"command and effects", `"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}},"effects":{"set":[{"id":"d","type":"damper","scalar":2}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := startWith(t, Options{})
			arm := addArm(t, svc, simArm(0))
			var self atomic.Pointer[Session]
			sess, _ := open(t, svc, closingCodec{trigger: "closing", sess: &self})
			self.Store(sess)
			sess.Deliver([]byte(fmt.Sprintf(`{"arm3":[{"device_id":%q,%s}],"closing":1}`, arm.ID, tc.entry)), 0)
			if owner := arm.Register().Owner(); owner == sess.ID {
				t.Errorf("the closed session still holds the arm")
			}
			other, otherSink := open(t, svc, nil)
			if codes := exchange(t, other, otherSink, forceMsg(arm.ID, 1)).errorCodes(); len(codes) != 0 {
				t.Errorf("another session's command right after the close: errors %v, want none", codes)
			}
			if in := svc.EffectsInForce(arm); len(in.Effects) != 0 {
				t.Errorf("effects of the closed session in force: %+v", in)
			}
		})
	}
}
