package cluster

import (
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// rejoinWithPausedField has session A's field hold the node's arm through
// the gateway, the gateway drop the node (silent past NodeTimeout: a
// partition, which loses whatever the gateway sends meanwhile) and A leave,
// and the node's inventory bring the arm back to the gateway under a fresh
// proxy. The node never forgot the gateway (GatewayTimeout is 3 s).
func rejoinWithPausedField(t *testing.T) (*Node, *actors.Device, *Gateway) {
	t.Helper()
	n, d := testNode(t)
	g := testGateway(t, time.Hour)
	linkLab(t, g, n)
	a := openSession(t, g.svc, `,"lease":{"ms":100}`)
	msgA := func(fx string) string {
		return `{"arm3":[{"device_id":"` + d.Info.ID + `","effects":` + fx + `}]}`
	}
	if f := a.send(msgA(fieldAt(cursorOf(t, a.send(msgA(`{}`)))))); f["errors"] != nil {
		t.Fatal(f["errors"])
	}
	hwtest.Eventually(t, 10*time.Second, "A's field on the node's arm", func() bool {
		a.send(msgA(`{}`))
		return forceOn(d) > 1.4
	})
	// The gateway stops hearing the node and drops it.
	g.mu.Lock()
	g.dropNodeLocked("n", "probe: silent", false)
	g.mu.Unlock()
	hwtest.Eventually(t, 10*time.Second, "the arm gone from the gateway and released on the node", func() bool {
		return len(g.svc.Devices().All()) == 0 && d.Register().Owner() == 0 && forceOn(d) < 1e-9
	})
	a.close()
	// The node is heard again: its inventory brings the arm back.
	n.mu.Lock()
	inv := n.inventoryLocked()
	n.mu.Unlock()
	inv.Address = "127.0.0.2:7070"
	g.inventory(inv)
	waitAdded(t, g)
	return n, d, g
}

// TestProbeRejoinedGatewaysNewSessionFeelsNoPausedEffects (review32): the
// gateway drops the node (its messages stopped: a partition longer than
// NodeTimeout, shorter than the node's GatewayTimeout) while session A's
// field holds the arm. Nothing reaches the node: its lease lapses and,
// since labfx10, pauses A's field instead of dropping it. The node comes
// back, the gateway adds the arm with a fresh proxy (which knows nothing of
// A's declaration), and session B takes it commanding zero force: B must
// feel none of A's field.
func TestProbeRejoinedGatewaysNewSessionFeelsNoPausedEffects(t *testing.T) {
	n, d, g := rejoinWithPausedField(t)
	b := openSession(t, g.svc, "")
	zero := `{"arm3":[{"device_id":"` + d.Info.ID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`
	hwtest.Eventually(t, 10*time.Second, "B holds the arm", func() bool {
		return b.send(zero)["errors"] == nil && d.Register().Owner() != 0
	})
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

// TestProbeRejoinedGatewaysPausedEffectsDoNotStayForever (review32): after
// the same rejoin, nobody takes the arm. The gateway has no declaration for
// it and the node's pushes say one of its is in force: the node should not
// keep A's field (listed in force, ready to render under the gateway's next
// command) for as long as the gateway stays subscribed.
func TestProbeRejoinedGatewaysPausedEffectsDoNotStayForever(t *testing.T) {
	_, d, _ := rejoinWithPausedField(t)
	deadline := time.Now().Add(2 * time.Second) // 20 x resendAfter
	for d.Effects() != nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if d.Effects() != nil {
		t.Errorf("2 s after the rejoin the node still holds A's field (%d effects, session %d); nothing will withdraw it while the gateway stays subscribed",
			d.Effects().Len(), d.Effects().Session)
	}
}
