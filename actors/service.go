package actors

// The public API: Service, what transports call, and its Options. Every
// method hands work to the actors (registry.go, device.go, session.go) and
// waits for the answer outside them (ask), or reads a published snapshot.

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
	"github.com/asynkron/protoactor-go/eventstream"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
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
	// RequestTimeout is the deadline of every control-plane request
	// (default 2 s): one its actor has not taken up by then is answered
	// unavailable and never applied.
	RequestTimeout time.Duration
	// WriteTimeout bounds how long a config or settings request waits for its durable
	// write to take effect (0: DefaultWriteTimeout; else within
	// MinWriteTimeout..MaxWriteTimeout, CheckWriteTimeout): one the disk has not taken by
	// then (an fsync that does not return) is called off before it
	// replaces the stored document, and answered unavailable, not applied.
	// It applies to a store that has a commit point (actors/store's
	// SaveGated); a write past that point is waited for. It also bounds
	// how long a session's end and Shutdown wait for the profile writes
	// behind (past it they give up, naming the documents not on disk).
	WriteTimeout time.Duration
	// SimShards is the number of simulation scheduler threads (0: one per core).
	SimShards int
	// SimProcs, the process's one loop.Procs (made by its main), lets a
	// spinning simulation shard and a hardware device's loop
	// (loop.RunLockedProcs) sleep holding its P (loop.Pacer.KeepP).
	// Nil: they do not.
	SimProcs *loop.Procs
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

	// WrapStore, if set, wraps the state directory's store (the durable
	// writes and reads of config and settings). Tests use it to make one
	// document fail.
	WrapStore func(Store) Store
	// DeviceHook, if set, runs inside a device actor before each
	// control-plane request (get, set or reset of an entry). Tests use it to
	// make a device actor slow or panic.
	DeviceHook func(d *Device)
	// SessionHook, if set, runs inside a session actor before it applies
	// a client message that changes something. Tests use it to make a
	// session actor panic.
	SessionHook func(s *Session)
	// DeviceRestarts is how many times a device actor may restart within a
	// minute before it is given up and its device halted and unlisted
	// (default 10).
	DeviceRestarts int
}

// Store keeps documents durably: Save returns once the document is on
// disk. *store.Store implements it.
type Store interface {
	Load(name string, v any) (found bool, err error)
	Save(name string, v any) error
	List(prefix string) ([]string, error)
	Delete(name string) error
	DeleteFolder(name string) error
}

// Service is the running actor system behind every transport: devices,
// sessions, settings and events. Transports call its methods; every method
// is safe for concurrent use.
//
// The registry actor alone owns the device and session sets: it publishes
// each as an immutable snapshot, which readers load with one atomic load.
type Service struct {
	// Atomics first. devices and sessions are written by the registry
	// actor only.
	devices     atomic.Pointer[DeviceSet]
	sessions    atomic.Pointer[[]*Session] // connection order
	settings    atomic.Pointer[protocol.Settings]
	nextSession atomic.Uint64
	traffic     traffic // GET /metrics (metrics.go)
	// framesEpoch counts changes to what any device's frames show besides
	// its state (Device.framesEpoch): a view, declared effects.
	framesEpoch atomic.Uint64
	// closing is set as Shutdown begins: an actor that stops then names
	// the shutdown as the cause in its answers.
	closing atomic.Bool
	// localHolders is the registry's localIDs.localHolders, kept current
	// by the registry actor (LocalIDHolders).
	localHolders heldIDs

	// Immutable after Start.
	opts        Options
	log         zerolog.Logger
	system      *actor.ActorSystem
	registry    *actor.PID
	activity    *activity.Activity
	store       Store        // nil without a state directory
	disk        *store.Store // the state directory itself, under any WrapStore (its latency and path)
	writeBehind *store.WriteBehind
	sched       *loop.Scheduler
	periodNs    int64
	startedAt   time.Time
	hwCtx       context.Context
	hwCancel    context.CancelFunc
	hwWG        sync.WaitGroup
	// profileSessions owns the live profiles' session documents.
	profileSessions profileSessions
	// offload runs the actors' blocking work; Shutdown waits for it once
	// the actors are stopped.
	offload offloader
	// sessionGuardian supervises every session actor: one strategy, so
	// protoactor keeps one guardian process for all of them.
	sessionGuardian actor.SupervisorStrategy
	supervision     *eventstream.Subscription

	closes closedRing // recent session ends, with their reasons

	shutdownOnce sync.Once
	shutdownErr  error
}

// Start builds the actor system, loads the state directory and starts the
// simulation scheduler. Devices are added afterwards with AddDevice.
// DefaultWriteTimeout is Options.WriteTimeout when it is 0.
const DefaultWriteTimeout = 5 * time.Second

// The range of Options.WriteTimeout. Below MinWriteTimeout a healthy
// disk's slow moment would call writes off (a durable write takes a few
// milliseconds, tens under load); above MaxWriteTimeout a write waited for
// could outlive its requester's wait (RequestTimeout plus admittedLimit),
// which then answers that its outcome is unknown.
const (
	MinWriteTimeout = 100 * time.Millisecond
	MaxWriteTimeout = admittedLimit
)

// CheckWriteTimeout reports whether d may be Options.WriteTimeout
// (--write-timeout), saying why not.
func CheckWriteTimeout(d time.Duration) error {
	if d < MinWriteTimeout || d > MaxWriteTimeout {
		return fmt.Errorf("write timeout %v is out of range %v..%v (default %v): it bounds how long a config or settings write waits for the disk before it is called off and answered 503", d, MinWriteTimeout, MaxWriteTimeout, DefaultWriteTimeout)
	}
	return nil
}

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
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if err := CheckWriteTimeout(o.WriteTimeout); err != nil {
		return nil, fmt.Errorf("actors: %w", err)
	}
	if o.DeviceRestarts == 0 {
		o.DeviceRestarts = 10
	}
	if o.Clock == nil {
		o.Clock = loop.SystemClock()
	}
	s := &Service{opts: o, log: o.Log, periodNs: int64(time.Second) / int64(o.LoopHz), startedAt: time.Now()}
	s.devices.Store(&DeviceSet{runs: new(armRuns)})
	s.sessions.Store(&[]*Session{})

	settings := protocol.DefaultSettings()
	settingsUnread := false
	if o.StateDir != "" {
		st, err := store.Open(o.StateDir)
		if err != nil {
			return nil, fmt.Errorf("actors: state directory: %w", err)
		}
		// Open checked the top only: a folder below it every device's
		// documents need (a run with sudo left devices/ root's) is as much
		// a mistake to fix first. A full disk only is let through. A
		// profile's folder the service may not write (one a run with sudo
		// made) refuses that profile's changes only: the start goes on,
		// warning, and /readyz fails naming it until it is fixed.
		if err := st.CheckWritable(baseFolders...); err != nil && !store.NoSpace(err) {
			return nil, fmt.Errorf("actors: state directory: %w", err)
		} else if err != nil {
			o.Log.Warn().Err(err).Msg("the state directory takes no document now: config changes are refused and /readyz answers 503 until it does")
		} else if err := st.CheckWritable(profileFolders); err != nil {
			o.Log.Warn().Err(err).Msg("a profile's folder in the state directory takes no document: that profile's changes are refused and /readyz answers 503 until it does")
		}
		// Once per document and start: what a downgrade would have lost
		// at the document's next write is kept, and the user hears of it.
		st.OnUnknown(func(path string, names []string, size int) {
			if size > store.MaxKept {
				o.Log.Error().Str("file", path).Strs("members", names).Int("bytes", size).Int("limit", store.MaxKept).
					Msg("stored document has members this build does not know, over what it writes back: its values are in force, and every change of it is refused, changing nothing, until they are moved out of the file by hand (keep a copy if the newer build needs them) and the service restarted, or the newer build runs")
				return
			}
			o.Log.Warn().Str("file", path).Strs("members", names).
				Msg("stored document has members this build does not know (a newer build's entries, or misspelt names): they are kept as they are and written back at each change of the document")
		})
		s.store, s.disk = st, st
		migrateProfiles(st, o.Log)
		if o.WrapStore != nil {
			s.store = o.WrapStore(st)
		}
		s.writeBehind = st.NewWriteBehind(time.Second)
		// A session's end and the shutdown flush it: a hung disk holds
		// them no longer than it holds a config write.
		s.writeBehind.SetWriteTimeout(o.WriteTimeout)
		// Once per document when it starts failing (or hangs past the
		// write timeout) and once when it is written at last: a full disk
		// retried every second for hours would otherwise log a line per
		// document per second.
		s.writeBehind.OnError(func(err error) {
			o.Log.Error().Err(err).Msg("could not write profile config in the background; retrying every second, logged again once written")
		})
		s.writeBehind.OnRecover(func(name string) {
			o.Log.Info().Str("document", name).Msg("profile config written in the background after failing")
		})
		var stored storedSettings
		found, err := s.store.Load("settings", &stored)
		switch {
		case err != nil:
			o.Log.Error().Err(err).Msg("stored settings unreadable; using defaults")
			settingsUnread = leftUnread(err)
		case found:
			settings = stored.Settings
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
	// Every supervision decision (a device actor restarted or given up, a
	// session actor stopped) reaches the activity actor.
	s.supervision = s.system.EventStream.Subscribe(func(ev any) {
		if se, ok := ev.(*actor.SupervisorEvent); ok {
			act.NoteSupervision(se.Child.GetId(), fmt.Sprint(se.Reason), se.Directive.String())
		}
	})

	s.sched = loop.NewScheduler(loop.SchedulerOptions{
		PeriodNs:         s.periodNs,
		Shards:           o.SimShards,
		Clock:            o.Clock,
		RealtimePriority: o.RealtimePriority,
		Procs:            o.SimProcs,
		// No OnRateWarning: a shard is not a device, and a late simulation
		// harms no hardware; its period is in GET /metrics and /stats.
	})
	s.sched.Start()
	s.hwCtx, s.hwCancel = context.WithCancel(context.Background())

	s.sessionGuardian = &sessionSupervisor{svc: s}
	// A device actor that panics restarts with its config (the core
	// outlives the instance); past its budget it is stopped, and the
	// registry, its parent, gives the device up (registryActor.childStopped).
	devices := &answering{inner: actor.NewOneForOneStrategy(o.DeviceRestarts, time.Minute, func(reason any) actor.Directive {
		o.Log.Error().Interface("reason", reason).Msg("device actor crashed; restarting it with its config")
		return actor.RestartDirective
	})}
	// The registry itself is resumed after a panic, never restarted: a
	// restart would stop every device actor (its children) and drop the
	// sets it owns.
	resume := &answering{inner: actor.NewOneForOneStrategy(0, time.Minute, func(reason any) actor.Directive {
		o.Log.Error().Interface("reason", reason).Msg("registry crashed on one message; resuming it")
		return actor.ResumeDirective
	})}
	reg := newRegistryActor(s)
	reg.settingsUnread = settingsUnread
	reg.ids = loadLocalIDs(s.store, o.Log)
	s.localHolders.replace(reg.ids.localHolders())
	s.registry = s.system.Root.Spawn(actor.PropsFromProducer(
		func() actor.Actor { return reg },
		actor.WithSupervisor(devices),
		actor.WithGuardian(resume),
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

// LocalIDHolders is every id of kind k the registry keeps for a local
// device (remembered for it, its stored config's, or one it was served on
// since the start, absent now or not), with the UUID each is kept for: a
// copy, current as of the registry's last change. A lab gateway gives a
// node's device none of these ids but its own. It never blocks on the
// registry.
func (s *Service) LocalIDHolders(k hw.Kind) map[string]string {
	return s.localHolders.copyOf(k)
}

// Devices returns the current device set. It never blocks; the set is
// immutable.
func (s *Service) Devices() *DeviceSet { return s.devices.Load() }

// Sessions returns the connected sessions in connection order. It never
// blocks; do not modify the slice.
func (s *Service) Sessions() []*Session { return *s.sessions.Load() }

// Settings returns the settings in force.
func (s *Service) Settings() protocol.Settings { return *s.settings.Load() }

// LoadDocument reads the state directory's document name (see
// actors/store for names) into v, for a layer above the service that keeps
// its own state there (the lab gateway's ids). found is false without a
// state directory or without the document; a corrupt one is moved aside
// and reported as a *store.CorruptError.
func (s *Service) LoadDocument(name string, v any) (found bool, err error) {
	if s.store == nil {
		return false, nil
	}
	found, err = s.store.Load(name, v)
	if err != nil {
		return false, fmt.Errorf("actors: load %s: %w", name, err)
	}
	return found, nil
}

// SaveDocument writes v as the state directory's document name and returns
// once it is durable (a few milliseconds: never call it under a lock);
// without a state directory it does nothing.
func (s *Service) SaveDocument(name string, v any) error {
	if s.store == nil {
		return nil
	}
	if err := s.store.Save(name, v); err != nil {
		return fmt.Errorf("actors: save %s: %w", name, err)
	}
	return nil
}

// AddDevice adopts an open driver: a device actor, a real-time loop (on the
// shared simulation scheduler, or on its own locked thread when hardware is
// set) and a device-connected event. The service closes the driver when the
// device leaves; when AddDevice returns an error, the driver is the
// caller's to close.
func (s *Service) AddDevice(d hw.Driver, hardware bool) (*Device, error) {
	return s.addDevice(&addDevice{driver: d, hardware: hardware})
}

// AddDeviceWithDefaults is AddDevice for a device that starts with the
// device-global entries defaults when none are stored for it (a replayed
// arm with its recorded handedness): it is listed with them, where setting
// them after AddDevice would list it with the service's defaults first.
func (s *Service) AddDeviceWithDefaults(d hw.Driver, hardware bool, defaults protocol.DeviceConfig) (*Device, error) {
	return s.addDevice(&addDevice{driver: d, hardware: hardware, defaults: &defaults})
}

// AddDeviceThen is AddDevice without the wait: the addition is asked for
// before it returns, so additions reach the service in the order of the
// calls, and then is called with its outcome on a goroutine of its own
// (Shutdown answers the additions still waiting, and waits for their then
// up to its deadline). A caller that adds one device after another uses
// it so that an addition that waits long (a device back while the config
// write it left with is still on a slow disk waits for that write) holds
// up no other device's.
//
// A caller whose wait ends without an answer (RequestTimeout plus a
// minute) has its addition called off: a caller that gives up closes its
// driver and retries with another, and only that retry may be added.
func (s *Service) AddDeviceThen(d hw.Driver, hardware bool, then func(*Device, error)) {
	s.addDeviceThen(&addDevice{driver: d, hardware: hardware}, s.opts.RequestTimeout+admittedLimit, then)
}

// addDeviceThen asks for m and calls then with its outcome, or with an
// error once within is over (the addition then called off), on a
// goroutine of its own.
func (s *Service) addDeviceThen(m *addDevice, within time.Duration, then func(*Device, error)) {
	wait := s.askAddition(m, within)
	s.offload.run(func() { then(wait()) })
}

func (s *Service) addDevice(m *addDevice) (*Device, error) {
	return s.askAddition(m, s.opts.RequestTimeout+admittedLimit)()
}

// askAddition sends m now and returns the wait for its outcome, which the
// registry gives in m.answers (never to a future). A wait that ends
// without an answer, at within, calls the addition off, so the driver its
// caller closes on the error is never listed, and the caller's retry is
// not refused as a device already connected (land36): still queued
// (behind the leaving write of the same device), it is never taken up
// (m.ticket); taken up, its stored config still being read from a disk
// that hangs, the registry drops it (m.listing, additionGivenUp). One
// listed as the wait ended is answered with its device: the registry
// lists it without waiting on the disk, so its answer follows at once
// (waited for up to admittedLimit: only a registry that failed listing it
// takes longer). An addition asked once the service is shutting down is
// refused at once: the registry may be gone, and nothing would answer.
func (s *Service) askAddition(m *addDevice, within time.Duration) func() (*Device, error) {
	m.ticket, m.listing, m.answers = &ticket{}, &ticket{}, make(chan *addDeviceReply, 1)
	if s.closing.Load() {
		return func() (*Device, error) {
			return nil, fmt.Errorf("actors: the service is shutting down; device not added")
		}
	}
	s.system.Root.Send(s.registry, m)
	timer := time.NewTimer(within)
	return func() (*Device, error) {
		defer timer.Stop()
		select {
		case a := <-m.answers:
			return a.device, a.err
		case <-timer.C:
		}
		select {
		case a := <-m.answers: // answered just in time
			return a.device, a.err
		default:
		}
		switch {
		case m.ticket.cancel():
		case m.listing.cancel():
			s.system.Root.Send(s.registry, &additionGivenUp{add: m})
		default: // answered or listed as the wait ended
			select {
			case a := <-m.answers:
				return a.device, a.err
			case <-time.After(admittedLimit):
			}
		}
		return nil, protocol.Errorf(protocol.CodeUnavailable, "", "not added within %v (a device leaving on the same id, or a slow or hung state directory, held it up); called off, it is not listed: retry", within)
	}
}

// RemoveDevice unlists dev and stops it as a failed device (the
// device-failed event says cause), as its loop does after its exchanges
// fail: for a driver whose owner knows the device is gone before an
// exchange can say so, such as a lab gateway that lost the device's node.
// It does not wait; a device already gone is left alone.
func (s *Service) RemoveDevice(dev *Device, cause error) {
	s.system.Root.Send(s.registry, &deviceFailed{device: dev, err: cause})
}

// Entry reads one config entry of dev: device-global when session is 0.
func (s *Service) Entry(dev *Device, session uint64, k protocol.Key) (protocol.Entry, error) {
	e, _, err := s.EntryWarn(dev, session, k)
	return e, err
}

// EntryWarn is Entry with the warnings a GET answers besides the value: a
// stored value of the entry this build did not accept, so that its default
// is in force (docs/protocol.md, bad stored files).
func (s *Service) EntryWarn(dev *Device, session uint64, k protocol.Key) (protocol.Entry, []protocol.Error, error) {
	if perr := k.NotOn(dev.Name, dev.Type); perr != nil {
		return nil, nil, perr
	}
	var owners []protocol.Error
	if r, ok := dev.rt.Driver().(ConfigReader); ok && !k.SessionScoped() {
		e, warnings, asked, err := r.ReadConfig(k)
		if asked {
			return e, warnings, err
		}
		owners = warnings
	}
	reply, err := s.entryReply(dev, &getEntry{session: session, key: k, ticket: &ticket{}})
	if err != nil {
		return nil, nil, err
	}
	if reply.err != nil {
		return nil, nil, reply.err
	}
	if len(owners) > 0 {
		return reply.entry, append(slices.Clip(owners), reply.warnings...), nil
	}
	return reply.entry, reply.warnings, nil
}

// SetEntry sets one config entry durably: when it returns without error the
// value is on disk (device-global entries, and session entries of a session
// with a profile) and in force. When it returns an error the value was not
// applied.
func (s *Service) SetEntry(dev *Device, session uint64, e protocol.Entry) (protocol.Entry, error) {
	if perr := e.Key().NotOn(dev.Name, dev.Type); perr != nil {
		return nil, perr // a grip has no force output: nothing would read it
	}
	if o, ok := dev.rt.Driver().(ConfigOwner); ok && !e.Key().SessionScoped() {
		var err error
		if e, err = o.SetConfig(e); err != nil {
			return nil, err
		}
		got, err := s.entryRequest(dev, &setEntries{session: session, entries: []protocol.Entry{e}, durable: true, ticket: &ticket{}})
		copied(o, e.Key(), err)
		return got, err
	}
	return s.entryRequest(dev, &setEntries{session: session, entries: []protocol.Entry{e}, durable: true, ticket: &ticket{}})
}

// ApplyOwnedEntry sets a device-global entry whose value came from the
// device's ConfigOwner (read from it), without asking the owner again:
// durable and in force when it returns without error. A set that came from
// a client must go through SetEntry, so that the owner has it first.
func (s *Service) ApplyOwnedEntry(dev *Device, e protocol.Entry) (protocol.Entry, error) {
	if e.Key().SessionScoped() {
		return nil, fmt.Errorf("actors: %s is a session entry; its owner is the session, not the driver", e.Key().Path())
	}
	return s.entryRequest(dev, &setEntries{entries: []protocol.Entry{e}, durable: true, ticket: &ticket{}})
}

// ConfigOwner is implemented by drivers whose device's own config is kept
// by someone else (a lab gateway's proxy of a node's device): SetEntry and
// ResetEntry of device-global entries ask the owner first, which validates
// and persists, then apply what it answered.
type ConfigOwner interface {
	SetConfig(e protocol.Entry) (protocol.Entry, error)
	ResetConfig(k protocol.Key) (protocol.Entry, error)
}

// ConfigCopied is implemented by a ConfigOwner that must know whether the
// device's copy of an entry took what the owner answered to a write of it:
// SetEntry and ResetEntry tell it, with the copy's error (nil: it did).
// After an error the owner has the value and the copy an older one.
type ConfigCopied interface {
	ConfigCopied(k protocol.Key, err error)
}

// copied tells o, if it asks (ConfigCopied), how the copy of k went.
func copied(o ConfigOwner, k protocol.Key, err error) {
	if c, ok := o.(ConfigCopied); ok {
		c.ConfigCopied(k, err)
	}
}

// AssignedID is implemented by a driver whose device id was given by a
// service that keeps its ids unique and remembered itself (a lab
// gateway's proxy of a node's device): the registry serves the device on
// that id without its own id memory, which would otherwise move it to an
// id the gateway's tables do not know.
type AssignedID interface{ IDAssigned() }

// ConfigReader is implemented by a ConfigOwner whose device's copy of its
// config may be behind the owner's for a while after the device is added
// (a lab gateway copies a node's config in then): until the copy is
// current, ReadConfig answers a device-global entry from the owner (asked
// true), so that a read does not answer an older value than the owner has.
// warnings are the owner's of k, which a GET answers besides the value
// (the owner's stored value of k that it did not accept): with e when
// asked, else with the copy's value.
type ConfigReader interface {
	ReadConfig(k protocol.Key) (e protocol.Entry, warnings []protocol.Error, asked bool, err error)
}

// ConfigUnsure is implemented by a ConfigOwner whose device's copy of an
// entry may be older than the owner's (a write the owner did not answer
// may have been applied): a session's command that would leave the copy
// as it is goes to the owner all the same. It must not block: the tick
// path asks it.
type ConfigUnsure interface{ ConfigUnsure(k protocol.Key) bool }

// ResetEntry restores the default of k: the device-global entry when k is
// device-global; else for the listed sessions, or every session of the
// device when sessions is nil.
func (s *Service) ResetEntry(dev *Device, sessions []uint64, k protocol.Key) (protocol.Entry, error) {
	if perr := k.NotOn(dev.Name, dev.Type); perr != nil {
		return nil, perr
	}
	if o, ok := dev.rt.Driver().(ConfigOwner); ok && !k.SessionScoped() {
		if _, err := o.ResetConfig(k); err != nil {
			return nil, err
		}
		got, err := s.entryRequest(dev, &resetEntry{sessions: sessions, key: k, ticket: &ticket{}})
		copied(o, k, err)
		return got, err
	}
	return s.entryRequest(dev, &resetEntry{sessions: sessions, all: sessions == nil && k.SessionScoped(), key: k, ticket: &ticket{}})
}

// ResetEntryEverySession restores session-scoped entry k's default for
// every session of dev (HTTP DELETE without session=), and returns the
// value in force with the sessions it reset, in id order (none: no
// session was there).
func (s *Service) ResetEntryEverySession(dev *Device, k protocol.Key) (protocol.Entry, []uint64, error) {
	if !k.SessionScoped() {
		return nil, nil, fmt.Errorf("actors: %s is device-global: it has no sessions to reset", k.Name())
	}
	if perr := k.NotOn(dev.Name, dev.Type); perr != nil {
		return nil, nil, perr
	}
	reply, err := s.entryReply(dev, &resetEntry{all: true, key: k, ticket: &ticket{}})
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(reply.sessions) // the device's are in map order
	return reply.entry, reply.sessions, reply.err
}

func (s *Service) entryRequest(dev *Device, msg actorMessage) (protocol.Entry, error) {
	reply, err := s.entryReply(dev, msg)
	if err != nil {
		return nil, err
	}
	return reply.entry, reply.err
}

func (s *Service) entryReply(dev *Device, msg actorMessage) (*entryReply, error) {
	r, err := s.ask(dev.pid, msg)
	if err != nil {
		return nil, err
	}
	reply, ok := r.(*entryReply)
	if !ok {
		return nil, fmt.Errorf("actors: unexpected reply %T", r)
	}
	return reply, nil
}

// SetSetting changes a setting durably and applies it to every device.
func (s *Service) SetSetting(k protocol.SettingKey, v any) (any, error) {
	return s.settingRequest(&setSetting{key: k, value: v, ticket: &ticket{}})
}

// ResetSetting restores a setting's default.
func (s *Service) ResetSetting(k protocol.SettingKey) (any, error) {
	return s.settingRequest(&resetSetting{key: k, ticket: &ticket{}})
}

func (s *Service) settingRequest(msg actorMessage) (any, error) {
	r, err := s.ask(s.registry, msg)
	if err != nil {
		return nil, err
	}
	reply, ok := r.(*settingReply)
	if !ok {
		return nil, fmt.Errorf("actors: unexpected reply %T", r)
	}
	return reply.value, reply.err
}

// admittedLimit bounds the wait for an actor that admitted a request (its
// deadline no longer applies: the caller is owed the outcome). Only a
// wedged actor takes this long.
const admittedLimit = time.Minute

// ask is the HTTP edge's way into the actors: send, then wait outside any
// actor.
func (s *Service) ask(pid *actor.PID, msg actorMessage) (any, error) {
	return s.send(pid, msg).wait()
}

// pendingRequest is a request sent to an actor and not yet answered.
type pendingRequest struct {
	svc    *Service
	future *actor.Future
	timer  *time.Timer
}

// send sends msg to pid now. When msg carries a ticket, the request is
// cancelled at Options.RequestTimeout unless the actor admitted it by then:
// the waiter is answered unavailable at once, and the actor will never
// apply it. An admitted request is waited for until the actor answers.
func (s *Service) send(pid *actor.PID, msg actorMessage) *pendingRequest {
	return s.sendWithin(pid, msg, s.opts.RequestTimeout+admittedLimit)
}

// sendWithin is send with a wait for the answer bounded by within.
func (s *Service) sendWithin(pid *actor.PID, msg actorMessage, within time.Duration) *pendingRequest {
	root := s.system.Root
	p := &pendingRequest{svc: s, future: root.RequestFuture(pid, msg, within)}
	if t := ticketOf(msg); t != nil {
		p.timer = time.AfterFunc(s.opts.RequestTimeout, func() {
			if t.cancel() {
				root.Send(p.future.PID(), &cancelled{})
			}
		})
	}
	return p
}

// wait returns the actor's answer, or the error table's reading of why
// there is none.
func (p *pendingRequest) wait() (any, error) {
	return p.settle(p.future.Result())
}

// settle reads a completed future's result as wait does; an actor that
// takes the answer as a message (ReenterAfter) calls it.
func (p *pendingRequest) settle(r any, err error) (any, error) {
	if p.timer != nil {
		p.timer.Stop()
	}
	if err != nil {
		return nil, p.svc.askError(err)
	}
	switch r := r.(type) {
	case *cancelled:
		return nil, protocol.Errorf(protocol.CodeUnavailable, "", "not taken up within %v (the device or service is busy); nothing was applied: retry", p.svc.opts.RequestTimeout)
	case *failed:
		return nil, protocol.Errorf(protocol.CodeInternal, "", "the actor handling this request failed (%v) and was restarted; read the value back before retrying", r.reason)
	}
	return r, nil
}

func ticketOf(msg actorMessage) *ticket {
	switch m := msg.(type) {
	case *getEntry:
		return m.ticket
	case *setEntries:
		return m.ticket
	case *resetEntry:
		return m.ticket
	case *setSetting:
		return m.ticket
	case *resetSetting:
		return m.ticket
	}
	return nil
}

// askError maps a failed request to the error table: a request that went
// unanswered or found its actor gone is unavailable (503 over HTTP, the
// same code over WebSocket).
func (s *Service) askError(err error) error {
	switch {
	case errors.Is(err, actor.ErrTimeout):
		return protocol.Errorf(protocol.CodeUnavailable, "", "taken up but not answered within %v; its outcome is unknown: read the value back", s.opts.RequestTimeout+admittedLimit)
	case errors.Is(err, actor.ErrDeadLetter):
		return protocol.Errorf(protocol.CodeUnavailable, "", "the device or session has left before answering (a change asked was not applied): read again, or list /devices")
	}
	return fmt.Errorf("actors: request: %w", err)
}

// Shutdown stops the service in order: every device to zero force, the
// loops stopped, sessions ended, pending profile writes flushed, actors
// stopped. Transports stop accepting and close their sockets before
// calling it. ctx bounds the wait for the loops and for the work handed
// off; the disk's part is bounded by Options.WriteTimeout instead: the
// flush waits until the disk has taken no document for it, and a config
// write past its commit point is given it past ctx if need be, unless the
// flush found the disk hung. Calls after the first return the first
// call's result.
func (s *Service) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

// sessionsEndWithin bounds how long a shutdown waits for its sessions'
// actors to stop: each stops at once, unless one is busy (a message in
// hand); the devices' halt is not held back longer for their events.
const sessionsEndWithin = 500 * time.Millisecond

// waitStopped waits for futures (actors' stops) within ctx and at most
// within.
func (s *Service) waitStopped(ctx context.Context, futures []*actor.Future, within time.Duration) {
	if len(futures) == 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		for _, f := range futures {
			_ = f.Wait()
		}
		close(done)
	}()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-ctx.Done():
	}
}

func (s *Service) shutdown(ctx context.Context) error {
	s.closing.Store(true)
	// Not Close: the write-behind's Close below flushes every profile at
	// once, where a flush per session would wait its write timeout for
	// each on a hung disk.
	var ended []*actor.Future
	for _, sess := range s.Sessions() {
		sess.close(protocol.CloseShutdown)
		ended = append(ended, s.system.Root.StopFuture(sess.pid))
	}
	// Each session's actor publishes its session-ended as it stops: wait
	// for them (briefly) so those events are in the activity channel before
	// it stops below, and reach the events sockets' last flush. Without it
	// a shutdown's session-ended (reason shutdown) reached no watcher
	// (tourevents).
	s.waitStopped(ctx, ended, sessionsEndWithin)
	// The scheduler first: it halts its devices once its shards are
	// still, each at once. A Halt while a shard runs waits for that
	// device's turn in the shard's pass, and one after another over
	// thousands of devices of mixed families that took longer than the
	// stop's whole budget (stop42). Each halt is the last state a
	// recording gets of its device (loop.Tap): the recorder stops after
	// this (transport's Shutdown), its files ending at zero force.
	s.sched.Stop()
	for _, d := range s.Devices().All() {
		d.rt.Halt()
	}
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
		if err := d.closeDriver(); err != nil {
			errs = append(errs, fmt.Errorf("actors: close %s %s: %w", d.Type.Key(), d.ID, err))
		}
	}
	diskHung := false
	if s.writeBehind != nil {
		// Within the write timeout: past it the error names the profile
		// documents not on disk, acknowledged to their clients and lost
		// with this process, and the shutdown goes on.
		if err := s.writeBehind.Close(); err != nil {
			diskHung = errors.Is(err, store.ErrWriteTimeout)
			errs = append(errs, fmt.Errorf("actors: flush profiles: %w", err))
		}
	}
	s.system.EventStream.Unsubscribe(s.supervision)
	s.activity.Stop()
	// Waited for: the device actors stop with the registry, before the
	// system does.
	if err := s.system.Root.StopFuture(s.registry).Wait(); err != nil {
		errs = append(errs, fmt.Errorf("actors: stop the registry: %w", err))
	}
	// Blocking work the actors handed off (a durable write, a removal
	// closing its driver) is over before Shutdown returns.
	if err := s.waitOffloaded(ctx, diskHung); err != nil {
		errs = append(errs, err)
	}
	s.system.Shutdown()
	return errors.Join(errs...)
}

// waitOffloaded waits for the work handed off until ctx ends and, past
// it, while a config write past its commit point is in flight (its value
// in its document, its directory's fsync left: a slow disk), what the
// write timeout promises, unless the flush found the disk hung. A write
// called off before its commit point is not waited for past ctx: it will
// never land.
func (s *Service) waitOffloaded(ctx context.Context, diskHung bool) error {
	offloaded := make(chan struct{})
	go func() { s.offload.wait(); close(offloaded) }()
	select {
	case <-offloaded:
		return nil
	case <-ctx.Done():
	}
	late := fmt.Errorf("actors: a durable write or a driver's close did not finish: %w", ctx.Err())
	landing := s.offload.landingDone()
	select {
	case <-landing:
		return late // nothing past its commit point
	default:
	}
	if diskHung {
		return late
	}
	within := time.NewTimer(s.opts.WriteTimeout)
	defer within.Stop()
	select {
	case <-offloaded:
		return nil
	case <-landing:
		// Its job answers its actor next, and is over.
		select {
		case <-offloaded:
			return nil
		case <-time.After(time.Second):
		}
	case <-within.C:
	}
	return late
}

// offloader runs the actors' blocking work (a durable write, a load, a
// driver's close) on goroutines of its own, so that no actor waits inside
// Receive; each piece of work sends its outcome back to its actor as a
// message.
type offloader struct {
	wg   sync.WaitGroup
	mu   sync.Mutex // guards done, so that no Add races the final Wait, and landing
	done bool
	// landing counts the durable writes admitted at their commit point
	// and not returned yet (commitPoint); landed is closed while it is 0.
	landing int
	landed  chan struct{}
}

// commitPoint is t's admit as a store's commit function
// (store.SaveGated), counting the write from its admission until done is
// called (once SaveGated has returned): its value is in its document
// then, only its directory's fsync left, and the shutdown waits for it
// (Service.waitOffloaded). SaveGated calls commit on its own goroutine.
func (o *offloader) commitPoint(t *ticket) (commit func() bool, done func()) {
	admitted := false
	commit = func() bool {
		if !t.admit() {
			return false
		}
		if !admitted {
			admitted = true
			o.mu.Lock()
			if o.landing == 0 {
				o.landed = make(chan struct{})
			}
			o.landing++
			o.mu.Unlock()
		}
		return true
	}
	done = func() {
		if !admitted {
			return
		}
		o.mu.Lock()
		if o.landing--; o.landing == 0 {
			close(o.landed)
		}
		o.mu.Unlock()
	}
	return commit, done
}

// landingDone is closed once no write counted by commitPoint is in flight.
func (o *offloader) landingDone() <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.landing == 0 {
		none := make(chan struct{})
		close(none)
		return none
	}
	return o.landed
}

// run runs fn on a goroutine of its own.
func (o *offloader) run(fn func()) {
	o.mu.Lock()
	if o.done {
		o.mu.Unlock()
		go fn() // the actors are stopped: nobody waits for this outcome
		return
	}
	o.wg.Add(1)
	o.mu.Unlock()
	go func() {
		defer o.wg.Done()
		fn()
	}()
}

// wait waits for every fn run before it was called; later ones are not
// tracked.
func (o *offloader) wait() {
	o.mu.Lock()
	o.done = true
	o.mu.Unlock()
	o.wg.Wait()
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
