package actors

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/protocol"
)

// sessionActor is the session's control plane: it owns the session's
// state (profile, session-level basis, lease, subscription) and is its
// only writer, publishing each change as a new sessionSnapshot. It takes a
// client message that changes something (a controlRequest from Deliver),
// asks the registry and the device actors for what it needs, and answers
// the request once every answer is in. Answers come back to the actor
// (ReenterAfter): it never waits inside Receive, and no goroutine is
// started for a request (a device-global entry whose device's config is
// kept by someone else, who answers over the network, is set on the
// service's offload: askOwner).
type sessionActor struct {
	sess *Session
	svc  *Service
	// state is the session's control-plane state; published as
	// sess.snap after every change.
	state sessionSnapshot
	// stopped: the actor stopped, or a message panicked and the session is
	// ending; answers still arriving are dropped.
	stopped bool
	// joined is the profile whose session document the session shares in
	// Service.profileSessions ("": none).
	joined string

	// The request in hand (nil: none) and its progress.
	req     *controlRequest
	stage   int
	gen     uint64 // counts requests; an answer names the one it is for
	waiting int
	// reviewed is set when the request changed the profile or basis: it
	// is answered once every device published the new views.
	reviewed bool
}

// Stages of the request in hand. A stage that asks other actors waits for
// their answers before the next one starts.
const (
	stageIdle      = iota // no request in hand
	stageConfigure        // session part applied; device configures next
	stageDone             // configures answered; the request is answered next
)

// askSlot is one request to another actor that a control request made,
// and its outcome.
type askSlot struct {
	entry int // index in msg.Devices, or -1 for the session part
	path  string
	err   error
	done  bool
	// views: the ask is a device's published; a device that left
	// meanwhile has no views to show, which is no error.
	views bool
}

func (a *sessionActor) Receive(ctx actor.Context) {
	defer a.failing()
	switch m := ctx.Message().(type) {
	case *actor.Started:
	case *actor.Stopping:
		a.stop()
	case *actor.Stopped, *actor.Restarting:
	case *controlRequest:
		if a.stopped {
			return // the session is ending; Deliver no longer waits
		}
		a.begin(ctx, m)
	default:
		a.sess.logged(a.svc.log.Warn()).Str("type", fmt.Sprintf("%T", m)).Msg("session actor: unknown message dropped")
	}
}

// failing marks the actor stopped when a message panics, then panics on
// to the session's guardian (which ends the session through Session.fail):
// answers that arrive meanwhile find it stopped.
func (a *sessionActor) failing() {
	if v := recover(); v != nil {
		a.stopped = true
		panic(v)
	}
}

func (a *sessionActor) stop() {
	a.stopped = true
	a.req = nil
	a.leaveProfile()
	sess, s := a.sess, a.svc
	sess.end()
	// Release first: a force never outlives its session, even one that
	// panicked.
	for _, d := range s.Devices().All() {
		d.Register().Release(sess.ID)
	}
	sess.closed.Store(true)
	s.system.Root.Send(s.registry, &sessionClosed{sess: sess})
	// Pending profile writes are flushed by Session.Close, off the actor.
	if sess.phase.Swap(phaseEnded) == phaseStarted {
		s.sessionEnded(sess)
		sess.logged(s.log.Debug()).Str("reason", string(sess.CloseReason())).Msg("session ended") // the event is the info line
	}
}

// begin takes a control request in hand and applies its session part;
// drain moves it on from there.
func (a *sessionActor) begin(ctx actor.Context, r *controlRequest) {
	if h := a.svc.opts.SessionHook; h != nil {
		h(a.sess)
	}
	a.gen++
	a.req = r
	r.asked = r.asked[:0]
	r.warnings = r.warnings[:0]
	a.waiting = 0
	a.applySession(ctx)
	a.stage = stageConfigure
	a.drain(ctx)
}

// drain moves the request in hand on as far as its answers allow.
func (a *sessionActor) drain(ctx actor.Context) {
	for a.req != nil && a.waiting == 0 {
		switch a.stage {
		case stageConfigure:
			a.stage = stageDone
			a.configureAll(ctx)
		case stageDone:
			r := a.req
			a.req, a.stage = nil, stageIdle
			// Never full: Deliver hands over one request at a time and
			// takes this before the next; one that stopped waiting (the
			// session ended) hands over no more.
			select {
			case r.done <- struct{}{}:
			default:
			}
		}
	}
}

// ask sends msg to pid for the request in hand, now (so requests to one
// actor keep their order). The answer comes back to this actor as a
// continuation (ReenterAfter), which records it.
func (a *sessionActor) ask(ctx actor.Context, pid *actor.PID, msg actorMessage, entry int, path string) {
	a.await(ctx, a.svc.send(pid, msg), entry, path)
}

// askOwner sets device-global entry e of d through Service.SetEntry, so
// that the device's ConfigOwner has it first, off the actor as the
// service's other blocking work (offload, which Shutdown waits for): the
// owner may answer over the network (a lab gateway waits up to 2 s for
// its node). The answer is taken as ask's are.
func (a *sessionActor) askOwner(ctx actor.Context, d *Device, e protocol.Entry, entry int, path string) {
	svc := a.svc
	req := &pendingRequest{svc: svc, future: actor.NewFuture(svc.system, svc.opts.RequestTimeout+admittedLimit+ownerAnswersWithin)}
	svc.offload.run(func() {
		got, err := svc.SetEntry(d, 0, e)
		svc.system.Root.Send(req.future.PID(), &entryReply{entry: got, err: err})
	})
	a.await(ctx, req, entry, path)
}

// ownerAnswersWithin bounds a ConfigOwner's own answer, beyond the device
// actor's: a lab gateway gives its node 2 s.
const ownerAnswersWithin = 5 * time.Second

// await takes req's answer as the request in hand's entry (or -1, the
// session part) at path.
func (a *sessionActor) await(ctx actor.Context, req *pendingRequest, entry int, path string) {
	r := a.req
	r.asked = append(r.asked, askSlot{entry: entry, path: path})
	a.waiting++
	gen, slot := a.gen, len(r.asked)-1
	ctx.ReenterAfter(req.future, func(reply any, err error) {
		defer a.failing()
		a.answered(ctx, gen, slot, req, reply, err)
	})
}

// answered records the outcome of one request of the request in hand.
func (a *sessionActor) answered(ctx actor.Context, gen uint64, i int, req *pendingRequest, reply any, err error) {
	if a.stopped || a.req == nil || gen != a.gen || i >= len(a.req.asked) {
		return // the session is ending; nobody waits for it
	}
	slot := &a.req.asked[i]
	if slot.done {
		return
	}
	slot.done = true
	a.waiting--
	if slot.views && errors.Is(err, actor.ErrDeadLetter) {
		reply, err = &ack{}, nil
	}
	reply, err = req.settle(reply, err)
	switch r := reply.(type) {
	case *entryReply:
		if err == nil {
			err = r.err
		}
	case *ack:
		if err == nil {
			err = r.err
		}
		if r.warning != nil {
			a.req.warnings = append(a.req.warnings, *r.warning)
		}
	}
	slot.err = err
	a.drain(ctx)
}

// publish makes the actor's state the session's snapshot.
func (a *sessionActor) publish() {
	s := a.state
	a.sess.snap.Store(&s)
}

// applySession applies the session part of a message: profile, basis,
// lease, subscription and the deprecated session commands. A new profile
// or basis goes to the devices through the registry, which answers once
// every device has it queued; the device configures of the message are
// sent after that answer, so they apply under the new profile and basis.
func (a *sessionActor) applySession(ctx actor.Context) {
	r := a.req
	sp := &r.msg.Session
	st := &a.state
	profile, basis := st.profile, st.basis
	// The decoder already warned about a required_version this service
	// does not satisfy.
	if p := sp.Profile; p != nil && p.Name != st.profile {
		st.profile = p.Name
		a.leaveProfile()
		// The per-tick path read the profile's stored document, seeing the
		// same profile as here: the actor publishes it before it answers,
		// and Deliver hands over one request at a time.
		if r.stored.name == p.Name {
			a.applyStoredProfile(&r.stored, &r.warnings)
		}
	}
	if sp.Subscribe != nil {
		st.sub = newSubscription(sp.Subscribe, r.devs, &r.warnings)
	}
	if sp.LeaseMs != 0 && sp.LeaseMs != st.leaseMs {
		st.leaseMs = sp.LeaseMs
		a.saveProfileSession(&r.warnings, profileSessionChange{lease: sp.LeaseMs})
	}
	// The deprecated command first: when a message carries both, the
	// current spelling wins.
	if sp.SetBasis != nil {
		a.setBasis(*sp.SetBasis, &r.warnings)
	}
	if sp.Basis != nil {
		a.setBasis(*sp.Basis, &r.warnings)
	}
	publishDeprecated(a.svc, a.sess, sp, a.state.profile)
	a.publish()
	a.reviewed = st.profile != profile || st.basis != basis
	if a.reviewed {
		a.ask(ctx, a.svc.registry, &updateSession{sess: a.sess, profile: st.profile, basis: st.basis, waits: r.devs}, -1, "session.configure")
	}
}

func (a *sessionActor) setBasis(b protocol.Basis, warnings *[]protocol.Error) {
	if b == a.state.basis {
		return
	}
	a.state.basis = b
	a.saveProfileSession(warnings, profileSessionChange{basis: &b})
}

// configureAll sends the request's configures to the device actors: the
// deprecated set_coordinate_origin (a preset on every device of the
// session, arms and grips) first, then each device entry's own. After a
// profile or basis change it also waits for every device to publish the
// views the registry's attachments bring, so the frame shows them.
func (a *sessionActor) configureAll(ctx actor.Context) {
	r := a.req
	msg, devs := r.msg, r.devs
	if a.reviewed {
		for _, d := range devs.All() {
			a.ask(ctx, d.pid, &published{session: a.sess.ID}, -1, "session.configure")
			r.asked[len(r.asked)-1].views = true
		}
	}
	if o := msg.Session.SetCoordinateOrigin; o != "" {
		preset := []protocol.Entry{protocol.Preset{Preset: o}}
		for _, d := range devs.All() {
			a.configure(ctx, d, -1, "session.set_coordinate_origin", "", preset)
		}
	}
	for i := range msg.Devices {
		e := &msg.Devices[i]
		d := devs.FindNamed(e.Type, e.DeviceID)
		if d == nil {
			continue // the frame warns
		}
		if len(e.Configure) > 0 {
			a.configure(ctx, d, i, e.Path, ".configure", e.Configure)
		}
		a.stateCommands(ctx, d, i, e)
	}
}

// configure applies a device entry's configure through the device actor.
// Clients may re-send an unchanged configure every tick: when the entries
// would change nothing, the actor is not asked (a round trip per device per
// tick). The frame is the same either way: on success the actor's reply
// adds nothing to it, and unchangedBy answers true only where the actor
// would succeed. An error's path is path+suffix.
func (a *sessionActor) configure(ctx actor.Context, d *Device, entry int, path, suffix string, entries []protocol.Entry) {
	if d.unchangedBy(a.sess.ID, entries) {
		return
	}
	// entries are the decoded message's, whose arrays the session's next
	// message is decoded into once this request is answered or times out.
	// Not copied: the device reads them only before it answers (a
	// session's configure is not durable, so no disk read comes between,
	// deviceCore.set), and not at all once the ticket is cancelled. A
	// durable session set would have to copy them.
	a.ask(ctx, d.pid, &setEntries{session: a.sess.ID, entries: entries, ticket: &ticket{}}, entry, path+suffix)
}
