package cluster

import (
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// A gateway restarted at its fixed cluster port (--cluster-port, as with
// --membership static) numbers its sessions from 1 again. The old process
// had its session declare a field (or a bubble) on the node's arm and
// command it, and died (SIGKILL): nothing withdrew the declaration. The new
// process's first session, the same number, takes the arm commanding zero
// force while the new process's withdrawals are lost too (a lossy link):
// it feels none of the old process's declaration, and the node lists none
// of it. The node knew both processes as one gateway, by their address, and
// rendered the old session's field or bubble under the new session's
// commands (1 to 4 N). So also when the old process was built before the
// gateway said which process it is.
func TestRestartedGatewaysSessionFeelsNoneOfTheOldProcesssDeclarations(t *testing.T) {
	declarations := []struct {
		name    string
		declare func(t *testing.T, n *Node, d *actors.Device, addr string, session uint64)
	}{
		{"effects", func(t *testing.T, n *Node, d *actors.Device, addr string, session uint64) {
			m := declared(d.Info.UUID, 1, specsJSON(t, springBeside(d)))
			m.GatewayAddress, m.Session = addr, session
			n.effects(m)
		}},
		{"navigation", func(t *testing.T, n *Node, d *actors.Device, addr string, session uint64) {
			var snap loop.Snapshot
			d.Load(&snap)
			m := navDeclared(d.Info.UUID, 1, 10, bubbleAround(t, snap.State.PositionM))
			m.GatewayAddress, m.Session = addr, session
			n.navigation(m)
		}},
	}
	olds := []struct {
		name    string
		process uint64 // the old process's wire.Subscribe.process_id
	}{{"old process of this build", newProcessID()}, {"old process of an older build", 0}}
	for _, c := range declarations {
		for _, old := range olds {
			t.Run(c.name+"/"+old.name, func(t *testing.T) {
				restartedGatewayFeelsNothing(t, old.process, c.declare)
			})
		}
	}
}

// restartedGatewayFeelsNothing is one case of
// TestRestartedGatewaysSessionFeelsNoneOfTheOldProcesssDeclarations: the
// old process says process, and declare makes its declaration.
func restartedGatewayFeelsNothing(t *testing.T, process uint64, declare func(t *testing.T, n *Node, d *actors.Device, addr string, session uint64)) {
	n, d := testNode(t)
	g := testGateway(t, time.Hour) // the new process, at the old one's address
	// The new session's number: the old process's first session had it too.
	const session = 1

	// The old process: it subscribes, declares, commands, dies.
	n.subscribe(&wire.Subscribe{GatewayId: g.cfg.NodeID, GatewayAddress: g.addr, SentUnixNs: time.Now().UnixNano(), ProcessId: process})
	declare(t, n, d, g.addr, session)
	var seq uint64
	hwtest.Eventually(t, 10*time.Second, "the old process's session feels its declaration", func() bool {
		seq++
		m := fresh(d.Info.UUID, seq, hw.ModeForce, 0, 0, 0)
		m.GatewayAddress, m.Session = g.addr, session
		n.command(m)
		return forceOn(d) > 0.05
	})
	hwtest.Eventually(t, 10*time.Second, "the old process's lease lapsed on the node", func() bool {
		return d.Register().Owner() == 0 && forceOn(d) < 1e-9
	})

	// The new process: every withdrawal it sends is lost.
	linkLabLosing(t, g, n, func(m any) bool {
		switch m := m.(type) {
		case *wire.Effects:
			return len(m.Specs) == 0
		case *wire.Navigation:
			return len(m.Bubble) == 0
		case *wire.Command:
			return hw.ControlMode(m.Mode) == hw.ModeIdle
		}
		return false
	})
	b := openSession(t, g.svc, "")
	if b.sess.ID != session {
		t.Fatalf("the new process's first session is %d, want %d: the test no longer reuses the old one's number", b.sess.ID, session)
	}
	zero := `{"arm3":[{"device_id":"` + g.svc.Devices().All()[0].ID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`
	hwtest.Eventually(t, 10*time.Second, "the new session holds the node's arm", func() bool {
		return b.send(zero)["errors"] == nil && d.Register().Owner() != 0
	})
	checkFeelsNothing(t, n, d, b, zero)
}

// A node tells a gateway's new process from the same process subscribing
// again (every 250 ms) by the Subscribe's process_id: under the same
// process, or a gateway older than the field (none, each time), the
// session's spring keeps rendering under its commands; a new process at
// the address, whichever build either is, taken once the old one has
// fallen silent (takeoverSilence), feels none of the old one's spring
// under a session of the same number.
func TestNodeTellsAGatewaysNewProcessFromItsNextSubscription(t *testing.T) {
	for _, c := range []struct {
		name        string
		first, next uint64 // the process_id of the two processes' Subscribes and commands
		kept        bool
	}{
		{"the same process", 7, 7, true},
		{"a gateway older than process ids", 0, 0, true},
		{"a new process", 7, 8, false},
		{"an older build's process, then this build's", 0, 8, false},
		{"this build's process, then an older build's", 7, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, d := testNode(t)
			n.wg.Add(1)
			go n.push() // counts the old process's silence
			// Not testGW, which testNode subscribed as a gateway older
			// than process ids, and which the node keeps for a while.
			const addr = "127.0.0.5:7070"
			process := c.first
			subscribe := func() {
				n.subscribe(&wire.Subscribe{GatewayAddress: addr, SentUnixNs: time.Now().UnixNano(), ProcessId: process})
			}
			var seq uint64
			command := func() { // session 3's, as declared's
				seq++
				m := fresh(d.Info.UUID, seq, hw.ModeForce, 0, 0, 0)
				m.GatewayAddress, m.Session, m.ProcessId = addr, 3, process
				n.command(m)
			}
			subscribe()
			m := declared(d.Info.UUID, 1, specsJSON(t, springBeside(d)))
			m.GatewayAddress, m.ProcessId = addr, process
			n.effects(m)
			hwtest.Eventually(t, 10*time.Second, "the session feels its spring", func() bool {
				command()
				return forceOn(d) > 0.05
			})
			process = c.next
			hwtest.Eventually(t, 10*time.Second, "the node serves the gateway's next subscription", func() bool {
				subscribe()
				n.mu.Lock()
				defer n.mu.Unlock()
				return n.subs[addr].process == c.next
			})
			rendering := func() bool {
				var rep loop.EffectsReport
				return d.LoadEffects(&rep) && rep.Rendering && rep.N > 0
			}
			if c.kept {
				// Commanded right before each look: the node's 100 ms
				// lease may lapse between two looks on a loaded machine
				// (the spring pauses with it), never the spring itself.
				hwtest.Eventually(t, 10*time.Second, "the spring renders under the session's commands after its gateway subscribed again", func() bool {
					command()
					return rendering()
				})
				return
			}
			// Past a release's ramp (20 ms), then watched for 300 ms.
			settled := time.Now().Add(150 * time.Millisecond)
			lastForceUntil(d, func() bool { command(); return time.Now().After(settled) })
			end, rendered := time.Now().Add(300*time.Millisecond), false
			_, worst := lastForceUntil(d, func() bool {
				command()
				rendered = rendered || rendering()
				return time.Now().After(end)
			})
			if rendered || worst > 1e-9 {
				t.Errorf("the new process's session felt %.2f N (spring rendering: %v): the old process's spring", worst, rendered)
			}
		})
	}
}
