package cluster

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol/event"
)

// joinInventory hands the node's inventory to the gateway, as a node heard
// again does, and waits until its devices are added: under the node's id,
// at an address of its own (a node's inventory names its remote's).
func joinInventory(t *testing.T, g *Gateway, n *Node) {
	t.Helper()
	n.mu.Lock()
	inv := n.inventoryLocked()
	n.mu.Unlock()
	inv.Address = "127.0.0.2:7070"
	g.inventory(inv)
	waitAdded(t, g)
}

// linkLab makes test gateway g serve test node n's devices over an
// in-process link: what each sends the other (to dead letters, as neither
// runs a remote) is carried over in order by goroutines and handed to the
// receiver as its actor would, so a gateway's session drives the node's
// arm end to end: commands, effects and navigation one way, state pushes,
// events and refusals the other. n subscribes as g's remote would, and again
// every 200 ms.
func linkLab(t *testing.T, g *Gateway, n *Node) *labLink {
	t.Helper()
	return linkLabLosing(t, g, n, func(any) bool { return false })
}

// labLink is the link linkLab made. It records when the node took each
// idle command (its own let-go of the arm, from which its loop ramps the
// force out), so that a test counts the release bound from there: the
// link's delay, up to 130 ms on a starved machine, comes before it.
type labLink struct {
	mu     sync.Mutex
	letGos []int64 // the loops' clock just after the node took each idle command
	took   chan struct{}
	// lag delays what the gateway sends the node from then on (ns), each
	// message by as much, in order; lagAfterLetGo becomes the lag once
	// the link has carried an idle command (slowAfterLetGo).
	lag, lagAfterLetGo atomic.Int64
	// partitioned loses everything either way while set, the node's
	// state pushes and the gateway's subscriptions too: a cut link.
	partitioned atomic.Bool
	// While holdingEvents, the node's events wait in heldEvents (in
	// order) and its pushes pass them: an event that reaches the gateway
	// late (holdEvents, releaseEvents). Under mu.
	holdingEvents bool
	heldEvents    []*wire.Event
	unhold        chan chan struct{}
}

// holdEvents holds the node's events back from the gateway until
// releaseEvents; what else the node sends goes on.
func (l *labLink) holdEvents() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holdingEvents = true
}

// heldEvent reports whether an event named name is held back.
func (l *labLink) heldEvent(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.heldEvents {
		var e event.Event
		if json.Unmarshal(m.Json, &e) == nil && e.Name == name {
			return true
		}
	}
	return false
}

// releaseEvents hands the gateway the events held back, in order, and
// returns once it has taken them; later ones pass at once.
func (l *labLink) releaseEvents(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	l.holdingEvents = false
	l.mu.Unlock()
	done := make(chan struct{})
	select {
	case l.unhold <- done:
	case <-time.After(10 * time.Second):
		t.Fatal("the link took no hand-over of the held events within 10 s")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the link did not hand over the held events within 10 s")
	}
}

// toGateway hands m (nil: nothing but what is held) to g, unless it is an
// event and events are held; what was held goes first once they are not.
func (l *labLink) toGateway(g *Gateway, m any) {
	l.mu.Lock()
	if e, ok := m.(*wire.Event); ok && l.holdingEvents {
		l.heldEvents = append(l.heldEvents, e)
		l.mu.Unlock()
		return
	}
	var held []*wire.Event
	if !l.holdingEvents {
		held, l.heldEvents = l.heldEvents, nil
	}
	l.mu.Unlock()
	for _, e := range held {
		g.fromNode(e)
	}
	if m != nil {
		g.fromNode(m)
	}
}

// slowAfterLetGo has the link carry the gateway's next idle command at
// once and delay everything after it by lag: a link whose delay grows
// just after the let-go (jitter), so the node ends its ramp of the force
// before it gets the gateway's commands that follow the let-go.
func (l *labLink) slowAfterLetGo(lag time.Duration) {
	l.lag.Store(0)
	l.lagAfterLetGo.Store(int64(lag))
}

// letGoCount is how many idle commands the node has taken so far.
func (l *labLink) letGoCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.letGos)
}

// nodeLetGo waits until the node has taken an idle command past the first
// seen ones and returns when it took the first of those, on the loops'
// clock: late by the rest of Node.command at most, as releasedAt is late by
// a poll, so the node's register stamped its release no later.
func (l *labLink) nodeLetGo(t *testing.T, seen int) int64 {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		l.mu.Lock()
		letGos, took := l.letGos, l.took
		l.mu.Unlock()
		if len(letGos) > seen {
			return letGos[seen]
		}
		select {
		case <-took:
		case <-deadline:
			t.Fatal("the node took no idle command within 10 s of the let-go on the gateway")
		}
	}
}

// tookIdle records that the node took an idle command at ns.
func (l *labLink) tookIdle(ns int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.letGos = append(l.letGos, ns)
	close(l.took)
	l.took = make(chan struct{})
}

// linkLabCuttable is linkLab whose gateway-to-node direction loses every
// message while the returned flag is set (a partition, or a node stopped).
func linkLabCuttable(t *testing.T, g *Gateway, n *Node) *atomic.Bool {
	t.Helper()
	cut := new(atomic.Bool)
	linkLabLosing(t, g, n, func(any) bool { return cut.Load() })
	return cut
}

// linkLabLosing is linkLab whose gateway-to-node direction loses the
// commands, declarations and navigation lose says to (called in the order
// the gateway sent them).
func linkLabLosing(t *testing.T, g *Gateway, n *Node, lose func(m any) bool) *labLink {
	t.Helper()
	link := &labLink{took: make(chan struct{}), unhold: make(chan chan struct{})}
	type toNodeMsg struct {
		m   any
		due time.Time // when the link hands it to the node
	}
	toNode := make(chan toNodeMsg, 1<<14)
	toGW := make(chan any, 1<<14)
	done := make(chan struct{})
	var wg sync.WaitGroup
	gsub := g.sys.EventStream.Subscribe(func(ev any) {
		if dl, ok := ev.(*actor.DeadLetterEvent); ok {
			switch m := actor.UnwrapEnvelopeMessage(dl.Message).(type) {
			case *wire.Command, *wire.Effects, *wire.Navigation:
				if !lose(m) && !link.partitioned.Load() {
					toNode <- toNodeMsg{m, time.Now().Add(time.Duration(link.lag.Load()))}
				}
				if c, ok := m.(*wire.Command); ok && hw.ControlMode(c.Mode) == hw.ModeIdle {
					if lag := link.lagAfterLetGo.Swap(0); lag > 0 {
						link.lag.Store(lag)
					}
				}
			}
		}
	})
	nsub := n.sys.EventStream.Subscribe(func(ev any) {
		// Everything addressed to the gateway: its dispatch (fromNode)
		// takes what a gateway actor would and ignores the rest.
		if dl, ok := ev.(*actor.DeadLetterEvent); ok && dl.PID != nil && dl.PID.Address == g.addr && !link.partitioned.Load() {
			toGW <- actor.UnwrapEnvelopeMessage(dl.Message)
		}
	})
	subscribe := func() {
		if !link.partitioned.Load() {
			n.subscribe(g.subscription())
		}
	}
	subscribe()
	wg.Add(3)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case sent := <-toNode:
				if wait := time.Until(sent.due); wait > 0 {
					select {
					case <-done:
						return
					case <-time.After(wait):
					}
				}
				switch m := sent.m.(type) {
				case *wire.Command:
					n.command(m)
					if hw.ControlMode(m.Mode) == hw.ModeIdle {
						link.tookIdle(loop.SystemClock().Now())
					}
				case *wire.Effects:
					n.effects(m)
				case *wire.Navigation:
					n.navigation(m)
				}
			}
		}
	}()
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case m := <-toGW:
				link.toGateway(g, m)
			case done := <-link.unhold:
				link.toGateway(g, nil)
				close(done)
			}
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				subscribe()
			}
		}
	}()
	events, err := n.svc.Activity().Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	n.wg.Add(2)
	go n.push()
	go n.forwardEvents(events)
	joinInventory(t, g, n)
	t.Cleanup(func() {
		close(done)
		wg.Wait()
		g.sys.EventStream.Unsubscribe(gsub)
		n.sys.EventStream.Unsubscribe(nsub)
	})
	return link
}

// TestLabBridgeCarriesTheNodesEvents: an event on the node (here a
// device's rate warning) reaches the gateway's clients over the in-process
// link as over a real one, naming the device by the gateway's id.
func TestLabBridgeCarriesTheNodesEvents(t *testing.T) {
	n, d := testNode(t)
	g := testGateway(t, time.Hour)
	linkLab(t, g, n)
	sub := subscribeEvents(t, g)
	n.svc.Activity().Publish(event.ControlRateWarning("inverse3", d.Info.ID, 1700, 1000, 3))
	var got struct {
		ID         string `json:"device_id"`
		Suppressed int    `json:"suppressed"`
	}
	if err := json.Unmarshal(nextEvent(t, sub, event.NameControlRateWarning), &got); err != nil {
		t.Fatal(err)
	}
	if want := g.svc.Devices().All()[0].ID; got.ID != want || got.Suppressed != 3 {
		t.Errorf("the gateway's event names device %q suppressed %d, want %q 3", got.ID, got.Suppressed, want)
	}
}
