package cluster

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol/event"
)

// testGateway is a gateway without its remote: the tests hand it what the
// gateway actor would receive. Messages it sends go to dead letters.
func testGateway(t *testing.T, nodeTimeout time.Duration) *Gateway {
	t.Helper()
	svc, shutdown := testService(t)
	g := newTestGateway(svc, nodeTimeout)
	serveTestGateway(t, g, shutdown, true)
	return g
}

// serveTestGateway adds the devices of g's inventories until the test
// ends, then shuts g's service down. With probes it also runs the gateway
// actor (local only) and the watch, whose probes judge the nodes' silence.
func serveTestGateway(t *testing.T, g *Gateway, shutdown func(), probes bool) {
	t.Helper()
	if probes {
		if _, err := g.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return (*gatewayActor)(g) }), gatewayActorName); err != nil {
			t.Fatal(err)
		}
		g.wg.Add(1)
		go g.watch()
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		g.adds.run(g.stop, g.add)
	}()
	t.Cleanup(func() {
		// As Close does: an addition answered now (on the service's own
		// goroutine) sees closing under mu and adds nothing to wg while
		// Wait runs.
		g.mu.Lock()
		g.closing.Store(true)
		close(g.stop)
		g.mu.Unlock()
		g.wg.Wait()
		shutdown()
		g.sys.Shutdown()
	})
}

// newTestGateway is a gateway of svc with no remote and nothing started.
func newTestGateway(svc *actors.Service, nodeTimeout time.Duration) *Gateway {
	cfg := Config{NodeID: "gw", NodeTimeout: nodeTimeout, Log: zerolog.Nop()}
	cfg.defaults()
	return &Gateway{svc: svc, cfg: cfg, log: cfg.Log, sys: actor.NewActorSystem(), clock: loop.SystemClock(), addr: "127.0.0.1:1", process: newProcessID(),
		stop: make(chan struct{}), nodes: map[string]*nodeState{}, proxies: map[string]*proxy{},
		targets: map[string]string{}, members: map[string]bool{}, adds: newFIFO[*proxy](), ids: idMemory{}}
}

// testService starts the service a test's node or gateway serves, with
// what shuts it down (the caller orders it among its other cleanups).
func testService(t *testing.T) (*actors.Service, func()) {
	t.Helper()
	return testServiceWith(t, actors.Options{})
}

// testServiceWith is testService with o (a state directory, a wrapped
// store); it sets the log and the one simulation shard.
func testServiceWith(t *testing.T, o actors.Options) (*actors.Service, func()) {
	t.Helper()
	o.Log, o.SimShards = zerolog.Nop(), 1
	svc, err := actors.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	return svc, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
	}
}

func arm(uuid, id string) *wire.Device {
	return &wire.Device{Uuid: uuid, Id: id, Kind: uint32(hw.KindArm), MaxForceN: 10, Simulated: true}
}

// waitAdded waits until every proxy an inventory made is a device of the
// gateway's service (the adds happen off the gateway actor).
func waitAdded(t *testing.T, g *Gateway) {
	t.Helper()
	waitCond(t, "the inventory's devices added", func() bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		for _, p := range g.proxies {
			if p.dev.Load() == nil {
				return false
			}
		}
		return true
	})
}

func waitCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Two nodes with arms of the same short id: both are served, under
// distinct ids; pushed state reaches the right one; a node that falls
// silent takes its arm away with device-disconnected and leaves the other.
func TestGatewayMergesNodes(t *testing.T) {
	g := testGateway(t, 300*time.Millisecond)
	sub := subscribeEvents(t, g)
	g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{arm("uuid-a", "049D")}})
	g.inventory(&wire.Inventory{NodeId: "b", Address: "127.0.0.3:7070", Devices: []*wire.Device{arm("uuid-b", "049D")}})
	// Each node's first push, as a node sends right after its inventory:
	// the gateway lists a device once its state is here.
	for node, uuid := range map[string]string{"a": "uuid-a", "b": "uuid-b"} {
		g.states(&wire.StateBatch{NodeId: node, SentUnixNs: time.Now().UnixNano(),
			States: []*wire.State{{Uuid: uuid, Tick: 1, PositionM: []float64{0, 0.1, 0.1}}}})
	}
	waitAdded(t, g)
	byUUID := map[string]*actors.Device{}
	for _, d := range g.svc.Devices().All() {
		byUUID[d.Info.UUID] = d
	}
	if len(byUUID) != 2 || byUUID["uuid-a"] == nil || byUUID["uuid-b"] == nil {
		t.Fatalf("gateway devices %v, want both nodes' arms", byUUID)
	}
	if byUUID["uuid-a"].ID != "049D" || byUUID["uuid-b"].ID == "049D" {
		t.Errorf("ids a=%s b=%s: the first connected keeps 049D, the other gets another", byUUID["uuid-a"].ID, byUUID["uuid-b"].ID)
	}

	// Node b keeps talking; node a does not.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			g.states(&wire.StateBatch{NodeId: "b", States: []*wire.State{{Uuid: "uuid-b", PositionM: []float64{0.01, 0.02, 0.03}}}})
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-done }()
	var snap loop.Snapshot
	waitCond(t, "b's pushed position on the gateway", func() bool {
		byUUID["uuid-b"].Load(&snap)
		return snap.State.PositionM == hw.Vec3{X: 0.01, Y: 0.02, Z: 0.03}
	})
	waitCond(t, "a's arm gone after its node fell silent", func() bool {
		for _, d := range g.svc.Devices().All() {
			if d.Info.UUID == "uuid-a" {
				return false
			}
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatal("no device-disconnected event for a's arm")
		}
		if e.Name == event.NameDeviceDisconnected {
			break
		}
	}
	if len(g.svc.Devices().All()) != 1 {
		t.Errorf("b's arm left with a's: %d devices", len(g.svc.Devices().All()))
	}
}

// With automanaged membership the cluster's topology drives the gateway: a
// node member that joins is subscribed to, one that leaves takes its
// devices away once its messages stop too (not after NodeTimeout), while
// one that left but keeps pushing stays; members without a node kind
// (another gateway) are neither; a node back at a new address is no longer
// subscribed to at its old one.
func TestGatewayFollowsTopology(t *testing.T) {
	g := testGateway(t, time.Hour) // only the topology may drop the node
	// a's cluster port listens, as a live node's does (a refused one would
	// be dropped at once).
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	aAddr := l.Addr().String()
	na := &cluster.Member{Id: "m-a", Host: "127.0.0.1", Port: int32(l.Addr().(*net.TCPAddr).Port), Kinds: []string{NodeKind("a"), cluster.TopicActorKind}}
	gw := &cluster.Member{Id: "m-gw", Host: "127.0.0.4", Port: 7070, Kinds: []string{cluster.TopicActorKind}}
	g.topology(&cluster.ClusterTopology{Members: []*cluster.Member{na, gw}, Joined: []*cluster.Member{na, gw}})
	g.mu.Lock()
	targets, member := maps.Clone(g.targets), g.members["a"]
	g.mu.Unlock()
	if !maps.Equal(targets, map[string]string{aAddr: "a"}) || !member {
		t.Fatalf("after a joined: targets %v, a a member %v; want a's address only, and a member", targets, member)
	}

	g.inventory(&wire.Inventory{NodeId: "a", Address: aAddr, Devices: []*wire.Device{arm("uuid-a", "049D")}})
	waitAdded(t, g)
	if len(g.svc.Devices().All()) != 1 {
		t.Fatalf("%d devices after a's inventory, want 1", len(g.svc.Devices().All()))
	}
	// a leaves the topology but its pushes keep arriving (a health poll
	// that timed out on a loaded machine): it stays.
	g.topology(&cluster.ClusterTopology{Members: []*cluster.Member{gw}, Left: []*cluster.Member{na}})
	for range 20 { // 20 × 20 ms, well past suspectFor
		g.states(&wire.StateBatch{NodeId: "a"})
		time.Sleep(20 * time.Millisecond)
	}
	if len(g.svc.Devices().All()) != 1 {
		t.Fatal("a's arm left with the topology while a's pushes kept arriving")
	}
	// It left and is silent: its arm goes, long before NodeTimeout.
	g.topology(&cluster.ClusterTopology{Members: []*cluster.Member{gw}, Left: []*cluster.Member{na}})
	waitCond(t, "a's arm gone after a left the topology and fell silent", func() bool { return len(g.svc.Devices().All()) == 0 })
	g.mu.Lock()
	if g.members["a"] || g.targets[aAddr] != "a" {
		t.Errorf("after a left: a a member %v, subscribed %q; want not a member, still subscribed (it may answer again)", g.members["a"], g.targets[aAddr])
	}
	g.mu.Unlock()
	// a restarted: a new member at a new address replaces the old target.
	na2 := &cluster.Member{Id: "m-a2", Host: "127.0.0.2", Port: 7072, Kinds: []string{NodeKind("a")}}
	g.topology(&cluster.ClusterTopology{Members: []*cluster.Member{na2, gw}, Joined: []*cluster.Member{na2}})
	g.mu.Lock()
	defer g.mu.Unlock()
	if !maps.Equal(g.targets, map[string]string{"127.0.0.2:7072": "a"}) {
		t.Errorf("after a restarted at a new address: targets %v, want the new address only", g.targets)
	}
}

// A node's word that a session on the node holds its arm takes the
// gateway's register for localSession, so gateway sessions are refused;
// its word that nobody does gives it back.
func TestGatewayMirrorsLocalHold(t *testing.T) {
	g := testGateway(t, time.Hour)
	g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{arm("uuid-a", "049D")}})
	waitAdded(t, g)
	devs := g.svc.Devices().All()
	if len(devs) != 1 {
		t.Fatalf("%d devices, want a's arm", len(devs))
	}
	reg := devs[0].Register()
	// The node's session holds the arm in position mode.
	push := func(held bool) {
		st := &wire.State{Uuid: "uuid-a", HeldLocally: held}
		if held {
			st.ControlMode, st.Target = uint32(hw.ModePosition), []float64{0.01, 0.02, 0.03}
		}
		g.states(&wire.StateBatch{NodeId: "a", SentUnixNs: time.Now().UnixNano(), States: []*wire.State{st}})
	}
	var snap loop.Snapshot
	shows := func(mode hw.ControlMode, target [3]float64) func() bool {
		return func() bool {
			devs[0].Load(&snap)
			return snap.Mode == mode && snap.Target == target
		}
	}
	push(true)
	waitCond(t, "the gateway's register held for the node's session", func() bool { return reg.Owner() == localSession })
	if owner := reg.Claim(7); owner != localSession {
		t.Fatalf("a gateway session's claim got owner %d, want localSession", owner)
	}
	// Its frames show the node's control, not the gateway's idle hold.
	waitCond(t, "the gateway's snapshot showing the node's position control", shows(hw.ModePosition, [3]float64{0.01, 0.02, 0.03}))
	push(false)
	waitCond(t, "the gateway's register free once the node's session let go", func() bool { return reg.Owner() == 0 })
	waitCond(t, "the gateway's snapshot idle again", shows(hw.ModeIdle, [3]float64{}))
}

// The states' age is measured on the gateway's clock even when the node's
// clock is far off: the node's offset estimate and the gateway's, from the
// two directions, cancel the skew.
func TestGatewayStateAgeAcrossClocks(t *testing.T) {
	g := testGateway(t, time.Hour)
	g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{arm("uuid-a", "049D")}})
	waitAdded(t, g)
	const skew = int64(5 * time.Hour) // the node's clock is ahead
	// The node read the state now (its clock) and estimates the gateway's
	// clock as its own less the skew (and a 100 µs shortest delay).
	g.states(&wire.StateBatch{NodeId: "a", SentUnixNs: time.Now().UnixNano() + skew, OffsetNs: -skew - 100_000,
		States: []*wire.State{{Uuid: "uuid-a"}}})
	if age := proxyStateAge(g, "uuid-a"); age < -time.Millisecond || age > time.Second {
		t.Fatalf("state sampled %v ago on the gateway's clock, want about now", age)
	}
}

// A node's silence is counted in probes: a gateway whose probes come late
// (its goroutines starved of CPU) does not drop a node for its own stall,
// while a node unheard for NodeTimeout of timely probes is dropped, and a
// node whose connection closed is dropped after suspectFor unless heard.
func TestGatewayJudgesSilenceByProbes(t *testing.T) {
	svc, shutdown := testService(t)
	t.Cleanup(shutdown)
	g := newTestGateway(svc, time.Second)
	t.Cleanup(g.sys.Shutdown)
	g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{arm("uuid-a", "049D")}})
	g.inventory(&wire.Inventory{NodeId: "b", Address: "127.0.0.3:7070", Devices: []*wire.Device{arm("uuid-b", "04A0")}})
	known := func(id string) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.nodes[id] != nil
	}
	at := time.Now()
	probe := func(after time.Duration) {
		at = at.Add(after)
		g.probed(&probe{sent: at})
	}
	probe(0)
	// The gateway stalls: probes 3 s apart, nothing handled in between.
	for range 3 {
		probe(3 * time.Second)
	}
	if !known("a") || !known("b") {
		t.Fatal("a gateway starved between its probes dropped its nodes")
	}
	// Timely probes: b keeps pushing, a does not.
	for range int(g.cfg.NodeTimeout/probeEvery) + 1 {
		g.states(&wire.StateBatch{NodeId: "b"})
		probe(probeEvery)
	}
	if known("a") || !known("b") {
		t.Fatalf("after %v of timely probes: a known %v (silent), b known %v (pushing)", g.cfg.NodeTimeout, known("a"), known("b"))
	}
	// b's connection closes: it goes after suspectFor, not NodeTimeout.
	g.mu.Lock()
	g.suspectLocked(g.nodes["b"], "test")
	g.mu.Unlock()
	for range int(suspectFor/probeEvery) + 1 {
		probe(probeEvery)
	}
	if known("b") {
		t.Fatal("a node whose connection closed and that fell silent was kept")
	}
}

// A node dropped for its silence is remembered, with its proxies, only
// while a config request may still wait on them (configTimeout): a node
// that never returns does not keep its old devices referenced.
func TestGatewayForgetsADroppedNodeOnceNothingWaits(t *testing.T) {
	svc, shutdown := testService(t)
	t.Cleanup(shutdown)
	g := newTestGateway(svc, time.Second)
	t.Cleanup(g.sys.Shutdown)
	g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{arm("uuid-a", "049D")}})
	g.mu.Lock()
	g.dropNodeLocked("a", "silent", false)
	kept := g.dropped["a"] != nil
	g.mu.Unlock()
	if !kept {
		t.Fatal("a node dropped for its silence was not kept for the requests waiting on it")
	}
	waitCond(t, "the dropped node forgotten after configTimeout", func() bool {
		g.probed(&probe{sent: time.Now()})
		g.mu.Lock()
		defer g.mu.Unlock()
		return g.dropped["a"] == nil
	})
}

// A node whose connection closed while its port still accepts (a killed
// process's files close one by one, slowly on a loaded host) is dialled
// again until its port refuses, and then dropped with its device: here
// no probe is ever sent, so nothing else could drop it.
func TestGatewayRedialsASuspectNodeUntilItsPortRefuses(t *testing.T) {
	svc, shutdown := testService(t)
	g := newTestGateway(svc, time.Hour)
	serveTestGateway(t, g, shutdown, false)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	g.inventory(&wire.Inventory{NodeId: "a", Address: l.Addr().String(), Devices: []*wire.Device{arm("uuid-a", "049D")}})
	waitAdded(t, g)
	g.mu.Lock()
	g.suspectLocked(g.nodes["a"], "test")
	g.mu.Unlock()
	// The first dial finds the port open; then it closes.
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	_ = l.Close()
	waitCond(t, "node a and its arm gone once its port refuses", func() bool {
		g.mu.Lock()
		known := g.nodes["a"] != nil
		g.mu.Unlock()
		return !known && len(g.svc.Devices().All()) == 0
	})
}

// A node's inventory is checked before its devices join: a device without
// a UUID, of a kind the gateway does not know, or listed twice is left
// out, and one whose id is not spelled as its kind's ids (it would be a
// route segment such as /arm3/{id}) gets an id derived from its UUID.
func TestGatewayChecksInventory(t *testing.T) {
	g := testGateway(t, time.Minute)
	grip := func(uuid, id string) *wire.Device {
		return &wire.Device{Uuid: uuid, Id: id, Kind: uint32(hw.KindGrip), Simulated: true}
	}
	odd := arm("uuid-kind", "0100")
	odd.Kind = 200
	g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{
		arm("", "0101"), odd,
		arm("uuid-twice", "0102"), grip("uuid-twice", "7"),
		arm("uuid-empty-id", ""), arm("uuid-slash", "a/b"), arm("uuid-lower", "0a0b"),
		grip("uuid-grip-zero", "0"), grip("uuid-grip-padded", "007"), grip("uuid-grip-word", "one"), grip("uuid-grip-ok", "12"),
	}})
	waitAdded(t, g)
	byUUID := map[string]*actors.Device{}
	for _, d := range g.svc.Devices().All() {
		byUUID[d.Info.UUID] = d
	}
	for _, uuid := range []string{"", "uuid-kind"} {
		if d := byUUID[uuid]; d != nil {
			t.Errorf("device %q (id %s) joined; its inventory entry is malformed", uuid, d.ID)
		}
	}
	if d := byUUID["uuid-twice"]; d == nil || d.Info.Kind != hw.KindArm || d.ID != "0102" {
		t.Errorf("a UUID listed twice: got %+v, want the first entry, arm 0102", d)
	}
	tests := []struct {
		uuid string
		kind hw.Kind
		keep string // the id it must keep; "" if it needs one derived
	}{
		{"uuid-empty-id", hw.KindArm, ""},
		{"uuid-slash", hw.KindArm, ""},
		{"uuid-lower", hw.KindArm, ""},
		{"uuid-grip-zero", hw.KindGrip, "0"},
		{"uuid-grip-padded", hw.KindGrip, ""},
		{"uuid-grip-word", hw.KindGrip, ""},
		{"uuid-grip-ok", hw.KindGrip, "12"},
	}
	for _, tt := range tests {
		d := byUUID[tt.uuid]
		switch {
		case d == nil:
			t.Errorf("%s did not join", tt.uuid)
		case tt.keep != "" && d.ID != tt.keep:
			t.Errorf("%s: id %q, want its own %q", tt.uuid, d.ID, tt.keep)
		case tt.keep == "" && d.ID != derivedID(tt.kind, tt.uuid, map[string]bool{}):
			t.Errorf("%s: id %q, want the one derived from its UUID, %q", tt.uuid, d.ID, derivedID(tt.kind, tt.uuid, map[string]bool{}))
		}
	}
}

// TestRefreshIDsOneAtATime: while a refresh is stuck saving (a hung disk,
// here the save lock held), the next hourly refreshes start no goroutine;
// once it is done, the next one starts again.
func TestRefreshIDsOneAtATime(t *testing.T) {
	svc, shutdown := testService(t)
	defer shutdown()
	g := newTestGateway(svc, time.Hour)
	defer g.sys.Shutdown()
	g.idsSaveMu.Lock()
	if !g.startRefresh() {
		t.Fatal("the first refresh did not start")
	}
	for i := range 3 {
		if g.startRefresh() {
			t.Fatalf("refresh %d started while the first was still saving", i+2)
		}
	}
	g.idsSaveMu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for g.refreshing.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the first refresh never ended")
		}
		time.Sleep(time.Millisecond)
	}
	if !g.startRefresh() {
		t.Fatal("no refresh started after the first one ended")
	}
	g.wg.Wait()
}

// A dropped node's devices fail with the reason the gateway dropped it, in
// their device-failed event as in the log: an operator reading the events
// tells a killed node from a hung one. Every drop read alike before.
func TestDroppedNodesDevicesSayWhy(t *testing.T) {
	for _, tc := range []struct {
		why  string
		dead bool
	}{
		{"its connection closed and its port refuses", true},
		{"silent for 1s", false},
		{"it refused this gateway's subscription", false},
	} {
		t.Run(tc.why, func(t *testing.T) {
			g := testGateway(t, time.Hour)
			sub := subscribeEvents(t, g)
			addRemoteArm(t, g)
			g.mu.Lock()
			g.dropNodeLocked("a", tc.why, tc.dead)
			g.mu.Unlock()
			var failed struct {
				ID     string `json:"device_id"`
				Reason string `json:"reason"`
			}
			if err := json.Unmarshal(nextEvent(t, sub, "device-failed"), &failed); err != nil {
				t.Fatal(err)
			}
			if failed.ID != "049D" || !strings.Contains(failed.Reason, "node a") || !strings.Contains(failed.Reason, tc.why) {
				t.Fatalf("device-failed of %s: %q; want the node and %q", failed.ID, failed.Reason, tc.why)
			}
		})
	}
}

// A device the node no longer lists left it: the gateway says
// device-disconnected alone, as the node does for an unplug (its
// device-failed said "failed" of every unplug at a node, review55). A
// failure there is told by the node's own device-failed, which the node
// forwards and the gateway publishes under its id for the device.
func TestDeviceLeavingTheNodesInventoryReadsAsTheNodeSaysIt(t *testing.T) {
	t.Run("unplugged at the node", func(t *testing.T) {
		g := testGateway(t, time.Hour)
		sub := subscribeEvents(t, g)
		addRemoteArm(t, g)
		g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070"})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for {
			e, err := sub.Next(ctx)
			if err != nil {
				t.Fatal("no device-disconnected within 5 s")
			}
			if e.Name == event.NameDeviceFailed {
				t.Fatalf("the device that left the node's inventory failed on the gateway: %s", e.Message)
			}
			if e.Name == event.NameDeviceDisconnected {
				break
			}
		}
	})
	t.Run("failed at the node", func(t *testing.T) {
		n, d := testNode(t)
		g := testGateway(t, time.Hour)
		linkLab(t, g, n)
		waitAdded(t, g)
		sub := subscribeEvents(t, g)
		n.svc.Activity().Publish(event.DeviceFailed("inverse3", d.Info.ID, "the cable"))
		var failed struct {
			ID     string `json:"device_id"`
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(nextEvent(t, sub, event.NameDeviceFailed), &failed); err != nil {
			t.Fatal(err)
		}
		if failed.ID != d.Info.ID || failed.Reason != "the cable" {
			t.Fatalf("the node's device-failed reached the gateway as %+v", failed)
		}
	})
}
