package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// errNodeLost fails a proxy's exchanges once its node is gone. The gateway
// has the service remove the device at once (proxy.leave); should the loop
// exchange first, the error wraps hw.ErrGone, so the loop fails the device
// at that exchange, not after a run of them.
var errNodeLost = fmt.Errorf("cluster: the device's node is unreachable (%w); its devices return when it answers again", hw.ErrGone)

// errNodeGone answers a config request whose node's process went away
// while it waited: the request may have been applied just before, so the
// client reads the entry back once the device returns.
var errNodeGone = errors.New("cluster: the device's node went away before it answered (its process ended); if it had applied the request, the device returns with it")

// errGatewayStopping answers a config request in flight when the gateway
// stops: its shutdown does not wait on a node's answer. The node may still
// apply a set; the client reads the entry back.
var errGatewayStopping = errors.New("cluster: the gateway is stopping; a set it sent may still be applied on the node")

// Gateway serves the devices of every node in cfg.Peers through svc.
type Gateway struct {
	// closing stops proxies sending once the remote is going away; the
	// service's shutdown then halts their devices as usual, and the nodes'
	// leases end any force.
	closing atomic.Bool
	// refreshing: a refresh of the remembered ids runs (startRefresh).
	refreshing atomic.Bool

	svc   *actors.Service
	cfg   Config
	log   zerolog.Logger
	lk    *link
	sys   *actor.ActorSystem
	cl    *cluster.Cluster // automanaged membership only
	clock loop.Clock
	addr  string
	// process tells this process from another at addr (a restart at a
	// fixed cluster port) to the nodes: wire.Subscribe.process_id.
	process uint64

	stop chan struct{}
	wg   sync.WaitGroup
	// adds are the proxies an inventory made, added to the service in
	// the order they came by one goroutine: an add waits for the ids'
	// save, which no Receive may. It does not wait for the addition
	// (Service.AddDeviceThen), which may wait long for one device.
	adds *fifo[*proxy]
	// idsSaveMu serialises saves of the remembered ids (saveIDs), so the
	// last snapshot taken is the last one written. It is held across the
	// disk write, and only saveIDs takes it (before mu).
	idsSaveMu sync.Mutex
	// idsKept: the state directory holds remembered ids this process could
	// not read (a permission or I/O error, or a corrupt file the store could
	// not move aside), so saveIDs never overwrites them. Set at start.
	idsKept bool

	// mu guards the following; it is never held across a registry request
	// (the registry closes proxies, and proxy.Close takes mu).
	mu      sync.Mutex
	nodes   map[string]*nodeState // by node id
	proxies map[string]*proxy     // by UUID
	// targets are the nodes' cluster addresses subscribed to, with the
	// node id where known: --peers (static), or every node member the
	// cluster has shown (automanaged; kept after it leaves, so a node that
	// answers again comes back, until the node shows up at a new address).
	targets map[string]string
	// lastProbe is when the latest probe was sent (see probed).
	lastProbe time.Time
	// linkUp is when the cluster link was up (StartGateway's end), and
	// ready is set once Ready first said so, readyDetail to what it said
	// then (which nodes were not waited for): see Ready.
	linkUp      time.Time
	ready       bool
	readyDetail string
	// members are the node ids in the cluster's current topology
	// (automanaged): their devices' config goes to the device's grain.
	members map[string]bool
	// ids are the gateway ids given out, by kind and UUID, as the state
	// directory holds them (idsDocument) once idsDirty is false again.
	ids      idMemory
	idsDirty bool
	// dropped are the nodes dropped for their silence alone, by id, until
	// the node joins again or configTimeout passes (probed): a hung node
	// may resume and answer the config requests its devices' proxies still
	// wait on, so those wait until its process is known gone
	// (watchDroppedLocked; a new process of it, inventory).
	dropped map[string]*nodeState
	// refusedBy are the nodes that refuse this process's subscription
	// (wire.SubscribeRefused), by id, until the node sends this process
	// its inventory or its refusals stop (dropSilentRefusalsLocked). A
	// refusal for a second live process at this address is logged and
	// published (lab-node-refused) once; one that only waits out a
	// restart's old process is not, unless it goes on past
	// pendingRefusalFor.
	refusedBy map[string]*refusal
	// told are, by node id, the stored entries rejected that the gateway
	// published of the node's latest processes (rejected.go).
	told map[string]*toldRejections

	// callsMu guards calls and callsClosed: calls are the config requests
	// in flight (configRequest), whose goroutines callsWG counts for Close.
	// Never held across a send or a wait.
	callsMu     sync.Mutex
	calls       map[*configCall]struct{}
	callsClosed bool
	callsWG     sync.WaitGroup

	// encodingEffects, nil outside tests, runs as a proxy starts encoding
	// a session's effects for the node: a test makes the encoding as slow
	// as a loaded gateway's can be. Set before the first proxy exists.
	encodingEffects func()
}

type nodeState struct {
	id, addr, httpURL string
	pid               *actor.PID
	lastSeen          time.Time
	// heard: a message of the node's was handled since the last probe.
	// silence is how long, counted in probes, none was; suspect is set
	// when its connection closed or it left the topology, and cleared by
	// its next message.
	heard   bool
	silence time.Duration
	suspect bool
	// offset is the node's clock less the gateway's, from the batches.
	offset clockOffset
	// droppedAt is when the node was dropped for its silence (dropped),
	// and left its proxies then: the service forgets them as their
	// devices leave, and config requests may still wait on them.
	droppedAt time.Time
	left      []*proxy
}

// StartGateway starts the remote and subscribes to every peer.
func StartGateway(svc *actors.Service, cfg Config) (*Gateway, error) {
	cfg.defaults()
	g := &Gateway{svc: svc, cfg: cfg, log: cfg.Log, clock: loop.SystemClock(), process: newProcessID(),
		stop: make(chan struct{}), nodes: map[string]*nodeState{}, proxies: map[string]*proxy{},
		targets: map[string]string{}, members: map[string]bool{}, adds: newFIFO[*proxy]()}
	g.ids, g.idsKept = loadIDs(svc, cfg.Log)
	if cfg.Membership == MembershipStatic {
		for _, p := range cfg.Peers {
			g.targets[p] = ""
		}
	}
	// A member with no kinds: it never hosts a placement.
	lk, err := startLink(&cfg, nil, func(sys *actor.ActorSystem) error {
		if _, err := sys.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return (*gatewayActor)(g) }), gatewayActorName); err != nil {
			return fmt.Errorf("cluster: spawn gateway actor: %w", err)
		}
		// Published by the provider's poller before StartMember returns.
		sys.EventStream.Subscribe(func(ev any) {
			if t, ok := ev.(*cluster.ClusterTopology); ok {
				g.topology(t)
			}
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The address the remote took: subscriptions and commands carry it.
	g.lk, g.sys, g.cl, g.addr = lk, lk.sys, lk.cl, lk.sys.Address()
	g.mu.Lock()
	g.linkUp = time.Now()
	g.mu.Unlock()
	g.wg.Add(2)
	go g.watch()
	go func() {
		defer g.wg.Done()
		g.adds.run(g.stop, g.add)
	}()
	return g, nil
}

// Close stops subscribing and sending and shuts the remote down. The
// service halts and removes the proxied devices when it shuts down; the
// nodes' leases end any force.
func (g *Gateway) Close() {
	// Under mu: watchPort, called under mu, adds to wg only before this,
	// never while Wait runs.
	g.mu.Lock()
	g.closing.Store(true)
	close(g.stop)
	g.mu.Unlock()
	g.endCalls()
	g.wg.Wait()
	g.waitCalls(stopRemoteWithin)
	g.lk.stop()
}

type gatewayActor Gateway

// fromNode takes what a node pushes to its gateway: device states, events,
// and its answers to effects and navigation the gateway forwarded.
func (g *Gateway) fromNode(m any) {
	switch m := m.(type) {
	case *wire.StateBatch:
		g.states(m)
	case *wire.Event:
		if g.refusedForBuild(m.NodeId) {
			// An older node pushes to a gateway that subscribed, and
			// forwards its events, whatever the gateway makes of its
			// inventory: none of its devices is served here.
			return
		}
		g.event(m)
	case *wire.EffectsReply:
		if p := g.proxy(m.Uuid); p != nil {
			p.refused(m)
		}
	case *wire.NavigationReply:
		if p := g.proxy(m.Uuid); p != nil {
			p.navigationRefused(m)
		}
	}
}

func (a *gatewayActor) Receive(ctx actor.Context) {
	g := (*Gateway)(a)
	switch m := ctx.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
	case *wire.Inventory:
		if pid := g.inventory(m); pid != nil {
			// A node that joins is watched: when its connection drops
			// (a killed process refuses at once), it is dropped without
			// waiting for the timeout. A hung node still needs it.
			ctx.Watch(pid)
		}
	case *actor.Terminated:
		g.terminated(m.Who)
	case *probe:
		g.probed(m)
	case *wire.SubscribeRefused:
		g.subscribeRefused(m)
	case *wire.Leaving:
		g.nodeLeft(m)
		ctx.Respond(&wire.LeavingNoted{})
	case *wire.StateBatch, *wire.Event, *wire.EffectsReply, *wire.NavigationReply:
		g.fromNode(m)
	default:
		g.log.Warn().Str("type", fmt.Sprintf("%T", m)).Msg("cluster gateway: unknown message dropped")
	}
}

// proxy is the proxy of the device with uuid, nil if there is none.
func (g *Gateway) proxy(uuid string) *proxy {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.proxies[uuid]
}

// watch subscribes to every peer, and sends the gateway actor a probe
// every probeEvery: the probes are what a node's silence is judged by.
func (g *Gateway) watch() {
	defer g.wg.Done()
	check := time.NewTicker(probeEvery)
	defer check.Stop()
	self := actor.NewPID(g.sys.Address(), gatewayActorName)
	var lastSub time.Time
	lastRefresh := time.Now()
	for {
		now := time.Now()
		if now.Sub(lastRefresh) >= idsRefreshEvery {
			lastRefresh = now
			g.startRefresh()
		}
		if now.Sub(lastSub) >= SubscribeEvery {
			lastSub = now
			g.mu.Lock()
			peers := make([]string, 0, len(g.targets))
			for peer := range g.targets {
				peers = append(peers, peer)
			}
			g.mu.Unlock()
			for _, peer := range peers {
				g.sys.Root.Send(actor.NewPID(peer, nodeActorName), g.subscription())
			}
		}
		g.sys.Root.Send(self, &probe{sent: now})
		select {
		case <-g.stop:
			return
		case <-check.C:
		}
	}
}

// subscription is the Subscribe the gateway sends its nodes now.
func (g *Gateway) subscription() *wire.Subscribe {
	return &wire.Subscribe{GatewayId: g.cfg.NodeID, GatewayAddress: g.addr, SentUnixNs: time.Now().UnixNano(), ProcessId: g.process, Build: g.cfg.Build}
}

// newProcessID is a gateway process's wire.Subscribe.process_id: random,
// so that no two processes at one address share it, and never 0 (a
// gateway older than the field).
func newProcessID() uint64 {
	for {
		if id := rand.Uint64(); id != 0 {
			return id
		}
	}
}

// probe is a local message the gateway actor gets every probeEvery, in
// line with the nodes' messages.
type probe struct{ sent time.Time }

// Silence is judged by probes, not by a clock the gateway reads when it
// gets round to it. The actor handles its mailbox in order, so a node
// message handled between two probes arrived between their sends: a node
// none of whose messages came between probes sent silence apart was
// silent that long, however late the actor handles them. A probe sent
// late (the gateway's own goroutines starved of CPU) counts as one sent
// in time, probeCredit at most, so a loaded gateway does not blame its
// nodes for its own stall.
const (
	probeEvery  = 50 * time.Millisecond
	probeCredit = 2 * probeEvery
	// suspectFor is how long a node whose connection closed (or that left
	// the topology) may stay silent before it is dropped: protoactor also
	// closes a live node's connection when stale events about its address
	// arrive, and the node's own pushes, on their own connection, say it
	// is there. A killed node whose port refuses is dropped before that.
	suspectFor = 3 * probeEvery
)

// MinNodeTimeout bounds Config.NodeTimeout from below: silence is counted
// in probe intervals, a late probe counting up to probeCredit, so a
// shorter timeout would drop a live node after one late probe.
const MinNodeTimeout = 2 * probeCredit

// probed counts one probe interval of silence for every node not heard
// from since the last probe, and drops the nodes silent for too long.
func (g *Gateway) probed(p *probe) {
	g.mu.Lock()
	defer g.mu.Unlock()
	credit := time.Duration(0)
	if !g.lastProbe.IsZero() {
		credit = min(max(p.sent.Sub(g.lastProbe), 0), probeCredit)
	}
	g.lastProbe = p.sent
	g.dropSilentRefusalsLocked(credit)
	// A dropped node's proxies are kept for the requests that may still
	// wait on them, none longer than configTimeout after the drop: past
	// that, nothing is left to end, and a node that never returns would
	// keep its old devices referenced.
	for id, n := range g.dropped {
		if time.Since(n.droppedAt) > configTimeout {
			delete(g.dropped, id)
		}
	}
	for id, n := range g.nodes {
		if n.heard {
			n.heard, n.silence, n.suspect = false, 0, false
			continue
		}
		n.silence += credit
		switch {
		case n.silence > g.cfg.NodeTimeout:
			g.dropNodeLocked(id, "its messages stopped arriving "+g.cfg.NodeTimeout.String()+" ago", false)
		case n.suspect && n.silence >= suspectFor:
			g.dropNodeLocked(id, "its connection closed and its messages stopped", false)
		}
	}
}

// topology follows the automanaged cluster: a node member that joins is
// subscribed to, one that leaves is dropped at once (a killed
// node's health port refuses at the next poll; a hung one's poll times
// out). The subscriptions' heartbeat still decides when a node returns.
func (g *Gateway) topology(t *cluster.ClusterTopology) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, m := range t.Left {
		if id, ok := nodeOf(m); ok {
			if n := g.nodes[id]; n != nil && n.addr == m.Address() {
				g.suspectLocked(n, "left the cluster")
			}
			if n := g.dropped[id]; n != nil && n.addr == m.Address() {
				g.watchDroppedLocked(n, "left the cluster")
			}
		}
	}
	clear(g.members)
	for _, m := range t.Members {
		if id, ok := nodeOf(m); ok {
			g.members[id] = true
			// A node back at a new address (a new process: each start
			// takes a fresh port) is no longer at the old one.
			for addr, tid := range g.targets {
				if tid == id && addr != m.Address() {
					delete(g.targets, addr)
				}
			}
			g.targets[m.Address()] = id // watch subscribes within SubscribeEvery
		}
	}
}

// Ready reports whether the gateway serves what its lab has, so that a
// client that connects once it is ready finds the lab's arms: every node it
// knows of (--peers, or the members the cluster showed) has sent its
// inventory and each device of it is listed (or was refused), and no node
// is handing its devices over from this gateway's previous process (a
// restart: "takeover pending" until that process has been silent for
// takeoverSilence; a refusal past pendingRefusalFor is a second live
// gateway, not waited for). A node that has not answered at all within
// NodeTimeout of the link's start is not waited for: one down when the
// gateway starts must not keep it unready. Once ready it stays so: nodes
// that come and go later are the lab's faults, not an unfinished start;
// only its own TLS certificate's end makes it unready again
// (link.certEnded), and a node refused for its build (or refusing this
// gateway for its own), for as long as that lasts: the lab then serves
// none of that node's arms while nothing else would say so, and the
// refusal ends by itself once both run one build (refuseBuild).
// detail says what it waits for, and once ready, every time, what the
// start listed and which nodes it did not wait for.
func (g *Gateway) Ready() (ready bool, detail string) {
	if detail, ended := g.lk.certEnded(time.Now()); ended {
		return false, detail
	}
	if ok, detail := g.Started(); !ok {
		return false, detail
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	var refused []string
	for id, r := range g.refusedBy {
		if r.build {
			refused = append(refused, id)
		}
	}
	if len(refused) == 0 {
		return true, g.readyDetail
	}
	sort.Strings(refused)
	why := make([]string, len(refused))
	for i, id := range refused {
		if r := g.refusedBy[id]; r.byGateway {
			why[i] = "this gateway refuses node " + id + ": " + r.reason
		} else {
			why[i] = "node " + id + " refuses this gateway: " + r.reason
		}
	}
	return false, strings.Join(why, "; ")
}

// Started is Ready's start alone: whether the gateway has done what its
// start waits for (each node it knows of listed, or silent past
// NodeTimeout, or refused), whatever is wrong with the lab since. The
// process's start waits for it, not for Ready: a node of another build
// must not keep the gateway from serving the rest of its lab, nor its
// operator from reading /readyz's word on it.
func (g *Gateway) Started() (started bool, detail string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ready {
		return true, g.readyDetail
	}
	if g.linkUp.IsZero() {
		return false, "the cluster link is starting"
	}
	refusedAt := map[string]bool{}
	for _, r := range g.refusedBy {
		if r.build && r.addr != "" {
			refusedAt[r.addr] = true
		}
	}
	var silent, adding, handing, refused []string
	for addr := range g.targets {
		var n *nodeState
		for _, m := range g.nodes {
			if m.addr == addr {
				n = m
			}
		}
		switch {
		case n == nil && refusedAt[addr]:
			// Refused for its build (and no node listed there since):
			// Ready names it while it lasts, and the start does not wait
			// on it.
			refused = append(refused, addr)
			continue
		case n == nil:
			silent = append(silent, addr)
			continue
		}
		for _, p := range g.proxies {
			if p.nodeID == n.id && p.dev.Load() == nil && !p.lost.Load() {
				adding = append(adding, n.id)
				break
			}
		}
	}
	now := time.Now()
	for id, r := range g.refusedBy {
		if !r.told && !r.build && now.Sub(r.since) <= pendingRefusalFor {
			handing = append(handing, id)
		}
	}
	sort.Strings(silent)
	sort.Strings(adding)
	sort.Strings(handing)
	switch {
	case len(adding) > 0:
		return false, "adding the devices of node " + strings.Join(adding, ", ")
	case len(handing) > 0:
		return false, "node " + strings.Join(handing, ", ") + " hands its devices over from this gateway's previous process"
	case len(silent) > 0 && now.Sub(g.linkUp) < g.cfg.NodeTimeout:
		return false, "waiting for the inventory of " + strings.Join(silent, ", ")
	}
	g.ready = true
	sort.Strings(refused)
	switch {
	case len(silent) > 0 || len(refused) > 0:
		g.readyDetail = fmt.Sprintf("the devices of %d of %d nodes listed at the start", len(g.targets)-len(silent)-len(refused), len(g.targets))
		if len(silent) > 0 {
			g.readyDetail += fmt.Sprintf("; silent for %v after it: %s", g.cfg.NodeTimeout, strings.Join(silent, ", "))
		}
		if len(refused) > 0 {
			g.readyDetail += "; refused for their build: " + strings.Join(refused, ", ")
		}
	case len(g.targets) == 1:
		g.readyDetail = "the devices of the node listed at the start"
	default:
		g.readyDetail = fmt.Sprintf("the devices of %d nodes listed at the start", len(g.targets))
	}
	return true, g.readyDetail
}

// suspectLocked marks a node whose connection closed or that left the
// topology: probed drops it unless its messages keep coming. A node whose
// port refuses a connection is gone for sure (a killed process; a hung one
// still has its port, a cut-off one does not answer): it is dropped at
// once, without waiting out suspectFor on a loaded machine.
func (g *Gateway) suspectLocked(n *nodeState, why string) {
	if n.suspect {
		return
	}
	g.log.Info().Str("node", n.id).Str("why", why).Msg("node suspect; dropped unless it is heard from")
	n.suspect, n.heard, n.silence = true, false, 0
	id, addr := n.id, n.addr
	// Dialled again while the node stays suspect: probed ends that
	// within suspectFor of silence.
	g.watchPort(addr, time.Time{}, func() bool {
		n := g.nodes[id]
		return n != nil && n.suspect && n.addr == addr
	}, func() { g.dropNodeLocked(id, "its connection closed and its port refuses", true) })
}

// watchDroppedLocked is suspectLocked for a node already dropped for its
// silence whose connection closed, or that left the topology (a hung
// process then killed): once its port refuses, the config requests its
// devices' proxies still wait on end (proxy.processGone). None waits
// longer than configTimeout after the drop, so neither does the watch.
func (g *Gateway) watchDroppedLocked(n *nodeState, why string) {
	until := n.droppedAt.Add(configTimeout)
	if n.suspect || !time.Now().Before(until) {
		return
	}
	g.log.Info().Str("node", n.id).Str("why", why).Msg("dropped node's process may have ended; its config requests end if its port refuses")
	n.suspect = true
	g.watchPort(n.addr, until, func() bool { return g.dropped[n.id] == n }, func() {
		delete(g.dropped, n.id)
		for _, p := range n.left {
			p.processGone()
		}
	})
}

// watchPort dials addr, on its own goroutine, until its port refuses a
// connection (then refused runs, under mu), or a dial gets no answer (a
// hung or cut-off host: its silence decides), or still (under mu) says
// the question is moot, or the gateway stops, or until passes (zero: no
// bound). A port that answers is dialled again every redialEvery: a
// killed process's connections can close before its listener does (the
// kernel closes its files one by one, and a loaded host preempts that).
// The caller holds mu.
func (g *Gateway) watchPort(addr string, until time.Time, still func() bool, refused func()) {
	if g.closing.Load() {
		return // Close is waiting for wg, or has
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := net.DialTimeout("tcp", addr, refusedWithin)
			switch {
			case err == nil:
				_ = c.Close()
			case errors.Is(err, syscall.ECONNREFUSED):
				g.mu.Lock()
				if still() {
					refused()
				}
				g.mu.Unlock()
				return
			default:
				return // no answer: its silence decides
			}
			g.mu.Lock()
			ok := still()
			g.mu.Unlock()
			if !ok || !until.IsZero() && !time.Now().Before(until) {
				return
			}
			select {
			case <-g.stop:
				return
			case <-time.After(redialEvery):
			}
		}
	}()
}

// refusedWithin bounds the dial that tells a killed node from a live one;
// redialEvery paces the dials to a suspect node that still answers.
const (
	refusedWithin = 250 * time.Millisecond
	redialEvery   = 10 * time.Millisecond
)

// nodeOf is the node id of a member that registered a node kind.
func nodeOf(m *cluster.Member) (string, bool) {
	for _, k := range m.Kinds {
		if id, ok := strings.CutPrefix(k, NodeKind("")); ok {
			return id, true
		}
	}
	return "", false
}

// configRequest asks a device's node, and waits for its answer: through
// the device's cluster identity (its node's kind and its UUID) while the
// node is a cluster member, else to the node's actor by address (static
// membership; or a node the cluster expelled, which protoactor never lets
// back in under the same member id, but whose link works).
//
// It waits wait (configTimeout at most), no longer than until the gateway stops
// (its shutdown must not wait on a hung node: the sync of a device's
// config asks one key after another), and no longer than until the node's
// process is known gone (p.gone): nothing will answer then, and a client
// waited out the full timeout for a node the gateway had dropped a few
// milliseconds after its SIGKILL. protoactor's cluster request alone does
// not keep the bound: its identity lookup waits up to 5 s for the member's
// activator, and checks the deadline only between attempts.
func (g *Gateway) configRequest(p *proxy, m *wire.ConfigRequest, wait time.Duration) (any, error) {
	// Dated, so that a node does not apply what reaches it after this
	// gateway gave up (configTimeout); a retry keeps the first send's date.
	m.GatewayAddress, m.SentUnixNs = g.addr, time.Now().UnixNano()
	g.mu.Lock()
	member := g.cl != nil && g.members[p.nodeID]
	g.mu.Unlock()
	call := g.startCall()
	if call == nil {
		return nil, errGatewayStopping
	}
	type answer struct {
		r   any
		err error
	}
	done := make(chan answer, 1) // the request ends on its own after an early return
	go func() {
		defer g.endCall(call)
		var a answer
		sender := callSender{RootContext: g.sys.Root, g: g, call: call}
		if member {
			a.r, a.err = g.cl.Request(p.info.UUID, NodeKind(p.nodeID), m, cluster.WithTimeout(configTimeout), cluster.WithRetryCount(2), cluster.WithContext(sender))
		} else {
			a.r, a.err = sender.RequestFuture(p.node, m, configTimeout).Result()
		}
		if err, ok := a.r.(error); ok { // a future Close ended
			a.r, a.err = nil, err
		}
		done <- a
	}()
	timeout := time.NewTimer(min(wait, configTimeout))
	defer timeout.Stop()
	select {
	case a := <-done:
		return a.r, a.err
	case <-p.gone:
		return nil, errNodeGone
	case <-g.stop:
		return nil, errGatewayStopping
	case <-timeout.C:
		return nil, actor.ErrTimeout // as the request's own future says it
	}
}

// configCall is one config request's exchange with a node: the future its
// answer is awaited on (the latest, a cluster request retrying), which
// Close ends so that the request's goroutine does not outlive the gateway
// waiting on an answer nobody would read.
type configCall struct {
	future *actor.Future // guarded by Gateway.callsMu
}

// startCall registers a config request's goroutine; nil once the gateway
// closes.
func (g *Gateway) startCall() *configCall {
	g.callsMu.Lock()
	defer g.callsMu.Unlock()
	if g.callsClosed {
		return nil
	}
	c := &configCall{}
	if g.calls == nil {
		g.calls = map[*configCall]struct{}{}
	}
	g.calls[c] = struct{}{}
	g.callsWG.Add(1)
	return c
}

func (g *Gateway) endCall(c *configCall) {
	g.callsMu.Lock()
	delete(g.calls, c)
	g.callsMu.Unlock()
	g.callsWG.Done()
}

// endCalls ends the futures the config requests wait on, and keeps any
// new one from being sent: each request's goroutine then returns at once,
// its caller having had errGatewayStopping already.
func (g *Gateway) endCalls() {
	g.callsMu.Lock()
	g.callsClosed = true
	var futures []*actor.Future
	for c := range g.calls {
		if c.future != nil {
			futures = append(futures, c.future)
		}
	}
	g.callsMu.Unlock()
	for _, f := range futures {
		// A future that completed meanwhile has left the registry: a send
		// to it would be a dead letter.
		if _, ok := g.sys.ProcessRegistry.GetLocal(f.PID().Id); ok {
			g.sys.Root.Send(f.PID(), errGatewayStopping)
		}
	}
}

// waitCalls waits for the config requests' goroutines, within at most:
// one still in protoactor's identity lookup (a device's grain whose PID
// the cluster does not have cached, on a hung node) waits on a future of
// protoactor's own, up to 5 s, that nothing can end.
func (g *Gateway) waitCalls(within time.Duration) {
	done := make(chan struct{})
	go func() {
		g.callsWG.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(within):
		g.log.Warn().Dur("waited", within).Msg("cluster: a config request still waits on protoactor's identity lookup at the gateway's stop")
	}
}

// callSender is the sender of one config request: it keeps the future it
// makes on the call, for Close to end, and sends nothing once the gateway
// closes (the future then ends at once).
type callSender struct {
	*actor.RootContext
	g    *Gateway
	call *configCall
}

// RequestFuture is actor.RootContext's, with the future kept on the call.
func (s callSender) RequestFuture(pid *actor.PID, message any, timeout time.Duration) *actor.Future {
	f := actor.NewFuture(s.ActorSystem(), timeout)
	s.g.callsMu.Lock()
	closed := s.g.callsClosed
	s.call.future = f
	s.g.callsMu.Unlock()
	if closed {
		s.Send(f.PID(), errGatewayStopping)
		return f
	}
	s.RequestWithCustomSender(pid, message, f.PID())
	return f
}

// dropNodeLocked forgets a node; its devices fail and leave. dead: the
// node's process is gone for sure (its port refuses), so the config
// requests still waiting for its answer get none (proxy.processGone).
// A node dropped for its silence alone is kept in dropped: it may be hung
// and resume, so its requests wait until it is known gone.
func (g *Gateway) dropNodeLocked(id, why string, dead bool) {
	g.log.Warn().Str("node", id).Str("why", why).Msg("node lost; its devices leave")
	n := g.nodes[id]
	delete(g.nodes, id)
	// The devices' device-failed events say why, as the log line does: a
	// killed node reads otherwise than a hung or refusing one.
	cause := fmt.Errorf("cluster: node %s dropped (%s): its devices return when it answers again (%w)", id, why, hw.ErrGone)
	var left []*proxy
	for _, p := range g.proxies {
		if p.nodeID == id {
			p.leave(cause)
			if dead {
				p.processGone()
			}
			left = append(left, p)
		}
	}
	delete(g.dropped, id)
	if dead || n == nil {
		return
	}
	n.left = left
	if g.dropped == nil {
		g.dropped = map[string]*nodeState{}
	}
	closed := n.suspect // its connection closed before: its port may refuse yet
	n.suspect, n.droppedAt = false, time.Now()
	g.dropped[id] = n
	if closed {
		g.watchDroppedLocked(n, "its connection had closed")
	}
}

// nodeLeft takes a node's goodbye at its planned stop (wire.Leaving): its
// devices leave as unplugged (device-disconnected, no device-failed), and
// the node is forgotten, not watched as lost; its next process joins as
// any node does. A goodbye of a process the gateway no longer serves the
// node's devices from changes nothing.
func (g *Gateway) nodeLeft(m *wire.Leaving) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if d := g.dropped[m.NodeId]; d != nil && d.addr == m.Address {
		for _, p := range d.left {
			p.processGone()
		}
		delete(g.dropped, m.NodeId)
	}
	n := g.nodes[m.NodeId]
	if n == nil || n.addr != m.Address {
		return
	}
	g.log.Info().Str("node", n.id).Str("addr", n.addr).Msg("node stopped; its devices leave")
	for _, p := range g.proxies {
		if p.nodeID == n.id {
			if !p.lost.Load() {
				p.stopped.Store(true) // before leave's lost: Exchange reads them so
				p.leave(nil)
			}
			p.processGone()
		}
	}
	delete(g.nodes, n.id)
}

func (g *Gateway) nodeLocked(id string) *nodeState {
	n := g.nodes[id]
	if n == nil {
		n = &nodeState{id: id}
		g.nodes[id] = n
	}
	n.lastSeen, n.heard = time.Now(), true
	return n
}

// terminated drops the node whose actor (or connection) is gone.
func (g *Gateway) terminated(who *actor.PID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.nodes {
		if n.pid != nil && n.pid.Equal(who) {
			g.suspectLocked(n, "its connection closed")
		}
	}
	for _, n := range g.dropped {
		if n.pid != nil && n.pid.Equal(who) {
			g.watchDroppedLocked(n, "its connection closed")
		}
	}
}

// inventory reconciles the gateway's devices with one node's list. It
// returns the node's PID when the node just joined.
// refusal is what a gateway keeps of one node's refusals of its
// subscription.
type refusal struct {
	since time.Time // the first of the refusals in a row
	told  bool      // logged and published (lab-node-refused)
	// build is set for a refusal for another build (the node's
	// protocol.CodeVersionMismatch, or the gateway's own of the node's
	// inventory), and reason to what it said: /readyz names the node
	// while it lasts (Ready).
	build  bool
	reason string
	// byGateway: the gateway refused the node's inventory (refuseBuild),
	// not the node the gateway's subscription. addr is the node's remote
	// address, where the refusal says it: Started does not wait on it.
	byGateway bool
	addr      string
	// heartbeat is the node's refusals', judged by probes as a node's
	// messages are (probed).
	heartbeat
}

// pendingRefusalFor is how long a node may answer "takeover pending" (the
// old process at this address has not been silent takeoverSilence yet)
// before the gateway takes it for a second live process after all: a node
// that says so each time (an older build) or whose judgement a stalled
// old process delays. Past takeoverSilence, by a margin for a loaded node.
const pendingRefusalFor = takeoverSilence + 2*time.Second

// subscribeRefused takes a node's refusal of this process's subscription:
// another process at this gateway's address holds the node, so the node's
// devices leave (the node takes none of this process's commands) until
// the node sends this process its inventory. A second live process there
// (protocol.CodeDeviceBusy, or refusals past pendingRefusalFor) is logged
// and published once; a restart waiting out its old process's silence is
// not: the gateway subscribes again every round regardless. A refusal of
// another process at the address is not this one's.
func (g *Gateway) subscribeRefused(m *wire.SubscribeRefused) {
	if m.ProcessId != g.process {
		return
	}
	now := time.Now()
	g.mu.Lock()
	if n := g.nodes[m.NodeId]; n != nil && m.Address != "" && n.addr != m.Address {
		// Another process of the node, at another address, than the one
		// listed: an earlier process's refusal heard late says nothing of
		// the node served now. (Should the listed one be the earlier,
		// hung, it is dropped for its silence within NodeTimeout, and the
		// new process's next refusal, a round later, is heard.)
		g.mu.Unlock()
		return
	}
	r := g.refusedBy[m.NodeId]
	if r == nil {
		if g.refusedBy == nil {
			g.refusedBy = map[string]*refusal{}
		}
		r = &refusal{since: now}
		g.refusedBy[m.NodeId] = r
	}
	r.heard = true
	if build := protocol.Code(m.Code) == protocol.CodeVersionMismatch; build != r.build || r.byGateway {
		// Another kind of refusal than the last (a node restarted with
		// another build): news again.
		r.build, r.told, r.byGateway = build, false, false
	}
	r.reason, r.addr = m.Error, m.Address
	if g.nodes[m.NodeId] != nil {
		g.dropNodeLocked(m.NodeId, "it refused this gateway's subscription", false)
	}
	live := protocol.Code(m.Code) != protocol.CodeUnavailable || now.Sub(r.since) > pendingRefusalFor
	tell := live && !r.told
	r.told = r.told || tell
	g.mu.Unlock()
	if !tell {
		return
	}
	l := g.log.Error().Str("node", m.NodeId).Str("code", m.Code).Str("addr", g.addr)
	if r.build {
		l = l.Str("build", g.cfg.Build).Str("node_build", m.Build)
	}
	l.Msg("cluster: node refused this gateway's subscription: " + m.Error)
	g.svc.Activity().Publish(event.LabNodeRefused(m.NodeId, m.Error))
}

// refuseBuild refuses the inventory of a node that states another build
// than the gateway's (or none: a node older than the field, which takes
// the gateway's subscriptions without knowing their build): none of its
// devices is served (a node of this gateway's build before, restarted with
// another, loses them), it is logged at error level and published as
// lab-node-refused once, and /readyz names it, until an inventory of this
// gateway's build comes, or its inventories stop for GatewayTimeout (the
// node is gone, or no longer subscribed to). g.mu must not be held.
func (g *Gateway) refuseBuild(m *wire.Inventory) {
	why := buildMismatch(
		fmt.Sprintf("gateway %s runs %s", g.cfg.NodeID, buildName(g.cfg.Build)),
		fmt.Sprintf("node %s at %s runs %s", m.NodeId, m.Address, buildName(m.Build)))
	if m.Build == "" {
		why += "; that node does not check builds, so it cannot refuse this gateway itself: the gateway refuses its inventory"
	}
	g.mu.Lock()
	r := g.refusedBy[m.NodeId]
	if r == nil || !r.build || !r.byGateway {
		if g.refusedBy == nil {
			g.refusedBy = map[string]*refusal{}
		}
		r = &refusal{since: time.Now(), build: true, byGateway: true}
		g.refusedBy[m.NodeId] = r
	}
	r.addr = m.Address
	r.heard = true
	tell := !r.told || r.reason != why
	r.told, r.reason = true, why
	if g.nodes[m.NodeId] != nil {
		g.dropNodeLocked(m.NodeId, "it runs "+buildName(m.Build)+", this gateway "+buildName(g.cfg.Build), false)
	}
	g.mu.Unlock()
	if !tell {
		return
	}
	g.log.Error().Str("node", m.NodeId).Str("code", string(protocol.CodeVersionMismatch)).Str("node_addr", m.Address).
		Str("build", g.cfg.Build).Str("node_build", m.Build).Msg("cluster: node's inventory refused: " + why)
	g.svc.Activity().Publish(event.LabNodeOfAnotherBuild(m.NodeId, why))
}

// refusedForBuild says whether the node is refused for its build now.
func (g *Gateway) refusedForBuild(nodeID string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.refusedBy[nodeID]
	return r != nil && r.build
}

// dropSilentRefusalsLocked forgets the refusals of a node that stopped
// sending them for GatewayTimeout (gone for good, or no longer
// subscribed to): should it refuse again later, that is news again.
// credit is the probe interval probed counts.
func (g *Gateway) dropSilentRefusalsLocked(credit time.Duration) {
	for id, r := range g.refusedBy {
		if r.silentPast(credit, GatewayTimeout) {
			delete(g.refusedBy, id)
		}
	}
}

func (g *Gateway) inventory(m *wire.Inventory) (joined *actor.PID) {
	if m.ProcessId != 0 && m.ProcessId != g.process {
		// The node answers another process that advertises this one's
		// address (its refusal of this one's subscription says so).
		return nil
	}
	if !SameBuild(m.Build, g.cfg.Build) {
		g.refuseBuild(m)
		return nil
	}
	g.mu.Lock()
	if r, ok := g.refusedBy[m.NodeId]; ok {
		delete(g.refusedBy, m.NodeId)
		if r.told {
			g.log.Info().Str("node", m.NodeId).Msg("cluster: node took this gateway's subscription after refusing it")
		}
	}
	n := g.nodeLocked(m.NodeId)
	if n.addr != m.Address {
		if n.addr != "" {
			g.log.Info().Str("node", n.id).Str("was", n.addr).Str("now", m.Address).Msg("node restarted")
		}
		// A new process of the node (a fresh address per start): the
		// devices of an old one leave with it and return with this one's
		// inventory, their config read afresh, and nothing the old one
		// was asked will be answered. So also for a node dropped for its
		// silence before (it is new in nodes then).
		for _, p := range g.proxies {
			if p.nodeID == n.id && p.node.Address != m.Address {
				if !p.lost.Load() {
					p.leave(fmt.Errorf("cluster: node %s restarted; its devices return with its new process (%w)", n.id, hw.ErrGone))
				}
				p.processGone()
			}
		}
		if d := g.dropped[n.id]; d != nil && d.addr != m.Address {
			for _, p := range d.left {
				p.processGone()
			}
		}
		delete(g.dropped, n.id)
		n.addr, n.pid = m.Address, actor.NewPID(m.Address, nodeActorName)
		n.suspect = false
		joined = n.pid
		g.log.Info().Str("node", n.id).Str("addr", n.addr).Int("devices", len(m.Devices)).Msg("node joined")
	}
	n.httpURL = m.HttpUrl
	listed := map[string]bool{}
	var news []newcomer
	wanted := map[string]*wire.Device{}
	for _, d := range m.Devices {
		if why := inventoryFault(d, listed); why != "" {
			g.log.Warn().Str("node", n.id).Str("uuid", d.Uuid).Str("device_id", d.Id).Str("why", why).Msg("node's inventory lists a device the gateway cannot serve; left out")
			continue
		}
		listed[d.Uuid] = true
		if _, ok := g.proxies[d.Uuid]; !ok {
			id := d.Id
			if !hw.IDSpelled(hw.Kind(d.Kind), id) {
				id = "" // assignIDs derives one from the UUID
			}
			news = append(news, newcomer{uuid: d.Uuid, id: id, kind: hw.Kind(d.Kind)})
			wanted[d.Uuid] = d
		}
	}
	for uuid, p := range g.proxies {
		if p.nodeID == n.id && !listed[uuid] {
			// Left the node: unplugged there (device-disconnected here
			// alone), or failed there, which the node's own device-failed,
			// forwarded, says.
			p.leave(fmt.Errorf("cluster: node %s no longer lists the device (%w)", n.id, hw.ErrUnplugged))
			g.forgetRejectionsLocked(n.id, p.nodeDeviceID)
		}
	}
	if len(news) > 0 {
		// Ids of proxies still waiting to be added count as used too.
		used := map[hw.Kind]map[string]bool{}
		take := func(k hw.Kind, id string) {
			if used[k] == nil {
				used[k] = map[string]bool{}
			}
			used[k][id] = true
		}
		for _, d := range g.svc.Devices().All() {
			take(d.Info.Kind, d.ID)
		}
		for _, p := range g.proxies {
			take(p.info.Kind, p.info.ID)
		}
		// So do the ids the service keeps for its own absent devices
		// (remembered, with their stored config, served before): a proxy
		// on one would load that device's config, and the device, back,
		// find its id held. A newcomer's own (its config stored here,
		// under an id given before) stays its.
		newUUIDs := map[hw.Kind]map[string]bool{}
		for _, nc := range news {
			if newUUIDs[nc.kind] == nil {
				newUUIDs[nc.kind] = map[string]bool{}
			}
			newUUIDs[nc.kind][nc.uuid] = true
		}
		for k, uuids := range newUUIDs {
			for id, uuid := range g.svc.LocalIDHolders(k) {
				if !uuids[uuid] {
					take(k, id)
				}
			}
		}
		// Saved by the adds goroutine before the first of these joins
		// the service (saveIDs), so no client sees an id a restarted
		// gateway could give another device.
		g.idsDirty = true
		for uuid, id := range assignIDs(used, g.ids, news, time.Now()) {
			p := newProxy(g, n, wanted[uuid], id)
			g.proxies[uuid] = p
			g.adds.push(p)
		}
	}
	for _, p := range g.proxies {
		if p.nodeID == n.id {
			p.nodeLeaseNs.Store(int64(m.LeaseMs) * int64(time.Millisecond))
		}
	}
	rejected := g.inventoryRejectionsLocked(m, listed)
	g.mu.Unlock()
	for _, e := range rejected {
		g.svc.Activity().Publish(e)
	}
	return joined
}

// inventoryFault says why a node's inventory entry cannot become a device
// of the gateway ("" if it can): the UUID is the device's identity across
// the lab, so one without it, or listed twice (listed holds the entries
// taken so far), would stand for no device or for two; and the kind picks
// the routes and frames it is served under.
func inventoryFault(d *wire.Device, listed map[string]bool) string {
	switch k := hw.Kind(d.Kind); {
	case d.Uuid == "":
		return "no UUID"
	case listed[d.Uuid]:
		return "its UUID is listed twice"
	case d.Kind > 255 || k != hw.KindArm && k != hw.KindGrip:
		return fmt.Sprintf("unknown kind %d", d.Kind)
	}
	return ""
}

// firstStateWait bounds how long a device's addition waits for its node's
// first state: many pushes (500 a second) and more than two leases.
const firstStateWait = 250 * time.Millisecond

// add adds a proxy an inventory made to the service, off the actor, and
// then copies its config from the node. A proxy whose node went meanwhile
// is not added.
func (g *Gateway) add(p *proxy) {
	// Listed once the node's first state is here: listed before, a client
	// read the arm at the origin, not calibrated, while its commands moved
	// it (tourlab2). A node whose pushes do not come within firstStateWait
	// has its devices listed anyway, their frames warning state_stale.
	select {
	case <-p.firstState:
	case <-time.After(firstStateWait):
	case <-g.stop:
	}
	if p.lost.Load() {
		g.forget(p)
		return
	}
	g.saveIDs()
	// Not waited for: a device back while the config write it left with
	// is still on a slow disk is added once that write returned, and the
	// devices behind it in adds must not wait as long (review36). One
	// device's additions keep their order: its next proxy is made only
	// once this one is forgotten, after its addition was answered.
	g.svc.AddDeviceThen(p, false, func(dev *actors.Device, err error) {
		if err != nil {
			g.log.Error().Err(err).Str("node", p.nodeID).Str("uuid", p.info.UUID).Msg("could not add a node's device")
			g.forget(p)
			return
		}
		p.dev.Store(dev)
		// On its own goroutine: the node's answers must not hold up the
		// next node's devices. Under mu, as Close stops wg taking more;
		// once it did, the copy is cut short at once (every entry unsure).
		g.mu.Lock()
		closing := g.closing.Load()
		if !closing {
			g.syncConfigSoon(p, dev)
		}
		g.mu.Unlock()
		if closing {
			g.syncConfig(p, dev)
		}
	})
}

// syncConfigSoon has syncConfig copy p's config from the node on a
// goroutine of its own, one sync of p at a time: one asked for while
// another runs runs after it (once for any number asked meanwhile), so
// that a read sent before a change on the node is never copied in after
// a read sent after it.
func (g *Gateway) syncConfigSoon(p *proxy, dev *actors.Device) {
	if p.syncsAsked.Add(1) != 1 {
		return // the running sync runs again
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			asked := p.syncsAsked.Load()
			g.syncConfig(p, dev)
			if p.syncsAsked.CompareAndSwap(asked, 0) {
				return
			}
		}
	}()
}

// syncedKeys are the entries of dev a sync copies from the node: the
// device-global ones (sessions live on the gateway, and so does their
// config) that apply to its type (a grip has no force output, nor its
// entries).
func syncedKeys(dev *actors.Device) []protocol.Key {
	var keys []protocol.Key
	for _, k := range protocol.Keys() {
		if !k.SessionScoped() && k.AppliesTo(dev.Type) {
			keys = append(keys, k)
		}
	}
	return keys
}

// syncConfig copies the node's device-global config into the gateway's
// device, so a device that comes back comes back with its config. What it
// reads is applied on the gateway only (the node has it); a client's set or
// reset meanwhile goes to the node as always, and a value read before that
// write started is not applied over it (proxy.copyIn).
func (g *Gateway) syncConfig(p *proxy, dev *actors.Device) {
	// Reads go to the node until every entry was read (proxy.ReadConfig);
	// one that could not be read or copied is left unsure, so reads of it
	// still go to the node, and the first it answers is copied in (the
	// gateway's copy, the default or an older process's value, answered
	// them until the device rejoined).
	defer p.synced.Store(true)
	for _, k := range syncedKeys(dev) {
		if p.lost.Load() || g.closing.Load() {
			// Cut short (the gateway stops and serves on for a moment, or
			// the device left): the entries not read stay unsure, so a
			// read answers the node's value or 503, never the gateway's
			// unread copy.
			p.markUnsure(k)
			continue
		}
		mark := p.markRead(k)
		r, err := g.configRequest(p, &wire.ConfigRequest{Uuid: p.info.UUID, Op: "get", Key: k.Path()}, configTimeout)
		reply, ok := r.(*wire.ConfigReply)
		if err == nil && ok && reply.Error != "" {
			err = errors.New(reply.Error)
		}
		if err != nil || !ok {
			g.log.Warn().Err(err).Str("node", p.nodeID).Str("device_id", dev.ID).Str("key", k.Path()).Msg("could not read a node's device config; reads of it ask the node")
			p.markUnsure(k)
			continue
		}
		// Applied whatever the gateway's copy holds: reading that copy
		// would ask the node (proxy.ReadConfig), and the device writes
		// nothing for a value it has already.
		e, pe := protocol.DecodeEntry(k, reply.Json, "")
		if pe != nil {
			g.log.Warn().Err(pe).Str("node", p.nodeID).Str("key", k.Path()).Msg("node's config entry does not decode; reads of it ask the node")
			p.markUnsure(k)
			continue
		}
		if p.lost.Load() {
			p.markUnsure(k) // and the rest, above
			continue
		}
		p.readWarnings(k, warningsFromWire(reply.Warnings), mark)
		if err := p.copyIn(dev, k, e, mark); err != nil {
			g.log.Warn().Err(err).Str("device_id", dev.ID).Str("key", k.Path()).Msg("could not apply a node's config entry; reads of it ask the node")
		}
	}
}

// loadIDs reads the ids a gateway gave out before it restarted; none
// without a state directory, or when the document is unreadable (logged:
// ids are then first-come, as on a first start). kept says the document
// could not be read at all (not a corrupt one, which the store moved
// aside): this process must not overwrite what it could not read.
func loadIDs(svc *actors.Service, log zerolog.Logger) (m idMemory, kept bool) {
	// Read keeping what a newer build wrote there and this one does not
	// know: saveIDs writes it back.
	var f actors.StoredIDs
	if _, err := svc.LoadDocument(idsDocument, &f); err != nil {
		var corrupt *store.CorruptError
		// A corrupt file the store could not move aside stays, and the
		// store refuses to write over it: saveIDs need not try.
		kept = !errors.As(err, &corrupt) || corrupt.MovedTo == ""
		log.Error().Err(err).Bool("left_as_is", kept).Msg("cluster gateway: remembered device ids unreadable; ids are first-come until the gateway restarts with them readable")
		return idMemory{}, kept
	}
	return memoryOf(f.IDsFile, time.Now()), false
}

// saveIDs writes the remembered ids if they changed since the last write,
// off the gateway's lock: durably before a device with a new id joins the
// service (about 4 ms once per inventory that brings newcomers, on the adds
// goroutine). A failed write is logged and tried again with the next one;
// the device joins anyway (a lab whose state directory cannot be written
// still runs), and its id is then first-come after a restart. Nothing is
// written over a document that could not be read (idsKept).
func (g *Gateway) saveIDs() {
	if g.idsKept {
		return
	}
	g.idsSaveMu.Lock()
	defer g.idsSaveMu.Unlock()
	g.mu.Lock()
	if !g.idsDirty {
		g.mu.Unlock()
		return
	}
	g.idsDirty = false
	g.ids.prune(time.Now(), func(uuid string) bool {
		p := g.proxies[uuid]
		return p != nil && !p.lost.Load()
	})
	f := g.ids.file()
	g.mu.Unlock()
	if err := g.svc.SaveDocument(idsDocument, f); err != nil {
		g.log.Error().Err(err).Msg("cluster gateway: could not remember the device ids; a restart may give a device another's id")
		g.mu.Lock()
		g.idsDirty = true
		g.mu.Unlock()
	}
}

// refreshIDs marks every connected device's id as seen now and saves, so
// that the reservation of a device connected for longer than
// idReservedFor does not run out before a gateway restart.
func (g *Gateway) refreshIDs() {
	now := time.Now()
	g.mu.Lock()
	for uuid, p := range g.proxies {
		if !p.lost.Load() {
			g.ids.set(p.info.Kind, uuid, rememberedID{ID: p.info.ID, Seen: now})
			g.idsDirty = true
		}
	}
	g.mu.Unlock()
	g.saveIDs()
}

// startRefresh runs refreshIDs in its own goroutine, unless the last one
// is still running: a save hung on a slow or dead disk would otherwise
// gather one more goroutine every idsRefreshEvery. It says whether it
// started one.
func (g *Gateway) startRefresh() bool {
	if !g.refreshing.CompareAndSwap(false, true) {
		return false
	}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.refreshing.Store(false)
		g.refreshIDs()
	}()
	return true
}

// forget drops p from the map, unless another proxy replaced it.
func (g *Gateway) forget(p *proxy) {
	g.mu.Lock()
	if g.proxies[p.info.UUID] == p {
		delete(g.proxies, p.info.UUID)
	}
	g.mu.Unlock()
}

func (g *Gateway) states(m *wire.StateBatch) {
	now, arrived := time.Now(), g.clock.Now()
	g.mu.Lock()
	// When the node read the states, on the gateway's wall clock: the
	// mean of the node's estimate (gateway less node, low by the shortest
	// delay to the node) and the gateway's (high by the shortest delay
	// from it). Each state says how old it was then (setState).
	read := m.SentUnixNs
	if n := g.nodes[m.NodeId]; n != nil {
		n.lastSeen, n.heard = now, true
		n.offset.sample(m.SentUnixNs, now)
		read += (m.OffsetNs - n.offset.ns()) / 2
	}
	// Only how long before its arrival the node read it is the wall
	// clock's to say; from the arrival on, the states age on the loop
	// clock, which a step of the wall clock does not move.
	readLoop := arrived - transitNs(now.UnixNano(), read)
	// A batch from a node not (or no longer) known waits for its
	// inventory: its devices have no proxies yet.
	for _, s := range m.States {
		if p := g.proxies[s.Uuid]; p != nil && p.nodeID == m.NodeId {
			p.setState(s, readLoop, m.SentUnixNs)
		}
	}
	g.mu.Unlock()
}

// transitNs is how long before nowNs (wall clock) a batch read at readNs
// was read: none for a read time after now (the offset estimate's error),
// and at most maxPushedAgeNs, so that no time a node sent overflows.
func transitNs(nowNs, readNs int64) int64 {
	switch {
	case readNs >= nowNs:
		return 0
	case readNs <= nowNs-maxPushedAgeNs:
		return maxPushedAgeNs
	}
	return nowNs - readNs
}

// relayedLapseNewsNs is how much of its lease a gateway's session must
// have left for the node's lapse of its control to be news (see event): half
// the shortest lease, beyond the two ends' ticks and the event's way back.
const relayedLapseNewsNs = int64(protocol.LeaseMinMs) * int64(time.Millisecond) / 2

// event publishes a node's event on the gateway's activity channel, with
// the device named by its gateway id and, for an event about this
// gateway's control of the arm on the node (a session_id that is its
// owner there), the session of this gateway that commanded the arm last.
func (g *Gateway) event(m *wire.Event) {
	if r, ok := decodeRejection(m.Json); ok {
		if e, news := g.relayedRejection(m, r); news {
			g.svc.Activity().Publish(e)
		}
		return
	}
	var e event.Event
	if err := json.Unmarshal(m.Json, &e); err != nil {
		g.log.Warn().Err(err).Str("node", m.NodeId).Msg("node's event does not decode; dropped")
		return
	}
	var data map[string]any
	dec := json.NewDecoder(bytes.NewReader(e.Data))
	dec.UseNumber() // owners from 2^62 on lose their low bits as float64
	if dec.Decode(&data) == nil {
		changed := false
		if e.Name == event.NameStoredEntryRejected {
			// A profile's entries, read at a pick on the node.
			data["node_id"], changed = m.NodeId, true
		}
		if id, ok := data["device_id"].(string); ok {
			p := g.nodeProxy(m.NodeId, id)
			if p != nil && p.info.ID != id {
				data["device_id"], changed = p.info.ID, true
			}
			if n, ok := data["session_id"].(json.Number); ok && p != nil {
				if owner, err := strconv.ParseUint(string(n), 10, 64); err == nil && owner >= actors.FirstRemoteOwner {
					if s := p.commander.Load(); s != 0 {
						data["session_id"], changed = s, true
						if e.Name == event.NameControlLeaseExpired && !p.lapseNews(s) {
							// The node's lease on the gateway's commands
							// ends with the session's own here (it is sent
							// what is left of it): a quiet session's lapse
							// is told by this gateway, with what became of
							// its effects, and the node's is the same end
							// told twice, wrongly promising the effects
							// back, whichever arrives first. The node's is
							// news only while the session's lease here runs
							// on (its commands stalled on the link), or
							// once the gateway took the arm from it for the
							// node's other holder, telling it nothing.
							return
						}
					}
				}
			}
		}
		if changed {
			if b, err := inTableOrder(e.Name, data); err == nil {
				e.Data = b
			}
		}
	}
	g.svc.Activity().Publish(e)
}

// nodeProxy is the proxy of the device the node nodeID calls id, nil if
// there is none.
func (g *Gateway) nodeProxy(nodeID, id string) *proxy {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.proxies {
		if p.nodeID == nodeID && p.nodeDeviceID == id {
			return p
		}
	}
	return nil
}

// gatewayID is the gateway's id of the device a node calls id.
func (g *Gateway) gatewayID(nodeID, id string) string {
	if p := g.nodeProxy(nodeID, id); p != nil {
		return p.info.ID
	}
	return id
}
