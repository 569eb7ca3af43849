package actors

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/protocol/space"
)

// Codec turns client messages into protocol.ClientMessage and frames into
// bytes: one session implementation serves both API formats (3.x and 3.0)
// with a codec each.
type Codec interface {
	Decode(data []byte, types *protocol.TypeTable, dst *protocol.ClientMessage) []protocol.Error
	AppendFrame(dst []byte, f *protocol.Frame, types *protocol.TypeTable) []byte
	// AppendArmElement and AppendGripElement encode one device's element
	// (id, state and status, no config) alone, for the per-device cache
	// (ArmFrame.Element).
	AppendArmElement(dst []byte, a *protocol.ArmFrame) []byte
	AppendGripElement(dst []byte, g *protocol.GripFrame) []byte
	// APIVersion names the format: "3.x" or "3.0".
	APIVersion() string
}

// FrameSink is a connection's writer side, as the session actor sees it.
type FrameSink interface {
	// Buffer returns an empty buffer to encode the next frame into.
	Buffer() []byte
	// Send writes a frame, or queues it for a writer goroutine; the sink
	// owns buf from then on. It is called by Deliver's caller (the
	// connection's reader) and, for the inventory, by OpenSession's, one
	// call at a time; the session handles no other message until it
	// returns, so Send must bound how long it blocks: the WebSocket sink
	// writes in place and its watchdog closes a client that does not read
	// for the write timeout (5 s). Send reports no error: a sink that fails
	// closes itself, and later Sends drop their frames.
	Send(buf []byte)
	// Recycle hands back a message's bytes once the session is done with them.
	Recycle(inbound []byte)
	// Close closes the connection for reason, with the reason's close code
	// and text. The first call wins; later calls do nothing.
	Close(reason protocol.CloseReason)
}

// SplicingSink is a FrameSink that writes a frame from two buffers without
// joining them: the frame's own bytes and, inside them, a run of every
// arm's element that many frames share (63 KB for 100 arms). Copying the
// run into each frame was the largest single item of a 100-arm frame's
// CPU besides the socket write; a sink that writes the parts with one
// writev sends the same bytes without it.
type SplicingSink interface {
	FrameSink
	// SendSpliced writes, as one message, buf[:at], then shared, then
	// buf[at:]; it owns buf from then on, as Send does. shared belongs to
	// other frames too: the sink reads it only until SendSpliced returns
	// and never writes it.
	SendSpliced(buf []byte, at int, shared []byte)
}

// SessionOptions describe a new connection.
type SessionOptions struct {
	Remote string
	Codec  Codec
	Sink   FrameSink
}

// Session is one client connection on the simulation channel. It has two
// parts, each with one owner (see the package doc, Sessions):
//
//   - the session actor (sessionActor) owns the control-plane state and is
//     its only writer; it publishes what the per-tick path reads as an
//     immutable sessionSnapshot;
//   - the per-tick path (tickPath) is run by Deliver's caller, the
//     connection's reader: it decodes each message, writes its commands
//     into the device registers and writes its frame, reading the latest
//     snapshot and never the actor's state.
type Session struct {
	// Atomics first. snap is the actor's latest published state; it is
	// never nil after OpenSession.
	snap   atomic.Pointer[sessionSnapshot]
	closed atomic.Bool
	reason atomic.Pointer[protocol.CloseReason] // set once, first cause wins
	// phase moves from phaseNew to phaseStarted (the inventory went out)
	// to phaseEnded (the actor stopped), or from phaseNew straight to
	// phaseEnded: session-started and session-ended go out in pairs.
	phase atomic.Int32
	// lateCount counts the warnings in late, so the per-message check is
	// one load.
	lateCount atomic.Int32

	// Immutable after OpenSession.
	ID          uint64
	Remote      string
	APIVersion  string
	ConnectedAt time.Time
	svc         *Service
	pid         *actor.PID
	sink        FrameSink
	// path is the per-tick path's state, used only by Deliver's caller.
	path *tickPath
	// ended is closed by Close: a Deliver that waits for the actor stops
	// waiting.
	ended     chan struct{}
	closeOnce sync.Once
	endOnce   sync.Once

	// late holds the warnings that answer no message of the client (a
	// device that connected later could not read the profile's entries),
	// for the session's next frame; lateMu guards it.
	lateMu sync.Mutex
	late   []protocol.Error
}

// warnLate queues w for the session's next frame. Past MaxWarnings
// queued, the frame's own count of dropped warnings would not say which:
// the oldest are kept, the others are logged only.
func (s *Session) warnLate(w *protocol.Error) {
	s.lateMu.Lock()
	defer s.lateMu.Unlock()
	if len(s.late) >= protocol.MaxWarnings {
		return
	}
	s.late = append(s.late, *w)
	s.lateCount.Add(1)
}

// takeLate appends the queued late warnings to dst and empties the queue.
func (s *Session) takeLate(dst []protocol.Error) []protocol.Error {
	if s.lateCount.Load() == 0 {
		return dst
	}
	s.lateMu.Lock()
	defer s.lateMu.Unlock()
	dst = append(dst, s.late...)
	s.late = s.late[:0]
	s.lateCount.Store(0)
	return dst
}

// Session phases (Session.phase).
const (
	phaseNew int32 = iota
	phaseStarted
	phaseEnded
)

// sessionSnapshot is the session actor's control-plane state as the
// per-tick path and readers outside the actor (listings, selectors) see
// it. The actor publishes a new one on every change and never modifies one
// it published.
type sessionSnapshot struct {
	profile string
	basis   protocol.Basis // session-level
	leaseMs int
	sub     *subscription // session.configure.subscribe; never nil
}

// Profile is the session's profile name ("" when it has none).
func (s *Session) Profile() string { return s.snap.Load().profile }

// Basis is the session-level basis.
func (s *Session) Basis() protocol.Basis { return s.snap.Load().basis }

// Controls lists the devices this session controls now.
func (s *Session) Controls() []*Device {
	var out []*Device
	for _, d := range s.svc.Devices().All() {
		if d.Register().Owner() == s.ID {
			out = append(out, d)
		}
	}
	return out
}

// Deliver processes one client message and writes its frame (exactly one)
// before it returns; the session owns buf until then and hands it back
// through FrameSink.Recycle. It runs on the caller's goroutine, and must be
// called by one goroutine at a time, in the client's order: the
// connection's reader.
//
// waitedNs is how long the message waited on this host before the reader
// read it (the kernel's receive time; 0 when unknown). A control lease
// runs from the message's arrival, not from its reading, and a command or
// effects entry that arrived longer than the lease ago is not applied
// (stale_command): after the service stalled, the commands queued in the
// socket are from a client that may have gone quiet since.
//
// A message with nothing for the control plane (the per-tick message:
// commands, probes, unchanged configures and state commands) costs no
// actor hop, no lock and no allocation. One that changes the session or
// a device is handed to the session actor, and Deliver waits for it to
// collect the answers of the registry and the device actors; the client's
// later messages wait behind it (in the socket), so frames stay one per
// message and in order. The wait ends early when the session is closed;
// the message then gets no frame.
//
// A panic while processing the message ends the session as a panic in its
// actor does (Session.fail).
func (s *Session) Deliver(buf []byte, waitedNs int64) {
	p := s.path
	p.arrivedNs = s.svc.opts.Clock.Now() - max(waitedNs, 0)
	defer func() {
		if v := recover(); v != nil {
			p.gone = true
			s.fail(v)
		}
	}()
	if p.gone || s.closed.Load() {
		s.sink.Recycle(buf)
		return
	}
	if p.handle(buf) {
		s.sink.Recycle(buf)
	}
}

// Close ends the session for reason: its devices are released at once (the
// loops ramp their force to zero from the next tick), a Deliver waiting for
// the actor returns, then the actor stops. The first Close then writes the
// session's pending profile changes durably, so it may block on the disk
// (the actor does not: no Receive may). It is idempotent; the first reason
// recorded (here or by the session's own failure) is the one session-ended
// and GET /sessions/closed report.
func (s *Session) Close(reason protocol.CloseReason) {
	if !s.close(reason) {
		return
	}
	if w := s.svc.writeBehind; w != nil && s.Profile() != "" {
		if err := w.Flush(); err != nil {
			s.logged(s.svc.log.Error()).Err(err).Msg("flush profile config at session end")
		}
	}
}

// close is Close without the flush (the write-behind still writes within
// its interval); it reports whether this call closed the session.
func (s *Session) close(reason protocol.CloseReason) (first bool) {
	s.setReason(reason)
	s.closeOnce.Do(func() {
		first = true
		s.closed.Store(true)
		for _, d := range s.svc.Devices().All() {
			d.Register().Release(s.ID)
		}
		s.svc.dropSessionEffects(s.ID)
		s.end()
		s.svc.system.Root.Stop(s.pid)
	})
	return first
}

// end wakes a Deliver waiting for the actor, which will not answer: the
// session is closing or its actor stopped.
func (s *Session) end() { s.endOnce.Do(func() { close(s.ended) }) }

// CloseReason is why the session ended: internal_error for a session that
// ended without a recorded cause.
func (s *Session) CloseReason() protocol.CloseReason {
	if r := s.reason.Load(); r != nil {
		return *r
	}
	return protocol.CloseInternalError
}

// setReason records reason unless one is recorded already.
func (s *Session) setReason(reason protocol.CloseReason) {
	s.reason.CompareAndSwap(nil, &reason)
}

// fail is the one way a session that panicked ends, whichever part
// panicked (Deliver on the reader, or the actor, through
// sessionSupervisor): it is not restarted with half its state, its
// connection is closed with 1011, its devices are released and it ends
// with reason internal_error. Other sessions carry on.
func (s *Session) fail(reason any) {
	s.svc.log.Error().Uint64("session_id", s.ID).Interface("reason", reason).Msg("session crashed; closing it")
	s.svc.system.EventStream.Publish(&actor.SupervisorEvent{Child: s.pid, Reason: reason, Directive: actor.StopDirective})
	s.setReason(protocol.CloseInternalError)
	s.sink.Close(protocol.CloseInternalError)
	// No flush here: fail may run on an actor's goroutine.
	s.close(protocol.CloseInternalError)
}

// FirstRemoteOwner is the first device-register owner that is no local
// session: a lab node writes a gateway's forwarded commands as owners from
// it on (local session ids count up from 1 and never reach it). Such an
// owner's effects stay on its arm through a lapse of its lease, paused with
// the force, and render again with its next command: the gateway's client
// session may still hold its own lease (a gateway or link that stalled past
// the node's). A local session's go with the lapse.
const FirstRemoteOwner uint64 = 1 << 62

// LabHolder is the owner a lab gateway's register of a remote device shows
// while the device's node says another holds it (a session on the node
// itself, or another gateway's): the gateway's sessions are refused with
// device_busy naming it, as a second session on the node would be.
const LabHolder = FirstRemoteOwner + 1

// holderText names a register owner in a device_busy message: a session of
// this process by its number; a lab's owners by what they stand for, with
// the number the frames' owner fields carry.
func holderText(owner uint64) string {
	switch {
	case owner < FirstRemoteOwner:
		return "session " + strconv.FormatUint(owner, 10)
	case owner == LabHolder:
		return "a session held on the node (its own, or another gateway's; owner " + strconv.FormatUint(owner, 10) + ")"
	}
	return "a lab gateway's session (owner " + strconv.FormatUint(owner, 10) + ")"
}

// OpenSession creates a session for a new connection: the registry
// attaches it to every device and lists it, then the inventory frame is
// written, on the caller's goroutine, before OpenSession returns (so it
// comes before the frame of any message Deliver is given).
func (s *Service) OpenSession(o SessionOptions) (*Session, error) {
	sess := &Session{
		ID:          s.nextSession.Add(1),
		Remote:      o.Remote,
		APIVersion:  o.Codec.APIVersion(),
		ConnectedAt: time.Now(),
		svc:         s,
		sink:        o.Sink,
		ended:       make(chan struct{}),
	}
	first := &sessionSnapshot{
		basis:   protocol.Basis{Permutation: protocol.IdentityBasis},
		leaseMs: s.opts.DefaultLeaseMs,
		sub:     everyDevice,
	}
	sess.snap.Store(first)
	sess.path = &tickPath{
		sess:   sess,
		svc:    s,
		codec:  o.Codec,
		sink:   o.Sink,
		counts: s.traffic.of(o.Codec.APIVersion()),
		busy:   make(map[busyKey]busyNote),
	}
	sess.path.splicer, _ = o.Sink.(SplicingSink)
	a := &sessionActor{sess: sess, svc: s, state: *first}
	// The synchronized dispatcher runs the actor on the goroutine that
	// sends to it when its mailbox is idle: a control request from Deliver
	// is taken up on the reader itself, and an answer on the answering
	// actor's goroutine (the actor then only records it; frames are the
	// reader's).
	//
	// A session actor is spawned at the root, so its supervisor is a
	// guardian (WithSupervisor would only supervise its children).
	props := actor.PropsFromProducer(func() actor.Actor { return a },
		actor.WithGuardian(s.sessionGuardian),
		actor.WithDispatcher(actor.NewSynchronizedDispatcher(300)))
	pid, err := s.system.Root.SpawnNamed(props, "session-"+strconv.FormatUint(sess.ID, 10))
	if err != nil {
		return nil, fmt.Errorf("actors: spawn session actor: %w", err)
	}
	sess.pid = pid
	if _, err := s.ask(s.registry, &openSession{sess: sess}); err != nil {
		sess.Close(protocol.CloseInternalError)
		return nil, fmt.Errorf("actors: list session: %w", err)
	}
	sess.path.begin()
	return sess, nil
}

// sessionSupervisor is the guardian of every session actor: a session
// whose actor panics ends through Session.fail.
type sessionSupervisor struct{ svc *Service }

func (g *sessionSupervisor) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ any) {
	listed := false
	for _, sess := range g.svc.Sessions() {
		if sess.pid.Equal(child) {
			sess.fail(reason)
			listed = true
			break
		}
	}
	if !listed { // not listed (any more): it is ending anyway
		sys.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: actor.StopDirective})
	}
	// Again, in case Close had already stopped it and it panicked while
	// stopping: a Stop it already took does nothing.
	sup.StopChildren(child)
}

// busyKey names a device by value: a key of *Device would keep a removed
// device, and its loop state, alive for the session's lifetime.
type busyKey struct {
	typ protocol.DeviceType
	id  string
}

// busyNote rate-limits device-busy events per device and owner.
type busyNote struct {
	owner  uint64
	budget *rate.Limiter // one event per busyEvery, by the service Clock
}

// busyEvery is the shortest interval between two device-busy events for
// one device and owner.
const busyEvery = time.Second

// tickPath is the per-tick path of a session: everything Deliver uses
// that is not the actor's. Only Deliver's caller (and OpenSession, before
// the session is handed out) touches it.
type tickPath struct {
	sess  *Session
	svc   *Service
	codec Codec
	sink  FrameSink
	// splicer is sink when it writes a shared run in place (nil: it
	// does not, and frames copy the run).
	splicer SplicingSink
	// counts are the session's API format's traffic counters, looked up
	// once rather than in a sync.Map twice per message.
	counts *formatCounters
	seq    uint64
	busy   map[busyKey]busyNote
	// gone: the session ended while a message waited for the actor, or a
	// message panicked; nothing more is processed.
	gone bool
	// visible is the subscription's filtered device set, cached.
	visible visibleSet
	// control is the one request to the actor, reused (allocated at the
	// first message that needs it).
	control *controlRequest
	// fx is the session's effects per arm (effects.go); nil until the
	// session declares some.
	fx map[*Device]*armEffects
	// fxSet is the device set fx was last checked against
	// (forgetLeftDevices).
	fxSet *DeviceSet
	// fxBusy is when effect-refused last went out for a busy device.
	fxBusy map[busyKey]int64
	// arrivedNs is when the message in hand arrived on this host (service
	// Clock): control leases run from it (Deliver).
	arrivedNs int64

	// Scratch reused every message, taken at the session's first message:
	// a session that has said nothing since its inventory (most of a
	// large idle fleet) does not hold it.
	*sessionScratch
}

// sessionScratch is what a session reuses for every message, so that
// decoding and encoding allocate little.
type sessionScratch struct {
	msg   protocol.ClientMessage
	frame protocol.Frame
	snap  loop.Snapshot
	cmd   hw.Command
	sview protocol.SessionView
	ext   armExtScratch
	views viewMemo
	// cmdViews remembers the view of message entry i's device, as views
	// does a frame's: with 100 sessions attached to a device, looking the
	// session up in the device's map per command missed the cache (3 % of
	// the service's CPU under 100 clients on 100 arms).
	cmdViews viewList
	// hints[i] is where message entry i's device was in its type's list
	// last time (find).
	hints []int
}

// logged adds the session's fields to a line of the service's logger (nil,
// and free, when its level is off). A logger kept per session held half a
// kilobyte of every idle session.
func (s *Session) logged(e *zerolog.Event) *zerolog.Event {
	return e.Uint64("session_id", s.ID).Str("remote", s.Remote)
}

// begin sends the inventory frame and publishes session-started, unless
// the session already ended.
func (p *tickPath) begin() {
	s := p.sess
	if !s.phase.CompareAndSwap(phaseNew, phaseStarted) {
		return
	}
	p.svc.activity.Publish(event.SessionStarted(s.ID, "", s.Remote, s.APIVersion))
	s.logged(p.svc.log.Debug()).Str("api_version", s.APIVersion).Msg("session started") // the event is the info line

	// The inventory borrows a scratch it does not keep (see sessionScratch).
	p.sessionScratch = new(sessionScratch)
	defer func() { p.sessionScratch = nil }()
	snap := s.snap.Load()
	f := p.resetFrame()
	p.fillDevices(f, snap, true, nil, p.svc.opts.Clock.Now())
	f.Session = p.sessionView(snap)
	p.emit(f)
}

// handle processes one message and writes its frame. It reports false
// when the session ended while the message waited for the actor: the
// message then got no frame. (The actor never reads buf: what it is handed
// was decoded out of it; the buffer is left to the collector then, once
// per session.)
func (p *tickPath) handle(buf []byte) bool {
	if p.sessionScratch == nil {
		p.sessionScratch = new(sessionScratch)
	}
	msg := &p.msg
	msg.Reset()
	f := p.resetFrame()
	f.Warnings = p.sess.takeLate(f.Warnings)
	snap := p.sess.snap.Load()
	p.counts.message()
	if errs := p.codec.Decode(buf, p.svc.opts.Types, msg); len(errs) > 0 {
		// Applied not at all: the frame reports the errors and the state.
		publishDeprecated(p.svc, p.sess, &p.msg.Session, snap.profile)
		f.Errors = append(f.Errors, errs...)
		f.Warnings = append(f.Warnings, msg.Warnings...)
		p.fillDevices(f, snap, false, nil, p.svc.opts.Clock.Now())
		p.emit(f)
		return true
	}
	devs := p.svc.Devices()
	if errs := p.refusedEffects(snap, devs); len(errs) > 0 {
		// Applied not at all, as a message the decoder refused.
		publishDeprecated(p.svc, p.sess, &p.msg.Session, snap.profile)
		f.Errors = append(f.Errors, errs...)
		f.Warnings = append(f.Warnings, msg.Warnings...)
		p.fillDevices(f, snap, false, nil, p.svc.opts.Clock.Now())
		p.emit(f)
		return true
	}
	f.Warnings = append(f.Warnings, msg.Warnings...)
	var req *controlRequest
	if p.needsControl(snap, devs) {
		if req = p.askActor(snap, devs); req == nil {
			p.gone = true
			return false
		}
		p.svc.storedProfilePicked(&req.stored)
		before := snap.leaseMs
		snap = p.sess.snap.Load()
		if snap.leaseMs < before {
			p.shortenLeases(devs, snap.leaseMs)
		}
		f.Warnings = append(f.Warnings, req.warnings...)
	}
	p.finish(f, snap, devs, req)
	return true
}

// publishDeprecated publishes each use of a deprecated command in the
// session part sp of sess's message, applied or refused whole (a use is a
// use), with its replacement in the session's API layout, with the
// command's own value where it decoded ("": the docs' example value), and
// for one of the service's arms.
func publishDeprecated(svc *Service, sess *Session, sp *protocol.SessionPart, profile string) {
	for _, name := range sp.DeprecatedSent {
		value := ""
		switch {
		case name == protocol.CommandSetCoordinateOrigin:
			value = sp.SetCoordinateOrigin // the preset it maps to
		case name == protocol.CommandSetBasis && sp.SetBasis != nil:
			value = sp.SetBasis.Permutation
		}
		if c, ok := protocol.LookupDeprecatedCommand(name); ok {
			// An arm the session can see, not the docs' example one.
			arm := ""
			if arms := svc.Devices().OfType(protocol.TypeArm); len(arms) > 0 {
				arm = arms[0].ID
			}
			svc.activity.Publish(event.CommandDeprecated(c.Name, c.ReplacementFor(sess.APIVersion, value, arm), sess.ID, profile))
		}
	}
}

// needsControl reports whether the message in hand changes anything the
// actors own: the session's state, or a device's config or workspace.
// What changes nothing is answered from the published views and
// snapshots, as the actors would answer it.
func (p *tickPath) needsControl(snap *sessionSnapshot, devs *DeviceSet) bool {
	sp := &p.msg.Session
	switch {
	case sp.Profile != nil && sp.Profile.Name != snap.profile,
		sp.Subscribe != nil,
		sp.LeaseMs != 0 && sp.LeaseMs != snap.leaseMs,
		sp.SetBasis != nil, // deprecated: the actor publishes command-deprecated
		sp.Basis != nil && *sp.Basis != snap.basis,
		sp.SetCoordinateOrigin != "":
		return true
	}
	id := p.sess.ID
	for i := range p.msg.Devices {
		e := &p.msg.Devices[i]
		d := p.find(i, e, devs)
		if d == nil {
			continue
		}
		if len(e.Configure) > 0 && !d.unchangedBy(id, e.Configure) {
			return true
		}
		if _, changed := workspaceChange(d, id, e); changed {
			return true
		}
		if _, changed := gravityChange(d, id, e); changed {
			return true
		}
	}
	return false
}

// askActor hands the message in hand to the session actor and waits until
// it has every answer. It returns nil when the session ended first. A
// profile the message picks is read from the store here, where blocking on
// the disk is allowed, for the actor to apply.
func (p *tickPath) askActor(snap *sessionSnapshot, devs *DeviceSet) *controlRequest {
	r := p.control
	if r == nil {
		r = &controlRequest{done: make(chan struct{}, 1)}
		p.control = r
	}
	r.msg, r.devs, r.stored = &p.msg, devs, storedProfile{}
	if pr := p.msg.Session.Profile; pr != nil && pr.Name != snap.profile {
		r.stored = p.svc.loadStoredProfile(pr.Name, p.sess.ended)
	}
	p.svc.system.Root.Send(p.sess.pid, r)
	// The read kept the profile's document until the actor joined it, or
	// until the session ended without joining.
	defer p.svc.storedProfileRead(&r.stored)
	select {
	case <-r.done:
		// The actor has done with the set; kept here it would keep the
		// Devices that leave before the next message alive (an arm
		// unplugged, a lab node restarted) for the session's life.
		r.devs = nil
		return r
	case <-p.sess.ended:
		return nil
	}
}

// finish writes the message's commands and sends its frame, with the
// errors of every request the actor made (req; nil when none) in the
// order they were made.
func (p *tickPath) finish(f *protocol.Frame, snap *sessionSnapshot, devs *DeviceSet, req *controlRequest) {
	msg := &p.msg
	if req != nil {
		for i := range req.asked {
			if s := &req.asked[i]; s.entry < 0 && s.err != nil {
				f.Errors = append(f.Errors, asProtocolError(s.err, s.path))
			}
		}
	}
	now := p.svc.opts.Clock.Now()
	if len(p.fx) > 0 {
		p.forgetLeftDevices(devs)
	} else {
		p.fxSet = nil // a set kept with no effects left would keep its Devices
	}
	for i := range msg.Devices {
		e := &msg.Devices[i]
		d := p.find(i, e, devs)
		if d == nil {
			f.Warnings = append(f.Warnings, *protocol.Errorf(protocol.CodeUnknownDevice, e.Path,
				"no %s with id %q is connected; it was ignored", e.TypeKey, protocol.ClipQuoted(e.DeviceID)))
			continue
		}
		if req != nil {
			for j := range req.asked {
				if s := &req.asked[j]; s.entry == i && s.err != nil {
					f.Errors = append(f.Errors, asProtocolError(s.err, s.path))
				}
			}
		}
		if len(p.fx) > 0 {
			p.effectsBefore(f, d, e, now)
		}
		if p.staleControl(f, d, e, now, snap.leaseMs) {
			continue
		}
		p.command(f, i, d, e, now, snap.leaseMs)
		if len(p.fx) > 0 {
			p.effectsAfterCommand(d, e, snap.leaseMs)
		}
		if e.HasEffects {
			p.effects(f, d, e, now, snap.leaseMs)
		}
	}
	p.cmdViews.keep(len(msg.Devices)) // no device of an older message kept alive
	full := msg.Session.FullState != nil
	var only []protocol.DeviceType
	if full {
		only = msg.Session.FullState.DeviceTypes
		f.Session = p.sessionView(snap)
	}
	// The time the entries were applied at: an effect this message's
	// entry found expired (and told of) is the one the frame stops
	// counting, not one that ran out a moment later.
	p.fillDevices(f, snap, full, only, now)
	p.emit(f)
}

// find returns the device entry i of the message in hand names, or nil. It
// starts where entry i's device was found in the last message (hints holds
// indexes, not devices, so a removed device is not kept alive): with 100
// arms a scan was a quarter of a lock-step message's cost.
func (p *tickPath) find(i int, e *protocol.DeviceEntry, devs *DeviceSet) *Device {
	for len(p.hints) <= i {
		p.hints = append(p.hints, -1)
	}
	d, at := devs.findAt(e.Type, e.DeviceID, p.hints[i])
	if at >= 0 {
		p.hints[i] = at
	}
	return d
}

// command writes a control command into the device's register (data
// plane): no actor hop, no lock. e is the message's entry i.
func (p *tickPath) command(f *protocol.Frame, i int, d *Device, e *protocol.DeviceEntry, now int64, leaseMs int) {
	c := e.Command
	cmd := &p.cmd
	id := p.sess.ID
	view := p.cmdViews.viewFor(i, d, id)
	switch c.Kind {
	case protocol.CmdSetCursorForce:
		*cmd = hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3(view.Space.ForceToDevice(c.Vec))}
	case protocol.CmdSetCursorPosition:
		*cmd = hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3(view.Space.PositionToDevice(workspacePosition(view, c.Vec)))}
	case protocol.CmdSetAngularTorques:
		*cmd = hw.Command{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3(c.Angles)}
	case protocol.CmdSetAngularPosition:
		*cmd = hw.Command{Mode: hw.ModeAngle, AnglesDeg: hw.Angles3(c.Angles)}
	default:
		return // probes read without commanding
	}
	if d.Type != protocol.TypeArm {
		f.Warnings = append(f.Warnings, *protocol.Errorf(protocol.CodeCommandIgnored, e.Path+".commands",
			"a %s has no actuator; the command was ignored", e.TypeKey))
		return
	}
	reg := d.Register()
	if owner := reg.Claim(id); owner != id {
		p.answerBusy(f, e, d, owner, now)
		return
	}
	p.seq++
	deadline := p.leaseDeadline(leaseMs)
	if !reg.Write(id, p.seq, deadline, cmd, view.Params) {
		// The control ended between Claim and Write: the lease lapsed
		// (the loop took the device back), or a lab's node said another
		// holds the arm (the proxy took it). The client sees it as busy
		// for this tick, told by whom when someone holds it now.
		if owner := reg.Owner(); owner != 0 && owner != id {
			p.answerBusy(f, e, d, owner, now)
			return
		}
		f.Errors = append(f.Errors, *protocol.Errorf(protocol.CodeDeviceBusy, e.Path+".commands",
			"%s %s was released while the command was written; send it again", e.TypeKey, d.ID))
		return
	}
	// The device actor may have published a new view after this message
	// read it and rewritten the command before this write replaced it
	// (deviceCore.reparam): the view in force is the newest.
	keepView(reg, id, view.Params, func() *loop.Params { return p.cmdViews.viewFor(i, d, id).Params })
	p.releaseIfClosed(d)
}

// answerBusy answers a command to d, which owner controls, with device_busy.
func (p *tickPath) answerBusy(f *protocol.Frame, e *protocol.DeviceEntry, d *Device, owner uint64, now int64) {
	f.Errors = append(f.Errors, *protocol.Errorf(protocol.CodeDeviceBusy, e.Path+".commands",
		"%s %s is controlled by %s until it disconnects or its lease lapses", e.TypeKey, d.ID, holderText(owner)))
	p.noteBusy(d, owner, now)
}

// leaseDeadline is when a lease of leaseMs that the message in hand
// renews ends: counted from the message's arrival.
func (p *tickPath) leaseDeadline(leaseMs int) int64 {
	return p.arrivedNs + int64(leaseMs)*int64(time.Millisecond)
}

// staleControl reports whether entry e asks for control (a command or
// effects) in a message that arrived longer than the lease ago, and then
// tells the client it was not applied: its lease would have ended before
// it was read, so applying it would put a force back on an arm whose
// client may have gone quiet since (the service stalled while it waited
// in the socket). The rest of the entry (configure, probes) applies.
func (p *tickPath) staleControl(f *protocol.Frame, d *Device, e *protocol.DeviceEntry, now int64, leaseMs int) bool {
	commands := e.Command.Kind != protocol.CmdNone && e.Command.Kind != protocol.CmdProbePosition
	if !commands && !e.HasEffects || d.Type != protocol.TypeArm || p.leaseDeadline(leaseMs) > now {
		return false // a grip's command is ignored whatever its age (tickPath.command)
	}
	at := e.Path + ".commands"
	if !commands {
		at = e.Path + ".effects"
	}
	f.Warnings = append(f.Warnings, *protocol.Errorf(protocol.CodeStaleCommand, at,
		"this message arrived %.0f ms before it could be applied, longer than the %d ms lease: its control command and effects on %s %s were not applied (the rest of the entry was); send them again",
		float64(now-p.arrivedNs)/float64(time.Millisecond), leaseMs, e.TypeKey, d.ID))
	p.endLeaseBy(d, p.leaseDeadline(leaseMs))
	return true
}

// endLeaseBy ends the session's lease on d by end at the latest: a stale
// message that shortened the lease (lease_ms) is refused, and the command
// and effects in force under the longer lease a message before it granted
// must not outlast what this one allowed; the client asked for the shorter
// lease before it fell silent.
func (p *tickPath) endLeaseBy(d *Device, end int64) {
	id := p.sess.ID
	reg := d.Register()
	var c loop.Command
	if reg.Read(&c); reg.Owner() == id && c.Session == id && c.DeadlineNs > end {
		p.seq++
		reg.Renew(id, p.seq, end, c.Params)
	}
	if a := p.fx[d]; a != nil && a.deadlineNs > end {
		a.deadlineNs = end
	}
}

// shortenLeases ends the session's leases on every arm it holds by the
// shorter lease the message in hand set (lease_ms, or a profile whose
// stored lease is shorter), counted from its arrival: a client that
// shortens its lease and falls silent has its command and effects end by
// the lease it asked for, not by the longer one an earlier command was
// granted (as endLeaseBy does for a refused stale message). It runs only
// when a message shortens the lease, so it may look at every arm.
func (p *tickPath) shortenLeases(devs *DeviceSet, leaseMs int) {
	end := p.leaseDeadline(leaseMs)
	for _, d := range devs.OfType(protocol.TypeArm) {
		if d.Register().Owner() == p.sess.ID || p.fx[d] != nil {
			p.endLeaseBy(d, end)
		}
	}
}

// keepView makes the register's command of session carry the Params of the
// view in force (current), after a Write with wrote: the device actor
// rewrites the command when it publishes a view (deviceCore.reparam), and
// a Write that raced it, or a Reparam of a view read just before a newer
// one, would leave older Params in force until the next command. It reads
// the view again after each rewrite, until it stands (a few rounds at
// most: views change at the rate of configure messages).
func keepView(reg *loop.Register, session uint64, wrote *loop.Params, current func() *loop.Params) {
	for range 4 {
		cur := current()
		if cur == wrote {
			return
		}
		if !reg.Reparam(session, cur) {
			return
		}
		wrote = cur
	}
}

// releaseIfClosed undoes what this message claimed on d when Close ran
// while the message was on its way: Close released the devices and
// dropped the session's effects before this message claimed d again, and
// a force never outlives its session, even by a lease. Close sets closed
// before it releases, so a message that reads it unset has its claims
// released by Close itself.
func (p *tickPath) releaseIfClosed(d *Device) {
	if !p.sess.closed.Load() {
		return
	}
	d.rt.DropEffects(p.sess.ID)
	delete(p.fx, d)
	d.Register().Release(p.sess.ID)
}

// noteBusy publishes a device-busy event, at most one per device and
// owner per busyEvery (not one per tick). now is the service Clock time of
// the message.
func (p *tickPath) noteBusy(d *Device, owner uint64, now int64) {
	at := time.Unix(0, now) // the service Clock's time, as rate takes it
	k := busyKey{d.Type, d.ID}
	if n, ok := p.busy[k]; ok && n.owner == owner && !n.budget.AllowN(at, 1) {
		return
	}
	// A note whose budget is full again holds nothing back: drop it, so
	// the map holds only devices busy within the last interval.
	for key, n := range p.busy {
		if n.budget.TokensAt(at) >= 1 {
			delete(p.busy, key)
		}
	}
	n := busyNote{owner: owner, budget: rate.NewLimiter(rate.Every(busyEvery), 1)}
	n.budget.AllowN(at, 1)
	p.busy[k] = n
	p.svc.activity.Publish(event.DeviceBusy(d.Name, d.ID, p.sess.ID, owner))
}

func (p *tickPath) resetFrame() *protocol.Frame {
	f := &p.frame
	f.SessionID = p.sess.ID
	f.Arms = f.Arms[:0]
	f.Grips = f.Grips[:0]
	f.Session = nil
	f.Errors = f.Errors[:0]
	f.Warnings = f.Warnings[:0]
	return f
}

func (p *tickPath) sessionView(snap *sessionSnapshot) *protocol.SessionView {
	v := &p.sview
	v.Profile = nil
	if snap.profile != "" {
		v.Profile = &protocol.Profile{Name: snap.profile}
	}
	v.Basis = snap.basis
	v.LeaseMs = snap.leaseMs
	return v
}

// fillDevices adds every device's state, in this session's application
// space, to f; with config when withConfig is set (limited to the types in
// only, when given); nowNs (service Clock) says which effects are in force.
func (p *tickPath) fillDevices(f *protocol.Frame, snap *sessionSnapshot, withConfig bool, only []protocol.DeviceType, nowNs int64) {
	// A full-state frame is the full state: the subscription's arm state
	// fields select only in the frames that answer other messages.
	f.ArmState = 0
	if !withConfig {
		f.ArmState = snap.sub.armState
	}
	fillFrame(p.visible.of(snap.sub, p.svc.Devices()), p.sess.ID, f, &p.snap, withConfig, only, p.codec, &p.ext, &p.views, nowNs)
}

// FillFrame fills f with every device as session sees it (0: the default
// view), with config when withConfig is set. GET /devices uses it.
func (s *Service) FillFrame(f *protocol.Frame, session uint64, withConfig bool) {
	var snap loop.Snapshot
	fillFrame(s.Devices(), session, f, &snap, withConfig, nil, nil, nil, nil, s.opts.Clock.Now())
}

// fillFrame fills f. With a codec, state-only elements of devices seen
// through their shared default view come from the device's encoded-element
// cache: one encoding per device, published snapshot and format, however
// many sessions frame it. A cache hit neither copies the snapshot nor
// encodes, nor quotes the device's id. views (nil: none) remembers the
// session's views from frame to frame. nowNs (service Clock) says which
// effects are still in force.
func fillFrame(devs *DeviceSet, session uint64, f *protocol.Frame, snap *loop.Snapshot, withConfig bool, only []protocol.DeviceType, codec Codec, xs *armExtScratch, views *viewMemo, nowNs int64) {
	xs.reset()
	f.Warnings = staleStateWarnings(f.Warnings, devs)
	configFor := func(t protocol.DeviceType) bool {
		if !withConfig {
			return false
		}
		if only == nil {
			return true // no device_types list: every type
		}
		for _, o := range only {
			if o == t {
				return true
			}
		}
		return false
	}
	armConfig, gripConfig := configFor(protocol.TypeArm), configFor(protocol.TypeGrip)
	slot := cacheSlot(codec)
	arms := devs.OfType(protocol.TypeArm)
	perArm := arms // the arms not in a run
	if slot >= 0 && !armConfig && f.ArmState == 0 && !anyOutputScopedControl(arms) {
		if r := armRunFor(devs, arms, slot, session, views, snap, codec); r != nil {
			// One element holding every arm's, commas between: the
			// encoder copies it as it would the elements one by one. Set
			// in a reused element, as a cache hit below.
			// Marked Spliced: a sink that splices writes it from the run
			// itself (emit).
			if cap(f.Arms) > len(f.Arms) {
				f.Arms = f.Arms[:len(f.Arms)+1]
				af := &f.Arms[len(f.Arms)-1]
				af.DeviceID, af.Config, af.Element, af.Spliced = "", nil, r.body, true
			} else {
				f.Arms = append(f.Arms, protocol.ArmFrame{Element: r.body, Spliced: true})
			}
			perArm = nil
		}
	}
	for i, d := range perArm {
		v := views.viewFor(i, d, session)
		// An arm with effects is encoded per frame: the cache is keyed by
		// the loop's snapshot, the effects by the session's Set.
		ext := armExt(d, v, xs, nowNs) // effects and passivity (effects.go)
		cacheable := ext == nil && !armConfig && slot >= 0 && v == d.defaultView.Load() && f.ArmState == 0
		var seq uint64
		var hit []byte
		if cacheable {
			// The sequence before the snapshot: what is stored under it is
			// that publish or a newer one, never an older one.
			seq = d.publishSeq()
			hit = d.frames.cached(slot, seq, v)
		}
		if hit != nil && len(f.Arms) < cap(f.Arms) {
			// A hit sets the element's id and encoding only, in a reused
			// element: zeroing its state (about 450 bytes, not read beside
			// an encoded element) was a sixth of a 100-arm frame's time.
			// State.Ext is left as it is too (not read either; the other
			// paths build their element afresh), so that a hit writes one
			// cache line of the element.
			f.Arms = f.Arms[:len(f.Arms)+1]
			af := &f.Arms[len(f.Arms)-1]
			af.DeviceID, af.Config, af.Element, af.Spliced = d.ID, nil, hit, false
			continue
		}
		// Built in place in f's reused slice: a local would escape through
		// the codec call and cost an allocation per device per frame.
		f.Arms = append(f.Arms, protocol.ArmFrame{DeviceID: d.ID})
		af := &f.Arms[len(f.Arms)-1]
		af.State.Ext = ext
		switch {
		case armConfig:
			d.Load(snap)
			fillArm(af, snap, v)
			applyNavigation(af, v, d)
			af.Config = &v.Config
		case cacheable:
			if af.Element = hit; af.Element == nil {
				d.Load(snap)
				fillArm(af, snap, v)
				if d.frames.worthStoring(slot, seq, session) {
					af.Element = d.frames.store(slot, seq, v, codec.AppendArmElement(d.frames.buffer(slot, 1024), af))
				}
			}
		case !f.ArmState.NeedsPose():
			// The subscribed fields need no joint angles or orientation:
			// leave them underived (they are not written).
			d.LoadPhysical(snap)
			fillArm(af, snap, v)
			applyNavigation(af, v, d)
		default:
			d.Load(snap)
			fillArm(af, snap, v)
			applyNavigation(af, v, d)
		}
	}
	grips := devs.OfType(protocol.TypeGrip)
	for j, d := range grips {
		v := views.viewFor(len(arms)+j, d, session)
		f.Grips = append(f.Grips, protocol.GripFrame{DeviceID: d.ID, Link: d.Link()})
		gf := &f.Grips[len(f.Grips)-1]
		switch {
		case gripConfig:
			d.Load(snap)
			fillGrip(gf, snap, v)
			gf.Config = &v.Config
		case slot >= 0 && v == d.defaultView.Load() && f.ArmState == 0:
			seq := d.publishSeq()
			if gf.Element = d.frames.cached(slot, seq, v); gf.Element == nil {
				d.Load(snap)
				fillGrip(gf, snap, v)
				if d.frames.worthStoring(slot, seq, session) {
					gf.Element = d.frames.store(slot, seq, v, codec.AppendGripElement(d.frames.buffer(slot, 512), gf))
				}
			}
		default:
			d.Load(snap)
			fillGrip(gf, snap, v)
		}
	}
	views.keep(len(arms) + len(grips))
}

// staleStateWarnings appends a state_stale warning for each device of devs
// whose newest state is older than its bound (StaleStateReporter): the
// frame shows that state, and a client must not take it as the arm's now
// (a lab node whose link was cut has ended the force the frame shows). On
// every frame while it lasts, so that a client reading any one frame (a
// dashboard, GET /devices) knows; none once fresh states arrive again. A
// service without lab devices pays one length check.
func staleStateWarnings(dst []protocol.Error, devs *DeviceSet) []protocol.Error {
	for _, d := range devs.remote {
		if ageNs, boundNs := d.remote.StateStaleness(); ageNs > boundNs {
			dst = append(dst, *protocol.Errorf(protocol.CodeStateStale, d.Name+"."+d.ID,
				"the state of %s %s is %.0f ms old, past the lab's lease of %.0f ms: its node's states stopped arriving, commands may not be reaching the arm either, and its node ends any force the frame shows when its lease lapses; the warning stops once states arrive again",
				d.Name, d.ID, float64(ageNs)/float64(time.Millisecond), float64(boundNs)/float64(time.Millisecond)))
		}
	}
	return dst
}

func (p *tickPath) emit(f *protocol.Frame) {
	f.Warnings = protocol.TrimWarnings(f.Warnings, p.msg.WarningsDropped)
	f.Errors = protocol.TrimErrors(f.Errors, p.msg.ErrorsDropped)
	p.counts.frame(f)
	// A sink that splices writes the run from where it lies; the frame
	// holds it (views.run) until the write returns.
	f.Splice = p.splicer != nil
	buf := p.codec.AppendFrame(p.sink.Buffer(), f, p.svc.opts.Types)
	if f.Splice && f.SplicedAt >= 0 {
		p.splicer.SendSpliced(buf, f.SplicedAt, splicedElement(f))
	} else {
		p.views.run.release() // its bytes are in buf now
		p.sink.Send(buf)
	}
	p.views.run.release()
	p.trimScratch()
}

// splicedElement is the element the encoder left out of f (the first arm
// marked Spliced, as AppendFrameAs picks it).
func splicedElement(f *protocol.Frame) []byte {
	for i := range f.Arms {
		if a := &f.Arms[i]; a.Spliced && a.Config == nil && a.Element != nil {
			return a.Element
		}
	}
	return nil
}

// fillArm converts a loop snapshot into an arm frame in the view's
// application space.
func fillArm(af *protocol.ArmFrame, snap *loop.Snapshot, v *View) {
	st := &snap.State
	s := &af.State
	s.CursorPosition = v.Space.PositionToApp(space.Vec3(st.PositionM))
	s.CursorVelocity = v.Space.VelocityToApp(space.Vec3(st.VelocityMps))
	s.AngularPosition = space.Angles3(st.AnglesDeg)
	s.AngularVelocity = space.Angles3(st.AngularVelocityDps)
	s.BodyOrientation = v.Space.OrientationToApp(orientation(st.BodyOrientation))
	s.CurrentCursorForce = v.Space.ForceToApp(space.Vec3(st.ForceN))
	s.ControlMode, s.ControlDomain = controlMode(snap.Mode)
	fillTargets(s, snap, v)
	af.Status = protocol.ArmStatus{
		Calibrated:  st.Status&hw.StatusCalibrated != 0,
		InUse:       snap.Owner != 0,
		Ready:       st.Status&hw.StatusReady != 0 && !snap.Failed,
		Started:     st.Status&hw.StatusStarted != 0,
		PowerSupply: st.Status&hw.StatusPowerSupply != 0,
	}
	s.CalibrationState = protocol.CalibrationNone
	if af.Status.Calibrated {
		s.CalibrationState = protocol.CalibrationDone
	}
}

func fillGrip(gf *protocol.GripFrame, snap *loop.Snapshot, v *View) {
	st := &snap.State
	gf.State.Orientation = v.Space.OrientationToApp(orientation(st.Orientation))
	gf.State.Buttons.A = st.Buttons&hw.ButtonA != 0
	gf.State.Buttons.B = st.Buttons&hw.ButtonB != 0
	gf.State.Buttons.C = st.Buttons&hw.ButtonC != 0
	gf.State.Hall = st.Hall
	gf.State.Battery = st.Battery
	gf.Status = protocol.GripStatus{
		Connected: st.Status&hw.StatusConnected != 0,
		Awake:     st.Status&hw.StatusAwake != 0,
		Ready:     st.Status&hw.StatusReady != 0 && !snap.Failed,
		Error:     int(st.GripError),
	}
}

// orientation reads a device quaternion; before a device's first tick it is
// all zeros, which is no rotation at all, so it reads as the identity.
func orientation(q hw.Quat) space.Quat {
	if q == (hw.Quat{}) {
		return space.IdentityQuat()
	}
	return space.Quat(q)
}

func controlMode(m hw.ControlMode) (protocol.ControlMode, protocol.ControlDomain) {
	switch m {
	case hw.ModeForce:
		return protocol.ControlForce, protocol.DomainCartesian
	case hw.ModePosition:
		return protocol.ControlPosition, protocol.DomainCartesian
	case hw.ModeTorque:
		return protocol.ControlTorque, protocol.DomainAngular
	case hw.ModeAngle:
		return protocol.ControlAngle, protocol.DomainAngular
	}
	return protocol.ControlIdle, protocol.DomainCartesian
}

// asProtocolError gives err the shape of a frame's error entry.
func asProtocolError(err error, path string) protocol.Error { return *protocol.AsError(err, path) }
