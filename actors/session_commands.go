package actors

import (
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/space"
)

// The state commands of a device entry (protocol.StateCommands):
// set_transform and set_gravity_compensation. Clients send them every tick,
// mostly unchanged; an unchanged one is answered from the published view,
// with no actor round trip and no disk write. keep_alive needs nothing.

// stateCommands applies e (entry i of the message)'s state commands to d.
// A change is asked of the device actor like a configure (its answer comes
// back as a message); an error's path is under e.Path.
func (a *sessionActor) stateCommands(d *Device, i int, e *protocol.DeviceEntry) {
	if e.Transform.Given() {
		a.setWorkspace(d, i, e)
	}
	if g := e.GravityCompensation; g.Given {
		a.setGravityCompensation(d, i, e.Path, g.Value)
	}
}

// setWorkspace applies set_transform: the parts it gives replace those of
// the session's workspace transform on d, the others stay.
func (a *sessionActor) setWorkspace(d *Device, i int, e *protocol.DeviceEntry) {
	view := d.ViewFor(a.sess.ID)
	next := e.Transform.Apply(view.Workspace)
	if next == view.Workspace && d.attached(a.sess.ID) {
		return
	}
	a.ask(d.pid, &setWorkspace{session: a.sess.ID, transform: next}, i, e.Path+".commands.set_transform")
}

// setGravityCompensation applies set_gravity_compensation: the device's
// gravity compensation enable, keeping its scaling factor. The device
// stores it (durably, as an HTTP POST would) only when it changes.
//
// It changes the device for every session, so a session may not change it
// under another session's control: that refusal is recorded as a request
// already answered, so it takes its place among the entry's errors.
func (a *sessionActor) setGravityCompensation(d *Device, i int, path string, enabled bool) {
	cur := d.ViewFor(a.sess.ID).Config.Device.GravityCompensation
	if cur.Enabled == enabled {
		return
	}
	path += ".commands.set_gravity_compensation"
	if owner := d.Register().Owner(); owner != 0 && owner != a.sess.ID {
		a.asked = append(a.asked, askSlot{entry: i, path: path, done: true,
			err: protocol.Errorf(protocol.CodeDeviceBusy, "", "%s %s is controlled by session %d; its gravity compensation stays as it is", d.Name, d.ID, owner)})
		return
	}
	cur.Enabled = enabled
	a.ask(d.pid, &setEntries{entries: []protocol.Entry{cur}, ticket: &ticket{}}, i, path)
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
