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
//	           session's effects, passivity observer and controller, clamp
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
//	appliedSeq       the Seq of the command acted on last
//	gravityN         the feed-forward inside out.ForceN.Z this tick
//	errRun           driver errors in a row, since errRunSinceMs
//	out              what goes to the driver this tick
//	fx               the effects (effects.go: the Set, its Renderer)
//	fs               the force stages' state (forceStages: the force gate,
//	                 the passivity controller of the summed output, the
//	                 slew limiter): the Device's own, or its shard block's
//	                 (armControl)
//	ft               the force stages' state the fused tick never reads
//	                 on a quiet tick (forceTally: the passivity observer of
//	                 the session's force, the controller's spells, the
//	                 tallies): the Device's own, or its shard block's
//	                 (armBlock.ctlCold)

import (
	"errors"
	"fmt"
	"math"
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
	d.reg.disarm()
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
	} else {
		// The device applies no force from here on, gravity support
		// included (hw.Driver.Halt): what the state says until the next
		// exchange reports it. A Halt between ticks (a stop's, after the
		// last tick) publishes this state and hands it to the taps
		// (tapHalt); it used to publish the last exchange's force, and a
		// recording of the stop ended on it.
		d.state.ForceN, d.pub.State.ForceN = hw.Vec3{}, hw.Vec3{}
		d.stateGravityN = 0
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
		lapsedNs := nowNs
		if c.Session == owner && c.term == term {
			d.unarmedOwner = 0
			if nowNs > c.DeadlineNs && r.releaseFrom(owner) {
				expired, lapsedNs = owner, c.DeadlineNs
			}
		} else if d.unarmedOwner != owner {
			d.unarmedOwner, d.unarmedSinceNs = owner, nowNs
		} else if nowNs-d.unarmedSinceNs > d.opts.ClaimTimeoutNs && r.releaseFrom(owner) {
			expired = owner
			d.unarmedOwner = 0
		}
		if expired != 0 {
			d.expiries.Add(1)
			ev := Event{Kind: EventLeaseExpired, Session: expired, LapsedNs: lapsedNs}
			if s := d.Effects(); s != nil && s.Session == expired {
				ev.Effects = s
			}
			d.emit(ev)
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
		nowNs <= c.DeadlineNs && d.reg.live(c)
	// A let-go and a new claim between two ticks (a client waiting its
	// turn, the lab node taking the arm from a lapsed gateway) end the
	// control in force as a release seen in its own tick would: the ramp
	// and the wait below hold for them too.
	if valid && d.armed && d.held.term != c.term {
		d.endControl(nowNs)
		if !d.ramping {
			d.endForce(nowNs)
		}
	}
	// A control that arrives while the last one ramps out (another
	// session, or the same one after its lease lapsed) waits for the
	// ramp's end, at most RampNs: the release bound holds, and the new
	// control starts from zero force, as after any release, instead of
	// taking over the slew limiter's memory of the force that is ending.
	if valid && d.ramping {
		if nowNs-d.rampStartNs < d.opts.RampNs {
			valid = false
		} else {
			d.ramping = false
			d.endForce(nowNs)
		}
	}
	if valid {
		if !d.armed {
			// A control taken: the next release is the one that ends it.
			// A release before this store and after the register was read
			// leaves no stamp, and the ramp counts from the last tick
			// then: a gap early at most, never late.
			d.reg.releasedNs.Store(0)
		}
		if !d.armed || d.held.version != c.version {
			d.held = *c
		}
		d.armed, d.ramping, d.halted = true, false, false
		d.appliedSeq = c.Seq
		d.shape(&d.held, 1, g, nowNs)
		return
	}
	if d.armed {
		d.endControl(nowNs)
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

// endControl ends the control in force: a force (or effects, or
// navigation) ramps out from when the control ended (below).
func (d *Device) endControl(nowNs int64) {
	d.armed = false
	if m := d.held.Cmd.Mode; m == hw.ModeForce || m == hw.ModeTorque || d.idleRenders(&d.held) {
		// The ramp starts when the control ended, not at the tick that
		// noticed it: a tick that woke late (a busy CPU) shortens the
		// ramp instead of pushing the zero past ReleaseBoundNs. Past it
		// by a whole ramp, the force drops to zero at once: the bound on
		// the release outranks the smoothness of it. The control ended
		// at the first of its ends: a lapse at the deadline of the
		// session's latest command in this term, applied or not (a
		// command written and lapsed between two ticks); a let-go (and a
		// new claim after one) when the register stamped its release,
		// which came after the last tick. From there the ramp is whole
		// and the bound holds. A let-go before a deadline that also
		// passed before this tick ends at the let-go: ramped from the
		// deadline, a lab node's force (its lease on the gateway's last
		// command ending tens of ms after the gateway let go) was still
		// on 50 ms after the let-go. Any other end (a halt, a release
		// with no stamp) counts from the last tick, which applied the
		// control: at most a gap early, so the bound holds however late
		// this tick woke.
		d.ramping, d.rampStartNs = true, nowNs
		if dl := d.held.DeadlineNs; dl < d.rampStartNs {
			d.rampStartNs = dl
		}
		if c := &d.cmd; c.Session == d.held.Session && c.term == d.held.term && c.DeadlineNs < d.rampStartNs {
			d.rampStartNs = c.DeadlineNs
		}
		if d.tickDtNs > 0 {
			lastNs := nowNs - d.tickDtNs
			if r := d.reg.releasedNs.Load(); r >= lastNs && r <= nowNs && r <= d.rampStartNs {
				d.rampStartNs = r
			} else if d.rampStartNs == nowNs {
				d.rampStartNs = lastNs
			}
		}
	}
}

// endForce forgets the commanded force's history when no control holds
// the output: effects pause, the observer and controller start from zero
// energy, the slew limiter from zero force.
func (d *Device) endForce(nowNs int64) {
	d.pauseNavigation(nowNs)
	d.pauseEffects(nowNs)
	d.forgetForce()
}

// forgetForce starts the force stages over: the slew limiter from zero
// force, the observer and the controller from zero energy (their figures
// say so at once). A control that ends, and one that leaves force for
// position, angle, torque or no output, forgets: the next force starts
// from zero, not from a force nobody commands any more.
func (d *Device) forgetForce() {
	fs := d.fs
	ft := d.ft
	if fs.slewN == (hw.Vec3{}) && fs.pc == (passivity.Controller{}) && (ft == nil || // no tally: at rest (Device.tally)
		ft.spell == (passivity.Spell{Spells: ft.spell.Spells}) && ft.sessionObs == (passivity.Observer{}) && ft.navJ == 0) {
		return
	}
	ft = d.tally()
	fs.slewN = hw.Vec3{}
	fs.pc.Reset(&ft.spell)
	ft.sessionObs.Reset()
	ft.navJ = 0
	d.output.store(fs, d.ft, d.fx.Load(), true)
}

// shape turns a command into the driver's output. A force: the session's
// force less its damping, through the force gate, × force scale; plus the
// session's effects (× force scale); through the passivity controller;
// clamped; slew-limited; × the ramp factor (forceStages.force). A command
// with no output (ModeIdle) whose session has effects is a force of zero
// plus them, and so is one whose session navigates.
func (d *Device) shape(c *Command, ramp float64, g *Globals, nowNs int64) {
	out := &d.out
	mode := c.Cmd.Mode
	if mode == hw.ModeIdle && d.idleRenders(c) {
		mode = hw.ModeForce
	}
	*out = hw.Command{Mode: mode}
	if mode != hw.ModeForce {
		// Only a force renders navigation and effects: a session that
		// takes its arm into position, angle or torque control stops its
		// workspace (the velocity reported with it), and its effects pause
		// as after a lapse (their report says so; walls forget their
		// contacts): both fade in again when force control returns, and a
		// wall the servo took the cursor behind lets it out.
		if p := c.Params; p != nil && p.Navigation != nil && d.remoteNav == nil {
			p.Navigation.stop(nowNs)
		}
		d.pauseEffects(nowNs)
		d.forgetForce()
	}
	switch mode {
	case hw.ModeForce:
		var in forceInputs
		var cmd commandInputs
		d.forceInputs(&in, &cmd, c, g)
		out.ForceN = d.finishForce(&in, &cmd, ramp, nowNs)
	case hw.ModeTorque:
		t := c.Cmd.TorquesNmm
		k := clamp(g.ForceScale, 0, 1) * ramp
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

// A force's stages keep what the fused tick of a shard's fast path reads
// every tick (forceStages, forceInputs) apart from what it never reads
// (forceTally, commandInputs): on a shard the first two are the block's
// armControl, 256 bytes streamed each tick, the others its ctlCold, read
// by the general path alone (a command with a force of its own or
// navigation, the full step), on the ticks that store the output figures
// and on those the passivity controller acts. At 10,000 arms the pass is
// bound by the bytes it brings from memory
// (docs/investigations/loop-tick-cost.md, streams22 and bytes22).

// forceStages is the state of the stages a commanded force passes (the
// force gate, the passivity controller's energy, the slew limiter, the
// output figures' tick count) that the fused tick reads. A Device holds
// its own; a simulated arm on a shard keeps it in its block (armControl),
// where the shard's fast path for controlled arms steps it with the same
// functions as the full step.
type forceStages struct {
	gate     forceGate
	pc       passivity.Controller // its Spell is forceTally's
	slewN    hw.Vec3              // the force before the ramp last tick (slew limit)
	outTicks uint8                // ticks since the output figures were last stored
	readSeen bool                 // someone read them at store's last look
	// The shard's fast path's own (armControl; Device.fillControl sets
	// them), in the word the two above leave, so that an armControl is
	// 256 bytes, 4 whole cache lines (armBlock.ctl). A Device's own stages
	// leave them unused.
	//
	// gravity: the gravity feed-forward (Device.addGravity), when gravity
	// says the device gets one. fused: the fused tick runs: the command's
	// inputs let it (fusable) and the session observer holds +0 (see
	// forceStages.fuse).
	// periodNs is the device's PeriodNs (at most a second: 32 bits).
	gravity  bool
	fused    bool
	periodNs int32
}

// forceTally is the rest of a force's stages' state: what the fused tick
// never reads on a tick the passivity controller does not act (see
// forceStages). A Device holds its own; an arm on a shard keeps it in its
// block's controlColds (armBlock.ctlCold), once it needed one
// (Device.tally).
type forceTally struct {
	// sessionObs is the passivity observer of the session's own force: a
	// command the fused tick runs has none, and its observer holds +0
	// (forceStages.fused says so).
	sessionObs passivity.Observer
	// spell is the passivity controller's (forceStages.pc) account of its
	// spells of action, read on the ticks it acts. A step that counts a
	// spell more is the one EventPassivitySustained is due on.
	spell passivity.Spell
	// navJ is the navigation's energy since the control began (its
	// observer's held force is in the NavigationTrack: an idle arm holds a
	// float here, not a whole observer).
	navJ float64
}

// forceInputs are what a force command's stages read besides the arm's
// state, the stages' own and commandInputs: fixed while the same command
// holds under the same Globals and effect stage.
type forceInputs struct {
	scale   float64 // the force scale, 0..1
	limitN  float64 // the clamp: MaxForceN or a lower ForceClampN
	slewNps float64 // 0: no slew limit
	pass    passivity.Options
	fx      *effectStage // nil: no effects
}

// commandInputs are the inputs that come from the command alone, which
// the fused tick never reads (a command it runs has no force of its own
// and no navigation: Device.fillControl decides that once).
type commandInputs struct {
	session uint64  // the command's
	params  *Params // the command's (never nil)
	forceN  hw.Vec3 // the command's force: zero unless a finite ModeForce
	// none: the command adds no force of its own (forceN +0 on every
	// axis, no damping), as an engine's that only declares effects.
	none bool
	nav  *Navigation // the command's navigation, nil: none or rendered elsewhere (RemoteNavigation)
}

// controlCold is the part of an arm's control on a shard that the fused
// tick never reads on a quiet tick, two 64-byte lines (armBlock.ctlCold,
// allocated on the block's first control).
type controlCold struct {
	tally forceTally
	cmd   commandInputs
}

// forceInputs fills in in and cmd for command c under g.
func (d *Device) forceInputs(in *forceInputs, cmd *commandInputs, c *Command, g *Globals) {
	cmd.params = c.Params
	if cmd.params == nil {
		cmd.params = &defaultParams
	}
	cmd.forceN = c.Cmd.ForceN
	if !cmd.forceN.Finite() || c.Cmd.Mode != hw.ModeForce {
		cmd.forceN = hw.Vec3{}
	}
	cmd.none = math.Float64bits(cmd.forceN.X)|math.Float64bits(cmd.forceN.Y)|math.Float64bits(cmd.forceN.Z) == 0 &&
		cmd.params.Damping == [3][3]float64{}
	cmd.session = c.Session
	in.scale = clamp(g.ForceScale, 0, 1)
	in.limitN = d.maxForceN
	if g.ForceClampN > 0 && g.ForceClampN < in.limitN {
		in.limitN = g.ForceClampN
	}
	in.slewNps = g.ForceSlewNps
	in.pass = g.Passivity
	in.fx = nil
	if d.remoteFx == nil { // rendered where the device is (RemoteEffects)
		in.fx = d.fx.Load()
	}
	cmd.nav = cmd.params.Navigation
	if d.remoteNav != nil {
		d.remoteNav.ForwardNavigation(c.Session, cmd.nav)
		cmd.nav = nil
	}
}

// finishForce is a force command's output this tick on d (see
// forceStages.force), with the event and figures that go with it.
func (d *Device) finishForce(in *forceInputs, cmd *commandInputs, ramp float64, nowNs int64) hw.Vec3 {
	f, sustained := d.fs.force(in, cmd, d.tally(), d.state.PositionM, d.state.VelocityMps, ramp, d.ramping, nowNs, d.tickDtNs)
	if sustained {
		// The figures first: the event's reader takes its duration from them.
		d.output.store(d.fs, d.ft, in.fx, true)
		d.emit(Event{Kind: EventPassivitySustained, Session: cmd.session})
	}
	d.output.store(d.fs, d.ft, in.fx, false)
	return f
}

// force is the output of a force command this tick, from the arm's last
// position and velocity, dtNs after the last tick: the command's force
// less its damping, through the force gate, × the force scale; plus the
// session's effects and navigation (× the force scale); the passivity
// observer counts each source's energy and its controller adds damping if
// the output turned active; then the clamp, the slew limit and the ramp. sustained
// says the controller's action just passed a second
// (EventPassivitySustained is due). Without effects, with the controller
// off and no slew limit, it is the clamp and the ramp alone. A shard's
// fast path runs it written out for a command with no force of its own
// (fused.go, controlStepFx): a change here goes there too, and
// TestFusedTickStepsAsTheGeneralPath fails until it does.
func (fs *forceStages) force(in *forceInputs, cmd *commandInputs, ft *forceTally, pos, v hw.Vec3, ramp float64, rampingOut bool, nowNs, dtNs int64) (f hw.Vec3, sustained bool) {
	f = cmd.forceN
	raw := v // the effects pause on a bad reading
	if !v.Finite() {
		v = hw.Vec3{}
	}
	// The command's damping acts on a velocity an arm can reach only: on
	// one beyond passivity.MaxSpeedMps (a bad frame) it adds nothing, as
	// the effects' damping (effect.Renderer.Render); −D·v_bad, held by the
	// session's observer, counted its work over the next tick.
	dv := v
	if dv.Dot(dv) > passivity.MaxSpeedMps*passivity.MaxSpeedMps {
		dv = hw.Vec3{}
	}
	// A command with no force of its own (effects only) yields +0 here
	// whatever the gate and the scale (+0 less +0 or −0 damping, times a
	// finite k ≥ 0), and its observer, holding +0 too, counts no work: the
	// stage is skipped, bit for bit the same, once the observer holds +0.
	if !cmd.none || ft.sessionObs.Holds() {
		D := &cmd.params.Damping
		f.X -= D[0][0]*dv.X + D[0][1]*dv.Y + D[0][2]*dv.Z
		f.Y -= D[1][0]*dv.X + D[1][1]*dv.Y + D[1][2]*dv.Z
		f.Z -= D[2][0]*dv.X + D[2][1]*dv.Y + D[2][2]*dv.Z
		k := (1 - fs.gate.attenuation(cmd.params.ForceGateGain)) * in.scale
		f = hw.Vec3{X: f.X * k, Y: f.Y * k, Z: f.Z * k}
		ft.sessionObs.Add(f, v, dtNs)
	}
	// guarded: the part of the output passive by design, which the
	// controller keeps passive in its default scope (passivity.Scope).
	var guarded hw.Vec3
	if in.fx != nil {
		fx, active := in.fx.render(cmd.session, pos, raw, nowNs, dtNs, in.scale, rampingOut)
		f, guarded = f.Add(fx), fx.Sub(active)
	}
	if n := cmd.nav; n != nil {
		nav := n.render(pos, raw, nowNs, dtNs, in.scale, ramp)
		ft.navJ += n.Track.observe(nav, v, dtNs)
		f, guarded = f.Add(nav), guarded.Add(nav)
	}
	spells := ft.spell.Spells
	f = fs.pc.StepSources(f, guarded, v, nowNs, dtNs, &in.pass, &ft.spell)
	out := f
	sustained = ft.spell.Spells != spells
	f = clampMagnitude(f, in.limitN)
	if s := in.slewNps; s > 0 {
		// From the last force within today's clamp: a clamp lowered under
		// the force applied bounds the output at once (a step down, which
		// is always safe), not at the slew limit's pace.
		from := clampMagnitude(fs.slewN, in.limitN)
		f = slew(from, f, s*float64(dtNs)*1e-9)
		if rampingOut {
			// A force still climbing under the slew limit when its
			// control ended climbs no further: the client went quiet (or
			// let go), and the ramp winds down the force it had, not
			// one that goes on arriving (0.4 N at a lapse rose to 1 N
			// under the ramp at 200 N/s).
			f = clampMagnitude(f, from.Norm())
		}
	}
	fs.slewN = f
	f = hw.Vec3{X: f.X * ramp, Y: f.Y * ramp, Z: f.Z * ramp}
	fs.pc.AppliedSources(f, out)
	return f, sustained
}

// slew moves from toward to by at most maxStepN.
func slew(from, to hw.Vec3, maxStepN float64) hw.Vec3 {
	step := to.Sub(from)
	// A step well inside the limit (a steady force, a slow change: most
	// ticks) is to itself, without the square root: a squared length
	// under the limit's square less a margin far above the rounding
	// errors of either side has a root under the limit, so the result is
	// the same bits as slewNorm's (TestSlewFastPathIsExact).
	if step.Dot(step) < maxStepN*maxStepN*slewSureInside {
		return to
	}
	return slewNorm(from, to, step, maxStepN)
}

// slewSureInside is the margin of slew's test without the root: 1e-9
// below 1, where rounding moves a square by 1e-16.
const slewSureInside = 1 - 1e-9

// slewNorm is slew by the step's length.
func slewNorm(from, to, step hw.Vec3, maxStepN float64) hw.Vec3 {
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
	ff := d.massKg * hw.GravityMps2 * clamp(s.GravityScale, 0, hw.MaxGravityScale)
	d.out.ForceN = withGravity(d.out.ForceN, ff, d.maxForceN)
	d.gravityN = ff
}

// withGravity is force f clamped to the device's maxN with the
// feed-forward ffN added upwards: the limit is the client's, the support
// comes on top (hw.ActuatorLimitN), as real firmware adds its own after
// the host's clamp.
func withGravity(f hw.Vec3, ffN, maxN float64) hw.Vec3 {
	f = clampMagnitude(f, maxN)
	f.Z += ffN
	return f
}

// driverError halts the driver after a failed exchange, disarms the output
// (re-arming needs a new Write) and fails the device after MaxErrors in a
// row lasting FailAfterNs, or at once when the driver says it is gone
// (hw.ErrGone).
func (d *Device) driverError(err error, owner uint64) {
	d.errors.Add(1)
	d.errRun++
	nowMs := uint32(d.lastNowNs / int64(time.Millisecond))
	if d.errRun == 1 {
		d.errRunSinceMs = nowMs
	}
	spanNs := int64(nowMs-d.errRunSinceMs) * int64(time.Millisecond)
	_ = d.drv.Halt() // best effort: the device may be gone; the error is the exchange's
	d.reg.disarm()
	d.armed, d.ramping = false, false
	d.out = hw.Command{}
	d.endForce(d.lastNowNs)
	if d.errRun == 1 {
		d.emit(Event{Kind: EventDriverError, Session: owner,
			Err: fmt.Errorf("actors/loop: exchange with %s failed, output halted: %w", d.info.ID, err)})
	}
	if d.failed.Load() {
		return
	}
	switch {
	case errors.Is(err, hw.ErrGone):
		d.failed.Store(true)
		d.emit(Event{Kind: EventFailed, Session: owner,
			Err: fmt.Errorf("actors/loop: %s is gone and stopped: %w", d.info.ID, err)})
	case d.errRun >= d.opts.MaxErrors && spanNs >= d.opts.FailAfterNs:
		d.failed.Store(true)
		d.emit(Event{Kind: EventFailed, Session: owner,
			Err: fmt.Errorf("actors/loop: %s failed %d exchanges in a row over %v and stopped; check the cable and reconnect it: %w",
				d.info.ID, d.errRun, time.Duration(spanNs), err)})
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
