package actors

// The registry actor: it creates and supervises the device actors, owns the
// service-wide settings, and is the only writer of the device and session
// sets (deviceset.go, Service.Sessions).

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// registryActor creates and supervises the device actors, owns the
// service-wide settings, and alone owns the device and session sets: every
// change to either is one of its messages, and it publishes each new set
// as an immutable snapshot. Because one actor orders every addition, a
// device added while a session opens is attached to it exactly once, by the
// registry, whichever came first.
//
// It never waits inside Receive. What blocks runs on a goroutine of the
// operation (Service.offload), which sends the outcome back as a message:
// an added device's stored config is read before the device is spawned and
// listed (deviceLoaded), a removed device's loop is stopped and its driver
// closed after it is unlisted (deviceLeft), and a changed setting is
// written durably before it is applied and answered (settingSaved).
type registryActor struct {
	svc *Service
	// attached is what the registry last told the devices about each
	// listed session (its profile and session-level basis).
	attached map[uint64]*attachSession
	// stopping is set once the registry itself stops: its children stop
	// with it, and that is no failure.
	stopping bool

	// adding holds the devices whose stored config is being read, by
	// deviceKey: an id is taken from the moment it is asked for.
	adding map[string]pendingAdd
	// leaving holds the devices unlisted whose loop and driver are still
	// being stopped, by deviceKey, with the additions of the same device
	// that wait for it (a device that is re-added appears after it left,
	// and its device-connected follows the device-disconnected).
	leaving map[string][]pendingAdd
	// landing holds, by deviceKey, the config write a leaving device's
	// actor stopped with past its commit point (writeLanding): the device
	// stays leaving until it has returned.
	landing map[string]<-chan struct{}
	// settingWrite is the setting change being written, and settingQueue
	// the changes that arrived meanwhile: one at a time, in order, each
	// admitted only when its turn comes (so a change stuck behind a slow
	// disk can still be cancelled at its deadline).
	settingWrite *settingSaved
	settingQueue []queuedSetting
	// settingsUnread: settings.json could not be read at start and is left
	// as it is (leftUnread), until a settings write succeeds; each change
	// reads it again first (readSettingsInto).
	settingsUnread bool
	// ids are the ids given in place of the hardware's, remembered.
	ids *localIDs
}

// pendingAdd is an addDevice being added or waiting (addDevice.answer
// answers its requester).
type pendingAdd struct {
	msg *addDevice
}

// queuedSetting is a setting change waiting for the one being written.
type queuedSetting struct {
	msg    actorMessage // *setSetting or *resetSetting
	sender *actor.PID
}

func newRegistryActor(s *Service) *registryActor {
	return &registryActor{svc: s, attached: make(map[uint64]*attachSession),
		adding: make(map[string]pendingAdd), leaving: make(map[string][]pendingAdd), landing: make(map[string]<-chan struct{})}
}

// deviceKey names a device in adding and leaving.
func deviceKey(t protocol.DeviceType, id string) string { return t.Key() + "/" + id }

func (r *registryActor) Receive(ctx actor.Context) {
	s := r.svc
	switch m := ctx.Message().(type) {
	case *actor.Started:
	case *actor.Stopping:
		r.stopping = true
		r.abandon(ctx)
	case *actor.Stopped, *actor.Restarting:
	case *actor.Terminated:
		if !r.stopping {
			r.childStopped(ctx, m.Who)
		}
	case *addDevice:
		r.add(ctx, pendingAdd{msg: m})
	case *deviceLoaded:
		r.adopt(ctx, m)
	case *additionGivenUp:
		r.givenUp(m.add)
	case *deviceFailed:
		r.remove(ctx, m.device, m.err)
	case *deviceLeft:
		r.left(ctx, m)
	case *writeLanding:
		r.landing[m.key] = m.done
	case *deviceStopped:
		r.stopped(ctx, m.key)
	case *openSession:
		r.open(ctx, m.sess)
		ctx.Respond(&ack{})
	case *updateSession:
		if at := r.attached[m.sess.ID]; at != nil {
			at = &attachSession{session: m.sess.ID, profile: m.profile, basis: m.basis}
			r.attached[m.sess.ID] = at
			devs := s.Devices()
			var waits map[*Device]bool // nil: the session waits for every device
			if m.waits != nil && m.waits != devs {
				waits = make(map[*Device]bool, len(m.waits.All()))
				for _, d := range m.waits.All() {
					waits[d] = true
				}
			}
			late := &attachSession{session: m.sess.ID, profile: m.profile, basis: m.basis, late: m.sess}
			for _, d := range devs.All() {
				if waits != nil && !waits[d] {
					ctx.Send(d.pid, late) // nothing asks it for published
					continue
				}
				ctx.Send(d.pid, at)
			}
		}
		ctx.Respond(&ack{})
	case *sessionClosed:
		r.close(ctx, m.sess)
	case *setSetting, *resetSetting:
		r.queueSetting(ctx, queuedSetting{msg: m.(actorMessage), sender: ctx.Sender()})
	case *settingSaved:
		r.settingDone(ctx, m)
	case *settingOverdue:
		r.settingOverdue(ctx, m.saved)
	default:
		s.log.Warn().Str("type", fmt.Sprintf("%T", m)).Msg("registry: unknown message dropped")
	}
}

// reply answers a requester found earlier (ctx.Respond answers only the
// message in hand).
func reply(ctx actor.Context, to *actor.PID, msg actorMessage) {
	if to != nil {
		ctx.Send(to, msg)
	}
}

// open attaches a session to every device, then lists it: a device's
// mailbox holds the attachment before anyone can find the session.
func (r *registryActor) open(ctx actor.Context, sess *Session) {
	s := r.svc
	at := &attachSession{session: sess.ID, profile: sess.Profile(), basis: sess.Basis()}
	r.attached[sess.ID] = at
	for _, d := range s.Devices().All() {
		ctx.Send(d.pid, at)
	}
	next := append(append(make([]*Session, 0, len(s.Sessions())+1), s.Sessions()...), sess)
	s.sessions.Store(&next)
}

// close unlists a session and detaches it from every device.
func (r *registryActor) close(ctx actor.Context, sess *Session) {
	s := r.svc
	if _, ok := r.attached[sess.ID]; !ok {
		return
	}
	delete(r.attached, sess.ID)
	cur := s.Sessions()
	next := make([]*Session, 0, len(cur))
	for _, x := range cur {
		if x != sess {
			next = append(next, x)
		}
	}
	s.sessions.Store(&next)
	for _, d := range s.Devices().All() {
		ctx.Send(d.pid, &detachSession{session: sess.ID})
	}
}

// childStopped handles a device actor that stopped. One the registry did
// not stop itself ran out of restarts: its device is given up as failed.
func (r *registryActor) childStopped(ctx actor.Context, pid *actor.PID) {
	for _, d := range r.svc.Devices().All() {
		if d.pid.Equal(pid) {
			r.remove(ctx, d, fmt.Errorf("actors: the device actor of %s %s kept failing (%d restarts within a minute); output halted until the device is seen again", d.Name, d.ID, r.svc.opts.DeviceRestarts))
			return
		}
	}
}

// add takes a driver up: it checks the device is new, then has its stored
// config read off the actor (adopt continues). A device still leaving is
// added once it has left, unless its caller gave up meanwhile.
func (r *registryActor) add(ctx actor.Context, p pendingAdd) {
	defer func() { r.failedAddition(ctx, p.msg, recover()) }()
	s := r.svc
	if p.msg.ticket.cancelled() {
		return // its caller gave up and closed the driver (askAddition)
	}
	info := p.msg.driver.Info()
	p.msg.info = info // read once: the other additions ask it (holderOf, connected)
	var t protocol.DeviceType
	switch info.Kind {
	case hw.KindArm:
		t = protocol.TypeArm
	case hw.KindGrip:
		t = protocol.TypeGrip
	default:
		p.msg.answer(&addDeviceReply{err: fmt.Errorf("actors: device %q has unknown kind %d", info.ID, info.Kind)})
		return
	}
	hwID := info.ID
	// A driver whose id was given by a service that keeps ids unique and
	// remembered itself (AssignedID) is served on it: the local memory
	// neither moves it nor remembers it (memUUID "").
	memUUID := info.UUID
	_, assigned := p.msg.driver.(AssignedID)
	if assigned {
		memUUID = ""
	}
	// A device remembered on another id than its hardware's gets it back,
	// whatever was found first, unless another device holds it.
	if id, ok := r.ids.remembered(info.Kind, memUUID); ok {
		if holder, taken := r.holderOf(t, id); !taken || holder == info.UUID {
			info.ID = id
		}
	}
	key := deviceKey(t, info.ID)
	if waiting, ok := r.leaving[key]; ok {
		r.leaving[key] = append(waiting, p)
		return
	}
	holder, taken := r.holderOf(t, info.ID)
	if taken && (info.UUID == "" || holder == info.UUID) {
		p.msg.answer(&addDeviceReply{err: fmt.Errorf("actors: a %s with id %s (UUID %q) is already connected; the same device cannot be added twice", t.Key(), info.ID, info.UUID)})
		return
	}
	if assigned && taken {
		// Its id was given before a local device took it (review22): moved
		// here, it would be served on an id its giver's tables do not
		// know. Refused, the giver gives another.
		p.msg.answer(&addDeviceReply{err: fmt.Errorf("actors: the id %s given to %s %q is taken by the device with UUID %q", info.ID, t.Key(), info.UUID, holder)})
		return
	}
	if owner, held := r.ids.keptFor(info.Kind, info.ID); assigned && held && owner != info.UUID {
		// Kept for an absent local device (its remembered id, its stored
		// config's, one it was served on): served here, this one would
		// load that device's config, and that device, back, find its id
		// held. Refused, the giver gives another (it avoids these ids).
		p.msg.answer(&addDeviceReply{err: fmt.Errorf("actors: the id %s given to %s %q is kept for the local device with UUID %q", info.ID, t.Key(), info.UUID, owner)})
		return
	}
	// reservedElse says id is remembered for another device than this
	// one: a device without a UUID is none of them (it was served on
	// another's id and loaded its config, and that device, back, lost its
	// id). An assigned id is its giver's to keep apart (refused above
	// when taken).
	reservedElse := func(id string) bool {
		owner := r.ids.reservedFor(info.Kind, id)
		return !assigned && owner != "" && owner != info.UUID
	}
	if taken || reservedElse(info.ID) {
		// Another device with the same 16-bit id (connected, or
		// remembered on it): the ids are not unique, the UUID is the
		// identity. It gets an id derived from its UUID, as a lab's
		// gateway gives one (hw.DerivedID), that no device holds or is
		// remembered on, and that is no known device's own id (one with
		// stored config, or served since the start): that device would
		// find its id taken, and this one would load its config. A
		// device still leaving that id (this one, unplugged and back) is
		// waited for as on a device's own id, so that it gets the same id
		// and config; left adds it again.
		info.ID = hw.DerivedID(info.Kind, info.UUID, func(id string) bool {
			_, held := r.holderOf(t, id)
			return held || reservedElse(id) || r.ids.knownElse(info.Kind, id, info.UUID)
		})
		key = deviceKey(t, info.ID)
		if waiting, ok := r.leaving[key]; ok {
			r.leaving[key] = append(waiting, p)
			return
		}
	}
	if !p.msg.ticket.admit() {
		return // its caller gave up meanwhile: nothing of it is kept
	}
	ids, idsVersion, saveIDs := r.ids.note(info.Kind, memUUID, hwID, info.ID, time.Now(), r.connected)
	if idsVersion != 0 { // the remembered ids changed (rare: a shared 16-bit id)
		s.localHolders.replace(r.ids.localHolders())
	}
	r.adding[key] = p
	defaults := protocol.DefaultDeviceConfig()
	if p.msg.defaults != nil {
		defaults = *p.msg.defaults
	}
	loaded := &deviceLoaded{add: p.msg, typ: t, info: info, global: defaults}
	if s.store == nil {
		r.adopt(ctx, loaded)
		return
	}
	self, root := ctx.Self(), s.system.Root
	name := storeName(t, info.ID)
	// Moved aside by the id scan at start (unreadable): the addition tells
	// of it as of a document it found so, once.
	movedAside := r.ids.movedAside[name]
	delete(r.ids.movedAside, name)
	saver := r.ids.saver
	s.offload.run(func() {
		// Durable before the device is listed: its id is a key clients
		// use and its config's name, so a restart right after must give
		// it the same. A failed write still lists it (a state directory
		// that cannot be written does not stop the arm); its id is then
		// first-come after a restart.
		if saveIDs {
			if err := saver.save(s.store, idsVersion, ids); err != nil {
				s.log.Error().Err(err).Str("uuid", info.UUID).Str("device_id", info.ID).Msg("could not remember a derived device id; a restart may give this device another id, and another's config")
			}
		}
		loaded.global, loaded.rejected, loaded.loadErr = loadDeviceConfig(s.store, name, defaults)
		if movedAside != nil && loaded.loadErr == nil && loaded.rejected == nil {
			loaded.rejected, loaded.loadErr = movedAsideEntries(movedAside), movedAside
		}
		root.Send(self, loaded)
	})
}

// connected says whether a device of kind k with uuid is connected or
// being added.
func (r *registryActor) connected(k hw.Kind, uuid string) bool {
	for _, p := range r.adding {
		if i := p.msg.info; i.Kind == k && i.UUID == uuid {
			return true
		}
	}
	for _, d := range r.svc.devices.Load().All() {
		if d.Info.Kind == k && d.Info.UUID == uuid {
			return true
		}
	}
	return false
}

// holderOf is the UUID of the device of type t with id that is connected
// or being added, and whether there is one.
func (r *registryActor) holderOf(t protocol.DeviceType, id string) (uuid string, taken bool) {
	if p, ok := r.adding[deviceKey(t, id)]; ok {
		return p.msg.info.UUID, true
	}
	if d := r.svc.devices.Load().Find(t, id); d != nil {
		return d.Info.UUID, true
	}
	return "", false
}

// adopt spawns the device actor of a device whose stored config is read,
// attaches every listed session to it, lists it, starts its loop and
// answers the requester.
func (r *registryActor) adopt(ctx actor.Context, m *deviceLoaded) {
	defer func() { r.failedAddition(ctx, m.add, recover()) }()
	key := deviceKey(m.typ, m.info.ID)
	if r.adding[key].msg != m.add {
		return // given up at shutdown (abandon) and answered then
	}
	delete(r.adding, key)
	if !m.add.listing.admit() {
		return // its caller gave up while its config was read (givenUp)
	}
	d, err := r.spawn(ctx, m)
	m.add.answer(&addDeviceReply{device: d, err: err})
}

// failedAddition answers an addition whose step panicked (reason, from
// recover: nil when none did), such as a driver whose Info panics: the
// registry is resumed after a panic (Service), and an addition left
// unanswered held its caller for its whole window (RequestTimeout plus a
// minute). The panic is recorded as the supervisor's would be (the
// supervision report). An addition not listed yet is refused, and its
// place among the additions given back, so that the caller's retry is not
// refused as the same device. One listed already (a panic later in spawn:
// a fault of the registry's own, no driver call is left there) is answered
// with its device and removed as a failed one: refused, its caller would
// close the driver while the removal still stops its loop.
func (r *registryActor) failedAddition(ctx actor.Context, add *addDevice, reason any) {
	if reason == nil {
		return
	}
	cause := fmt.Errorf("actors: adding the device failed: %v", reason)
	r.svc.log.Error().Interface("reason", reason).Str("driver", fmt.Sprintf("%T", add.driver)).Str("uuid", add.info.UUID).
		Msg("registry: adding a device panicked")
	r.svc.system.EventStream.Publish(&actor.SupervisorEvent{Child: ctx.Self(), Reason: reason, Directive: actor.ResumeDirective})
	if d := add.listed; d != nil {
		add.answer(&addDeviceReply{device: d})
		r.remove(ctx, d, cause)
		return
	}
	r.givenUp(add)
	add.answer(&addDeviceReply{err: cause})
}

// givenUp drops an addition being added whose caller gave up (it cancelled
// add.listing, so adopt would not list it): its id is free for the
// caller's retry at once, not once the disk answers its read, and its
// deviceLoaded, when it comes, is ignored. The caller closes the driver.
func (r *registryActor) givenUp(add *addDevice) {
	for key, p := range r.adding {
		if p.msg == add {
			delete(r.adding, key)
			return
		}
	}
}

// silentDeviceFailAfter is how long a device's exchanges must keep failing
// before its loop fails it (and the registry unlists it): the first failed
// exchange already halted its output, and a device silent for less (a USB
// hiccup, a stalled firmware, an emulator in a loaded test process) is not
// worth a reconnect of every session. A device the driver finds gone
// (unplugged) fails at once.
const silentDeviceFailAfter = 500 * time.Millisecond

func (r *registryActor) spawn(ctx actor.Context, m *deviceLoaded) (*Device, error) {
	s := r.svc
	t, info := m.typ, m.info
	d := &Device{Type: t, ID: info.ID, Name: s.opts.Types.Name(t, link(info)), Info: info, framesEpoch: &s.framesEpoch}
	d.remote, _ = m.add.driver.(StaleStateReporter)
	root := s.system.Root
	d.rt = loop.NewDevice(m.add.driver, loop.DeviceOptions{
		PeriodNs:         s.periodNs,
		Clock:            s.opts.Clock,
		RealtimePriority: int32(s.opts.RealtimePriority),
		FailAfterNs:      int64(silentDeviceFailAfter),
		// The loop must never block: an actor Send is a mailbox push.
		OnEvent: func(ev loop.Event) { root.Send(d.pid, &loopEvent{event: ev}) },
	})
	core := &deviceCore{
		dev:         d,
		store:       s.store,
		writeWithin: s.opts.WriteTimeout,
		closing:     &s.closing,
		writeBehind: s.writeBehind,
		activity:    s.activity,
		registry:    ctx.Self(),
		system:      s.system,
		offload:     &s.offload,
		hook:        s.opts.DeviceHook,
		log:         s.log.With().Str("device_type", t.Key()).Str("device_id", d.ID).Logger(),
		settings:    s.Settings(),
	}
	switch {
	case m.rejected != nil:
		// Read, but with entries this build does not accept: each is
		// logged and published, and a GET of it says so.
		m.rejected.report(core.log, s.activity, d.Name, d.ID, "")
		core.setRejected(m.rejected)
	case m.loadErr != nil:
		core.log.Error().Err(m.loadErr).Msg("stored device config unreadable; using defaults")
	}
	core.globalUnread = leftUnread(m.loadErr)
	core.init(m.global)
	pid, err := ctx.SpawnNamed(newDeviceProps(core), "device-"+t.Key()+"-"+d.ID+fmt.Sprintf("-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, fmt.Errorf("actors: spawn device actor: %w", err)
	}
	d.pid = pid
	// Every listed session is attached before the device is listed, so no
	// reader finds the device without its sessions.
	for _, sess := range s.Sessions() {
		at := *r.attached[sess.ID]
		at.late = sess
		ctx.Send(pid, &at)
	}
	s.devices.Store(s.devices.Load().with(d))
	m.add.listed = d
	_, assigned := m.add.driver.(AssignedID)
	r.ids.served(info.Kind, d.ID, info.UUID, assigned)
	owner, held := r.ids.keptFor(info.Kind, d.ID)
	s.localHolders.set(info.Kind, d.ID, owner, held)
	if m.add.hardware {
		ctx, cancel := context.WithCancel(s.hwCtx)
		d.stopLoop, d.loopDone = cancel, make(chan struct{})
		s.hwWG.Add(1)
		go func() {
			defer s.hwWG.Done()
			defer close(d.loopDone)
			if err := loop.RunLockedProcs(ctx, d.rt, s.opts.SimProcs); err != nil && ctx.Err() == nil {
				core.log.Error().Err(err).Msg("hardware loop stopped")
			}
		}()
	} else {
		s.sched.Add(d.rt)
	}
	s.activity.Publish(event.DeviceConnected(t.Family(), d.Name, d.ID))
	// The device-connected event is the info line; this adds the details.
	core.log.Debug().Str("uuid", info.UUID).Bool("simulated", info.Simulated).Str("port", info.Port).Msg("device connected")
	return d, nil
}

// abandon answers every addition and setting change not yet done when the
// registry stops (an addition refused leaves its driver to the caller).
func (r *registryActor) abandon(ctx actor.Context) {
	if m := r.settingWrite; m != nil {
		r.settingWrite = nil
		if m.timer != nil {
			m.timer.Stop()
		}
		r.abandonSetting(ctx, m)
	}
	for _, q := range r.settingQueue {
		reply(ctx, q.sender, &settingReply{err: protocol.Errorf(protocol.CodeUnavailable, "", "the service is shutting down; nothing was applied")})
	}
	r.settingQueue = nil
	abandon := func(p pendingAdd) {
		p.msg.answer(&addDeviceReply{err: fmt.Errorf("actors: the service is shutting down; device not added")})
	}
	for key, p := range r.adding {
		delete(r.adding, key) // its deviceLoaded, if it comes, is ignored
		abandon(p)
	}
	for key, waiting := range r.leaving {
		r.leaving[key] = nil
		for _, p := range waiting {
			abandon(p)
		}
	}
}

// abandonSetting answers the setting change being written as the registry
// stops. A write not past its commit point is called off: 503, not stored
// and never will be (answered 503 and left to run, it landed whenever the
// disk took it, even under a later run's value). One past it will land:
// its answer waits, off the actor, for the write's outcome up to the write
// timeout (the shutdown waits as long for it), so that a client told 503
// never finds the value stored.
func (r *registryActor) abandonSetting(ctx actor.Context, m *settingSaved) {
	s := r.svc
	if _, gated := s.store.(gatedStore); gated && m.gate.cancel() {
		reply(ctx, m.sender, &settingReply{err: protocol.Errorf(protocol.CodeUnavailable, "",
			"the service shut down while the setting was being stored: it was called off, not stored, and never will be")})
		return
	}
	within := s.opts.WriteTimeout
	s.offload.run(func() {
		wait := time.NewTimer(within)
		defer wait.Stop()
		select {
		case err := <-m.outcome:
			if err != nil {
				reply(ctx, m.sender, &settingReply{err: settingNotStored(err)})
				return
			}
			reply(ctx, m.sender, &settingReply{value: m.settings.Get(m.key)})
		case <-wait.C:
			reply(ctx, m.sender, &settingReply{err: protocol.Errorf(protocol.CodeUnavailable, "",
				"the service shut down while the setting was being stored: the disk had not confirmed it within %v, and it may be stored or not; read it back after the restart", within)})
		}
	})
}

// remove unlists a device at once and stops it off the actor: its output
// is halted first, then its loop is stopped (a hardware loop is cancelled
// and waited for up to a second; Scheduler.Remove waits out the current
// tick) so that the loop is done with the driver before the driver is
// closed. deviceLeft reports when that is over.
func (r *registryActor) remove(ctx actor.Context, d *Device, cause error) {
	s := r.svc
	if s.devices.Load().Find(d.Type, d.ID) != d {
		return // already gone
	}
	s.devices.Store(s.devices.Load().without(d))
	r.leaving[deviceKey(d.Type, d.ID)] = nil
	self, root := ctx.Self(), s.system.Root
	s.offload.run(func() {
		// Zero force first, whatever happens to the loop and the driver next.
		d.rt.Halt()
		if d.stopLoop != nil {
			d.stopLoop()
			select {
			case <-d.loopDone:
			case <-time.After(time.Second):
				s.log.Error().Str("device_id", d.ID).Msg("hardware loop did not stop within 1 s; closing its driver anyway")
			}
		} else {
			s.sched.Remove(d.rt)
		}
		d.rt.Halt()
		if err := d.closeDriver(); err != nil {
			s.log.Debug().Err(err).Str("device_id", d.ID).Msg("close after failure")
		}
		root.Send(self, &deviceLeft{device: d, cause: cause})
	})
}

// left finishes a removal once the device's loop is stopped and its driver
// closed: its actor stops, the events go out, discovery is told, and an
// addition of the same device that waited proceeds once the actor has
// stopped (stopped).
func (r *registryActor) left(ctx actor.Context, m *deviceLeft) {
	s, d, cause := r.svc, m.device, m.cause
	key := deviceKey(d.Type, d.ID)
	stopping := ctx.StopFuture(d.pid)
	self, root := ctx.Self(), s.system.Root
	s.offload.run(func() {
		_ = stopping.Wait() // a timeout only delays the re-addition
		root.Send(self, &deviceStopped{key: key})
	})
	// A device its driver found unplugged (the port went away under it)
	// left, as one discovery saw vanish does; it did not fail. Other
	// devices gone (a hung one, a lab's dropped node) failed.
	if cause != nil && !errors.Is(cause, hw.ErrUnplugged) {
		s.activity.Publish(event.DeviceFailed(d.Name, d.ID, cause.Error()))
	}
	s.activity.Publish(event.DeviceDisconnected(d.Type.Family(), d.Name, d.ID))
	s.log.Debug().Err(cause).Str("device_type", d.Name).Str("device_id", d.ID).Msg("device disconnected") // the event is the log line
	if s.opts.OnDeviceLost != nil {
		s.opts.OnDeviceLost(d.Info)
	}
}

// stopped re-adds the additions of a device that waited for it to leave,
// once its actor has stopped and any config write it stopped with past its
// commit point has returned, however long the disk takes: re-added
// before, the device would read its document without the value that
// write's 200 then promises (review35), or, after a 503 at the write
// timeout, the value that lands (review36), and its next change would
// store the old one over it.
func (r *registryActor) stopped(ctx actor.Context, key string) {
	if done := r.landing[key]; done != nil {
		delete(r.landing, key)
		select {
		case <-done:
		default:
			// A disk that holds the write holds the device's return: the
			// operator, who sees it not come back, learns why here.
			r.svc.log.Warn().Str("device", key).Msg("the device's last config write is still on the state directory's disk; it is added again once the disk answers")
		}
		self, root := ctx.Self(), r.svc.system.Root
		r.svc.offload.run(func() {
			<-done
			root.Send(self, &deviceStopped{key: key})
		})
		return
	}
	waiting := r.leaving[key]
	delete(r.leaving, key)
	for _, p := range waiting {
		r.add(ctx, p)
	}
}

// queueSetting takes a setting change up now, or after the one being
// written.
func (r *registryActor) queueSetting(ctx actor.Context, q queuedSetting) {
	if r.settingWrite != nil {
		r.settingQueue = append(r.settingQueue, q)
		return
	}
	r.changeSetting(ctx, q)
}

// changeSetting applies one setting change: at once when it changes
// nothing or there is no state directory, else once it is on disk
// (settingDone).
func (r *registryActor) changeSetting(ctx actor.Context, q queuedSetting) {
	s := r.svc
	var k protocol.SettingKey
	var v any
	switch m := q.msg.(type) {
	case *setSetting:
		if !m.ticket.admit() {
			return // its requester was answered unavailable at the deadline
		}
		k, v = m.key, m.value
	case *resetSetting:
		if !m.ticket.admit() {
			return
		}
		def := protocol.DefaultSettings()
		k, v = m.key, def.Get(m.key)
	}
	next := s.Settings()
	next.Set(k, v)
	saved := &settingSaved{key: k, settings: next, sender: q.sender, outcome: make(chan error, 1)}
	// An unread settings.json still holds earlier values: even the value in
	// force must be written (after it is read) before a 200 says it is on
	// disk.
	// The value in force is stored already, if settings.json is still
	// there (InPlace, off the actor): a folder in its place, or the file
	// removed by hand, would make a 200 promise what a restart loses. A
	// settings.json never stored is not written (the defaults in force
	// are a restart's): it would pin every setting at this build's
	// defaults.
	unchanged := next == s.Settings() && !r.settingsUnread
	placed, canTell := s.store.(placedStore)
	if s.store == nil || (unchanged && !canTell) {
		r.applySetting(ctx, saved)
		return
	}
	r.settingWrite = saved
	self, root := ctx.Self(), s.system.Root
	// As a device's config write (deviceCore.startIO): only a store with a
	// commit point can call a write off; past the timeout, a plain Save
	// may still land after a 503.
	gs, gated := s.store.(gatedStore)
	if gated && s.opts.WriteTimeout > 0 {
		saved.timer = time.AfterFunc(s.opts.WriteTimeout, func() { root.Send(self, &settingOverdue{saved: saved}) })
	}
	unread := r.settingsUnread
	s.offload.run(func() {
		defer func() {
			saved.outcome <- saved.err
			root.Send(self, saved)
		}()
		if unread {
			if saved.err = readSettingsInto(s.store, &saved.settings, k, v); saved.err != nil {
				return
			}
		}
		if unchanged {
			there, err := placed.InPlace("settings")
			if saved.err = err; err != nil || there {
				return
			}
		}
		if gated {
			commit, landed := s.offload.commitPoint(&saved.gate)
			saved.err = gs.SaveGated("settings", saved.settings, commit)
			landed()
		} else {
			saved.err = s.store.Save("settings", saved.settings)
		}
	})
}

// storedSettings reads settings.json as protocol.StoredSettings does, and
// names the members it does not know (store.KeepsUnknown), a newer
// build's settings in the groups this build writes as well: the store
// writes them back at each settings write.
type storedSettings struct {
	protocol.StoredSettings
}

// UnknownMembers makes storedSettings a store.KeepsUnknown.
func (s *storedSettings) UnknownMembers() []store.Member { return keptMembers(s.Unknown) }

// readSettingsInto reads settings.json again before a change (k set to v)
// is written while it is unread (settingsUnread), as a device does its
// document (deviceCore.readGlobalThenSet): the defaults in force stand for
// values it holds, which a client was told are stored. Read now (or
// corrupt and moved aside: the defaults are its values), the change
// applies to what it holds (next); still unreadable, the change is refused
// and changes nothing.
func readSettingsInto(st Store, next *protocol.Settings, k protocol.SettingKey, v any) error {
	var read storedSettings
	found, err := st.Load("settings", &read)
	stored := read.Settings
	switch {
	case leftUnread(err):
		return protocol.Errorf(protocol.CodeUnavailable, "",
			"the stored settings could not be read, so the change was not applied: stored with the defaults in force meanwhile, it would replace them (retry once the state directory reads settings.json; it is read again at each change): %v", err)
	case found:
		stored.Set(k, v)
		*next = stored
	}
	return nil
}

// settingNotStored is the answer to a setting change whose write failed
// with err: err itself when it is an answer already (readSettingsInto).
func settingNotStored(err error) error {
	var perr *protocol.Error
	if errors.As(err, &perr) {
		return perr
	}
	return protocol.Errorf(protocol.CodeInternal, "", "could not store the setting durably, so it was not applied: %v", err)
}

// settingOverdue answers a setting change whose write the disk has not
// taken within Options.WriteTimeout, if it can still be called off:
// unavailable, the value never in force nor on disk, and the changes
// queued behind it go on. A write past its commit point is waited for.
func (r *registryActor) settingOverdue(ctx actor.Context, m *settingSaved) {
	if r.settingWrite != m || !m.gate.cancel() {
		return
	}
	r.settingWrite = nil
	within := r.svc.opts.WriteTimeout
	r.svc.log.Error().Dur("within", within).Str("setting", m.key.Path()).Msg("settings write not taken by the disk in time; called off, not applied")
	reply(ctx, m.sender, &settingReply{err: protocol.Errorf(protocol.CodeUnavailable, "",
		"the state directory's disk did not take the write within %v, so it was called off: the setting is not applied and never will be; retry once the disk answers", within)})
	r.nextSetting(ctx)
}

// settingDone applies a setting change whose write is over, then takes up
// the changes queued behind it.
func (r *registryActor) settingDone(ctx actor.Context, m *settingSaved) {
	if m.timer != nil {
		m.timer.Stop()
	}
	if r.settingWrite != m {
		return // called off (settingOverdue): answered then
	}
	r.settingWrite = nil
	if m.err != nil {
		// The client hears why; the operator, who sees no answer, the log.
		r.svc.log.Error().Err(m.err).Str("setting", m.key.Path()).Msg("could not persist a setting; not applied")
		reply(ctx, m.sender, &settingReply{err: settingNotStored(m.err)})
	} else {
		r.settingsUnread = false
		r.applySetting(ctx, m)
	}
	r.nextSetting(ctx)
}

// nextSetting takes up the changes queued behind a write that is over.
func (r *registryActor) nextSetting(ctx actor.Context) {
	for r.settingWrite == nil && len(r.settingQueue) > 0 {
		q := r.settingQueue[0]
		r.settingQueue = r.settingQueue[1:]
		r.changeSetting(ctx, q)
	}
}

func (r *registryActor) applySetting(ctx actor.Context, m *settingSaved) {
	s := r.svc
	next := m.settings
	s.settings.Store(&next)
	for _, d := range s.Devices().All() {
		ctx.Send(d.pid, &applyGlobals{settings: next})
	}
	reply(ctx, m.sender, &settingReply{value: next.Get(m.key)})
}
