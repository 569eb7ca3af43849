package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// linkGatewayActor hands g everything n sends to g's address as g's
// gateway actor would (inventories and refusals included, which linkLab's
// bridge does not carry), and has g subscribe to n every 200 ms, as its
// remote would. It joins no inventory itself: g takes what it takes. It
// returns how many inventories g has handled.
func linkGatewayActor(t *testing.T, g *Gateway, n *Node) *atomic.Int64 {
	t.Helper()
	inventories, _ := linkGatewayActorStoppable(t, g, n)
	return inventories
}

// linkGatewayActorStoppable is linkGatewayActor with what cuts the link
// before the test ends (n's process stopped), at once and for good.
func linkGatewayActorStoppable(t *testing.T, g *Gateway, n *Node) (inventories *atomic.Int64, stop func()) {
	t.Helper()
	inventories = new(atomic.Int64)
	toGW := make(chan any, 1<<14)
	sub := n.sys.EventStream.Subscribe(func(ev any) {
		if dl, ok := ev.(*actor.DeadLetterEvent); ok && dl.PID != nil && dl.PID.Address == g.addr {
			toGW <- actor.UnwrapEnvelopeMessage(dl.Message)
		}
	})
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		n.subscribe(g.subscription())
		for {
			select {
			case <-done:
				return
			case m := <-toGW:
				switch m := m.(type) {
				case *wire.Inventory:
					g.inventory(m)
					inventories.Add(1)
				case *wire.SubscribeRefused:
					g.subscribeRefused(m)
				default:
					g.fromNode(m)
				}
			case <-tick.C:
				n.subscribe(g.subscription())
			}
		}
	}()
	stop = sync.OnceFunc(func() {
		close(done)
		wg.Wait()
		n.sys.EventStream.Unsubscribe(sub)
	})
	t.Cleanup(stop)
	return inventories, stop
}

// Two live gateway processes advertise one cluster address (a
// misconfigured --cluster-advertise, or NAT). The node took the first; the
// second subscribed every 200 ms with its own process id, and the node took
// each of them for a restart of the first: it dropped the first's owner
// state and released its hold on the arm every round, so the first's
// session lost its lease and its force on the arm over and over (and the
// first's next Subscribe did the same to the second). The node now refuses
// the second: the first's session keeps the arm, under one owner, with its
// force through several rounds; the second logs the refusal, publishes
// lab-node-refused with the node's reason, and serves none of the node's
// devices.
func TestSecondGatewayAtAnAddressIsRefusedAndTheFirstKeepsTheArm(t *testing.T) {
	n, d := testNode(t)
	first := testGateway(t, time.Hour)
	linkLab(t, first, n)
	c := openSession(t, first.svc, "")
	push := `{"arm3":[{"device_id":"` + first.svc.Devices().All()[0].ID + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`
	hwtest.Eventually(t, 10*time.Second, "the first gateway's session pushes the node's arm", func() bool {
		return c.send(push)["errors"] == nil && forceOn(d) > 0.9
	})
	owner := d.Register().Owner()
	served := func() *subscriber {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.subs[first.addr]
	}
	firsts := served()

	second := testGateway(t, time.Hour)
	second.addr = first.addr // the same advertised address
	refusals := subscribeEvents(t, second)
	inventories := linkGatewayActor(t, second, n)

	// Seven of the second's subscription rounds. Each knocked the first
	// off: the node forgot its owner (a new subscriber at the address),
	// released the arm, and wrote the first's next commands under a new
	// owner. A lapse of the node's 100 ms lease on a starved machine
	// (owner 0 for a moment) is not that, and its force comes back.
	end := time.Now().Add(1500 * time.Millisecond)
	weakest, owners, replaced := 2.0, map[uint64]bool{}, 0
	for time.Now().Before(end) {
		if f := c.send(push); f["errors"] != nil {
			t.Fatalf("the first gateway's session got errors: %v", f["errors"])
		}
		next := time.Now().Add(50 * time.Millisecond)
		lastForceUntil(d, func() bool {
			weakest = min(weakest, forceOn(d))
			owners[d.Register().Owner()] = true
			return time.Now().After(next)
		})
		if served() != firsts {
			replaced++
		}
	}
	delete(owners, 0)
	if replaced > 0 || len(owners) != 1 || !owners[owner] {
		t.Errorf("while a second gateway process subscribed at the first's address, the node served another process at it in %d of the samples, "+
			"and the arm's owners were %v (the first's: %d); the first's session's 1 N fell to %.2f N", replaced, owners, owner, weakest)
	}
	hwtest.Eventually(t, 10*time.Second, "the first gateway's session's force on the arm", func() bool {
		return c.send(push)["errors"] == nil && forceOn(d) > 0.05
	})

	var got struct {
		Node   string `json:"node_id"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(nextEvent(t, refusals, event.NameLabNodeRefused), &got); err != nil {
		t.Fatal(err)
	}
	if got.Node != "n" || !strings.Contains(got.Reason, "two live gateway processes advertise "+first.addr) {
		t.Errorf("the second gateway's lab-node-refused names node %q, reason %q", got.Node, got.Reason)
	}
	// The node's device list changes: its push of the new inventory to
	// the address is the first's, not the second's.
	seen := inventories.Load()
	if _, err := n.svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: 1, PeriodS: 0.001}), false); err != nil {
		t.Fatal(err)
	}
	hwtest.Eventually(t, 10*time.Second, "the node's new inventory reaches the second gateway's address", func() bool {
		return inventories.Load() > seen
	})
	second.mu.Lock()
	proxies := len(second.proxies)
	second.mu.Unlock()
	if devs := second.svc.Devices().All(); len(devs) != 0 || proxies != 0 {
		t.Errorf("the refused gateway serves %d of the node's devices (%d proxies)", len(devs), proxies)
	}
}

// A refusal reaches only the process it names, and an inventory only the
// process the node serves: a gateway that gets another process's (both
// advertise one address) keeps what it has and is not refused.
func TestGatewayTakesOnlyItsOwnProcesssAnswers(t *testing.T) {
	g := testGateway(t, time.Hour)
	events := subscribeEvents(t, g)
	other := g.process + 1
	g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", ProcessId: other, Devices: []*wire.Device{arm("uuid-a", "049D")}})
	g.subscribeRefused(&wire.SubscribeRefused{NodeId: "b", ProcessId: other, Error: "not this one's"})
	g.inventory(&wire.Inventory{NodeId: "b", Address: "127.0.0.3:7070", ProcessId: g.process, Devices: []*wire.Device{arm("uuid-b", "049E")}})
	waitAdded(t, g)
	if devs := g.svc.Devices().All(); len(devs) != 1 || devs[0].Info.UUID != "uuid-b" {
		t.Fatalf("the gateway serves %v, want uuid-b alone (its own node's answer)", devs)
	}
	g.subscribeRefused(&wire.SubscribeRefused{NodeId: "b", ProcessId: g.process, Error: "node b: two live gateway processes advertise " + g.addr})
	if data := nextEvent(t, events, event.NameLabNodeRefused); !strings.Contains(string(data), `"node_id":"b"`) {
		t.Errorf("lab-node-refused says %s, want node b", data)
	}
	hwtest.Eventually(t, 10*time.Second, "node b's arm leaves the refused gateway", func() bool {
		return len(g.svc.Devices().All()) == 0
	})
}

// A gateway restarted at its fixed cluster port (systemctl restart): the
// old process stops subscribing, the new one subscribes 300 ms later. The
// node waits out the old one's silence (takeoverSilence) before it takes
// the new one, and said so with the refusal a second live process gets:
// every restart logged "two live gateway processes advertise …" at error
// level and published lab-node-refused, then the devices came back. The
// new process now gets its devices back with no lab-node-refused.
func TestRestartedGatewayGetsItsDevicesBackWithoutARefusalEvent(t *testing.T) {
	n, _ := testNode(t)
	n.wg.Add(1)
	go n.push() // counts the old process's silence
	g := testGateway(t, time.Hour)
	old := &wire.Subscribe{GatewayAddress: g.addr, ProcessId: g.process ^ 1}
	for range 3 {
		old.SentUnixNs = time.Now().UnixNano()
		n.subscribe(old)
		time.Sleep(200 * time.Millisecond) // the old process's subscription rounds
	}
	time.Sleep(300 * time.Millisecond) // the old process is gone; the new one starts
	events := subscribeEvents(t, g)
	linkGatewayActor(t, g, n)
	hwtest.Eventually(t, 10*time.Second, "the restarted gateway serves the node's arm", func() bool {
		return len(g.svc.Devices().All()) == 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	for {
		e, err := events.Next(ctx)
		if err != nil {
			break // every event published so far was read
		}
		if e.Name == event.NameLabNodeRefused {
			t.Errorf("a plain restart published %s: %s", e.Name, e.Data)
		}
	}
}

// A node that refused the gateway and then went away for good (its
// refusals stop) is forgotten: when it refuses again later, that is
// published again. Its refusal was kept until its inventory came, so a
// later refusal from that node id was never published.
func TestGatewayPublishesARefusalAgainAfterTheNodesRefusalsStopped(t *testing.T) {
	g := testGateway(t, time.Hour)
	events := subscribeEvents(t, g)
	refuse := func() {
		g.subscribeRefused(&wire.SubscribeRefused{NodeId: "b", ProcessId: g.process, Code: string(protocol.CodeDeviceBusy),
			Error: "node b: two live gateway processes advertise " + g.addr})
	}
	refuse()
	nextEvent(t, events, event.NameLabNodeRefused)
	refuse() // the next round's: no news
	hwtest.Eventually(t, 10*time.Second, "the gateway forgets node b's refusals once they stop", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		_, kept := g.refusedBy["b"]
		return !kept
	})
	refuse()
	if data := nextEvent(t, events, event.NameLabNodeRefused); !strings.Contains(string(data), `"node_id":"b"`) {
		t.Errorf("lab-node-refused says %s, want node b", data)
	}
}

// A second live gateway process at an address the node serves keeps
// knocking every subscription round while the first keeps subscribing: it
// is refused as a duplicate (device_busy, which its gateway tells its
// operator) every round after the first, for as long as it knocks. Its
// record used to be dropped GatewayTimeout after its first knock, so every
// 3 s it was answered as a restart waiting its turn (unavailable) for a
// round, as if the duplicate had gone.
func TestADuplicateThatKeepsKnockingStaysRefused(t *testing.T) {
	n, _ := testNode(t)
	t0 := time.Now()
	holder := &subscriber{process: 1, lastSeen: t0}
	holder.heard = true
	dup := &wire.Subscribe{GatewayAddress: testGW, ProcessId: 2}
	n.mu.Lock()
	defer n.mu.Unlock()
	if code, _ := n.refusalLocked(holder, dup, t0.Add(time.Millisecond)); code != protocol.CodeUnavailable {
		t.Fatalf("first knock while the holder was heard just before: %q, want %q (it may be a restart)", code, protocol.CodeUnavailable)
	}
	for i := 1; time.Duration(i)*SubscribeEvery < 4*GatewayTimeout; i++ {
		now := t0.Add(time.Duration(i) * SubscribeEvery)
		holder.lastSeen = now.Add(-time.Millisecond) // the holder subscribes every round too
		if code, _ := n.refusalLocked(holder, dup, now); code != protocol.CodeDeviceBusy {
			t.Fatalf("round %d (%v after the first knock): %q, want %q", i, now.Sub(t0), code, protocol.CodeDeviceBusy)
		}
	}
}
