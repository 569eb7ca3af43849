package cluster

import (
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// A gateway session's effects and navigation render on the node's arm only
// under the commands of the session that declared them (wire.Command.session):
// another session's commands, under the same gateway owner, feel none of
// them from the first, also when the declaration is sent again while that
// session commands; the declaring session's next command renders them
// again, and a command that names no session (a gateway older than the
// field) renders them as before.
func TestNodeRendersADeclarationOnlyUnderItsSessionsCommands(t *testing.T) {
	cases := []struct {
		name    string
		declare func(n *Node, d *actors.Device, gen uint64, at hw.Vec3)
		// rendered: the node's loop rendered the declaration on its
		// latest tick.
		rendered func(n *Node, d *actors.Device) bool
	}{
		{"effects", func(n *Node, d *actors.Device, gen uint64, at hw.Vec3) {
			n.effects(declared(d.Info.UUID, gen, specsJSON(t, springBeside(d))))
		}, func(n *Node, d *actors.Device) bool {
			return forceOn(d) > 1e-9 // the commands hold zero force
		}},
		{"navigation", func(n *Node, d *actors.Device, gen uint64, at hw.Vec3) {
			n.navigation(navDeclared(d.Info.UUID, gen, 10, bubbleAround(t, at)))
		}, func(n *Node, d *actors.Device) bool {
			// The node's report of it, which the gateway's frames show.
			n.mu.Lock()
			nav := n.navs[fxKey{gatewaySession, d.Info.UUID}]
			n.mu.Unlock()
			var r loop.NavigationReport
			return nav != nil && nav.params != nil && nav.params.Navigation.Track.Load(&r) && r.Rendering
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, d := testNode(t)
			var snap loop.Snapshot
			d.Load(&snap)
			at := snap.State.PositionM
			var seq uint64
			command := func(session uint64) {
				seq++
				m := fresh(d.Info.UUID, seq, hw.ModeForce, 0, 0, 0)
				m.Session = session
				n.command(m)
			}
			felt := func(session uint64, what string) {
				t.Helper()
				hwtest.Eventually(t, 10*time.Second, what, func() bool {
					command(session)
					return c.rendered(n, d)
				})
			}
			lapse := func() {
				t.Helper()
				hwtest.Eventually(t, 10*time.Second, "the lease lapsed", func() bool {
					return !c.rendered(n, d)
				})
			}
			c.declare(n, d, 1, at) // session 3's (declared, navDeclared)
			felt(3, "the declaring session's commands feel it")
			lapse()
			command(4)
			holdEnd := time.Now().Add(300 * time.Millisecond)
			redeclared := false
			rendered := false
			for !time.Now().After(holdEnd) {
				command(4)
				rendered = rendered || c.rendered(n, d)
				if !redeclared && time.Until(holdEnd) < 150*time.Millisecond {
					c.declare(n, d, 2, at) // sent again while session 4 commands
					redeclared = true
				}
				time.Sleep(200 * time.Microsecond) // the sampling period
			}
			if rendered {
				t.Errorf("session 3's %s rendered under session 4's commands", c.name)
			}
			lapse()
			felt(3, "the declaring session's next commands feel it again")
			felt(0, "a command naming no session feels it")
		})
	}
}
