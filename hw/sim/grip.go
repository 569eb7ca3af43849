package sim

import (
	"math"

	"github.com/hapticd/hapticd/hw"
)

const (
	// BatteryLifeS is how long, in simulated seconds, a grip's battery takes
	// to drain from full to MinBattery.
	BatteryLifeS = 8 * 3600.0
	// MinBattery is the floor of the simulated battery level.
	MinBattery = 0.05

	gripRockHz       = 0.25
	gripSqueezeHz    = 0.2
	gripTurnSegmentS = 3.0
	gripHallSegmentS = 1.5
	buttonSlotS      = 1.0
	buttonPressS     = 0.4
	buttonChance     = 0.15
	// gripCircleCycleS is when MotionCircle repeats: the rock's 8 s (its
	// pitch's 16 s), the squeeze's 5 s and the buttons' 3, 5 and 7 s all
	// fit it a whole number of times.
	gripCircleCycleS = 1680.0
)

// GripOptions configure a simulated grip.
type GripOptions struct {
	// Index is the grip's 0-based index among simulated grips; its id and
	// UUID derive from it.
	Index int
	// PeriodS is the fixed step in seconds; each Exchange advances simulated
	// time by it. Valid: 0 < PeriodS ≤ MaxPeriodS; anything else means
	// DefaultPeriodS.
	PeriodS float64
	// Motion scripts the hand holding the grip.
	Motion Motion
	// Seed makes MotionRandom reproducible.
	Seed int64
	// Family is the product simulated: FamilyVerseGrip (wired) or
	// FamilyWirelessVerseGrip. Zero lets Link decide.
	Family Family
	// Link, when Family is zero, picks the family: LinkWired the wired
	// grip, anything else the wireless one (the common product).
	Link hw.Link
}

// Grip is a simulated handheld grip: orientation, three buttons, a hall
// (squeeze) sensor and a slowly draining battery. It has no actuator, so
// Exchange ignores the command. It implements hw.Driver.
type Grip struct {
	info    hw.Info
	periodS float64
	motion  Motion
	rng     splitMix
	closed  bool
	// circleS shifts MotionCircle's script by a share of its cycle spread
	// by index (the golden angle, as arms' circles), so grips side by side
	// do not rock, squeeze and click alike.
	circleS float64

	tS      float64
	turn    smoothWalk // yaw, pitch, roll in radians  (MotionRandom)
	hall    smoothWalk // hall level in element 0 (MotionRandom)
	slot    int64      // button slot whose presses are drawn
	pressed hw.Buttons // buttons pressed during the current slot
}

var _ hw.Driver = (*Grip)(nil)

// NewGrip returns a simulated grip at rest with a full battery.
func NewGrip(o GripOptions) *Grip {
	spec := gripFamily(o.Family, o.Link)
	return &Grip{
		info: hw.Info{
			Kind:            hw.KindGrip,
			ID:              GripID(idIndex(spec, o.Index)),
			UUID:            GripUUID(idIndex(spec, o.Index)),
			Model:           spec.Model,
			FirmwareVersion: spec.FirmwareVersion,
			HardwareVersion: spec.HardwareVersion,
			Simulated:       true,
			Link:            spec.Link,
		},
		periodS: validPeriod(o.PeriodS),
		motion:  o.Motion,
		// By the index in the kind's id space, not the family's: the
		// first wired and the first wireless grip moved alike (toursim).
		rng:     newSplitMix(o.Seed, uint64(idIndex(spec, o.Index))<<1|1),
		circleS: math.Mod(float64(idIndex(spec, o.Index))*2.399963229728653, 2*math.Pi) / (2 * math.Pi) * gripCircleCycleS,
		slot:    -1,
	}
}

// Info returns the grip's identity.
func (g *Grip) Info() hw.Info { return g.info }

// Exchange advances the grip by one period and fills st. cmd is ignored and
// may be nil: a grip has no actuator. It never allocates.
func (g *Grip) Exchange(_ *hw.Command, st *hw.State) error {
	if g.closed {
		return ErrClosed
	}
	if st == nil {
		return errNilExchange
	}
	g.tS += g.periodS
	t := g.tS
	*st = hw.State{
		Orientation: hw.Quat{W: 1},
		Battery:     math.Max(MinBattery, 1-(1-MinBattery)*t/BatteryLifeS),
		Status:      hw.StatusConnected | hw.StatusAwake | hw.StatusReady,
	}
	switch g.motion {
	case MotionCircle:
		t += g.circleS
		rock := math.Sin(2 * math.Pi * gripRockHz * t)
		st.Orientation = eulerQuat(0.5*rock, 0.25*math.Sin(2*math.Pi*gripRockHz*t/2), 0.15*rock)
		st.Hall = 0.5 - 0.5*math.Cos(2*math.Pi*gripSqueezeHz*t)
		st.Buttons = periodicPress(t, 0, 3, 0.3, hw.ButtonA) |
			periodicPress(t, 1, 5, 0.4, hw.ButtonB) |
			periodicPress(t, 2, 7, 0.5, hw.ButtonC)
	case MotionRandom:
		for g.turn.due(t) {
			g.turn.push([3]float64{g.rng.between(-1, 1), g.rng.between(-0.5, 0.5), g.rng.between(-0.5, 0.5)},
				gripTurnSegmentS*g.rng.between(0.6, 1.4))
		}
		for g.hall.due(t) {
			g.hall.push([3]float64{g.rng.float()}, gripHallSegmentS*g.rng.between(0.6, 1.4))
		}
		ypr, _ := g.turn.at(t)
		st.Orientation = eulerQuat(ypr[0], ypr[1], ypr[2])
		h, _ := g.hall.at(t)
		st.Hall = math.Min(math.Max(h[0], 0), 1)
		st.Buttons = g.randomPresses(t)
	}
	return nil
}

// randomPresses draws, once per slot, which buttons go down for the first
// buttonPressS of that slot.
func (g *Grip) randomPresses(tS float64) hw.Buttons {
	slot := int64(tS / buttonSlotS)
	for g.slot < slot {
		// Draw every slot in order, even skipped ones, so the sequence does
		// not depend on the period.
		g.slot++
		g.pressed = 0
		for _, b := range [...]hw.Buttons{hw.ButtonA, hw.ButtonB, hw.ButtonC} {
			if g.rng.float() < buttonChance {
				g.pressed |= b
			}
		}
	}
	if tS-float64(slot)*buttonSlotS < buttonPressS {
		return g.pressed
	}
	return 0
}

// periodicPress holds b down for holdS at the start of every periodS,
// shifted by offsetS.
func periodicPress(tS, offsetS, periodS, holdS float64, b hw.Buttons) hw.Buttons {
	if math.Mod(tS+offsetS, periodS) < holdS {
		return b
	}
	return 0
}

// eulerQuat turns yaw (about Z), then pitch (about X), then roll (about Y),
// all in radians, into a quaternion.
func eulerQuat(yaw, pitch, roll float64) hw.Quat {
	return quatMul(quatMul(axisQuat(0, 0, 1, yaw), axisQuat(1, 0, 0, pitch)), axisQuat(0, 1, 0, roll))
}

// Halt does nothing a grip could feel (it has no actuator) but honours the
// contract: idempotent, an error only after Close.
func (g *Grip) Halt() error {
	if g.closed {
		return ErrClosed
	}
	return nil
}

// Close releases the grip; every later call returns ErrClosed.
func (g *Grip) Close() error {
	if g.closed {
		return ErrClosed
	}
	g.closed = true
	return nil
}
