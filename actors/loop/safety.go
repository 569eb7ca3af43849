package loop

// This file is the loop's safety code, readable without the scheduling
// machinery around it (device.go: the struct's cache-line layout, the
// spin-then-sleep halt handshake, publishing; scheduler.go and simarm.go:
// shards). Every function here runs on the goroutine that holds the
// device's driver for a tick (or Halt's caller holding it between ticks).
//
// The per-tick order is:
//
//	lease      read the register; release an owner whose lease (or claim)
//	           lapsed; notice releases                        -> owner
//	compute    the owner's valid command, else the ramp of the last one,
//	           else nothing                                   -> d.out
//	  shape    damping, force gate, force scale; then finishForce: + the
//	           session's effects and navigation, passivity observer and controller, clamp
//	           to MaxForceN (or ForceClampN), slew limit, × ramp
//	addGravity the host-side feed-forward (not the client's force), clamped
//	           again
//	(exchange)
//	driverError on a failed exchange: halt, disarm, fail after MaxErrors
//
// and haltLocked, whenever Halt asked, before all of it.
//
// The Device fields this code owns (declared in device.go, where their
// place in the cache lines is chosen):
//
//	armed, ramping   the output follows held / winds held down
//	halted           Halt ran and no command armed the output since
//	held             the command applied last: what a ramp winds down
//	rampStartNs      where the ramp's clock starts (the deadline of a lapse)
//	lastOwner        the owner of the previous tick (release detection)
//	unarmedOwner,    an owner that claimed without writing in its term,
//	unarmedSinceNs   and since when (ClaimTimeoutNs)
//	disarmedVersion  register writes up to this version are never applied
//	appliedSeq       the Seq of the command acted on last
//	gravityN         the feed-forward inside out.ForceN.Z this tick
//	errRun           driver errors in a row
//	out              what goes to the driver this tick
//	fx               the effects (effects.go: the Set, its Renderer)
//	navObs           the passivity observer of the navigation's force
//	                 (navigation.go renders it from the command's Params)
//	sessionObs, pc   the passivity observer of the session's force and the
//	                 controller of the summed output
//	slewN            the force before the ramp last tick (slew limit)

import (
	"fmt"
	"time"

	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
)

// ReleaseBoundNs is the documented bound on a release: the output is zero
// within this long after a lease lapses or a session lets go (with the
// default RampNs, on a loop that gets the CPU on time).
const ReleaseBoundNs = 20 * int64(time.Millisecond)

// releaseJitterNs is the default ramp's allowance for ticks that run late:
// with a ramp of the bound less two periods, 6 of 100 stalls on an idle
// 2-core machine released 0.1 to 0.6 ms past the bound (hapticbench lease).
const releaseJitterNs = 2 * int64(time.Millisecond)

// haltLocked zeroes the output and halts the driver. The caller holds token.
func (d *Device) haltLocked() {
	gen := d.haltReq.Load()
	if v := d.reg.latest.Load(); v > d.disarmedVersion {
		d.disarmedVersion = v
	}
	d.armed, d.ramping = false, false
	d.halted = true
	d.asleep = false
	d.out = hw.Command{}
	d.endForce(d.lastNowNs)
	d.pub.Mode, d.pub.Target = hw.ModeIdle, [3]float64{}
	if err := d.drv.Halt(); err != nil {
		d.errors.Add(1)
		d.emit(Event{Kind: EventDriverError, Session: d.lastOwner,
			Err: fmt.Errorf("actors/loop: halt %s: %w; unplug the device if it keeps applying force", d.info.ID, err)})
	}
	d.haltAck.Store(gen)
}

// lease reads the register, takes it back from an owner whose lease lapsed,
// notices releases, and returns the owner for this tick.
func (d *Device) lease(nowNs int64) (owner uint64) {
	r := &d.reg
	// Versions only grow, so an unchanged latest version means the
	// command in hand is still the register's: skip the read.
	if r.latest.Load() != d.cmd.version {
		d.readRegister()
	}
	d.seenVersion = d.cmd.version
	owner = r.owner.Load()
	term := r.term.Load()
	var expired uint64
	if owner != 0 {
		c := &d.cmd
		if c.Session == owner && c.term == term {
			d.unarmedOwner = 0
			if nowNs > c.DeadlineNs && r.releaseFrom(owner) {
				expired = owner
			}
		} else if d.unarmedOwner != owner {
			d.unarmedOwner, d.unarmedSinceNs = owner, nowNs
		} else if nowNs-d.unarmedSinceNs > d.opts.ClaimTimeoutNs && r.releaseFrom(owner) {
			expired = owner
			d.unarmedOwner = 0
		}
		if expired != 0 {
			d.expiries.Add(1)
			d.emit(Event{Kind: EventLeaseExpired, Session: expired})
			owner = r.owner.Load()
		}
	}
	if d.lastOwner != 0 && owner != d.lastOwner && d.lastOwner != expired {
		d.emit(Event{Kind: EventReleased, Session: d.lastOwner})
	}
	d.lastOwner = owner
	return owner
}

// readRegister takes the register's latest command into d.cmd, unless
// writers kept overwriting it under the read (then the previous one stays).
// It is out of lease's line so the idle path keeps no Command on its stack.
func (d *Device) readRegister() {
	var buf Command
	for i := 0; i < regReadAttempts; i++ {
		if d.reg.read(&buf) {
			d.cmd = buf
			return
		}
	}
}

// compute fills d.out from the command in force (or the ramp after it).
func (d *Device) compute(nowNs int64, owner uint64, g *Globals) {
	c := &d.cmd
	valid := owner != 0 && c.Session == owner && c.term == d.reg.term.Load() &&
		nowNs <= c.DeadlineNs && c.version > d.disarmedVersion
	if valid {
		if !d.armed || d.held.version != c.version {
			d.held = *c
		}
		d.armed, d.ramping, d.halted = true, false, false
		d.appliedSeq = c.Seq
		d.shape(&d.held, 1, g, nowNs)
		return
	}
	if d.armed {
		d.armed = false
		if m := d.held.Cmd.Mode; m == hw.ModeForce || m == hw.ModeTorque || d.effectsActive(d.held.Session) {
			// A lapse ramps from the deadline, not from the tick that
			// noticed it: a tick that woke late (a busy CPU) shortens the
			// ramp instead of pushing the zero past ReleaseBoundNs.
			// Past it by a whole ramp, the force drops to zero at once:
			// the bound on the release outranks the smoothness of it.
			d.ramping, d.rampStartNs = true, nowNs
			if dl := d.held.DeadlineNs; dl < nowNs {
				d.rampStartNs = dl
			}
		}
	}
	if d.ramping {
		el := nowNs - d.rampStartNs
		if el < d.opts.RampNs {
			d.shape(&d.held, 1-float64(el)/float64(d.opts.RampNs), g, nowNs)
			return
		}
		d.ramping = false
	}
	d.out = hw.Command{}
	d.endForce(nowNs)
}

// endForce forgets the commanded force's history when no control holds
// the output: effects pause, the observer and controller start from zero
// energy, the slew limiter from zero force.
func (d *Device) endForce(nowNs int64) {
	d.pauseNavigation(nowNs)
	if d.slewN == (hw.Vec3{}) && d.pc == (passivity.Controller{Spells: d.pc.Spells}) && d.sessionObs == (passivity.Observer{}) && d.navObs == (passivity.Observer{}) {
		d.pauseEffects(nowNs)
		return
	}
	d.pauseEffects(nowNs)
	d.slewN = hw.Vec3{}
	d.pc.Reset()
	d.sessionObs.Reset()
	d.navObs.Reset()
	d.storeOutput(true)
}

// shape turns a command into the driver's output. A force: the session's
// force less its damping, through the force gate, × force scale; plus the
// session's effects (× force scale); through the passivity controller;
// clamped; slew-limited; × the ramp factor. A command with no output
// (ModeIdle) whose session has effects is a force of zero plus them.
func (d *Device) shape(c *Command, ramp float64, g *Globals, nowNs int64) {
	scale := clamp(g.ForceScale, 0, 1)
	out := &d.out
	mode := c.Cmd.Mode
	if mode == hw.ModeIdle && d.effectsActive(c.Session) {
		mode = hw.ModeForce
	}
	*out = hw.Command{Mode: mode}
	switch mode {
	case hw.ModeForce:
		p := c.Params
		if p == nil {
			p = &defaultParams
		}
		f := c.Cmd.ForceN
		if !f.Finite() || c.Cmd.Mode != hw.ModeForce {
			f = hw.Vec3{}
		}
		v := d.state.VelocityMps
		if v.Finite() {
			D := &p.Damping
			f.X -= D[0][0]*v.X + D[0][1]*v.Y + D[0][2]*v.Z
			f.Y -= D[1][0]*v.X + D[1][1]*v.Y + D[1][2]*v.Z
			f.Z -= D[2][0]*v.X + D[2][1]*v.Y + D[2][2]*v.Z
		}
		k := (1 - d.gate.attenuation(p.ForceGateGain)) * scale
		f = hw.Vec3{X: f.X * k, Y: f.Y * k, Z: f.Z * k}
		out.ForceN = d.finishForce(f, c, ramp, g, nowNs, scale)
	case hw.ModeTorque:
		t := c.Cmd.TorquesNmm
		k := scale * ramp
		if !t.Finite() {
			k = 0
		}
		out.TorquesNmm = hw.Angles3{A0: t.A0 * k, A1: t.A1 * k, A2: t.A2 * k}
	case hw.ModePosition:
		if !c.Cmd.PositionM.Finite() {
			*out = hw.Command{}
			return
		}
		out.PositionM = c.Cmd.PositionM
	case hw.ModeAngle:
		a := c.Cmd.AnglesDeg
		if !a.Finite() {
			*out = hw.Command{}
			return
		}
		out.AnglesDeg = a
	default:
		*out = hw.Command{}
	}
}

// finishForce takes the session's shaped force f through the stages every
// commanded force passes: the effects are added, the passivity observer
// counts each source's energy and its controller adds damping if the
// output turned active, then the clamp, the slew limit and the ramp.
// Without effects, with the controller off and no slew limit, it is the
// clamp and the ramp alone.
func (d *Device) finishForce(f hw.Vec3, c *Command, ramp float64, g *Globals, nowNs int64, scale float64) hw.Vec3 {
	v := d.state.VelocityMps
	if !v.Finite() {
		v = hw.Vec3{}
	}
	dt := d.tickDtNs
	d.sessionObs.Add(f, v, dt)
	f = f.Add(d.renderEffects(c, nowNs, scale))
	nav := d.renderNavigation(c, nowNs, scale, ramp)
	d.navObs.Add(nav, v, dt)
	f = f.Add(nav)
	f = d.pc.Step(f, v, nowNs, dt, &g.Passivity)
	if d.pc.Sustained && d.pc.ActiveNs > 0 && d.pc.Spells != d.output.spells.Load() {
		d.emit(Event{Kind: EventPassivitySustained, Session: c.Session})
		d.storeOutput(true)
	}
	limit := d.maxForceN
	if g.ForceClampN > 0 && g.ForceClampN < limit {
		limit = g.ForceClampN
	}
	f = clampMagnitude(f, limit)
	if s := g.ForceSlewNps; s > 0 {
		f = slew(d.slewN, f, s*float64(dt)*1e-9)
	}
	d.slewN = f
	f = hw.Vec3{X: f.X * ramp, Y: f.Y * ramp, Z: f.Z * ramp}
	d.pc.Applied(f)
	d.storeOutput(false)
	return f
}

// slew moves from toward to by at most maxStepN.
func slew(from, to hw.Vec3, maxStepN float64) hw.Vec3 {
	step := to.Sub(from)
	if n := step.Norm(); n > maxStepN {
		return from.Add(step.Scale(maxStepN / n))
	}
	return to
}

// addGravity adds the host-side gravity feed-forward to the output of a
// device without firmware compensation (simulated arms): m·g·scale upwards,
// also while idle, so an arm with compensation on floats as a real one
// does; after Halt the device is inert until a new command arms it. It is
// not the client's force: it comes after the ramp and the force scale, and
// it is taken out of the reported force again. Position
// and angle servos carry the arm's weight themselves; torque mode gets no
// feed-forward (it would need the joint-space gravity model).
func (d *Device) addGravity(g *Globals) {
	d.gravityN = 0
	s := &g.Settings
	if d.halted || !d.hostGravity || !s.GravityCompensation {
		return
	}
	switch d.out.Mode {
	case hw.ModeIdle:
		d.out = hw.Command{Mode: hw.ModeForce}
	case hw.ModeForce:
	default:
		return
	}
	ff := d.massKg * hw.GravityMps2 * clamp(s.GravityScale, 0, 2)
	d.out.ForceN.Z += ff
	d.out.ForceN = clampMagnitude(d.out.ForceN, d.maxForceN)
	d.gravityN = ff
}

// driverError halts the driver after a failed exchange, disarms the output
// (re-arming needs a new Write) and fails the device after MaxErrors in a
// row.
func (d *Device) driverError(err error, owner uint64) {
	d.errors.Add(1)
	d.errRun++
	_ = d.drv.Halt() // best effort: the device may be gone; the error is the exchange's
	if d.cmd.version > d.disarmedVersion {
		d.disarmedVersion = d.cmd.version
	}
	d.armed, d.ramping = false, false
	d.out = hw.Command{}
	d.endForce(d.lastNowNs)
	if d.errRun == 1 {
		d.emit(Event{Kind: EventDriverError, Session: owner,
			Err: fmt.Errorf("actors/loop: exchange with %s failed, output halted: %w", d.info.ID, err)})
	}
	if d.errRun >= d.opts.MaxErrors && !d.failed.Load() {
		d.failed.Store(true)
		d.emit(Event{Kind: EventFailed, Session: owner,
			Err: fmt.Errorf("actors/loop: %s failed %d exchanges in a row and stopped; check the cable and reconnect it: %w", d.info.ID, d.errRun, err)})
	}
}

func clamp(x, lo, hi float64) float64 {
	if !(x >= lo) { // also catches NaN
		return lo
	}
	if x > hi {
		return hi
	}
	return x
}

// clampMagnitude limits |f| to maxN; a device with no force output (maxN <=
// 0) gets none.
func clampMagnitude(f hw.Vec3, maxN float64) hw.Vec3 {
	if !(maxN > 0) {
		return hw.Vec3{}
	}
	return f.ClampNorm(maxN)
}
