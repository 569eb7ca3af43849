package loop

import (
	"unsafe"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
)

// The fused tick of a controlled arm: the common case of a lab and of the
// capacity runs, a session whose command adds no force of its own (an
// engine that declares effects and renews its lease) with no navigation,
// on a shard's fast path for controlled arms. controlStepFx is
// simArm.controlStep with forceStages.force written out in its body for
// that case: the effect stage, the passivity controller, the clamp, the
// slew limit, the output figures, the gravity feed-forward and the physics
// step, with the same arithmetic, in one function (the force gate's
// filters, last, by their own call: nothing after them holds a vector). Go saves no register across a call, so each of the general
// path's stages (a call each) spilled and reloaded the live vectors, and
// each tested the velocity's finiteness again: with the controller's
// step, which Go does not inline, that glue was about a third of what the
// stages cost beyond the bare loop's physics and effects (perf, 64 arms).
//
// Every stage runs on every tick as before, in the same order where one
// reads another's output. These moves change no bit: the controller's
// quiet tick (not acting, no spell under way) is its Pass, inline, and its
// full step otherwise, as in step itself, and only the full step can
// start a sustained spell; a force inside both the clamp and the slew
// limit (their own tests, done first) passes both unchanged, and
// AppliedSources is called only when one of them changed it (its own
// first case); the force gate's filters run last, from the velocity the
// tick began with, since nothing in the tick reads them (the command's
// force is +0: its gain multiplies nothing), so their chain of dependent
// operations overlaps what follows; finiteness is tested once per
// vector (finite); and the effects report and the output figures are
// stored after the physics step, which changes nothing they read. The
// Set rendered is the one the full step before this path loaded (a new
// one pokes the record). Calls taken rarely stay off the way to the
// physics step: a value live across a call is stored and reloaded on
// every tick, whichever path the tick takes (the loopcost3 round in
// docs/investigations/loop-tick-cost.md).
// The session's force stage is left out exactly where the general path
// leaves it out (a command of +0 and no damping whose observer holds +0);
// any other tick (the observer still holding a force, a command with a
// force, damping or navigation) takes the general path.
// TestFusedTickStepsAsTheGeneralPath holds the two equal bit for bit.

// finite is hw.Vec3.Finite, the same decision on the same sum, tested as
// s−s == 0 (true for every finite s; NaN for ±Inf and NaN): a subtraction
// and a compare where IsNaN and IsInf take an absolute value, a constant
// and two compares, and the fused tick tests two vectors a tick.
// TestFiniteIsVec3Finite holds the two equal.
func finite(v hw.Vec3) bool {
	s := v.X + v.Y + v.Z
	return s-s == 0
}

// fusable says whether the fast path of a controlled arm with inputs in may
// take the fused tick while its session observer holds +0 (see
// controlStepFx): a command with no force of its own and no navigation,
// with effects rendered here or none.
func fusable(cmd *commandInputs) bool {
	return cmd.none && cmd.nav == nil
}

// takesFusedTick is forceStages.fused for an arm on a shard with inputs cmd and
// tally ft: fusable, and its session observer holds +0, so the pass
// decides from armControl alone (the observer is in the block's ctlCold).
// general is Device.generalTick. Only the general path changes the
// observer of an arm on a shard (the fused tick leaves it out: it holds
// +0), so Device.fillControl sets the flag and simArm.controlStep sets it
// once the observer let go of a force.
func takesFusedTick(cmd *commandInputs, ft *forceTally, general bool) bool {
	return fusable(cmd) && !ft.sessionObs.Holds() && !general
}

// controlStepFx is controlStep for an arm whose armControl is fused and
// whose session observer holds +0 (the caller checked both, and the
// lease). Each block below is the general path's stage of the same name;
// a change to one of those must be made here too (the side-by-side test
// fails otherwise).
func (r *simArm) controlStepFx(c *armControl, d *Device, ps *passScratch, timed bool) (moved bool, err error) {
	now, dt := r.tickAt(ps.now, c.fs.periodNs)
	fs := &c.fs
	fs.takeOutputMark(r)
	in := &c.in
	if fs.outputDueNextOnShard() {
		prefetchOutput(uintptr(unsafe.Add(unsafe.Pointer(d), outputAt)))
	}
	pos, v := r.core.Position(), r.core.Velocity()
	vOK := finite(v)

	// forceStages.force from here. The command's own stage (damping, gate,
	// scale, its observer) adds nothing while its observer holds +0 (the
	// caller checked): f is the command's +0.
	raw := v // as read: the effects pause on a bad reading, the gate skips it
	if !vOK {
		v = hw.Vec3{}
	}
	var f, guarded hw.Vec3 // f: in.forceN, +0 on every axis (fusable: none)

	// The effects (effectStage.render), if any. Their report, when due,
	// is published at the end of the tick (report): nothing after the
	// render changes what it reads, and a call here made the tick keep
	// the effects' force in memory across it.
	st := in.fx
	var set *effect.Set
	var report bool
	if st != nil {
		var fx, active hw.Vec3
		// The Set the full step before this path loaded (seen, as
		// armControl.fxSet: the command's session's or none), with the
		// room it needed taken: SetEffects and DropEffects poke the
		// record after publishing a Set, so a new one is the next full
		// step's to load, as the register's commands are. (One published
		// while this pass runs is rendered from the next tick, as one
		// published just after it.)
		set = c.fxSet
		switch {
		case set == nil && st.r.Len() == 0 && !st.rendering:
		case !vOK || !finite(pos):
			st.r.Pause()
			st.rendering = false
		default:
			var ein effect.Input
			ein.NowNs, ein.DtNs = now, dt
			ein.PositionM, ein.VelocityMps = pos, raw
			fx = st.r.Render(set, &ein, in.scale)
			// effectStage.render's decision, as branches: a tick that
			// renders on from the last stores nothing but the count, and
			// one under reportEvery since the last report tests nothing
			// more (the store of rendering and the whole test on every
			// tick cost about 0.8 ns an arm-tick).
			st.ticks++
			switch {
			case !st.rendering:
				st.rendering, report = true, true
			case st.ticks >= reportEvery:
				report = st.ticks >= unreadEvery || st.read.Load()
			}
			active = st.r.ActiveForceN()
		}
		f, guarded = f.Add(fx), fx.Sub(active)
	}

	// The passivity controller, the clamp, the slew limit; the ramp is 1.
	// The controller's quiet tick inline (passivity.Controller.Pass: not
	// acting, no spell under way), else its whole step.
	pc, o := &fs.pc, &in.pass
	g := guarded
	if o.Scope == passivity.ScopeOutput {
		g = f
	}
	dtS := float64(dt) * 1e-9
	var sustained bool
	if e := pc.EnergyAfter(v, dtS); pc.ActiveNs == 0 && !o.Acts(e, g, v, dtS) {
		// Not acting, no spell under way: not sustained either.
		pc.Pass(e, g, o)
	} else {
		sp := &r.controlCold().tally.spell
		spells := sp.Spells
		f = pc.StepSources(f, guarded, v, now, dt, o, sp)
		sustained = sp.Spells != spells
	}
	// The clamp and the slew limit. A force inside both (most ticks) is
	// what clampMagnitude and slew return unchanged, with the same tests
	// (ClampNorm's, slew's without the root), so it passes as it is, and
	// AppliedSources has nothing to do; else each stage in turn.
	lim, slewNps := in.limitN, in.slewNps
	inside := lim > 0 && f.Dot(f) <= lim*lim
	if inside && slewNps > 0 {
		maxStepN := slewNps * float64(dt) * 1e-9
		step := f.Sub(fs.slewN)
		inside = step.Dot(step) < maxStepN*maxStepN*slewSureInside
	}
	if !inside {
		out := f
		if !(lim > 0) { // clampMagnitude
			f = hw.Vec3{}
		} else {
			f = f.ClampNorm(lim)
		}
		if slewNps > 0 {
			maxStepN := slewNps * float64(dt) * 1e-9
			from := clampMagnitude(fs.slewN, lim) // a lowered clamp: see forceStages.force
			step := f.Sub(from)
			if !(step.Dot(step) < maxStepN*maxStepN*slewSureInside) {
				f = slewNorm(from, f, step, maxStepN)
			}
		}
		// × the ramp, 1: x×1 is x.
		if f != out { // AppliedSources' own first case: nothing to do
			fs.pc.AppliedSources(f, out)
		}
	}
	fs.slewN = f

	// controlStep's end: gravity, physics, the event and the output
	// figures (after the physics here: neither reads what it changes, and
	// their calls before it made the tick keep its force in memory).
	if c.fs.gravity { // withGravity, written out: Go would not inline it
		f = clampMagnitude(f, c.maxForceN)
		f.Z += c.ffN
	}
	cmd := &ps.cmd
	cmd.Mode, cmd.ForceN = hw.ModeForce, f
	var startNs int64
	if timed {
		startNs = ps.clock.Now()
	}
	moved, err = r.core.Step(cmd)
	if timed {
		ps.rs.exchange.Record(ps.clock.Now() - startNs)
	}
	// The force gate's filters, from the velocity the tick began with:
	// they run while the command's force is +0, for a later command that
	// reads them, and nothing in this tick reads them, so they run last,
	// where their chain of dependent operations overlaps what follows.
	// The velocity as read (v is zeroed if it was not finite):
	// updateWith skips a bad reading (not finite, or too fast).
	fs.gate.updateWith(raw, ps.gate.forDt(dt))
	if report {
		st.publish(now, set)
	}
	if sustained {
		d.output.store(fs, &r.controlCold().tally, in.fx, true)
		d.emit(Event{Kind: EventPassivitySustained, Session: r.controlCold().cmd.session})
	}
	if fs.outputDueOnShard() {
		(*outputFigures)(unsafe.Add(unsafe.Pointer(d), outputAt)).storeDue(fs, &r.controlCold().tally, in.fx, false)
	}

	if err != nil {
		d.controlError(r, err, f)
	}
	return moved, err
}
