package cluster

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// rejoinWithPausedField has session A's field hold the node's arm through
// the gateway, the gateway drop the node (silent past NodeTimeout: a
// partition, which loses whatever the gateway sends meanwhile) and A leave,
// and the node's inventory bring the arm back to the gateway under a fresh
// proxy. The node never forgot the gateway (GatewayTimeout is 3 s), so its
// lease lapse paused A's field instead of dropping it.
func rejoinWithPausedField(t *testing.T) (*Node, *actors.Device, *Gateway) {
	t.Helper()
	n, d := testNode(t)
	g := testGateway(t, time.Hour)
	linkLab(t, g, n)
	a, _ := holdField(t, g.svc, d)
	g.mu.Lock()
	g.dropNodeLocked("n", "test: silent past NodeTimeout", false)
	g.mu.Unlock()
	hwtest.Eventually(t, 10*time.Second, "the arm gone from the gateway and released on the node", func() bool {
		return len(g.svc.Devices().All()) == 0 && d.Register().Owner() == 0 && forceOn(d) < 1e-9
	})
	a.close()
	joinInventory(t, g, n)
	return n, d, g
}

// checkFeelsNothing has session b send zero, its zero-force command on the
// node's arm d, for 500 ms, and fails if the arm rendered any force
// meanwhile or the node lists effects in force.
func checkFeelsNothing(t *testing.T, n *Node, d *actors.Device, b *gatewayClient, zero string) {
	t.Helper()
	holdEnd := time.Now().Add(500 * time.Millisecond)
	_, worst := lastForceUntil(d, func() bool {
		b.send(zero)
		return time.Now().After(holdEnd)
	})
	if worst > 1e-9 {
		t.Errorf("B, commanding zero force, felt %.2f N: A's paused field rendered under B's commands", worst)
	}
	if l := n.svc.EffectsInForce(d); len(l.Effects) != 0 {
		t.Errorf("while B holds the arm the node lists %d effects; want none", len(l.Effects))
	}
	b.close()
}

// After the gateway regains the node, session B takes the arm commanding
// zero force: B feels none of A's paused field, and the node lists none.
// The fresh proxy knew nothing of A's declaration and the node rendered it
// under B's commands (1.50 N), which go under the same gateway owner.
func TestRejoinedGatewaysNewSessionFeelsNoPausedEffects(t *testing.T) {
	n, d, g := rejoinWithPausedField(t)
	b := openSession(t, g.svc, "")
	zero := `{"arm3":[{"device_id":"` + d.Info.ID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`
	hwtest.Eventually(t, 10*time.Second, "B holds the arm", func() bool {
		return b.send(zero)["errors"] == nil && d.Register().Owner() != 0
	})
	checkFeelsNothing(t, n, d, b, zero)
}

// After the same rejoin nobody takes the arm: the node does not keep A's
// field (listed in force, ready to render under the gateway's next
// command) while the gateway stays subscribed. It kept it for good: a
// fresh proxy ignored the generation the node pushed.
func TestRejoinedGatewaysPausedEffectsGo(t *testing.T) {
	_, d, _ := rejoinWithPausedField(t)
	hwtest.Eventually(t, 10*time.Second, "A's paused field gone from the node", func() bool {
		return d.Effects() == nil
	})
}

// A cut shorter than NodeTimeout loses session A's withdrawal and the idle
// that ended its control; the node's lease lapse pauses A's field. Session
// B, taking the arm after the link is back, feels none of it: the gateway
// withdraws the effects on the node again before B's first command. B felt
// it for about one push plus resendAfter.
func TestNewSessionAfterALostWithdrawalFeelsNoPausedEffects(t *testing.T) {
	n, d := testNode(t)
	g := testGateway(t, time.Hour)
	cut := linkLabCuttable(t, g, n)
	a, _ := holdField(t, g.svc, d)
	cut.Store(true)
	a.close()
	gd := g.svc.Devices().All()[0]
	hwtest.Eventually(t, 10*time.Second, "A gone on the gateway, lapsed and released on the node", func() bool {
		return gd.Register().Owner() == 0 && d.Register().Owner() == 0 && forceOn(d) < 1e-9
	})
	if d.Effects() == nil {
		t.Fatal("the node dropped A's field during the cut: the test no longer covers a lost withdrawal")
	}
	cut.Store(false)
	b := openSession(t, g.svc, "")
	zero := `{"arm3":[{"device_id":"` + d.Info.ID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`
	checkFeelsNothing(t, n, d, b, zero)
}

// Session A's field holds the node's arm; A leaves, and every message that
// would end its effects on the node is lost (the withdrawals and the idle
// that releases A's control, each time the gateway sends them), while
// session B's commands get through. B feels none of A's field from its
// first command on: the node renders a gateway's effects only under the
// commands of the session that declared them (wire.Command.session). The
// node rendered it under B's commands, which go under the same gateway
// owner, for as long as the withdrawals were lost.
func TestNewSessionFeelsNoEffectsWhoseWithdrawalWasLost(t *testing.T) {
	n, d := testNode(t)
	g := testGateway(t, time.Hour)
	var losing atomic.Bool
	linkLabLosing(t, g, n, func(m any) bool {
		switch m := m.(type) {
		case *wire.Effects:
			return losing.Load() && len(m.Specs) == 0
		case *wire.Command:
			return losing.Load() && hw.ControlMode(m.Mode) == hw.ModeIdle
		}
		return false
	})
	a, _ := holdField(t, g.svc, d)
	losing.Store(true)
	a.close()
	gd := g.svc.Devices().All()[0]
	hwtest.Eventually(t, 10*time.Second, "A gone on the gateway and lapsed on the node", func() bool {
		return gd.Register().Owner() == 0 && forceOn(d) < 1e-9
	})
	if d.Effects() == nil {
		t.Fatal("the node dropped A's field: the test no longer covers a lost withdrawal")
	}
	b := openSession(t, g.svc, "")
	zero := `{"arm3":[{"device_id":"` + d.Info.ID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`
	checkFeelsNothing(t, n, d, b, zero)
}
