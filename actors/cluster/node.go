package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// gatewaySession is the register owner a node writes the first gateway's
// forwarded commands as; each further gateway it hears from gets the next
// even number above it, so two gateways never share an arm. Local sessions
// count up from 1, so they never reach it. Whoever holds a device keeps
// it: the other gateways' commands are dropped until it lets go, and the
// state pushed to each gateway says the device is held by someone else, so
// that gateway refuses its own sessions with device_busy meanwhile.
const gatewaySession = actors.FirstRemoteOwner

// Node serves a hapticd's devices to the lab's gateways.
type Node struct {
	svc   *actors.Service
	cfg   Config
	log   zerolog.Logger
	lk    *link
	sys   *actor.ActorSystem
	clock loop.Clock
	// process tells this process of the node from its others to the
	// gateways (wire.Inventory.node_process): they tell its stored
	// entries rejected once per process.
	process uint64

	stop chan struct{}
	wg   sync.WaitGroup
	// configs are the gateways' config requests by device UUID, each
	// device's answered in the order they came, off the actors: the
	// answers wait on the device actor (and a set on its fsync), which no
	// Receive may, and one device's write hung on its disk must not hold
	// the other devices' requests until they are too old to apply.
	configs *keyedFIFO[string, configJob]

	// mu guards the following.
	mu sync.Mutex
	// leaving is set once Close started: the node answers no Subscribe
	// after its goodbye (wire.Leaving), which would list its devices
	// again.
	leaving bool
	subs    map[string]*subscriber // by gateway address
	owners  uint64                 // gateways given an owner so far
	// offsets are the clock offsets learnt from each gateway address,
	// kept when a silent gateway is forgotten: after a partition heals,
	// the first of its messages to arrive are the ones TCP queued during
	// it, and an offset learnt afresh from a stale Subscribe would make
	// the stale commands behind it look fresh (they were replayed).
	offsets map[string]*clockOffset
	// leaseEnds are, by gateway owner, when its last command's lease ends
	// (n.clock): a gateway whose lease lapsed gives way to another at
	// once, not after the register's claim timeout (1 s).
	leaseEnds map[uint64]int64
	// fxGens are, by gateway owner and device UUID, the generation of the
	// gateway's effects declaration in force (wire.Effects.gen). An entry
	// goes with its effects (withdrawn, dropped when another takes the
	// arm), its gateway (forgotten) or its device; a lapsed lease keeps it.
	fxGens map[fxKey]uint64
	// fxTerms are, by gateway owner and device UUID, the device register's
	// term (loop.Register.Term) as of which the gateway's effects there are
	// its own to resume: the term of its last command plus one (the lapse
	// or release that ends that control), or the term it declared in while
	// the arm was free. The register past it (past it plus one at the
	// gateway's next claim) means another owner held the arm in between,
	// perhaps for less than a push tick: the gateway's paused effects
	// then go (othersArm, command). They go with the gateway or the device.
	fxTerms map[fxKey]uint64
	// fxSeen and navSeen are, by gateway owner and device UUID, the newest
	// effects and navigation declarations the gateway sent (kept after a
	// withdrawal), so that an older one arriving late (a reconnect's
	// replay) is ignored. They go with the gateway or the device.
	fxSeen, navSeen map[fxKey]sentDeclaration
	// navs are, by gateway owner and device UUID, the gateway's navigation
	// the node attaches to that gateway's commands. An entry stays while
	// the gateway's control pauses (its next command renders it again) and
	// goes when withdrawn, with its gateway or with its device.
	navs map[fxKey]*forwardedNav
	// sessions are, by gateway owner and device UUID, which of the
	// gateway's sessions command the arm and declared its effects there
	// (wire.Command.session): the node renders a gateway's effects only
	// under the commands of the session that declared them. An entry goes
	// with its gateway or its device.
	sessions map[fxKey]*sessionBinding
	// configMarks are, by device UUID, what the node last saw of the
	// device's device-global config and the generation it gave it
	// (wire.State.config_gen); configGens counts the generations given.
	// An entry goes with its device.
	configMarks map[string]*configMark
	configGens  uint64
	// knocks are when each gateway process the node has not taken yet
	// first and last subscribed at an address another process holds: a
	// holder heard after the first is a second live process, one silent
	// since is likely a restart's old process, whose silence the newcomer
	// waits out (refusalLocked). An entry goes when its process is taken,
	// or once it has not knocked for GatewayTimeout: a duplicate that keeps
	// knocking stays refused as one, round after round.
	knocks map[gatewayProcess]knock
	// left are the gateway processes (by address and process id) that
	// another process at their address replaced, and when: one that
	// subscribes again within GatewayTimeout is a second live process, not
	// a restart, and is refused (subscribe). refusalsLogged is when the
	// node last logged refusing each process, so a refused gateway's
	// subscriptions (4 a second) are logged once in refusalLogEvery.
	left, refusalsLogged map[gatewayProcess]time.Time
	// otherBuild are the gateways (by address) refused for their build,
	// when last and why: Ready says so while one knocks and no gateway
	// is served, so an operator who checks the node sees why its lab
	// does not list it.
	otherBuild map[string]buildRefusal
	set        *actors.DeviceSet // the set byUUID was built from
	byUUID     map[string]*actors.Device
	invSent    *actors.DeviceSet // the set the subscribers last got
	// rejected are, by device UUID, the device's stored entries rejected
	// (actors.Device.StoredRejections) as the inventory states them
	// (wire.Device.stored_rejected): encoded once per change of the
	// device's, not per inventory. An entry goes with its device.
	rejected map[string]rejectedWire
}

// rejectedWire is a device's StoredRejections and their events' JSON.
type rejectedWire struct {
	of   *actors.StoredRejections
	json [][]byte
}

// buildRefusal is the node's last refusal of a gateway for its build.
type buildRefusal struct {
	at  time.Time
	why string
}

type subscriber struct {
	pid *actor.PID
	// id is the gateway's --node-id, as its Subscribe says.
	id string
	// process is the gateway process's wire.Subscribe.process_id (0: a
	// gateway older than the field): another from the same address is a
	// new process, and a new subscriber once this one has been silent
	// takeoverSilence, refused before (subscribe).
	process uint64
	// owner is the register owner this gateway's commands are written as.
	owner uint64
	// heartbeat's heard is set by each Subscribe; its silence is how long
	// none came, on the push loop's clock, counting at most silenceCredit
	// per tick so a node starved of CPU does not blame its gateway for its
	// own stall.
	heartbeat
	lastSeen time.Time
	// offset estimates the gateway's wall clock less the node's, from the
	// gateway's Subscribe messages. It is shared with Node.offsets and
	// outlives the subscription: see there.
	// gateway's Subscribe messages.
	offset *clockOffset
}

// clockOffset estimates a peer's wall clock less this process's from the
// peer's send times: the largest (sent - received) seen, which is the
// offset less the shortest delay. Delayed messages give smaller samples, so
// a backlog does not skew it; two windows let it follow drift.
type clockOffset struct {
	cur, prev int64
	since     time.Time
}

// offsetWindow is how long one window of clock-offset samples lasts.
const offsetWindow = 10 * time.Second

func (o *clockOffset) sample(sentUnixNs int64, now time.Time) {
	v := sentUnixNs - now.UnixNano()
	if o.since.IsZero() {
		o.cur, o.prev, o.since = v, v, now
		return
	}
	if now.Sub(o.since) > offsetWindow {
		o.prev, o.cur, o.since = o.cur, v, now
		return
	}
	o.cur = max(o.cur, v)
}

// ns is the estimate: the peer's clock less this one's, low by the
// shortest delay from the peer.
func (o *clockOffset) ns() int64 { return max(o.cur, o.prev) }

// ageNs is how long ago (this process's time) the peer sent at sentUnixNs.
func (o *clockOffset) ageNs(sentUnixNs int64, now time.Time) int64 {
	return now.UnixNano() - (sentUnixNs - o.ns())
}

// StartNode starts the remote and serves svc's devices to gateways.
func StartNode(svc *actors.Service, cfg Config) (*Node, error) {
	cfg.defaults()
	n := &Node{svc: svc, cfg: cfg, log: cfg.Log, clock: loop.SystemClock(), process: newProcessID(),
		stop: make(chan struct{}), subs: map[string]*subscriber{}}
	n.configs = newKeyedFIFO[string](n.answerConfig)
	// The node's one kind: a device's cluster identity is this kind plus
	// its UUID, so placement is where the device's cable is.
	kind := cluster.NewKind(NodeKind(cfg.NodeID), actor.PropsFromProducer(func() actor.Actor { return &deviceGrain{n: n} }))
	sub, err := svc.Activity().Subscribe(0, false)
	if err != nil {
		return nil, fmt.Errorf("cluster: subscribe to the node's events: %w", err)
	}
	started := false
	lk, err := startLink(&cfg, []*cluster.Kind{kind}, func(sys *actor.ActorSystem) error {
		// Set before any peer can reach the node actor; its address is
		// the one the remote takes (sys.Address()).
		n.sys = sys
		if _, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return (*nodeActor)(n) }), nodeActorName); err != nil {
			return fmt.Errorf("cluster: spawn node actor: %w", err)
		}
		// The pushes start with the node actor: it answers a gateway's
		// Subscribe with the inventory as soon as the remote serves, which
		// is before the cluster join returns (0.6 to 0.8 s), and a
		// gateway must not list the devices without their state meanwhile.
		started = true
		n.wg.Add(2)
		go n.push()
		go n.forwardEvents(sub)
		return nil
	})
	if err != nil {
		if started {
			close(n.stop)
			n.wg.Wait()
		} else {
			sub.Close()
		}
		return nil, err
	}
	n.lk = lk
	return n, nil
}

// notForwarded are the events a gateway makes itself when a node's
// inventory changes or the node goes (forwarding them would say it twice),
// those of the node's own sessions (a gateway numbers its sessions itself,
// and publishes their events), and those of the node's own event stream
// (its subscriber's gap, its restart), which are no gateway's. A device's
// failure on the node is forwarded: the gateway sees the device leave the
// inventory, not why (an unplug there is device-disconnected alone).
var notForwarded = map[string]bool{
	event.NameDeviceConnected: true, event.NameDeviceDisconnected: true,
	event.NameSessionStarted: true, event.NameSessionEnded: true,
	event.NameEventsDropped: true, event.NameServiceRestarted: true,
}

// forwardEvents sends the node's activity events to the gateways: one that
// names a session goes to the gateway whose owner it is (its control of an
// arm here), or to none when it is a session of the node's own, but for a
// deprecated command's (the lab's migration report counts every use);
// the others to every live gateway.
func (n *Node) forwardEvents(sub *activity.Subscription) {
	defer n.wg.Done()
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			return
		}
		if notForwarded[e.Name] {
			continue
		}
		session, named := eventSession(e)
		if named && session < actors.FirstRemoteOwner {
			if e.Name != event.NameCommandDeprecated {
				continue
			}
			// A deprecated command of the node's own session: counted on
			// the gateway's migration report, under no session of the
			// gateway's (its own number there would be another's).
			e.Data = withSession(e.Data, 0)
			named = false
		}
		b, err := e.MarshalJSON()
		if err != nil {
			continue
		}
		m := &wire.Event{NodeId: n.cfg.NodeID, Json: b, NodeProcess: n.process}
		for _, to := range n.eventDests() {
			if !named || session < actors.FirstRemoteOwner || to.owner == session {
				n.sys.Root.Send(to.pid, m)
			}
		}
	}
}

// eventSession is the session an event names (its data's session_id); 0
// names none (passivity-active on an arm nobody commands).
func eventSession(e event.Event) (session uint64, named bool) {
	var d struct {
		SessionID *uint64 `json:"session_id"`
	}
	if json.Unmarshal(e.Data, &d) != nil || d.SessionID == nil || *d.SessionID == 0 {
		return 0, false
	}
	return *d.SessionID, true
}

// withSession is an event's data with its session_id set to session (the
// data as it was if it does not decode).
func withSession(data json.RawMessage, session uint64) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	m["session_id"] = json.RawMessage(strconv.FormatUint(session, 10))
	b, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return b
}

// eventDest is a subscribed gateway, as forwardEvents and sayGoodbye send
// to it.
type eventDest struct {
	pid   *actor.PID
	owner uint64
}

// eventDests are the gateways subscribed.
func (n *Node) eventDests() []eventDest {
	n.mu.Lock()
	defer n.mu.Unlock()
	dests := make([]eventDest, 0, len(n.subs))
	for _, s := range n.subs {
		dests = append(dests, eventDest{s.pid, s.owner})
	}
	return dests
}

// heartbeat is what arrives from a peer at regular intervals: heard is
// set by each arrival, silence is how long none came, as counted by
// silentPast.
type heartbeat struct {
	heard   bool
	silence time.Duration
}

// silentPast counts one interval of credit: none of silence if the peer
// was heard since the last one (which clears heard), credit more
// otherwise. It says whether the silence is now past limit.
func (h *heartbeat) silentPast(credit, limit time.Duration) bool {
	if h.heard {
		h.heard, h.silence = false, 0
		return false
	}
	h.silence += credit
	return h.silence > limit
}

// silenceCredit is the most one push tick counts towards a gateway's
// silence: a tick that comes late because this process was starved counts
// as one that came in time.
const silenceCredit = 50 * time.Millisecond

// forgetSilentLocked forgets the gateways whose subscriptions stopped
// arriving for GatewayTimeout; elapsed is the time since the last tick.
func (n *Node) forgetSilentLocked(elapsed time.Duration) {
	credit := min(elapsed, silenceCredit)
	for addr, s := range n.subs {
		if s.silentPast(credit, GatewayTimeout) {
			delete(n.subs, addr)
			n.forgetOwnerLocked(s.owner)
			n.log.Info().Str("gateway", addr).Msg("gateway silent; no longer pushing to it")
		}
	}
}

// Ready reports that the node is ready: its devices are its own, and its
// cluster link is up once StartNode returned, until its TLS certificate
// ends (link.certEnded).
//
// A node that serves no gateway while it refuses one of another build
// (within the last GatewayTimeout: one that stopped knocking is gone) is
// not ready either, and says why: its lab does not list it.
func (n *Node) Ready() (ready bool, detail string) {
	now := time.Now()
	if detail, ended := n.lk.certEnded(now); ended {
		return false, detail
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	maps.DeleteFunc(n.otherBuild, func(_ string, r buildRefusal) bool { return now.Sub(r.at) > GatewayTimeout })
	if len(n.subs) > 0 || len(n.otherBuild) == 0 {
		return true, "cluster link up"
	}
	why := make([]string, 0, len(n.otherBuild))
	for _, r := range n.otherBuild {
		why = append(why, r.why)
	}
	slices.Sort(why)
	return false, "refusing a gateway of another build: " + strings.Join(why, "; ")
}

// Started is the node's start: done once StartNode returned.
func (n *Node) Started() (started bool, detail string) { return true, "cluster link up" }

// Close stops pushing and shuts the remote down. Forwarded commands lapse
// with their lease.
func (n *Node) Close() {
	n.mu.Lock()
	n.leaving = true
	n.mu.Unlock()
	close(n.stop)
	n.configs.close()
	n.wg.Wait()
	n.sayGoodbye()
	n.lk.stop()
}

// leaveWithin bounds the wait for the gateways' LeavingNoted at a stop: a
// gateway that is down or hung must not hold the node's stop up.
const leaveWithin = 500 * time.Millisecond

// sayGoodbye tells every subscribed gateway the node stops (wire.Leaving),
// once it pushes nothing more, and waits for their answers within
// leaveWithin: its devices then leave the gateways as unplugged, not
// failed. Without it, the link's end reads on a gateway as the node lost.
func (n *Node) sayGoodbye() {
	dests := n.eventDests()
	bye := &wire.Leaving{NodeId: n.cfg.NodeID, Address: n.sys.Address()}
	futures := make([]*actor.Future, len(dests))
	for i, to := range dests {
		futures[i] = n.sys.Root.RequestFuture(to.pid, bye, leaveWithin)
	}
	for i, f := range futures {
		if _, err := f.Result(); err != nil {
			n.log.Info().Err(err).Str("gateway", dests[i].pid.Address).Msg("cluster: a gateway did not note this node's goodbye; it will judge the node lost")
		}
	}
}

type nodeActor Node

func (a *nodeActor) Receive(ctx actor.Context) {
	n := (*Node)(a)
	switch m := ctx.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	case *wire.Subscribe:
		n.subscribe(m)
	case *wire.Command:
		n.command(m)
	case *wire.ConfigRequest:
		n.configArrived(m, ctx.Sender())
	case *wire.Effects:
		n.effects(m)
	case *wire.Navigation:
		n.navigation(m)
	default:
		n.log.Warn().Str("type", fmt.Sprintf("%T", m)).Msg("cluster node: unknown message dropped")
	}
}

// NodeKind is the cluster kind a node registers: its devices' identities
// are their UUIDs under it.
func NodeKind(nodeID string) string { return "node-" + nodeID }

// deviceGrain is a device's virtual actor on its node (automanaged
// membership): it answers config requests for its own UUID only, so an
// identity the node has no device for is refused, never served by another.
type deviceGrain struct {
	n    *Node
	uuid string
}

func (g *deviceGrain) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *cluster.ClusterInit:
		g.uuid = m.Identity.Identity
	case *wire.ConfigRequest:
		if m.Uuid != g.uuid {
			ctx.Respond(&wire.ConfigReply{Code: string(protocol.CodeInvalidValue),
				Error: fmt.Sprintf("config request for %s reached the grain of %s", m.Uuid, g.uuid)})
			return
		}
		g.n.configArrived(m, ctx.Sender())
	}
}

// configJob is a config request waiting for its answer, who asked, and
// when it was sent: its arrival less its time in transit.
type configJob struct {
	req    *wire.ConfigRequest
	to     *actor.PID // nil: nobody waits for the answer
	queued time.Time
	// undatable: the request is dated, but the node knows no clock offset
	// for its gateway, so it cannot tell how long ago it was sent.
	undatable bool
}

// configArrived queues a config request from to, dated back by how long
// it was in transit: judged on the clock offset to the gateway that sent
// it, as commands are. That offset outlives the gateway's subscription:
// a request sent as a partition began arrives when it heals, ahead of
// the Subscribes queued behind it, after the node forgot the silent
// gateway, and was answered 503 by the gateway long before. A dated
// request from a gateway whose offset the node never learnt cannot be
// dated, and is refused; an undated one (an older build) counts as sent
// when it arrived.
func (n *Node) configArrived(m *wire.ConfigRequest, to *actor.PID) {
	now := time.Now()
	j := configJob{req: m, to: to, queued: now}
	if m.SentUnixNs != 0 {
		n.mu.Lock()
		o := n.offsets[m.GatewayAddress]
		if s := n.subs[m.GatewayAddress]; s != nil {
			o = s.offset
		}
		if o != nil {
			j.queued = now.Add(-time.Duration(max(o.ageNs(m.SentUnixNs, now), 0)))
		} else {
			j.undatable = true
		}
		n.mu.Unlock()
	}
	n.configs.push(m.Uuid, j)
}

// answerConfig answers one config request, off the actors. One sent more
// than configApplyWithin ago (in transit, then in this queue), or whose
// age the node cannot tell, is not applied: the gateway has told its
// client the node did not answer, or may before this answer reaches it,
// and a set that fails for the client must not take effect behind its
// back.
func (n *Node) answerConfig(j configJob) {
	if j.undatable {
		n.log.Warn().Str("uuid", j.req.Uuid).Str("op", j.req.Op).Str("key", j.req.Key).Str("gateway", j.req.GatewayAddress).
			Msg("cluster: a config request came from a gateway whose clock the node does not know; not applied")
		if j.to != nil {
			n.sys.Root.Send(j.to, &wire.ConfigReply{Code: string(protocol.CodeUnavailable),
				Error: fmt.Sprintf("node %s: gateway %s has not subscribed, so the request's age is unknown; not applied (retry once the gateway lists the device)", n.cfg.NodeID, j.req.GatewayAddress)})
		}
		return
	}
	if waited := time.Since(j.queued); waited > configApplyWithin {
		n.log.Warn().Str("uuid", j.req.Uuid).Str("op", j.req.Op).Str("key", j.req.Key).Dur("waited", waited).
			Msg("cluster: a config request came past the gateway's timeout; not applied")
		if j.to != nil {
			n.sys.Root.Send(j.to, &wire.ConfigReply{Code: string(protocol.CodeUnavailable),
				Error: fmt.Sprintf("node %s: the request was sent %v ago (in transit and behind the device's requests before it), too late to answer within the gateway's %v; not applied", n.cfg.NodeID, waited.Round(time.Millisecond), configTimeout)})
		}
		return
	}
	reply := n.config(j.req)
	if j.to != nil {
		n.sys.Root.Send(j.to, reply)
	}
}

// gatewayProcess is one gateway process: its address and its
// wire.Subscribe.process_id.
type gatewayProcess struct {
	addr    string
	process uint64
}

// knock is when a gateway process not taken yet subscribed first and last.
type knock struct{ first, last time.Time }

// takeoverSilence is how long the gateway process a node serves at an
// address must have been silent before another process at that address
// takes its place: a restart at a fixed cluster port waits this long at
// most, while a second live process at the address (a misconfigured
// advertised address, NAT) never knocks the first off. Four subscription
// rounds, counted as the node counts a gateway's silence.
const takeoverSilence = 4 * SubscribeEvery

// refusalLogEvery spaces the node's log lines about one refused process.
const refusalLogEvery = 10 * time.Second

// refusalLocked says why the node does not take m (empty: it does), and
// with which code: protocol.CodeDeviceBusy for a second live process at
// the address (the gateway tells its operator), protocol.CodeUnavailable
// for a process waiting out the silence of the one the node holds (a
// restart: the gateway just subscribes again). s is the subscriber at m's
// address, nil if none. n.mu must be held.
func (n *Node) refusalLocked(s *subscriber, m *wire.Subscribe, now time.Time) (protocol.Code, string) {
	maps.DeleteFunc(n.left, func(_ gatewayProcess, at time.Time) bool { return now.Sub(at) > GatewayTimeout })
	maps.DeleteFunc(n.knocks, func(_ gatewayProcess, k knock) bool { return now.Sub(k.last) > GatewayTimeout })
	key := gatewayProcess{m.GatewayAddress, m.ProcessId}
	if _, ok := n.left[key]; ok && m.ProcessId != 0 {
		return protocol.CodeDeviceBusy, fmt.Sprintf("node %s: gateway process %016x at %s subscribes again after another process at that address took its place: "+
			"two live gateway processes advertise %s (check --cluster-advertise, or NAT); the other one keeps this node",
			n.cfg.NodeID, m.ProcessId, m.GatewayAddress, m.GatewayAddress)
	}
	if s == nil || s.process == m.ProcessId || !s.heard && s.silence >= takeoverSilence {
		delete(n.knocks, key)
		return "", ""
	}
	k, ok := n.knocks[key]
	if !ok {
		if n.knocks == nil {
			n.knocks = map[gatewayProcess]knock{}
		}
		k.first = now
	}
	k.last = now
	n.knocks[key] = k
	if s.lastSeen.After(k.first) {
		return protocol.CodeDeviceBusy, fmt.Sprintf("node %s: gateway process %016x at %s holds this node and subscribed within the last %v: "+
			"two live gateway processes advertise %s (check --cluster-advertise, or NAT); a restarted gateway is taken once its old process has been silent %v",
			n.cfg.NodeID, s.process, m.GatewayAddress, takeoverSilence, m.GatewayAddress, takeoverSilence)
	}
	return protocol.CodeUnavailable, fmt.Sprintf("node %s: takeover pending: gateway process %016x at %s held this node until %v ago; "+
		"a new process at the address is taken once the old one has been silent %v",
		n.cfg.NodeID, s.process, m.GatewayAddress, now.Sub(s.lastSeen).Round(time.Millisecond), takeoverSilence)
}

// refuse answers a Subscribe the node did not take with code and why, and
// logs it (once in refusalLogEvery per process; a pending takeover, the
// normal course of a restart, at info level).
func (n *Node) refuse(m *wire.Subscribe, code protocol.Code, why string, now time.Time) {
	n.mu.Lock()
	if code == protocol.CodeVersionMismatch {
		if n.otherBuild == nil {
			n.otherBuild = map[string]buildRefusal{}
		}
		n.otherBuild[m.GatewayAddress] = buildRefusal{now, why}
	}
	key := gatewayProcess{m.GatewayAddress, m.ProcessId}
	logIt := now.Sub(n.refusalsLogged[key]) >= refusalLogEvery
	if logIt {
		if n.refusalsLogged == nil {
			n.refusalsLogged = map[gatewayProcess]time.Time{}
		}
		maps.DeleteFunc(n.refusalsLogged, func(_ gatewayProcess, at time.Time) bool { return now.Sub(at) >= refusalLogEvery })
		n.refusalsLogged[key] = now
	}
	n.mu.Unlock()
	if logIt {
		l := n.log.Warn()
		switch code {
		case protocol.CodeUnavailable:
			l = n.log.Info()
		case protocol.CodeVersionMismatch:
			l = n.log.Error().Str("build", n.cfg.Build).Str("gateway_build", m.Build)
		}
		l.Str("gateway", m.GatewayAddress).Str("process", fmt.Sprintf("%016x", m.ProcessId)).Msg("cluster: subscription refused: " + why)
	}
	r := &wire.SubscribeRefused{NodeId: n.cfg.NodeID, ProcessId: m.ProcessId, Code: string(code), Error: why}
	if code == protocol.CodeVersionMismatch {
		r.Build, r.Address = n.cfg.Build, n.sys.Address()
	}
	n.sys.Root.Send(actor.NewPID(m.GatewayAddress, gatewayActorName), r)
}

func (n *Node) subscribe(m *wire.Subscribe) {
	now := time.Now()
	n.mu.Lock()
	if n.leaving {
		n.mu.Unlock()
		return
	}
	if !SameBuild(m.Build, n.cfg.Build) {
		// Before anything of the gateway is kept: a gateway of another
		// build is served nothing, and a process of the right build at
		// its address later is a newcomer like any.
		n.mu.Unlock()
		n.refuse(m, protocol.CodeVersionMismatch, buildMismatch(
			fmt.Sprintf("node %s runs %s", n.cfg.NodeID, buildName(n.cfg.Build)),
			fmt.Sprintf("gateway %s at %s runs %s", m.GatewayId, m.GatewayAddress, buildName(m.Build))), now)
		return
	}
	delete(n.otherBuild, m.GatewayAddress) // of this build now

	s, ok := n.subs[m.GatewayAddress]
	if code, why := n.refusalLocked(s, m, now); why != "" {
		n.mu.Unlock()
		n.refuse(m, code, why, now)
		return
	}
	var replaced *subscriber
	if ok && s.process != m.ProcessId {
		// A new process of the gateway at the old one's address (a fixed
		// cluster port), the old one silent: it numbers its sessions from
		// 1 again, so nothing kept under the old process's owner may meet
		// them. Should the old one come back, it is a second live process.
		replaced, ok = s, false
		n.forgetOwnerLocked(s.owner)
		if s.process != 0 {
			if n.left == nil {
				n.left = map[gatewayProcess]time.Time{}
			}
			n.left[gatewayProcess{m.GatewayAddress, s.process}] = now
		}
		n.log.Info().Str("gateway", m.GatewayAddress).Uint64("owner", s.owner).Msg("gateway restarted at its address; its old process's control and declarations end")
	}
	if !ok {
		s = &subscriber{pid: actor.NewPID(m.GatewayAddress, gatewayActorName), owner: gatewaySession + 2*n.owners,
			offset: n.offsetLocked(m.GatewayAddress), process: m.ProcessId}
		n.owners++
		n.subs[m.GatewayAddress] = s
		n.log.Info().Str("gateway", m.GatewayAddress).Uint64("owner", s.owner).Msg("gateway subscribed")
		// A simulated arm nobody read lately publishes one tick in 128
		// (loop.Device.Load): mark every arm read now, so that a push to
		// this gateway after the shard's next pass carries each arm's
		// current state. A push before that pass may carry an older one,
		// and says how old (wire.State.age_ns, from
		// loop.Device.LoadCurrent).
		for _, d := range n.devicesLocked() {
			d.Loop().PublishSeq()
		}
	}
	s.heard, s.lastSeen, s.id = true, now, m.GatewayId
	s.offset.sample(m.SentUnixNs, s.lastSeen)
	inv := n.inventoryLocked()
	inv.ProcessId = s.process
	devs := n.byUUID
	n.mu.Unlock()
	if replaced != nil {
		endOwner(devs, replaced.owner)
	}
	// Every Subscribe is answered with the inventory, so a gateway that
	// dropped this node (or lost a message) converges within one round.
	n.sys.Root.Send(s.pid, inv)
}

// keptOffsets bounds Node.offsets: the one whose sample window is oldest goes
// (each gateway process start has an address of its own).
const keptOffsets = 64

// offsetLocked is the clock offset of the gateway at addr, kept or new.
func (n *Node) offsetLocked(addr string) *clockOffset {
	if o := n.offsets[addr]; o != nil {
		return o
	}
	if n.offsets == nil {
		n.offsets = map[string]*clockOffset{}
	}
	if len(n.offsets) >= keptOffsets {
		var oldest string
		for a, o := range n.offsets {
			if oldest == "" || o.since.Before(n.offsets[oldest].since) {
				oldest = a
			}
		}
		delete(n.offsets, oldest)
	}
	o := &clockOffset{}
	n.offsets[addr] = o
	return o
}

// devicesLocked refreshes the UUID index when the device set changed.
func (n *Node) devicesLocked() map[string]*actors.Device {
	set := n.svc.Devices()
	if set != n.set {
		m := map[string]*actors.Device{}
		for _, d := range set.All() {
			m[d.Info.UUID] = d
		}
		n.set, n.byUUID = set, m
		n.pruneDevicesLocked()
	}
	return n.byUUID
}

// forgetOwnerLocked drops what the node keeps of a gateway owner's
// declarations and its lease: a gateway that subscribes again gets a new
// owner, so nothing would ever read them. Its lease ended long before
// (GatewayTimeout of silence), and the loop released the arm then.
func (n *Node) forgetOwnerLocked(owner uint64) {
	delete(n.leaseEnds, owner)
	for _, m := range []map[fxKey]uint64{n.fxGens, n.fxTerms} {
		for k := range m {
			if k.owner == owner {
				delete(m, k)
			}
		}
	}
	for _, seen := range []map[fxKey]sentDeclaration{n.fxSeen, n.navSeen} {
		for k := range seen {
			if k.owner == owner {
				delete(seen, k)
			}
		}
	}
	for k := range n.navs {
		if k.owner == owner {
			delete(n.navs, k)
		}
	}
	maps.DeleteFunc(n.sessions, func(k fxKey, _ *sessionBinding) bool { return k.owner == owner })
}

// endOwner ends a forgotten gateway owner's control and effects on devs at
// once: its process is gone, and a new one at its address holds another
// owner, whose commands would otherwise wait for the old claim's lease.
func endOwner(devs map[string]*actors.Device, owner uint64) {
	for _, d := range devs {
		d.Register().Release(owner) // always honoured: it only ends a force
		d.DropForwarded(owner)
	}
}

// pruneDevicesLocked drops the declarations kept for devices the node no
// longer has (n.byUUID).
func (n *Node) pruneDevicesLocked() {
	for _, m := range []map[fxKey]uint64{n.fxGens, n.fxTerms} {
		for k := range m {
			if n.byUUID[k.uuid] == nil {
				delete(m, k)
			}
		}
	}
	for _, seen := range []map[fxKey]sentDeclaration{n.fxSeen, n.navSeen} {
		for k := range seen {
			if n.byUUID[k.uuid] == nil {
				delete(seen, k)
			}
		}
	}
	for k := range n.navs {
		if n.byUUID[k.uuid] == nil {
			delete(n.navs, k)
		}
	}
	maps.DeleteFunc(n.sessions, func(k fxKey, _ *sessionBinding) bool { return n.byUUID[k.uuid] == nil })
	maps.DeleteFunc(n.configMarks, func(uuid string, _ *configMark) bool { return n.byUUID[uuid] == nil })
	maps.DeleteFunc(n.rejected, func(uuid string, _ rejectedWire) bool { return n.byUUID[uuid] == nil })
}

// rejectedLocked is d's stored entries rejected now, as its inventory
// entry states them (wire.Device.stored_rejected): each event's JSON is
// made once, when the device's rejections change (a read, or a set of one
// of them). n.mu must be held.
func (n *Node) rejectedLocked(uuid string, d *actors.Device) [][]byte {
	r := d.StoredRejections()
	if r == nil {
		delete(n.rejected, uuid)
		return nil
	}
	if w, ok := n.rejected[uuid]; ok && w.of == r {
		return w.json
	}
	w := rejectedWire{of: r}
	for _, e := range r.Events {
		b, err := e.MarshalJSON()
		if err != nil {
			continue // never: AppendJSON does not fail
		}
		w.json = append(w.json, b)
	}
	if n.rejected == nil {
		n.rejected = map[string]rejectedWire{}
	}
	n.rejected[uuid] = w
	return w.json
}

// configMark is a device's device-global config as the node last saw it:
// the default view it read it from (the device actor publishes a new one
// with every change) and the generation it gave it.
type configMark struct {
	view *actors.View
	cfg  protocol.DeviceConfig
	gen  uint64
}

// configGenLocked is d's config generation (wire.State.config_gen): a new
// one whenever its device-global config differs from when the node last
// looked. A view published for another reason, with the same config,
// keeps it. n.mu must be held.
func (n *Node) configGenLocked(uuid string, d *actors.Device) uint64 {
	v := d.ViewFor(0) // the default view: no session is 0
	m := n.configMarks[uuid]
	switch {
	case m != nil && m.view == v:
		return m.gen
	case v == nil:
		return 0 // nothing published yet: not before the device is listed
	}
	if m == nil {
		if n.configMarks == nil {
			n.configMarks = map[string]*configMark{}
		}
		m = &configMark{}
		n.configMarks[uuid] = m
	}
	if m.gen == 0 || v.Config.Device != m.cfg {
		n.configGens++
		m.gen = n.configGens
	}
	m.view, m.cfg = v, v.Config.Device
	return m.gen
}

func (n *Node) inventoryLocked() *wire.Inventory {
	devs := n.devicesLocked()
	n.invSent = n.set
	inv := &wire.Inventory{NodeId: n.cfg.NodeID, HttpUrl: n.cfg.HTTPURL, Address: n.sys.Address(), LeaseMs: uint32(n.cfg.LeaseMs), Build: n.cfg.Build,
		NodeProcess: n.process}
	for _, d := range devs {
		i := d.Info
		inv.Devices = append(inv.Devices, &wire.Device{
			Uuid: i.UUID, Id: i.ID, Kind: uint32(i.Kind), Link: uint32(i.Link), Port: i.Port,
			Simulated: i.Simulated, Model: uint32(i.Model), HardwareVersion: uint32(i.HardwareVersion),
			FirmwareVersion: uint32(i.FirmwareVersion), MaxForceN: i.MaxForceN,
			WorkspaceCenterX: i.WorkspaceCenterM.X, WorkspaceCenterY: i.WorkspaceCenterM.Y, WorkspaceCenterZ: i.WorkspaceCenterM.Z,
			ConfigGen:      n.configGenLocked(i.UUID, d),
			StoredRejected: n.rejectedLocked(i.UUID, d),
		})
	}
	return inv
}

// forwardedLocked resolves what a message a gateway forwarded names: the
// device (nil: gone from this node), the gateway's subscription (nil: a
// gateway that has not subscribed) and the message's age on the node's
// clock, never negative (zero without a subscription, whose clock offset
// the node does not know). A message of another process than the one
// subscribed at the gateway's address (process non-zero: an old process's
// message in flight after its successor subscribed, or a second process
// at the address) finds no subscription. n.mu must be held.
func (n *Node) forwardedLocked(uuid, gateway string, process uint64, sentUnixNs int64, now time.Time) (d *actors.Device, s *subscriber, ageNs int64) {
	d, s = n.devicesLocked()[uuid], n.subs[gateway]
	if s != nil && process != 0 && process != s.process {
		s = nil
	}
	if s != nil {
		ageNs = max(s.offset.ageNs(sentUnixNs, now), 0)
	}
	return d, s, ageNs
}

// leaseNs is the node's own lease on the forces a gateway forwards.
func (n *Node) leaseNs() int64 { return int64(n.cfg.LeaseMs) * int64(time.Millisecond) }

// command writes a forwarded command into the device's register with the
// node's own lease, less the time the command took to arrive. A command
// older than the lease, or from a gateway that has not subscribed, is
// dropped: after a stall (SIGSTOP, a saturated link) the node must not
// replay forces queued meanwhile.
func (n *Node) command(m *wire.Command) {
	now := time.Now()
	leaseNs := n.leaseNs()
	n.mu.Lock()
	d, s, ageNs := n.forwardedLocked(m.Uuid, m.GatewayAddress, m.ProcessId, m.SentUnixNs, now)
	var owner uint64
	var params *loop.Params // nil: the defaults, no navigation
	if s != nil {
		owner = s.owner
		if nav := n.navs[fxKey{owner, m.Uuid}]; nav != nil && !otherSession(nav.session, m.Session) {
			params = nav.params
		}
	}
	n.mu.Unlock()
	if d == nil || s == nil {
		// Gone meanwhile (the next inventory tells the gateway), or a
		// gateway not subscribed: whatever it held lapses with the lease.
		return
	}
	reg := d.Register()
	mode := hw.ControlMode(m.Mode)
	if mode == hw.ModeIdle {
		reg.Release(owner) // always honoured: it only ends a force
		n.dropEffects(d, owner, m.Uuid)
		n.mu.Lock()
		delete(n.sessions, fxKey{owner, m.Uuid}) // no session commands now
		n.mu.Unlock()
		return
	}
	// The lease also ends at most leaseNs after the newest state the
	// gateway had from this node: a gateway that stopped hearing the node
	// (its pushes lost one way) commands from a state the node has moved
	// on from, and its commands must not keep the force on.
	leftNs := leaseNs - ageNs
	if m.StateSentUnixNs != 0 {
		leftNs = min(leftNs, leaseNs-(now.UnixNano()-m.StateSentUnixNs))
	}
	// And no later than the gateway session's own lease: its client's
	// force ramps out here from the client's deadline (docs/protocol.md:
	// zero within the lease plus 20 ms), the node's lease staying the net
	// for a gateway that goes quiet.
	switch {
	case m.LeaseLeftNs < 0:
		return // a lapsed force the gateway ramps out: so does this loop
	case m.LeaseLeftNs > 0:
		leftNs = min(leftNs, m.LeaseLeftNs-ageNs)
	}
	if leftNs <= 0 {
		return
	}
	// Resolved before the claim: a mode this build has no command for
	// (a peer's garbage) must not take the arm, or other gateways would be
	// refused until the register's claim timeout, with no lease recorded
	// to end it sooner.
	var t [3]float64
	copy(t[:], m.Target) // a short or missing target reads as zeros
	cmd, ok := hw.CommandTarget(mode, t)
	if !ok {
		return
	}
	if held := reg.Claim(owner); held != owner {
		if !n.lapsed(held) {
			return // a local client, or another gateway within its lease, holds the device
		}
		reg.Release(held)
		if reg.Claim(owner) != owner {
			return
		}
	}
	// Another gateway's effects, paused since its lease lapsed, go now
	// that this one holds the arm (the push loop would drop them a tick
	// later): were this one to let go at once, they must not render again
	// when the other's control resumes without declaring them. This one's
	// own paused effects go too if another owner held the arm since its
	// control lapsed (the register's term moved past this claim's), also
	// one that claimed and let go between two pushes.
	term := reg.Term()
	n.mu.Lock()
	free, known := n.fxTerms[fxKey{owner, m.Uuid}]
	n.mu.Unlock()
	if set := d.Effects(); set != nil && set.Session >= gatewaySession &&
		(set.Session != owner || known && term > free+1) {
		n.dropEffects(d, set.Session, m.Uuid)
	}
	n.record(&n.fxTerms, fxKey{owner, m.Uuid}, term+1)
	n.commandingSession(d, owner, m.Uuid, m.Session)
	end := n.clock.Now() + leftNs
	reg.Write(owner, m.Seq, end, &cmd, params)
	n.mu.Lock()
	if n.leaseEnds == nil {
		n.leaseEnds = map[uint64]int64{}
	}
	n.leaseEnds[owner] = end
	n.mu.Unlock()
}

// lapsed reports whether owner is a gateway whose last command's lease
// has ended; it then forgets that lease.
func (n *Node) lapsed(owner uint64) bool {
	if owner < gatewaySession {
		return false // a local session: the register's own rules hold
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.leaseOverLocked(owner) {
		return false
	}
	delete(n.leaseEnds, owner)
	return true
}

// leaseOver is leaseOverLocked for a caller without n.mu.
func (n *Node) leaseOver(owner uint64) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.leaseOverLocked(owner)
}

// leaseOverLocked reports whether owner is a gateway whose last command's
// lease has ended.
func (n *Node) leaseOverLocked(owner uint64) bool {
	end, ok := n.leaseEnds[owner]
	return ok && owner >= gatewaySession && n.clock.Now() >= end
}

// push sends every device's state to each live subscriber, and the
// inventory when the device set changed.
func (n *Node) push() {
	defer n.wg.Done()
	t := time.NewTicker(time.Second / time.Duration(n.cfg.PushHz))
	defer t.Stop()
	var (
		rd           pushRead
		dests        []pushDest
		lapsedOwners []uint64
		last         = time.Now()
	)
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		n.mu.Lock()
		n.forgetSilentLocked(now.Sub(last))
		last = now
		devs := n.devicesLocked()
		// Built for subscribers only: one subscribed after the remote
		// started, so its address (sys.Address, in the inventory) is set;
		// before, the pushes started with the node actor would read it
		// while the remote writes it (racetour). A first subscriber gets
		// the inventory in the answer to its Subscribe.
		var inv *wire.Inventory
		if n.set != n.invSent && len(n.subs) > 0 {
			inv = n.inventoryLocked()
		}
		dests = dests[:0]
		// A gateway whose lease ended holds nothing any more, whatever the
		// register says until another claims it: the others are told the
		// arm is free, so their sessions can take it.
		lapsedOwners = lapsedOwners[:0]
		for o := range n.leaseEnds {
			if n.leaseOverLocked(o) {
				lapsedOwners = append(lapsedOwners, o)
			}
		}
		for _, s := range n.subs {
			dests = append(dests, pushDest{s.pid, s.owner, s.offset.ns(), s.process})
		}
		fxGens := maps.Clone(n.fxGens)
		navs := maps.Clone(n.navs)
		n.mu.Unlock()
		for uuid, d := range devs {
			if set := d.Effects(); set != nil && n.othersArm(d, uuid, set.Session, dests) {
				n.dropEffects(d, set.Session, uuid)
			}
		}
		if len(dests) == 0 {
			continue
		}
		n.read(&rd, devs, now)
		for _, to := range dests {
			if inv != nil {
				// Addressed to the process served (Inventory.process_id),
				// as the answer to its Subscribe is.
				n.sys.Root.Send(to.pid, &wire.Inventory{NodeId: inv.NodeId, Devices: inv.Devices, HttpUrl: inv.HttpUrl,
					Address: inv.Address, ProcessId: to.process, LeaseMs: inv.LeaseMs, Build: inv.Build, NodeProcess: inv.NodeProcess})
			}
			n.sys.Root.Send(to.pid, n.batch(&rd, to, lapsedOwners, fxGens, navs))
		}
	}
}

// othersArm says whether the effects owner declared on d are no longer
// its to resume: owner is a gateway's, and another owner holds the arm
// (a local session, or a gateway whose command came while the node's
// push loop was between ticks) or held it since the gateway's control
// (fxTerms), or the node forgot that gateway. A lapse
// of the node's lease alone keeps them: the loop pauses them with the
// force, and when the gateway's commands resume, with its session's lease
// never having lapsed (a stall of the gateway or its link past the node's
// lease), its effects render again at once, as a local session's do after
// a late renewal. Dropping them with the lease took its wall away until
// the gateway declared it again, up to resendAfter later.
func (n *Node) othersArm(d *actors.Device, uuid string, owner uint64, gateways []pushDest) bool {
	if owner < gatewaySession {
		return false // a local session's: the service keeps them
	}
	// The register before fxTerms: a command of the gateway's that
	// claims the arm after these reads has recorded its term by the time
	// fxTerms is read, so the gateway's own claim never counts as another's.
	reg := d.Register()
	holder := reg.Owner()
	term := reg.Term()
	if holder != 0 && holder != owner {
		return true
	}
	n.mu.Lock()
	free, known := n.fxTerms[fxKey{owner, uuid}]
	n.mu.Unlock()
	if holder == 0 && known && term > free {
		return true
	}
	return !slices.ContainsFunc(gateways, func(g pushDest) bool { return g.owner == owner })
}

// pushDest is a gateway a push goes to: where, the register owner its
// commands are written as, and the node's estimate of its clock less the
// node's.
type pushDest struct {
	pid      *actor.PID
	owner    uint64
	offsetNs int64
	process  uint64 // the subscriber's wire.Subscribe.process_id
}

// pushRead is one push's reading of the node's devices, kept between
// pushes for its buffers.
type pushRead struct {
	sentNs   int64 // when they were read: the node's wall clock...
	readNs   int64 // ...and its loops' Clock
	snaps    []loop.Snapshot
	uuids    []string
	ages     []int64 // how old each state was when read (stateAgeNs)
	fxs      []effectsWire
	fxOwners []uint64
	cfgGens  []uint64 // each device's config generation (configGenLocked)
}

// read reads devs' states at now into rd.
func (n *Node) read(rd *pushRead, devs map[string]*actors.Device, now time.Time) {
	rd.sentNs = now.UnixNano()
	rd.snaps, rd.uuids, rd.ages, rd.fxs, rd.fxOwners = rd.snaps[:0], rd.uuids[:0], rd.ages[:0], rd.fxs[:0], rd.fxOwners[:0]
	rd.cfgGens = rd.cfgGens[:0]
	// The batch says the states were read at sentNs; each says how old it
	// was then, on the loops' clock read at the same moment.
	rd.readNs = n.clock.Now()
	for uuid, d := range devs {
		rd.snaps = append(rd.snaps, loop.Snapshot{})
		snap := &rd.snaps[len(rd.snaps)-1]
		age := stateAgeNs(d.Loop(), snap, rd.readNs)
		if snap.TimeNs == 0 {
			// Its loop has not ticked yet: the snapshot it was made with
			// is no state of the device's (the origin, not calibrated),
			// and a gateway lists a device with its first pushed state.
			rd.snaps = rd.snaps[:len(rd.snaps)-1]
			continue
		}
		rd.ages = append(rd.ages, age)
		rd.uuids = append(rd.uuids, uuid)
		var fxOwner uint64
		if set := d.Effects(); set != nil {
			fxOwner = set.Session
		}
		rd.fxOwners = append(rd.fxOwners, fxOwner)
		rd.fxs = append(rd.fxs, effectsToWire(d, snap.Owner != 0))
	}
	n.mu.Lock()
	for _, uuid := range rd.uuids {
		rd.cfgGens = append(rd.cfgGens, n.configGenLocked(uuid, devs[uuid]))
	}
	n.mu.Unlock()
}

// batch is rd as pushed to one gateway: the offset is the gateway's, and
// so is whether someone else holds each device.
func (n *Node) batch(rd *pushRead, to pushDest, lapsedOwners []uint64, fxGens map[fxKey]uint64, navs map[fxKey]*forwardedNav) *wire.StateBatch {
	states := make([]*wire.State, len(rd.snaps))
	for i := range rd.snaps {
		states[i] = stateToWire(rd.uuids[i], &rd.snaps[i])
		states[i].AgeNs, states[i].ConfigGen = rd.ages[i], rd.cfgGens[i]
		owner := rd.snaps[i].Owner
		states[i].HeldLocally = owner != 0 && owner != to.owner && !slices.Contains(lapsedOwners, owner)
		rd.fxs[i].fill(states[i])
		if rd.fxOwners[i] == to.owner {
			states[i].EffectsGen = fxGens[fxKey{to.owner, rd.uuids[i]}]
		}
		if nav := navs[fxKey{to.owner, rd.uuids[i]}]; nav != nil {
			nav.fill(states[i])
		}
	}
	return &wire.StateBatch{NodeId: n.cfg.NodeID, States: states, SentUnixNs: rd.sentNs, OffsetNs: to.offsetNs}
}

// stateAgeNs loads d's state into dst and says how old it was at readNs
// (d's Clock): readNs less the tick as of which the loop knows it current,
// not less its publish time (loop.Device.LoadCurrent). Never negative: a
// pass that ended after readNs made it current then.
func stateAgeNs(d *loop.Device, dst *loop.Snapshot, readNs int64) int64 {
	return max(readNs-d.LoadCurrent(dst), 0)
}

func stateToWire(uuid string, s *loop.Snapshot) *wire.State {
	st := &s.State
	return &wire.State{
		Uuid: uuid, Tick: s.Tick,
		PositionM:          []float64{st.PositionM.X, st.PositionM.Y, st.PositionM.Z},
		VelocityMps:        []float64{st.VelocityMps.X, st.VelocityMps.Y, st.VelocityMps.Z},
		ForceN:             []float64{st.ForceN.X, st.ForceN.Y, st.ForceN.Z},
		AnglesDeg:          []float64{st.AnglesDeg.A0, st.AnglesDeg.A1, st.AnglesDeg.A2},
		AngularVelocityDps: []float64{st.AngularVelocityDps.A0, st.AngularVelocityDps.A1, st.AngularVelocityDps.A2},
		BodyOrientation:    []float64{st.BodyOrientation.W, st.BodyOrientation.X, st.BodyOrientation.Y, st.BodyOrientation.Z},
		Orientation:        []float64{st.Orientation.W, st.Orientation.X, st.Orientation.Y, st.Orientation.Z},
		Status:             uint32(st.Status), Buttons: uint32(st.Buttons), Hall: st.Hall, Battery: st.Battery,
		GripError:   uint32(st.GripError),
		ControlMode: uint32(s.Mode),
		Target:      targetToWire(s),
	}
}

// targetToWire is the snapshot's target, none while the device idles.
func targetToWire(s *loop.Snapshot) []float64 {
	if s.Mode == hw.ModeIdle {
		return nil
	}
	return []float64{s.Target[0], s.Target[1], s.Target[2]}
}

// stateFromWire fills dst from m; missing vectors stay zero.
func stateFromWire(m *wire.State, dst *hw.State) {
	v3 := func(f []float64) hw.Vec3 {
		if len(f) != 3 {
			return hw.Vec3{}
		}
		return hw.Vec3{X: f[0], Y: f[1], Z: f[2]}
	}
	a3 := func(f []float64) hw.Angles3 {
		v := v3(f)
		return hw.Angles3{A0: v.X, A1: v.Y, A2: v.Z}
	}
	q := func(f []float64) hw.Quat {
		if len(f) != 4 {
			return hw.Quat{W: 1}
		}
		return hw.Quat{W: f[0], X: f[1], Y: f[2], Z: f[3]}
	}
	*dst = hw.State{
		PositionM: v3(m.PositionM), VelocityMps: v3(m.VelocityMps), ForceN: v3(m.ForceN),
		Status: hw.Status(m.Status), AnglesDeg: a3(m.AnglesDeg), AngularVelocityDps: a3(m.AngularVelocityDps),
		BodyOrientation: q(m.BodyOrientation), Orientation: q(m.Orientation),
		Buttons: hw.Buttons(m.Buttons), Hall: m.Hall, Battery: m.Battery,
		// A code past a byte is no code firmware sends: read it as the
		// largest, still an error.
		GripError: uint8(min(m.GripError, 255)),
	}
}

// config answers a gateway's config request on the owning node: protocol
// validates the JSON, the device actor applies and persists it (durably,
// before the answer), and the reply carries the entry now in force; a
// read's, with the warnings the node's own GET answers besides it.
func (n *Node) config(m *wire.ConfigRequest) *wire.ConfigReply {
	fail := func(err error) *wire.ConfigReply {
		pe := asProtocolError(err)
		return &wire.ConfigReply{Error: pe.Message, Code: string(pe.Code)}
	}
	n.mu.Lock()
	d := n.devicesLocked()[m.Uuid]
	n.mu.Unlock()
	if d == nil {
		return fail(protocol.Errorf(protocol.CodeUnavailable, "", "device %s is no longer on node %s", m.Uuid, n.cfg.NodeID))
	}
	k, ok := protocol.KeyFromPath(m.Key)
	if !ok {
		return fail(protocol.Errorf(protocol.CodeUnknownKey, "", "unknown config key %q", m.Key))
	}
	var e protocol.Entry
	var warnings []protocol.Error
	var err error
	switch m.Op {
	case "get":
		e, warnings, err = n.svc.EntryWarn(d, 0, k)
	case "set":
		var pe *protocol.Error
		if e, pe = protocol.DecodeEntry(k, m.Json, ""); pe != nil {
			return fail(pe)
		}
		e, err = n.svc.SetEntry(d, 0, e)
	case "reset":
		e, err = n.svc.ResetEntry(d, nil, k)
	default:
		err = protocol.Errorf(protocol.CodeInvalidValue, "", "unknown config op %q", m.Op)
	}
	if err != nil {
		return fail(err)
	}
	b, err := e.MarshalJSON()
	if err != nil {
		return fail(err)
	}
	return &wire.ConfigReply{Json: b, Warnings: warningsToWire(warnings)}
}

// warningsToWire is a config entry's warnings as a ConfigReply carries them.
func warningsToWire(ws []protocol.Error) []*wire.ConfigWarning {
	if len(ws) == 0 {
		return nil
	}
	out := make([]*wire.ConfigWarning, len(ws))
	for i, w := range ws {
		out[i] = &wire.ConfigWarning{Code: string(w.Code), Message: w.Message, Path: w.Path}
	}
	return out
}

// warningsFromWire is the warnings of a node's ConfigReply, as the node's
// own GET answers them (none from a node older than the field).
func warningsFromWire(ws []*wire.ConfigWarning) []protocol.Error {
	if len(ws) == 0 {
		return nil
	}
	out := make([]protocol.Error, len(ws))
	for i, w := range ws {
		out[i] = protocol.Error{Code: protocol.Code(w.GetCode()), Message: w.GetMessage(), Path: w.GetPath()}
	}
	return out
}

// asProtocolError keeps a protocol error's code; anything else is internal.
func asProtocolError(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	return protocol.Errorf(protocol.CodeInternal, "", "%v", err)
}

// fxKey names one gateway's effects on one device.
type fxKey struct {
	owner uint64
	uuid  string
}

// sentDeclaration is a gateway's declaration as sent: its generation and send
// time (the gateway's clock).
type sentDeclaration struct {
	gen    uint64
	sentNs int64
}

// lateLocked says whether a declaration (gen, sentNs) of key came after a
// newer one, recorded in seen: both its generation and its send time are
// lower (a gateway's generations grow, and a new proxy or process starts
// them again but sends later; a wall clock stepped back still leaves the
// generation growing). Otherwise it records it as the newest.
func lateLocked(seen *map[fxKey]sentDeclaration, key fxKey, gen uint64, sentNs int64) bool {
	if d, ok := (*seen)[key]; ok && gen < d.gen && sentNs < d.sentNs {
		return true
	}
	if *seen == nil {
		*seen = map[fxKey]sentDeclaration{}
	}
	(*seen)[key] = sentDeclaration{gen, sentNs}
	return false
}

// effects renders a gateway session's effects declaration on the device,
// under the owner and lease of the gateway's commands, as a local
// session's effects render under its own: the loop renders them only
// while that owner holds the device within its lease and ramps them out
// with its command. A declaration older than the lease is dropped (the
// gateway sends it again while the pushed effects_gen lags), and so is one
// that arrives after a newer one (lateLocked); one the node cannot take is
// answered with an EffectsReply.
func (n *Node) effects(m *wire.Effects) {
	now := time.Now()
	leaseNs := n.leaseNs()
	n.mu.Lock()
	d, s, ageNs := n.forwardedLocked(m.Uuid, m.GatewayAddress, m.ProcessId, m.SentUnixNs, now)
	var owner uint64
	var to *actor.PID
	var gatewayID string
	if s != nil {
		owner, to, gatewayID = s.owner, s.pid, s.id
	}
	key := fxKey{owner, m.Uuid}
	late := s != nil && ageNs < leaseNs && lateLocked(&n.fxSeen, key, m.Gen, m.SentUnixNs)
	n.mu.Unlock()
	if s == nil || ageNs >= leaseNs || late {
		return
	}
	firstID := ""
	refuse := func(code protocol.Code, msg string) {
		n.sys.Root.Send(to, &wire.EffectsReply{Uuid: m.Uuid, Gen: m.Gen, Session: m.Session,
			EffectId: firstID, Code: string(code), Error: msg})
	}
	if d == nil {
		refuse(protocol.CodeUnavailable, fmt.Sprintf("device %s is no longer on node %s", m.Uuid, n.cfg.NodeID))
		return
	}
	if len(m.Specs) == 0 {
		n.dropEffects(d, owner, m.Uuid)
		return
	}
	var specs []effect.Spec
	if err := json.Unmarshal(m.Specs, &specs); err != nil {
		refuse(protocol.CodeInvalidValue, fmt.Sprintf("node %s could not read the effects: %v", n.cfg.NodeID, err))
		return
	}
	if len(specs) > 0 {
		firstID = specs[0].ID
	}
	// Each expiry was sent as the time left; it counts from when the
	// gateway sent it, on the node's loop clock.
	loopNow := n.clock.Now()
	for i := range specs {
		if e := specs[i].ExpiresNs; e != 0 {
			specs[i].ExpiresNs = loopNow + e - ageNs
		}
	}
	set, err := effect.NewSet(owner, specs)
	if err != nil {
		refuse(protocol.CodeInvalidValue, err.Error())
		return
	}
	decl := &heldDeclaration{set: set, listed: n.forwardedDeclaration(m, gatewayID, loopNow-ageNs), gen: m.Gen, session: m.Session}
	// The declaration replaces the gateway's last one. Made by a session
	// other than the one whose command is in force (whose withdrawal was
	// lost, say), it renders from that session's first command on
	// (commandingSession), not under another's; the node reports no
	// generation meanwhile, and the gateway sends it again should that
	// session command here before it arrives.
	n.mu.Lock()
	b := n.sessions[key]
	n.mu.Unlock()
	if b != nil && otherSession(b.commanding, m.Session) {
		n.dropEffects(d, owner, m.Uuid)
		n.mu.Lock()
		b.held = decl
		n.mu.Unlock()
		return
	}
	if !n.renderDeclaration(d, owner, m.Uuid, decl) {
		refuse(protocol.CodeDeviceBusy, fmt.Sprintf("the arm is controlled by another session on node %s until it disconnects or its lease lapses", n.cfg.NodeID))
	}
}

// heldDeclaration is a gateway's effects declaration as the node took it:
// the Set to render, what it lists of it, its generation and the gateway
// session that made it.
type heldDeclaration struct {
	set     *effect.Set
	listed  *actors.ForwardedEffects
	gen     uint64
	session uint64
}

// sessionBinding is which of a gateway's sessions its command in force on
// an arm is of, and which declared the effects rendered there (0: not
// said, as by a gateway older than wire.Command.session); held is a
// declaration of a session other than the commanding one, which renders
// when that session's commands come.
type sessionBinding struct {
	commanding uint64
	declared   uint64
	held       *heldDeclaration
}

// bindingLocked is key's sessionBinding, made if need be. n.mu must be
// held.
func (n *Node) bindingLocked(key fxKey) *sessionBinding {
	b := n.sessions[key]
	if b == nil {
		if n.sessions == nil {
			n.sessions = map[fxKey]*sessionBinding{}
		}
		b = &sessionBinding{}
		n.sessions[key] = b
	}
	return b
}

// otherSession says whether two gateway sessions are known to differ: 0 is
// a session not said (an older gateway, or a withdrawal), which the order
// of the gateway's messages alone keeps apart, as before the node knew
// sessions.
func otherSession(a, b uint64) bool { return a != 0 && b != 0 && a != b }

// renderDeclaration renders a gateway owner's declaration on d, unless
// another holds the arm: the declaration takes no control, the gateway's
// commands, which follow it, do (or are dropped while another holds the
// arm), and it must not replace the effects of another holder, even one
// that claims the arm while it is published.
func (n *Node) renderDeclaration(d *actors.Device, owner uint64, uuid string, decl *heldDeclaration) bool {
	free := func(held uint64) bool { return held == 0 || held == owner || n.leaseOver(held) }
	reg := d.Register()
	holder, term := reg.Owner(), reg.Term()
	if !d.RenderForwarded(decl.set, decl.listed, free) {
		return false
	}
	key := fxKey{owner, uuid}
	n.record(&n.fxGens, key, decl.gen)
	if holder != 0 {
		term++ // the release to come of the control in force: the gateway's, or a lapsed one's
	}
	n.record(&n.fxTerms, key, term)
	n.mu.Lock()
	defer n.mu.Unlock()
	b := n.bindingLocked(key)
	b.declared, b.held = decl.session, nil
	return true
}

// commandingSession records that the command of the gateway owner's
// session has the arm d, before the node writes it: effects another
// session declared stop rendering (a new session never feels an old one's
// field whose withdrawal was lost), and a declaration of this session held
// aside renders.
func (n *Node) commandingSession(d *actors.Device, owner uint64, uuid string, session uint64) {
	key := fxKey{owner, uuid}
	n.mu.Lock()
	b := n.bindingLocked(key)
	b.commanding = session
	stale := otherSession(b.declared, session)
	var held *heldDeclaration
	if b.held != nil && !otherSession(b.held.session, session) {
		held, b.held = b.held, nil
	}
	n.mu.Unlock()
	if stale || held != nil {
		n.dropEffects(d, owner, uuid)
	}
	if held != nil {
		n.renderDeclaration(d, owner, uuid, held)
	}
}

// forwardedDeclaration is what the node lists of a gateway's declaration
// it renders: the effects as the gateway's session declared them, whose
// they are, and the map of its forces into the session's space. nil (list
// none) when the gateway sent no declaration or one the node cannot read:
// the effects still render, as the specs say.
func (n *Node) forwardedDeclaration(m *wire.Effects, gatewayID string, sentNs int64) *actors.ForwardedEffects {
	if len(m.Declared) == 0 || len(m.ForceToSession) != 9 {
		return nil
	}
	u, _, perr := protocol.DecodeEffectsUpdate(m.Declared, "")
	if perr != nil {
		n.log.Warn().Str("uuid", m.Uuid).Str("why", perr.Message).Msg("cluster: a gateway's effects declaration cannot be listed")
		return nil
	}
	if len(m.DeclaredLeftNs) != len(u.Set) {
		return nil
	}
	fw := &actors.ForwardedEffects{GatewayID: gatewayID, GatewayAddress: m.GatewayAddress, SessionID: m.Session,
		Effects: u.Set, EndsNs: make([]int64, len(u.Set))}
	// Like the specs' expiries: time left when the gateway sent it, on the
	// node's loop clock.
	for i, left := range m.DeclaredLeftNs {
		if left > 0 {
			fw.EndsNs[i] = sentNs + left
		}
	}
	for i, v := range m.ForceToSession {
		fw.ForceToSession[i/3][i%3] = v
	}
	return fw
}

// record sets k to v in *m (n.fxGens, n.fxTerms), which it makes if need
// be, under n.mu.
func (n *Node) record(m *map[fxKey]uint64, k fxKey, v uint64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if *m == nil {
		*m = map[fxKey]uint64{}
	}
	(*m)[k] = v
}

// dropEffects withdraws the effects a gateway owner's declaration put on
// d, if they are in force, and forgets its generation: the node then
// reports none, and the gateway sends its declaration again if it still
// has one when its control resumes.
func (n *Node) dropEffects(d *actors.Device, owner uint64, uuid string) {
	d.DropForwarded(owner)
	n.mu.Lock()
	delete(n.fxGens, fxKey{owner, uuid})
	if b := n.sessions[fxKey{owner, uuid}]; b != nil {
		b.declared, b.held = 0, nil
	}
	n.mu.Unlock()
}

// effectsWire is one device's effects report and output figures as pushed.
type effectsWire struct {
	effects   []*wire.EffectState
	rendering bool
	output    *wire.Output
}

// effectsToWire reads d's effects report (none for a device without
// effects) and, while someone controls it, its output figures (between
// controls they are zero; and reading them makes the loop store them every
// few ticks, which thousands of idle arms need not).
func effectsToWire(d *actors.Device, controlled bool) effectsWire {
	var w effectsWire
	if controlled {
		o := d.Output()
		w.output = &wire.Output{SessionEnergyJ: o.SessionEnergyJ, EffectsEnergyJ: o.EffectsEnergyJ,
			NavigationEnergyJ: o.NavigationEnergyJ, EnergyJ: o.EnergyJ, AddedDampingNsPerM: o.AddedDampingNsPerM,
			ActiveNs: o.ActiveNs, SustainedSpells: o.SustainedSpells}
	}
	if d.Effects() == nil {
		return w
	}
	var rep loop.EffectsReport
	if !d.LoadEffects(&rep) {
		return w
	}
	w.rendering = rep.Rendering
	for i := range rep.N {
		r := &rep.Effects[i]
		w.effects = append(w.effects, &wire.EffectState{Id: r.ID, Kind: uint32(r.Kind), Source: uint32(r.Source),
			ForceN: []float64{r.ForceN.X, r.ForceN.Y, r.ForceN.Z}, ProxyM: []float64{r.ProxyM.X, r.ProxyM.Y, r.ProxyM.Z},
			Contact: r.Contact, Weight: r.Weight, Removing: r.Removing, EnergyJ: r.EnergyJ})
	}
	return w
}

// fill puts the effects and figures into a device's pushed state.
func (w *effectsWire) fill(st *wire.State) {
	st.Effects, st.EffectsRendering, st.Output = w.effects, w.rendering, w.output
}

// effectsFromWire is the node's effects report and output figures from a
// pushed state.
func effectsFromWire(m *wire.State, rep *loop.EffectsReport, out *loop.OutputReport) {
	v3 := func(f []float64) hw.Vec3 {
		if len(f) != 3 {
			return hw.Vec3{}
		}
		return hw.Vec3{X: f[0], Y: f[1], Z: f[2]}
	}
	*rep = loop.EffectsReport{Rendering: m.EffectsRendering, N: min(len(m.Effects), effect.MaxEffects)}
	for i := range rep.N {
		e := m.Effects[i]
		rep.Effects[i] = effect.Rendered{ID: e.Id, Kind: effect.Kind(min(e.Kind, 255)), Source: effect.Source(min(e.Source, 255)),
			ForceN: v3(e.ForceN), ProxyM: v3(e.ProxyM), Contact: e.Contact, Weight: e.Weight, Removing: e.Removing, EnergyJ: e.EnergyJ}
	}
	*out = loop.OutputReport{}
	if o := m.Output; o != nil {
		*out = loop.OutputReport{SessionEnergyJ: o.SessionEnergyJ, EffectsEnergyJ: o.EffectsEnergyJ,
			NavigationEnergyJ: o.NavigationEnergyJ, EnergyJ: o.EnergyJ, AddedDampingNsPerM: o.AddedDampingNsPerM,
			ActiveNs: o.ActiveNs, SustainedSpells: o.SustainedSpells}
		out.Sustained = out.ActiveNs > passivity.SustainedNs
	}
}
