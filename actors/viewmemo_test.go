package actors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/space"
)

// TestViewMemoFollowsTheDevicesViews: a session's remembered view is the
// one ViewFor returns after every change the device actor makes: the
// session's own view published or withdrawn, another session of the same
// slot shard attaching, the session detached and attached again with a new
// slot, the default view replaced. A memo that kept a stale view would
// frame the arm in the wrong coordinates.
func TestViewMemoFollowsTheDevicesViews(t *testing.T) {
	d, core := simArmCore()

	const session, sameShard = 1, 1 + sessionSlotShards
	identity := protocol.Basis{Permutation: protocol.IdentityBasis}
	moved := space.IdentityTransform()
	moved.Position = space.Vec3{X: 0.1}
	attach := func(id uint64) { core.attach(nil, &attachSession{session: id, basis: identity}) }
	workspace := func(tr space.Transform) {
		if err := core.setWorkspace(&setWorkspace{session: session, transform: tr}); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		name    string
		change  func()
		ownView bool // the session sees a view of its own, not the default
	}{
		{"not attached", func() {}, false},
		{"attached with defaults", func() { attach(session) }, false},
		{"own workspace", func() { workspace(moved) }, true},
		{"another session of its shard attaches", func() { attach(sameShard) }, true},
		{"workspace back to identity", func() { workspace(space.IdentityTransform()) }, false},
		{"own workspace again", func() { workspace(moved) }, true},
		{"detached", func() { core.detach(session) }, false},
		{"attached again, own workspace", func() { attach(session); workspace(moved) }, true},
		{"device-global change republishes every view", func() { core.publishGlobals() }, true},
		{"back to defaults", func() { workspace(space.IdentityTransform()) }, false},
		{"default view replaced", func() { core.publishGlobals() }, false},
		{"no session attached", func() { core.detach(session); core.detach(sameShard) }, false},
		{"default view replaced, no session attached", func() { core.publishGlobals() }, false},
	}
	// stranger never attaches: it sees the default view, whichever it is.
	const stranger = 5
	var memo, strangers viewMemo
	for _, st := range steps {
		st.change()
		want := d.ViewFor(session)
		if got := memo.viewFor(0, d, session); got != want {
			t.Fatalf("%s: the memo gives view %p, ViewFor %p", st.name, got, want)
		}
		if got, want := strangers.viewFor(0, d, stranger), d.defaultView.Load(); got != want {
			t.Fatalf("%s: an unattached session's memo gives view %p, the default view is %p", st.name, got, want)
		}
		if isDefault := want == d.defaultView.Load(); isDefault == st.ownView {
			t.Fatalf("%s: own view %v, want %v", st.name, !isDefault, st.ownView)
		}
		if st.ownView && want.Workspace != moved {
			t.Fatalf("%s: workspace %+v, want %+v", st.name, want.Workspace, moved)
		}
	}
	// A frame of fewer devices drops the rest, so that a removed device
	// is not kept alive by the memo.
	memo.keep(0)
	if len(memo.entries) != 0 || memo.entries[:1][0].dev != nil {
		t.Fatalf("keep(0) left %d entries, first device %p", len(memo.entries), memo.entries[:1][0].dev)
	}
}

// TestSessionsShareAnEncodingOnlyThroughTheSameView: sessions that see an
// arm through its default view frame one shared encoding of each publish,
// the very bytes the arm's state encodes to; a session with a view of its
// own (here a basis that swaps x and y) gets its own encoding, in its own
// coordinates, and is never served the shared one, nor the shared ones its.
func TestSessionsShareAnEncodingOnlyThroughTheSameView(t *testing.T) {
	d, core := simArmCore()
	devs := (&DeviceSet{}).with(d)
	const swapped, plainA, plainB = 1, 2, 3
	for _, id := range []uint64{swapped, plainA, plainB} {
		core.attach(nil, &attachSession{session: id, basis: protocol.Basis{Permutation: protocol.IdentityBasis}})
	}
	core.attach(nil, &attachSession{session: swapped, basis: protocol.Basis{Permutation: "YXZ"}})

	now := loop.SystemClock().Now()
	reg := d.Register()
	target := &hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{X: 0.01, Y: -0.02, Z: 0.1}}
	if reg.Claim(plainA) != plainA || !reg.Write(plainA, 1, now+int64(time.Second), target, nil) {
		t.Fatal("could not command the device")
	}
	for i := range 200 {
		d.rt.Step(now + int64(i)*int64(time.Millisecond))
	}

	type element struct {
		State struct {
			CursorPosition struct{ X, Y, Z float64 } `json:"cursor_position"`
		} `json:"state"`
	}
	frames := map[uint64]*protocol.Frame{}
	memos := map[uint64]*viewMemo{}
	var snap loop.Snapshot
	frame := func(session uint64) (elem []byte, pos element) {
		f, m := frames[session], memos[session]
		if f == nil {
			f, m = new(protocol.Frame), new(viewMemo)
			frames[session], memos[session] = f, m
		}
		f.Arms = f.Arms[:0]
		fillFrame(devs, session, f, &snap, false, nil, protocol.Codec{}, nil, m, 0)
		a := &f.Arms[0]
		elem = a.Element
		if elem == nil { // encoded per frame, as the frame would
			elem = protocol.Codec{}.AppendArmElement(nil, a)
		}
		if err := json.Unmarshal(elem, &pos); err != nil {
			t.Fatalf("session %d: element is not JSON (%v): %s", session, err, elem)
		}
		return elem, pos
	}
	// Twice over, so that the second round runs on remembered views and
	// on what the first round stored.
	for round := range 2 {
		a, posA := frame(plainA)
		s, posS := frame(swapped)
		b, _ := frame(plainB)
		if !bytes.Equal(a, b) {
			t.Fatalf("round %d: sessions of the default view framed different bytes:\n%s\n%s", round, a, b)
		}
		if f := frames[plainB]; f.Arms[0].Element == nil || &f.Arms[0].Element[0] != &frames[plainA].Arms[0].Element[0] {
			t.Fatalf("round %d: the second session of the default view did not reuse the first one's encoding", round)
		}
		if frames[swapped].Arms[0].Element != nil {
			t.Fatalf("round %d: a session with its own basis was served a cached element", round)
		}
		p, q := posA.State.CursorPosition, posS.State.CursorPosition
		if p.X == p.Y {
			t.Fatalf("round %d: x and y are equal (%v): the test cannot tell a swap", round, p)
		}
		if q.X != p.Y || q.Y != p.X || q.Z != p.Z {
			t.Fatalf("round %d: the swapped session sees %+v, the default view %+v: want x and y swapped", round, q, p)
		}
		if bytes.Equal(s, a) {
			t.Fatalf("round %d: the swapped session framed the default view's bytes", round)
		}
	}
}

// TestCommandsFollowTheSessionsView: a session's command is turned into
// the device frame through the view its session has when the command is
// written, message after message, although the session remembers its view
// between messages: a basis that swaps y and z, given in the message of
// the command, and then back to the identity, each change where the same
// force lands. A command written through a remembered stale view would
// push the arm the wrong way.
func TestCommandsFollowTheSessionsView(t *testing.T) {
	svc := startWith(t, Options{})
	arm := addArm(t, svc, simArm(0))
	sess, sink := open(t, svc, nil)
	entry := fmt.Sprintf(`"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":1,"y":2,"z":3}}}}]`, arm.ID)
	steps := []struct {
		name  string
		basis string // the basis the message sets with its command ("" none)
		want  hw.Vec3
	}{
		{"identity", "", hw.Vec3{X: 1, Y: 2, Z: 3}},
		{"identity again (remembered)", "", hw.Vec3{X: 1, Y: 2, Z: 3}},
		{"basis XZY", "XZY", hw.Vec3{X: 1, Y: 3, Z: 2}},
		{"basis XZY again (remembered)", "", hw.Vec3{X: 1, Y: 3, Z: 2}},
		{"basis back to the identity", "XYZ", hw.Vec3{X: 1, Y: 2, Z: 3}},
		{"identity once more (remembered)", "", hw.Vec3{X: 1, Y: 2, Z: 3}},
	}
	var got loop.Command
	for _, st := range steps {
		msg := "{" + entry + "}"
		if st.basis != "" {
			msg = fmt.Sprintf(`{"session":{"configure":{"basis":{"permutation":%q}}},%s}`, st.basis, entry)
		}
		if f := exchange(t, sess, sink, msg); len(f.errorCodes()) != 0 {
			t.Fatalf("%s: %v", st.name, f.errorCodes())
		}
		arm.Register().Read(&got)
		if got.Cmd.Mode != hw.ModeForce || got.Cmd.ForceN != st.want {
			t.Fatalf("%s: the register holds mode %v force %+v, want a force of %+v", st.name, got.Cmd.Mode, got.Cmd.ForceN, st.want)
		}
	}
}
