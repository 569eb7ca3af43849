package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// The build names, and which of them are one build: the version and the
// wire schema always, the revision where both binaries know theirs. A
// binary without a VCS stamp (a git worktree, an archive, -buildvcs=false)
// of the same source as a stamped one is the same build: with the revision
// alone a lab of one commit refused itself.
func TestBuildOfNamesWhatTellsBuildsApart(t *testing.T) {
	const rev = "45212dd0a1b2c3d4e5f60718293a4b5c6d7e8f90"
	digest := WireDigest()
	if len(digest) != 8 {
		t.Fatalf("WireDigest %q: want 8 hex digits", digest)
	}
	for _, c := range []struct {
		version, revision string
		modified          bool
		want              string
	}{
		{"1.2.3", rev, false, "1.2.3+45212dd0a1b2.wire-" + digest},
		{"1.2.3", rev, true, "1.2.3+45212dd0a1b2.modified.wire-" + digest},
		{"0.1.0", "unknown", false, "0.1.0+novcs.wire-" + digest},
		{"0.1.0", "", true, "0.1.0+novcs.wire-" + digest},
	} {
		if got := BuildOf(c.version, c.revision, c.modified); got != c.want {
			t.Errorf("BuildOf(%q, %q, %v) = %q, want %q", c.version, c.revision, c.modified, got, c.want)
		}
	}
	other := "99" + rev[2:]
	for _, c := range []struct {
		name string
		a, b string
		same bool
	}{
		{"one clean checkout", BuildOf("1.2.3", rev, false), BuildOf("1.2.3", rev, false), true},
		{"one checkout, one modified", BuildOf("1.2.3", rev, false), BuildOf("1.2.3", rev, true), true},
		{"a clone and an unstamped build of it", BuildOf("1.2.3", rev, false), BuildOf("1.2.3", "", false), true},
		{"two unstamped builds", BuildOf("0.1.0", "", false), BuildOf("0.1.0", "unknown", true), true},
		{"two versions", BuildOf("1.2.3", rev, false), BuildOf("1.2.4", rev, false), false},
		{"two revisions", BuildOf("1.2.3", rev, false), BuildOf("1.2.3", other, false), false},
		{"two revisions, one modified", BuildOf("1.2.3", rev, true), BuildOf("1.2.3", other, false), false},
		{"two wire schemas", "1.2.3+novcs.wire-" + digest, "1.2.3+novcs.wire-00000000", false},
		{"an older member, which states none", BuildOf("1.2.3", rev, false), "", false},
		{"a build name of the first check, without the schema", BuildOf("1.2.3", rev, false), "1.2.3+45212dd0a1b2", false},
		{"one name, whatever it is", "dev", "dev", true},
		{"two names that are not build names", "1.2.3", "1.2.3+", false},
		{"a version with build metadata, clone and unstamped", BuildOf("1.2.3+meta", rev, false), BuildOf("1.2.3+meta", "", false), true},
		{"versions that differ in their metadata", BuildOf("1.2.3+a", "", false), BuildOf("1.2.3+b", "", false), false},
	} {
		if got := SameBuild(c.a, c.b); got != c.same {
			t.Errorf("%s: SameBuild(%q, %q) = %v, want %v", c.name, c.a, c.b, got, c.same)
		}
		if got := SameBuild(c.b, c.a); got != c.same {
			t.Errorf("%s: SameBuild(%q, %q) = %v, want %v", c.name, c.b, c.a, got, c.same)
		}
	}
}

// labRefusal reads a lab-node-refused event's reason, checking its node.
func labRefusal(t *testing.T, sub *activity.Subscription, node string) string {
	t.Helper()
	var got struct {
		Node   string `json:"node_id"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(nextEvent(t, sub, event.NameLabNodeRefused), &got); err != nil {
		t.Fatal(err)
	}
	if got.Node != node {
		t.Errorf("lab-node-refused names node %q, want %q", got.Node, node)
	}
	return got.Reason
}

// noEvent fails if sub has an event named name within d.
func noEvent(t *testing.T, sub *activity.Subscription, name string, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			return
		}
		if e.Name == name {
			t.Errorf("unexpected %s: %s", name, e.Data)
		}
	}
}

// wantReady checks g's /readyz word.
func wantReady(t *testing.T, g *Gateway, want bool, says ...string) {
	t.Helper()
	ok, detail := g.Ready()
	if ok != want {
		t.Errorf("Ready: %v %q, want %v", ok, detail, want)
	}
	for _, s := range says {
		if !strings.Contains(detail, s) {
			t.Errorf("Ready says %q, want it to say %q", detail, s)
		}
	}
}

// A gateway and a node of one build: the node's arm is served, as
// before the builds were stated.
func TestLabOfOneBuildJoins(t *testing.T) {
	n, _ := testNode(t)
	n.cfg.Build = "1.0.0+aaaaaaaaaaaa"
	g := testGateway(t, time.Hour)
	g.cfg.Build = n.cfg.Build
	g.mu.Lock()
	g.linkUp = time.Now().Add(-time.Hour)
	g.mu.Unlock()
	events := subscribeEvents(t, g)
	linkLab(t, g, n)
	if devs := g.svc.Devices().All(); len(devs) != 1 {
		t.Fatalf("the gateway serves %d devices, want the node's arm", len(devs))
	}
	wantReady(t, g, true)
	noEvent(t, events, event.NameLabNodeRefused, 300*time.Millisecond)
}

// A node upgraded while the gateway of the previous build still runs (the
// tour's lab, upgraded host by host): they used to join silently, and the
// gateway then served stale config of the node's arms. The node now
// refuses the gateway's subscriptions: the gateway serves none of its
// arms, publishes lab-node-refused once naming both builds and the
// upgrade order, and its /readyz names the node, round after round. The
// node restarted with the gateway's build joins at its first
// subscription, and the gateway is ready again.
func TestNodeOfAnotherBuildRefusesTheGatewayUntilBothRunOne(t *testing.T) {
	n, _ := testNode(t)
	n.cfg.Build = "1.1.0+bbbbbbbbbbbb"
	g := testGateway(t, time.Hour)
	g.cfg.Build = "1.0.0+aaaaaaaaaaaa"
	g.mu.Lock()
	g.linkUp = time.Now().Add(-time.Hour)
	g.mu.Unlock()
	events := subscribeEvents(t, g)
	n.wg.Add(1)
	go n.push()
	inventories, stop := linkGatewayActorStoppable(t, g, n)

	reason := labRefusal(t, events, "n")
	for _, s := range []string{"node n runs build 1.1.0+bbbbbbbbbbbb", "gateway gw at " + g.addr + " runs build 1.0.0+aaaaaaaaaaaa",
		"docs/lab.md", "stop the gateway, upgrade and restart the nodes, then start the gateway"} {
		if !strings.Contains(reason, s) {
			t.Errorf("lab-node-refused's reason %q does not say %q", reason, s)
		}
	}
	// Four more subscription rounds: refused each, published once.
	noEvent(t, events, event.NameLabNodeRefused, 800*time.Millisecond)
	if devs := g.svc.Devices().All(); len(devs) != 0 || inventories.Load() != 0 {
		t.Errorf("the gateway serves %d devices, and had %d inventories, from a node of another build", len(devs), inventories.Load())
	}
	n.mu.Lock()
	served := n.subs[g.addr]
	n.mu.Unlock()
	if served != nil {
		t.Error("the node serves the gateway of another build")
	}
	wantReady(t, g, false, "node n refuses this gateway", "1.1.0+bbbbbbbbbbbb", "1.0.0+aaaaaaaaaaaa")
	if ok, detail := g.Started(); !ok {
		t.Errorf("the gateway's start still waits on a node of another build: %q", detail)
	}

	// The node's host downgraded to the gateway's build (or the gateway
	// upgraded: either way one build): a new process of the node.
	stop()
	n2, _ := testNode(t)
	n2.cfg.Build = g.cfg.Build
	n2.wg.Add(1)
	go n2.push()
	linkGatewayActor(t, g, n2)
	hwtest.Eventually(t, 10*time.Second, "the node's arm on the gateway once both run one build", func() bool {
		return len(g.svc.Devices().All()) == 1
	})
	wantReady(t, g, true)
}

// A gateway upgraded while a node of the build before the check still runs
// (it states no build, and cannot refuse the gateway: it answers with its
// inventory and pushes its states and events). The gateway refuses the
// inventory: the arm it served from that node before leaves, none is
// listed, the node's events are not relayed, lab-node-refused is
// published once saying the node's build is older than the check, and
// /readyz names the node. The node restarted with the gateway's build is
// served again, and the gateway is ready.
func TestGatewayRefusesTheInventoryOfAnOlderNode(t *testing.T) {
	g := testGateway(t, time.Hour)
	g.cfg.Build = "1.1.0+bbbbbbbbbbbb"
	g.mu.Lock()
	g.linkUp = time.Now().Add(-time.Hour)
	g.mu.Unlock()
	events := subscribeEvents(t, g)
	join := func(addr, build string) {
		g.inventory(&wire.Inventory{NodeId: "a", Address: addr, Build: build, Devices: []*wire.Device{arm("uuid-a", "049D")}})
		g.states(&wire.StateBatch{NodeId: "a", SentUnixNs: time.Now().UnixNano(), States: []*wire.State{{Uuid: "uuid-a", Tick: 1}}})
	}
	join("127.0.0.2:7070", g.cfg.Build)
	waitAdded(t, g)
	if devs := g.svc.Devices().All(); len(devs) != 1 {
		t.Fatalf("the gateway serves %d devices from a node of its build, want 1", len(devs))
	}

	// The node restarted with the build before the check.
	join("127.0.0.2:7071", "")
	reason := labRefusal(t, events, "a")
	for _, s := range []string{"gateway gw runs build 1.1.0+bbbbbbbbbbbb", "node a at 127.0.0.2:7071 runs a build older than the lab's build check",
		"docs/lab.md", "stop the gateway, upgrade and restart the nodes"} {
		if !strings.Contains(reason, s) {
			t.Errorf("lab-node-refused's reason %q does not say %q", reason, s)
		}
	}
	hwtest.Eventually(t, 10*time.Second, "the arm leaves with its node's process of another build", func() bool {
		return len(g.svc.Devices().All()) == 0
	})
	for range 4 { // more rounds: answered the same, told once
		join("127.0.0.2:7071", "")
		rate, _ := json.Marshal(event.ControlRateWarning("inverse3", "049D", 1700, 1000, 3))
		g.fromNode(&wire.Event{NodeId: "a", Json: rate})
	}
	noEvent(t, events, event.NameLabNodeRefused, 300*time.Millisecond)
	noEvent(t, events, event.NameControlRateWarning, 10*time.Millisecond)
	time.Sleep(firstStateWait + 100*time.Millisecond) // what an inventory's add waits at most
	g.mu.Lock()
	proxies := len(g.proxies)
	g.mu.Unlock()
	if devs := g.svc.Devices().All(); len(devs) != 0 || proxies != 0 {
		t.Errorf("the gateway serves %d devices (%d proxies) of a node of another build", len(devs), proxies)
	}
	wantReady(t, g, false, "this gateway refuses node a", "older than the lab's build check")

	// The node's host upgraded: its new process states the gateway's build.
	join("127.0.0.2:7072", g.cfg.Build)
	waitAdded(t, g)
	if devs := g.svc.Devices().All(); len(devs) != 1 {
		t.Errorf("the gateway serves %d devices once the node runs its build, want 1", len(devs))
	}
	wantReady(t, g, true)
}

// A node upgraded while the gateway of the build before the check runs (its
// Subscribe states no build): the node refuses it with version_mismatch,
// naming both, and keeps nothing of it; in docs/lab.md's order the
// gateway then restarts with the nodes' build (a new process, at its
// fixed port's address), and the node takes it at its first Subscribe.
func TestNodeRefusesAnOlderGatewayAndTakesItsUpgradedProcess(t *testing.T) {
	n, _ := testNode(t)
	n.cfg.Build = "1.1.0+bbbbbbbbbbbb"
	const addr = "127.0.0.5:7070"
	refusals := make(chan *wire.SubscribeRefused, 16)
	sub := n.sys.EventStream.Subscribe(func(ev any) {
		if dl, ok := ev.(*actor.DeadLetterEvent); ok && dl.PID != nil && dl.PID.Address == addr {
			if r, ok := actor.UnwrapEnvelopeMessage(dl.Message).(*wire.SubscribeRefused); ok {
				refusals <- r
			}
		}
	})
	t.Cleanup(func() { n.sys.EventStream.Unsubscribe(sub) })
	served := func() *subscriber {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.subs[addr]
	}

	n.subscribe(&wire.Subscribe{GatewayId: "gw", GatewayAddress: addr, ProcessId: 7, SentUnixNs: time.Now().UnixNano()})
	select {
	case r := <-refusals:
		if r.Code != string(protocol.CodeVersionMismatch) || r.ProcessId != 7 || r.Build != n.cfg.Build || r.NodeId != "n" {
			t.Errorf("refusal %v: want code %s for process 7 with the node's build", r, protocol.CodeVersionMismatch)
		}
		for _, s := range []string{"node n runs build 1.1.0+bbbbbbbbbbbb", "gateway gw at " + addr + " runs a build older than the lab's build check", "docs/lab.md"} {
			if !strings.Contains(r.Error, s) {
				t.Errorf("the refusal says %q, not %q", r.Error, s)
			}
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the node answered an older gateway's Subscribe with no refusal")
	}
	if served() != nil {
		t.Fatal("the node serves a gateway of another build")
	}
	// The node's own /readyz says why its lab does not list it: it said
	// "cluster link up" while it refused its only gateway. (testNode's
	// own gateway, subscribed before the build was set, is not the lab's.)
	if ok, _ := n.Ready(); !ok {
		t.Error("the node is not ready while it serves another gateway of its build")
	}
	n.mu.Lock()
	delete(n.subs, testGW)
	n.mu.Unlock()
	if ok, detail := n.Ready(); ok || !strings.Contains(detail, "refusing a gateway of another build") || !strings.Contains(detail, "gateway gw at "+addr) {
		t.Errorf("the node's Ready while it refuses its only gateway: %v %q", ok, detail)
	}

	n.subscribe(&wire.Subscribe{GatewayId: "gw", GatewayAddress: addr, ProcessId: 8, SentUnixNs: time.Now().UnixNano(), Build: n.cfg.Build})
	if ok, detail := n.Ready(); !ok {
		t.Errorf("the node's Ready once it serves the gateway of its build: %v %q", ok, detail)
	}
	if s := served(); s == nil || s.process != 8 {
		t.Fatalf("the node does not serve the gateway's process of its build: %+v", s)
	}
	select {
	case r := <-refusals:
		t.Errorf("the gateway of the node's build was refused: %v", r)
	case <-time.After(100 * time.Millisecond):
	}
}

// The gateway's start (what the process's start waits for) does not wait
// on a node refused for its build, whichever side refused: its address
// answered. It waited out NodeTimeout, a refused node never being listed,
// and /readyz said it waited for that node's inventory meanwhile.
func TestTheStartDoesNotWaitOnANodeRefusedForItsBuild(t *testing.T) {
	const addr, other = "127.0.0.2:7070", "1.1.0+bbbbbbbbbbbb"
	for _, c := range []struct {
		name   string
		refuse func(g *Gateway)
		says   string
	}{
		{"the node refuses the gateway", func(g *Gateway) {
			g.subscribeRefused(&wire.SubscribeRefused{NodeId: "a", ProcessId: g.process, Code: string(protocol.CodeVersionMismatch),
				Error: "node a runs build " + other, Build: other, Address: addr})
		}, "node a refuses this gateway"},
		{"the gateway refuses the node's inventory", func(g *Gateway) {
			g.inventory(&wire.Inventory{NodeId: "a", Address: addr, Build: other, Devices: []*wire.Device{arm("uuid-a", "049D")}})
		}, "this gateway refuses node a"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := testGateway(t, 5*time.Second) // a NodeTimeout no test waits out
			g.cfg.Build = "1.0.0+aaaaaaaaaaaa"
			g.mu.Lock()
			g.linkUp = time.Now()
			g.targets[addr] = ""
			g.mu.Unlock()
			if ok, detail := g.Started(); ok {
				t.Fatalf("started before the node answered: %q", detail)
			}
			c.refuse(g)
			if ok, detail := g.Started(); !ok || !strings.Contains(detail, "refused for their build: "+addr) {
				t.Errorf("the start after the refusal: %v %q, want over, naming %s as refused", ok, detail, addr)
			}
			wantReady(t, g, false, c.says, other)
		})
	}
}

// A refusal for its build heard from a target address where a node of the
// gateway's build (another id) now answers: the start waits on that
// node's devices as on any listed node's. The refusal, stored by node id
// and matched by address, counted the listed node's address as refused
// (review58b).
func TestTheStartWaitsOnANodeListedWhereOneWasRefused(t *testing.T) {
	const addr, other = "127.0.0.2:7070", "1.1.0+bbbbbbbbbbbb"
	g := testGateway(t, 5*time.Second)
	g.cfg.Build = "1.0.0+aaaaaaaaaaaa"
	g.mu.Lock()
	g.linkUp = time.Now()
	g.targets[addr] = ""
	g.mu.Unlock()
	g.subscribeRefused(&wire.SubscribeRefused{NodeId: "old", ProcessId: g.process, Code: string(protocol.CodeVersionMismatch),
		Error: "node old runs build " + other, Build: other, Address: addr})
	g.inventory(&wire.Inventory{NodeId: "new", Address: addr, Build: g.cfg.Build, Devices: []*wire.Device{arm("uuid-n", "049D")}})
	if ok, detail := g.Started(); ok && strings.Contains(detail, "refused for their build: "+addr) {
		t.Errorf("started %v %q: the address of listed node new counted as refused", ok, detail)
	}
}

// A refusal for its build from a node's earlier process, at another
// address, heard after the node's new process of the gateway's build was
// listed, neither drops the node nor makes the gateway unready (review58b).
func TestALateRefusalOfANodesOldProcessLeavesItsNewOne(t *testing.T) {
	const oldAddr, newAddr, other = "127.0.0.2:7070", "127.0.0.2:7071", "1.1.0+bbbbbbbbbbbb"
	g := testGateway(t, 5*time.Second)
	g.cfg.Build = "1.0.0+aaaaaaaaaaaa"
	g.inventory(&wire.Inventory{NodeId: "a", Address: newAddr, Build: g.cfg.Build, Devices: []*wire.Device{arm("uuid-n", "049D")}})
	waitAdded(t, g)
	g.subscribeRefused(&wire.SubscribeRefused{NodeId: "a", ProcessId: g.process, Code: string(protocol.CodeVersionMismatch),
		Error: "node a runs build " + other, Build: other, Address: oldAddr})
	g.mu.Lock()
	listed := g.nodes["a"] != nil
	g.mu.Unlock()
	if !listed {
		t.Errorf("node a (process at %s, of the gateway's build) dropped by a refusal its old process at %s sent", newAddr, oldAddr)
	}
	if g.refusedForBuild("a") {
		t.Error("node a counted as refused for its build while its process of the gateway's build is served")
	}
}
