package actors

import (
	"testing"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw/sim"
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
	arm := sim.NewArm(sim.ArmOptions{PeriodS: 0.001})
	info := arm.Info()
	d := &Device{Type: protocol.TypeArm, ID: info.ID, Info: info}
	d.rt = loop.NewDevice(arm, loop.DeviceOptions{})
	core := &deviceCore{dev: d, log: zerolog.Nop(), settings: protocol.DefaultSettings()}
	core.init(protocol.DefaultDeviceConfig())

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
	if len(memo) != 0 || memo[:1][0].dev != nil {
		t.Fatalf("keep(0) left %d entries, first device %p", len(memo), memo[:1][0].dev)
	}
}
