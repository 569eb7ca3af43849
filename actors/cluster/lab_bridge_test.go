package cluster

import (
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/cluster/wire"
)

// linkLab makes test gateway g serve test node n's devices over an
// in-process link: what each sends the other (to dead letters, as neither
// runs a remote) is carried over in order by goroutines and handed to the
// receiver as its actor would, so a gateway's session drives the node's
// arm end to end: commands, effects and navigation one way, state pushes
// and refusals the other. n subscribes as g's remote would, and again
// every 200 ms.
func linkLab(t *testing.T, g *Gateway, n *Node) {
	t.Helper()
	toNode := make(chan any, 1<<14)
	toGW := make(chan any, 1<<14)
	done := make(chan struct{})
	var wg sync.WaitGroup
	gsub := g.sys.EventStream.Subscribe(func(ev any) {
		if dl, ok := ev.(*actor.DeadLetterEvent); ok {
			switch m := actor.UnwrapEnvelopeMessage(dl.Message).(type) {
			case *wire.Command, *wire.Effects, *wire.Navigation:
				toNode <- m
			}
		}
	})
	nsub := n.sys.EventStream.Subscribe(func(ev any) {
		if dl, ok := ev.(*actor.DeadLetterEvent); ok && dl.PID != nil && dl.PID.Address == g.addr {
			switch m := actor.UnwrapEnvelopeMessage(dl.Message).(type) {
			case *wire.StateBatch, *wire.EffectsReply, *wire.NavigationReply:
				toGW <- m
			}
		}
	})
	subscribe := func() {
		n.subscribe(&wire.Subscribe{GatewayId: "gw", GatewayAddress: g.addr, SentUnixNs: time.Now().UnixNano()})
	}
	subscribe()
	wg.Add(3)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case m := <-toNode:
				switch m := m.(type) {
				case *wire.Command:
					n.command(m)
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
				g.fromNode(m)
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
	n.wg.Add(1)
	go n.push()
	// The node's devices on the gateway, under the node's id, at an
	// address of its own (a node's inventory names its remote's).
	n.mu.Lock()
	inv := n.inventoryLocked()
	n.mu.Unlock()
	inv.Address = "127.0.0.2:7070"
	g.inventory(inv)
	waitAdded(t, g)
	t.Cleanup(func() {
		close(done)
		wg.Wait()
		g.sys.EventStream.Unsubscribe(gsub)
		n.sys.EventStream.Unsubscribe(nsub)
	})
}
