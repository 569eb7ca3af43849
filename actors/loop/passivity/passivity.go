// Package passivity is the time-domain passivity observer and controller
// (Hannaford and Ryu, "Time-domain passivity control of haptic
// interfaces", IEEE Trans. Robotics and Automation 18(1), 2002) that the
// loop runs on every arm's output. It is pure and allocation-free.
//
// Sign convention: energies are what the rendered environment absorbed
// from the arm, E = −Σ F·v·dt, with F the force the device held over a
// tick and v the velocity reported at its end (the force sent on one tick
// and the velocity read on the next: the work that force did). A passive source (a damper, a
// spring the hand compresses) keeps E ≥ 0; E < 0 means the source drove
// the arm with energy it never took from it: a stale or delayed force, a
// negative damper, a wall sampled too slowly.
//
// The controller (impedance form: velocity in, force out) watches the
// energy E of the sources its Scope names: by default (ScopeRendered) those
// the loop renders that are passive by design, so that a client's own force
// and effects meant to drive the arm are left alone; with ScopeOutput the
// summed output, as Hannaford and Ryu's single port. When the energy expected at the end of
// the coming tick, E − F·v·dt, is negative, it adds the damping
// α = −E'/(|v|²·dt) that dissipates exactly that deficit (capped at
// MaxDampingNsPerM), so E stays at zero; while E ≥ 0 it adds nothing
// and the output passes unchanged. The total is capped at ReserveJ, so a
// long passive spell cannot bank an unbounded budget for an active source
// to spend later. It has no floor: a deficit is energy an active source
// put into the arm, and the controller pays all of it back (with a floor at
// −ReserveJ, a field pressing an arm on a wall escaped sustained damping).
//
// A velocity over MaxSpeedMps is a bad reading (a corrupt frame), as a
// non-finite one is: no work is counted over that tick and no damping is
// added on it. Counted, one frame at 100 m/s while a spring holds 5 N
// would put the energy at −0.5 J: seconds of damping a passive arm.
package passivity

import (
	"math"

	"github.com/hapticd/hapticd/hw"
)

// Defaults of Options.
const (
	// DefaultMaxDampingNsPerM caps the added damping: a virtual damper b
	// sampled at T on a handle of mass m is stable only while b < m/T
	// about (0.2 kg at 1 kHz: 200 N·s/m); 40 keeps a wide margin.
	DefaultMaxDampingNsPerM = 40.0
	// DefaultReserveJ caps the energy the observer banks.
	DefaultReserveJ = 0.2
	// SustainedNs is how long the controller must act, with no gap over
	// gapNs, before it counts as acting continuously (an event).
	SustainedNs = int64(1e9)
	// gapNs: the controller acts on ticks apart (E goes negative, is
	// paid back, goes negative again); gaps shorter than this do not end
	// a spell of action.
	gapNs = int64(50e6)
	// minSpeed2 is the speed² under which no damping is added: with the
	// arm still, damping could dissipate nothing and α would blow up.
	minSpeed2 = 1e-8 // (0.1 mm/s)²
	// MaxSpeedMps is the fastest a handle of an arm this service drives
	// (a desktop arm, simulated or Inverse3) can move: a hand's fastest
	// reach is 2 to 3 m/s. A velocity beyond it is a bad reading: the
	// controller and the observers count no work over that tick.
	MaxSpeedMps = 10.0
	maxSpeed2   = MaxSpeedMps * MaxSpeedMps
)

// Scope is which part of the output a Controller keeps passive.
type Scope uint8

const (
	// ScopeRendered keeps passive the sources the caller names as passive
	// by design (StepSources' guarded force: the loop's springs, dampers,
	// friction, walls, limits, shapes, SDF effects and navigation), and
	// leaves out the rest of the output: a client's streamed force and
	// effects that drive the arm on purpose (a field, a vibration) are
	// active by intent, and damping them would fight the application.
	ScopeRendered Scope = iota
	// ScopeOutput keeps the whole output passive, the client's force
	// included: a client that streams a wall it computes itself wants this.
	ScopeOutput
)

var scopeNames = [...]string{"rendered", "output"}

func (s Scope) String() string {
	if int(s) < len(scopeNames) {
		return scopeNames[s]
	}
	return "scope(?)"
}

// ParseScope maps "rendered" or "output" to a Scope.
func ParseScope(name string) (Scope, bool) {
	for i, n := range scopeNames {
		if n == name {
			return Scope(i), true
		}
	}
	return 0, false
}

// Options configure a Controller; zero fields take the defaults.
type Options struct {
	// Enabled turns the controller on; the observer always runs.
	Enabled bool
	// Scope is what the controller keeps passive (StepSources).
	Scope            Scope
	MaxDampingNsPerM float64
	ReserveJ         float64
}

// Controller observes one arm's output energy and, when Enabled, adds
// damping to keep it passive. Its zero value is ready; one goroutine (the
// loop's) uses it.
type Controller struct {
	// EnergyJ is the observed energy of the output, the controller's own
	// dissipation included (capped at ReserveJ).
	EnergyJ float64
	// DampingNsPerM is the damping added on the last tick (0: none).
	DampingNsPerM float64
	// ActiveNs is how long the current spell of action has lasted (0 when
	// the controller is not acting).
	ActiveNs int64
	lastF    hw.Vec3 // the guarded force held since the last tick
}

// Spell is a Controller's account of its spells of action, which its
// quiet tick (Pass: not acting, no spell under way) never reads: apart
// from the Controller, so that a loop stepping thousands of arms keeps
// it out of the cache lines every tick streams. Each Controller has one,
// handed to every Step, StepSources and Reset; its zero value is ready.
type Spell struct {
	// Sustained is true while a spell has lasted over SustainedNs;
	// Spells counts the spells that did (each once).
	Sustained bool
	Spells    uint64

	startNs, lastActNs int64
}

// Step observes the output f (N) at velocity v (m/s) over dtNs and returns
// it, with damping added when Enabled and the energy of the whole output
// went negative (whatever o.Scope says: all of f is guarded). s is the
// controller's Spell.
func (c *Controller) Step(f, v hw.Vec3, nowNs, dtNs int64, o *Options, s *Spell) hw.Vec3 {
	return c.step(f, f, v, nowNs, dtNs, o, s)
}

// StepSources is Step for an output f of which guarded is the part passive
// by design: with o.Scope ScopeRendered the energy counts guarded (and the
// damping the controller adds), with ScopeOutput all of f. The damping is
// added to f either way: it acts on the arm.
func (c *Controller) StepSources(f, guarded, v hw.Vec3, nowNs, dtNs int64, o *Options, s *Spell) hw.Vec3 {
	if o.Scope == ScopeOutput {
		guarded = f
	}
	return c.step(f, guarded, v, nowNs, dtNs, o, s)
}

func (c *Controller) step(f, g, v hw.Vec3, nowNs, dtNs int64, o *Options, s *Spell) hw.Vec3 {
	dtS := float64(dtNs) * 1e-9
	// The work of the force held over the tick that just ended.
	e := c.EnergyAfter(v, dtS)
	c.DampingNsPerM = 0
	if o.Acts(e, g, v, dtS) {
		v2, next := v.Dot(v), e-g.Dot(v)*dtS
		maxB := o.MaxDampingNsPerM
		if maxB <= 0 {
			maxB = DefaultMaxDampingNsPerM
		}
		alpha := min(-next/(v2*dtS), maxB)
		f = f.Sub(v.Scale(alpha))
		g = g.Sub(v.Scale(alpha))
		c.DampingNsPerM = alpha
		c.acted(nowNs, s)
	}
	c.bank(e, g, o)
	if c.ActiveNs > 0 && nowNs-s.lastActNs > gapNs {
		c.ActiveNs, s.Sustained = 0, false
	}
	return f
}

// The controller's tick is step, or, on a tick it does not act with no
// spell under way, EnergyAfter, Acts and Pass: a loop stepping thousands
// of arms takes these three inline (Go inlines none of step), and step
// takes the same three, so both ways give the same bits.

// EnergyAfter is the observed energy with the work of the force held
// over the tick that just ended (velocity v at its end, dtS = dtNs·1e-9
// long) counted, before this tick's action. A velocity over MaxSpeedMps
// counts nothing (a bad reading); a NaN one poisons the sum, and bank
// starts the account over.
func (c *Controller) EnergyAfter(v hw.Vec3, dtS float64) float64 {
	if v.Dot(v) > maxSpeed2 {
		return c.EnergyJ
	}
	return c.EnergyJ - c.lastF.Dot(v)*dtS
}

// Acts says whether the controller adds damping on a tick whose energy is
// e (EnergyAfter) and whose guarded force is g: enabled, the arm moving at
// a speed an arm can reach, and the energy expected at the end of the
// coming tick negative.
func (o *Options) Acts(e float64, g, v hw.Vec3, dtS float64) bool {
	v2 := v.Dot(v)
	return o.Enabled && v2 > minSpeed2 && v2 <= maxSpeed2 && dtS > 0 && e-g.Dot(v)*dtS < 0
}

// Pass is the tick on which the controller does not act (Acts false) and
// no spell of action is under way (ActiveNs 0): what StepSources does
// then, bit for bit, with the output the force as it came. g is the
// guarded force (the whole output in ScopeOutput), e EnergyAfter's.
func (c *Controller) Pass(e float64, g hw.Vec3, o *Options) {
	c.DampingNsPerM = 0
	c.bank(e, g, o)
}

// bank holds g for the next tick's work and banks the energy e, capped
// at the reserve.
func (c *Controller) bank(e float64, g hw.Vec3, o *Options) {
	reserve := o.ReserveJ
	if reserve <= 0 {
		reserve = DefaultReserveJ
	}
	c.lastF = g
	c.EnergyJ = min(e, reserve) // the builtin: math.Min is a call to assembly here, a stall every tick
	if !(c.EnergyJ > -1e12) {   // NaN from a non-finite input: start over
		c.EnergyJ = 0
	}
}

func (c *Controller) acted(nowNs int64, s *Spell) {
	if c.ActiveNs == 0 || nowNs-s.lastActNs > gapNs {
		s.startNs, s.Sustained = nowNs, false
	}
	s.lastActNs = nowNs
	c.ActiveNs = max(nowNs-s.startNs, 1)
	if !s.Sustained && c.ActiveNs > SustainedNs {
		s.Sustained = true
		s.Spells++
	}
}

// Applied tells the controller the force the device got after Step's
// output went through the stages after it (clamp, slew limit, ramp), so
// the next tick counts the work of that force.
func (c *Controller) Applied(f hw.Vec3) { c.lastF = f }

// AppliedSources is Applied after StepSources: out is what StepSources
// returned, f what the device got. Of a guarded part other than the
// output, the fraction of the output that got through (its projection on
// the output) is counted applied: exact for the clamp and the ramp, which
// scale the whole vector. Where the guarded part outweighs the output (the
// client's force cancels it), that fraction means nothing and the guarded
// part is counted whole: the stages changed a small output, so the error
// is small too.
func (c *Controller) AppliedSources(f, out hw.Vec3) {
	switch {
	case f == out:
	case c.lastF == out:
		c.lastF = f
	default:
		if n2 := out.Dot(out); n2 > 0 && n2 >= c.lastF.Dot(c.lastF) {
			c.lastF = c.lastF.Scale(max(0, min(1, f.Dot(out)/n2)))
		}
	}
}

// Reset forgets the energy and the current spell s (control ended);
// s.Spells is kept.
func (c *Controller) Reset(s *Spell) {
	*c = Controller{}
	*s = Spell{Spells: s.Spells}
}

// Observer integrates one source's energy, E −= F·v·dt, with the
// package's convention: F the source's force of the previous tick, v this
// tick's velocity.
type Observer struct {
	EnergyJ float64
	lastF   hw.Vec3
}

// Add counts the work of the previous tick's force at velocity v over
// dtNs, and holds f as the force of the tick to come. A velocity over
// MaxSpeedMps is a bad reading: it counts nothing.
func (o *Observer) Add(f, v hw.Vec3, dtNs int64) {
	if !(v.Dot(v) > maxSpeed2) { // NaN counts, as it always did: the caller sees it
		o.EnergyJ -= o.lastF.Dot(v) * float64(dtNs) * 1e-9
	}
	o.lastF = f
}

// Holds reports whether the observer holds a force other than +0 on
// every axis. While it holds none, Add of a +0 force changes nothing (the
// work of +0 over any finite velocity leaves the energy as it is, bit for
// bit), so a caller may skip it.
func (o *Observer) Holds() bool {
	f := &o.lastF
	return math.Float64bits(f.X)|math.Float64bits(f.Y)|math.Float64bits(f.Z) != 0
}

// Reset zeroes the energy and the held force.
func (o *Observer) Reset() { *o = Observer{} }
