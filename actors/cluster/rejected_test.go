package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// rejectedData is a stored-entry-rejected event's data as a test reads it.
type rejectedData struct {
	DeviceID *string `json:"device_id"`
	Profile  *string `json:"profile"`
	Entry    string  `json:"entry"`
	Path     string  `json:"path"`
	KeptAt   string  `json:"kept_at"`
	NodeID   *string `json:"node_id"`
}

// rejectionsWithin are the stored-entry-rejected events sub has within d.
func rejectionsWithin(t *testing.T, sub *activity.Subscription, d time.Duration) []rejectedData {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out []rejectedData
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			return out
		}
		if e.Name != event.NameStoredEntryRejected {
			continue
		}
		var r rejectedData
		if err := json.Unmarshal(e.Data, &r); err != nil {
			t.Fatalf("stored-entry-rejected data %s: %v", e.Data, err)
		}
		if k, _ := event.Lookup(e.Name); !slices.Equal(hwtest.JSONKeys(t, e.Data), k.Fields) {
			t.Errorf("stored-entry-rejected data %s: fields not the table's %v, in its order", e.Data, k.Fields)
		}
		out = append(out, r)
	}
}

// wantOneRejection checks that sub has exactly one stored-entry-rejected
// event within d, of the force clamp in file, naming node "n" and the
// gateway's device dev; it returns it.
func wantOneRejection(t *testing.T, sub *activity.Subscription, d time.Duration, file string, dev *actors.Device, when string) rejectedData {
	t.Helper()
	got := rejectionsWithin(t, sub, d)
	if len(got) != 1 {
		t.Fatalf("%s: the gateway published %d stored-entry-rejected events, want 1 (the node's force clamp): %+v", when, len(got), got)
	}
	r := got[0]
	if r.DeviceID == nil || *r.DeviceID != dev.ID || r.NodeID == nil || *r.NodeID != "n" || r.Profile != nil ||
		r.Entry != "force_clamp" || r.Path != file || !strings.Contains(r.KeptAt, ".rejected-") {
		t.Fatalf("%s: the gateway's stored-entry-rejected %+v, want device %s of node n, entry force_clamp in %s, kept at a .rejected- copy", when, r, dev.ID, file)
	}
	return r
}

// inventoryTo hands g n's inventory as the node answers a Subscribe, from
// the address joinInventory gives it.
func inventoryTo(g *Gateway, n *Node) {
	n.mu.Lock()
	inv := n.inventoryLocked()
	n.mu.Unlock()
	inv.Address = "127.0.0.2:7070"
	g.inventory(inv)
}

// liveRejection is the node's stored-entry-rejected event of d's force
// clamp as its forwardEvents relays it (the node read the document while
// the gateway was subscribed).
func liveRejection(t *testing.T, n *Node, d *actors.Device) *wire.Event {
	t.Helper()
	r := d.StoredRejections()
	if r == nil || len(r.Events) != 1 {
		t.Fatalf("the node's arm holds %+v rejected, want its force clamp", r)
	}
	e := r.Events[0]
	e.Seq, e.Time = 7, time.Now() // as the node's activity channel stamped it
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return &wire.Event{NodeId: n.cfg.NodeID, Json: b, NodeProcess: n.process}
}

// A lab's gateway that joined after its node read a stored document with
// an entry it did not accept (the upgrade order starts the gateway last;
// and a node's devices added before its cluster link, as hapticd's
// simulated ones are, are read before the node relays any event, so a
// gateway already running missed them too) publishes the node's
// stored-entry-rejected on its own activity channel (GET /events, the
// events socket), once, naming the node and the device by the gateway's
// id: not again at the node's next inventories (each Subscribe is
// answered with one), nor when the node's own event of the read reaches
// it. Until now the gateway's events never told of it.
func TestGatewayJoiningAfterTheNodeTellsItsRejectedStoredEntry(t *testing.T) {
	n, d, file := nodeWithRejected(t)
	g := testGateway(t, time.Hour)
	sub := subscribeEvents(t, g)
	linkLab(t, g, n) // the node's events are relayed from here on, as StartNode's
	dev := g.svc.Devices().All()[0]
	wantOneRejection(t, sub, 2*time.Second, file, dev, "the gateway joined after the node read its file")

	for range 3 {
		inventoryTo(g, n) // the node's answers to the gateway's next Subscribes
	}
	g.fromNode(liveRejection(t, n, d))
	if got := rejectionsWithin(t, sub, time.Second); len(got) != 0 {
		t.Fatalf("the node's next inventories and its live event of the same read were published again: %+v", got)
	}
}

// The node's live event of a read, reaching a gateway subscribed at the
// time, and the node's inventory stating the same entry, whichever comes
// first, are published once; unplugged and plugged in again on the node
// (the device leaves its inventory, and the node reads the document
// again), it is told again, once.
func TestGatewayTellsANodesRejectedEntryOncePerRead(t *testing.T) {
	n, d, file := nodeWithRejected(t)
	g := testGateway(t, time.Hour)
	sub := subscribeEvents(t, g)
	joinInventory(t, g, n)
	dev := g.svc.Devices().All()[0]
	wantOneRejection(t, sub, 2*time.Second, file, dev, "the inventory first")
	g.fromNode(liveRejection(t, n, d))
	if got := rejectionsWithin(t, sub, 500*time.Millisecond); len(got) != 0 {
		t.Fatalf("the node's live event after its inventory was published again: %+v", got)
	}

	// Unplugged on the node: its inventory no longer lists the device.
	inv := &wire.Inventory{NodeId: "n", Address: "127.0.0.2:7070", NodeProcess: n.process}
	g.inventory(inv)
	waitCond(t, "the device left the gateway", func() bool { return len(g.svc.Devices().All()) == 0 })
	// Plugged in again: the node's live event of its read comes before
	// the inventory that lists it again.
	g.fromNode(liveRejection(t, n, d))
	joinInventory(t, g, n)
	dev = g.svc.Devices().All()[0]
	wantOneRejection(t, sub, 2*time.Second, file, dev, "plugged in again on the node")
}

// A node restarted with the same bad file reads it again, and the gateway
// tells it again, though the copy the node keeps of the file (kept_at) is
// the one the first read kept: the node's process is new.
func TestGatewayTellsARestartedNodesRejectedEntryAgain(t *testing.T) {
	dir, file := stateWithRejected(t)
	g := testGateway(t, time.Hour)
	sub := subscribeEvents(t, g)
	var kept []string
	var first *wire.Event
	for run := range 2 {
		svc, shutdown := testServiceWith(t, actors.Options{StateDir: dir})
		d, err := svc.AddDevice(simArm(), false)
		if err != nil {
			t.Fatal(err)
		}
		n := testNodeServing(t, svc)
		if run == 0 {
			first = liveRejection(t, n, d)
		}
		if run == 0 {
			joinInventory(t, g, n)
		} else {
			inventoryTo(g, n) // at the address of the node's port, fixed
		}
		inventoryTo(g, n)
		dev := g.svc.Devices().All()[0]
		r := wantOneRejection(t, sub, 2*time.Second, file, dev, []string{"the node's first process", "the node's next process"}[run])
		kept = append(kept, r.KeptAt)
		if run == 1 {
			// The first process's event, late on its way: neither it nor
			// the next process's inventories are news.
			g.fromNode(first)
			inventoryTo(g, n)
			if got := rejectionsWithin(t, sub, time.Second); len(got) != 0 {
				t.Fatalf("the first process's late event and the next process's inventory were published again: %+v", got)
			}
		}
		shutdown()
	}
	if kept[0] != kept[1] {
		t.Errorf("the restarted node kept another copy of the same file (%s, then %s): this test no longer shows that the node's process, not the copy, tells its reads apart", kept[0], kept[1])
	}
}

// An entry set again (on the node) before the gateway joined is no longer
// one the node holds rejected: a GET of it does not warn, and the gateway
// tells nothing of it.
func TestGatewayTellsNothingOfAnEntrySetAgainBeforeItJoined(t *testing.T) {
	n, d, _ := nodeWithRejected(t)
	if _, err := n.svc.SetEntry(d, 0, defaultOf(protocol.KeyForceClamp)); err != nil {
		t.Fatal(err)
	}
	if _, w := getWarn(t, n.svc, d, protocol.KeyForceClamp); len(w) != 0 {
		t.Fatalf("the node's GET of the force clamp set again still warns: %v", w)
	}
	g := testGateway(t, time.Hour)
	sub := subscribeEvents(t, g)
	linkLab(t, g, n)
	if got := rejectionsWithin(t, sub, 1500*time.Millisecond); len(got) != 0 {
		t.Fatalf("the gateway told of an entry set again before it joined: %+v", got)
	}
}

// A node older than the fields states no rejected entries in its
// inventory and no process: the gateway publishes the node's live events
// as they come, each of them (as before), naming the node.
func TestGatewayOfAnOlderNodeRelaysItsRejectionsAsBefore(t *testing.T) {
	n, d, file := nodeWithRejected(t)
	g := testGateway(t, time.Hour)
	sub := subscribeEvents(t, g)
	n.mu.Lock()
	inv := n.inventoryLocked()
	n.mu.Unlock()
	inv.Address, inv.NodeProcess = "127.0.0.2:7070", 0
	for _, dev := range inv.Devices {
		dev.StoredRejected = nil
	}
	g.inventory(inv)
	waitAdded(t, g)
	if got := rejectionsWithin(t, sub, time.Second); len(got) != 0 {
		t.Fatalf("an older node's inventory was told of: %+v", got)
	}
	dev := g.svc.Devices().All()[0]
	for i := range 2 {
		live := liveRejection(t, n, d)
		live.NodeProcess = 0
		g.fromNode(live)
		wantOneRejection(t, sub, time.Second, file, dev, []string{"an older node's event", "an older node's event again"}[i])
	}
}
