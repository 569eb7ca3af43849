package cluster

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// heldNode stands in for a node's actor on the gateway's own actor system:
// a real Node (its service, its device, its store) answers each config
// request, and the answer to the sync's read of one key is held until the
// test lets it go, as a loaded or just-resumed node's may be. A node that
// is told to drop sets answers none of them.
type heldNode struct {
	n       *Node
	holdKey string
	release chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	read     chan struct{} // closed once the held read has its answer
	gets     map[string]int
	dropSets bool
	stopped  bool // set by stop: no request is taken after it
}

// stop lets the held read go and waits for every answer under way. A
// request after it is dropped: the gateway's actors are not stopped in
// step with the test's cleanup, and wg.Add beside wg.Wait is a race the
// detector reports (it did, in a reset's run under load).
func (h *heldNode) stop(release func()) {
	h.mu.Lock()
	h.stopped = true
	h.mu.Unlock()
	release()
	h.wg.Wait()
}

func (h *heldNode) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*wire.ConfigRequest)
	if !ok {
		return // commands, lifecycle: not this test's business
	}
	to, root := ctx.Sender(), ctx.ActorSystem().Root
	h.mu.Lock()
	if m.Op == "get" {
		h.gets[m.Key]++
	}
	held := m.Op == "get" && m.Key == h.holdKey && h.gets[m.Key] == 1
	drop := m.Op != "get" && h.dropSets || h.stopped
	if !drop {
		h.wg.Add(1)
	}
	h.mu.Unlock()
	if drop {
		return
	}
	// Off the actor: the real node answers after its disk, and the held
	// read waits for the test.
	go func() {
		defer h.wg.Done()
		reply := h.n.config(m)
		if held {
			close(h.read)
			<-h.release
		}
		root.Send(to, reply)
	}()
}

func (h *heldNode) getsOf(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gets[key]
}

func entryJSON(t *testing.T, svc *actors.Service, d *actors.Device, k protocol.Key) string {
	t.Helper()
	e, err := svc.Entry(d, 0, k)
	if err != nil {
		t.Fatalf("read %s: %v", k.Path(), err)
	}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Issue 23: a device that (re)joins the gateway has its config copied from
// its node, and a client writes the same entry through the gateway
// meanwhile (the lab test's POST 3 ms after a resumed node's arm was back).
// The write must reach the node before the gateway answers, the node's
// older value must not be applied over it on the gateway, and a write the
// node never answers is an error, not an acknowledgement.
func TestGatewayConfigWriteDuringSync(t *testing.T) {
	key := protocol.KeyHandedness
	// The sync reads the device-global keys in order; its read of the
	// next one says it has decided about key.
	var next protocol.Key
	for _, k := range protocol.Keys() {
		if k > key && !k.SessionScoped() {
			next = k
			break
		}
	}
	if next == 0 {
		t.Fatalf("no device-global key after %s: the test needs one to see the sync pass %s", key.Path(), key.Path())
	}
	right, pe := protocol.DecodeEntry(key, []byte(`"right"`), "")
	if pe != nil {
		t.Fatal(pe)
	}
	tests := []struct {
		name      string
		write     func(svc *actors.Service, dev *actors.Device) (protocol.Entry, error)
		dropSets  bool
		wantErr   protocol.Code // "": the write is acknowledged
		wantNode  string
		wantGWAft string // the gateway's entry once the sync passed key; "": not checked
	}{
		{"set", func(svc *actors.Service, dev *actors.Device) (protocol.Entry, error) {
			return svc.SetEntry(dev, 0, right)
		},
			false, "", `"right"`, `"right"`},
		{"reset", func(svc *actors.Service, dev *actors.Device) (protocol.Entry, error) {
			return svc.ResetEntry(dev, nil, key)
		},
			false, "", `"right"`, `"right"`},
		{"set the node never answers", func(svc *actors.Service, dev *actors.Device) (protocol.Entry, error) {
			return svc.SetEntry(dev, 0, right)
		}, true, protocol.CodeUnavailable, `"left"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, d := testNode(t)
			if r := n.config(&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "set", Key: key.Path(), Json: []byte(`"left"`)}); r.Error != "" {
				t.Fatalf("node: set %s left: %s", key.Path(), r.Error)
			}
			h := &heldNode{n: n, holdKey: key.Path(), release: make(chan struct{}), read: make(chan struct{}),
				gets: map[string]int{}, dropSets: tt.dropSets}
			var once sync.Once
			release := func() { once.Do(func() { close(h.release) }) }
			t.Cleanup(func() { h.stop(release) })
			// After h's cleanup, so it stops first: its sync goes on
			// asking h for the keys after next (a request its stopped
			// actors still deliver is dropped by h.stop).
			g := testGateway(t, time.Minute) // the node is never dropped for silence here
			if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return h }), nodeActorName); err != nil {
				t.Fatal(err)
			}
			g.inventory(&wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm(d.Info.UUID, d.ID)}})
			waitAdded(t, g)
			dev := g.svc.Devices().All()[0]
			select {
			case <-h.read:
			case <-time.After(10 * time.Second):
				t.Fatalf("the gateway's sync never read %s from the node", key.Path())
			}

			// The node answered the sync's read ("left"); the answer is on
			// its way while the client writes.
			_, err := tt.write(g.svc, dev)
			var perr *protocol.Error
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("write through the gateway: %v, want it acknowledged", err)
			case tt.wantErr != "" && (!errors.As(err, &perr) || perr.Code != tt.wantErr):
				t.Fatalf("write through the gateway: %v, want %s", err, tt.wantErr)
			}
			if got := entryJSON(t, n.svc, d, key); got != tt.wantNode {
				t.Errorf("node's %s is %s after the gateway answered (err %v), want %s", key.Path(), got, err, tt.wantNode)
			}

			release()
			waitCond(t, fmt.Sprintf("the sync's read of %s", next.Path()), func() bool { return h.getsOf(next.Path()) > 0 })
			if got := entryJSON(t, g.svc, dev, key); tt.wantGWAft != "" && got != tt.wantGWAft {
				t.Errorf("gateway's %s is %s once the sync passed it, want %s", key.Path(), got, tt.wantGWAft)
			}
			if got := entryJSON(t, n.svc, d, key); got != tt.wantNode {
				t.Errorf("node's %s is %s once the sync passed it, want %s", key.Path(), got, tt.wantNode)
			}
		})
	}
}

// silentNode stands in for a node's actor that takes config requests and
// never answers them: a node that is killed while they are on their way.
// It tells sets (and gets, if set) that a request of theirs came.
type silentNode struct{ sets, gets chan struct{} }

func (s *silentNode) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*wire.ConfigRequest)
	if !ok {
		return
	}
	tell := s.sets
	if m.Op == "get" {
		tell = s.gets
	}
	select {
	case tell <- struct{}{}:
	default:
	}
}

// Stopping the gateway (SIGTERM) does not wait on a hung node's answers:
// the sync of its device's config and a client's set in flight end at
// once, the set with 503 (review21: Gateway.Close waited out the 2 s of
// each config request of the sync, one key after another).
func TestGatewayStopsWithoutWaitingOnAHungNode(t *testing.T) {
	svc, shutdown := testService(t)
	t.Cleanup(shutdown)
	g := newTestGateway(svc, time.Minute)
	t.Cleanup(g.sys.Shutdown)
	s := &silentNode{sets: make(chan struct{}, 1), gets: make(chan struct{}, 1)}
	if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return s }), nodeActorName); err != nil {
		t.Fatal(err)
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.adds.run(g.stop, g.add)
	}()
	g.inventory(&wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm("uuid-n", "049D")}})
	waitAdded(t, g)
	for _, c := range []chan struct{}{s.gets} {
		select {
		case <-c:
		case <-time.After(10 * time.Second):
			t.Fatal("the gateway's sync never asked the node")
		}
	}
	left, pe := protocol.DecodeEntry(protocol.KeyHandedness, []byte(`"left"`), "")
	if pe != nil {
		t.Fatal(pe)
	}
	dev := g.svc.Devices().All()[0]
	type answer struct {
		err error
		at  time.Time
	}
	set := make(chan answer, 1)
	go func() {
		_, err := g.svc.SetEntry(dev, 0, left)
		set <- answer{err, time.Now()}
	}()
	select {
	case <-s.sets:
	case <-time.After(10 * time.Second):
		t.Fatal("the set never reached the node")
	}
	// Gateway.Close, short of the remote this gateway has none of.
	start := time.Now()
	stopped := make(chan struct{})
	go func() {
		g.closing.Store(true)
		close(g.stop)
		g.wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(time.Minute):
		t.Fatal("the gateway's goroutines did not return within a minute of its stop")
	}
	if took := time.Since(start); took >= configTimeout {
		t.Errorf("the gateway's stop took %v, waiting on a hung node's answers (each waits %v at most)", took, configTimeout)
	}
	select {
	case a := <-set:
		var perr *protocol.Error
		if !errors.As(a.err, &perr) || perr.Code != protocol.CodeUnavailable {
			t.Fatalf("a set in flight when the gateway stopped: %v, want %s", a.err, protocol.CodeUnavailable)
		}
		if took := a.at.Sub(start); took >= configTimeout {
			t.Errorf("a set in flight when the gateway stopped was answered %v after the stop, want at once", took)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a set in flight when the gateway stopped was never answered")
	}
}

// A set through the gateway whose node's process ends while the set waits
// for its answer is answered 503 as soon as the gateway knows the process
// is gone (its port refuses, or a new process of the node took over), not
// after the gateway's full 2 s: nothing will answer it. A node dropped for
// its silence alone may be hung and resume, and could still apply the set
// within the 2 s, so that set waits them out as before, unless the node is
// then known gone too.
func TestGatewayConfigEndsWithItsNodesProcess(t *testing.T) {
	refusing := func(t *testing.T) string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return addr
	}
	tests := []struct {
		name  string
		drop  func(t *testing.T, g *Gateway)
		early bool
	}{
		{"its port refuses", func(t *testing.T, g *Gateway) {
			g.mu.Lock()
			n := g.nodes["n"]
			n.addr = refusing(t) // what the gateway dials to tell a killed node from a live one
			pid := n.pid
			g.mu.Unlock()
			g.terminated(pid)
		}, true},
		{"a new process of it", func(t *testing.T, g *Gateway) {
			g.inventory(&wire.Inventory{NodeId: "n", Address: refusing(t), Devices: []*wire.Device{arm("uuid-n", "049D")}})
		}, true},
		{"silent", func(t *testing.T, g *Gateway) {
			g.mu.Lock()
			g.dropNodeLocked("n", "silent", false)
			g.mu.Unlock()
		}, false},
		// Dropped for its silence first (a hung process), and then known
		// gone: nothing will answer any more (review19: the set waited
		// out the 2 s).
		{"silent, then its port refuses", func(t *testing.T, g *Gateway) {
			g.mu.Lock()
			n := g.nodes["n"]
			n.addr = refusing(t)
			pid := n.pid
			g.dropNodeLocked("n", "silent", false)
			g.mu.Unlock()
			g.terminated(pid)
		}, true},
		{"silent, then it leaves the topology and its port refuses", func(t *testing.T, g *Gateway) {
			addr := refusing(t)
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Fatal(err)
			}
			portN, err := strconv.Atoi(port)
			if err != nil {
				t.Fatal(err)
			}
			g.mu.Lock()
			g.nodes["n"].addr = addr
			g.dropNodeLocked("n", "silent", false)
			g.mu.Unlock()
			m := &cluster.Member{Id: "m-n", Host: host, Port: int32(portN), Kinds: []string{NodeKind("n")}}
			g.topology(&cluster.ClusterTopology{Left: []*cluster.Member{m}})
		}, true},
		{"silent, then a new process of it", func(t *testing.T, g *Gateway) {
			g.mu.Lock()
			g.dropNodeLocked("n", "silent", false)
			g.mu.Unlock()
			// Its device left, and the service forgot its proxy, before
			// the new process's inventory came.
			waitCond(t, "the dropped node's proxy forgotten", func() bool { return g.proxy("uuid-n") == nil })
			g.inventory(&wire.Inventory{NodeId: "n", Address: refusing(t), Devices: []*wire.Device{arm("uuid-n", "049D")}})
		}, true},
	}
	left, pe := protocol.DecodeEntry(protocol.KeyHandedness, []byte(`"left"`), "")
	if pe != nil {
		t.Fatal(pe)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := testGateway(t, time.Minute) // dropped by the test only
			s := &silentNode{sets: make(chan struct{}, 1)}
			if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return s }), nodeActorName); err != nil {
				t.Fatal(err)
			}
			g.inventory(&wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm("uuid-n", "049D")}})
			waitAdded(t, g)
			dev := g.svc.Devices().All()[0]
			type answer struct {
				err  error
				took time.Duration
			}
			done := make(chan answer, 1)
			start := time.Now()
			go func() {
				_, err := g.svc.SetEntry(dev, 0, left)
				done <- answer{err, time.Since(start)}
			}()
			select {
			case <-s.sets:
			case <-time.After(10 * time.Second):
				t.Fatal("the set never reached the node")
			}
			tt.drop(t, g)
			var a answer
			select {
			case a = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the set through the gateway was never answered")
			}
			var perr *protocol.Error
			if !errors.As(a.err, &perr) || perr.Code != protocol.CodeUnavailable {
				t.Fatalf("set through the gateway: %v, want %s", a.err, protocol.CodeUnavailable)
			}
			t.Logf("answered after %v: %v", a.took.Round(time.Millisecond), a.err)
			if tt.early && a.took >= configTimeout {
				t.Errorf("a set whose node's process ended was answered after %v, the full wait for an answer (%v), want as soon as the gateway knew", a.took, configTimeout)
			}
			if !tt.early && a.took < configTimeout {
				t.Errorf("a set to a node dropped for its silence was answered after %v, before the %v within which the node could still apply it", a.took, configTimeout)
			}
		})
	}
}

// A device that returns to the gateway is listed before its config is
// copied in from its node; a read through the gateway meanwhile (a client
// reading back a set it was answered 503 for, as docs/lab.md says to)
// answers the node's value, not the gateway's older copy.
func TestGatewayReadDuringSyncAnswersTheNodes(t *testing.T) {
	key := protocol.KeyHandedness
	n, d := testNode(t)
	if r := n.config(&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "set", Key: key.Path(), Json: []byte(`"left"`)}); r.Error != "" {
		t.Fatal(r.Error)
	}
	h := &heldNode{n: n, holdKey: key.Path(), release: make(chan struct{}), read: make(chan struct{}), gets: map[string]int{}}
	var once sync.Once
	release := func() { once.Do(func() { close(h.release) }) }
	t.Cleanup(func() { h.stop(release) })
	g := gatewayOf(t, h, d)
	dev := g.svc.Devices().All()[0]
	<-h.read // the sync's read of the key is held: the gateway's copy is the default
	if got, want := entryJSON(t, g.svc, dev, key), entryJSON(t, n.svc, d, key); got != want {
		t.Fatalf("read through the gateway during its sync: %s, the node has %s", got, want)
	}
	release()
	// Once synced, the gateway's own copy answers, and it is the node's.
	p := g.proxy(d.Info.UUID)
	hwtest.Eventually(t, 5*time.Second, "the gateway's sync of the device's config", p.synced.Load)
	if got := entryJSON(t, g.svc, dev, key); got != `"left"` {
		t.Fatalf("handedness %s on the gateway after its sync, want the node's \"left\"", got)
	}
}

// plainNode stands in for a node's actor: a real Node answers each config
// request at once.
type plainNode struct{ n *Node }

func (p *plainNode) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*wire.ConfigRequest); ok {
		ctx.Respond(p.n.config(m))
	}
}

// A WebSocket set_gravity_compensation through the gateway reaches the
// node, whose loop compensates gravity, as a POST of the entry does: it
// changed only the gateway's copy (review21).
func TestGatewaySetGravityCompensationReachesTheNode(t *testing.T) {
	key := protocol.KeyGravityCompensation
	n, d := testNode(t)
	g := gatewayOf(t, &plainNode{n: n}, d)
	dev := g.svc.Devices().All()[0]
	hwtest.Eventually(t, 10*time.Second, "the gateway's sync of the device's config", g.proxy(d.Info.UUID).synced.Load)
	for _, enabled := range []bool{false, true} {
		setGravityThrough(t, g, dev.ID, enabled)
		want := fmt.Sprintf(`"enabled":%v`, enabled)
		if node := entryJSON(t, n.svc, d, key); !strings.Contains(node, want) {
			t.Fatalf("after set_gravity_compensation %v through the gateway the node has %s", enabled, node)
		}
		if gw := entryJSON(t, g.svc, dev, key); !strings.Contains(gw, want) {
			t.Fatalf("after set_gravity_compensation %v through the gateway the gateway has %s", enabled, gw)
		}
	}
}

// setGravityThrough sends set_gravity_compensation for arm id in a session
// of its own on g, and fails the test on an error in the answering frame.
func setGravityThrough(t *testing.T, g *Gateway, id string, enabled bool) {
	t.Helper()
	c := openGatewayClient(t, g, "")
	defer c.close()
	f := c.send(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_gravity_compensation":%v}}]}`, id, enabled))
	if f["errors"] != nil {
		t.Fatalf("set_gravity_compensation %v through the gateway: %v", enabled, f["errors"])
	}
}

// slowSetNode stands in for a node's actor: a real Node applies each
// request at once, and answers a set or reset only after the gateway's
// configTimeout (a node whose disk stalled).
type slowSetNode struct {
	n  *Node
	wg sync.WaitGroup
}

func (s *slowSetNode) Receive(ctx actor.Context) {
	m, ok := ctx.Message().(*wire.ConfigRequest)
	if !ok {
		return
	}
	to, root := ctx.Sender(), ctx.ActorSystem().Root
	reply := s.n.config(m)
	if m.Op == "get" {
		ctx.Respond(reply)
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		time.Sleep(configTimeout + 500*time.Millisecond)
		root.Send(to, reply)
	}()
}

// A set through the gateway that its node applied but did not answer in
// time is answered 503; reading it back through the gateway, as
// docs/lab.md says to, answers what the node has in force, and the
// gateway's copy follows (review21: it answered the gateway's older copy).
func TestGatewayReadBackAfterAnUnansweredSet(t *testing.T) {
	key := protocol.KeyHandedness
	n, d := testNode(t)
	s := &slowSetNode{n: n}
	t.Cleanup(s.wg.Wait)
	g := gatewayOf(t, s, d)
	dev := g.svc.Devices().All()[0]
	p := g.proxy(d.Info.UUID)
	hwtest.Eventually(t, 10*time.Second, "the gateway's sync of the device's config", p.synced.Load)
	left, pe := protocol.DecodeEntry(key, []byte(`"left"`), "")
	if pe != nil {
		t.Fatal(pe)
	}
	_, err := g.svc.SetEntry(dev, 0, left)
	var perr *protocol.Error
	if !errors.As(err, &perr) || perr.Code != protocol.CodeUnavailable {
		t.Fatalf("a set the node does not answer in time: %v, want 503 unavailable", err)
	}
	if node, gw := entryJSON(t, n.svc, d, key), entryJSON(t, g.svc, dev, key); node != gw || node != `"left"` {
		t.Fatalf("after the 503 the node has %s in force, a read back through the gateway answers %s", node, gw)
	}
	if p.ConfigUnsure(key) {
		t.Fatal("the entry read back from the node is still unsure: the gateway's copy was not updated")
	}
}

// gatewayOf is a test gateway serving d, whose node's actor is stand (a
// stand-in around a real Node), once it has added d.
func gatewayOf(t *testing.T, stand actor.Actor, d *actors.Device) *Gateway {
	t.Helper()
	g := testGateway(t, time.Minute)
	if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return stand }), nodeActorName); err != nil {
		t.Fatal(err)
	}
	g.inventory(&wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm(d.Info.UUID, d.ID)}})
	waitAdded(t, g)
	return g
}

// A read of the gateway's sync that its node does not answer in time (a
// loaded or just-resumed node) leaves the entry unsure: a read through the
// gateway afterwards answers the node's value, and copies it in. The
// device was marked synced all the same, and the gateway answered its
// default until the device rejoined (review19).
func TestGatewayReadAfterAnUnansweredSyncAnswersTheNodes(t *testing.T) {
	key := protocol.KeyHandedness
	n, d := testNode(t)
	if r := n.config(&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "set", Key: key.Path(), Json: []byte(`"left"`)}); r.Error != "" {
		t.Fatal(r.Error)
	}
	// The sync's read of key is answered only when the test ends.
	h := &heldNode{n: n, holdKey: key.Path(), release: make(chan struct{}), read: make(chan struct{}), gets: map[string]int{}}
	var once sync.Once
	release := func() { once.Do(func() { close(h.release) }) }
	t.Cleanup(func() { h.stop(release) })
	g := gatewayOf(t, h, d)
	dev := g.svc.Devices().All()[0]
	p := g.proxy(d.Info.UUID)
	hwtest.Eventually(t, 30*time.Second, "the gateway's sync of the device's config", p.synced.Load)
	if got := entryJSON(t, g.svc, dev, key); got != `"left"` {
		t.Fatalf("after a sync whose read of %s went unanswered, a read through the gateway answers %s; the node has \"left\"", key.Path(), got)
	}
	if p.ConfigUnsure(key) {
		t.Fatal("the entry read from the node is still unsure: the gateway's copy was not updated")
	}
}

// TestGatewayReadAfterASyncCutShortByStopAsksTheNode: a gateway stopped
// while it copies a returning device's config in serves HTTP on for a
// moment (main closes the lab first): the entries the sync never read
// must not answer the gateway's own copy (the default, or an older
// process's value) as if the node had it. Each answers 503 like every
// read the node did not answer (review24: they answered 200 defaults).
func TestGatewayReadAfterASyncCutShortByStopAsksTheNode(t *testing.T) {
	svc, shutdown := testService(t)
	t.Cleanup(shutdown)
	g := newTestGateway(svc, time.Minute)
	t.Cleanup(g.sys.Shutdown)
	s := &silentNode{sets: make(chan struct{}, 1), gets: make(chan struct{}, 1)}
	if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return s }), nodeActorName); err != nil {
		t.Fatal(err)
	}
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.adds.run(g.stop, g.add) }()
	g.inventory(&wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm("uuid-n", "049D")}})
	waitAdded(t, g)
	select {
	case <-s.gets:
	case <-time.After(10 * time.Second):
		t.Fatal("the sync never asked the node")
	}
	g.closing.Store(true)
	close(g.stop)
	g.wg.Wait()
	dev := g.svc.Devices().All()[0]
	read := 0
	for _, k := range protocol.Keys() {
		if k.SessionScoped() || !k.AppliesTo(dev.Type) {
			continue
		}
		read++
		e, err := g.svc.Entry(dev, 0, k)
		var perr *protocol.Error
		if !errors.As(err, &perr) || perr.Code != protocol.CodeUnavailable {
			t.Errorf("%s, never read from the node: answered %v, %v; want 503 unavailable", k.Path(), e, err)
		}
	}
	if read < 2 {
		t.Fatalf("only %d device-global entries: the test shows nothing", read)
	}
}

// Gateway.Close ends the config requests still waiting on a node's answer
// and returns with none of their goroutines left: each waited out its
// full configTimeout after the stop (its answer, had one come, went to
// dead letters), so a stopped gateway left goroutines behind for 2 s.
func TestGatewayCloseEndsItsConfigRequests(t *testing.T) {
	// The count is the process's: the requests earlier tests left to end
	// on their own (configTimeout at most) go first.
	hwtest.Eventually(t, 10*configTimeout, "the config requests of earlier tests ended", func() bool { return configRequestGoroutines() == 0 })
	svc, shutdown := testService(t)
	t.Cleanup(shutdown)
	g := newTestGateway(svc, time.Minute)
	g.lk = &link{sys: g.sys} // no remote: Close stops the actor system alone
	s := &silentNode{sets: make(chan struct{}, 1), gets: make(chan struct{}, 1)}
	if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return s }), nodeActorName); err != nil {
		t.Fatal(err)
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.adds.run(g.stop, g.add)
	}()
	g.inventory(&wire.Inventory{NodeId: "n", Address: g.sys.Address(), Devices: []*wire.Device{arm("uuid-n", "049D")}})
	waitAdded(t, g)
	select {
	case <-s.gets:
	case <-time.After(10 * time.Second):
		t.Fatal("the gateway's sync never asked the node")
	}
	left, pe := protocol.DecodeEntry(protocol.KeyHandedness, []byte(`"left"`), "")
	if pe != nil {
		t.Fatal(pe)
	}
	set := make(chan error, 1)
	go func() {
		_, err := g.svc.SetEntry(g.svc.Devices().All()[0], 0, left)
		set <- err
	}()
	select {
	case <-s.sets:
	case <-time.After(10 * time.Second):
		t.Fatal("the set never reached the node")
	}
	if n := configRequestGoroutines(); n == 0 {
		t.Fatal("no config request waits on the node: the test shows nothing")
	}
	start := time.Now()
	g.Close()
	if took := time.Since(start); took >= configTimeout {
		t.Errorf("Close took %v, waiting out the requests' %v", took, configTimeout)
	}
	// Close waited for them; allow them to unwind their last frames.
	deadline := time.Now().Add(configTimeout / 2)
	for n := configRequestGoroutines(); n > 0; n = configRequestGoroutines() {
		if time.Now().After(deadline) {
			t.Fatalf("%d config requests' goroutines outlive Close by %v", n, time.Since(start))
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-set:
		var perr *protocol.Error
		if !errors.As(err, &perr) || perr.Code != protocol.CodeUnavailable {
			t.Fatalf("a set in flight when the gateway closed: %v, want %s", err, protocol.CodeUnavailable)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a set in flight when the gateway closed was never answered")
	}
}

// configRequestGoroutines counts the goroutines of Gateway.configRequest
// (its requests to nodes) in the process.
func configRequestGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "cluster.(*Gateway).configRequest.func") {
			count++
		}
	}
	return count
}
