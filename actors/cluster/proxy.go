package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/cluster/wire"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/protocol/histogram"
)

// keepAlive is how often an unchanged non-idle command is sent again, well
// inside the node's lease, so a steady force does not lapse on the node.
const keepAlive = 20 * time.Millisecond

// Bounds of a node's lease on forwarded commands (Config.LeaseMs): at least
// two keep-alives, so one late or lost command does not lapse a steady
// force, and at most the longest lease a session may ask for
// (protocol.LeaseMaxMs), so a lost gateway's force ends as soon as a quiet
// client's would.
const (
	MinLeaseMs = int(2 * keepAlive / time.Millisecond)
	MaxLeaseMs = protocol.LeaseMaxMs
)

// MaxPushHz bounds how often a node pushes its devices' states
// (Config.PushHz): the fastest loop rate.
const MaxPushHz = 8000

// proxy is the gateway's driver of a device on a node: the state comes from
// the node's pushed batches, the command goes to the node one-way. Exchange
// never waits on the network.
type proxy struct {
	lost atomic.Bool
	// stopped says lost is the node's planned stop (its goodbye): the
	// loop's exchanges do not fail the device on its way out (Exchange).
	stopped atomic.Bool
	// currentAtNs is sampledNs of the newest state, 0 before the first
	// (StateStaleness, read by every frame that carries the device).
	currentAtNs atomic.Int64
	// commander is the last session of this gateway whose commands the
	// proxy sent the node (0: none yet): what a node's event about the
	// gateway's control of the arm (its owner) names here.
	commander atomic.Uint64
	// contested is the session mirrorLocalHold took the register from
	// (the node gave the arm to another holder), until the proxy sends
	// a session's commands again or the node's lapse of that session's
	// control is told (0: none). The gateway told it no lapse of its own:
	// the node's is news to it (Gateway.event).
	contested atomic.Uint64
	// madeNs is when the proxy was made (g.clock): a device whose node
	// has pushed no state yet is as stale as the time since then.
	madeNs int64
	// firstState is closed by the node's first state (setState): the
	// gateway lists the device once it is here (Gateway.add).
	firstState chan struct{}
	// nodeLeaseNs is the node's lease from its latest inventory, 0 when it
	// does not say (StateStaleness).
	nodeLeaseNs atomic.Int64
	g           *Gateway
	nodeID      string
	node        *actor.PID
	info        hw.Info
	// nodeDeviceID is the id the node knows the device by (info.ID differs
	// after a short-id collision).
	nodeDeviceID string
	// storedRejected is the device's stored_rejected as the node's last
	// inventory stated it, from the node's process storedRejectedBy
	// (under g.mu): the node sends it with every inventory, 4 a second,
	// and the gateway reads it again only when either changed
	// (inventoryRejectionsLocked).
	storedRejected   [][]byte
	storedRejectedBy uint64

	// cfgMu guards writes: per device-global key, the client's sets and
	// resets through the gateway. It is never held across a request or a
	// durable write: one hung disk write must not hold up the device's
	// other entries.
	cfgMu  sync.Mutex
	writes map[protocol.Key]*keyWrites
	// warned holds, per device-global key, the warnings the node last
	// answered for it (its own GET's: a stored value of it the node did
	// not accept), under cfgMu. Reads of a key with any ask the node
	// (ReadConfig), which alone makes them: a write of the entry, through
	// the gateway or on the node, or of its placement's other entry, may
	// have cleared them, and the next read says so.
	warned map[protocol.Key][]protocol.Error
	// unsure has bit k set while the gateway's copy of key k may be older
	// than the node's value: a client write of it the node did not answer
	// (503: it may have applied it), one the gateway's copy then failed to
	// take, writes that overlapped (they may reach the copy in another
	// order than the node), a value the sync could not read or copy in.
	// Reads of k then go to the node (ReadConfig) and copy its answer in,
	// until that or a later write leaves the copy the node's. An atomic,
	// so that a session's tick path can ask (ConfigUnsure) without cfgMu.
	unsure atomic.Uint64

	// synced is set once the gateway has copied the node's device-global
	// config into the device (Gateway.syncConfig); until then reads of it
	// go to the node (ReadConfig).
	synced atomic.Bool
	// copiedFromNode has bit k set once the gateway's copy took a value of
	// key k the node applied for a client (ConfigCopied): during the sync
	// that key's copy is the node's, so a write the copy says changes
	// nothing need not reach the node again (ConfigUnsure).
	copiedFromNode atomic.Uint64

	// cfgGen is the node's config generation (wire.State.config_gen) the
	// gateway's copy was last read at, or is being read at; guarded by
	// Gateway.mu. syncsAsked counts the syncs of the config asked for and
	// not yet begun, plus the one running (Gateway.syncConfigSoon).
	cfgGen     uint64
	syncsAsked atomic.Int64

	// gone is closed once the node's process is known to have ended (its
	// port refuses, or a new process of the node took over): config
	// requests waiting for its answer end at once (Gateway.configRequest).
	gone     chan struct{}
	goneOnce sync.Once

	// dev is the gateway's device of this proxy, once added.
	dev atomic.Pointer[actors.Device]
	// stateAge records, each tick, how old the state the loop got was.
	stateAge *histogram.Histogram
	nodeURL  string

	// mu guards st, its tick on the node (stTick), sampledNs (the time
	// as of which the node's loop knew st current, on the gateway's loop
	// clock, g.clock), whether a state came yet (hasState) and pushed, the
	// node's control then; written by the gateway actor and read by the
	// loop.
	mu        sync.Mutex
	st        hw.State
	stTick    uint64
	sampledNs int64
	hasState  bool
	pushed    nodeControl
	// batchSentNs is the node's send time (its clock) of the batch st
	// came in; commands carry it back (wire.Command.StateSentUnixNs).
	batchSentNs int64
	// fxRep and fxOut are the node loop's effects report and output
	// figures, from its latest push.
	fxRep    loop.EffectsReport
	hasFxRep bool
	fxOut    loop.OutputReport

	// fxMu guards the session's effects as forwarded to the node: the Set
	// in force on the gateway's loop (nil: none), its generation, when it
	// was last sent and the generation the node refused. It also orders
	// what goes to the node about the device: every command, declaration
	// and navigation is sent with it held, so the node gets them in the
	// order the gateway made them. Nothing is encoded with it held
	// (declareLocked): a tick that sends a command waits at most for
	// another's send, never for an encoding. Taken by ForwardEffects (any
	// goroutine), by the gateway actor and by the loop's ticks.
	fxMu      sync.Mutex
	fxSet     *effect.Set
	fxGen     uint64
	fxSentAt  time.Time
	fxRefused uint64
	// fxWithdrawn: fxSet's session does not command the arm any more, and
	// the node was sent an empty declaration for it (commandingSessionChanged).
	fxWithdrawn bool
	// Also under fxMu: the navigation forwarded to the node (nil: none),
	// the session whose commands carry it, its generation, the track the
	// node's reports are mirrored into and the id it goes by on the node,
	// when it was last sent and the generation the node refused
	// (navigation.go).
	nav        *loop.Navigation
	navSession uint64
	navGen     uint64
	navTrack   *loop.NavigationTrack
	navTrackID uint64
	navSentAt  time.Time
	navRefused uint64

	// The loop's own: the node's control as of its last exchange and how
	// old its state was then (StateAge); what it sent last and when;
	// whether it holds the gateway's register for a node-local session.
	control   nodeControl
	ageNs     int64
	pushedYet bool
	last      hw.Command
	sentAt    time.Time
	// sentLeaseLeft is the lease left sent with last (0: none said);
	// cmdSession the session of the last command with a lease, regCmd the
	// register's command as read for it (commandLease).
	sentLeaseLeft int64
	cmdSession    uint64
	regCmd        loop.Command
	seq           uint64
	holding       bool
	holdSeq       uint64
	// contestedSince is when (g.clock) the node first said another holds
	// the arm while a session of this gateway held the register (0: not
	// so): mirrorLocalHold.
	contestedSince int64
	// navSeen and navSeenSession are what ForwardNavigation got last.
	navSeen        *loop.Navigation
	navSeenSession uint64
	// inForce is the session whose command in force the output of the
	// loop's exchange under way applies, 0: none (loop.RemoteOutput).
	inForce uint64
}

var (
	_ hw.Driver                 = (*proxy)(nil)
	_ actors.ConfigOwner        = (*proxy)(nil)
	_ actors.ConfigCopied       = (*proxy)(nil)
	_ actors.RemoteDriver       = (*proxy)(nil)
	_ actors.StaleStateReporter = (*proxy)(nil)
	_ loop.ModeReporter         = (*proxy)(nil)
	_ loop.RemoteEffects        = (*proxy)(nil)
	_ loop.RemoteNavigation     = (*proxy)(nil)
	_ loop.RemoteOutput         = (*proxy)(nil)
)

// localSession owns a gateway device's register while a session on the
// node controls the device, so the gateway's sessions get device_busy (with
// this number as the owner) just as a second session on the node would.
// Gateway sessions count up from 1 and never reach it.
const localSession = actors.LabHolder

// localHoldFor is how far ahead each tick moves the local hold's deadline:
// the hold ends when the node says so, or this long after the node's word
// stops coming.
const localHoldFor = 200 * time.Millisecond

func newProxy(g *Gateway, n *nodeState, d *wire.Device, id string) *proxy {
	// The port says where the device is: its node's URL (clients that need
	// the tightest lock-step connect there), then its port on the node.
	port := n.httpURL
	if d.Port != "" {
		port += " " + d.Port
	}
	return &proxy{g: g, nodeID: n.id, node: n.pid, gone: make(chan struct{}), nodeDeviceID: d.Id, nodeURL: n.httpURL, stateAge: histogram.New(3),
		madeNs: g.clock.Now(), firstState: make(chan struct{}),
		cfgGen: d.ConfigGen, // the add's sync reads the config after the node listed it
		st:     hw.State{BodyOrientation: hw.Quat{W: 1}, Orientation: hw.Quat{W: 1}},
		info: hw.Info{
			Kind: hw.Kind(d.Kind), ID: id, UUID: d.Uuid, Model: uint8(d.Model),
			HardwareVersion: uint8(d.HardwareVersion), FirmwareVersion: uint8(d.FirmwareVersion),
			Simulated: d.Simulated, Link: hw.Link(d.Link), Port: port, MaxForceN: d.MaxForceN,
			WorkspaceCenterM: hw.Vec3{X: d.WorkspaceCenterX, Y: d.WorkspaceCenterY, Z: d.WorkspaceCenterZ},
			// The node's loop compensates gravity; the gateway's must not
			// add it a second time.
			HostGravityCompensation: false,
		}}
}

func (p *proxy) Info() hw.Info { return p.info }

// InitialState is the node's first pushed state (the gateway lists the
// device once it is here: Gateway.add), for the device's first snapshot.
func (p *proxy) InitialState(st *hw.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	*st = p.st
}

// The gateway's loop publishes a pushed state with the time it was current
// on its node, not its own tick's.
var (
	_ loop.StateAgeReporter = (*proxy)(nil)
	_ loop.InitialStater    = (*proxy)(nil)
)

// maxPushedAgeNs bounds the age a node may push for a state (setState): a
// minute, far beyond any loop's sparse publish, and small enough that a
// window's sum of state ages cannot overflow.
const maxPushedAgeNs = int64(time.Minute)

// Remote says where the device lives and how old its states were.
func (p *proxy) Remote() (nodeID, nodeURL string, stateAge loop.Summary) {
	return p.nodeID, p.nodeURL, p.stateAge.Summary()
}

// setState takes a pushed state that the node read at readNs (the
// gateway's loop clock) and sent at batchSentNs (the node's clock). The state was
// current m.AgeNs before readNs: that is its time here (sampledNs), so a
// state the node's loop had not published for a while, or had kept since
// its arm came to rest, is as old as the loop knows it to be. An age out
// of [0, maxPushedAgeNs] (a node's bug, a hostile peer) is taken as the
// nearest bound, so that no arithmetic on it overflows.
func (p *proxy) setState(m *wire.State, readNs, batchSentNs int64) {
	sampledNs := readNs - min(max(m.AgeNs, 0), maxPushedAgeNs)
	var st hw.State
	stateFromWire(m, &st)
	// The node's control: idle, or a mode a command can carry (anything
	// else reads as idle) with its target.
	mode, target := hw.ModeIdle, [3]float64{}
	copy(target[:], m.Target)
	if _, ok := hw.CommandTarget(hw.ControlMode(m.ControlMode), target); ok && m.ControlMode <= 0xff {
		mode = hw.ControlMode(m.ControlMode)
	} else {
		target = [3]float64{}
	}
	p.mu.Lock()
	first := !p.hasState
	if p.hasState && m.Tick != 0 && m.Tick == p.stTick {
		// The same state again: current as of the later of the two
		// (a push's estimate may be the coarser one).
		sampledNs = max(sampledNs, p.sampledNs)
	}
	p.st, p.stTick, p.sampledNs, p.hasState, p.batchSentNs = st, m.Tick, sampledNs, true, batchSentNs
	p.currentAtNs.Store(max(sampledNs, 1))
	p.pushed = nodeControl{heldLocally: m.HeldLocally, mode: mode, target: target}
	effectsFromWire(m, &p.fxRep, &p.fxOut)
	p.hasFxRep = len(m.Effects) > 0 || p.hasFxRep
	p.mu.Unlock()
	if first {
		close(p.firstState)
	}
	p.resendEffects(m.EffectsGen)
	p.navigationPushed(m)
	p.nodeConfigPushed(m.ConfigGen)
}

// nodeConfigPushed takes the generation of the device's device-global
// config a push says the node is at (wire.State.config_gen). Another than
// the one the gateway's copy was read at is a change the gateway may not
// have made (a client of the node's own port or session): the entries are
// unsure from now, so reads ask the node and a write the copy says changes
// nothing still goes to it, and the gateway reads them all from the node
// again (Gateway.syncConfigSoon), which makes each sure as it copies it in.
// Gateway.mu is held.
func (p *proxy) nodeConfigPushed(gen uint64) {
	if gen == 0 || gen == p.cfgGen {
		return // 0: a node older than the field
	}
	p.cfgGen = gen
	dev := p.dev.Load()
	if dev == nil {
		return // not added yet: the add's sync reads the node after this
	}
	for _, k := range syncedKeys(dev) {
		p.markUnsure(k)
	}
	if !p.g.closing.Load() { // Close waits for the syncs from here on
		p.g.syncConfigSoon(p, dev)
	}
}

// resendAfter is how long the node may lag the gateway's effects
// declaration before the gateway sends it again (a declaration lost with
// a connection, dropped as stale, or dropped when another owner took the
// arm on the node).
const resendAfter = 100 * time.Millisecond

// ForwardEffects sends the session's effects to the node, which renders
// them (loop.RemoteEffects); nil withdraws them. It sends the Set in force
// on the gateway's loop when it runs, not s: a publish and a withdrawal on
// two goroutines may call it in either order, and the last call must
// leave the node with what the loop holds.
func (p *proxy) ForwardEffects(s *effect.Set) {
	p.fxMu.Lock()
	defer p.fxMu.Unlock()
	if dev := p.dev.Load(); dev != nil {
		s = dev.Effects()
	}
	p.fxGen++
	p.fxSet, p.fxWithdrawn = s, false
	p.declareLocked(time.Now())
}

// resendEffects sends the declaration again when the node, at its push,
// renders another generation than the gateway's newest (0: none), unless
// it refused that one or was sent it within resendAfter.
func (p *proxy) resendEffects(nodeGen uint64) {
	p.fxMu.Lock()
	defer p.fxMu.Unlock()
	want := p.fxGen
	if p.fxSet.Len() == 0 || p.fxWithdrawn {
		want = 0 // the node renders none (and reports 0)
	}
	// A proxy that never declared (fxGen 0) still withdraws what the node
	// reports for it: effects an earlier proxy of the same gateway owner
	// left there, paused by a lapse while the node was out of reach, would
	// otherwise render under the next session's commands.
	now := time.Now()
	if nodeGen == want || (want != 0 && p.fxRefused == p.fxGen) || now.Sub(p.fxSentAt) < resendAfter {
		return
	}
	// Effects go with control: while the session does not hold the
	// gateway's arm (its lease lapsed here too) the node is not asked to
	// take them again; the session's next message withdraws them.
	if dev := p.dev.Load(); want != 0 && (dev == nil || dev.Register().Owner() != p.fxSet.Session) {
		return
	}
	p.declareLocked(now)
}

// declareLocked sends the node the declaration of generation p.fxGen: a
// withdrawal at once, a Set once encoded. The encoding is done with fxMu
// released, so a tick sending a command never waits for it (a loaded
// gateway, a big Set); the Set then goes only if no newer generation came
// meanwhile, whoever made that one sending it. So the node gets the
// declarations and commands in the order the gateway made them: a Set
// encoded while the tick sent the idle command that ended its session's
// control never arrives after it (the node would keep it, paused, and
// render it under the next session's claim; controlEnded). fxMu is held
// on entry and on return.
func (p *proxy) declareLocked(now time.Time) {
	p.fxSentAt = now
	if p.lost.Load() || p.g.closing.Load() {
		return
	}
	gen, s := p.fxGen, p.fxSet
	if s.Len() == 0 || p.fxWithdrawn {
		p.g.sys.Root.Send(p.node, &wire.Effects{Uuid: p.info.UUID, GatewayAddress: p.g.addr, ProcessId: p.g.process, SentUnixNs: now.UnixNano(), Gen: gen})
		return
	}
	p.fxMu.Unlock()
	m := p.encodeEffects(s, gen)
	p.fxMu.Lock()
	if m != nil && gen == p.fxGen && !p.lost.Load() && !p.g.closing.Load() {
		p.g.sys.Root.Send(p.node, m)
	}
}

// encodeEffects is the declaration of s, generation gen, as sent now: its
// expiries as the time left from its send time. nil if it cannot be
// encoded (a bug, logged). It takes no lock.
func (p *proxy) encodeEffects(s *effect.Set, gen uint64) *wire.Effects {
	if p.g.encodingEffects != nil {
		p.g.encodingEffects()
	}
	m := &wire.Effects{Uuid: p.info.UUID, GatewayAddress: p.g.addr, ProcessId: p.g.process, SentUnixNs: time.Now().UnixNano(), Gen: gen, Session: s.Session}
	specs := make([]effect.Spec, s.Len())
	clockNow := p.g.clock.Now()
	for i := range specs {
		specs[i] = s.Spec(i)
		// The node's clock is another: send the time left.
		if e := specs[i].ExpiresNs; e != 0 {
			specs[i].ExpiresNs = max(e-clockNow, 1)
		}
	}
	b, err := json.Marshal(specs)
	if err != nil {
		// A Set holds numbers NewSet found finite: this is a bug.
		p.g.log.Error().Err(err).Str("uuid", p.info.UUID).Msg("could not encode effects for the node")
		return nil
	}
	m.Specs = b
	// The declaration as the session made it, so the node lists the
	// effects in force on its arm; a Set published without one (none
	// is) goes without, and the node lists none.
	if dev := p.dev.Load(); dev != nil {
		if declared, ends, rot, ok := dev.DeclaredEffects(s); ok {
			m.Declared = (&protocol.EffectsUpdate{Set: declared}).AppendJSON(nil)
			m.ForceToSession = make([]float64, 0, 9)
			for _, row := range rot {
				m.ForceToSession = append(m.ForceToSession, row[:]...)
			}
			m.DeclaredLeftNs = make([]int64, len(ends))
			for i, e := range ends {
				if e != 0 {
					m.DeclaredLeftNs[i] = max(e-clockNow, 1)
				}
			}
		}
	}
	return m
}

// refused handles the node's refusal of generation gen: unless the
// session declared anew since, the gateway withdraws the declaration from
// its loop (the session's frames stop showing it) and tells the client
// with effect-refused, as a local arm would.
func (p *proxy) refused(m *wire.EffectsReply) {
	dev := p.takeRefusal(func() bool {
		if m.Gen != p.fxGen || p.fxSet == nil {
			return false
		}
		p.fxRefused = m.Gen
		return true
	})
	if dev == nil {
		return
	}
	p.g.log.Info().Str("device_id", dev.ID).Uint64("session", m.Session).Str("code", m.Code).Str("why", m.Error).Msg("node refused a session's effects")
	dev.DropForwarded(m.Session)
	p.g.svc.Activity().Publish(event.EffectRefused(dev.Name, dev.ID, m.Session, m.EffectId, m.Code, m.Error))
}

// takeRefusal runs take under fxMu: it records the node's refusal of a
// declaration and reports whether that was the newest one, which the
// session still holds (else the session declared anew since, and the
// refusal is no news to it). It returns the device whose client to tell,
// nil when there is none.
func (p *proxy) takeRefusal(take func() bool) *actors.Device {
	p.fxMu.Lock()
	current := take()
	p.fxMu.Unlock()
	if !current {
		return nil
	}
	return p.dev.Load()
}

// lapseNews reports whether the node's lapse of the gateway's control,
// whose commands were session's, is news to session: while its lease here
// runs on (its commands stalled on the link), or, once, after
// mirrorLocalHold took the register from it for another holder on the
// node, which ended its control here without a lapse of its own. A quiet
// session's lapse here is told by the gateway's loop, with what became of
// its effects, and the node's would tell the same end twice. For the
// gateway's actor.
func (p *proxy) lapseNews(session uint64) bool {
	return p.leaseLeft(session) >= relayedLapseNewsNs || p.contested.CompareAndSwap(session, 0)
}

// leaseLeft is how long the lease of session's command on the proxy's arm
// here has left (0 or less: none holds, or it lapsed). For the gateway's
// actor: its own Command, not the loop's regCmd.
func (p *proxy) leaseLeft(session uint64) int64 {
	dev := p.dev.Load()
	if dev == nil {
		return -1
	}
	reg := dev.Register()
	var c loop.Command
	reg.Read(&c)
	if reg.Owner() != session || c.Session != session {
		return -1
	}
	return c.DeadlineNs - p.g.clock.Now()
}

// LoadEffects is the node loop's effects report, as of its last push.
func (p *proxy) LoadEffects(dst *loop.EffectsReport) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	*dst = p.fxRep
	return p.hasFxRep
}

// Output is the node loop's output figures, as of its last push.
func (p *proxy) Output() loop.OutputReport {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fxOut
}

// nodeControl is the node's word on the device's control, from one push.
type nodeControl struct {
	// heldLocally: a session on the node itself controls the device.
	heldLocally bool
	// The mode and target the node's loop applies.
	mode   hw.ControlMode
	target [3]float64
}

// ReportedMode is the node's mode and target, as of the loop's last
// exchange, while a session on the node controls the device: the gateway's
// loop then holds the register for it with an idle command
// (mirrorLocalHold), and its frames must show what the node's session does
// instead.
func (p *proxy) ReportedMode() (hw.ControlMode, [3]float64, bool) {
	c := &p.control
	if !c.heldLocally {
		return hw.ModeIdle, [3]float64{}, false
	}
	return c.mode, c.target, true
}

// Exchange reports the latest pushed state and forwards cmd when it changed
// (or, unchanged and non-idle, every keepAlive).
func (p *proxy) Exchange(cmd *hw.Command, st *hw.State) error {
	if p.lost.Load() {
		if p.stopped.Load() {
			// A planned stop: the device leaves as unplugged (its
			// removal is on its way, and halts the output); an error
			// here would fail it first, as device-failed, if the loop's
			// tick came before the removal.
			p.mu.Lock()
			*st = p.st
			p.mu.Unlock()
			return nil
		}
		return errNodeLost
	}
	p.mu.Lock()
	*st = p.st
	sampled, pushed := p.sampledNs, p.hasState
	p.control = p.pushed
	p.mu.Unlock()
	now := time.Now()
	p.ageNs, p.pushedYet = 0, pushed
	if pushed {
		p.ageNs = max(p.g.clock.Now()-sampled, 0)
	}
	if p.pushedYet {
		p.stateAge.Record(p.ageNs)
	}
	// The session whose command this is and the time its lease has left
	// (leaseLeft < 0: none holds it; the loop ramps a lapsed force out).
	var session uint64
	var leaseLeft int64
	if dev := p.dev.Load(); dev != nil {
		reg := dev.Register()
		p.mirrorLocalHold(reg)
		if cmd.Mode != hw.ModeIdle {
			session, leaseLeft = p.commandLease(reg)
		}
		// An output that applies no command of the owner is the ramp of
		// the last control, which the loop runs before the owner's first
		// command (also the owner's own, when it claims again after its
		// lease lapsed): no lease holds it on the node, whose own ramp of
		// that control began at the idle controlEnded sent. Sent as the
		// owner's, it outlived the node's ramp when the link was slower
		// after the idle than before it: the node applied it, a force or a
		// torque, as the owner's new control.
		if session != 0 && p.inForce != session {
			session, leaseLeft = 0, -1
		}
	}
	if session != p.cmdSession {
		if p.cmdSession != 0 && p.last.Mode != hw.ModeIdle {
			p.controlEnded(now)
		}
		if session != 0 {
			p.commandingSessionChanged(session, now)
			p.commander.Store(session)
			p.contested.Store(0) // a new control: the node's lapse of it is told as any
		}
		p.cmdSession = session
	}
	switch {
	case *cmd != p.last:
	case cmd.Mode == hw.ModeIdle:
		return nil
	case now.Sub(p.sentAt) >= keepAlive:
	// A renewed lease reaches the node before half the lease it was
	// given runs out: a lease shorter than two keep-alives must not lapse
	// there while the client renews it.
	case leaseLeft > 0 && p.sentLeaseLeft > 0 && now.Sub(p.sentAt) >= time.Duration(p.sentLeaseLeft/2) &&
		leaseLeft > p.sentLeaseLeft-int64(now.Sub(p.sentAt)):
	default:
		return nil
	}
	p.send(cmd, now, session, leaseLeft)
	return nil
}

// CommandInForce takes the session whose command in force the output of
// the exchange that follows applies (loop.RemoteOutput).
func (p *proxy) CommandInForce(session uint64) { p.inForce = session }

// commandLease reads the register for the session whose command the
// gateway's loop applies and how long its lease has left (the node's
// lease on the command ends no later: wire.Command.LeaseLeftNs). Session
// 0 and a negative time: no session's lease holds the command.
func (p *proxy) commandLease(reg *loop.Register) (session uint64, leftNs int64) {
	reg.Read(&p.regCmd)
	c := &p.regCmd
	if owner := reg.Owner(); owner == 0 || c.Session != owner {
		return 0, -1
	}
	left := c.DeadlineNs - p.g.clock.Now()
	if left <= 0 {
		return 0, -1
	}
	return c.Session, left
}

// commandingSessionChanged keeps the node rendering only the effects of
// the session whose commands the gateway now sends, as a single host's
// loop does: the node knows only the gateway, so a quiet session's Set
// would ride on the next session's commands until the quiet one's next
// message withdrew it. Another session's Set is withdrawn on the node
// before the first command of session goes out; the Set of session,
// withdrawn so, is sent again. With no Set of session to render, the
// withdrawal goes again too: the last one, or the idle that dropped the
// effects, may have been lost in a cut (shorter than NodeTimeout), and the
// node, whose lease lapse paused them, would render them under session's
// commands until the next push's resend.
func (p *proxy) commandingSessionChanged(session uint64, now time.Time) {
	p.fxMu.Lock()
	defer p.fxMu.Unlock()
	mine := p.fxSet.Len() > 0 && p.fxSet.Session == session
	if mine && !p.fxWithdrawn {
		return // in force on the node
	}
	if mine || (p.fxSet.Len() > 0 && !p.fxWithdrawn) {
		p.fxWithdrawn = !mine
		p.fxGen++
	}
	p.declareLocked(now)
}

// controlEnded tells the node at once that the session whose commands
// the gateway sent let go, lapsed or gave way to another: the idle command
// releases the arm there, so the node ramps the force out once, from now,
// as a single host's loop does from a let-go (not after the gateway's own
// ramp, which the node does not take), and the next session's first
// command claims it anew, starting from zero force under the node's slew
// limit instead of from the last session's. The node drops the gateway's
// effects with the release; a session that commands next has its Set sent
// again (commandingSessionChanged). A Set being encoded meanwhile is of a
// generation this one supersedes, so it never follows the idle to the
// node (declareLocked).
func (p *proxy) controlEnded(now time.Time) {
	stateSent := p.stateSent()
	p.fxMu.Lock()
	defer p.fxMu.Unlock()
	p.sendLocked(&hw.Command{}, now, 0, 0, stateSent)
	if p.fxSet.Len() > 0 {
		p.fxWithdrawn = true
		p.fxGen++
	}
}

// StateAge tells the gateway's loop how old the state the last Exchange
// handed over was (loop.StateAgeReporter): as old as the node's push said,
// plus the time since it arrived. Before the first push the state is the
// proxy's empty one, repeated.
func (p *proxy) StateAge() (ageNs int64, repeated bool) { return p.ageNs, !p.pushedYet }

// StateStaleness says how old the newest state the node pushed is now,
// and the node's lease (its inventory's lease_ms; the gateway's own
// Config.LeaseMs from a node that does not say) as the bound past which
// frames warn that it is stale (actors.StaleStateReporter): a node pushes at least
// twice per lease, so a state that old means its pushes stopped arriving,
// the link is likely cut both ways, and the node has ended the force of
// the commands that no longer reach it. Before the first push it is the
// proxy's age.
func (p *proxy) StateStaleness() (ageNs, boundNs int64) {
	boundNs = p.nodeLeaseNs.Load()
	if boundNs <= 0 {
		boundNs = int64(p.g.cfg.LeaseMs) * int64(time.Millisecond)
	}
	at := p.currentAtNs.Load()
	if at == 0 {
		// The proxy's empty state stands in until the first push: as
		// old as the proxy, so frames warn once the lease is past.
		at = p.madeNs
	}
	return max(p.g.clock.Now()-at, 0), boundNs
}

// mirrorLocalHold makes another holder's control of the arm on the node (a
// node-local session's, or another gateway's) visible on the gateway:
// while the node says another holds the device, the gateway's register is
// held by localSession (an idle command, renewed every tick), so the
// gateway's sessions are refused with device_busy. A gateway session that
// claimed the register before the node's word came (both claimed within a
// push of each other) lost the arm on the node, where its commands are
// dropped: once the node has said so for contestGrace, it is refused as a
// later claim would be: the register is taken from it, and its next
// command is answered device_busy.
func (p *proxy) mirrorLocalHold(reg *loop.Register) {
	if !p.control.heldLocally {
		p.contestedSince = 0
		if p.holding {
			reg.Release(localSession)
			p.holding = false
		}
		return
	}
	if owner := reg.Owner(); owner != 0 && owner != localSession {
		now := p.g.clock.Now()
		if p.contestedSince == 0 {
			p.contestedSince = now
		}
		if now-p.contestedSince < int64(contestGrace) {
			return
		}
		if reg.Release(owner) {
			p.contested.Store(owner)
		}
	}
	p.contestedSince = 0
	if reg.Claim(localSession) != localSession {
		return
	}
	p.holding = true
	p.holdSeq++
	reg.Write(localSession, p.holdSeq, p.g.clock.Now()+int64(localHoldFor), nil, nil)
}

// contestGrace is how long the node must say another holds the arm while
// a session of this gateway holds the register before that session is
// refused (mirrorLocalHold): longer than a push already on its way when
// the session's first command left (a LAN's round trip and a push period,
// 2 ms at 500 Hz), so that a push from before the node took the command
// does not refuse a session the node gives the arm to.
const contestGrace = 20 * time.Millisecond

// send sends cmd, the command of session (0: none holds it), whose lease
// has leaseLeft (wire.Command.LeaseLeftNs).
func (p *proxy) send(cmd *hw.Command, now time.Time, session uint64, leaseLeft int64) {
	stateSent := p.stateSent()
	p.fxMu.Lock()
	defer p.fxMu.Unlock()
	p.sendLocked(cmd, now, session, leaseLeft, stateSent)
}

// stateSent is when the node sent the newest state the gateway has (the
// node's clock; wire.Command.StateSentUnixNs).
func (p *proxy) stateSent() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.batchSentNs
}

// sendLocked is send with fxMu held, so the command keeps its place among
// the declarations; stateSent is stateSent's, read before (mu and fxMu are
// never held together).
func (p *proxy) sendLocked(cmd *hw.Command, now time.Time, session uint64, leaseLeft, stateSent int64) {
	if p.g.closing.Load() {
		return
	}
	p.seq++
	m := &wire.Command{Uuid: p.info.UUID, Seq: p.seq, Mode: uint32(cmd.Mode),
		GatewayAddress: p.g.addr, ProcessId: p.g.process, SentUnixNs: now.UnixNano(), StateSentUnixNs: stateSent}
	if cmd.Mode != hw.ModeIdle {
		t := cmd.Target()
		m.Target = t[:]
		m.LeaseLeftNs = leaseLeft
		// The node renders the effects and navigation a session declared
		// only under that session's commands (wire.Command.session).
		m.Session = session
	}
	p.g.sys.Root.Send(p.node, m)
	p.last, p.sentAt, p.sentLeaseLeft = *cmd, now, leaseLeft
}

// Halt sends the idle command: the node releases the device.
func (p *proxy) Halt() error {
	if !p.lost.Load() {
		p.send(&hw.Command{}, time.Now(), 0, 0)
	}
	return nil
}

// leave marks p lost and has the service remove its device now, not at
// the loop's next exchange (which a loaded gateway can be late to): its
// exchanges fail from here on, and the device leaves with cause.
func (p *proxy) leave(cause error) {
	p.lost.Store(true)
	if dev := p.dev.Load(); dev != nil {
		p.g.svc.RemoveDevice(dev, cause)
	}
}

// processGone says the node's process ended: see gone.
func (p *proxy) processGone() {
	p.goneOnce.Do(func() {
		if p.gone != nil {
			close(p.gone)
		}
	})
}

// Close halts the device and forgets the proxy, so the node's next
// inventory can bring the device back.
func (p *proxy) Close() error {
	err := p.Halt()
	p.g.forget(p)
	return err
}

// SetConfig sets a device-global entry on the owning node, which validates
// and persists it before it answers.
// Every call goes to the node, also while the device's config is being
// synced from it: the gateway answers a client only with what the node
// applied and persisted (issue 23: a set answered locally during the sync
// was acknowledged and lost).
func (p *proxy) SetConfig(e protocol.Entry) (protocol.Entry, error) {
	b, err := e.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("cluster: encode %s: %w", e.Key().Path(), err)
	}
	p.clientWrites(e.Key())
	got, warnings, err := p.configRequest(&wire.ConfigRequest{Uuid: p.info.UUID, Op: "set", Key: e.Key().Path(), Json: b})
	if err == nil {
		p.setWarnings(e.Key(), warnings)
	}
	p.noteAnswer(e.Key(), err)
	return got, err
}

// ResetConfig restores a device-global entry's default on the owning node.
func (p *proxy) ResetConfig(k protocol.Key) (protocol.Entry, error) {
	p.clientWrites(k)
	got, warnings, err := p.configRequest(&wire.ConfigRequest{Uuid: p.info.UUID, Op: "reset", Key: k.Path()})
	if err == nil {
		p.setWarnings(k, warnings)
	}
	p.noteAnswer(k, err)
	return got, err
}

// warningsOf is what the node last answered of k's warnings (nil: none).
func (p *proxy) warningsOf(k protocol.Key) []protocol.Error {
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	return p.warned[k]
}

// setWarnings takes the warnings the node answered to a write of k: those
// left after it.
func (p *proxy) setWarnings(k protocol.Key, ws []protocol.Error) {
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	p.setWarningsLocked(k, ws)
}

func (p *proxy) setWarningsLocked(k protocol.Key, ws []protocol.Error) {
	if len(ws) == 0 {
		delete(p.warned, k)
		return
	}
	if p.warned == nil {
		p.warned = map[protocol.Key][]protocol.Error{}
	}
	p.warned[k] = ws
}

// readWarnings takes the warnings the node answered to a read of k sent
// at mark: not over a client's write of k started since, or open then,
// whose answer says what it left (the read may be of before it).
func (p *proxy) readWarnings(k protocol.Key, ws []protocol.Error, mark readMark) {
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	if w := p.writesLocked(k); mark.open != 0 || w.started != mark.started {
		return
	}
	p.setWarningsLocked(k, ws)
}

// keyWrites is what the proxy knows of the client writes of one key.
type keyWrites struct {
	// started counts the writes started: the node answered a read sent
	// before one started with a value that may be older than it.
	started uint64
	// open counts the writes started and not done: done when the node
	// did not apply it (no answer, refused), or once the gateway's copy
	// took what it answered, or failed to (ConfigCopied).
	open int
	// behind: while writes were open, something may have left the
	// gateway's copy older than the node's (unsure): it stays unsure when
	// they are done. copied: an open write was applied on the node and
	// taken by the copy.
	behind, copied bool
}

// writesLocked is k's keyWrites; p.cfgMu is held.
func (p *proxy) writesLocked(k protocol.Key) *keyWrites {
	w := p.writes[k]
	if w == nil {
		if p.writes == nil {
			p.writes = map[protocol.Key]*keyWrites{}
		}
		w = &keyWrites{}
		p.writes[k] = w
	}
	return w
}

// behindLocked marks k unsure, and keeps it so past the writes now open;
// p.cfgMu is held.
func (p *proxy) behindLocked(k protocol.Key) {
	p.unsure.Or(1 << k)
	if w := p.writesLocked(k); w.open > 0 {
		w.behind = true
	}
}

// markUnsure is behindLocked for a caller without cfgMu.
func (p *proxy) markUnsure(k protocol.Key) {
	p.cfgMu.Lock()
	p.behindLocked(k)
	p.cfgMu.Unlock()
}

// clientWrites counts a client's write of k before it is sent, so that a
// read of k the node may have answered before it is not copied in over
// it. Two writes of k open at once may reach the gateway's copy in
// another order than the node: k is unsure when they are done.
func (p *proxy) clientWrites(k protocol.Key) {
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	w := p.writesLocked(k)
	if w.open > 0 {
		p.behindLocked(k)
	}
	w.started++
	w.open++
}

// noteAnswer takes the node's answer to a client's write of k. One it
// did not answer marks k unsure (it may have applied it). One it refused
// changes nothing, on the node or here: k stays as it was (review22: a
// refusal made an unsure entry sure, over a value the gateway never had).
// One it applied is done once the gateway's copy took it or failed to
// (ConfigCopied).
func (p *proxy) noteAnswer(k protocol.Key, err error) {
	var perr *protocol.Error
	noAnswer := errors.As(err, &perr) && perr.Code == protocol.CodeUnavailable
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	w := p.writesLocked(k)
	switch {
	case err == nil:
		return
	case noAnswer:
		p.behindLocked(k)
	}
	p.writeDoneLocked(k, w)
}

// ConfigCopied takes how the gateway's copy of k took a value the node
// applied for a client (actors.ConfigCopied): a copy that failed leaves k
// unsure, so reads answer the node's value, not the older copy (review22:
// k was sure once the node answered, and reads answered the copy).
func (p *proxy) ConfigCopied(k protocol.Key, err error) {
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	w := p.writesLocked(k)
	if err != nil {
		p.behindLocked(k)
	} else {
		w.copied = true
		p.copiedFromNode.Or(1 << k)
	}
	p.writeDoneLocked(k, w)
}

// writeDoneLocked ends one open write of k. When none is left open, k is
// sure if one of them was applied and copied and nothing left the copy
// behind meanwhile; else it stays as it was.
func (p *proxy) writeDoneLocked(k protocol.Key, w *keyWrites) {
	w.open--
	if w.open > 0 {
		return
	}
	if w.copied && !w.behind {
		p.unsure.And(^uint64(1 << k))
	}
	w.copied, w.behind = false, false
}

// ConfigUnsure says the gateway's copy of k may be older than the node's
// (actors.ConfigUnsure): a write of it must reach the node even when the
// copy says it changes nothing. So it is until the sync has copied the
// node's config in, or the copy took a value of k the node applied (a
// set_gravity_compensation the copy, the default or an older process's
// value, took as unchanged was answered without an error and never sent,
// and the sync then copied the node's other value in). One write of k
// during the sync, not one per message: clients send the command every
// tick, and each would wait for the node's durable write (review35).
func (p *proxy) ConfigUnsure(k protocol.Key) bool {
	return (!p.synced.Load() && p.copiedFromNode.Load()&(1<<k) == 0) || p.unsureOf(k)
}

// unsureOf says whether k's unsure bit is set.
func (p *proxy) unsureOf(k protocol.Key) bool { return p.unsure.Load()&(1<<k) != 0 }

// readMark is what the proxy knew of the client writes of a key when a
// read of it was sent to the node (markRead).
type readMark struct {
	started uint64
	open    int
}

func (p *proxy) markRead(k protocol.Key) readMark {
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	w := p.writesLocked(k)
	return readMark{started: w.started, open: w.open}
}

// copyIn applies e, which the node answered to a read of k sent at mark,
// to the gateway's copy, and makes k sure when that leaves the copy the
// node's. Not over a client's write: a read sent while one was open, or
// answered after one started, may hold a value older than it (the node
// may have read before applying the write); k is left unsure then, so a
// read asks the node again. The durable write is done without cfgMu: a
// write that started meanwhile may reach the copy before this one, so k
// is left unsure then too. It returns the copy's error.
func (p *proxy) copyIn(dev *actors.Device, k protocol.Key, e protocol.Entry, mark readMark) error {
	p.cfgMu.Lock()
	if w := p.writesLocked(k); mark.open != 0 || w.started != mark.started {
		p.behindLocked(k)
		p.cfgMu.Unlock()
		return nil
	}
	p.cfgMu.Unlock()
	_, err := p.g.svc.ApplyOwnedEntry(dev, e)
	p.cfgMu.Lock()
	defer p.cfgMu.Unlock()
	if w := p.writesLocked(k); err != nil || w.started != mark.started {
		p.behindLocked(k)
		return err
	}
	p.unsure.And(^uint64(1 << k))
	return nil
}

// IDAssigned says the gateway gave the device its id (gatewayID), unique
// and remembered in the gateway's own memory (actors.AssignedID).
func (p *proxy) IDAssigned() {}

// ReadConfig reads a device-global entry from the node while the gateway's
// copy of it may be older: during the sync from the node, and while the
// entry is unsure. A client reading back a set it was answered 503 for,
// as docs/lab.md says to, must not be answered the gateway's older copy.
// An unsure entry the node answers is copied in (copyIn). It also reads
// from the node an entry the node last answered warnings for (warned),
// with the node's warnings, so a GET through the gateway warns as the
// node's own does, no longer once the node has none; when the node does
// not answer that read within warnedReadWait, the copy (the node's)
// answers, with the warnings the node gave last.
func (p *proxy) ReadConfig(k protocol.Key) (protocol.Entry, []protocol.Error, bool, error) {
	unsure := p.unsureOf(k)
	warned := p.warningsOf(k)
	synced := p.synced.Load()
	if synced && !unsure && warned == nil {
		return nil, nil, false, nil
	}
	wait := configTimeout
	if synced && !unsure {
		wait = warnedReadWait // the copy is current: only the warnings are asked
	}
	mark := p.markRead(k)
	e, warnings, err := p.configRequestWithin(&wire.ConfigRequest{Uuid: p.info.UUID, Op: "get", Key: k.Path()}, wait)
	if err != nil {
		if synced && !unsure {
			return nil, warned, false, nil
		}
		return nil, nil, true, err
	}
	p.readWarnings(k, warnings, mark)
	if !unsure {
		return e, warnings, true, nil
	}
	if dev := p.dev.Load(); dev != nil {
		if cerr := p.copyIn(dev, k, e, mark); cerr != nil {
			p.g.log.Warn().Err(cerr).Str("device_id", dev.ID).Str("key", k.Path()).Msg("could not copy a node's config entry in; reads of it ask the node")
		}
	}
	return e, warnings, true, nil
}

// configRequest is one request/response to the node; its answer is decoded
// with the same protocol code the node used, with the node's warnings of
// the entry (ConfigReply.warnings).
func (p *proxy) configRequest(m *wire.ConfigRequest) (protocol.Entry, []protocol.Error, error) {
	return p.configRequestWithin(m, configTimeout)
}

// warnedReadWait bounds the read of an entry whose copy is current, asked
// of the node for its warnings alone (ReadConfig): a node answers one
// device's config requests in order, so a write hung on its disk held
// each GET of a warned entry for configTimeout, where the copy answered
// at once before the warnings were carried (review59).
const warnedReadWait = 250 * time.Millisecond

// configRequestWithin is configRequest answered within wait (at most
// configTimeout): past it the request is unanswered (unavailable), and
// the node's late answer is dropped.
func (p *proxy) configRequestWithin(m *wire.ConfigRequest, wait time.Duration) (protocol.Entry, []protocol.Error, error) {
	k, ok := protocol.KeyFromPath(m.Key)
	if !ok {
		return nil, nil, protocol.Errorf(protocol.CodeUnknownKey, "", "unknown config key %q", m.Key)
	}
	if p.lost.Load() {
		return nil, nil, protocol.Errorf(protocol.CodeUnavailable, "", "%v", errNodeLost)
	}
	r, err := p.g.configRequest(p, m, wait)
	if errors.Is(err, errNodeGone) || errors.Is(err, errGatewayStopping) {
		return nil, nil, protocol.Errorf(protocol.CodeUnavailable, "", "node %s: %v", p.nodeID, err)
	}
	if err != nil {
		return nil, nil, protocol.Errorf(protocol.CodeUnavailable, "", "node %s did not answer within %v: %v", p.nodeID, wait, err)
	}
	reply, ok := r.(*wire.ConfigReply)
	if !ok {
		return nil, nil, protocol.Errorf(protocol.CodeInternal, "", "node %s answered %T", p.nodeID, r)
	}
	if reply.Error != "" {
		return nil, nil, protocol.Errorf(protocol.Code(reply.Code), "", "%s", reply.Error)
	}
	e, pe := protocol.DecodeEntry(k, reply.Json, "")
	if pe != nil {
		return nil, nil, fmt.Errorf("cluster: node %s answered an invalid %s: %w", p.nodeID, m.Key, pe)
	}
	return e, warningsFromWire(reply.Warnings), nil
}

// configTimeout bounds a config request to a node: the node persists
// before it answers, so it is a disk write plus a round trip.
const configTimeout = 2 * time.Second

// configApplyWithin is how old (since the gateway sent it) a config
// request the node still applies may be: less than configTimeout by the
// time its write and its answer take, and by what the node's clock
// offset may underestimate its age by, so that the gateway does not give
// up on a set (503 to its client) that the node then applies. One that
// waited longer (a hung or backed-up node) is answered unavailable.
const configApplyWithin = configTimeout - 500*time.Millisecond
