package actors

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/protocol"
)

// TestControlLeaseRunsFromTheMessagesArrival: a command or effects entry
// renews the control lease from when its message arrived on the host, not
// from when the session read it, and one that arrived longer than the lease
// ago is not applied at all (stale_command): after the service stalled, the
// commands still queued in the socket come from a client that may have gone
// quiet since, and must not put its force back on the arm.
func TestControlLeaseRunsFromTheMessagesArrival(t *testing.T) {
	const lease = 100 * time.Millisecond
	ms := int64(time.Millisecond)
	force := func(id string) string { return forceMsg(id, 0.5) }
	damper := func(id string) string {
		return fmt.Sprintf(`{"arm3":[{"device_id":%q,"effects":{"set":[{"id":"d","type":"damper","scalar":2}]}}]}`, id)
	}
	probe := func(id string) string {
		return fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"probe_position":{}}}]}`, id)
	}
	for _, c := range []struct {
		name    string
		msg     func(id string) string
		waited  time.Duration
		applied bool   // the session controls the arm after it
		warning string // the path of the stale_command warning, "" for none
	}{
		{"fresh command", force, 0, true, ""},
		{"command that waited part of its lease", force, 60 * time.Millisecond, true, ""},
		{"command that waited longer than its lease", force, 150 * time.Millisecond, false, "arm3[0].commands"},
		{"command that waited exactly its lease", force, lease, false, "arm3[0].commands"},
		{"effects that waited part of the lease", damper, 60 * time.Millisecond, true, ""},
		{"effects that waited longer than the lease", damper, 150 * time.Millisecond, false, "arm3[0].effects"},
		{"a probe asks for no control", probe, 150 * time.Millisecond, false, ""},
		// The wait is measured on the real-time clock: a step back makes it
		// negative, counted as none (no lease past the read plus the lease);
		// a step forward makes it long, refused.
		{"command read after the wall clock stepped back an hour", force, -time.Hour, true, ""},
		{"command read after the wall clock stepped forward an hour", force, time.Hour, false, "arm3[0].commands"},
	} {
		t.Run(c.name, func(t *testing.T) {
			svc := startWith(t, Options{})
			arm := addArm(t, svc, simArm(0))
			sess, sink := open(t, svc, nil)
			clock := svc.opts.Clock
			before := clock.Now()
			sess.Deliver([]byte(c.msg(arm.ID)), int64(c.waited))
			after := clock.Now()
			f := sink.next(t)
			if errs := f.errorCodes(); len(errs) > 0 {
				t.Fatalf("errors %v: %s", errs, f.text)
			}
			var stale []string
			for _, w := range warningsOf(f) {
				if w["code"] == string(protocol.CodeStaleCommand) {
					stale = append(stale, fmt.Sprint(w["path"]))
				}
			}
			if want := []string{c.warning}; c.warning == "" && len(stale) > 0 || c.warning != "" && !slices.Equal(stale, want) {
				t.Fatalf("stale_command warnings at %v, want at %q: %s", stale, c.warning, f.text)
			}
			owner := arm.Register().Owner()
			if c.applied != (owner == sess.ID) {
				t.Fatalf("after the message the arm's owner is %d (session %d), want it controlled: %v", owner, sess.ID, c.applied)
			}
			if !c.applied {
				return
			}
			var cmd loop.Command
			arm.Register().Read(&cmd)
			waited := max(c.waited, 0)
			lo, hi := before-int64(waited)+int64(lease), after-int64(waited)+int64(lease)
			if cmd.Session != sess.ID || cmd.DeadlineNs < lo || cmd.DeadlineNs > hi {
				t.Fatalf("the lease ends %.3f ms after the message was read, want %.0f ms after it arrived (%d ms before it was read), between %.3f and %.3f",
					float64(cmd.DeadlineNs-after)/float64(ms), float64(lease)/float64(ms), waited/time.Millisecond, float64(lo-after)/float64(ms), float64(hi-after)/float64(ms))
			}
		})
	}
}

// warningsOf lists the frame's warnings.
func warningsOf(f testFrame) []map[string]any {
	var out []map[string]any
	list, _ := f.raw["warnings"].([]any)
	for _, w := range list {
		if m, ok := w.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// TestStaleMessageThatShortensTheLeaseEndsTheLongerOne: a message that
// shortens the lease and arrives too late for the shorter lease is refused,
// and the force a message before it held under the longer lease ends with
// it: the client asked for the shorter lease before it fell silent, and
// the refused message cannot be the reason its old force lasts a second.
func TestStaleMessageThatShortensTheLeaseEndsTheLongerOne(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	withLease := func(ms int, z float64) string {
		return fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":%d}}},"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":%g}}}}]}`, ms, arm.ID, z)
	}
	sess.Deliver([]byte(withLease(1000, 2)), 0)
	if f := sink.next(t); len(f.errorCodes()) > 0 || len(warningsOf(f)) > 0 {
		t.Fatalf("the long lease's command: %s", f.text)
	}
	clock := svc.opts.Clock
	const waited = 30 * time.Millisecond
	sess.Deliver([]byte(withLease(10, 0)), int64(waited))
	after := clock.Now()
	f := sink.next(t)
	if ws := warningsOf(f); len(ws) != 1 || ws[0]["code"] != string(protocol.CodeStaleCommand) {
		t.Fatalf("a message 30 ms old under the 10 ms lease it sets: warnings %v, want one stale_command", ws)
	}
	var cmd loop.Command
	arm.Register().Read(&cmd)
	if cmd.Session == sess.ID && cmd.DeadlineNs > after-int64(waited)+int64(10*time.Millisecond) {
		t.Fatalf("the 2 N command's lease ends %.0f ms after the refused message, want it ended by that message's shorter lease (%v before)",
			float64(cmd.DeadlineNs-after)/float64(time.Millisecond), waited-10*time.Millisecond)
	}
}
