package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// TestFramesWarnWhileTheNodesStateIsStale: a gateway client holds 2 N on
// a node's arm, then the link is cut both ways. The node's lease ends the
// force, while the gateway keeps showing the last pushed state (force
// mode, 2 N) until the node is dropped (NodeTimeout, here an hour). The
// client's frames, and GET /devices (Service.FillFrame), must say the
// state is stale once it is older than the lab's lease (plus slack for a
// loaded machine), and stop saying so once states arrive again. Before
// state_stale, nothing in the frames told the client that its arm was not
// pushing and that its commands were not arriving (review40, s3).
//
// The bound is the node's lease, which its inventory carries: a gateway
// started with another --cluster-lease-ms (here 50 times the node's)
// warned only past its own, seconds after the node had ended the force.
func TestFramesWarnWhileTheNodesStateIsStale(t *testing.T) {
	for _, tc := range []struct {
		name      string
		gwLeaseMs int
	}{
		{"gateway's lease as the node's", 0},
		{"gateway's lease 50 times the node's", 5000},
	} {
		t.Run(tc.name, func(t *testing.T) { testFramesWarnWhileStale(t, tc.gwLeaseMs) })
	}
}

func testFramesWarnWhileStale(t *testing.T, gwLeaseMs int) {
	n, d := testNode(t)
	svc, shutdown := testService(t)
	g := newTestGateway(svc, time.Hour)
	if gwLeaseMs != 0 {
		g.cfg.LeaseMs = gwLeaseMs
	}
	serveTestGateway(t, g, shutdown, true)
	link := linkLab(t, g, n)
	c := openSession(t, g.svc, "")
	gwID := g.svc.Devices().All()[0].ID
	msg := `{"arm3":[{"device_id":"` + gwID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}}]}`
	hwtest.Eventually(t, 10*time.Second, "the force on the node's arm", func() bool {
		c.send(msg)
		return forceOn(d) > 1.9
	})
	hwtest.Eventually(t, 10*time.Second, "a frame without state_stale while the link is up", func() bool {
		return staleWarnings(c.send(msg), gwID) == 0
	})

	lease := time.Duration(n.cfg.LeaseMs) * time.Millisecond
	link.partitioned.Store(true)
	cutAt := time.Now()
	const slack = 2 * time.Second // a starved machine's late ticks and frames
	hwtest.Eventually(t, lease+slack, "a frame with state_stale after the cut", func() bool {
		return staleWarnings(c.send(msg), gwID) == 1
	})
	t.Logf("state_stale %v after the cut (lease %v)", time.Since(cutAt).Round(time.Millisecond), lease)
	hwtest.Eventually(t, 5*time.Second, "the node's lease ending the force", func() bool { return forceOn(d) < 1e-9 })
	// Still cut: every frame says so, and so does GET /devices.
	for range 5 {
		if staleWarnings(c.send(msg), gwID) != 1 {
			t.Fatal("a frame without state_stale while the link is still cut")
		}
	}
	var f protocol.Frame
	g.svc.FillFrame(&f, 0, true)
	if got := countStale(f.Warnings, gwID); got != 1 {
		t.Errorf("GET /devices carries %d state_stale warnings for %s while the link is cut, want 1: %v", got, gwID, f.Warnings)
	}

	link.partitioned.Store(false)
	hwtest.Eventually(t, 10*time.Second, "frames without state_stale once the link heals", func() bool {
		return staleWarnings(c.send(msg), gwID) == 0
	})
	f = protocol.Frame{}
	g.svc.FillFrame(&f, 0, true)
	if got := countStale(f.Warnings, gwID); got != 0 {
		t.Errorf("GET /devices still carries state_stale after the link healed: %v", f.Warnings)
	}
}

// staleWarnings counts the frame's state_stale warnings that name device
// id.
func staleWarnings(f map[string]any, id string) int {
	list, _ := f["warnings"].([]any)
	var ws []protocol.Error
	for _, w := range list {
		m, _ := w.(map[string]any)
		code, _ := m["code"].(string)
		message, _ := m["message"].(string)
		ws = append(ws, protocol.Error{Code: protocol.Code(code), Message: message})
	}
	return countStale(ws, id)
}

func countStale(ws []protocol.Error, id string) int {
	n := 0
	for _, w := range ws {
		if w.Code == protocol.CodeStateStale && strings.Contains(w.Message, id) {
			n++
		}
	}
	return n
}

// A proxy whose node has pushed no state yet stands in with an empty state
// (the origin, not calibrated): frames must warn once that is older than
// the lease, not take it for the arm's current state (tourlab2: a node
// that answered Subscribe before it pushed showed its arm so for 0.6 s).
func TestProxyWithoutAPushIsStale(t *testing.T) {
	g := testGateway(t, time.Hour)
	p := newProxy(g, &nodeState{id: "a", addr: "127.0.0.1:2"}, arm("uuid-never-pushed", "049D"), "049D")
	hwtest.Eventually(t, 10*time.Second, "the never-pushed proxy's state past the lease", func() bool {
		age, bound := p.StateStaleness()
		return age > bound
	})
}
