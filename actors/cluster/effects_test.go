package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// outbox collects what a process without a remote sends to its peers: the
// messages land in its system's dead letters.
type outbox struct {
	mu   sync.Mutex
	msgs []any
}

func watchOutbox(t *testing.T, sys *actor.ActorSystem) *outbox {
	o := &outbox{}
	sub := sys.EventStream.Subscribe(func(ev any) {
		if dl, ok := ev.(*actor.DeadLetterEvent); ok {
			o.mu.Lock()
			o.msgs = append(o.msgs, actor.UnwrapEnvelopeMessage(dl.Message))
			o.mu.Unlock()
		}
	})
	t.Cleanup(func() { sys.EventStream.Unsubscribe(sub) })
	return o
}

// effects are the wire.Effects sent so far; commands the wire.Commands.
func (o *outbox) effects() []*wire.Effects  { return sentOf[*wire.Effects](o) }
func (o *outbox) commands() []*wire.Command { return sentOf[*wire.Command](o) }
func (o *outbox) replies() []*wire.EffectsReply {
	return sentOf[*wire.EffectsReply](o)
}

func sentOf[T any](o *outbox) []T {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []T
	for _, m := range o.msgs {
		if v, ok := m.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

// specsJSON is specs as the gateway's proxy sends them.
func specsJSON(t *testing.T, specs ...effect.Spec) []byte {
	t.Helper()
	b, err := json.Marshal(specs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// springBeside is a 200 N/m spring whose point is 2 cm along x from
// where d's arm is.
func springBeside(d *actors.Device) effect.Spec {
	var snap loop.Snapshot
	d.Load(&snap)
	return effect.Spec{ID: "pull", Kind: effect.SpringPoint,
		Params: effect.Params{PointM: snap.State.PositionM.Add(hw.Vec3{X: 0.02}), StiffnessNPerM: 200}}
}

// declared is a gateway's declaration as it sends it now.
func declared(uuid string, gen uint64, specs []byte) *wire.Effects {
	return &wire.Effects{Uuid: uuid, GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano(), Gen: gen, Session: 3, Specs: specs}
}

// A declaration that arrives after a newer one of the same gateway (both
// its generation and its send time lower: a reconnect's replay) is
// ignored, a withdrawal as well as a set; one with a lower generation but
// sent later (a new proxy or gateway process starts its generations
// again) is taken.
func TestNodeIgnoresLateDeclarations(t *testing.T) {
	n, d := testNode(t)
	var snap loop.Snapshot
	d.Load(&snap)
	spring := func(id string) []byte {
		return specsJSON(t, effect.Spec{ID: id, Kind: effect.SpringPoint,
			Params: effect.Params{PointM: snap.State.PositionM, StiffnessNPerM: 100}})
	}
	// Every send time counts from one instant: a loaded machine that
	// takes 20 ms between two messages' making must not reorder them.
	base := time.Now().UnixNano()
	sentAt := func(gen uint64, specs []byte, ago time.Duration) *wire.Effects {
		m := declared(d.Info.UUID, gen, specs)
		m.SentUnixNs = base - int64(ago)
		return m
	}
	inForce := func() string {
		if set := d.Effects(); set != nil && set.Len() == 1 {
			return set.Spec(0).ID
		}
		return ""
	}
	n.effects(sentAt(5, spring("new"), 0))
	steps := []struct {
		what string
		m    *wire.Effects
		want string
	}{
		{"an older set, sent earlier", sentAt(4, spring("old"), 20*time.Millisecond), "new"},
		{"an older withdrawal, sent earlier", sentAt(3, nil, 30*time.Millisecond), "new"},
		{"the same generation resent", sentAt(5, spring("new"), 0), "new"},
		{"a new proxy's first, sent later", sentAt(1, spring("restarted"), -10*time.Millisecond), "restarted"},
		{"its withdrawal", sentAt(2, nil, -20*time.Millisecond), ""},
	}
	for _, st := range steps {
		n.effects(st.m)
		if got := inForce(); got != st.want {
			t.Fatalf("after %s: effect in force %q, want %q", st.what, got, st.want)
		}
	}
	// Navigation alike: an older bubble sent earlier does not replace the
	// newer, nor does its withdrawal.
	bubble := bubbleAround(t, snap.State.PositionM)
	navAt := func(gen uint64, b []byte, ago time.Duration) *wire.Navigation {
		m := navDeclared(d.Info.UUID, gen, 10, b)
		m.SentUnixNs = base - int64(ago)
		return m
	}
	key := fxKey{gatewaySession, d.Info.UUID}
	navGen := func() uint64 {
		n.mu.Lock()
		defer n.mu.Unlock()
		if nav := n.navs[key]; nav != nil {
			return nav.gen
		}
		return 0
	}
	n.navigation(navAt(7, bubble, 0))
	n.navigation(navAt(6, bubble, 20*time.Millisecond))
	n.navigation(navAt(5, nil, 30*time.Millisecond))
	if g := navGen(); g != 7 {
		t.Fatalf("navigation in force: generation %d after late declarations, want 7", g)
	}
}

// A gateway's declaration renders on the node's loop under the gateway's
// register owner, with the force the gateway's commands hold; when they
// stop, the node's lease ramps the effects' force to zero; an idle
// command or an empty declaration withdraws them; an arm a local session
// holds refuses them with device_busy and keeps the local session's own.
func TestNodeRendersForwardedEffectsUnderTheLease(t *testing.T) {
	n, d := testNode(t)
	out := watchOutbox(t, n.sys)
	var snap loop.Snapshot
	pull := springBeside(d)
	n.effects(declared(d.Info.UUID, 1, specsJSON(t, pull)))
	if set := d.Effects(); set.Len() != 1 || set.Session != gatewaySession {
		t.Fatalf("node's effects %+v, want the gateway's spring under its owner", set)
	}
	n.command(fresh(d.Info.UUID, 1, hw.ModeForce, 0, 0, 0))
	var rep loop.EffectsReport
	hwtest.Eventually(t, 5*time.Second, "the node's loop renders the spring", func() bool {
		d.LoadEffects(&rep)
		return rep.Rendering && rep.N == 1 && rep.Effects[0].ForceN.X > 1
	})
	// No more commands: the lease (100 ms) ends the force.
	took := hwtest.Eventually(t, 5*time.Second, "the effects' force ended by the lease", func() bool {
		d.Load(&snap)
		return snap.Mode == hw.ModeIdle && snap.State.ForceN.Norm() < 1e-9
	})
	if took > time.Second {
		t.Errorf("effects' force held %v after the last command; the lease is 100 ms", took)
	}
	// (They stay paused: TestNodeLeaseLapsePausesAGatewaysEffectsUntilAnotherTakesTheArm.)

	// A declaration with a time to live: it counts on the node's clock.
	ttl := pull
	ttl.ExpiresNs = int64(300 * time.Millisecond) // time left, as sent
	n.effects(declared(d.Info.UUID, 2, specsJSON(t, ttl)))
	set := d.Effects()
	if left := set.Spec(0).ExpiresNs - n.clock.Now(); set.Len() != 1 || left <= 0 || left > int64(300*time.Millisecond) {
		t.Fatalf("expiry %d ns from now on the node, want within the 300 ms sent", left)
	}
	// An idle command releases the arm and withdraws the effects.
	n.command(fresh(d.Info.UUID, 2, hw.ModeForce, 0, 0, 0))
	n.command(fresh(d.Info.UUID, 3, hw.ModeIdle))
	if d.Effects() != nil {
		t.Fatal("effects still in force after the gateway released the arm")
	}
	// So does an empty declaration.
	n.effects(declared(d.Info.UUID, 3, specsJSON(t, pull)))
	n.effects(declared(d.Info.UUID, 4, nil))
	if d.Effects() != nil {
		t.Fatal("effects still in force after an empty declaration")
	}
	if r := out.replies(); len(r) != 0 {
		t.Fatalf("refusals of declarations the node took: %v", r)
	}

	// A local session holds the arm: the gateway's effects are refused and
	// the local session's stay.
	n.command(fresh(d.Info.UUID, 4, hw.ModeIdle))
	local, err := effect.NewSet(7, []effect.Spec{pull})
	if err != nil {
		t.Fatal(err)
	}
	if d.Register().Claim(7) != 7 {
		t.Fatal("the local session could not claim the arm")
	}
	d.RenderForwarded(local, nil, nil)
	n.effects(declared(d.Info.UUID, 5, specsJSON(t, pull)))
	if o := d.Register().Owner(); o != 7 {
		t.Fatalf("owner %d after a refused declaration, want the local session", o)
	}
	if d.Effects() != local {
		t.Fatal("the gateway's declaration replaced a local session's effects")
	}
	bad := pull
	bad.Params.StiffnessNPerM = -1
	d.Register().Release(7)
	n.effects(declared(d.Info.UUID, 6, specsJSON(t, bad)))
	var codes []string
	hwtest.Eventually(t, 5*time.Second, "the refusals sent to the gateway", func() bool {
		codes = codes[:0]
		for _, r := range out.replies() {
			codes = append(codes, fmt.Sprintf("%d:%s:%s", r.Gen, r.Code, r.EffectId))
		}
		return len(codes) == 2
	})
	if want := []string{"5:" + string(protocol.CodeDeviceBusy) + ":pull", "6:" + string(protocol.CodeInvalidValue) + ":pull"}; !slices.Equal(codes, want) {
		t.Errorf("refusals %v, want %v", codes, want)
	}
}

// frameSink is a session's connection in a test: its frames, decoded.
type frameSink struct{ frames chan map[string]any }

func (s *frameSink) Buffer() []byte { return nil }
func (s *frameSink) Send(buf []byte) {
	var f map[string]any
	if json.Unmarshal(buf, &f) == nil {
		s.frames <- f
	}
}
func (s *frameSink) Recycle([]byte)             {}
func (s *frameSink) Close(protocol.CloseReason) {}

func (s *frameSink) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case f := <-s.frames:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("no frame within 5 s")
		return nil
	}
}

// gatewayClient is a session on a test gateway, as a WebSocket client's
// would be, with a 1 s lease: send delivers one message and returns the
// frame that answers it. It closes at the test's end if not before.
type gatewayClient struct {
	t    *testing.T
	sess *actors.Session
	sink *frameSink
	once sync.Once
}

// openGatewayClient opens a session on g; configure adds members to its
// session.configure (`,"basis":{...}`).
func openGatewayClient(t *testing.T, g *Gateway, configure string) *gatewayClient {
	t.Helper()
	return openSession(t, g.svc, configure)
}

// openSession is openGatewayClient on any service (a node's, in the tests
// that compare a node's sessions with a gateway's).
func openSession(t *testing.T, svc *actors.Service, configure string) *gatewayClient {
	t.Helper()
	c := &gatewayClient{t: t, sink: &frameSink{frames: make(chan map[string]any, 64)}}
	sess, err := svc.OpenSession(actors.SessionOptions{Remote: "test", Codec: protocol.Codec{}, Sink: c.sink})
	if err != nil {
		t.Fatal(err)
	}
	c.sess = sess
	t.Cleanup(c.close)
	c.sink.next(t) // inventory
	if f := c.send(`{"session":{"configure":{"lease":{"ms":1000}` + configure + `}}}`); f["errors"] != nil {
		t.Fatalf("session.configure: %v", f["errors"])
	}
	return c
}

func (c *gatewayClient) send(msg string) map[string]any {
	c.t.Helper()
	c.sess.Deliver([]byte(msg), 0)
	return c.sink.next(c.t)
}

func (c *gatewayClient) close() { c.once.Do(func() { c.sess.Close(protocol.CloseClientClosed) }) }

// subscribeEvents subscribes to g's activity events from now on, until
// the test ends.
func subscribeEvents(t *testing.T, g *Gateway) *activity.Subscription {
	t.Helper()
	sub, err := g.svc.Activity().Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// nextEvent waits for the next event name on sub and returns its data.
func nextEvent(t *testing.T, sub *activity.Subscription, name string) json.RawMessage {
	t.Helper()
	return nextEventOf(t, sub, name).Data
}

// nextEventOf waits for the next event name on sub.
func nextEventOf(t *testing.T, sub *activity.Subscription, name string) event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("no %s event: %v", name, err)
		}
		if e.Name == name {
			return e
		}
	}
}

// addRemoteArm puts node a's arm uuid-a (049D) on g, and returns what
// pushes its state as the node would.
func addRemoteArm(t *testing.T, g *Gateway) (push func(*wire.State)) {
	t.Helper()
	g.inventory(&wire.Inventory{NodeId: "a", Address: "127.0.0.2:7070", Devices: []*wire.Device{arm("uuid-a", "049D")}})
	waitAdded(t, g)
	return func(st *wire.State) {
		st.Uuid = "uuid-a"
		g.states(&wire.StateBatch{NodeId: "a", SentUnixNs: time.Now().UnixNano(), States: []*wire.State{st}})
	}
}

// A session on the gateway declares effects on a node's arm: the gateway
// validates them as a local arm would, forwards the declaration to the node
// (never a per-tick force: its commands hold the arm with the session's
// own force, zero here), shows the node's proxy points and passivity
// figures in the session's frames, sends the declaration again while the
// node lags, withdraws it when the node refuses it (effect-refused, for
// the session) and when the session closes.
func TestGatewayForwardsEffectsNotForces(t *testing.T) {
	g := testGateway(t, time.Hour)
	out := watchOutbox(t, g.sys)
	sub := subscribeEvents(t, g)
	push := addRemoteArm(t, g)
	push(&wire.State{})

	c := openGatewayClient(t, g, "")
	sess, deliver := c.sess, c.send
	msg := func(effects string) string { return `{"arm3":[{"device_id":"049D","effects":` + effects + `}]}` }
	wall := `{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":-0.05},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}`
	spring := `{"id":"pull","type":"spring","position":{"x":0.02,"y":0,"z":0},"stiffness":400}`

	// Validated on the gateway, by the same code as on a local arm.
	f := deliver(msg(`{"set":[{"id":"w","type":"wall","normal":{"x":0,"y":0,"z":0},"stiffness":2000}]}`))
	if f["errors"] == nil || len(out.effects()) != 0 {
		t.Fatalf("a wall without a normal: errors %v, %d declarations forwarded", f["errors"], len(out.effects()))
	}
	f = deliver(msg(`{"set":[` + wall + `,` + spring + `]}`))
	if f["errors"] != nil || hwtest.JSONPath(f, "inverse3", 0, "state", "effects", "count") != 2.0 {
		t.Fatalf("declaration: errors %v, frame %v", f["errors"], f)
	}
	var sent *wire.Effects
	hwtest.Eventually(t, 5*time.Second, "the declaration forwarded to the node", func() bool {
		fx := out.effects()
		if len(fx) > 0 {
			sent = fx[len(fx)-1]
		}
		return sent != nil
	})
	var specs []effect.Spec
	if err := json.Unmarshal(sent.Specs, &specs); err != nil || len(specs) != 2 || sent.Session != sess.ID || sent.Uuid != "uuid-a" {
		t.Fatalf("forwarded %+v (%v), want the session's wall and spring", sent, err)
	}
	if specs[0].Kind != effect.Wall || specs[0].Params.StiffnessNPerM != 2000 || specs[1].Kind != effect.SpringPoint {
		t.Errorf("forwarded specs %+v", specs)
	}
	// The gateway's commands hold the arm for the effects; the spring
	// (0.02 m off the cursor) is never rendered into them.
	hwtest.Eventually(t, 5*time.Second, "a command holding the arm for the effects", func() bool {
		return slices.ContainsFunc(out.commands(), func(c *wire.Command) bool { return c.Mode == uint32(hw.ModeForce) })
	})
	for _, c := range out.commands() {
		if c.Mode == uint32(hw.ModeForce) && slices.ContainsFunc(c.Target, func(v float64) bool { return v != 0 }) {
			t.Fatalf("the gateway sent a rendered force %v: effects belong to the node's loop", c.Target)
		}
	}

	// The node's report reaches the session's frames.
	push(&wire.State{EffectsGen: sent.Gen, EffectsRendering: true,
		Effects: []*wire.EffectState{{Id: "floor", Kind: uint32(effect.Wall), ProxyM: []float64{0, 0, -0.05}, Contact: true, ForceN: []float64{0, 0, 3}},
			{Id: "pull", Kind: uint32(effect.SpringPoint), ForceN: []float64{8, 0, 0}}},
		Output: &wire.Output{EnergyJ: 0.25, AddedDampingNsPerM: 1.5}})
	hwtest.EventuallyNil(t, 5*time.Second, "the node's proxy point and passivity figures in the frame", func() error {
		f := deliver(msg(`{}`))
		proxies, _ := hwtest.JSONPath(f, "inverse3", 0, "state", "effects", "proxies").([]any)
		if len(proxies) != 1 || hwtest.JSONPath(proxies[0], "id") != "floor" || hwtest.JSONPath(proxies[0], "contact") != true ||
			math.Abs(hwtest.JSONPath(proxies[0], "position", "z").(float64)+0.05) > 1e-9 {
			return fmt.Errorf("proxies %v", proxies)
		}
		if e := hwtest.JSONPath(f, "inverse3", 0, "state", "passivity", "energy"); e != 0.25 {
			return fmt.Errorf("passivity energy %v, want the node's 0.25", e)
		}
		return nil
	})
	fw := g.proxies["uuid-a"]
	var inForce protocol.EffectsInForce
	for _, d := range g.svc.Devices().All() {
		inForce = g.svc.EffectsInForce(d)
	}
	if len(inForce.Effects) != 2 || !inForce.Effects[1].HasForce || inForce.Effects[1].ForceN.X != 8 {
		t.Errorf("effects in force on the gateway %+v, want the node's forces", inForce)
	}

	// The node lags (it dropped the declaration with a lapsed lease): the
	// gateway sends it again, same generation.
	before := len(out.effects())
	push(&wire.State{})
	hwtest.Eventually(t, 5*time.Second, "the declaration sent again", func() bool {
		push(&wire.State{})
		fx := out.effects()
		return len(fx) > before && fx[len(fx)-1].Gen == sent.Gen && len(fx[len(fx)-1].Specs) > 0
	})

	// The node refuses it: the session's effects leave its frames and the
	// client hears effect-refused, for its own session.
	fw.fxMu.Lock()
	gen := fw.fxGen
	fw.fxMu.Unlock()
	g.sys.Root.Send(actor.NewPID(g.sys.Address(), gatewayActorName),
		&wire.EffectsReply{Uuid: "uuid-a", Gen: gen, Session: sess.ID, EffectId: "floor", Code: string(protocol.CodeDeviceBusy), Error: "held on the node"})
	hwtest.EventuallyNil(t, 5*time.Second, "the refused effects gone from the frames", func() error {
		if c := hwtest.JSONPath(deliver(msg(`{}`)), "inverse3", 0, "state", "effects"); c != nil {
			return fmt.Errorf("state.effects %v", c)
		}
		return nil
	})
	var data struct {
		SessionID uint64 `json:"session_id"`
		Code      string `json:"code"`
	}
	_ = json.Unmarshal(nextEvent(t, sub, event.NameEffectRefused), &data)
	if data.SessionID != sess.ID || data.Code != string(protocol.CodeDeviceBusy) {
		t.Errorf("effect-refused %+v, want session %d, device_busy", data, sess.ID)
	}

	// Cleared: an empty declaration goes out, once; the node rendering
	// none is what the gateway wants, so its pushes ask for nothing more.
	deliver(msg(`{"set":[` + wall + `]}`))
	deliver(msg(`{"clear":true}`))
	hwtest.Eventually(t, 5*time.Second, "the empty declaration sent", func() bool {
		fx := out.effects()
		return len(fx) > 0 && len(fx[len(fx)-1].Specs) == 0
	})
	sentBefore := len(out.effects())
	fw.fxMu.Lock()
	fw.fxSentAt = time.Time{} // as if resendAfter had passed
	fw.fxMu.Unlock()
	push(&wire.State{})
	if n := len(out.effects()) - sentBefore; n != 0 {
		t.Errorf("%d declarations sent again while the node rendered none, as the gateway wants", n)
	}

	// Declared again, then the session closes: the node is told to drop them.
	deliver(msg(`{"set":[` + wall + `]}`))
	c.close()
	hwtest.Eventually(t, 5*time.Second, "an empty declaration after the session closed", func() bool {
		fx := out.effects()
		return len(fx) > 0 && len(fx[len(fx)-1].Specs) == 0 && fx[len(fx)-1].Gen > gen
	})
}

// The effects a gateway's session declared on a node's arm are the effects
// in force on that arm: the node's GET /{type}/{id}/effects lists them as
// the session declared them (what the gateway's own listing says, in the
// session's space), with the force the node's loop renders turned into
// that space, and marked with the gateway and its session. A withdrawal
// leaves none listed, and a declaration that came without its listing
// (a gateway of an older build) renders but lists none.
func TestNodeListsAGatewaysEffects(t *testing.T) {
	n, d := testNode(t)
	n.subscribe(&wire.Subscribe{GatewayId: "gw", GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano()})
	var snap loop.Snapshot
	d.Load(&snap)

	// The gateway sees the node's arm where it is, through a session whose
	// basis turns the axes, so the session's x is not the device's.
	g := testGateway(t, time.Hour)
	out := watchOutbox(t, g.sys)
	p := snap.State.PositionM
	addRemoteArm(t, g)(&wire.State{PositionM: []float64{p.X, p.Y, p.Z}})
	c := openGatewayClient(t, g, `,"basis":{"permutation":"ZXY"}`)
	sess, deliver := c.sess, c.send
	f := deliver(`{"arm3":[{"device_id":"049D","effects":{}}]}`)
	cursor := [3]float64{}
	for i, axis := range []string{"x", "y", "z"} {
		v, ok := hwtest.JSONPath(f, "inverse3", 0, "state", "cursor_position", axis).(float64)
		if !ok {
			t.Fatalf("no cursor_position.%s in %v", axis, f)
		}
		cursor[i] = v
	}
	// A field of a constant 1.5 N along the session's x around the
	// cursor, for a minute; a wall far below never touches the arm.
	decl := fmt.Sprintf(`{"set":[{"id":"push","type":"field","force":{"x":1.5,"y":0,"z":0},"origin":{"x":%g,"y":%g,"z":%g},"radius":1,"valid_ms":10000,"ttl_ms":60000},`+
		`{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":-0.5},"normal":{"x":0,"y":0,"z":1},"stiffness":1000}]}`,
		cursor[0], cursor[1], cursor[2])
	if f := deliver(`{"arm3":[{"device_id":"049D","effects":` + decl + `}]}`); f["errors"] != nil {
		t.Fatalf("declaration: %v", f["errors"])
	}
	var sent *wire.Effects
	hwtest.Eventually(t, 5*time.Second, "the declaration forwarded", func() bool {
		if fx := out.effects(); len(fx) > 0 && len(fx[len(fx)-1].Specs) > 0 {
			sent = fx[len(fx)-1]
		}
		return sent != nil
	})
	var gwList protocol.EffectsInForce
	for _, dev := range g.svc.Devices().All() {
		gwList = g.svc.EffectsInForce(dev)
	}
	if len(gwList.Effects) != 2 {
		t.Fatalf("the gateway lists %+v", gwList)
	}

	// The node takes it (as it came, addressed to its arm) and the
	// gateway's commands hold the arm.
	toNode := func(m *wire.Effects) *wire.Effects {
		return &wire.Effects{Uuid: d.Info.UUID, GatewayAddress: testGW, SentUnixNs: time.Now().UnixNano(), Gen: m.Gen,
			Session: m.Session, Specs: m.Specs, Declared: m.Declared, ForceToSession: m.ForceToSession, DeclaredLeftNs: m.DeclaredLeftNs}
	}
	n.effects(toNode(sent))
	var seq uint64
	var list protocol.EffectsInForce
	hwtest.EventuallyNil(t, 10*time.Second, "the node listing the field's 1.5 N along the session's x", func() error {
		seq++
		n.command(fresh(d.Info.UUID, seq, hw.ModeForce, 0, 0, 0))
		list = n.svc.EffectsInForce(d)
		if len(list.Effects) != 2 || !list.Effects[0].HasForce {
			return fmt.Errorf("listed %+v", list)
		}
		// The device renders it along another axis; listed, it is the
		// session's x again (to float32, as measured forces go out).
		if f := list.Effects[0].ForceN; math.Abs(f.X-1.5) > 1e-3 || math.Abs(f.Y) > 1e-3 || math.Abs(f.Z) > 1e-3 {
			return fmt.Errorf("the field's rendered force %+v in the session's space, want {1.5 0 0}", f)
		}
		return nil
	})
	if list.SessionID != gatewaySession || list.Gateway == nil ||
		*list.Gateway != (protocol.EffectsGateway{ID: "gw", Address: testGW, SessionID: sess.ID}) {
		t.Errorf("owner %d, gateway %+v; want the gateway's owner on the node, and gw's session %d", list.SessionID, list.Gateway, sess.ID)
	}
	for i, e := range list.Effects {
		if got, want := string(e.Effect.AppendJSON(nil)), string(gwList.Effects[i].Effect.AppendJSON(nil)); got != want {
			t.Errorf("node lists %s, the gateway %s", got, want)
		}
	}
	if left := list.Effects[0].RemainingMs; left <= 50000 || left > 60000 {
		t.Errorf("the field has %d ms left on the node, want under its 60 s ttl", left)
	}
	if list.Effects[1].RemainingMs != -1 {
		t.Errorf("the wall has %d ms left, want -1 (no ttl)", list.Effects[1].RemainingMs)
	}
	js := string(list.AppendJSON(nil))
	if !strings.HasPrefix(js, fmt.Sprintf(`{"session_id":%d,`, uint64(gatewaySession))) ||
		!strings.HasSuffix(js, fmt.Sprintf(`"gateway":{"id":"gw","address":%q,"session_id":%d}}`, testGW, sess.ID)) {
		t.Errorf("GET .../effects on the node answers %s", js)
	}

	// Withdrawn: none listed.
	n.effects(declared(d.Info.UUID, sent.Gen+1, nil))
	if l := n.svc.EffectsInForce(d); len(l.Effects) != 0 || l.Gateway != nil || l.SessionID != 0 {
		t.Errorf("after the withdrawal the node lists %+v", l)
	}
	// Without its listing: rendered, listed as none.
	bare := toNode(sent)
	bare.Gen, bare.Declared, bare.ForceToSession, bare.DeclaredLeftNs = sent.Gen+2, nil, nil, nil
	n.effects(bare)
	if d.Effects().Len() != 2 {
		t.Fatal("a declaration without its listing was not rendered")
	}
	if l := n.svc.EffectsInForce(d); len(l.Effects) != 0 || l.Gateway != nil {
		t.Errorf("a declaration without its listing lists %+v", l)
	}
}

// A session's frames show the proxy points of its own effects only: a
// node's push still reporting an earlier declaration (the node renders the
// new one from its next tick, and pushes it 2 ms later) shows none of the
// effects the session no longer has.
func TestGatewayFramesShowNoProxiesOfEffectsNoLongerDeclared(t *testing.T) {
	g := testGateway(t, time.Hour)
	push := addRemoteArm(t, g)
	push(&wire.State{})
	c := openGatewayClient(t, g, "")
	msg := func(effects string) string { return `{"arm3":[{"device_id":"049D","effects":` + effects + `}]}` }
	if f := c.send(msg(`{"set":[{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":-0.05},"normal":{"x":0,"y":0,"z":1},"stiffness":2000}]}`)); f["errors"] != nil {
		t.Fatal(f["errors"])
	}
	// The session replaces its floor with a ceiling; the node's push
	// still reports the floor, and the ceiling not yet.
	if f := c.send(msg(`{"set":[{"id":"ceiling","type":"wall","position":{"x":0,"y":0,"z":0.05},"normal":{"x":0,"y":0,"z":-1},"stiffness":2000}],"remove":["floor"]}`)); f["errors"] != nil {
		t.Fatal(f["errors"])
	}
	p := g.proxies["uuid-a"]
	p.fxMu.Lock()
	gen := p.fxGen
	p.fxMu.Unlock()
	push(&wire.State{EffectsGen: gen - 1, EffectsRendering: true,
		Effects: []*wire.EffectState{{Id: "floor", Kind: uint32(effect.Wall), ProxyM: []float64{0, 0, -0.05}, Contact: true}}})
	hwtest.EventuallyNil(t, 5*time.Second, "the node's report in the frame", func() error {
		f := c.send(msg(`{}`))
		if n := hwtest.JSONPath(f, "inverse3", 0, "state", "effects", "count"); n != 1.0 {
			return fmt.Errorf("effects count %v, want the session's 1", n)
		}
		if proxies, _ := hwtest.JSONPath(f, "inverse3", 0, "state", "effects", "proxies").([]any); len(proxies) != 0 {
			t.Fatalf("frame shows proxies %v of an effect the session removed", proxies)
		}
		return nil
	})
}
