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

// A gateway restarted at its address: the node has taken the new
// process's Subscribe, and then a message of the old process arrives,
// younger than the lease (it waited in a socket buffer or a mailbox). Only
// the Subscribe said which process it was, so the node credited the
// message to the new process's owner: the old process's force command
// pushed the arm (1 N), and its field or bubble, declared for a session of
// the number the new process's first session has, rendered under that
// session's commands of zero force. Each message now says its process,
// and the node drops one of another process than the one it serves at the
// address: the arm gets no force and the new session feels none.
func TestNodeDropsAnOldProcesssMessagesAfterTheNewOnesSubscribe(t *testing.T) {
	const addr = "127.0.0.5:7070" // not testGW, which testNode subscribed
	const oldProcess, newProcess = 11, 12
	const session = 1 // the old process's session's number, and the new one's
	for _, c := range []struct {
		name string
		// old sends the old process's message, made now.
		old func(t *testing.T, n *Node, d *actors.Device)
	}{
		{"a force command", func(t *testing.T, n *Node, d *actors.Device) {
			m := fresh(d.Info.UUID, 1<<20, hw.ModeForce, 0, 0, 1)
			m.GatewayAddress, m.Session, m.ProcessId = addr, session, oldProcess
			n.command(m)
		}},
		{"an effects declaration", func(t *testing.T, n *Node, d *actors.Device) {
			m := declared(d.Info.UUID, 1, specsJSON(t, springBeside(d)))
			m.GatewayAddress, m.Session, m.ProcessId = addr, session, oldProcess
			n.effects(m)
		}},
		{"a navigation", func(t *testing.T, n *Node, d *actors.Device) {
			var snap loop.Snapshot
			d.Load(&snap)
			m := navDeclared(d.Info.UUID, 1, 10, bubbleAround(t, snap.State.PositionM))
			m.GatewayAddress, m.Session, m.ProcessId = addr, session, oldProcess
			n.navigation(m)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			n, d := testNode(t)
			n.wg.Add(1)
			go n.push() // counts the old process's silence
			subscribe := func(process uint64) {
				n.subscribe(&wire.Subscribe{GatewayAddress: addr, SentUnixNs: time.Now().UnixNano(), ProcessId: process})
			}
			subscribe(oldProcess)
			hwtest.Eventually(t, 10*time.Second, "the node serves the new process", func() bool {
				subscribe(newProcess)
				n.mu.Lock()
				defer n.mu.Unlock()
				return n.subs[addr].process == newProcess
			})

			c.old(t, n, d)
			// The new process's session holds the arm at zero force.
			var seq uint64
			end := time.Now().Add(400 * time.Millisecond)
			_, worst := lastForceUntil(d, func() bool {
				seq++
				m := fresh(d.Info.UUID, seq, hw.ModeForce, 0, 0, 0)
				m.GatewayAddress, m.Session, m.ProcessId = addr, session, newProcess
				n.command(m)
				c.old(t, n, d)
				return time.Now().After(end)
			})
			if worst > 1e-9 {
				t.Errorf("the arm, held at zero force by the new process's session, output %.2f N: the old process's %s", worst, c.name)
			}
			if l := n.svc.EffectsInForce(d); len(l.Effects) != 0 {
				t.Errorf("the node lists %d effects of the old process; want none", len(l.Effects))
			}
		})
	}
}
