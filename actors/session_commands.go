package actors

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/space"
)

// The state commands of a device entry (protocol.StateCommands):
// set_transform and set_gravity_compensation. Clients send them every tick,
// mostly unchanged; an unchanged one is answered from the published view
// by the per-tick path, with no actor round trip and no disk write (see
// tickPath.needsControl). keep_alive needs nothing.

// stateCommands applies e (entry i of the request)'s state commands to d.
// A change is asked of the device actor like a configure (its answer comes
// back to the session actor); an error's path is under e.Path.
func (a *sessionActor) stateCommands(ctx actor.Context, d *Device, i int, e *protocol.DeviceEntry) {
	if next, changed := workspaceChange(d, a.sess.ID, e); changed {
		a.ask(ctx, d.pid, &setWorkspace{session: a.sess.ID, transform: next}, i, e.Path+".commands.set_transform")
	}
	if g, changed := gravityChange(d, a.sess.ID, e); changed {
		a.setGravityCompensation(ctx, d, i, e.Path+".commands.set_gravity_compensation", g)
	}
}

// workspaceChange is the workspace transform e's set_transform makes of
// the session's on d (the parts it gives replace those of the current one,
// the others stay), and whether that changes anything.
func workspaceChange(d *Device, session uint64, e *protocol.DeviceEntry) (space.Transform, bool) {
	if !e.Transform.Given() {
		return space.Transform{}, false
	}
	view := d.ViewFor(session)
	next := e.Transform.Apply(view.Workspace)
	return next, next != view.Workspace || !d.attached(session)
}

// gravityChange is d's gravity compensation with e's
// set_gravity_compensation applied (its scaling factor kept), and whether
// that changes anything.
func gravityChange(d *Device, session uint64, e *protocol.DeviceEntry) (protocol.GravityCompensation, bool) {
	g := e.GravityCompensation
	if !g.Given {
		return protocol.GravityCompensation{}, false
	}
	cur := d.ViewFor(session).Config.Device.GravityCompensation
	if cur.Enabled == g.Value && !configUnsure(d, protocol.KeyGravityCompensation) {
		return cur, false
	}
	cur.Enabled = g.Value
	return cur, true
}

// setGravityCompensation applies set_gravity_compensation: the device
// stores it (durably, as an HTTP POST would).
//
// It changes the device for every session, so a session may not change it
// under another session's control: that refusal is recorded as a request
// already answered, so it takes its place among the entry's errors.
func (a *sessionActor) setGravityCompensation(ctx actor.Context, d *Device, i int, path string, g protocol.GravityCompensation) {
	if owner := d.Register().Owner(); owner != 0 && owner != a.sess.ID {
		a.req.asked = append(a.req.asked, askSlot{entry: i, path: path, done: true,
			err: protocol.Errorf(protocol.CodeDeviceBusy, "", "%s %s is controlled by %s; its gravity compensation stays as it is", d.Name, d.ID, holderText(owner))})
		return
	}
	if _, owned := d.rt.Driver().(ConfigOwner); owned {
		// Kept by someone else (a lab gateway's proxy: the node's loop
		// compensates gravity): the owner validates and persists it
		// first, as for an HTTP POST (Service.SetEntry), off the actor,
		// since it answers over the network.
		a.askOwner(ctx, d, g, i, path)
		return
	}
	a.ask(ctx, d.pid, &setEntries{entries: []protocol.Entry{g}, ticket: &ticket{}}, i, path)
}

// attached reports whether session has a view slot on d (the device actor
// knows it).
func (d *Device) attached(session uint64) bool {
	_, ok := d.slots.get(session)
	return ok
}

// setWorkspace sets a session's workspace transform and publishes its view.
func (c *deviceCore) setWorkspace(m *setWorkspace) error {
	s := c.sessions[m.session]
	if s == nil {
		return protocol.Errorf(protocol.CodeUnknownSession, "", "session %d is not connected to %s %s", m.session, c.dev.Name, c.dev.ID)
	}
	if s.workspace != m.transform {
		s.workspace = m.transform
		c.publish(s)
	}
	return nil
}

// fillTargets reports what an arm is commanded to and the session's
// workspace transform (the 3.5 state fields beside the measured ones).
func fillTargets(s *protocol.ArmState, snap *loop.Snapshot, v *View) {
	s.Transform = v.Workspace
	switch t := &snap.Target; snap.Mode {
	case hw.ModePosition:
		s.CurrentCursorPosition = v.Space.PositionToApp(space.Vec3{X: t[0], Y: t[1], Z: t[2]})
	case hw.ModeAngle:
		s.CurrentAngularPosition = space.Angles3{A0: t[0], A1: t[1], A2: t[2]}
	case hw.ModeTorque:
		s.CurrentAngularTorques = space.Angles3{A0: t[0], A1: t[1], A2: t[2]}
	}
}

// configUnsure says d's copy of device-global k may be older than its
// owner's (ConfigUnsure): a set of it must go to the owner even when the
// copy says it changes nothing.
func configUnsure(d *Device, k protocol.Key) bool {
	u, ok := d.rt.Driver().(ConfigUnsure)
	return ok && u.ConfigUnsure(k)
}
