package sim

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/hapticd/hapticd/hw"
)

// Physics are the simulated arm's mechanical constants: what a virtual
// wall's stability depends on (Colgate and Brown 1994: a wall sampled every
// T seconds is passive only while K < 2b/T; Abbott and Okamura 2005 and
// Diolaiti et al. 2006 add Coulomb friction and encoder quantization). Each
// field says where its default comes from. The zero value is not valid;
// start from DefaultPhysics.
type Physics struct {
	// MassKg is the end effector's apparent mass, kg (0 < MassKg ≤ 10).
	// Default hw.ArmEffectiveMassKg (0.2 kg), what the serial driver
	// reports for an Inverse3 too; Info.EffectiveMassKg reports this value,
	// so the host's gravity compensation matches the physics.
	MassKg float64
	// DampingNspm is the viscous damping b, N·s/m (0 ≤ b ≤ 100). Default
	// 1 N·s/m, the value the simulated arm always had: a documented choice,
	// in the range of the physical damping of impedance-type desktop arms
	// reported in the Z-width literature (Colgate and Brown 1994; Abbott
	// and Okamura 2005 identify b of a few tenths to a few N·s/m). No
	// public Inverse3 figure was found.
	DampingNspm float64
	// StaticFrictionN holds a cursor at rest against a smaller net force
	// and KineticFrictionN opposes a moving cursor, N (0 ≤ kinetic ≤
	// static ≤ 5). Defaults 0.15 and 0.1 N, the simulated arm's values
	// since it was written: a documented choice (a back-drivable,
	// capstan-free linkage; no public Inverse3 figure).
	StaticFrictionN  float64
	KineticFrictionN float64
	// EncoderStepM quantizes the position the arm reports, m (0 ≤ step ≤
	// 1e-3; 0 reports the exact position). The physics keeps the exact
	// position; only State.PositionM is quantized. Default 0, so the
	// figures of the service's simulated arms stay what they were; the
	// Inverse3 preset (Inverse3Physics) uses 10 µm, a documented choice.
	EncoderStepM float64
	// MaxSubstepS bounds the physics sub-step, s (1e-6 ≤ s ≤ 1e-3, or 0
	// for the default: 1 ms with no hand model and 0.1 ms with one, whose
	// coupling spring is integrated explicitly and at 1 ms would be a
	// sampled spring near its own Colgate limit). With a hand model the
	// arm sub-steps shorter still where the grip needs it (stableSubstepS):
	// a stiff grip, a heavily damped one on a light hand or one with too
	// little damping, integrated explicitly at the bound, blew the arm up
	// (Validate refuses a grip that would need sub-steps under 1 µs).
	MaxSubstepS float64
	// Hand is the user's hand on the handle.
	Hand Hand
}

// Hand is a user's hand holding the handle. With Model on it is a mass
// coupled to the handle by a spring and a damper (the hand's grip), pushed
// by PushN, and the scripted motion (ArmOptions.Motion) moves the hand
// rather than the handle; with Model off PushN acts on the handle directly,
// as a massless, perfectly stiff hand would. The hand's weight is carried
// by the user's arm, so gravity does not act on it.
type Hand struct {
	// Model switches the mass-spring-damper on.
	Model bool
	// MassKg, StiffnessNpm and DampingNspm are the hand's mass and the
	// grip's stiffness and damping (with Model on: 0 < mass ≤ 5,
	// 0 < stiffness ≤ 1e5, 0 ≤ damping ≤ 1000). Defaults (DefaultHand)
	// are a documented choice within the range published identifications
	// of a hand or fingertip holding a stylus report (a fraction of a kg,
	// hundreds of N/m, a few N·s/m: Hajian and Howe 1997; Kuchenbecker,
	// Park and Niemeyer 2003).
	MassKg       float64
	StiffnessNpm float64
	DampingNspm  float64
	// PushN is the user's steady push, N (|PushN| ≤ MaxForceN).
	PushN hw.Vec3
}

// DefaultHand returns the hand model's documented defaults, switched on
// and not pushing: 0.1 kg, 300 N/m, 3 N·s/m.
func DefaultHand() Hand {
	return Hand{Model: true, MassKg: 0.1, StiffnessNpm: 300, DampingNspm: 3}
}

// DefaultPhysics returns the constants every simulated arm had before they
// were configurable: 0.2 kg, b = 1 N·s/m, 0.15/0.1 N of Coulomb friction,
// exact positions, default sub-steps (1 ms), no hand.
func DefaultPhysics() Physics {
	return Physics{
		MassKg:           EffectiveMassKg,
		DampingNspm:      viscousNspm,
		StaticFrictionN:  staticN,
		KineticFrictionN: kineticN,
	}
}

// Inverse3Physics is DefaultPhysics with the encoder quantized at 10 µm,
// the preset hapticbench zwidth uses. 10 µm is a documented choice: no
// public Inverse3 resolution figure was found, and 10 µm is the order of a
// 14-bit joint encoder on a 0.1 m link (0.1 m · 2π / 2¹⁴ ≈ 38 µm per count
// at the tip, less near the base), rounded toward the finer side.
func Inverse3Physics() Physics {
	p := DefaultPhysics()
	p.EncoderStepM = 10e-6
	return p
}

// handSubstepS is MaxSubstepS's default with the hand model on.
const handSubstepS = 1e-4

// minSubstepS is the shortest sub-step Validate allows and stableSubstepS
// may need.
const minSubstepS = 1e-6

// stableSubstepS is the longest sub-step at which p's hand coupling steps
// stably, +Inf without a hand model. The grip is a spring k and a damper c
// between the hand and the handle (the scripted hand's pull on the hand
// adds to them), integrated explicitly: the hand by semi-implicit Euler,
// the handle exactly under the grip force held over the sub-step. Three
// bounds, each half or less of where TestAcceptedPhysicsStepsStably's scan
// of hand and arm masses, stiffnesses and dampings (0.001 to 1 kg, 300 to
// 1e5 N/m, 0 to 1000 N·s/m) found the arm blowing up:
//   - the held spring puts out energy as Colgate and Brown's sampled wall
//     does, about k·h/2 of negative damping, which the grip's damping and
//     the arm's viscous damping b must outweigh: h ≤ (b + c)/k (half of
//     2(b + c)/k);
//   - the spring on the relative motion, whose mass is the reduced mass μ
//     of hand and handle: h·√(k/μ) ≤ 0.3 (the scan: 0.35 to 0.43 with no
//     damping);
//   - the damper: h·c/μ ≤ 1 (the scan: 2, explicit Euler's bound).
func stableSubstepS(p Physics) float64 {
	if !p.Hand.Model {
		return math.Inf(1)
	}
	damped, spring, damper := gripBounds(p)
	return min(damped, spring, damper)
}

// gripBounds are stableSubstepS's three bounds, s: the damping against the
// held spring, the spring on the reduced mass, the damper on it.
func gripBounds(p Physics) (damped, spring, damper float64) {
	h := p.Hand
	mu := h.MassKg * p.MassKg / (h.MassKg + p.MassKg)
	k := h.StiffnessNpm + handNpm
	return (p.DampingNspm + h.DampingNspm) / k, 0.3 * math.Sqrt(mu/k), mu / (h.DampingNspm + handNspm)
}

// roundTo3 rounds x > 0 to 3 significant digits away from the bound x
// (up for a least value, down for a most), so that advice printed with
// %.3g passes Validate: a value on the bound itself may fall either side
// of it in floating point, so one on an exact digit moves a digit too.
func roundTo3(x float64, up bool) float64 {
	if !(x > 0) {
		return x
	}
	e := math.Pow(10, math.Floor(math.Log10(x))-2)
	q := x / e
	if up {
		return math.Ceil(q*(1+1e-9)) * e
	}
	return math.Floor(q*(1-1e-9)) * e
}

// gripRefusal says why p's hand needs sub-steps under minSubstepS, and
// what would help: each bound asks for something else (a heavier hand
// helps the last two, and nothing but damping the first).
func gripRefusal(p Physics) error {
	h := p.Hand
	damped, spring, damper := gripBounds(p)
	var why []string
	if b := p.DampingNspm + h.DampingNspm; damped < minSubstepS {
		// h ≤ (b + c)/k: the damping b + c a 1 µs step needs, or the
		// grip's stiffness it holds (k less the scripted hand's).
		need := roundTo3(minSubstepS*(h.StiffnessNpm+handNpm), true)
		if b == 0 {
			why = append(why, fmt.Sprintf("with no damping on the grip or the arm the grip's spring gains energy at any sub-step; use at least %.3g N·s/m of damping on the grip or the arm", need))
		} else {
			w := fmt.Sprintf("%v N·s/m of damping on the grip and the arm together is too little for the grip's spring; use at least %.3g N·s/m", b, need)
			if soft := roundTo3(b/minSubstepS-handNpm, false); soft > 0 {
				w += fmt.Sprintf(", or a grip of at most %.3g N/m", soft)
			}
			why = append(why, w)
		}
	}
	if spring < minSubstepS {
		why = append(why, "the grip is too stiff for the hand's mass; use a heavier hand or a softer grip")
	}
	if damper < minSubstepS {
		why = append(why, "the grip's damping is too much for the hand's mass; use a heavier hand or less damping on the grip")
	}
	return fmt.Errorf("hw/sim: physics hand of %v kg on an arm of %v kg with a grip of %v N/m and %v N·s/m needs sub-steps under 1 µs to step stably: %s",
		h.MassKg, p.MassKg, h.StiffnessNpm, h.DampingNspm, strings.Join(why, "; and "))
}

// Validate says what is wrong with p, or nil.
func (p Physics) Validate() error {
	bad := func(what string, v float64, rng string) error {
		return fmt.Errorf("hw/sim: physics %s %v is out of range; use %s", what, v, rng)
	}
	finite := func(vs ...float64) bool {
		for _, v := range vs {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		}
		return true
	}
	h := p.Hand
	if !finite(p.MassKg, p.DampingNspm, p.StaticFrictionN, p.KineticFrictionN, p.EncoderStepM, p.MaxSubstepS,
		h.MassKg, h.StiffnessNpm, h.DampingNspm, h.PushN.X, h.PushN.Y, h.PushN.Z) {
		return errors.New("hw/sim: physics values must be finite numbers")
	}
	switch {
	case !(p.MassKg > 0 && p.MassKg <= 10):
		return bad("mass (kg)", p.MassKg, "0 < mass ≤ 10")
	case p.DampingNspm < 0 || p.DampingNspm > 100:
		return bad("damping (N·s/m)", p.DampingNspm, "0 ≤ damping ≤ 100")
	case p.KineticFrictionN < 0 || p.StaticFrictionN > 5 || p.KineticFrictionN > p.StaticFrictionN:
		return fmt.Errorf("hw/sim: physics friction static %v N, kinetic %v N is out of range; use 0 ≤ kinetic ≤ static ≤ 5", p.StaticFrictionN, p.KineticFrictionN)
	case p.EncoderStepM < 0 || p.EncoderStepM > 1e-3:
		return bad("encoder step (m)", p.EncoderStepM, "0 ≤ step ≤ 0.001")
	case p.MaxSubstepS != 0 && (p.MaxSubstepS < minSubstepS || p.MaxSubstepS > maxSubstepS):
		return bad("sub-step (s)", p.MaxSubstepS, "0 (the default) or 1e-6 ≤ sub-step ≤ 0.001")
	case h.PushN.Norm() > MaxForceN:
		return bad("hand push (N)", h.PushN.Norm(), fmt.Sprintf("|push| ≤ %v", MaxForceN))
	}
	if h.Model {
		switch {
		case !(h.MassKg > 0 && h.MassKg <= 5):
			return bad("hand mass (kg)", h.MassKg, "0 < mass ≤ 5")
		case !(h.StiffnessNpm > 0 && h.StiffnessNpm <= 1e5):
			return bad("hand stiffness (N/m)", h.StiffnessNpm, "0 < stiffness ≤ 100000")
		case h.DampingNspm < 0 || h.DampingNspm > 1000:
			return bad("hand damping (N·s/m)", h.DampingNspm, "0 ≤ damping ≤ 1000")
		case stableSubstepS(p) < minSubstepS:
			return gripRefusal(p)
		}
	}
	return nil
}

// armParams is Physics prepared for one sub-step length h: the exact
// solution of m·v' = f − b·v over h under a force f held constant (the
// actuator's force is: the loop holds it for a period) is
//
//	v(h) = α·v0 + β·f,  x(h) = x0 + γ·v0 + δ·f
//
// so the arm's own inertia and damping add no discretization error, and a
// virtual wall computed every T seconds meets the plant Colgate and Brown
// analysed, at any sub-step. Forces that depend on the state (the
// workspace boundary, the servo, the hand's grip) are held per sub-step.
type armParams struct {
	massKg                    float64
	alpha, beta, gamma, delta float64
	staticN, kineticN         float64
	pushN                     hw.Vec3 // the push on the handle (no hand model)
}

func newArmParams(p Physics, h float64) armParams {
	m, b := p.MassKg, p.DampingNspm
	a := armParams{massKg: m, staticN: p.StaticFrictionN, kineticN: p.KineticFrictionN}
	if x := b * h / m; x > 1e-3 {
		a.alpha = math.Exp(-x)
		a.beta = -math.Expm1(-x) / b
		a.gamma = m / b * -math.Expm1(-x)
		a.delta = (h - a.gamma) / b
	} else {
		a.alpha, a.beta, a.gamma, a.delta = seriesCoefficients(m, h, x)
	}
	if !p.Hand.Model {
		a.pushN = p.Hand.PushN
	}
	return a
}

// seriesCoefficients are armParams' α, β, γ, δ for a small x = b·h/m from
// their Taylor series, cheap enough to derive every Step and exact as
// b → 0. The terms left out are below x⁴/24 of each: 4e-14 for the
// x ≤ 1e-3 newArmParams gives it, 3e-11 for the default arm's 0.005 at
// 1 ms sub-steps.
func seriesCoefficients(m, h, x float64) (alpha, beta, gamma, delta float64) {
	s := 1 - x/2 + x*x/6 - x*x*x/24 // (1 − e^−x)/x
	alpha = 1 - x*s
	beta = h / m * s
	gamma = h * s
	delta = h * h / m * (0.5 - x/6 + x*x/24 - x*x*x/120)
	return alpha, beta, gamma, delta
}

// armExt is what an arm built with other than DefaultPhysics carries
// beyond the default arm: its prepared constants, its encoder step and
// its hand model.
type armExt struct {
	prm      armParams
	encoderM float64
	hasHand  bool
	hand     handState
}

func newArmExt(p Physics, h float64, startM hw.Vec3) *armExt {
	e := &armExt{prm: newArmParams(p, h), encoderM: p.EncoderStepM, hasHand: p.Hand.Model}
	if p.Hand.Model {
		e.hand = handState{pos: startM, massKg: p.Hand.MassKg, kNpm: p.Hand.StiffnessNpm, cNspm: p.Hand.DampingNspm, pushN: p.Hand.PushN}
	}
	return e
}

// coefficients are the constants of this Step: the arm's own, or the
// default physics' derived from the sub-step.
func (c *ArmCore) coefficients() armParams {
	if c.ext != nil {
		return c.ext.prm
	}
	a, b, g, d := seriesCoefficients(EffectiveMassKg, c.stepS, viscousNspm*c.stepS/EffectiveMassKg)
	return armParams{massKg: EffectiveMassKg, alpha: a, beta: b, gamma: g, delta: d, staticN: staticN, kineticN: kineticN}
}

// hand is the hand model, nil without one.
func (c *ArmCore) hand() *handState {
	if c.ext == nil || !c.ext.hasHand {
		return nil
	}
	return &c.ext.hand
}

func (c *ArmCore) hasHand() bool { return c.ext != nil && c.ext.hasHand }

// handState is the hand model's mass and grip, stepped with the arm.
type handState struct {
	pos, vel hw.Vec3
	massKg   float64
	kNpm     float64
	cNspm    float64
	pushN    hw.Vec3
}

// gripForce is the force the hand's grip puts on the handle at handle
// position x and velocity v (the hand feels its opposite).
func (s *handState) gripForce(x, v hw.Vec3) hw.Vec3 {
	return s.pos.Sub(x).Scale(s.kNpm).Add(s.vel.Sub(v).Scale(s.cNspm))
}

// quantize rounds each axis to a multiple of step (step 0: unchanged).
func quantize(p hw.Vec3, step float64) hw.Vec3 {
	if step == 0 {
		return p
	}
	return hw.Vec3{X: math.Round(p.X/step) * step, Y: math.Round(p.Y/step) * step, Z: math.Round(p.Z/step) * step}
}

// HandPosition is the hand model's position, m, and false without a hand
// model. Tests and the zwidth bench read it; a client never sees it.
func (c *ArmCore) HandPosition() (hw.Vec3, bool) {
	if h := c.hand(); h != nil {
		return h.pos, true
	}
	return hw.Vec3{}, false
}

// TruePosition is the physics' exact position, m, before the encoder's
// quantization (Position reports what the encoder reads).
func (c *ArmCore) TruePosition() hw.Vec3 { return c.pos }
