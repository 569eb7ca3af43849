package actors

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/protocol/space"
)

// Device is one device as the rest of the service sees it: identity, the
// real-time loop's register and snapshot (data plane), and the views its
// actor publishes for each session. A Device is shared by every session and
// transport; everything mutable in it is atomic.
type Device struct {
	// Atomics first. viewsVersion, defaultView and frames lead, 48 bytes
	// together (one cache line or two, by where the allocator puts the
	// Device): a frame reads the three for every device it carries.
	//
	// viewsVersion counts the device actor's changes to what ViewFor
	// returns (a view published, a slot set or removed, the default view
	// replaced), each counted after it is stored: a reader that saw a
	// count sees every change it counts (viewMemo).
	viewsVersion atomic.Uint64
	defaultView  atomic.Pointer[View] // what a session with no entries of its own sees
	// frames is the encoded-frame cache the sessions share (framecache.go).
	frames frameCache
	slots  sessionSlots // written by the device actor only

	// Immutable after the registry creates the Device.
	Type protocol.DeviceType
	ID   string
	// Name is the device's type as the naming table writes it (frames,
	// events, HTTP answers): "inverse3", "wireless_verse_grip", "arm3"...
	Name string
	Info hw.Info
	pid  *actor.PID
	rt   *loop.Device
	// remote is rt's driver when it reports stale states (a lab proxy),
	// else nil.
	remote StaleStateReporter
	// framesEpoch is the service's count of changes to what any device's
	// frames show besides its state (framesChanged), shared
	// by every Device of the service; nil for a Device made outside a
	// Service, which then never frames through an arm run (framecache.go).
	framesEpoch *atomic.Uint64
	// stopLoop and loopDone belong to a hardware device's own loop thread
	// (nil for simulated devices, which the shared scheduler steps).
	stopLoop context.CancelFunc
	loopDone chan struct{}

	// The driver is closed once: by the registry when the device fails,
	// or by Shutdown, which may list the device while the registry is
	// removing it. driverMu also keeps a halt from racing the close.
	driverMu sync.Mutex
	closed   bool
	closeErr error

	// rejections are the device-global entries of its stored document
	// that it holds rejected (StoredRejections), published by the device
	// actor whenever they change; nil: none.
	rejections atomic.Pointer[StoredRejections]
}

// StoredRejections are the device-global entries of a device's stored
// document that this build did not accept when it read the document and
// that have not been set since: those whose GET warns. Events are the
// stored-entry-rejected events the read published for them, in entry
// order (one, entry "*", for a document moved aside whole, while any of
// its entries is still not set again). Never written through: a change
// publishes another.
type StoredRejections struct {
	Events []event.Event
}

// StoredRejections are the device-global entries d holds rejected now;
// nil when there are none. A lab node states them in its inventory, so a
// gateway that joined after the read tells its clients too.
func (d *Device) StoredRejections() *StoredRejections { return d.rejections.Load() }

// closeDriver closes the device's driver the first time it is called and
// returns that Close's error every time.
func (d *Device) closeDriver() error {
	d.driverMu.Lock()
	defer d.driverMu.Unlock()
	if !d.closed {
		d.closed = true
		d.closeErr = d.rt.Driver().Close()
	}
	return d.closeErr
}

// haltOpen halts the device's output unless its driver is closed (a closed
// driver drives nothing, and may not be called again).
func (d *Device) haltOpen() {
	d.driverMu.Lock()
	defer d.driverMu.Unlock()
	if !d.closed {
		d.rt.Halt()
	}
}

// View is how one session sees one device: the config to report and the
// compiled coordinate transform and filters. Views are immutable once
// published; a change publishes a new one.
type View struct {
	Config protocol.DeviceView
	Space  space.View
	Params *loop.Params
	// Workspace is the session's workspace transform (set_transform),
	// already part of Space; frames report it as state.transform.
	Workspace space.Transform
}

type viewSlot struct{ view atomic.Pointer[View] }

// sessionSlots maps a session to its view slot on one device: read without
// a lock by every frame, written by the device actor alone. The map is in
// copy-on-write shards by session: with one map, every session opened
// copied every other session's entry on every device, and opening 600
// sessions on 600 arms took 3.3 s, 300 on 300 0.5 s (cubic).
type sessionSlots [sessionSlotShards]atomic.Pointer[map[uint64]*viewSlot]

// sessionSlotShards: an attach or detach copies 1/16 of the map, and an
// idle device carries 128 bytes of empty shards.
const sessionSlotShards = 16

// get returns session's slot.
func (s *sessionSlots) get(session uint64) (*viewSlot, bool) {
	m := s[session%sessionSlotShards].Load()
	if m == nil {
		return nil, false
	}
	v, ok := (*m)[session]
	return v, ok
}

// set publishes session's slot (the device actor only).
func (s *sessionSlots) set(session uint64, slot *viewSlot) {
	shard := &s[session%sessionSlotShards]
	m := map[uint64]*viewSlot{}
	if old := shard.Load(); old != nil {
		m = maps.Clone(*old)
	}
	m[session] = slot
	shard.Store(&m)
}

// remove withdraws session's slot (the device actor only).
func (s *sessionSlots) remove(session uint64) {
	shard := &s[session%sessionSlotShards]
	old := shard.Load()
	if old == nil {
		return
	}
	if _, ok := (*old)[session]; !ok {
		return
	}
	m := maps.Clone(*old)
	delete(m, session)
	shard.Store(&m)
}

// ViewFor returns the view of session (the device's default view when the
// session has no entries of its own yet). It never blocks and never
// allocates.
func (d *Device) ViewFor(session uint64) *View {
	if s, ok := d.slots.get(session); ok {
		if v := s.view.Load(); v != nil {
			return v
		}
	}
	return d.defaultView.Load()
}

// viewMemo is ViewFor for one session's frames, remembered per device
// until the device actor changes a view of that device (viewsVersion):
// reading the view is then one load from the line the frame reads anyway,
// not a map lookup and the session's view slot per device per frame (a
// tenth of a 100-arm frame's time). Entry i belongs to the i-th device a
// frame lists. It also holds the session's side of arm runs (runMemo).
type viewMemo struct {
	viewList
	run runMemo
}

// viewList is the part of viewMemo that remembers views: entry i for the
// i-th device of a list that names the same devices from call to call (a
// frame's, or a message's device entries).
type viewList struct {
	entries []viewMemoEntry
}

type viewMemoEntry struct {
	dev     *Device
	version uint64 // dev.viewsVersion before view was looked up
	view    *View
}

// viewFor returns what d.ViewFor(session) returns, for the i-th device of
// a frame. A nil memo looks the view up.
func (m *viewMemo) viewFor(i int, d *Device, session uint64) *View {
	if m == nil {
		return d.ViewFor(session)
	}
	return m.viewList.viewFor(i, d, session)
}

// keep drops the entries past the first n (viewList.keep).
func (m *viewMemo) keep(n int) {
	if m != nil {
		m.viewList.keep(n)
	}
}

// viewFor returns what d.ViewFor(session) returns, for the i-th device of
// the list.
func (m *viewList) viewFor(i int, d *Device, session uint64) *View {
	for len(m.entries) <= i {
		m.entries = append(m.entries, viewMemoEntry{})
	}
	e := &m.entries[i]
	// The count is read before the lookup: a change that lands during
	// the lookup counts past it, and the next frame looks up again.
	ver := d.viewsVersion.Load()
	if e.dev != d || e.version != ver || e.view == nil {
		e.dev, e.version, e.view = d, ver, d.ViewFor(session)
	}
	return e.view
}

// keep drops the entries past the first n, so that a removed device's
// entry does not keep it alive.
func (m *viewList) keep(n int) {
	if len(m.entries) > n {
		clear(m.entries[n:])
		m.entries = m.entries[:n]
	}
}

// viewsChanged counts a change of the device actor to what ViewFor
// returns, after it is stored: in the device's count (viewMemo) and in the
// service's (arm runs).
func (d *Device) viewsChanged() {
	d.viewsVersion.Add(1)
	d.framesChanged()
}

// framesChanged counts, after it is stored, a change to what the frames
// of any session show of the device besides its state: a view or
// declared effects. Arm runs (framecache.go) are built only while no arm
// has effects and are used only under the count they were built at.
func (d *Device) framesChanged() {
	if e := d.framesEpoch; e != nil {
		e.Add(1)
	}
}

// unchangedBy reports whether session's device actor would apply entries
// as a no-op: every entry is session-scoped, the session is attached (else
// the actor answers unknown_session), and the entries leave the config in
// force as it is. It reads the published view, so it never blocks; a
// concurrent HTTP change is ordered after it, as if the message had been
// answered first.
func (d *Device) unchangedBy(session uint64, entries []protocol.Entry) bool {
	return d.attached(session) && d.ViewFor(session).Config.Session.Unchanged(entries)
}

// Load fills dst with the loop's latest snapshot.
func (d *Device) Load(dst *loop.Snapshot) { d.rt.Load(dst) }

// LoadPhysical is Load without the pose-derived state (loop.Device.LoadPhysical).
func (d *Device) LoadPhysical(dst *loop.Snapshot) { d.rt.LoadPhysical(dst) }

// publishSeq is the loop's publish sequence (loop.Device.PublishSeq).
func (d *Device) publishSeq() uint64 { return d.rt.PublishSeq() }

// Register is the device's command register (data plane).
func (d *Device) Register() *loop.Register { return d.rt.Register() }

// Loop is the device's real-time loop. The service's own wiring uses it
// (hapticd --sim-effects declares effects on simulated arms for capacity
// runs, through RenderHeld); sessions reach the loop through the device
// actor and Register. Effects set on it directly are not counted by
// framesChanged: frames that share arm runs would miss them until the
// device's views or effects next change.
func (d *Device) Loop() *loop.Device { return d.rt }

// AddTap attaches a recorder's per-tick feed to the device's loop
// (loop.Device.AddTap).
func (d *Device) AddTap(t *loop.Tap) error { return d.rt.AddTap(t) }

// RemoveTap detaches a feed AddTap attached.
func (d *Device) RemoveTap(t *loop.Tap) { d.rt.RemoveTap(t) }

// Stats are the device loop's own measurements.
func (d *Device) Stats() loop.Stats { return d.rt.Stats() }

// storeName is where the device-global entries live in the state directory.
func (d *Device) storeName() string { return storeName(d.Type, d.ID) }

func storeName(t protocol.DeviceType, id string) string { return "devices/" + t.Key() + "-" + id }

func (d *Device) profileStoreName(profile string) string {
	return profileFolder(profile) + "/" + d.Type.Key() + "-" + d.ID
}

// sessionState is what a device keeps for one session.
type sessionState struct {
	// cfg is never written through: it is the device's shared default
	// (defaultConfig) until the session changes an entry, then a copy of
	// its own, replaced whole on each change. Shared, because every session
	// has a state on every device: 8 bytes each for the idle ones, not 456.
	cfg     *protocol.SessionConfig
	profile string
	basis   protocol.Basis // the session-level basis
	// workspace is the session's workspace transform (set_transform): it
	// lives as long as the session and is not stored.
	workspace space.Transform
	slot      *viewSlot
	// nav is the session's navigation state on the loop (navigation.go);
	// nil while its navigation is off.
	nav *loop.NavigationTrack
	// loadErr is why the profile's stored entries could not be read when
	// the session picked it (it has the defaults): the session's next
	// published hears it, once.
	loadErr error
	// unread: that document is left as it is (leftUnread); until a durable
	// write succeeds, a POST of the value in force still writes.
	unread bool
	// rejectedWarning: the profile's document on this device was read with
	// entries this build did not accept; the session's next published
	// hears it, once, as it would loadErr.
	rejectedWarning *protocol.Error
}

// profileDoc is a profile's document on one device as last written or
// queued for writing: what the profile's next session starts from. Each
// session of the profile changes in it only the entries it changes (or a
// POST or DELETE names), so two sessions of one profile never store one's
// whole config over the other's acknowledged entries. The device actor is
// the document's only writer, so it is the truth while any session of the
// device has the profile; once none has, it is dropped, and the next
// session of the profile reads the document again.
type profileDoc struct {
	cfg      *protocol.SessionConfig // replaced whole, never written through
	sessions int                     // of this device, on the profile
	// unread: the document could not be read and is left as it is
	// (leftUnread): cfg is the defaults, and the next session to pick the
	// profile, or a POST or DELETE (readProfilesThen), tries the read again.
	unread bool
	// rejected are the entries of the document this build did not accept
	// when it was read (they have their defaults in cfg): a GET of one by a
	// session of the profile answers a warning until it is set again.
	rejected rejectedEntries
}

// deviceCore is a device actor's state. It outlives the actor instance: the
// registry creates it once and the props producer hands the same core to
// every restart, so a panic never loses config, and the loop (which the
// core does not own) runs on untouched.
type deviceCore struct {
	dev         *Device
	store       Store         // nil without a state directory
	writeWithin time.Duration // Options.WriteTimeout
	closing     *atomic.Bool  // Service.closing: the service is shutting down
	writeBehind *store.WriteBehind
	activity    *activity.Activity
	registry    *actor.PID
	system      *actor.ActorSystem
	offload     *offloader    // where a durable write or a load runs (Service.offload)
	hook        func(*Device) // Options.DeviceHook
	log         zerolog.Logger
	// inForceUnwritten are the documents saveInForce could not write and
	// answered for anyway, told once until a write of them succeeds.
	inForceUnwritten unwrittenDocs

	// Owned by the device actor.
	global protocol.DeviceConfig
	// sharedDefault is the session config every session that changed
	// nothing points to (defaultConfig); never written through.
	sharedDefault *protocol.SessionConfig
	// globalUnread: the device's document could not be read when it was
	// added and is left as it is (leftUnread): global is the defaults, and
	// a change reads the document again first (readGlobalThenSet).
	globalUnread bool
	// rejected are the entries of the device's document this build did not
	// accept when it was read (they have their defaults): a GET of one
	// answers a warning until it is set again.
	rejected rejectedEntries
	settings protocol.Settings
	sessions map[uint64]*sessionState
	// profiles are the documents of the profiles this device's sessions
	// have, by name (with a state directory only).
	profiles map[string]*profileDoc
	// pending is the request whose durable write or load is under way,
	// and held the config requests that arrived since, in order: they are
	// taken up (and only then admitted) once it is done, so every request
	// still sees the config its predecessors left.
	pending *pendingIO
	held    []heldRequest
}

// pendingIO is a request of the device actor waiting for blocking work
// done off the actor (startIO).
type pendingIO struct {
	sender *actor.PID
	// write: the work only writes what the actor already has in memory
	// (it changes nothing in force until done), so reads need not wait.
	// gates are the commit points of its documents, one each in the order
	// they are written (store.SaveGated); timer is what calls them off
	// past writeWithin (overdue).
	write bool
	gates []*ticket
	timer *time.Timer
	work  func() error // off the actor
	// done runs on the actor with work's outcome, or with unavailable
	// when overdue called the writes off; it answers sender.
	done func(err error)
	// calledOff: overdue called the writes off, and the first passed of
	// them had passed their commit point (they are in their documents).
	// Owned by the actor.
	calledOff bool
	passed    int
	// finished counts the documents written (work adds one as each is
	// done): overdue waits for one past its commit point, not written yet.
	finished atomic.Int32
	// stopCause is why the actor stopped with op under way (abandon):
	// its answer names it.
	stopCause string
	// outcome receives work's error once it returns (buffered): an actor
	// that stops while a write past its commit point is in flight waits
	// on it to answer what is true (abandon).
	outcome chan error
	// returned is closed once work has returned: its documents hold what
	// they will hold, whatever its requester was answered (writeLanding).
	returned chan struct{}
}

// heldRequest is a config request that arrived while another was waiting
// for its write.
type heldRequest struct {
	msg    actorMessage
	sender *actor.PID
}

// deviceActor owns one device's configuration and applies it to the
// device's real-time loop. It is the only writer of its core.
type deviceActor struct {
	core    *deviceCore
	mailbox *stoppedMailbox
}

// newDeviceProps is the props of one device actor (one spawn: the mailbox
// middleware is the actor's own).
func newDeviceProps(core *deviceCore) *actor.Props {
	m := &stoppedMailbox{}
	return actor.PropsFromProducer(func() actor.Actor { return &deviceActor{core: core, mailbox: m} },
		actor.WithMailbox(actor.Unbounded(m)))
}

// stoppedMailbox answers the requests a device actor's mailbox still holds
// when the actor has stopped as dead letters, as protoactor answers one
// sent after: protoactor drops the user messages a stopped actor's mailbox
// pops, and the registry's stop is a system message, handled ahead of the
// requests queued before it, whose senders would otherwise wait their
// futures out (RequestTimeout plus admittedLimit, 62 s).
type stoppedMailbox struct {
	stopped atomic.Pointer[stoppedActor]
}

// stoppedActor is who answers for a stopped device actor.
type stoppedActor struct {
	sys  *actor.ActorSystem
	self *actor.PID
}

func (m *stoppedMailbox) MailboxStarted()   {}
func (m *stoppedMailbox) MessagePosted(any) {}
func (m *stoppedMailbox) MailboxEmpty()     {}

// MessageReceived runs after the actor took msg up; once it stopped, it
// took nothing up, and a request's sender is told its target is gone.
func (m *stoppedMailbox) MessageReceived(msg any) {
	s := m.stopped.Load()
	if s == nil {
		return
	}
	if env, ok := msg.(*actor.MessageEnvelope); ok && env.Sender != nil {
		s.sys.Root.Send(env.Sender, &actor.DeadLetterResponse{Target: s.self})
	}
}

func (a *deviceActor) Receive(ctx actor.Context) {
	c := a.core
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.log.Debug().Msg("device actor started")
		// A restart in the middle of held requests takes them up again.
		c.release(ctx)
	case *actor.Restarting:
		c.log.Warn().Msg("device actor restarting; config kept")
	case *actor.Stopping:
		// Halt waits for the loop's tick (and may drive the driver);
		// the registry has halted a device it removes already.
		c.offload.run(c.dev.haltOpen)
		c.abandon(ctx)
	case *actor.Stopped:
		// The last message the actor takes up: what its mailbox pops
		// from now on is answered there.
		a.mailbox.stopped.Store(&stoppedActor{sys: ctx.ActorSystem(), self: ctx.Self()})
	case *loopEvent:
		c.onLoopEvent(ctx, m.event)
	case *ioDone:
		c.finishIO(ctx, m)
		c.release(ctx)
	case *ioOverdue:
		c.overdue(ctx, m.op)
		c.release(ctx)
	case *getEntry, *setEntries, *resetEntry, *attachSession, *detachSession, *setWorkspace, *published, *applyGlobals:
		msg := m.(actorMessage)
		if get, ok := msg.(*getEntry); ok && c.readsThrough() {
			c.handle(ctx, get, ctx.Sender())
			return
		}
		if c.pending != nil || len(c.held) > 0 {
			c.held = append(c.held, heldRequest{msg: msg, sender: ctx.Sender()})
			return
		}
		c.handle(ctx, msg, ctx.Sender())
	default:
		c.log.Warn().Str("type", fmt.Sprintf("%T", m)).Msg("device actor: unknown message dropped")
	}
}

// handle takes up one config request; sender is whom to answer.
func (c *deviceCore) handle(ctx actor.Context, msg actorMessage, sender *actor.PID) {
	switch m := msg.(type) {
	case *getEntry:
		if c.admit(m.ticket) {
			e, err := c.get(m.session, m.key)
			reply(ctx, sender, &entryReply{entry: e, err: err, warnings: c.warnings(m.session, m.key)})
		}
	case *setEntries:
		if c.admit(m.ticket) {
			c.set(ctx, sender, m)
		}
	case *resetEntry:
		if c.admit(m.ticket) {
			c.reset(ctx, sender, m)
		}
	case *attachSession:
		c.attach(ctx, m)
	case *detachSession:
		c.detach(m.session)
	case *setWorkspace:
		reply(ctx, sender, &ack{err: c.setWorkspace(m)})
	case *published:
		a := &ack{}
		if s := c.sessions[m.session]; s != nil && s.loadErr != nil {
			a.warning = c.unreadWarning(s.loadErr)
			s.loadErr = nil
		} else if s != nil && s.rejectedWarning != nil {
			a.warning, s.rejectedWarning = s.rejectedWarning, nil
		}
		reply(ctx, sender, a)
	case *applyGlobals:
		c.settings = m.settings
		c.publishLoopGlobals()
	}
}

// unreadWarning tells a session that the profile's stored entries on
// this device could not be read (err), so it has the defaults here.
func (c *deviceCore) unreadWarning(err error) *protocol.Error {
	return protocol.Errorf(protocol.CodeInternal, "session.configure.profile",
		"%s %s: the profile's stored entries could not be read, so the session has the default ones on this device: %v", c.dev.Name, c.dev.ID, err)
}

// rejectedWarning tells a session that the profile's stored entries on
// this device were read with entries this build does not accept, which
// have their defaults; the others are in force.
func (c *deviceCore) rejectedWarning(r rejectedEntries) *protocol.Error {
	keys := r.keys()
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name()
	}
	e := r[keys[0]]
	kept := "no copy of the file could be kept (see the log)"
	if e.keptAt != "" {
		kept = "the file as read is kept at " + e.keptAt
	}
	return protocol.Errorf(protocol.CodeInternal, "session.configure.profile",
		"%s %s: the profile's stored %s in %s: not accepted by this build, so the session has the default there; the document's other entries are in force; %s (a GET of the entry says so until it is set again)",
		c.dev.Name, c.dev.ID, strings.Join(names, ", "), e.path, kept)
}

// startIO hands blocking work to a goroutine (work) and holds the device's
// config requests until its outcome is back, when done finishes the
// request on the actor and answers it.
func (c *deviceCore) startIO(ctx actor.Context, op *pendingIO) {
	c.pending = op
	self, root := ctx.Self(), c.system.Root
	// Only a store with a commit point can call a write off: past the
	// timeout, a plain Save may still land after a 503.
	if _, gated := c.store.(gatedStore); gated && len(op.gates) > 0 && c.writeWithin > 0 {
		op.timer = time.AfterFunc(c.writeWithin, func() { root.Send(self, &ioOverdue{op: op}) })
	}
	op.outcome, op.returned = make(chan error, 1), make(chan struct{})
	c.offload.run(func() {
		err := op.work()
		close(op.returned)
		op.outcome <- err
		root.Send(self, &ioDone{op: op, err: err})
	})
}

// gatedStore is a store with a commit point (actors/store's SaveGated).
type gatedStore interface {
	SaveGated(name string, v any, commit func() bool) error
}

// newGates returns n commit points, one per document a request writes.
func newGates(n int) []*ticket {
	gates := make([]*ticket, n)
	for i := range gates {
		gates[i] = &ticket{}
	}
	return gates
}

// callOff calls off the writes of op that have not passed their commit
// point: the first such one and every one after it (which has not
// started: each write starts once the one before it is done). It answers
// how many passed theirs; len(op.gates) when none could be called off.
func (op *pendingIO) callOff() (passed int) {
	for i, g := range op.gates {
		if g.cancel() {
			for _, later := range op.gates[i+1:] {
				later.cancel()
			}
			return i
		}
	}
	return len(op.gates)
}

// overdue answers a write request whose disk has not taken it within
// writeWithin, if its writes can still be called off: unavailable, and
// the value never in force nor on disk, so the device's other requests go
// on. A write past its commit point (only the directory's fsync left) is
// waited for: its value is in the document already.
func (c *deviceCore) overdue(ctx actor.Context, op *pendingIO) {
	if c.pending != op {
		return
	}
	op.passed = op.callOff()
	if op.passed == len(op.gates) || int(op.finished.Load()) < op.passed {
		// The later writes are called off; the one past its commit point
		// is waited for, as its rename or directory fsync may yet fail:
		// applied now, it would put memory ahead of the disk.
		return
	}
	c.pending = nil
	op.calledOff = true
	c.log.Error().Dur("within", c.writeWithin).Int("documents_written", op.passed).Msg("config write not taken by the disk in time; called off, not applied")
	defer answerPanic(ctx, op.sender)
	op.done(protocol.Errorf(protocol.CodeUnavailable, "",
		"the state directory's disk did not take the write within %v, so it was called off: the value is not applied and never will be; retry once the disk answers", c.writeWithin))
}

// finishIO completes the request whose work is done. A panic in it
// answers the request as failed first (the supervisor answers only the
// message in hand).
func (c *deviceCore) finishIO(ctx actor.Context, m *ioDone) {
	if c.pending != m.op {
		return
	}
	c.pending = nil
	if m.op.timer != nil {
		m.op.timer.Stop()
	}
	defer answerPanic(ctx, m.op.sender)
	m.op.done(m.err)
}

// readsThrough reports whether a read may be answered from memory ahead of
// the requests held: the work under way only writes (a write hung on the
// disk held every read of the device until its RequestTimeout, then 503),
// and what is held behind it only sets or resets. None of them changes
// what is in force before it is answered, so the read is answered as if
// it had come first. A load or an attachment changes what a read answers:
// reads wait for those.
func (c *deviceCore) readsThrough() bool {
	if c.pending == nil || !c.pending.write {
		return false
	}
	for _, h := range c.held {
		switch h.msg.(type) {
		case *setEntries, *resetEntry:
		default:
			return false
		}
	}
	return true
}

// release takes up the held requests in order, until one waits for its
// own work again.
func (c *deviceCore) release(ctx actor.Context) {
	for c.pending == nil && len(c.held) > 0 {
		h := c.held[0]
		c.held[0] = heldRequest{}
		c.held = c.held[1:]
		func() {
			defer answerPanic(ctx, h.sender)
			c.handle(ctx, h.msg, h.sender)
		}()
	}
}

// abandon answers the request whose work is under way, and those held
// behind it, when the actor stops (its device left, or the service is
// shutting down): their answers could no longer reach anyone.
//
// A write not past its commit point is called off and answered 503: not
// stored, and never will be. One past it (its value in its document, its
// directory's fsync left) will land: its answer waits, off the actor, for
// the write's outcome up to the write timeout (the shutdown waits as long
// for it, Service.waitOffloaded), so that a client told 503 never finds
// the value stored, nor one told 200 find it missing.
func (c *deviceCore) abandon(ctx actor.Context) {
	cause := fmt.Sprintf("%s %s left", c.dev.Name, c.dev.ID)
	if c.closing != nil && c.closing.Load() {
		cause = "the service shut down"
	}
	if op := c.pending; op != nil {
		c.pending = nil
		if op.timer != nil {
			op.timer.Stop()
		}
		// Only a store with a commit point can call a write off; a plain
		// Save lands whatever the gates say.
		_, gated := c.store.(gatedStore)
		switch {
		case !op.write:
			reply(ctx, op.sender, &entryReply{err: protocol.Errorf(protocol.CodeUnavailable, "", "%s before the request was applied; nothing was applied", cause)})
		case gated && op.callOff() == 0:
			reply(ctx, op.sender, &entryReply{err: protocol.Errorf(protocol.CodeUnavailable, "",
				"%s while the value was being stored: it was called off, not stored, and never will be", cause)})
		default:
			op.passed, op.stopCause = len(op.gates), cause
			// Before Stopped: the registry hears of it before it learns
			// the actor stopped, and holds the device's re-addition until
			// the write returned, which may be after its requester was
			// answered 503 at the write timeout (review36).
			ctx.Send(c.registry, &writeLanding{key: deviceKey(c.dev.Type, c.dev.ID), done: op.returned})
			c.offload.run(func() { c.answerLanding(ctx, op, cause) })
		}
	}
	gone := protocol.Errorf(protocol.CodeUnavailable, "", "%s; nothing was applied", cause)
	for _, h := range c.held {
		switch h.msg.(type) {
		case *getEntry, *setEntries, *resetEntry:
			reply(ctx, h.sender, &entryReply{err: gone})
		default:
			reply(ctx, h.sender, &ack{err: gone})
		}
	}
	c.held = nil
}

// answerLanding answers a write the stopped actor could not call off once
// its work returns: as the actor would have (op.done, which only touches
// the core the stopped actor no longer does), or, when the disk has not
// returned within the write timeout, 503 saying the value may be stored.
// It runs off the actor, after the actor's last use of the core.
func (c *deviceCore) answerLanding(ctx actor.Context, op *pendingIO, cause string) {
	within := c.writeWithin
	if within <= 0 {
		within = DefaultWriteTimeout
	}
	wait := time.NewTimer(within)
	defer wait.Stop()
	select {
	case err := <-op.outcome:
		defer func() {
			// No actor supervises this goroutine: the requester is told,
			// and the process goes on.
			if v := recover(); v != nil {
				c.log.Error().Interface("reason", v).Msg("answering a write past its commit point as its device actor stopped")
				reply(ctx, op.sender, &failed{reason: v})
			}
		}()
		op.done(err)
	case <-wait.C:
		reply(ctx, op.sender, &entryReply{err: protocol.Errorf(protocol.CodeUnavailable, "",
			"%s while the value was being stored: the disk had not confirmed it within %v, and it may be stored or not; read it back before retrying", cause, within)})
	}
}

// answerPanic answers to as failed if the caller is panicking, and lets
// the panic go on to the supervisor.
func answerPanic(ctx actor.Context, to *actor.PID) {
	if v := recover(); v != nil {
		reply(ctx, to, &failed{reason: v})
		panic(v)
	}
}

// admit runs the test hook, then admits a control-plane request unless its
// requester cancelled it at its deadline (and has answered unavailable).
func (c *deviceCore) admit(t *ticket) bool {
	if c.hook != nil {
		c.hook(c.dev)
	}
	return t.admit()
}

// answering is a supervisor strategy that first answers the request the
// failed actor was handling, if it was one (*failed), then lets its inner
// strategy decide: the requester learns at once instead of waiting out its
// deadline.
type answering struct{ inner actor.SupervisorStrategy }

func (s *answering) HandleFailure(sys *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason, message any) {
	if env, ok := message.(*actor.MessageEnvelope); ok && env.Sender != nil {
		sys.Root.Send(env.Sender, &failed{reason: reason})
	}
	s.inner.HandleFailure(sys, sup, child, rs, reason, message)
}

// loadDeviceConfig reads a device's stored device-global entries (defaults
// when none are stored, or when they are unreadable, with the error). A
// document with entries this build does not accept gives every other
// entry, the defaults of those, and their warnings in rejected, with the
// *store.RejectedError. It blocks on the disk: the registry runs it off the
// actor.
func loadDeviceConfig(st Store, name string, defaults protocol.DeviceConfig) (protocol.DeviceConfig, rejectedEntries, error) {
	var stored storedOwnedConfig
	found, err := st.Load(name, &stored)
	var rerr *store.RejectedError
	var corrupt *store.CorruptError
	switch {
	case errors.As(err, &rerr):
		return stored.Config, newRejectedEntries(stored.Rejected, rerr), err
	case errors.As(err, &corrupt) && corrupt.MovedTo != "":
		return defaults, movedAsideEntries(corrupt), err
	case err != nil || !found:
		return defaults, nil, err
	}
	return stored.Config, nil, nil
}

// movedAsideEntries are the warnings of a device's document that was not
// readable (not JSON, torn, a byte-order mark, a bad value outside the
// entries) and was moved aside whole: every device-global entry has its
// default. One entry, wholeDocument, stands for them in the log and the
// event; a GET of any entry says so until that entry is set again. (A
// whole file lost was told by one log line, less than one entry lost.)
func movedAsideEntries(c *store.CorruptError) rejectedEntries {
	out := rejectedEntries{}
	for _, k := range protocol.Keys() {
		if k.SessionScoped() {
			continue
		}
		out[k] = rejectedEntry{path: c.Path, keptAt: c.MovedTo, reason: c.Err.Error(), whole: true,
			warning: protocol.Error{Code: protocol.CodeInternal, Path: k.Path(), Message: fmt.Sprintf(
				"the stored file %s was not readable (%v) and was moved aside to %s: every entry of it has its default, %s too; set the entry again to store a clean value (the moved file has the old values)",
				c.Path, c.Err, c.MovedTo, k.Name())}}
	}
	return out
}

// wholeDocument is the entry name the log and the stored-entry-rejected
// event give a document moved aside whole (movedAsideEntries).
const wholeDocument = "*"

// loadProfileConfig reads a profile's stored entries on a device (as
// loadLatest does: a value written behind first). A document with entries
// this build does not accept is found, with every other entry, the
// defaults of those, their warnings in rejected and the
// *store.RejectedError.
func loadProfileConfig(wb *store.WriteBehind, st Store, name string) (cfg protocol.SessionConfig, found bool, rejected rejectedEntries, err error) {
	var stored storedProfileConfig
	found, err = loadLatest(wb, st, name, &stored)
	var rerr *store.RejectedError
	if errors.As(err, &rerr) {
		return stored.Config, true, newRejectedEntries(stored.Rejected, rerr), err
	}
	return stored.Config, found, nil, err
}

// storedProfileConfig reads a profile's stored document on a device as
// protocol.StoredSessionConfig does, and names the members that are not
// its entries (store.KeepsUnknown): the store writes them back.
type storedProfileConfig struct {
	protocol.StoredSessionConfig
}

// UnknownMembers makes storedProfileConfig a store.KeepsUnknown.
func (s *storedProfileConfig) UnknownMembers() []store.Member { return keptMembers(s.Unknown) }

// rejectedEntries are the warnings of a stored document's entries that
// this build did not accept (they took their defaults), by key. It is
// never written through: a change replaces it whole.
type rejectedEntries map[protocol.Key]rejectedEntry

// rejectedEntry is one entry of a stored document that was not accepted.
type rejectedEntry struct {
	path, keptAt, reason string
	// whole: the document was moved aside whole (movedAsideEntries).
	whole bool
	// warning is what a GET of the entry answers with, until it is set.
	warning protocol.Error
}

func newRejectedEntries(bad []protocol.RejectedEntry, rerr *store.RejectedError) rejectedEntries {
	out := make(rejectedEntries, len(bad))
	kept := "no copy of the file could be kept (see the log)"
	if rerr.KeptAt != "" {
		kept = "the file as read is kept at " + rerr.KeptAt
	}
	for _, b := range bad {
		out[b.Key] = rejectedEntry{path: rerr.Path, keptAt: rerr.KeptAt, reason: b.Err.Message,
			warning: protocol.Error{Code: protocol.CodeInternal, Path: b.Key.Path(), Message: fmt.Sprintf(
				"the stored %s in %s was not accepted (%s), so its default is in force (the file's other entries are); %s: set the entry again to store a clean value",
				b.Key.Name(), rerr.Path, b.Err.Message, kept)}}
	}
	return out
}

// placement is k and the key it is one entry with: the preset and the
// mount are one placement, so setting either sets both.
func placement(k protocol.Key) [2]protocol.Key {
	switch k {
	case protocol.KeyPreset, protocol.KeyMount:
		return [2]protocol.Key{protocol.KeyPreset, protocol.KeyMount}
	}
	return [2]protocol.Key{k, k}
}

// without is r without the keys of entries (with their placement); r
// itself when it has none of them.
func (r rejectedEntries) without(entries []protocol.Entry) rejectedEntries {
	if !r.hasAny(entries) {
		return r
	}
	keys := make([]protocol.Key, len(entries))
	for i, e := range entries {
		keys[i] = e.Key()
	}
	return r.withoutKeys(keys...)
}

// withoutKeys is r without keys (with their placement); r itself when it
// has none of them.
func (r rejectedEntries) withoutKeys(keys ...protocol.Key) rejectedEntries {
	out := r
	for _, k := range keys {
		if out.warnings(k) == nil {
			continue
		}
		out = maps.Clone(out)
		for _, pk := range placement(k) {
			delete(out, pk)
		}
	}
	return out
}

// hasAny reports whether r has the key of one of entries (or of its
// placement).
func (r rejectedEntries) hasAny(entries []protocol.Entry) bool {
	for _, e := range entries {
		if r.warnings(e.Key()) != nil {
			return true
		}
	}
	return false
}

// warnings is the warning of entry k (or of its placement), if it was
// rejected.
func (r rejectedEntries) warnings(k protocol.Key) []protocol.Error {
	var out []protocol.Error
	p := placement(k)
	for i, pk := range p {
		if e, ok := r[pk]; ok && (i == 0 || p[1] != p[0]) {
			out = append(out, e.warning)
		}
	}
	return out
}

// keys are r's keys in order.
func (r rejectedEntries) keys() []protocol.Key {
	keys := make([]protocol.Key, 0, len(r))
	for k := range r {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// report logs and publishes (stored-entry-rejected) every entry of r.
func (r rejectedEntries) report(log zerolog.Logger, pub *activity.Activity, deviceType, deviceID, profile string) {
	for _, k := range r.keys() {
		e := r[k]
		if e.whole {
			log.Error().Str("entry", wholeDocument).Str("file", e.path).Str("kept_at", e.keptAt).Str("reason", e.reason).
				Msg("stored document not readable, moved aside; every entry of it has its default")
			break
		}
		l := log.Error().Str("entry", k.Name()).Str("file", e.path).Str("kept_at", e.keptAt).Str("reason", e.reason)
		if profile != "" {
			l = l.Str("profile", profile)
		}
		l.Msg("stored entry not accepted; its default is in force, the document's other entries are")
	}
	if pub != nil {
		for _, ev := range r.events(deviceType, deviceID, profile) {
			pub.Publish(ev)
		}
	}
}

// events are the stored-entry-rejected events of r, in entry order: one
// per entry, or one (entry "*") for a document moved aside whole, while
// any of its entries is in r. report publishes them at the read; a
// device's are its StoredRejections until they are set again.
func (r rejectedEntries) events(deviceType, deviceID, profile string) []event.Event {
	var out []event.Event
	for _, k := range r.keys() {
		e := r[k]
		if e.whole {
			return append(out, event.StoredEntryRejected(deviceType, deviceID, profile, wholeDocument, e.path, e.keptAt, e.reason))
		}
		out = append(out, event.StoredEntryRejected(deviceType, deviceID, profile, k.Name(), e.path, e.keptAt, e.reason))
	}
	return out
}

// setRejected makes r the device-global entries the device holds
// rejected, and publishes them (Device.StoredRejections). The device
// actor alone calls it (the registry, before the actor starts).
func (c *deviceCore) setRejected(r rejectedEntries) {
	c.rejected = r
	if len(r) == 0 {
		c.dev.rejections.Store(nil)
		return
	}
	c.dev.rejections.Store(&StoredRejections{Events: r.events(c.dev.Name, c.dev.ID, "")})
}

// init sets the device-global entries (loadDeviceConfig) and publishes the
// first views. It runs before the actor starts, so the device is fully
// configured when it appears in any listing.
func (c *deviceCore) init(global protocol.DeviceConfig) {
	c.global = c.withinLimits(global)
	c.sessions = make(map[uint64]*sessionState)
	c.profiles = make(map[string]*profileDoc)
	c.publishGlobals()
}

// withinLimits is g as the loop applies it: a force clamp above the
// device's own force limit (a Minverse's 4 N; the entry's default is the
// Inverse3's 10 N) clamps at that limit (loop.Globals.ForceClampN), so the
// entry reads the limit rather than a clamp that is not in force.
func (c *deviceCore) withinLimits(g protocol.DeviceConfig) protocol.DeviceConfig {
	if limit := c.dev.Info.MaxForceN; limit > 0 && g.ForceClamp.MaxForceN > limit {
		g.ForceClamp.MaxForceN = limit
	}
	return g
}

// warnings are what a GET of entry k answers with besides its value: the
// stored value it was not given (rejectedEntries).
func (c *deviceCore) warnings(session uint64, k protocol.Key) []protocol.Error {
	if !k.SessionScoped() {
		return c.rejected.warnings(k)
	}
	if s := c.sessions[session]; s != nil {
		if pd := c.profiles[s.profile]; pd != nil {
			return pd.rejected.warnings(k)
		}
	}
	return nil
}

func (c *deviceCore) get(session uint64, k protocol.Key) (protocol.Entry, error) {
	if !k.SessionScoped() {
		return c.global.Get(k), nil
	}
	s := c.sessions[session]
	if s == nil {
		return nil, protocol.Errorf(protocol.CodeUnknownSession, "", "session %d is not connected to %s %s", session, c.dev.Name, c.dev.ID)
	}
	return c.effective(s, k), nil
}

// effective answers a session-scoped entry as it is in force: the basis
// that applies (per device, else the session's) and the mount the preset
// implies.
func (c *deviceCore) effective(s *sessionState, k protocol.Key) protocol.Entry {
	switch k {
	case protocol.KeyBasis:
		return c.effectiveBasis(s)
	case protocol.KeyMount:
		return protocol.Mount{Transform: c.effectiveMount(s.cfg, c.effectiveBasis(s))}
	}
	return s.cfg.Get(k)
}

func (c *deviceCore) effectiveBasis(s *sessionState) protocol.Basis {
	if s.cfg.Basis != nil {
		return *s.cfg.Basis
	}
	if s.basis.Permutation == "" {
		return protocol.Basis{Permutation: protocol.IdentityBasis}
	}
	return s.basis
}

// effectiveMount is the mount in force: the preset's own transform while a
// preset is set, the custom mount otherwise. The mount acts after the
// basis, so a *_centered preset needs the workspace centre in the basis's
// axes.
func (c *deviceCore) effectiveMount(cfg *protocol.SessionConfig, basis protocol.Basis) space.Transform {
	if cfg.Preset != "" && cfg.Preset != space.PresetCustom {
		perm, err := space.ParsePermutation(basis.Permutation)
		if err != nil {
			perm = space.IdentityPermutation()
		}
		if t, ok := space.PresetTransform(cfg.Preset, perm.Apply(space.Vec3(c.dev.Info.WorkspaceCenterM))); ok {
			return t
		}
	}
	return cfg.Mount
}

// set applies m and answers sender: at once, or once the durable write
// it needs is done (an entry is never in force before it is on disk).
func (c *deviceCore) set(ctx actor.Context, sender *actor.PID, m *setEntries) {
	answer := func(e protocol.Entry, err error) { reply(ctx, sender, &entryReply{entry: e, err: err}) }
	if len(m.entries) == 0 {
		answer(nil, nil)
		return
	}
	last := m.entries[len(m.entries)-1].Key()
	if m.session == 0 {
		if c.globalUnread {
			c.readGlobalThenSet(ctx, sender, m)
			return
		}
		next := c.global
		for _, e := range m.entries {
			if e.Key().SessionScoped() {
				answer(nil, protocol.Errorf(protocol.CodeInvalidValue, "", "%s is session-scoped: name a session", e.Key().Name()))
				return
			}
			next.Set(e)
		}
		next = c.withinLimits(next)
		name := c.dev.storeName()
		keys := entryKeys(m.entries)
		if next == c.global && !c.rejected.hasAny(m.entries) {
			answerInForce := func(err error) {
				if err != nil {
					answer(nil, err)
					return
				}
				answer(c.global.Get(last), nil)
			}
			if c.keepsInside(name, keys) {
				c.rewriteThen(ctx, sender, name, ownedConfig{config: next, owner: c.dev.Info.UUID}, keys, answerInForce)
				return
			}
			// Unchanged: stored already, if its file is still there.
			c.confirmThen(ctx, sender, name, ownedConfig{config: next, owner: c.dev.Info.UUID}, answerInForce)
			return
		}
		// An entry whose stored value was rejected, or that holds a newer
		// build's fields, is written even when its default, in force, is
		// what is set: the file gets a clean value, the one set, whole.
		c.saveThen(ctx, sender, name, replacing(ownedConfig{config: next, owner: c.dev.Info.UUID}, keys), func(err error) {
			if err != nil {
				answer(nil, err)
				return
			}
			if c.rejected.hasAny(m.entries) {
				c.setRejected(c.rejected.without(m.entries))
			}
			c.global = next
			c.publishGlobals()
			answer(c.global.Get(last), nil)
		})
		return
	}
	s := c.sessions[m.session]
	if s == nil {
		answer(nil, protocol.Errorf(protocol.CodeUnknownSession, "", "session %d is not connected to %s %s", m.session, c.dev.Name, c.dev.ID))
		return
	}
	next := *s.cfg
	for _, e := range m.entries {
		if !e.Key().SessionScoped() {
			answer(nil, protocol.Errorf(protocol.CodeHTTPOnlyKey, "", "%s is device-global: use POST /{type}/{id}/config/%s", e.Key().Name(), e.Key().Path()))
			return
		}
		next.Set(e)
	}
	c.sizeNavigation(&next)
	changed := !next.Equal(s.cfg)
	if !changed && !m.durable {
		answer(c.effective(s, last), nil) // a client re-sending its configure every tick costs nothing
		return
	}
	doc := c.profiles[s.profile]
	if doc != nil && doc.unread && m.durable {
		c.readProfilesThen(ctx, sender, []string{s.profile}, func() { c.set(ctx, sender, m) })
		return
	}
	var nextDoc protocol.SessionConfig
	if doc != nil {
		// Only what this request changes, and for a POST what it names
		// (its 200 promises the disk has that value): the profile's
		// other sessions' entries stay as they stored them.
		nextDoc = *doc.cfg
		nextDoc.TakeChanged(s.cfg, &next)
		if m.durable {
			for _, e := range m.entries {
				nextDoc.Take(&next, e.Key())
			}
		}
	}
	docChanged := doc != nil && !nextDoc.Equal(doc.cfg)
	// What the write sets anew, whole: the entries this request changes,
	// and for a POST those it names.
	var replaced []protocol.Key
	var name string
	if doc != nil {
		replaced = changedKeys(s.cfg, &next)
		if m.durable {
			replaced = append(replaced, entryKeys(m.entries)...)
		}
		name = c.dev.profileStoreName(s.profile)
	}
	// A POST of an entry whose stored value was rejected, or that holds a
	// newer build's fields, writes, even the default in force: the file
	// gets a clean value, the one set, whole.
	inForce := !changed && !docChanged && !c.owesWrite(s) && !(m.durable && doc != nil && doc.rejected.hasAny(m.entries))
	keptInside := m.durable && doc != nil && c.keepsInside(name, entryKeys(m.entries))
	if inForce && !keptInside {
		if !m.durable || doc == nil {
			answer(c.effective(s, last), nil)
			return
		}
		// A POST of the value in force: stored already, if the
		// profile's file on the device is still there.
		c.confirmThen(ctx, sender, name, nextDoc, func(err error) {
			if err != nil {
				answer(nil, err)
				return
			}
			answer(c.effective(s, last), nil)
		})
		return
	}
	apply := func(err error) {
		if err != nil {
			answer(nil, err)
			return
		}
		if m.durable {
			s.unread = false
		}
		if doc != nil {
			doc.cfg = &nextDoc
			doc.unread = doc.unread && !m.durable
			if m.durable || docChanged {
				doc.rejected = doc.rejected.without(m.entries)
			}
		}
		if changed {
			s.cfg = &next
			c.publish(s)
		}
		answer(c.effective(s, last), nil)
	}
	if doc == nil {
		apply(nil)
		return
	}
	if m.durable && inForce {
		c.rewriteThen(ctx, sender, name, nextDoc, replaced, apply)
		return
	}
	if m.durable {
		c.saveThen(ctx, sender, name, replacing(nextDoc, replaced), apply)
		return
	}
	if docChanged && doc.unread {
		// doc.cfg is the defaults, standing for a document that could not
		// be read: queued, they would be what the profile's next session
		// takes (the queued value is the latest) and be written over the
		// document once it reads again; not queued, the change would be
		// acknowledged and lost.
		apply(protocol.Errorf(protocol.CodeUnavailable, "", "%s %s: the profile's stored entries on this device could not be read, so the change could not be stored without losing them; it was not applied (pick the profile again once the state directory reads)", c.dev.Name, c.dev.ID))
		return
	}
	if docChanged && c.writeBehind != nil {
		if err := c.writeBehind.Put(name, replacing(nextDoc, replaced)); err != nil {
			// Closed by the shutdown (or not encodable): acknowledged, the
			// change would be lost with the process.
			apply(protocol.Errorf(protocol.CodeUnavailable, "", "the change could not be queued for the state directory, so it was not applied: %v", err))
			return
		}
	}
	apply(nil)
}

// readGlobalThenSet reads the device's document again before m changes
// its entries while it is unread (globalUnread): c.global is the defaults
// then, standing for values the document holds and a client was told are
// stored, which the change written with those defaults would replace. Read
// now, its values are put in force and m applies to them; still unreadable,
// m is refused and changes nothing, and the next change reads it again.
func (c *deviceCore) readGlobalThenSet(ctx actor.Context, sender *actor.PID, m *setEntries) {
	name, defaults := c.dev.storeName(), c.global
	var stored protocol.DeviceConfig
	var rejected rejectedEntries
	c.startIO(ctx, &pendingIO{
		sender: sender,
		work: func() (err error) {
			stored, rejected, err = loadDeviceConfig(c.store, name, defaults)
			return err
		},
		done: func(err error) {
			if leftUnread(err) {
				c.log.Error().Err(err).Msg("stored device config still unreadable; the change is refused")
				reply(ctx, sender, &entryReply{err: protocol.Errorf(protocol.CodeUnavailable, "",
					"%s %s: its stored device-global entries could not be read, so the change was not applied: stored with the defaults the device runs on meanwhile, it would replace them (retry once the state directory reads the document; it is read again at each change): %v", c.dev.Name, c.dev.ID, err)})
				return
			}
			// Read, or corrupt and moved aside (the defaults are the
			// device's until the next write, as at its addition).
			c.globalUnread = false
			rejected.report(c.log, c.activity, c.dev.Name, c.dev.ID, "")
			c.setRejected(rejected)
			if stored = c.withinLimits(stored); stored != c.global {
				c.global = stored
				c.publishGlobals()
			}
			c.set(ctx, sender, m)
		}})
}

// readProfilesThen reads again, before a POST or DELETE writes them, the
// documents of profiles the device has unread (profileDoc.unread): the
// defaults standing for one, written with the change, would replace the
// values it holds, which a client was told are stored. Each that reads now
// is the profile's document on the device from then on (its sessions keep
// the entries they have), and then runs once all read. One that still does
// not read refuses the request, which changes nothing; the next POST or
// DELETE reads it again.
func (c *deviceCore) readProfilesThen(ctx actor.Context, sender *actor.PID, profiles []string, then func()) {
	type read struct {
		cfg      protocol.SessionConfig
		found    bool
		rejected rejectedEntries
		err      error
	}
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = c.dev.profileStoreName(p)
	}
	reads := make([]read, len(profiles))
	c.startIO(ctx, &pendingIO{
		sender: sender,
		work: func() error {
			for i, name := range names {
				r := &reads[i]
				r.cfg, r.found, r.rejected, r.err = loadProfileConfig(c.writeBehind, c.store, name)
			}
			return nil
		},
		done: func(error) {
			var still error
			for i, p := range profiles {
				r := &reads[i]
				pd := c.profiles[p]
				switch {
				case leftUnread(r.err):
					c.log.Error().Err(r.err).Str("profile", p).Msg("stored profile config still unreadable; the change is refused")
					if still == nil {
						still = protocol.Errorf(protocol.CodeUnavailable, "",
							"%s %s: the stored entries of profile %q on this device could not be read, so the change was not applied: stored with the defaults its sessions have here meanwhile, it would replace them (retry once the state directory reads the document; it is read again at each POST or DELETE): %v", c.dev.Name, c.dev.ID, p, r.err)
					}
				case pd == nil:
				case r.found:
					c.sizeNavigation(&r.cfg) // a file from before navigation has the unsized default
					pd.cfg, pd.unread = &r.cfg, false
					r.rejected.report(c.log, c.activity, c.dev.Name, c.dev.ID, p)
					pd.rejected = r.rejected
				default:
					// None stored (removed meanwhile), or corrupt and moved
					// aside: the defaults it has are the document's.
					pd.unread = false
				}
			}
			if still != nil {
				reply(ctx, sender, &entryReply{err: still})
				return
			}
			then()
		}})
}

// owesWrite reports whether a POST or DELETE of the session's entries on
// this device must write its profile document even when it changes nothing
// in memory: a 200 promises the disk has the value, and the disk may hold
// another (a change only written behind, a document left unread).
func (c *deviceCore) owesWrite(s *sessionState) bool {
	return s.unread || c.writtenBehind(s)
}

// writtenBehind reports whether the session's profile document on this
// device has a change that is only written behind: a POST or DELETE that
// changes nothing in memory must still write it, or its 200 would promise
// a durability that a crash in the next second takes back. It runs on the
// actor, so it asks Queued, which never waits on a write in progress.
func (c *deviceCore) writtenBehind(s *sessionState) bool {
	if c.store == nil || c.writeBehind == nil || s.profile == "" {
		return false
	}
	return c.writeBehind.Queued(c.dev.profileStoreName(s.profile))
}

// saveThen writes v durably off the actor, then runs done with the
// outcome (saveDurable's error) on it.
func (c *deviceCore) saveThen(ctx actor.Context, sender *actor.PID, name string, v any, done func(error)) {
	if c.store == nil {
		done(nil)
		return
	}
	gates := newGates(1)
	c.startIO(ctx, &pendingIO{sender: sender, write: true, gates: gates, work: func() error { return c.saveDurable(name, v, gates[0]) }, done: done})
}

// rewriteThen is saveThen for a POST or DELETE that sets the entries
// keys to the values in force, written only so that the newer build's
// fields kept inside them go with the value they were part of (see
// saveInForce).
func (c *deviceCore) rewriteThen(ctx actor.Context, sender *actor.PID, name string, v any, keys []protocol.Key, done func(error)) {
	if c.store == nil {
		done(nil)
		return
	}
	gates := newGates(1)
	c.startIO(ctx, &pendingIO{sender: sender, write: true, gates: gates, work: func() error { return c.saveInForce(name, v, keys, gates[0]) }, done: done})
}

// saveInForce writes v, whose entries keys are set to the values in force,
// replacing them (replacing). The value set is the one stored either way,
// so a write that cannot be made (a folder the service may not write
// into, members kept elsewhere over the limit) answers nil, as such a
// request did before those fields were kept, while the file is in place:
// they stay in it until the entry's next write.
//
// Told once per document until a write of it succeeds: a client that
// sends the value in force in a loop would log a line at each request.
func (c *deviceCore) saveInForce(name string, v any, keys []protocol.Key, gate *ticket) error {
	err := c.persist(name, replacing(v, keys), gate)
	if err == nil || errors.Is(err, store.ErrNotCommitted) {
		return err
	}
	ps, ok := c.store.(placedStore)
	if !ok {
		return c.persistFailed(name, err)
	}
	if there, perr := ps.InPlace(name); perr != nil || !there {
		return c.persistFailed(name, err)
	}
	if c.inForceUnwritten.add(name) {
		c.log.Warn().Err(err).Str("document", name).Msg("the value set is the one in force and stored; the newer build's fields kept inside it stay in the file until the entry's next write (told once until a write of the document succeeds)")
	}
	return nil
}

// unwrittenDocs is a set of document names, safe off the actor: the work
// of a write called off (overdue) may still run beside the next one.
type unwrittenDocs struct {
	mu    sync.Mutex
	names map[string]struct{}
}

// add reports whether name was not in the set, and puts it there.
func (u *unwrittenDocs) add(name string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.names[name]; ok {
		return false
	}
	if u.names == nil {
		u.names = make(map[string]struct{})
	}
	u.names[name] = struct{}{}
	return true
}

// remove takes name out of the set.
func (u *unwrittenDocs) remove(name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.names, name)
}

// keptStore is a store that tells whether a document keeps members a
// newer build wrote inside an object of it (actors/store's KeepsInside).
type keptStore interface {
	KeepsInside(name string, object ...string) bool
}

// keepsInside reports whether document name keeps members that this
// build does not know inside one of the entries keys (a newer build's
// field of the entry): a POST or DELETE of such an entry writes, even the
// value in force, so that the entry stored is the one set, whole
// (replacing). It takes no lock held across I/O.
func (c *deviceCore) keepsInside(name string, keys []protocol.Key) bool {
	ks, ok := c.store.(keptStore)
	if !ok {
		return false
	}
	for _, k := range keys {
		for _, pk := range placement(k) {
			if ks.KeepsInside(name, pk.Name()) {
				return true
			}
		}
	}
	return false
}

// replacing is the document v written as a change that sets the entries
// keys anew, whole (with their placement), as the wire does: the members
// a newer build wrote inside them are the old values', and go
// (store.Replacing); those inside other entries stay.
func replacing(v any, keys []protocol.Key) any {
	if len(keys) == 0 {
		return v
	}
	var objects [][]string
	for _, k := range keys {
		for _, pk := range placement(k) {
			if o := []string{pk.Name()}; !slices.ContainsFunc(objects, func(p []string) bool { return slices.Equal(p, o) }) {
				objects = append(objects, o)
			}
		}
	}
	return store.Replacing{Doc: v, Objects: objects}
}

// entryKeys is the keys of entries.
func entryKeys(entries []protocol.Entry) []protocol.Key {
	keys := make([]protocol.Key, len(entries))
	for i, e := range entries {
		keys[i] = e.Key()
	}
	return keys
}

// changedKeys is the session-scoped entries that differ between before
// and after: those TakeChanged takes.
func changedKeys(before, after *protocol.SessionConfig) []protocol.Key {
	var keys []protocol.Key
	for _, k := range protocol.Keys() {
		if k.SessionScoped() && !before.SameEntry(after, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// placedStore is a store that tells whether a document's file is in place
// (actors/store's InPlace).
type placedStore interface {
	InPlace(name string) (bool, error)
}

// confirmThen runs done once document name, which holds v already (a POST
// of the value in force writes nothing), is confirmed on disk: its file
// is there, or it was never stored (v is the defaults a restart gives: a
// lab gateway's sync of a node's device at its defaults writes nothing);
// or, gone (removed by hand), v is written again. A folder in the place
// of a stored one is the error, as for a changed value: a 200 would
// promise a value a restart loses. Off the actor, as every I/O; at once
// for a store that cannot tell (a test's).
func (c *deviceCore) confirmThen(ctx actor.Context, sender *actor.PID, name string, v any, done func(error)) {
	ps, ok := c.store.(placedStore)
	if c.store == nil || !ok {
		done(nil)
		return
	}
	gates := newGates(1)
	c.startIO(ctx, &pendingIO{sender: sender, write: true, gates: gates, work: func() error {
		return c.confirmDurable(ps, name, v, gates[0])
	}, done: done})
}

// confirmDurable is confirmThen's work, off the actor: nil once document
// name, holding v already, is on disk (there, never stored, or written
// again).
func (c *deviceCore) confirmDurable(ps placedStore, name string, v any, gate *ticket) error {
	there, err := ps.InPlace(name)
	switch {
	case err != nil:
		c.log.Error().Err(err).Str("document", name).Msg("could not confirm config on disk")
		return protocol.Errorf(protocol.CodeInternal, "", "the value is the one in force, but it is not stored, and a restart would lose it: %v", err)
	case there:
		return nil
	}
	return c.saveDurable(name, v, gate)
}

// reset restores k's default and answers sender with the value now in
// force (for the last session reset): a reset basis falls back to the
// session-level basis, a reset mount to the preset's. The sessions are
// reset in order, each once its profile's document is written; the first
// write that fails stops there and is the answer.
func (c *deviceCore) reset(ctx actor.Context, sender *actor.PID, m *resetEntry) {
	k := m.key
	if !k.SessionScoped() {
		c.set(ctx, sender, &setEntries{entries: []protocol.Entry{protocol.DefaultEntry(k)}, durable: true})
		return
	}
	targets := m.sessions
	var every []uint64 // the sessions an all reset resets, for its answer
	if m.all {
		targets = targets[:0:0]
		for id := range c.sessions {
			targets = append(targets, id)
		}
		every = targets
	}
	var unread []string
	for _, id := range targets {
		if s := c.sessions[id]; s != nil {
			if pd := c.profiles[s.profile]; pd != nil && pd.unread && !slices.Contains(unread, s.profile) {
				unread = append(unread, s.profile)
			}
		}
	}
	if len(unread) > 0 {
		c.readProfilesThen(ctx, sender, unread, func() { c.reset(ctx, sender, m) })
		return
	}
	type change struct {
		s    *sessionState
		next protocol.SessionConfig
		// doc is the profile's document with this reset (and those of
		// the profile's sessions before it in changes); nil without one.
		doc *protocol.SessionConfig
		// inForce: the reset sets the value in force, written only for
		// the newer build's fields kept inside it (saveInForce).
		inForce bool
	}
	var changes []change
	// confirms are the profiles whose document this reset leaves as it is
	// (the default was in force): stored already, if the file is still
	// there, as for a POST of the value in force (confirmThen).
	var confirms []string
	var last *sessionState
	// The reset goes onto each profile's document as the sessions before
	// it in this request left it: only entry k, so the entries the
	// profile's other sessions stored stay.
	docs := map[string]*protocol.SessionConfig{}
	for _, id := range targets {
		s := c.sessions[id]
		if s == nil {
			continue
		}
		last = s
		next := *s.cfg
		next.Reset(k)
		c.sizeNavigation(&next)
		var doc *protocol.SessionConfig
		docChanged := false
		if pd := c.profiles[s.profile]; pd != nil {
			before := docs[s.profile]
			if before == nil {
				before = pd.cfg
			}
			d := *before
			d.Take(&next, k)
			doc, docChanged = &d, !d.SameEntry(before, k)
			docs[s.profile] = doc
		}
		// A reset of an entry whose stored value was rejected, or that
		// holds a newer build's fields, writes, even the default in
		// force: the file gets a clean value, the default, whole.
		unchanged := next.Equal(s.cfg) && !docChanged && !c.owesWrite(s) &&
			!(doc != nil && c.profiles[s.profile].rejected.warnings(k) != nil)
		keptInside := doc != nil && c.keepsInside(c.dev.profileStoreName(s.profile), []protocol.Key{k})
		if !unchanged || keptInside {
			changes = append(changes, change{s, next, doc, unchanged})
		} else if doc != nil && !slices.Contains(confirms, s.profile) {
			confirms = append(confirms, s.profile)
		}
	}
	inForce := func() protocol.Entry {
		if last == nil {
			return c.effective(&sessionState{cfg: c.defaultConfig()}, k)
		}
		return c.effective(last, k)
	}
	applyUpTo := func(n int) {
		for _, ch := range changes[:n] {
			ch.s.unread = false // written, or without a profile: nothing unread
			if ch.doc != nil {
				pd := c.profiles[ch.s.profile]
				pd.cfg, pd.unread = ch.doc, false
				pd.rejected = pd.rejected.withoutKeys(k)
			}
			if !ch.next.Equal(ch.s.cfg) {
				next := ch.next
				ch.s.cfg = &next
				c.publish(ch.s)
			}
		}
	}
	type write struct {
		name    string
		cfg     protocol.SessionConfig
		change  int // the index in changes
		inForce bool
		// confirm: written only if its file is gone (confirmDurable).
		confirm bool
	}
	var writes []write
	written := map[string]bool{}
	for i, ch := range changes {
		if ch.doc != nil {
			writes = append(writes, write{name: c.dev.profileStoreName(ch.s.profile), cfg: *ch.doc, change: i, inForce: ch.inForce})
			written[ch.s.profile] = true
		}
	}
	ps, canConfirm := c.store.(placedStore)
	for _, profile := range confirms {
		if canConfirm && !written[profile] {
			writes = append(writes, write{name: c.dev.profileStoreName(profile), cfg: *docs[profile], change: len(changes), confirm: true})
		}
	}
	if len(writes) == 0 {
		applyUpTo(len(changes))
		reply(ctx, sender, &entryReply{entry: inForce(), sessions: every})
		return
	}
	// Each document has its own commit point, so that past WriteTimeout
	// the writes not done yet are called off (overdue) even once the
	// first ones are in their documents.
	failedAt := len(writes) // written by work; read once it is done
	gates := newGates(len(writes))
	var op *pendingIO
	op = &pendingIO{sender: sender, write: true, gates: gates, work: func() error {
		for i, w := range writes {
			save := func() error { return c.saveDurable(w.name, replacing(w.cfg, []protocol.Key{k}), gates[i]) }
			switch {
			case w.confirm:
				save = func() error { return c.confirmDurable(ps, w.name, w.cfg, gates[i]) }
			case w.inForce:
				save = func() error { return c.saveInForce(w.name, w.cfg, []protocol.Key{k}, gates[i]) }
			}
			if err := save(); err != nil {
				failedAt = i
				return err
			}
			op.finished.Add(1)
		}
		return nil
	}}
	op.done = func(err error) {
		if err == nil {
			applyUpTo(len(changes))
			reply(ctx, sender, &entryReply{entry: inForce(), sessions: every})
			return
		}
		// Called off, work may still be running: failedAt is not ours
		// to read then, only the count of documents that passed.
		stopped := op.passed
		if !op.calledOff {
			stopped = failedAt
		}
		// Called off at overdue, or past it once the write that had passed
		// its commit point was done (overdue waited for it).
		if op.calledOff || errors.Is(err, store.ErrNotCommitted) {
			switch {
			case stopped > 0 && op.stopCause != "":
				err = protocol.Errorf(protocol.CodeUnavailable, "",
					"%s while the reset was being stored: it is in force for the %d session(s) whose profile documents were written first, and was called off for the other %d, which keep their value and never get this reset; read the entry back", op.stopCause, stopped, len(writes)-stopped)
			case stopped > 0:
				err = protocol.Errorf(protocol.CodeUnavailable, "",
					"the state directory's disk did not take the reset within %v: it is in force for the %d session(s) whose profile documents were written first, and was called off for the other %d, which keep their value and never get this reset; read the entry back, and retry once the disk answers", c.writeWithin, stopped, len(writes)-stopped)
			}
		}
		applyUpTo(writes[stopped].change)
		reply(ctx, sender, &entryReply{err: err})
	}
	c.startIO(ctx, op)
}

// attach adds a session or applies its new profile and basis. A profile
// whose stored entries must be read first holds the device's later
// requests until they are in (finishAttach).
func (c *deviceCore) attach(ctx actor.Context, m *attachSession) {
	s := c.sessions[m.session]
	added := s == nil
	if added {
		s = &sessionState{cfg: c.defaultConfig(), workspace: space.IdentityTransform(), slot: &viewSlot{}}
		c.sessions[m.session] = s
	}
	s.basis = m.basis
	if m.profile == "" || m.profile == s.profile || c.store == nil {
		if m.profile != "" {
			s.profile = m.profile
		}
		c.finishAttach(m.session, s, added)
		return
	}
	c.leaveProfile(s)
	s.profile = m.profile
	if pd := c.profiles[m.profile]; pd != nil && !pd.unread {
		// Another session of the device has the profile: its document
		// here is the latest, written or queued, and needs no read.
		pd.sessions++
		s.cfg, s.loadErr, s.unread = pd.cfg, nil, false
		c.finishAttach(m.session, s, added)
		return
	}
	var stored protocol.SessionConfig
	var found bool
	var rejected rejectedEntries
	name := c.dev.profileStoreName(m.profile)
	c.startIO(ctx, &pendingIO{
		work: func() (err error) {
			stored, found, rejected, err = loadProfileConfig(c.writeBehind, c.store, name)
			return err
		},
		done: func(err error) {
			switch {
			case rejected != nil && !leftUnread(err):
				// Read, but with entries this build does not accept: the
				// others are in force, those have their defaults, and the
				// session, the log and the events hear of each.
				rejected.report(c.log, c.activity, c.dev.Name, c.dev.ID, m.profile)
				c.sizeNavigation(&stored)
				s.cfg = &stored
				s.loadErr, s.unread = nil, false
				s.rejectedWarning = c.rejectedWarning(rejected)
				if m.late != nil {
					m.late.warnLate(s.rejectedWarning)
					s.rejectedWarning = nil
				}
				c.joinProfile(m.profile, s.cfg, false)
				c.profiles[m.profile].rejected = rejected
			case err != nil:
				// Defaults, as logged: the entries of the profile the
				// session had before are not this profile's, and its next
				// write would store them as if they were.
				c.log.Error().Err(err).Str("profile", m.profile).Msg("stored profile config unreadable; using defaults")
				s.cfg = c.defaultConfig()
				s.loadErr, s.unread = err, leftUnread(err)
				if m.late != nil {
					m.late.warnLate(c.unreadWarning(err))
					s.loadErr = nil // told; the next published has nothing to add
				}
				c.joinProfile(m.profile, s.cfg, s.unread)
			case found:
				c.sizeNavigation(&stored) // a file from before navigation has the unsized default
				s.cfg = &stored
				s.loadErr, s.unread = nil, false
				c.joinProfile(m.profile, s.cfg, false)
			default:
				s.loadErr, s.unread = nil, false
				// A new profile starts from what the session has set so far.
				if !s.cfg.Equal(c.defaultConfig()) && c.writeBehind != nil {
					if err := c.writeBehind.Put(name, *s.cfg); err != nil {
						c.log.Warn().Err(err).Str("profile", m.profile).Msg("the session's entries are in force but not stored in the new profile")
					}
				}
				c.joinProfile(m.profile, s.cfg, false)
			}
			c.finishAttach(m.session, s, added)
		}})
}

func (c *deviceCore) finishAttach(session uint64, s *sessionState, added bool) {
	c.publish(s)
	if added {
		// Only now that its view is published: a reader that finds the
		// session's slot must find the view of its config (unchangedBy
		// relies on it), not the default view of a profile still loading.
		c.dev.slots.set(session, s.slot)
		c.dev.viewsChanged()
	}
}

// joinProfile counts one more session of the device on profile, whose
// document read as cfg (unread: it could not be read, see profileDoc).
// A document the device has already, read again because it was unread,
// is replaced by what the read found.
func (c *deviceCore) joinProfile(profile string, cfg *protocol.SessionConfig, unread bool) {
	pd := c.profiles[profile]
	if pd == nil {
		pd = &profileDoc{}
		c.profiles[profile] = pd
	}
	pd.sessions++
	if !unread || pd.cfg == nil {
		pd.cfg, pd.unread = cfg, unread
	}
}

// leaveProfile counts one session fewer on s's profile, and drops the
// document when none is left: the next session reads it again.
func (c *deviceCore) leaveProfile(s *sessionState) {
	pd := c.profiles[s.profile]
	if pd == nil {
		return
	}
	if pd.sessions--; pd.sessions <= 0 {
		delete(c.profiles, s.profile)
	}
}

func (c *deviceCore) detach(session uint64) {
	s, ok := c.sessions[session]
	if !ok {
		return
	}
	c.leaveProfile(s)
	delete(c.sessions, session)
	c.dev.slots.remove(session)
	c.dev.viewsChanged()
}

// publish compiles and publishes one session's view. A session whose
// entries are all defaults shares the device's default view, so every such
// session reads one view (and one cached encoding per tick).
func (c *deviceCore) publish(s *sessionState) {
	if s.cfg.Equal(c.defaultConfig()) && c.effectiveBasis(s).Permutation == protocol.IdentityBasis && s.workspace == space.IdentityTransform() {
		s.slot.view.Store(nil)
	} else {
		v := c.compile(s.cfg, c.effectiveBasis(s), s.workspace)
		v.Params.Navigation = c.navigation(s)
		s.slot.view.Store(v)
	}
	c.dev.viewsChanged() // after the store
	c.reparam(s)
	c.reconvertEffects(s)
}

// reparam puts the view just published for s in force on the loop at
// once if s's session controls the device: its command holds the Params of
// the view it was written with, so navigation turned off, new damping or a
// new force gate would otherwise wait for the session's next command
// (Register.Reparam). A session's writer that raced this checks its view
// after its own write.
func (c *deviceCore) reparam(s *sessionState) {
	reg := c.dev.Register()
	o := reg.Owner()
	if o == 0 || c.sessions[o] != s {
		return
	}
	v := s.slot.view.Load()
	if v == nil {
		v = c.dev.defaultView.Load()
	}
	reg.Reparam(o, v.Params)
}

func (c *deviceCore) compile(cfg *protocol.SessionConfig, basis protocol.Basis, workspace space.Transform) *View {
	perm, err := space.ParsePermutation(basis.Permutation)
	if err != nil {
		// Entries are validated on the way in; this is a stored file gone
		// wrong. Fall back to the identity rather than refusing to serve.
		c.log.Error().Err(err).Msg("invalid basis in force; using XYZ")
		perm = space.IdentityPermutation()
	}
	mount := c.effectiveMount(cfg, basis)
	v := &View{Space: space.NewView(perm, mount), Workspace: workspace}
	if workspace != space.IdentityTransform() {
		v.Space = v.Space.Then(workspace)
	}
	v.Params = &loop.Params{
		Damping:       v.Space.DampingMatrixDevice(cfg.Damping.ScalarOrZero(), cfg.Damping.VectorOrZero()),
		ForceGateGain: cfg.ForceGate.Gain,
	}
	info := c.dev.Info
	fam := family(c.dev.Type, info)
	v.Config = protocol.DeviceView{
		Info: protocol.DeviceInfo{
			ID: info.ID, UUID: info.UUID, Port: info.Port, Model: fam.DeviceType,
			Major: int(info.FirmwareVersion), Minor: int(info.HardwareVersion),
			Family: fam.Name, FirmwareDigest: firmwareDigest(info, fam),
		},
		Device:  c.global,
		Session: *cfg,
		Basis:   basis,
		Mount:   mount,
	}
	return v
}

// publishGlobals pushes device-wide values to the loop and refreshes every
// view (they report the device-global entries too). It is for init and for
// device-global entries; a settings change needs only publishLoopGlobals.
func (c *deviceCore) publishGlobals() {
	c.publishLoopGlobals()
	def := c.defaultSessionConfig()
	c.dev.defaultView.Store(c.compile(&def, protocol.Basis{Permutation: protocol.IdentityBasis}, space.IdentityTransform()))
	c.dev.viewsChanged()
	for _, s := range c.sessions {
		c.publish(s)
	}
}

// publishLoopGlobals pushes the device-global entries and the settings to
// the loop. Views report the device-global entries but no setting, so a
// settings change republishes no view (which would also empty the
// encoded-state cache of every device).
func (c *deviceCore) publishLoopGlobals() {
	g := c.global
	c.dev.rt.SetGlobals(&loop.Globals{
		ForceScale: c.settings.ForceScale,
		Settings: hw.Settings{
			LeftHanded:          g.Handedness == "left",
			TorqueScaling:       g.TorqueScaling.Enabled,
			GravityCompensation: g.GravityCompensation.Enabled,
			GravityScale:        g.GravityCompensation.ScalingFactor,
		},
		ForceClampN:  loopForceClampN(g.ForceClamp.MaxForceN),
		ForceSlewNps: g.ForceSlewLimit.MaxRateNPerS,
		Passivity:    passivityOptions(g.PassivityController),
	})
}

// noForceClampN is the clamp a force_clamp of 0 N is passed to the loop
// as: the loop reads a ForceClampN of 0 as no clamp below the device's own
// limit, and a client that sets 0 N wants no force. A nanonewton is nothing
// any arm renders.
const noForceClampN = 1e-9

// loopForceClampN is loop.Globals.ForceClampN for a force_clamp of n N.
func loopForceClampN(n float64) float64 {
	if n <= 0 {
		return noForceClampN
	}
	return n
}

func (c *deviceCore) saveDurable(name string, v any, gate *ticket) error {
	err := c.persist(name, v, gate)
	if err == nil || errors.Is(err, store.ErrNotCommitted) {
		return err // ErrNotCommitted: called off (overdue), answered then
	}
	return c.persistFailed(name, err)
}

// persist is saveDurable's write, its error the store's.
func (c *deviceCore) persist(name string, v any, gate *ticket) error {
	if c.store == nil {
		return nil
	}
	var err error
	if gs, ok := c.store.(gatedStore); ok {
		commit, landed := c.offload.commitPoint(gate)
		err = gs.SaveGated(name, v, commit)
		landed()
	} else {
		err = c.store.Save(name, v)
	}
	if err == nil {
		c.inForceUnwritten.remove(name)
	}
	return err
}

// persistFailed logs a write of document name that failed with err and
// is the request's answer.
func (c *deviceCore) persistFailed(name string, err error) error {
	c.log.Error().Err(err).Str("document", name).Msg("could not persist config")
	return protocol.Errorf(protocol.CodeInternal, "", "could not store the value durably, so it was not applied: %v", err)
}

func (c *deviceCore) onLoopEvent(ctx actor.Context, ev loop.Event) {
	d := c.dev
	switch ev.Kind {
	case loop.EventLeaseExpired:
		if ev.Session >= FirstRemoteOwner {
			// A lab gateway's: its effects pause with the force.
			c.activity.Publish(event.RemoteControlLeaseExpired(d.Name, d.ID, ev.Session, ev.Effects.Len()))
			break
		}
		c.activity.Publish(event.ControlLeaseExpired(d.Name, d.ID, ev.Session, effectsDroppedBy(ev.Effects, ev.LapsedNs)))
	case loop.EventReleased:
		c.log.Debug().Uint64("session", ev.Session).Msg("control released")
	case loop.EventDriverError:
		c.log.Warn().Err(ev.Err).Msg("driver error; output halted")
	case loop.EventFailed:
		c.log.Debug().Err(ev.Err).Msg("device failed; removing it") // the device-failed event is the log line
		if c.registry != nil {
			ctx.Send(c.registry, &deviceFailed{device: d, err: ev.Err})
		}
	case loop.EventPassivitySustained:
		out := d.rt.Output()
		c.activity.Publish(event.PassivityActive(d.Name, d.ID, ev.Session, float64(out.ActiveNs)/1e6, out.AddedDampingNsPerM))
	case loop.EventRateWarning:
		c.activity.Publish(event.ControlRateWarning(d.Name, d.ID, float64(ev.PeriodP99Ns)/1e3, float64(ev.TargetNs)/1e3, ev.Suppressed))
	}
}

// passivityOptions maps the passivity_controller entry to the loop's
// controller options (an unknown scope, which decoding refuses, is the
// default one).
func passivityOptions(e protocol.PassivityController) passivity.Options {
	scope, _ := passivity.ParseScope(e.Scope)
	return passivity.Options{Enabled: e.Enabled, Scope: scope}
}
