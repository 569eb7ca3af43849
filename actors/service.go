package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// Options configure a Service.
type Options struct {
	// StateDir is the state directory; empty keeps everything in memory
	// (tests and throw-away runs only).
	StateDir string
	// LoopHz is the real-time loop rate, 1 to 8000 (default 1000).
	LoopHz int
	// Types is the naming table: the device-type names written and
	// accepted (nil: product names, no aliases).
	Types *protocol.TypeTable
	Log   zerolog.Logger
	// EventRingSize is how many recent events the activity actor keeps.
	EventRingSize int
	// DefaultLeaseMs is how long a control command holds (default
	// protocol.LeaseDefaultMs, 100).
	DefaultLeaseMs int
	// RequestTimeout bounds every control-plane request (default 2 s).
	RequestTimeout time.Duration
	// SimShards is the number of simulation scheduler threads (0: one per core).
	SimShards int
	// RealtimePriority, 1..99, runs every loop thread SCHED_FIFO at that
	// priority (needs CAP_SYS_NICE; best effort). 0 keeps normal scheduling.
	RealtimePriority int
	// OnDeviceLost, if set, is told when a device leaves (its driver is
	// already closed): discovery uses it to rescan the port.
	OnDeviceLost func(info hw.Info)
	// MaxStoredProfiles bounds the profiles kept in the state directory
	// (0: DefaultMaxStoredProfiles); the least recently used go first.
	MaxStoredProfiles int
	Clock             loop.Clock
}

// Service is the running actor system behind every transport: devices,
// sessions, settings and events. Transports call its methods; every method
// is safe for concurrent use.
type Service struct {
	// Atomics first.
	devices     atomic.Pointer[DeviceSet]
	sessions    atomic.Pointer[[]*Session] // connection order
	settings    atomic.Pointer[protocol.Settings]
	nextSession atomic.Uint64
	traffic     traffic // GET /metrics (metrics.go)

	// Immutable after Start.
	opts        Options
	log         zerolog.Logger
	system      *actor.ActorSystem
	registry    *actor.PID
	activity    *activity.Activity
	store       *store.Store
	writeBehind *store.WriteBehind
	sched       *loop.Scheduler
	periodNs    int64
	startedAt   time.Time
	hwCtx       context.Context
	hwCancel    context.CancelFunc
	hwWG        sync.WaitGroup

	closes closedRing // recent session ends, with their reasons

	// sessionsMu serialises changes to sessions (readers use the atomic).
	sessionsMu sync.Mutex

	shutdownOnce sync.Once
	shutdownErr  error
}

// Start builds the actor system, loads the state directory and starts the
// simulation scheduler. Devices are added afterwards with AddDevice.
func Start(o Options) (*Service, error) {
	if o.LoopHz == 0 {
		o.LoopHz = 1000
	}
	if o.LoopHz < 1 || o.LoopHz > 8000 {
		return nil, fmt.Errorf("actors: loop rate %d Hz is out of range 1..8000", o.LoopHz)
	}
	if o.Types == nil {
		t, err := protocol.NewTypeTable(nil)
		if err != nil {
			return nil, fmt.Errorf("actors: type table: %w", err)
		}
		o.Types = t
	}
	if o.DefaultLeaseMs == 0 {
		o.DefaultLeaseMs = protocol.LeaseDefaultMs
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 2 * time.Second
	}
	if o.Clock == nil {
		o.Clock = loop.SystemClock()
	}
	s := &Service{opts: o, log: o.Log, periodNs: int64(time.Second) / int64(o.LoopHz), startedAt: time.Now()}
	s.devices.Store(&DeviceSet{})
	s.sessions.Store(&[]*Session{})

	settings := protocol.DefaultSettings()
	if o.StateDir != "" {
		st, err := store.Open(o.StateDir)
		if err != nil {
			return nil, fmt.Errorf("actors: state directory: %w", err)
		}
		s.store = st
		migrateProfiles(st, o.Log)
		s.writeBehind = st.NewWriteBehind(time.Second)
		s.writeBehind.OnError(func(err error) {
			o.Log.Error().Err(err).Msg("could not write profile config in the background; will retry")
		})
		var stored protocol.Settings
		found, err := st.Load("settings", &stored)
		switch {
		case err != nil:
			o.Log.Error().Err(err).Msg("stored settings unreadable; using defaults")
		case found:
			settings = stored
		}
	}
	s.settings.Store(&settings)

	// protoactor logs through slog; route it into zerolog so there is one
	// log stream with one format. Its metrics provider stays off: it would
	// listen on every interface.
	// Its own log is kept at warn and above ("actor system started" is
	// not news).
	protoLog := o.Log.With().Str("component", "protoactor").Logger()
	slogger := slog.New(zerolog.NewSlogHandler(protoLog.Level(max(zerolog.WarnLevel, protoLog.GetLevel()))))
	s.system = actor.NewActorSystemWithConfig(actor.Configure(
		actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slogger }),
	))

	act, err := activity.Start(s.system, activity.Options{RingSize: o.EventRingSize, Log: o.Log.With().Str("component", "activity").Logger()})
	if err != nil {
		s.system.Shutdown()
		return nil, fmt.Errorf("actors: activity actor: %w", err)
	}
	s.activity = act

	s.sched = loop.NewScheduler(loop.SchedulerOptions{
		PeriodNs:         s.periodNs,
		Shards:           o.SimShards,
		Clock:            o.Clock,
		RealtimePriority: o.RealtimePriority,
		// No OnRateWarning: a shard is not a device, and a late simulation
		// harms no hardware; its period is in GET /metrics and /stats.
	})
	s.sched.Start()
	s.hwCtx, s.hwCancel = context.WithCancel(context.Background())

	supervisor := actor.NewOneForOneStrategy(10, time.Minute, func(reason any) actor.Directive {
		o.Log.Error().Interface("reason", reason).Msg("device actor crashed; restarting it with its config")
		return actor.RestartDirective
	})
	s.registry = s.system.Root.Spawn(actor.PropsFromProducer(
		func() actor.Actor { return &registryActor{svc: s} },
		actor.WithSupervisor(supervisor),
	))
	return s, nil
}

// Activity is the activity channel (events).
func (s *Service) Activity() *activity.Activity { return s.activity }

// Types is the naming table.
func (s *Service) Types() *protocol.TypeTable { return s.opts.Types }

// LoopPeriodNs is the target period of every real-time loop.
func (s *Service) LoopPeriodNs() int64 { return s.periodNs }

// StartedAt is when the service started.
func (s *Service) StartedAt() time.Time { return s.startedAt }

// Devices returns the current device set. It never blocks; the set is
// immutable.
func (s *Service) Devices() *DeviceSet { return s.devices.Load() }

// Sessions returns the connected sessions in connection order.
func (s *Service) Sessions() []*Session { return *s.sessions.Load() }

// Settings returns the settings in force.
func (s *Service) Settings() protocol.Settings { return *s.settings.Load() }

// AddDevice adopts an open driver: a device actor, a real-time loop (on the
// shared simulation scheduler, or on its own locked thread when hardware is
// set) and a device-connected event. The service closes the driver when the
// device leaves.
func (s *Service) AddDevice(d hw.Driver, hardware bool) (*Device, error) {
	r, err := s.request(s.registry, &addDevice{driver: d, hardware: hardware})
	if err != nil {
		return nil, err
	}
	reply := r.(*addDeviceReply)
	return reply.device, reply.err
}

// Entry reads one config entry of dev: device-global when session is 0.
func (s *Service) Entry(dev *Device, session uint64, k protocol.Key) (protocol.Entry, error) {
	return s.entryRequest(dev, &getEntry{session: session, key: k})
}

// SetEntry sets one config entry durably: when it returns without error the
// value is on disk (device-global entries, and session entries of a session
// with a profile) and in force.
func (s *Service) SetEntry(dev *Device, session uint64, e protocol.Entry) (protocol.Entry, error) {
	if o, ok := dev.rt.Driver().(ConfigOwner); ok && !e.Key().SessionScoped() {
		var err error
		if e, err = o.SetConfig(e); err != nil {
			return nil, err
		}
	}
	return s.entryRequest(dev, &setEntries{session: session, entries: []protocol.Entry{e}, durable: true})
}

// ConfigOwner is implemented by drivers whose device's own config is kept
// by someone else (a lab gateway's proxy of a node's device): SetEntry and
// ResetEntry of device-global entries ask the owner first, which validates
// and persists, then apply what it answered.
type ConfigOwner interface {
	SetConfig(e protocol.Entry) (protocol.Entry, error)
	ResetConfig(k protocol.Key) (protocol.Entry, error)
}

// ResetEntry restores the default of k: the device-global entry when k is
// device-global; else for the listed sessions, or every session of the
// device when sessions is nil.
func (s *Service) ResetEntry(dev *Device, sessions []uint64, k protocol.Key) (protocol.Entry, error) {
	if o, ok := dev.rt.Driver().(ConfigOwner); ok && !k.SessionScoped() {
		if _, err := o.ResetConfig(k); err != nil {
			return nil, err
		}
	}
	return s.entryRequest(dev, &resetEntry{sessions: sessions, all: sessions == nil && k.SessionScoped(), key: k})
}

func (s *Service) entryRequest(dev *Device, msg actorMessage) (protocol.Entry, error) {
	r, err := s.request(dev.pid, msg)
	if err != nil {
		return nil, err
	}
	reply := r.(*entryReply)
	return reply.entry, reply.err
}

// SetSetting changes a setting durably and applies it to every device.
func (s *Service) SetSetting(k protocol.SettingKey, v any) (any, error) {
	return s.settingRequest(&setSetting{key: k, value: v})
}

// ResetSetting restores a setting's default.
func (s *Service) ResetSetting(k protocol.SettingKey) (any, error) {
	return s.settingRequest(&resetSetting{key: k})
}

func (s *Service) settingRequest(msg actorMessage) (any, error) {
	r, err := s.request(s.registry, msg)
	if err != nil {
		return nil, err
	}
	reply := r.(*settingReply)
	return reply.value, reply.err
}

// request is the HTTP edge's way into the actors: a future with a timeout.
func (s *Service) request(pid *actor.PID, msg actorMessage) (any, error) {
	r, err := s.system.Root.RequestFuture(pid, msg, s.opts.RequestTimeout).Result()
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeUnavailable, "", "the service did not answer in %v: %v", s.opts.RequestTimeout, err)
	}
	return r, nil
}

// Shutdown stops the service in order: every device to zero force, the
// loops stopped, sessions ended, pending profile writes flushed, actors
// stopped. Transports stop accepting and close their sockets before
// calling it. Calls after the first return the first call's result.
func (s *Service) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

func (s *Service) shutdown(ctx context.Context) error {
	for _, sess := range s.Sessions() {
		sess.Close(protocol.CloseShutdown)
	}
	for _, d := range s.Devices().All() {
		d.rt.Halt()
	}
	s.sched.Stop()
	s.hwCancel()
	done := make(chan struct{})
	go func() { s.hwWG.Wait(); close(done) }()
	var errs []error
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("actors: hardware loops did not stop: %w", ctx.Err()))
	}
	for _, d := range s.Devices().All() {
		if err := d.rt.Driver().Close(); err != nil {
			errs = append(errs, fmt.Errorf("actors: close %s %s: %w", d.Type.Key(), d.ID, err))
		}
	}
	if s.writeBehind != nil {
		if err := s.writeBehind.Close(); err != nil {
			errs = append(errs, fmt.Errorf("actors: flush profiles: %w", err))
		}
	}
	s.activity.Stop()
	s.system.Root.Stop(s.registry)
	s.system.Shutdown()
	return errors.Join(errs...)
}

// DeviceSet is an immutable list of the devices, by type in the order they
// appeared.
type DeviceSet struct {
	arms, grips []*Device
}

// OfType returns the devices of one type; do not modify the slice.
func (ds *DeviceSet) OfType(t protocol.DeviceType) []*Device {
	switch t {
	case protocol.TypeArm:
		return ds.arms
	case protocol.TypeGrip:
		return ds.grips
	}
	return nil
}

// Find returns the device of type t with id, or nil.
func (ds *DeviceSet) Find(t protocol.DeviceType, id string) *Device {
	for _, d := range ds.OfType(t) {
		if d.ID == id {
			return d
		}
	}
	return nil
}

// All returns every device, arms first.
func (ds *DeviceSet) All() []*Device {
	all := make([]*Device, 0, len(ds.arms)+len(ds.grips))
	return append(append(all, ds.arms...), ds.grips...)
}

func (ds *DeviceSet) with(d *Device) *DeviceSet {
	next := &DeviceSet{arms: ds.arms, grips: ds.grips}
	switch d.Type {
	case protocol.TypeArm:
		next.arms = append(append([]*Device(nil), ds.arms...), d)
	case protocol.TypeGrip:
		next.grips = append(append([]*Device(nil), ds.grips...), d)
	}
	return next
}

func (ds *DeviceSet) without(d *Device) *DeviceSet {
	drop := func(list []*Device) []*Device {
		out := make([]*Device, 0, len(list))
		for _, x := range list {
			if x != d {
				out = append(out, x)
			}
		}
		return out
	}
	return &DeviceSet{arms: drop(ds.arms), grips: drop(ds.grips)}
}

// registryActor creates and supervises the device actors and owns the
// service-wide settings.
type registryActor struct{ svc *Service }

func (r *registryActor) Receive(ctx actor.Context) {
	s := r.svc
	switch m := ctx.Message().(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting, *actor.Terminated:
		// Terminated: a device actor it stopped is gone (shutdown, removal).
	case *addDevice:
		d, err := r.add(ctx, m)
		ctx.Respond(&addDeviceReply{device: d, err: err})
	case *deviceFailed:
		r.remove(ctx, m.device, m.err)
	case *setSetting:
		v, err := r.changeSetting(ctx, m.key, m.value)
		ctx.Respond(&settingReply{value: v, err: err})
	case *resetSetting:
		def := protocol.DefaultSettings()
		v, err := r.changeSetting(ctx, m.key, def.Get(m.key))
		ctx.Respond(&settingReply{value: v, err: err})
	default:
		s.log.Warn().Str("type", fmt.Sprintf("%T", m)).Msg("registry: unknown message dropped")
	}
}

func (r *registryActor) add(ctx actor.Context, m *addDevice) (*Device, error) {
	s := r.svc
	info := m.driver.Info()
	var t protocol.DeviceType
	switch info.Kind {
	case hw.KindArm:
		t = protocol.TypeArm
	case hw.KindGrip:
		t = protocol.TypeGrip
	default:
		return nil, fmt.Errorf("actors: device %q has unknown kind %d", info.ID, info.Kind)
	}
	if s.devices.Load().Find(t, info.ID) != nil {
		return nil, fmt.Errorf("actors: a %s with id %s is already connected; ids must be unique", t.Key(), info.ID)
	}
	d := &Device{Type: t, ID: info.ID, Name: s.opts.Types.Name(t, link(info)), Info: info}
	root := s.system.Root
	d.rt = loop.NewDevice(m.driver, loop.DeviceOptions{
		PeriodNs:         s.periodNs,
		Clock:            s.opts.Clock,
		RealtimePriority: s.opts.RealtimePriority,
		// The loop must never block: an actor Send is a mailbox push.
		OnEvent: func(ev loop.Event) { root.Send(d.pid, &loopEvent{event: ev}) },
	})
	core := &deviceCore{
		dev:         d,
		store:       s.store,
		writeBehind: s.writeBehind,
		activity:    s.activity,
		registry:    ctx.Self(),
		log:         s.log.With().Str("device_type", t.Key()).Str("device_id", d.ID).Logger(),
		settings:    s.Settings(),
	}
	core.init()
	pid, err := ctx.SpawnNamed(newDeviceProps(core), "device-"+t.Key()+"-"+d.ID+fmt.Sprintf("-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, fmt.Errorf("actors: spawn device actor: %w", err)
	}
	d.pid = pid
	// Sessions already connected see the new device with their own view,
	// attached before the device is listed.
	before := s.Sessions()
	for _, sess := range before {
		ctx.Send(pid, &attachSession{session: sess.ID, profile: sess.Profile(), basis: sess.Basis()})
	}
	s.devices.Store(s.devices.Load().with(d))
	// A session that listed itself meanwhile may have read the device list
	// before d was on it: attach it too. Sessions do the mirror check, so
	// one side or the other always attaches (attach is idempotent).
	for _, sess := range s.Sessions() {
		if !slices.Contains(before, sess) {
			ctx.Send(pid, &attachSession{session: sess.ID, profile: sess.Profile(), basis: sess.Basis()})
		}
	}
	if m.hardware {
		ctx, cancel := context.WithCancel(s.hwCtx)
		d.stopLoop, d.loopDone = cancel, make(chan struct{})
		s.hwWG.Add(1)
		go func() {
			defer s.hwWG.Done()
			defer close(d.loopDone)
			if err := loop.RunLocked(ctx, d.rt); err != nil && ctx.Err() == nil {
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

func (r *registryActor) remove(ctx actor.Context, d *Device, cause error) {
	s := r.svc
	if s.devices.Load().Find(d.Type, d.ID) != d {
		return // already gone
	}
	s.devices.Store(s.devices.Load().without(d))
	// The loop must be done with the driver before it is closed: a
	// hardware loop is cancelled and waited for (it also returns by itself
	// once its device failed); Scheduler.Remove waits out the current tick.
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
	if err := d.rt.Driver().Close(); err != nil {
		s.log.Debug().Err(err).Str("device_id", d.ID).Msg("close after failure")
	}
	ctx.Stop(d.pid)
	if cause != nil {
		s.activity.Publish(event.DeviceFailed(d.Name, d.ID, cause.Error()))
	}
	s.activity.Publish(event.DeviceDisconnected(d.Type.Family(), d.Name, d.ID))
	s.log.Debug().Err(cause).Str("device_type", d.Name).Str("device_id", d.ID).Msg("device disconnected") // the event is the log line
	if s.opts.OnDeviceLost != nil {
		s.opts.OnDeviceLost(d.Info)
	}
}

func (r *registryActor) changeSetting(ctx actor.Context, k protocol.SettingKey, v any) (any, error) {
	s := r.svc
	next := s.Settings()
	next.Set(k, v)
	if next != s.Settings() && s.store != nil {
		if err := s.store.Save("settings", next); err != nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "", "could not store the setting durably, so it was not applied: %v", err)
		}
	}
	s.settings.Store(&next)
	for _, d := range s.Devices().All() {
		ctx.Send(d.pid, &applyGlobals{settings: next})
	}
	return next.Get(k), nil
}

// SessionRefs lists the sessions for selector matching, in connection order.
func (s *Service) SessionRefs() []protocol.SessionRef {
	list := s.Sessions()
	refs := make([]protocol.SessionRef, len(list))
	for i, sess := range list {
		refs[i] = protocol.SessionRef{ID: sess.ID, Profile: sess.Profile()}
	}
	return refs
}
