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
	// AppendArmState and AppendGripState encode one device's state and
	// status alone, for the per-device cache (ArmFrame.Body).
	AppendArmState(dst []byte, a *protocol.ArmFrame) []byte
	AppendGripState(dst []byte, g *protocol.GripFrame) []byte
	// APIVersion names the format: "3.x" or "3.0".
	APIVersion() string
}

// FrameSink is a connection's writer side, as the session actor sees it.
type FrameSink interface {
	// Buffer returns an empty buffer to encode the next frame into.
	Buffer() []byte
	// Send writes a frame, or queues it for a writer goroutine; the sink
	// owns buf from then on. It is called on the session actor's goroutine
	// (with the synchronized dispatcher, often the connection's reader), and
	// the session handles no other message until it returns, so Send must
	// bound how long it blocks: the WebSocket sink writes in place with a
	// write deadline (5 s) and closes a client that misses it. Send reports
	// no error: a sink that fails closes itself, and later Sends drop their
	// frames.
	Send(buf []byte)
	// Recycle hands back a message's bytes once the session is done with them.
	Recycle(inbound []byte)
	// Close closes the connection for reason, with the reason's close code
	// and text. The first call wins; later calls do nothing.
	Close(reason protocol.CloseReason)
}

// SessionOptions describe a new connection.
type SessionOptions struct {
	Remote string
	Codec  Codec
	Sink   FrameSink
}

// Session is one client connection on the simulation channel. Its actor
// owns the session's state (profile, basis, lease, the messages in hand),
// processes the client's messages in order and answers each with exactly
// one frame.
type Session struct {
	// Atomics first. profile and basis mirror the actor's own fields for
	// readers outside it (listings, selectors).
	profile atomic.Pointer[string]
	basis   atomic.Pointer[protocol.Basis]
	closed  atomic.Bool
	reason  atomic.Pointer[protocol.CloseReason] // set once, first cause wins
	// inboxed counts the client messages sent to the actor's mailbox and
	// not yet taken from it: while there are any, Deliver sends the next
	// one after them.
	inboxed atomic.Int64

	// Immutable after OpenSession.
	ID          uint64
	Remote      string
	APIVersion  string
	ConnectedAt time.Time
	svc         *Service
	pid         *actor.PID
	actor       *sessionActor
	sink        FrameSink
	closeOnce   sync.Once
}

// Profile is the session's profile name ("" when it has none).
func (s *Session) Profile() string {
	if p := s.profile.Load(); p != nil {
		return *p
	}
	return ""
}

// Basis is the session-level basis.
func (s *Session) Basis() protocol.Basis {
	if b := s.basis.Load(); b != nil {
		return *b
	}
	return protocol.Basis{Permutation: protocol.IdentityBasis}
}

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

// Deliver hands one client message to the session actor. The actor owns
// buf from then on. It never blocks; the transport bounds how many messages
// are in flight.
//
// A message that finds the actor idle, with nothing in its mailbox, is
// processed at once on the caller's goroutine under the actor's lock (see
// sessionActor.mu): the lock-step tick, a client message answered by one
// frame, then costs no mailbox post, dispatch and invocation (3.5 % of the
// service's CPU with 100 clients at 1 kHz) and no allocation. Others go
// through the mailbox, behind whatever is in it, so messages keep their
// order either way.
func (s *Session) Deliver(buf []byte) {
	if s.actor.deliverDirect(buf) {
		return
	}
	s.inboxed.Add(1)
	s.svc.system.Root.Send(s.pid, &inbound{buf: buf})
}

// Close ends the session for reason: its devices are released at once (the
// loops ramp their force to zero from the next tick), then the actor stops.
// It is idempotent; the first reason recorded (here or by the session's
// own failure) is the one session-ended and GET /sessions/closed report.
func (s *Session) Close(reason protocol.CloseReason) {
	s.setReason(reason)
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		for _, d := range s.svc.Devices().All() {
			d.Register().Release(s.ID)
		}
		s.svc.system.Root.Stop(s.pid)
	})
}

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

// OpenSession creates a session for a new connection: the registry
// attaches it to every device and lists it, then it sends the inventory
// frame.
func (s *Service) OpenSession(o SessionOptions) (*Session, error) {
	sess := &Session{
		ID:          s.nextSession.Add(1),
		Remote:      o.Remote,
		APIVersion:  o.Codec.APIVersion(),
		ConnectedAt: time.Now(),
		svc:         s,
		sink:        o.Sink,
	}
	a := &sessionActor{
		sess:    sess,
		svc:     s,
		codec:   o.Codec,
		sink:    o.Sink,
		leaseMs: s.opts.DefaultLeaseMs,
		counts:  s.traffic.of(o.Codec.APIVersion()),
		basis:   protocol.Basis{Permutation: protocol.IdentityBasis},
		busy:    make(map[busyKey]busyNote),
	}
	sess.actor = a
	// The synchronized dispatcher runs the mailbox on the sender's
	// goroutine when it is idle: a lock-step client's message is processed
	// by the connection's reader itself, with no goroutine hop per tick
	// (the default dispatcher starts a goroutine each time the mailbox
	// wakes, which costs more than the rest of the message).
	//
	// A session actor is spawned at the root, so its supervisor is a
	// guardian (WithSupervisor would only supervise its children): the
	// service's sessionSupervisor stops a session that panics.
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
	s.system.Root.Send(pid, &beginSession{})
	return sess, nil
}

// sessionSupervisor is the guardian of every session actor. A session that
// panics is not restarted with half its state: its connection is closed
// with 1011, it is stopped (which releases its devices) and it ends with
// reason internal_error. Other sessions carry on.
type sessionSupervisor struct{ svc *Service }

func (g *sessionSupervisor) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, _ *actor.RestartStatistics, reason, _ any) {
	sys.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: actor.StopDirective})
	for _, sess := range g.svc.Sessions() {
		if sess.pid.Equal(child) {
			sess.crashed(reason)
			break
		}
	}
	sup.StopChildren(child)
}

// rethrow carries a panic of Deliver's direct path to Receive, which
// panics with it again for the session's supervisor.
type rethrow struct{ reason any }

// crashed closes the connection of a session whose actor panicked, with
// 1011 and reason internal_error; the caller stops the actor.
func (s *Session) crashed(reason any) {
	s.svc.log.Error().Uint64("session_id", s.ID).Interface("reason", reason).Msg("session crashed; closing it")
	s.setReason(protocol.CloseInternalError)
	s.sink.Close(protocol.CloseInternalError)
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

// Stages of the message in hand. A stage that asks another actor waits for
// the answers, as messages, before the next one starts; the client's later
// messages queue behind it, so frames stay one per message and in order.
const (
	stageIdle      = iota // no message in hand
	stageConfigure        // session part applied; device configures next
	stageFrame            // configures answered; commands and frame next
)

// askSlot is one request the message in hand made, and its outcome.
type askSlot struct {
	entry int // index in msg.Devices, or -1 for the session part
	path  string
	err   error
	done  bool
}

// sessionActor is one connection's actor. All its fields are owned by it,
// under mu.
type sessionActor struct {
	// mu is held by Receive and by Deliver's direct path (deliverDirect),
	// so the actor's state has one owner at a time whichever goroutine
	// runs it. Nothing that holds it sends to the actor's own mailbox
	// and waits (the synchronized dispatcher would run Receive there).
	mu sync.Mutex
	// broken: a message panicked; the supervisor is stopping the actor
	// and nothing more is processed.
	broken bool
	// stopped: the actor stopped; a message delivered directly now is
	// dropped as the mailbox of a stopped actor drops it.
	stopped bool

	sess  *Session
	svc   *Service
	codec Codec
	sink  FrameSink
	// counts are the session's API format's traffic counters, looked up
	// once rather than in a sync.Map twice per message.
	counts  *formatCounters
	profile string
	basis   protocol.Basis // session-level
	leaseMs int
	seq     uint64
	busy    map[busyKey]busyNote
	started bool // the inventory went out (and session-started)

	// The message in hand and the ones queued behind it.
	stage   int
	gen     uint64 // counts messages; an answer names the one it is for
	cur     []byte
	devs    *DeviceSet // the device set the message in hand is applied to
	asked   []askSlot
	waiting int
	// reviewed is set when the message in hand changed the profile or
	// basis: its frame waits until every device published the new views.
	reviewed bool
	queue    [][]byte
	qhead    int

	// Scratch reused every message, taken at the session's first message:
	// a session that has said nothing since its inventory (most of a
	// large idle fleet) does not hold it.
	*sessionScratch
	sub subscription // session.configure.subscribe (subscribe.go)
}

// sessionScratch is what a session reuses for every message, so that
// decoding and encoding allocate little.
type sessionScratch struct {
	msg   protocol.ClientMessage
	frame protocol.Frame
	snap  loop.Snapshot
	cmd   hw.Command
	sview protocol.SessionView
	// hints[i] is where message entry i's device was in its type's list
	// last time (find).
	hints []int
}

func (a *sessionActor) Receive(ctx actor.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer func() {
		if v := recover(); v != nil {
			a.broken = true
			panic(v) // to the session's supervisor
		}
	}()
	switch m := ctx.Message().(type) {
	case *actor.Started:
	case *beginSession:
		a.start()
	case *actor.Stopping:
		a.stop()
	case *actor.Stopped, *actor.Restarting:
		a.stopped = true
	case *rethrow:
		panic(m.reason)
	case *inbound:
		a.sess.inboxed.Add(-1)
		if a.stopped || a.broken {
			return
		}
		a.deliver(m.buf)
	case *answer:
		a.answered(m)
	default:
		a.logged(a.svc.log.Warn()).Str("type", fmt.Sprintf("%T", m)).Msg("session actor: unknown message dropped")
	}
}

// logged adds the session's fields to a line of the service's logger (nil,
// and free, when its level is off). A logger kept per session held half a
// kilobyte of every idle session.
func (a *sessionActor) logged(e *zerolog.Event) *zerolog.Event {
	return e.Uint64("session_id", a.sess.ID).Str("remote", a.sess.Remote)
}

func (a *sessionActor) start() {
	a.started = true
	a.svc.activity.Publish(event.SessionStarted(a.sess.ID, "", a.sess.Remote, a.sess.APIVersion))
	a.logged(a.svc.log.Debug()).Str("api_version", a.sess.APIVersion).Msg("session started") // the event is the info line

	// The inventory borrows a scratch it does not keep (see sessionScratch).
	a.sessionScratch = new(sessionScratch)
	defer func() { a.sessionScratch = nil }()
	f := a.resetFrame()
	a.fillDevices(f, true, nil)
	f.Session = a.sessionView()
	a.emit(f)
}

func (a *sessionActor) stop() {
	s := a.svc
	// Release first: a force never outlives its session, even one that
	// panicked.
	for _, d := range s.Devices().All() {
		d.Register().Release(a.sess.ID)
	}
	a.sess.closed.Store(true)
	a.svc.system.Root.Send(s.registry, &sessionClosed{sess: a.sess})
	if s.writeBehind != nil && a.profile != "" {
		if err := s.writeBehind.Flush(); err != nil {
			a.logged(a.svc.log.Error()).Err(err).Msg("flush profile config at session end")
		}
	}
	if a.started {
		s.sessionEnded(a.sess)
		a.logged(a.svc.log.Debug()).Str("reason", string(a.sess.CloseReason())).Msg("session ended") // the event is the info line
	}
}

// deliverDirect processes buf on the caller's goroutine, as Receive would
// an inbound message, if the actor is idle: not running on another
// goroutine, no message in hand or queued, none in its mailbox, its
// inventory sent. It reports whether it took buf. A panic goes to the
// session's supervisor, as one in Receive does.
func (a *sessionActor) deliverDirect(buf []byte) (taken bool) {
	if a.sess.inboxed.Load() != 0 || !a.mu.TryLock() {
		return false
	}
	var crash any
	func() {
		defer a.mu.Unlock()
		defer func() {
			if v := recover(); v != nil {
				crash, a.broken = v, true
			}
		}()
		if !a.started || a.stopped || a.broken || !a.idle() || a.sess.inboxed.Load() != 0 {
			return
		}
		taken = true
		a.deliver(buf)
	}()
	if crash != nil {
		// Through the mailbox, so the session's supervisor handles it
		// as it handles a panic in Receive.
		a.svc.system.Root.Send(a.sess.pid, &rethrow{reason: crash})
	}
	return taken
}

// deliver takes one client message: at once when none is in hand (every
// lock-step tick), else behind the queue.
func (a *sessionActor) deliver(buf []byte) {
	if a.idle() {
		a.begin(buf)
	} else {
		a.queue = append(a.queue, buf)
	}
	a.drain()
}

// idle says no message is in hand or queued.
func (a *sessionActor) idle() bool { return a.stage == stageIdle && a.qhead == len(a.queue) }

// drain moves the message in hand on as far as its answers allow, then
// takes the queued messages one by one, until one waits or none is left.
func (a *sessionActor) drain() {
	for {
		if a.stage != stageIdle {
			if a.waiting > 0 {
				return
			}
			a.advance()
			continue
		}
		if a.qhead == len(a.queue) {
			a.queue, a.qhead = a.queue[:0], 0
			return
		}
		buf := a.queue[a.qhead]
		a.queue[a.qhead] = nil
		a.qhead++
		a.begin(buf)
	}
}

// answered records the outcome of one request of the message in hand.
func (a *sessionActor) answered(m *answer) {
	if m.gen != a.gen || a.stage == stageIdle {
		return // an answer for a message already framed (cannot happen; cheap to check)
	}
	if m.slot < 0 || m.slot >= len(a.asked) {
		return
	}
	slot := &a.asked[m.slot]
	if slot.done {
		return
	}
	slot.done = true
	a.waiting--
	err := m.err
	switch r := m.reply.(type) {
	case *entryReply:
		if err == nil {
			err = r.err
		}
	case *ack:
		if err == nil {
			err = r.err
		}
	}
	slot.err = err
	a.drain()
}

// ask sends msg to pid for the message in hand, now (so requests to one
// actor keep their order). The answer comes back as an *answer message: a
// goroutine waits for it outside any Receive and Sends it to the session,
// which, on the synchronized dispatcher, then runs on that goroutine rather
// than on the answering actor's.
func (a *sessionActor) ask(pid *actor.PID, msg actorMessage, entry int, path string) {
	a.asked = append(a.asked, askSlot{entry: entry, path: path})
	a.waiting++
	req := a.svc.send(pid, msg)
	self, root, gen, slot := a.sess.pid, a.svc.system.Root, a.gen, len(a.asked)-1
	go func() {
		r, err := req.wait()
		root.Send(self, &answer{gen: gen, slot: slot, reply: r, err: err})
	}()
}

// begin takes a client message in hand: it decodes it and applies its
// session part; drain moves it on from there.
func (a *sessionActor) begin(buf []byte) {
	a.gen++
	a.cur = buf
	a.asked = a.asked[:0]
	a.waiting = 0
	if a.sessionScratch == nil {
		a.sessionScratch = new(sessionScratch)
	}
	msg := &a.msg
	msg.Reset()
	f := a.resetFrame()
	if a.sess.closed.Load() {
		a.done()
		return
	}
	a.counts.message()
	if errs := a.codec.Decode(buf, a.svc.opts.Types, msg); len(errs) > 0 {
		// Applied not at all: the frame reports the errors and the state.
		f.Errors = append(f.Errors, errs...)
		f.Warnings = append(f.Warnings, msg.Warnings...)
		a.fillDevices(f, false, nil)
		a.emit(f)
		a.done()
		return
	}
	f.Warnings = append(f.Warnings, msg.Warnings...)
	a.devs = a.svc.Devices()
	a.applySession()
	a.stage = stageConfigure
}

// advance runs the next stage of the message in hand; every answer of the
// stage before it is in.
func (a *sessionActor) advance() {
	switch a.stage {
	case stageConfigure:
		a.stage = stageFrame
		a.configureAll()
	case stageFrame:
		a.finish()
		a.done()
	}
}

// done ends the message in hand.
func (a *sessionActor) done() {
	a.sink.Recycle(a.cur)
	a.cur, a.devs, a.stage = nil, nil, stageIdle
}

// applySession applies the session part of a message: profile, basis,
// lease and the deprecated session commands. A new profile or basis goes
// to the devices through the registry, which answers once every device has
// it queued; the device configures of the message are sent after that
// answer, so they apply under the new profile and basis.
func (a *sessionActor) applySession() {
	sp := &a.msg.Session
	profile, basis := a.profile, a.basis
	// The decoder already warned about a required_version this service
	// does not satisfy.
	if p := sp.Profile; p != nil && p.Name != a.profile {
		a.profile = p.Name
		name := p.Name
		a.sess.profile.Store(&name)
		a.loadProfileSession()
	}
	if sp.Subscribe != nil {
		a.sub.update(sp.Subscribe, a.devs, &a.frame)
	}
	if sp.LeaseMs != 0 && sp.LeaseMs != a.leaseMs {
		a.leaseMs = sp.LeaseMs
		a.saveProfileSession()
	}
	// The deprecated command first: when a message carries both, the
	// current spelling wins.
	if sp.SetBasis != nil {
		a.setBasis(*sp.SetBasis)
		a.deprecated(protocol.CommandSetBasis)
	}
	if sp.Basis != nil {
		a.setBasis(*sp.Basis)
	}
	if sp.SetCoordinateOrigin != "" {
		a.deprecated(protocol.CommandSetCoordinateOrigin)
	}
	a.reviewed = a.profile != profile || a.basis != basis
	if a.reviewed {
		a.ask(a.svc.registry, &updateSession{sess: a.sess, profile: a.profile, basis: a.basis}, -1, "session.configure")
	}
}

func (a *sessionActor) deprecated(name string) {
	if c, ok := protocol.LookupDeprecatedCommand(name); ok {
		a.svc.activity.Publish(event.CommandDeprecated(c.Name, c.Replacement, a.sess.ID, a.profile))
	}
}

func (a *sessionActor) setBasis(b protocol.Basis) {
	if b == a.basis {
		return
	}
	a.basis = b
	a.sess.basis.Store(&b)
	a.saveProfileSession()
}

// configureAll sends the message's configures to the device actors: the
// deprecated set_coordinate_origin (a preset on every device of the
// session, arms and grips) first, then each device entry's own. After a
// profile or basis change it also waits for every device to publish the
// views the registry's attachments bring, so the frame shows them.
func (a *sessionActor) configureAll() {
	msg := &a.msg
	if a.reviewed {
		for _, d := range a.devs.All() {
			a.ask(d.pid, &published{}, -1, "session.configure")
		}
	}
	if o := msg.Session.SetCoordinateOrigin; o != "" {
		preset := []protocol.Entry{protocol.Preset{Preset: o}}
		for _, d := range a.devs.All() {
			a.configure(d, -1, "session.set_coordinate_origin", "", preset)
		}
	}
	for i := range msg.Devices {
		e := &msg.Devices[i]
		d := a.find(i, e)
		if d == nil {
			continue // finish warns
		}
		if len(e.Configure) > 0 {
			a.configure(d, i, e.Path, ".configure", e.Configure)
		}
		a.stateCommands(d, i, e)
	}
}

// finish writes the message's commands and sends its frame, with the
// errors of every request in the order they were made.
func (a *sessionActor) finish() {
	msg, f := &a.msg, &a.frame
	for i := range a.asked {
		if s := &a.asked[i]; s.entry < 0 && s.err != nil {
			f.Errors = append(f.Errors, asProtocolError(s.err, s.path))
		}
	}
	now := a.svc.opts.Clock.Now()
	for i := range msg.Devices {
		e := &msg.Devices[i]
		d := a.find(i, e)
		if d == nil {
			f.Warnings = append(f.Warnings, *protocol.Errorf(protocol.CodeUnknownDevice, e.Path,
				"no %s with id %q is connected; it was ignored", e.TypeKey, e.DeviceID))
			continue
		}
		for j := range a.asked {
			if s := &a.asked[j]; s.entry == i && s.err != nil {
				f.Errors = append(f.Errors, asProtocolError(s.err, s.path))
			}
		}
		a.command(f, d, e, now)
	}
	full := msg.Session.FullState != nil
	var only []protocol.DeviceType
	if full {
		only = msg.Session.FullState.DeviceTypes
		f.Session = a.sessionView()
	}
	a.fillDevices(f, full, only)
	a.emit(f)
}

// find returns the device entry i of the message in hand names, or nil. It
// starts where entry i's device was found in the last message (hints holds
// indexes, not devices, so a removed device is not kept alive): with 100
// arms a scan was a quarter of a lock-step message's cost.
func (a *sessionActor) find(i int, e *protocol.DeviceEntry) *Device {
	for len(a.hints) <= i {
		a.hints = append(a.hints, -1)
	}
	d, at := a.devs.findAt(e.Type, e.DeviceID, a.hints[i])
	if at >= 0 {
		a.hints[i] = at
	}
	return d
}

// configure applies a device entry's configure through the device actor.
// Clients may re-send an unchanged configure every tick: when the entries
// would change nothing, the actor is not asked (a round trip per device per
// tick). The frame is the same either way: on success the actor's reply
// adds nothing to it, and unchangedBy answers true only where the actor
// would succeed. An error's path is path+suffix.
func (a *sessionActor) configure(d *Device, entry int, path, suffix string, entries []protocol.Entry) {
	if d.unchangedBy(a.sess.ID, entries) {
		return
	}
	a.ask(d.pid, &setEntries{session: a.sess.ID, entries: entries, ticket: &ticket{}}, entry, path+suffix)
}

// command writes a control command into the device's register (data
// plane): no actor hop, no lock.
func (a *sessionActor) command(f *protocol.Frame, d *Device, e *protocol.DeviceEntry, now int64) {
	c := e.Command
	cmd := &a.cmd
	view := d.ViewFor(a.sess.ID)
	switch c.Kind {
	case protocol.CmdSetCursorForce:
		*cmd = hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3(view.Space.ForceToDevice(c.Vec))}
	case protocol.CmdSetCursorPosition:
		*cmd = hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3(view.Space.PositionToDevice(c.Vec))}
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
	if owner := reg.Claim(a.sess.ID); owner != a.sess.ID {
		f.Errors = append(f.Errors, *protocol.Errorf(protocol.CodeDeviceBusy, e.Path+".commands",
			"%s %s is controlled by session %d until it disconnects or its lease lapses", e.TypeKey, d.ID, owner))
		a.noteBusy(d, owner, now)
		return
	}
	a.seq++
	deadline := now + int64(a.leaseMs)*int64(time.Millisecond)
	if !reg.Write(a.sess.ID, a.seq, deadline, cmd, view.Params) {
		// The lease lapsed between Claim and Write: the loop took the
		// device back. The client sees it as busy for this tick.
		f.Errors = append(f.Errors, *protocol.Errorf(protocol.CodeDeviceBusy, e.Path+".commands",
			"%s %s was released while the command was written; send it again", e.TypeKey, d.ID))
	}
}

// noteBusy publishes a device-busy event, at most one per device and
// owner per busyEvery (not one per tick). now is the service Clock time of
// the message.
func (a *sessionActor) noteBusy(d *Device, owner uint64, now int64) {
	at := time.Unix(0, now) // the service Clock's time, as rate takes it
	k := busyKey{d.Type, d.ID}
	if n, ok := a.busy[k]; ok && n.owner == owner && !n.budget.AllowN(at, 1) {
		return
	}
	// A note whose budget is full again holds nothing back: drop it, so
	// the map holds only devices busy within the last interval.
	for key, n := range a.busy {
		if n.budget.TokensAt(at) >= 1 {
			delete(a.busy, key)
		}
	}
	n := busyNote{owner: owner, budget: rate.NewLimiter(rate.Every(busyEvery), 1)}
	n.budget.AllowN(at, 1)
	a.busy[k] = n
	a.svc.activity.Publish(event.DeviceBusy(d.Name, d.ID, a.sess.ID, owner))
}

func (a *sessionActor) resetFrame() *protocol.Frame {
	f := &a.frame
	f.SessionID = a.sess.ID
	f.Arms = f.Arms[:0]
	f.Grips = f.Grips[:0]
	f.Session = nil
	f.Errors = f.Errors[:0]
	f.Warnings = f.Warnings[:0]
	return f
}

func (a *sessionActor) sessionView() *protocol.SessionView {
	v := &a.sview
	v.Profile = nil
	if a.profile != "" {
		v.Profile = &protocol.Profile{Name: a.profile}
	}
	v.Basis = a.basis
	v.LeaseMs = a.leaseMs
	return v
}

// fillDevices adds every device's state, in this session's application
// space, to f; with config when withConfig is set (limited to the types in
// only, when given).
func (a *sessionActor) fillDevices(f *protocol.Frame, withConfig bool, only []protocol.DeviceType) {
	// A full-state frame is the full state: the subscription's arm state
	// fields select only in the frames that answer other messages.
	f.ArmState = 0
	if !withConfig {
		f.ArmState = a.sub.armState
	}
	fillFrame(a.sub.visible(a.svc.Devices()), a.sess.ID, f, &a.snap, withConfig, only, a.codec)
}

// FillFrame fills f with every device as session sees it (0: the default
// view), with config when withConfig is set. GET /devices uses it.
func (s *Service) FillFrame(f *protocol.Frame, session uint64, withConfig bool) {
	var snap loop.Snapshot
	fillFrame(s.Devices(), session, f, &snap, withConfig, nil, nil)
}

// fillFrame fills f. With a codec, state-only elements of devices seen
// through their shared default view come from the device's encoded-state
// cache: one encoding per device, published snapshot and format, however
// many sessions frame it. A cache hit neither copies the snapshot nor
// encodes.
func fillFrame(devs *DeviceSet, session uint64, f *protocol.Frame, snap *loop.Snapshot, withConfig bool, only []protocol.DeviceType, codec Codec) {
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
	for _, d := range devs.OfType(protocol.TypeArm) {
		v := d.ViewFor(session)
		// Built in place in f's reused slice: a local would escape through
		// the codec call and cost an allocation per device per frame.
		f.Arms = append(f.Arms, protocol.ArmFrame{DeviceID: d.ID})
		af := &f.Arms[len(f.Arms)-1]
		switch {
		case armConfig:
			d.Load(snap)
			fillArm(af, snap, v)
			af.Config = &v.Config
		case slot >= 0 && v == d.defaultView.Load() && f.ArmState == 0:
			// The sequence before the snapshot: what is stored under it is
			// that publish or a newer one, never an older one.
			seq := d.publishSeq()
			if af.Body = d.frames.cached(slot, seq, v); af.Body == nil {
				d.Load(snap)
				fillArm(af, snap, v)
				if d.frames.worthStoring(slot, seq, session) {
					af.Body = d.frames.store(slot, seq, v, codec.AppendArmState(d.frames.buffer(slot, 1024), af))
				}
			}
		case !f.ArmState.NeedsPose():
			// The subscribed fields need no joint angles or orientation:
			// leave them underived (they are not written).
			d.LoadPhysical(snap)
			fillArm(af, snap, v)
		default:
			d.Load(snap)
			fillArm(af, snap, v)
		}
	}
	for _, d := range devs.OfType(protocol.TypeGrip) {
		v := d.ViewFor(session)
		f.Grips = append(f.Grips, protocol.GripFrame{DeviceID: d.ID, Link: d.Link()})
		gf := &f.Grips[len(f.Grips)-1]
		switch {
		case gripConfig:
			d.Load(snap)
			fillGrip(gf, snap, v)
			gf.Config = &v.Config
		case slot >= 0 && v == d.defaultView.Load() && f.ArmState == 0:
			seq := d.publishSeq()
			if gf.Body = d.frames.cached(slot, seq, v); gf.Body == nil {
				d.Load(snap)
				fillGrip(gf, snap, v)
				if d.frames.worthStoring(slot, seq, session) {
					gf.Body = d.frames.store(slot, seq, v, codec.AppendGripState(d.frames.buffer(slot, 512), gf))
				}
			}
		default:
			d.Load(snap)
			fillGrip(gf, snap, v)
		}
	}
}

func (a *sessionActor) emit(f *protocol.Frame) {
	f.Warnings = protocol.TrimWarnings(f.Warnings, a.msg.WarningsDropped)
	f.Errors = protocol.TrimErrors(f.Errors, a.msg.ErrorsDropped)
	a.counts.frame(f)
	buf := a.codec.AppendFrame(a.sink.Buffer(), f, a.svc.opts.Types)
	a.sink.Send(buf)
	a.trimScratch()
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
