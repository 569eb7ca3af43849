package sim

import (
	"errors"
	"math"

	"github.com/hapticd/hapticd/hw"
)

// Physical constants of the simulated arm. They are what Info reports and
// what the tests check against. Mass, force limit and workspace are hw's
// nominal arm figures, which the serial arm driver reports too.
const (
	// EffectiveMassKg is the end effector's apparent mass.
	EffectiveMassKg = hw.ArmEffectiveMassKg
	// GravityMps2 is the gravitational acceleration the physics applies:
	// hw's, which the loop's compensation uses too.
	GravityMps2 = hw.GravityMps2
	// MaxForceN is the largest actuator force magnitude; larger commands
	// are clamped inside the driver as a last line of safety.
	MaxForceN = hw.ArmMaxForceN
	// WorkspaceRadiusM is the radius of the workspace sphere; a stiff soft
	// boundary pushes the cursor back inside it.
	WorkspaceRadiusM = hw.ArmWorkspaceRadiusM
	// EndStopMarginM is how far past the workspace sphere the linkage's
	// mechanical end stop lies: the soft boundary yields a little under a
	// large force, the end stop does not.
	EndStopMarginM = 0.005
	// MaxServoSpeedMps caps the end-effector speed in position and angle
	// modes.
	MaxServoSpeedMps = 0.5
	// MaxJointTorqueNmm is each joint motor's torque limit in torque mode.
	MaxJointTorqueNmm = 3000.0
	// DefaultPeriodS is the step used when ArmOptions or GripOptions carry
	// no valid period: outside 0 < PeriodS ≤ MaxPeriodS, or not finite.
	// It is hw's, the period drivers assume.
	DefaultPeriodS = hw.DefaultPeriodS
	// MaxPeriodS bounds the step, so one Exchange costs at most a thousand
	// physics sub-steps.
	MaxPeriodS = 1.0
)

// Tuning of the physics. Gains are chosen so that semi-implicit Euler at
// maxSubstepS stays stable and free of ringing: at the wall ω·h ≈ 0.3 and
// b·h/m = 0.6, which gives real eigenvalues inside the unit circle.
const (
	maxSubstepS   = 0.001
	viscousNspm   = 1.0   // viscous friction, N per m/s
	staticN       = 0.15  // Coulomb friction holding a resting cursor
	kineticN      = 0.1   // Coulomb friction on a moving cursor
	restSpeedMps  = 1e-6  // below this the cursor is at rest (static friction applies)
	boundaryNpm   = 20000 // boundary spring stiffness
	boundaryNspm  = 120   // boundary damper, about critical for the mass
	servoGainPerS = 12    // desired speed per metre of position error
	servoNspm     = 30    // velocity-loop gain of the servo
	handNpm       = 200   // the scripted hand's grip stiffness
	handNspm      = 4     // the scripted hand's damping
	circleRadiusM = 0.04
	circleHz      = 0.5
	walkShare     = 0.7 // random-walk targets lie within this share of the workspace radius of the centre (0.07 m on an Inverse3)
	walkSegmentS  = 1.5
)

// ErrClosed is returned by every call on a device after its Close.
var ErrClosed = errors.New("hw/sim: device is closed; create a new one with NewArm or NewGrip")

// errNilExchange is returned when Exchange gets a nil command or state.
var errNilExchange = errors.New("hw/sim: exchange needs a non-nil command and state; pass caller-owned values")

// ArmOptions configure a simulated arm.
type ArmOptions struct {
	// Index is the arm's 0-based index among simulated arms; its id and
	// UUID derive from it, so they are stable across restarts.
	Index int
	// PeriodS is the fixed step in seconds (the loop period, e.g. 0.001);
	// each Exchange advances simulated time by exactly this much. Valid:
	// 0 < PeriodS ≤ MaxPeriodS; anything else means DefaultPeriodS.
	PeriodS float64
	// Motion is the scripted hand on the handle.
	Motion Motion
	// Seed makes MotionRandom reproducible; arms with the same seed still
	// move differently because the index is mixed in.
	Seed int64
	// Family is the product simulated (families.go): its id range, force
	// limit and workspace. Zero means FamilyInverse3.
	Family Family
}

// Arm is a simulated 3-DOF force-feedback arm: a point-mass end effector
// with friction, gravity and a soft workspace boundary. It implements
// hw.Driver and hw.Configurer. Like every driver it is used by one goroutine
// at a time.
type Arm struct {
	// c is the physics state the arm steps: own, or where MoveCore put it
	// (a scheduler shard's array of arms, so one linear pass steps them).
	c   *ArmCore
	own ArmCore

	// Cold: read on a command change, Info.
	periodS float64
	info    hw.Info
}

// ArmCore is everything one physics step of a simulated arm reads and
// writes, and nothing else, so an array of them is the tightest layout a
// loop over thousands of arms can step: the service's scheduler shards and
// `hapticd baseline-arms` both step ArmCores with Step, the one
// implementation of the physics. Get one from an Arm with MoveCore.
type ArmCore struct {
	// Hot: what every step reads and writes, first and together.
	pos      hw.Vec3
	vel      hw.Vec3
	forceN   hw.Vec3 // actuator force applied in the last step
	tS       float64
	stepS    float64
	substeps int
	motion   Motion
	closed   bool
	// reported is set once Step ran; until then it reports even a step
	// that changed nothing.
	reported bool
	settings hw.Settings
	phaseRad float64 // circle phase, spread by index
	centerM  hw.Vec3 // Info's workspace centre, kept beside the state
	// The family's figures (families.go), kept beside the state.
	radiusM   float64 // workspace sphere radius
	maxForceN float64 // actuator force limit
	// A random walk's state, read every step of MotionRandom.
	rng  splitMix
	walk smoothWalk
	// ext holds the physics of an arm built with other than
	// DefaultPhysics, and its hand model; nil for the default arm, whose
	// constants the step derives from stepS, so thousands of default arms
	// carry one pointer each rather than a copy of the constants.
	ext *armExt
}

var (
	_ hw.Driver     = (*Arm)(nil)
	_ hw.Configurer = (*Arm)(nil)
)

// NewArm returns a simulated arm resting at the workspace centre, with the
// default settings (right-handed, torque scaling on, gravity compensation on
// at scale 1: the compensation itself is the host loop's job, see doc.go)
// and DefaultPhysics.
func NewArm(o ArmOptions) *Arm { return newArm(o, DefaultPhysics()) }

// NewArmWithPhysics is NewArm with the mechanical constants p (start from
// DefaultPhysics or Inverse3Physics). It refuses invalid constants with
// the reason (Physics.Validate).
func NewArmWithPhysics(o ArmOptions, p Physics) (*Arm, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return newArm(o, p), nil
}

func newArm(o ArmOptions, p Physics) *Arm {
	period := validPeriod(o.PeriodS)
	sub := p.MaxSubstepS
	if sub == 0 {
		sub = maxSubstepS
		if p.Hand.Model {
			sub = handSubstepS
		}
	}
	sub = max(min(sub, stableSubstepS(p)), minSubstepS) // Validate refused a grip that needs less
	n := int(math.Ceil(period/sub - 1e-9))
	if n < 1 {
		n = 1
	}
	spec := armFamily(o.Family)
	a := &Arm{
		info: hw.Info{
			Kind:                    hw.KindArm,
			ID:                      ArmID(idIndex(spec, o.Index)),
			UUID:                    ArmUUID(idIndex(spec, o.Index)),
			Model:                   spec.Model,
			FirmwareVersion:         spec.FirmwareVersion,
			HardwareVersion:         spec.HardwareVersion,
			Simulated:               true,
			MaxForceN:               spec.MaxForceN,
			WorkspaceCenterM:        spec.WorkspaceCenterM,
			EffectiveMassKg:         p.MassKg,
			HostGravityCompensation: true,
		},
		periodS: period,
		own: ArmCore{
			substeps: n,
			stepS:    period / float64(n),
			motion:   o.Motion,
			// By the index in the kind's id space, so arms of two families
			// move apart. The golden angle spreads a thousand arms' circles
			// evenly in phase.
			rng:       newSplitMix(o.Seed, uint64(idIndex(spec, o.Index))<<1|0),
			phaseRad:  math.Mod(float64(idIndex(spec, o.Index))*2.399963229728653, 2*math.Pi),
			settings:  hw.Settings{TorqueScaling: true, GravityCompensation: true, GravityScale: 1},
			pos:       spec.WorkspaceCenterM,
			centerM:   spec.WorkspaceCenterM,
			radiusM:   spec.WorkspaceRadiusM,
			maxForceN: spec.MaxForceN,
		},
	}
	if p != DefaultPhysics() {
		a.own.ext = newArmExt(p, period/float64(n), a.own.pos)
	}
	a.c = &a.own
	if o.Motion == MotionRandom {
		c := spec.WorkspaceCenterM
		start := [3]float64{c.X, c.Y, c.Z}
		a.own.walk = smoothWalk{from: start, to: start, durS: 0}
	}
	return a
}

// MoveCore moves the arm's physics state to dst (nil: back into the arm)
// and steps it there from now on. A loop stepping many arms keeps their
// cores side by side this way. The caller keeps dst alive and leaves it
// alone, except through ArmCore's methods from the goroutine that drives
// the arm, until it moves the core again.
func (a *Arm) MoveCore(dst *ArmCore) {
	if dst == nil {
		dst = &a.own
	}
	if dst != a.c {
		*dst = *a.c
		a.c = dst
	}
}

func validPeriod(p float64) float64 {
	if !(p > 0 && p <= MaxPeriodS) {
		return DefaultPeriodS
	}
	return p
}

// Info returns the arm's identity and limits.
func (a *Arm) Info() hw.Info { return a.info }

// Settings returns the settings last given to Configure. Like Configure,
// call it from the goroutine that drives the arm.
func (a *Arm) Settings() hw.Settings { return a.c.settings }

// Configure stores s. Handedness changes the kinematics' base angle
// convention and torque scaling changes how ModeTorque limits joint
// torques. The gravity fields are recorded only: the simulated arm has no
// firmware, so the host loop adds the compensating force
// (Info.HostGravityCompensation).
func (a *Arm) Configure(s hw.Settings) error {
	if a.c.closed {
		return ErrClosed
	}
	if math.IsNaN(s.GravityScale) || s.GravityScale < 0 || s.GravityScale > 2 {
		return errors.New("hw/sim: gravity scale must be within 0..2; pass a value in range")
	}
	a.c.settings = s
	return nil
}

// Exchange applies cmd for one period (PeriodS of simulated time) and fills
// st with the state after it. It never allocates. Non-finite command values
// produce no actuator force.
func (a *Arm) Exchange(cmd *hw.Command, st *hw.State) error {
	if _, err := a.ExchangeCore(cmd, st); err != nil {
		return err
	}
	*st = hw.State{}
	a.c.Fill(st) // also when the arm rested: st may not be what the last call filled
	DeriveArmState(st, a.c.settings.LeftHanded)
	return nil
}

// ExchangeCore is Exchange without the derived fields (joint angles, joint
// speeds, body orientation), which only clients read: it steps the physics
// and, when the step changed anything, fills st's position, velocity,
// force and status, leaving its other fields as they were. moved false
// means the arm rested (nothing changed) and st was not written: the state
// the previous call filled still holds. DeriveState completes a state when a reader asks for
// it. It never allocates.
func (a *Arm) ExchangeCore(cmd *hw.Command, st *hw.State) (moved bool, err error) {
	if st == nil {
		return false, errNilExchange
	}
	if moved, err = a.c.Step(cmd); moved {
		a.c.Fill(st)
	}
	return moved, err
}

// Step applies cmd for one period, as Exchange does, to the state alone:
// moved false means nothing changed (the arm rests). Read the state with
// Fill or Position, Velocity and Force. It never allocates.
func (c *ArmCore) Step(cmd *hw.Command) (moved bool, err error) {
	if c.closed {
		return false, ErrClosed
	}
	if cmd == nil {
		return false, errNilExchange
	}
	// Per-tick actuator inputs: a fixed force, or a servo target that is
	// re-evaluated every sub-step.
	var fixedN, targetM hw.Vec3
	servo := false
	switch cmd.Mode {
	case hw.ModeForce:
		if cmd.ForceN.Finite() {
			fixedN = cmd.ForceN
		}
	case hw.ModeTorque:
		if cmd.TorquesNmm.Finite() {
			fixedN = c.torqueForce(cmd.TorquesNmm)
		}
	case hw.ModePosition:
		if cmd.PositionM.Finite() {
			targetM, servo = cmd.PositionM, true
		}
	case hw.ModeAngle:
		if cmd.AnglesDeg.Finite() {
			targetM, servo = ForwardKinematics(cmd.AnglesDeg, c.settings.LeftHanded), true
		}
	}
	k := c.coefficients()
	limitN := c.maxForceN
	if cmd.Mode == hw.ModeForce {
		// The host's gravity support rides above the client's limit, as
		// real firmware's does.
		limitN = hw.ActuatorLimitN(c.maxForceN, k.massKg)
	}
	fixedN = fixedN.ClampNorm(limitN)

	pos, vel, force := c.pos, c.vel, c.forceN
	if c.hasHand() {
		c.reported = false // the hand may move while the handle sticks: always report
	}
	for i := 0; i < c.substeps; i++ {
		actN := fixedN
		if servo {
			actN = c.servoForce(targetM, k.massKg)
		}
		c.step(actN, &k)
	}
	if c.reported && c.pos == pos && c.vel == vel && c.forceN == force {
		return false, nil
	}
	c.reported = true
	return true, nil
}

// Position, Velocity and Force are the state after the last step: the
// end effector's position (m) as the encoder reads it (quantized to
// Physics.EncoderStepM), velocity (m/s) and the actuator force (N).
func (c *ArmCore) Position() hw.Vec3 {
	if c.ext == nil {
		return c.pos
	}
	return quantize(c.pos, c.ext.encoderM)
}

// Velocity is the end effector's velocity after the last step, m/s.
func (c *ArmCore) Velocity() hw.Vec3 { return c.vel }

// Force is the actuator force applied in the last step, N.
func (c *ArmCore) Force() hw.Vec3 { return c.forceN }

// TimeInvariant is true when the arm's physics does not depend on time: no
// scripted hand moves it (MotionNone). A step that changed nothing then
// changes nothing again under the same command.
func (a *Arm) TimeInvariant() bool { return a.c.TimeInvariant() }

// TimeInvariant is Arm.TimeInvariant. A hand model is never
// time-invariant: its mass may move while static friction holds the handle.
func (c *ArmCore) TimeInvariant() bool { return c.motion == MotionNone && !c.hasHand() }

// DeriveState completes a state ExchangeCore filled: joint angles by
// inverse kinematics, joint speeds by J⁻¹·v and the body turned by the base
// yaw, for the handedness given. It reads only its arguments, so any
// goroutine may call it, on any copy of the state.
func (a *Arm) DeriveState(st *hw.State, leftHanded bool) { DeriveArmState(st, leftHanded) }

// DeriveArmState is DeriveState as a function.
func DeriveArmState(st *hw.State, leftHanded bool) {
	ps, _ := solvePose(st.PositionM, leftHanded)
	w, ok := ps.jointRatesRad(st.VelocityMps)
	if !ok {
		w = [3]float64{}
	}
	st.AnglesDeg = ps.anglesDeg
	st.AngularVelocityDps = hw.Angles3{A0: w[0] * degPerRad, A1: w[1] * degPerRad, A2: w[2] * degPerRad}
	st.BodyOrientation = ps.bodyOrientation()
}

// LeftHanded reports the handedness the arm was last configured with: what
// DeriveState needs for the states ExchangeCore fills now. Call it from the
// goroutine that drives the arm.
func (a *Arm) LeftHanded() bool { return a.c.settings.LeftHanded }

// LeftHanded is Arm.LeftHanded.
func (c *ArmCore) LeftHanded() bool { return c.settings.LeftHanded }

// torqueForce maps joint torques to the end-effector force F with Jᵀ·F = τ
// at the current pose. Torque scaling on shrinks all torques together when
// one exceeds its limit (keeping the direction); off clips each joint alone.
func (c *ArmCore) torqueForce(tNmm hw.Angles3) hw.Vec3 {
	t := [3]float64{tNmm.A0, tNmm.A1, tNmm.A2}
	peak := math.Max(math.Abs(t[0]), math.Max(math.Abs(t[1]), math.Abs(t[2])))
	if peak > MaxJointTorqueNmm {
		if c.settings.TorqueScaling {
			k := MaxJointTorqueNmm / peak
			t[0], t[1], t[2] = t[0]*k, t[1]*k, t[2]*k
		} else {
			for i := range t {
				t[i] = math.Max(-MaxJointTorqueNmm, math.Min(MaxJointTorqueNmm, t[i]))
			}
		}
	}
	for i := range t {
		t[i] /= 1000 // N·mm → N·m
	}
	ps, _ := solvePose(c.pos, c.settings.LeftHanded)
	f, ok := ps.forceFromTorques(t)
	if !ok {
		return hw.Vec3{}
	}
	return f
}

// servoForce is the position servo: a desired velocity toward the target,
// capped at MaxServoSpeedMps, tracked by a velocity loop, plus the arm's own
// weight as feed-forward so the servo settles on the target instead of
// below it. The velocity loop approaches the capped desired speed from
// below, so the cursor does not exceed the cap on its own.
func (c *ArmCore) servoForce(targetM hw.Vec3, massKg float64) hw.Vec3 {
	want := targetM.Sub(c.pos).Scale(servoGainPerS).ClampNorm(MaxServoSpeedMps)
	f := want.Sub(c.vel).Scale(servoNspm)
	f.Z += massKg * GravityMps2
	return f.ClampNorm(c.maxForceN)
}

// step advances the physics by one sub-step h. Every force but Coulomb
// friction is held over the sub-step and the arm's mass and viscous damping
// are integrated exactly under it (armParams); Coulomb friction then
// reduces the velocity and may stop the cursor (so a small net force leaves
// a resting cursor put), and the hand model, if any, takes a semi-implicit
// Euler step under the opposite of its grip force.
func (c *ArmCore) step(actN hw.Vec3, p *armParams) {
	h := c.stepS
	f := actN.Add(p.pushN)
	f.Z -= p.massKg * GravityMps2
	f = f.Add(c.boundaryForce())
	var grip hw.Vec3
	hand := c.hand()
	if hand != nil {
		grip = hand.gripForce(c.pos, c.vel)
		f = f.Add(grip)
	} else {
		f = f.Add(c.motionForce(c.pos, c.vel))
	}

	v := c.vel.Scale(p.alpha).Add(f.Scale(p.beta))
	dx := c.vel.Scale(p.gamma).Add(f.Scale(p.delta))
	friction := p.kineticN
	if c.vel.Dot(c.vel) < restSpeedMps*restSpeedMps {
		friction = p.staticN
	}
	dv := friction * p.beta
	if speed := v.Norm(); speed <= dv {
		// Friction stops the cursor within the sub-step: it moved about
		// half as far as it would have unhindered (none from rest).
		v = hw.Vec3{}
		dx = dx.Scale(0.5)
		if c.vel == (hw.Vec3{}) {
			dx = hw.Vec3{}
		}
	} else {
		u := v.Scale(1 / speed)
		v = v.Sub(u.Scale(dv))
		dx = dx.Sub(u.Scale(friction * p.delta))
	}
	c.vel = v
	c.pos = c.pos.Add(dx)
	c.endStop()
	if s := hand; s != nil {
		fh := s.pushN.Sub(grip).Add(c.motionForce(s.pos, s.vel))
		s.vel = s.vel.Add(fh.Scale(h / s.massKg))
		s.pos = s.pos.Add(s.vel.Scale(h))
	}
	c.tS += h
	c.forceN = actN
}

// boundaryForce is a stiff spring and damper that push a cursor outside the
// workspace sphere back in; inside, it is zero.
func (c *ArmCore) boundaryForce() hw.Vec3 {
	off := c.pos.Sub(c.centerM)
	d := off.Norm()
	if d <= c.radiusM {
		return hw.Vec3{}
	}
	n := off.Scale(1 / d)
	push := boundaryNpm*(d-c.radiusM) + boundaryNspm*c.vel.Dot(n)
	if push < 0 {
		push = 0 // the wall pushes, never pulls
	}
	return n.Scale(-push)
}

// endStop models the linkage's mechanical stop EndStopMarginM beyond the
// soft boundary: a cursor driven past it is put back on it and loses its
// outward velocity (an inelastic contact).
func (c *ArmCore) endStop() {
	off := c.pos.Sub(c.centerM)
	d := off.Norm()
	stopM := c.radiusM + EndStopMarginM
	if d <= stopM {
		return
	}
	n := off.Scale(1 / d)
	c.pos = c.centerM.Add(n.Scale(stopM))
	if out := c.vel.Dot(n); out > 0 {
		c.vel = c.vel.Sub(n.Scale(out))
	}
}

// motionForce is the scripted user's hand: a spring-damper pulling what
// it holds (at pos, moving at vel: the handle, or the hand model's mass)
// toward a moving target.
func (c *ArmCore) motionForce(pos, vel hw.Vec3) hw.Vec3 {
	var target, targetV hw.Vec3
	ctr := c.centerM
	switch c.motion {
	case MotionCircle:
		w := 2 * math.Pi * circleHz
		s, co := math.Sincos(w*c.tS + c.phaseRad)
		target = hw.Vec3{X: ctr.X + circleRadiusM*co, Y: ctr.Y + circleRadiusM*s, Z: ctr.Z}
		targetV = hw.Vec3{X: -circleRadiusM * w * s, Y: circleRadiusM * w * co}
	case MotionRandom:
		for c.walk.due(c.tS) {
			// Within the family's own sphere: a Minverse's is half an Inverse3's.
			p := c.rng.inBall(walkShare * c.radiusM)
			c.walk.push([3]float64{ctr.X + p[0], ctr.Y + p[1], ctr.Z + p[2]}, walkSegmentS*c.rng.between(0.6, 1.4))
		}
		p, v := c.walk.at(c.tS)
		target = hw.Vec3{X: p[0], Y: p[1], Z: p[2]}
		targetV = hw.Vec3{X: v[0], Y: v[1], Z: v[2]}
	default:
		return hw.Vec3{}
	}
	return target.Sub(pos).Scale(handNpm).Add(targetV.Sub(vel).Scale(handNspm))
}

// Fill writes the state the physics keeps (position, velocity, force,
// status) and nothing else; DeriveArmState adds what is computed from it.
func (c *ArmCore) Fill(st *hw.State) {
	st.PositionM, st.VelocityMps, st.ForceN = c.Position(), c.vel, c.forceN
	st.Status = hw.StatusCalibrated | hw.StatusReady | hw.StatusStarted | hw.StatusPowerSupply
}

// Halt zeroes the actuator output: the arm goes limp (gravity and the
// scripted hand still act on it) until the next Exchange with a non-idle
// command. It does not advance time and is idempotent.
func (a *Arm) Halt() error {
	if a.c.closed {
		return ErrClosed
	}
	a.c.forceN = hw.Vec3{}
	return nil
}

// Close halts the arm; every later call returns ErrClosed.
func (a *Arm) Close() error {
	if a.c.closed {
		return ErrClosed
	}
	a.c.forceN = hw.Vec3{}
	a.c.closed = true
	return nil
}
