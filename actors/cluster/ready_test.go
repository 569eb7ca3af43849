package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/protocol"
)

// Gateway.Ready's promises, each: a node that never answers is waited for
// NodeTimeout from the link's start and no longer; a node that answered is
// waited for until its devices are listed; a node handing its devices over
// from the gateway's previous process (takeover pending) is waited for, up
// to pendingRefusalFor; once ready, the gateway stays ready.
func TestGatewayReadyWaitsForWhatItsLabHas(t *testing.T) {
	const node = "127.0.0.2:7070"
	ready := func(t *testing.T, g *Gateway, want bool, detail string) {
		t.Helper()
		ok, got := g.Ready()
		if ok != want || !strings.Contains(got, detail) {
			t.Fatalf("Ready: %v %q; want %v and %q", ok, got, want, detail)
		}
	}

	t.Run("a silent node for NodeTimeout only, and ready stays", func(t *testing.T) {
		g := testGateway(t, 300*time.Millisecond)
		ready(t, g, false, "cluster link is starting")
		g.mu.Lock()
		g.targets[node] = ""
		g.linkUp = time.Now()
		g.mu.Unlock()
		ready(t, g, false, "waiting for the inventory of "+node)
		g.mu.Lock()
		g.linkUp = time.Now().Add(-time.Second)
		g.mu.Unlock()
		ready(t, g, true, "silent for 300ms after it: "+node)
		// Another node that has not answered, later: still ready, and
		// still saying which node the start did not wait for (/readyz
		// asks again and again; the start's own wait asks first).
		g.mu.Lock()
		g.targets["127.0.0.3:7070"] = ""
		g.linkUp = time.Now()
		g.mu.Unlock()
		ready(t, g, true, "the devices of 0 of 1 nodes listed at the start; silent for 300ms after it: "+node)
	})

	t.Run("a node's devices until they are listed", func(t *testing.T) {
		svc, shutdown := testService(t)
		g := newTestGateway(svc, time.Hour)
		g.targets[node] = ""
		g.linkUp = time.Now()
		// Nothing adds the inventory's proxies yet.
		g.inventory(&wire.Inventory{NodeId: "a", Address: node, Devices: []*wire.Device{arm("uuid-a", "049D")}})
		ready(t, g, false, "adding the devices of node a")
		serveTestGateway(t, g, shutdown, false)
		waitAdded(t, g)
		ready(t, g, true, "the devices of the node listed at the start")
		ready(t, g, true, "the devices of the node listed at the start")
	})

	t.Run("a node handing over from the previous process", func(t *testing.T) {
		g := testGateway(t, 300*time.Millisecond)
		g.mu.Lock()
		g.targets[node] = ""
		g.linkUp = time.Now().Add(-time.Second) // past NodeTimeout: only the refusal waits
		g.mu.Unlock()
		g.subscribeRefused(&wire.SubscribeRefused{NodeId: "a", ProcessId: g.process, Code: string(protocol.CodeUnavailable), Error: "takeover pending"})
		ready(t, g, false, "node a hands its devices over")
		// Refused past pendingRefusalFor: a second live gateway holds
		// the node, which is not waited for.
		g.mu.Lock()
		g.refusedBy["a"].since = time.Now().Add(-pendingRefusalFor - time.Second)
		g.mu.Unlock()
		ready(t, g, true, "silent for 300ms after it: "+node)
	})
}
