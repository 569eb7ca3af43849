package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/histogram"
)

// testNode is a node without its remote: the tests call what the node
// actor would, so no protoactor remote runs in the test process.
func testNode(t *testing.T) (*Node, *actors.Device) {
	t.Helper()
	svc, shutdown := testService(t)
	t.Cleanup(shutdown)
	d, err := svc.AddDevice(sim.NewArm(sim.ArmOptions{PeriodS: 0.001}), false)
	if err != nil {
		t.Fatal(err)
	}
	return testNodeServing(t, svc), d
}

// testNodeServing is testNode serving svc's devices, subscribed to by testGW;
// svc's arms have had their first tick.
func testNodeServing(t *testing.T, svc *actors.Service) *Node {
	t.Helper()
	return testNodeLeasing(t, svc, 100)
}

// testNodeLeasing is testNodeServing with the node's lease on a gateway's
// commands (--cluster-lease-ms) leaseMs.
func testNodeLeasing(t *testing.T, svc *actors.Service, leaseMs int) *Node {
	t.Helper()
	cfg := Config{NodeID: "n", LeaseMs: leaseMs, Log: zerolog.Nop()}
	cfg.defaults()
	sys := actor.NewActorSystem() // no remote: what the node sends goes to dead letters
	t.Cleanup(sys.Shutdown)
	n := &Node{svc: svc, cfg: cfg, log: cfg.Log, sys: sys, clock: loop.SystemClock(), subs: map[string]*subscriber{},
		stop: make(chan struct{}), process: newProcessID()}
	n.configs = newKeyedFIFO[string](n.answerConfig)
	t.Cleanup(func() { close(n.stop); n.configs.close(); n.wg.Wait() })
	n.subscribe(&wire.Subscribe{GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano()})
	// Tests place springs and bubbles around where the arm is: before its
	// loop's first tick the snapshot's position is zero, not the arm's.
	var snap loop.Snapshot
	for _, d := range svc.Devices().All() {
		hwtest.Eventually(t, 10*time.Second, "the arm's first tick", func() bool { d.Load(&snap); return snap.Tick > 0 })
	}
	return n
}

const testGW = "127.0.0.4:7070"

// fresh is a command as the gateway sends it now.
func fresh(uuid string, seq uint64, mode hw.ControlMode, target ...float64) *wire.Command {
	return &wire.Command{Uuid: uuid, Seq: seq, Mode: uint32(mode), Target: target,
		GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano()}
}

func waitFor(t *testing.T, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(time.Millisecond)
	}
	return time.Since(start)
}

// A forwarded force drives the arm; when the gateway stops sending, the
// node's lease ends it without any message (a lost link or gateway).
func TestForwardedCommandLapsesWithTheLease(t *testing.T) {
	n, d := testNode(t)
	var snap loop.Snapshot
	n.command(fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 2))
	waitFor(t, "force applied", func() bool { d.Load(&snap); return snap.Mode == hw.ModeForce && snap.Target[2] == 2 })
	took := waitFor(t, "force ended by the lease", func() bool { d.Load(&snap); return snap.Mode == hw.ModeIdle })
	if took > time.Second {
		t.Errorf("force held %v after the last command; the lease is 100 ms", took)
	}
	// An idle command releases at once; an unknown device is ignored.
	n.command(fresh(d.Info.UUID, 2, hw.ModeForce, 0, 0, 2))
	n.command(fresh(d.Info.UUID, 3, hw.ModeIdle))
	if o := d.Register().Owner(); o != 0 {
		t.Errorf("owner %d after an idle command, want none", o)
	}
	n.command(&wire.Command{Uuid: "no-such-device", Mode: uint32(hw.ModeForce)})
}

// A command that waited longer than the lease (a node resumed after a
// stall, with the gateway's commands queued), that comes from a gateway
// that never subscribed, or whose mode this build does not know moves
// nothing and takes no arm.
func TestStaleOrUnknownCommandsDropped(t *testing.T) {
	n, d := testNode(t)
	stale := fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 2)
	stale.SentUnixNs -= int64(500 * time.Millisecond)
	stranger := fresh(d.Info.UUID, 2, hw.ModeForce, 0, 0, 2)
	stranger.GatewayAddress = "127.0.0.9:7070"
	// Sent just now, from a state the node pushed 500 ms ago: the gateway
	// has not heard the node for longer than the lease.
	unheard := fresh(d.Info.UUID, 4, hw.ModeForce, 0, 0, 2)
	unheard.StateSentUnixNs = time.Now().Add(-500 * time.Millisecond).UnixNano()
	// A mode this build has no command for took the arm and wrote nothing,
	// so no lease ended the claim: other gateways were refused for the
	// register's claim timeout.
	unknownMode := fresh(d.Info.UUID, 5, hw.ModeAngle+1, 0, 0, 2)
	for name, m := range map[string]*wire.Command{"stale": stale, "unknown gateway": stranger, "from a state older than the lease": unheard,
		"of a mode this build does not know": unknownMode} {
		n.command(m)
		if o := d.Register().Owner(); o != 0 {
			t.Errorf("%s command took the arm (owner %d)", name, o)
		}
	}
	n.command(fresh(d.Info.UUID, 3, hw.ModeForce, 0, 0, 2))
	if o := d.Register().Owner(); o != gatewaySession {
		t.Errorf("fresh command: owner %d, want the gateway", o)
	}
}

// A command's lease ends at most the lease after the newest state the
// gateway had from the node, however fresh the command: a node whose
// pushes are lost stops the force within the lease of the cut.
func TestCommandLeaseBoundByTheGatewaysState(t *testing.T) {
	tests := []struct {
		name      string
		stateAge  time.Duration // 0: the gateway had no batch (not checked)
		wantAtMax time.Duration // the lease left, at most
		wantAtMin time.Duration // and at least
	}{
		{"no state yet", 0, 100 * time.Millisecond, 50 * time.Millisecond},
		{"a fresh state", 2 * time.Millisecond, 98 * time.Millisecond, 50 * time.Millisecond},
		{"a state 70 ms old", 70 * time.Millisecond, 30 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, d := testNode(t)
			m := fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 2)
			if tt.stateAge != 0 {
				m.StateSentUnixNs = time.Now().Add(-tt.stateAge).UnixNano()
			}
			before := n.clock.Now()
			n.command(m)
			after := n.clock.Now()
			var c loop.Command
			d.Register().Read(&c)
			if c.Session != gatewaySession {
				t.Fatalf("command not written (session %d)", c.Session)
			}
			// The deadline was set between before and after (apart by
			// milliseconds on a loaded machine): at most the lease after
			// the later, at least the least lease after the earlier. A
			// millisecond's slack: the command's times (wall clock) and
			// the node's loop clock are read at slightly different instants.
			if left := time.Duration(c.DeadlineNs - after); left > tt.wantAtMax+time.Millisecond {
				t.Errorf("lease left %v after the command, want at most %v", left, tt.wantAtMax)
			}
			if left := time.Duration(c.DeadlineNs - before); left < tt.wantAtMin {
				t.Errorf("lease left %v, want at least %v", left, tt.wantAtMin)
			}
		})
	}
}

// A local session that holds the arm keeps it: the gateway's commands do
// not take it over.
func TestForwardedCommandRespectsALocalOwner(t *testing.T) {
	n, d := testNode(t)
	if d.Register().Claim(7) != 7 {
		t.Fatal("local claim failed")
	}
	n.command(fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 2))
	if o := d.Register().Owner(); o != 7 {
		t.Fatalf("owner %d after a gateway command, want the local session 7", o)
	}
}

// Config requests are validated and applied on the node, and errors keep
// protocol's code for the gateway to answer with; one its gateway sent
// longer ago than it waits for an answer is refused, unapplied. They are sent to the
// node actor all at once, as a gateway may: each is answered after the
// ones before it took effect (the get after a set reads the set).
func TestNodeConfig(t *testing.T) {
	n, d := testNode(t)
	pid, err := n.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return (*nodeActor)(n) }), nodeActorName)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		req      *wire.ConfigRequest
		wantJSON string
		wantCode protocol.Code
	}{
		{&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "set", Key: "handedness", Json: []byte(`"left"`), GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano()}, `"left"`, ""},
		{&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "get", Key: "handedness"}, `"left"`, ""},
		// Sent longer ago than the gateway waits (delayed in transit): the
		// gateway has answered its client 503, so it is not applied.
		{&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "reset", Key: "handedness", GatewayAddress: testGW, SentUnixNs: time.Now().Add(-configTimeout - time.Second).UnixNano()}, "", protocol.CodeUnavailable},
		{&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "get", Key: "handedness"}, `"left"`, ""},
		{&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "set", Key: "handedness", Json: []byte(`"sideways"`)}, "", protocol.CodeInvalidValue},
		{&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "reset", Key: "handedness"}, `"right"`, ""},
		{&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "get", Key: "no_such_key"}, "", protocol.CodeUnknownKey},
		{&wire.ConfigRequest{Uuid: "gone", Op: "get", Key: "handedness"}, "", protocol.CodeUnavailable},
	}
	futures := make([]*actor.Future, len(tests))
	for i, tt := range tests {
		futures[i] = n.sys.Root.RequestFuture(pid, tt.req, 10*time.Second)
	}
	for i, tt := range tests {
		a, err := futures[i].Result()
		if err != nil {
			t.Fatalf("%s %s: %v", tt.req.Op, tt.req.Key, err)
		}
		r, ok := a.(*wire.ConfigReply)
		if !ok {
			t.Fatalf("%s %s: answered %T", tt.req.Op, tt.req.Key, a)
		}
		if string(r.Json) != tt.wantJSON || protocol.Code(r.Code) != tt.wantCode {
			t.Errorf("%s %s %s: got json %s code %q (%s), want %s %q", tt.req.Op, tt.req.Key, tt.req.Json, r.Json, r.Code, r.Error, tt.wantJSON, tt.wantCode)
		}
	}
}

// A state survives the wire: what the node pushes is what the gateway's
// loop reads.
func TestStateRoundTrip(t *testing.T) {
	want := hw.State{
		PositionM: hw.Vec3{X: 0.01, Y: 0.15, Z: 0.1}, VelocityMps: hw.Vec3{X: -1}, ForceN: hw.Vec3{Z: 1.5},
		Status: hw.StatusReady | hw.StatusCalibrated, AnglesDeg: hw.Angles3{A0: 1, A1: 85, A2: -114},
		AngularVelocityDps: hw.Angles3{A2: 3}, BodyOrientation: hw.Quat{W: 1}, Orientation: hw.Quat{W: 0.5, X: 0.5, Y: 0.5, Z: 0.5},
		Buttons: hw.ButtonA | hw.ButtonC, Hall: 0.25, Battery: 0.75, GripError: 3,
	}
	b, err := proto.Marshal(stateToWire("u", &loop.Snapshot{Tick: 9, State: want}))
	if err != nil {
		t.Fatal(err)
	}
	var m wire.State
	if err := proto.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var got hw.State
	stateFromWire(&m, &got)
	if got != want || m.Uuid != "u" || m.Tick != 9 {
		t.Errorf("round trip: got %+v (uuid %q tick %d), want %+v", got, m.Uuid, m.Tick, want)
	}
}

// The node's control crosses the wire with its state, and a gateway's proxy
// reports it while the node says one of its own sessions holds the device:
// an idle device carries no target, and a mode no command can carry reads
// as idle.
func TestNodeControlReachesTheGatewaysProxy(t *testing.T) {
	tests := []struct {
		name       string
		mode       hw.ControlMode
		target     [3]float64
		held       bool
		wantOK     bool
		wantMode   hw.ControlMode
		wantTarget [3]float64
	}{
		{"held, position", hw.ModePosition, [3]float64{0.01, 0.02, 0.03}, true, true, hw.ModePosition, [3]float64{0.01, 0.02, 0.03}},
		{"held, force", hw.ModeForce, [3]float64{0, 0, 1.5}, true, true, hw.ModeForce, [3]float64{0, 0, 1.5}},
		{"held, idle", hw.ModeIdle, [3]float64{9, 9, 9}, true, true, hw.ModeIdle, [3]float64{}},
		{"held, a mode no command carries", hw.ControlMode(200), [3]float64{1, 2, 3}, true, true, hw.ModeIdle, [3]float64{}},
		{"not held: the gateway's own output stands", hw.ModeForce, [3]float64{1, 2, 3}, false, false, hw.ModeIdle, [3]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := proto.Marshal(stateToWire("u", &loop.Snapshot{Mode: tt.mode, Target: tt.target}))
			if err != nil {
				t.Fatal(err)
			}
			var m wire.State
			if err := proto.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			m.HeldLocally = tt.held
			p := proxy{g: &Gateway{clock: loop.SystemClock()}, stateAge: histogram.New(3), firstState: make(chan struct{})}
			p.setState(&m, 0, 0)
			var st hw.State
			if err := p.Exchange(&hw.Command{}, &st); err != nil { // the loop's order: exchange, then report
				t.Fatal(err)
			}
			mode, target, ok := p.ReportedMode()
			if ok != tt.wantOK || mode != tt.wantMode || target != tt.wantTarget {
				t.Errorf("ReportedMode() = %v %v %v, want %v %v %v", mode, target, ok, tt.wantMode, tt.wantTarget, tt.wantOK)
			}
		})
	}
}

// Two gateways subscribed to one node: each writes as its own owner, so
// the one that holds the arm keeps it and the other's commands move
// nothing until the holder's lease lapses; then the other takes it.
func TestTwoGatewaysOneController(t *testing.T) {
	n, d := testNode(t)
	const other = "127.0.0.5:7070"
	n.subscribe(&wire.Subscribe{GatewayAddress: other, SentUnixNs: time.Now().UnixNano()})
	first := fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 1)
	n.command(first)
	if o := d.Register().Owner(); o != gatewaySession {
		t.Fatalf("owner %d after the first gateway's command, want %d", o, uint64(gatewaySession))
	}
	second := fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, -1)
	second.GatewayAddress = other
	n.command(second)
	var snap loop.Snapshot
	d.Load(&snap)
	if o := d.Register().Owner(); o != gatewaySession || snap.Target[2] == -1 {
		t.Fatalf("the second gateway's command took the arm (owner %d, target %v)", o, snap.Target)
	}
	// The first gateway goes quiet: once its lease lapses the second's
	// command takes the arm.
	took := waitFor(t, "the second gateway controls the arm after the first's lease", func() bool {
		c := fresh(d.Info.UUID, 2, hw.ModeForce, 0, 0, -1)
		c.GatewayAddress = other
		n.command(c)
		return d.Register().Owner() == gatewaySession+2
	})
	// Not after the register's claim timeout (1 s): the lapsed gateway's
	// claim is released as soon as its lease (100 ms) ends.
	if took >= 900*time.Millisecond {
		t.Errorf("the second gateway took the arm %v after the first's last command; the lease is 100 ms", took)
	}
}

// A node forgets a gateway whose subscriptions stopped for GatewayTimeout,
// counted in push ticks: ticks that come late because the node was starved
// count no more than silenceCredit each.
func TestNodeJudgesGatewaySilenceByItsTicks(t *testing.T) {
	n, _ := testNode(t)
	n.mu.Lock()
	defer n.mu.Unlock()
	// Three stalls of 2 s each: 150 ms of silence, not 6 s.
	for range 3 {
		n.forgetSilentLocked(2 * time.Second)
	}
	if n.subs[testGW] == nil {
		t.Fatal("a starved node forgot its gateway after 3 late ticks")
	}
	for range int(GatewayTimeout/silenceCredit) + 1 {
		n.forgetSilentLocked(silenceCredit)
	}
	if n.subs[testGW] != nil {
		t.Fatalf("gateway still subscribed after %v of ticks without a subscription", GatewayTimeout)
	}
}

// After a partition heals, TCP delivers what it queued during it first: a
// gateway the node forgot meanwhile comes back through a stale Subscribe,
// and the stale commands behind it must still be judged by the clock
// offset learnt before, and dropped.
func TestStaleCommandsAfterAPartitionDropped(t *testing.T) {
	n, d := testNode(t)
	n.mu.Lock()
	for range int(GatewayTimeout/silenceCredit) + 2 { // the first tick takes the subscription's word
		n.forgetSilentLocked(silenceCredit)
	}
	forgotten := n.subs[testGW] == nil
	n.mu.Unlock()
	if !forgotten {
		t.Fatal("the silent gateway was not forgotten")
	}
	queued := time.Now().Add(-2 * time.Second).UnixNano()
	n.subscribe(&wire.Subscribe{GatewayAddress: testGW, SentUnixNs: queued})
	stale := fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 2)
	stale.SentUnixNs = queued + int64(time.Millisecond)
	n.command(stale)
	if o := d.Register().Owner(); o != 0 {
		t.Fatalf("a command queued during the partition took the arm after it healed (owner %d)", o)
	}
	n.command(fresh(d.Info.UUID, 2, hw.ModeForce, 0, 0, 2))
	if o := d.Register().Owner(); o == 0 {
		t.Fatal("a fresh command after the partition was dropped")
	}
}

// Each gateway process start is a new owner on the node (a new address,
// or a new subscription after silence); the node must keep nothing of one
// it forgot, or every push tick walks the lease ends of every gateway
// that ever commanded an arm.
func TestNodeForgetsTheLeasesOfSilentGateways(t *testing.T) {
	n, d := testNode(t)
	var snap loop.Snapshot
	for i := range 3 {
		addr := fmt.Sprintf("127.0.0.%d:7070", 10+i)
		n.subscribe(&wire.Subscribe{GatewayAddress: addr, SentUnixNs: time.Now().UnixNano()})
		cmd := fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 1)
		cmd.GatewayAddress = addr
		n.command(cmd)
		waitFor(t, addr+"'s force applied", func() bool { d.Load(&snap); return snap.Mode == hw.ModeForce })
		waitFor(t, addr+"'s force ended by the lease", func() bool { d.Load(&snap); return snap.Mode == hw.ModeIdle })
		n.mu.Lock()
		for range int(GatewayTimeout/silenceCredit) + 2 { // the first tick takes the subscription's word
			n.forgetSilentLocked(silenceCredit)
		}
		left, subs := len(n.leaseEnds), len(n.subs)
		n.mu.Unlock()
		if subs != 0 {
			t.Fatalf("%d gateways still subscribed after their silence", subs)
		}
		if left != 0 {
			t.Fatalf("after %d silent gateways the node keeps %d lease ends", i+1, left)
		}
	}
}

// A config request that waited in the node's queue past the gateway's
// configTimeout (slow fsyncs ahead of it) has been answered on the gateway
// already, as unavailable: the node must not apply it after that, or the
// client that was told its set failed finds it in force.
func TestNodeDropsConfigRequestsTheGatewayGaveUpOn(t *testing.T) {
	n, d := testNode(t)
	k, _ := protocol.KeyFromPath("handedness")
	handedness := func() string {
		e, err := n.svc.Entry(d, 0, k)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := e.MarshalJSON()
		return string(b)
	}
	tests := []struct {
		op, json string
		waited   time.Duration
		want     string
	}{
		{"set", `"left"`, configTimeout + time.Second, `"right"`},
		// Within the gateway's 2 s, but its answer would not be: a
		// client told 503 would find it applied.
		{"set", `"left"`, configTimeout - 100*time.Millisecond, `"right"`},
		{"set", `"left"`, 0, `"left"`},
		{"reset", "", configTimeout + time.Second, `"left"`},
		{"reset", "", configTimeout / 2, `"right"`},
	}
	for _, tt := range tests {
		n.answerConfig(configJob{req: &wire.ConfigRequest{Uuid: d.Info.UUID, Op: tt.op, Key: "handedness", Json: []byte(tt.json)},
			queued: time.Now().Add(-tt.waited)})
		if got := handedness(); got != tt.want {
			t.Errorf("%s %s after %v in the queue: handedness %s, want %s", tt.op, tt.json, tt.waited, got, tt.want)
		}
	}
}

// A config request a gateway sent just as a partition began reaches the
// node when it heals, ahead of the gateway's Subscribes queued behind it:
// the node forgot the silent gateway meanwhile, and the gateway answered
// its client 503 long before. The request must be judged by its age as
// a subscribed gateway's is (on the clock offset kept from before), not
// applied as if it had just been sent; one from a gateway whose clock the
// node never learnt cannot be dated, and is refused likewise.
func TestNodeDatesConfigRequestsOfGatewaysItForgot(t *testing.T) {
	n, d := testNode(t)
	k, _ := protocol.KeyFromPath("handedness")
	pid, err := n.sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return (*nodeActor)(n) }), nodeActorName)
	if err != nil {
		t.Fatal(err)
	}
	forget := func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		for range int(GatewayTimeout/silenceCredit) + 2 { // the first tick takes the subscription's word
			n.forgetSilentLocked(silenceCredit)
		}
		if n.subs[testGW] != nil {
			t.Fatal("the silent gateway was not forgotten")
		}
	}
	tests := []struct {
		name     string
		gateway  string
		sentAgo  time.Duration
		forget   bool
		wantCode protocol.Code
		want     string
	}{
		{"subscribed, fresh", testGW, 0, false, "", `"left"`},
		{"subscribed, sent before the gateway gave up", testGW, configTimeout + time.Second, false, protocol.CodeUnavailable, `"right"`},
		{"forgotten, sent before the gateway gave up", testGW, configTimeout + time.Second, true, protocol.CodeUnavailable, `"right"`},
		{"forgotten, fresh", testGW, 0, true, "", `"left"`},
		{"never subscribed", "127.0.0.9:7070", 0, false, protocol.CodeUnavailable, `"right"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := n.config(&wire.ConfigRequest{Uuid: d.Info.UUID, Op: "reset", Key: "handedness"}); r.Error != "" {
				t.Fatal(r.Error)
			}
			n.subscribe(&wire.Subscribe{GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano()})
			if tt.forget {
				forget()
			}
			req := &wire.ConfigRequest{Uuid: d.Info.UUID, Op: "set", Key: "handedness", Json: []byte(`"left"`),
				GatewayAddress: tt.gateway, SentUnixNs: time.Now().Add(-tt.sentAgo).UnixNano()}
			a, err := n.sys.Root.RequestFuture(pid, req, 10*time.Second).Result()
			if err != nil {
				t.Fatal(err)
			}
			r, ok := a.(*wire.ConfigReply)
			if !ok {
				t.Fatalf("answered %T", a)
			}
			if protocol.Code(r.Code) != tt.wantCode {
				t.Errorf("answered code %q (%s), want %q", r.Code, r.Error, tt.wantCode)
			}
			e, err := n.svc.Entry(d, 0, k)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := e.MarshalJSON(); string(b) != tt.want {
				t.Errorf("handedness %s after the request, want %s", b, tt.want)
			}
		})
	}
}
