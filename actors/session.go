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
// processes the client's messages in order and answers each with exactly
// one frame.
type Session struct {
	// Atomics first.
	profile atomic.Pointer[string]
	basis   atomic.Pointer[protocol.Basis]
	closed  atomic.Bool
	reason  atomic.Pointer[protocol.CloseReason] // set once, first cause wins

	// Immutable after OpenSession.
	ID          uint64
	Remote      string
	APIVersion  string
	ConnectedAt time.Time
	svc         *Service
	pid         *actor.PID
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
func (s *Session) Deliver(buf []byte) {
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

// OpenSession creates a session for a new connection, attaches it to every
// device and sends the inventory frame.
func (s *Service) OpenSession(o SessionOptions) (*Session, error) {
	sess := &Session{
		ID:          s.nextSession.Add(1),
		Remote:      o.Remote,
		APIVersion:  o.Codec.APIVersion(),
		ConnectedAt: time.Now(),
		svc:         s,
	}
	a := &sessionActor{
		sess:    sess,
		svc:     s,
		codec:   o.Codec,
		sink:    o.Sink,
		leaseMs: s.opts.DefaultLeaseMs,
		busy:    make(map[busyKey]busyNote),
		log:     s.log.With().Uint64("session_id", sess.ID).Str("remote", o.Remote).Logger(),
	}
	// A panic in one session must not take others down: stop the actor and
	// close its connection (the client reconnects), never restart it with
	// half its state.
	stopOnPanic := actor.NewOneForOneStrategy(0, time.Second, func(reason any) actor.Directive {
		a.log.Error().Interface("reason", reason).Msg("session crashed; closing it")
		sess.setReason(protocol.CloseInternalError)
		o.Sink.Close(protocol.CloseInternalError)
		return actor.StopDirective
	})
	// The synchronized dispatcher runs the mailbox on the sender's
	// goroutine when it is idle: a lock-step client's message is processed
	// by the connection's reader itself, with no goroutine hop per tick
	// (the default dispatcher starts a goroutine each time the mailbox
	// wakes, which costs more than the rest of the message).
	props := actor.PropsFromProducer(func() actor.Actor { return a },
		actor.WithSupervisor(stopOnPanic),
		actor.WithDispatcher(actor.NewSynchronizedDispatcher(300)))
	pid, err := s.system.Root.SpawnNamed(props, "session-"+strconv.FormatUint(sess.ID, 10))
	if err != nil {
		return nil, fmt.Errorf("actors: spawn session actor: %w", err)
	}
	sess.pid = pid
	// The session becomes visible (listed, attached, inventory sent) only
	// now that its pid is set: with the synchronized dispatcher, Started
	// runs inside Spawn, before the pid is known, and a session listed
	// without one could not be stopped.
	s.system.Root.Send(pid, &beginSession{})
	return sess, nil
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

// sessionActor is one connection's actor. All its fields are owned by it.
type sessionActor struct {
	sess    *Session
	svc     *Service
	codec   Codec
	sink    FrameSink
	log     zerolog.Logger
	leaseMs int
	seq     uint64
	busy    map[busyKey]busyNote

	// Scratch reused every message: decoding and encoding allocate little.
	msg   protocol.ClientMessage
	frame protocol.Frame
	snap  loop.Snapshot
	cmd   hw.Command
	sview protocol.SessionView
	sub   subscription // session.configure.subscribe (subscribe.go)
}

func (a *sessionActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
	case *beginSession:
		a.start(ctx)
	case *actor.Stopping:
		a.stop(ctx)
	case *actor.Stopped, *actor.Restarting:
	case *inbound:
		a.handle(ctx, m.buf)
		a.sink.Recycle(m.buf)
	default:
		a.log.Warn().Str("type", fmt.Sprintf("%T", m)).Msg("session actor: unknown message dropped")
	}
}

func (a *sessionActor) start(ctx actor.Context) {
	s := a.svc
	// Attach before the session is listed, so HTTP selectors never find a
	// session its devices do not know.
	seen := a.attachAll(ctx, nil)
	s.sessionsMu.Lock()
	next := append(append([]*Session(nil), s.Sessions()...), a.sess)
	s.sessions.Store(&next)
	s.sessionsMu.Unlock()
	// A device added meanwhile may have read the session list before this
	// session was on it, after we read the device list: attach to what is
	// new since. The registry does the mirror check after listing a device,
	// so one side or the other always attaches (attach is idempotent).
	a.attachAll(ctx, seen)
	s.activity.Publish(event.SessionStarted(a.sess.ID, "", a.sess.Remote, a.sess.APIVersion))
	a.log.Debug().Str("api_version", a.sess.APIVersion).Msg("session started") // the event is the info line

	f := a.resetFrame()
	a.fillDevices(f, true, nil)
	f.Session = a.sessionView()
	a.emit(f)
}

func (a *sessionActor) stop(ctx actor.Context) {
	s := a.svc
	for _, d := range s.Devices().All() {
		d.Register().Release(a.sess.ID)
		ctx.Send(d.pid, &detachSession{session: a.sess.ID})
	}
	s.sessionsMu.Lock()
	cur := s.Sessions()
	next := make([]*Session, 0, len(cur))
	for _, x := range cur {
		if x != a.sess {
			next = append(next, x)
		}
	}
	s.sessions.Store(&next)
	s.sessionsMu.Unlock()
	if s.writeBehind != nil && a.sess.Profile() != "" {
		if err := s.writeBehind.Flush(); err != nil {
			a.log.Error().Err(err).Msg("flush profile config at session end")
		}
	}
	s.sessionEnded(a.sess)
	a.log.Debug().Str("reason", string(a.sess.CloseReason())).Msg("session ended") // the event is the info line
}

// attachAll attaches the session to every listed device that is not in
// seen (nil: none seen yet) and returns the list it went through.
func (a *sessionActor) attachAll(ctx actor.Context, seen *DeviceSet) *DeviceSet {
	devs := a.svc.Devices()
	if devs == seen {
		return devs
	}
	for _, d := range devs.All() {
		if seen != nil && seen.Find(d.Type, d.ID) == d {
			continue
		}
		a.requestDevice(ctx, d, &attachSession{session: a.sess.ID, profile: a.sess.Profile(), basis: a.sess.Basis()})
	}
	return devs
}

// requestDevice asks a device actor and waits for its answer. The session
// processes its messages in order, so waiting here keeps the frame of a
// configure message consistent with what it configured.
func (a *sessionActor) requestDevice(ctx actor.Context, d *Device, msg actorMessage) (any, error) {
	r, err := ctx.RequestFuture(d.pid, msg, a.svc.opts.RequestTimeout).Result()
	if err != nil {
		return nil, fmt.Errorf("%s %s did not answer: %w", d.Type.Key(), d.ID, err)
	}
	return r, nil
}

func (a *sessionActor) handle(ctx actor.Context, buf []byte) {
	if a.sess.closed.Load() {
		return
	}
	a.svc.traffic.message(a.sess.APIVersion)
	msg := &a.msg
	msg.Reset()
	f := a.resetFrame()
	if errs := a.codec.Decode(buf, a.svc.opts.Types, msg); len(errs) > 0 {
		// Applied not at all: the frame reports the errors and the state.
		f.Errors = append(f.Errors, errs...)
		f.Warnings = append(f.Warnings, msg.Warnings...)
		a.fillDevices(f, false, nil)
		a.emit(f)
		return
	}
	f.Warnings = append(f.Warnings, msg.Warnings...)
	a.applySession(ctx, f)

	devs := a.svc.Devices()
	now := a.svc.opts.Clock.Now()
	for i := range msg.Devices {
		e := &msg.Devices[i]
		d := devs.Find(e.Type, e.DeviceID)
		if d == nil {
			f.Warnings = append(f.Warnings, *protocol.Errorf(protocol.CodeUnknownDevice, e.Path,
				"no %s with id %q is connected; it was ignored", e.TypeKey, e.DeviceID))
			continue
		}
		if len(e.Configure) > 0 {
			a.configure(ctx, f, d, e.Path, ".configure", e.Configure)
		}
		a.stateCommands(ctx, f, d, e)
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

// applySession applies the session part of a message: profile, basis,
// lease and the deprecated session commands.
func (a *sessionActor) applySession(ctx actor.Context, f *protocol.Frame) {
	sp := &a.msg.Session
	// The decoder already warned about a required_version this service
	// does not satisfy.
	if p := sp.Profile; p != nil && p.Name != a.sess.Profile() {
		name := p.Name
		a.sess.profile.Store(&name)
		a.loadProfileSession()
		a.attachAll(ctx, nil)
	}
	if sp.Subscribe != nil {
		a.sub.update(sp.Subscribe, a.svc.Devices(), f)
	}
	if sp.LeaseMs != 0 && sp.LeaseMs != a.leaseMs {
		a.leaseMs = sp.LeaseMs
		a.saveProfileSession()
	}
	// The deprecated command first: when a message carries both, the
	// current spelling wins.
	if sp.SetBasis != nil {
		a.setBasis(ctx, *sp.SetBasis)
		a.deprecated(protocol.CommandSetBasis)
	}
	if sp.Basis != nil {
		a.setBasis(ctx, *sp.Basis)
	}
	if sp.SetCoordinateOrigin != "" {
		// Mapped per device, not as a global switch: every device of the
		// session, arms and grips, gets the preset.
		preset := []protocol.Entry{protocol.Preset{Preset: sp.SetCoordinateOrigin}}
		for _, d := range a.svc.Devices().All() {
			a.configure(ctx, f, d, "session.set_coordinate_origin", "", preset)
		}
		a.deprecated(protocol.CommandSetCoordinateOrigin)
	}
}

func (a *sessionActor) deprecated(name string) {
	if c, ok := protocol.LookupDeprecatedCommand(name); ok {
		a.svc.activity.Publish(event.CommandDeprecated(c.Name, c.Replacement, a.sess.ID, a.sess.Profile()))
	}
}

func (a *sessionActor) setBasis(ctx actor.Context, b protocol.Basis) {
	if b == a.sess.Basis() {
		return
	}
	a.sess.basis.Store(&b)
	for _, d := range a.svc.Devices().All() {
		a.requestDevice(ctx, d, &sessionBasis{session: a.sess.ID, basis: b})
	}
	a.saveProfileSession()
}

// configure applies a device entry's configure through the device actor.
// Clients may re-send an unchanged configure every tick: when the entries
// would change nothing, the actor is not asked (a round trip per device per
// tick). The frame is the same either way: on success the actor's reply
// adds nothing to it, and unchangedBy answers true only where the actor
// would succeed. An error's path is path+suffix, joined only when there is
// an error.
func (a *sessionActor) configure(ctx actor.Context, f *protocol.Frame, d *Device, path, suffix string, entries []protocol.Entry) {
	if d.unchangedBy(a.sess.ID, entries) {
		return
	}
	r, err := a.requestDevice(ctx, d, &setEntries{session: a.sess.ID, entries: entries})
	if err == nil {
		err = r.(*entryReply).err
	}
	if err != nil {
		f.Errors = append(f.Errors, asProtocolError(err, path+suffix))
	}
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
	if name := a.sess.Profile(); name != "" {
		v.Profile = &protocol.Profile{Name: name}
	}
	v.Basis = a.sess.Basis()
	v.LeaseMs = a.leaseMs
	return v
}

// fillDevices adds every device's state, in this session's application
// space, to f; with config when withConfig is set (limited to the types in
// only, when given).
func (a *sessionActor) fillDevices(f *protocol.Frame, withConfig bool, only []protocol.DeviceType) {
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
		case slot >= 0 && v == d.defaultView.Load():
			// The sequence before the snapshot: what is stored under it is
			// that publish or a newer one, never an older one.
			seq := d.publishSeq()
			if af.Body = d.cachedBody(slot, seq, v); af.Body == nil {
				d.Load(snap)
				fillArm(af, snap, v)
				if d.worthStoring(slot, seq) {
					af.Body = d.storeBody(slot, seq, v, codec.AppendArmState(make([]byte, 0, 512), af))
				}
			}
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
		case slot >= 0 && v == d.defaultView.Load():
			seq := d.publishSeq()
			if gf.Body = d.cachedBody(slot, seq, v); gf.Body == nil {
				d.Load(snap)
				fillGrip(gf, snap, v)
				if d.worthStoring(slot, seq) {
					gf.Body = d.storeBody(slot, seq, v, codec.AppendGripState(make([]byte, 0, 256), gf))
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
	a.svc.traffic.frame(a.sess.APIVersion, f)
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
func asProtocolError(err error, path string) protocol.Error {
	if pe, ok := err.(*protocol.Error); ok {
		e := *pe
		if e.Path == "" {
			e.Path = path
		}
		return e
	}
	return protocol.Error{Code: protocol.CodeInternal, Message: err.Error(), Path: path}
}
