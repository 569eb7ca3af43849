package actors

// The registry actor: it creates and supervises the device actors, owns the
// service-wide settings, and is the only writer of the device and session
// sets (deviceset.go, Service.Sessions).

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/loop"
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
type registryActor struct {
	svc *Service
	// attached is what the registry last told the devices about each
	// listed session (its profile and session-level basis).
	attached map[uint64]*attachSession
	// stopping is set once the registry itself stops: its children stop
	// with it, and that is no failure.
	stopping bool
}

func (r *registryActor) Receive(ctx actor.Context) {
	s := r.svc
	switch m := ctx.Message().(type) {
	case *actor.Started:
	case *actor.Stopping:
		r.stopping = true
	case *actor.Stopped, *actor.Restarting:
	case *actor.Terminated:
		if !r.stopping {
			r.childStopped(ctx, m.Who)
		}
	case *addDevice:
		d, err := r.add(ctx, m)
		ctx.Respond(&addDeviceReply{device: d, err: err})
	case *deviceFailed:
		r.remove(ctx, m.device, m.err)
	case *openSession:
		r.open(ctx, m.sess)
		ctx.Respond(&ack{})
	case *updateSession:
		if at := r.attached[m.sess.ID]; at != nil {
			at = &attachSession{session: m.sess.ID, profile: m.profile, basis: m.basis}
			r.attached[m.sess.ID] = at
			for _, d := range s.Devices().All() {
				ctx.Send(d.pid, at)
			}
		}
		ctx.Respond(&ack{})
	case *sessionClosed:
		r.close(ctx, m.sess)
	case *setSetting:
		if m.ticket.admit() {
			v, err := r.changeSetting(ctx, m.key, m.value)
			ctx.Respond(&settingReply{value: v, err: err})
		}
	case *resetSetting:
		if m.ticket.admit() {
			def := protocol.DefaultSettings()
			v, err := r.changeSetting(ctx, m.key, def.Get(m.key))
			ctx.Respond(&settingReply{value: v, err: err})
		}
	default:
		s.log.Warn().Str("type", fmt.Sprintf("%T", m)).Msg("registry: unknown message dropped")
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
		hook:        s.opts.DeviceHook,
		log:         s.log.With().Str("device_type", t.Key()).Str("device_id", d.ID).Logger(),
		settings:    s.Settings(),
	}
	core.init()
	pid, err := ctx.SpawnNamed(newDeviceProps(core), "device-"+t.Key()+"-"+d.ID+fmt.Sprintf("-%d", time.Now().UnixNano()))
	if err != nil {
		return nil, fmt.Errorf("actors: spawn device actor: %w", err)
	}
	d.pid = pid
	// Every listed session is attached before the device is listed, so no
	// reader finds the device without its sessions.
	for _, sess := range s.Sessions() {
		ctx.Send(pid, r.attached[sess.ID])
	}
	s.devices.Store(s.devices.Load().with(d))
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
	// Zero force first, whatever happens to the loop and the driver next.
	d.rt.Halt()
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
	if err := d.closeDriver(); err != nil {
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
