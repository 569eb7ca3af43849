package zwidth

import (
	"errors"
	"fmt"
	"math"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol/zwidthreport"
)

// Path is how the wall's force reaches the arm.
type Path uint8

const (
	// PathClient (A): a client computes the wall at its frame rate and
	// streams the force; the loop holds it.
	PathClient Path = iota + 1
	// PathEffect (B): the loop renders the wall every tick.
	PathEffect
	// PathClientPassivity (C): PathClient with the passivity controller on
	// the loop's output.
	PathClientPassivity
)

// String is the path's letter and name, as the table prints it.
func (p Path) String() string {
	switch p {
	case PathClient:
		return "A client"
	case PathEffect:
		return "B effect"
	case PathClientPassivity:
		return "C client+passivity"
	}
	return fmt.Sprintf("path(%d)", uint8(p))
}

// MarshalText spells the path as its letter: "A", "B" or "C".
func (p Path) MarshalText() ([]byte, error) {
	if p < PathClient || p > PathClientPassivity {
		return nil, fmt.Errorf("actors/loop/zwidth: unknown path %d", uint8(p))
	}
	return []byte{"ABC"[p-1]}, nil
}

// UnmarshalText parses "A", "B" or "C".
func (p *Path) UnmarshalText(b []byte) error {
	switch string(b) {
	case "A":
		*p = PathClient
	case "B":
		*p = PathEffect
	case "C":
		*p = PathClientPassivity
	default:
		return fmt.Errorf("actors/loop/zwidth: unknown path %q; use A, B or C", b)
	}
	return nil
}

// Row is one line of the table: a path at a rate, with or without the hand.
type Row struct {
	Path Path `json:"path"`
	// RateHz is the rate the wall is computed at: the client's frame rate
	// (A, C) or the loop's (B).
	RateHz float64 `json:"rate_hz"`
	// LoopHz is the loop's rate; for B it is RateHz.
	LoopHz float64 `json:"loop_hz"`
	// DelayS is, for A and C, how long after the client read a state its
	// force reaches the loop (0 ≤ DelayS ≤ 4 frames); B has none.
	DelayS float64 `json:"delay_s"`
	// Hand switches the hand model (sim.DefaultHand) on; off, the user's
	// push acts on the handle directly.
	Hand bool `json:"hand"`
}

// Plane is a wall's surface: the wall fills the half-space behind it.
type Plane struct {
	PointM hw.Vec3
	// Normal is a unit vector pointing out of the wall, into free space.
	Normal hw.Vec3
}

// Depth is how far p is inside the wall, m (negative: outside).
func (pl Plane) Depth(p hw.Vec3) float64 { return -p.Sub(pl.PointM).Dot(pl.Normal) }

// WallRenderer computes the loop's wall force from the latest cursor
// state, once a tick of dtNs at the loop's clock nowNs. LoopWall (the
// loop's effect renderer) implements it.
type WallRenderer interface {
	Force(posM, velMps hw.Vec3, nowNs, dtNs int64) hw.Vec3
}

// Passivity is a passivity controller on the loop's output: Step returns
// the force with the damping it adds, given the velocity measured this
// tick; Applied tells it the force the device then got (after the clamp).
// LoopPassivity (the loop's controller) implements it.
type Passivity interface {
	Step(forceN, velMps hw.Vec3, nowNs, dtNs int64) hw.Vec3
	Applied(forceN hw.Vec3)
}

// Config is everything a trial depends on besides its row and stiffness.
type Config struct {
	// Physics is the arm's (its Hand is replaced per row).
	Physics sim.Physics
	// Hand is the hand model rows with Row.Hand use (Model is forced on).
	Hand sim.Hand
	// PushN is the user's steady push into the wall, N (0 < PushN ≤ 5).
	PushN float64
	// GapM is the cursor's distance from the wall at the start, m.
	GapM float64
	// EnergyBoundJ is how far below zero the observed energy may go, J.
	EnergyBoundJ float64
	// OscillationM is the largest peak-to-peak motion along the wall's
	// normal allowed from SettleS to SettleS+WindowS after contact, m.
	OscillationM     float64
	SettleS, WindowS float64
	// MinNpm and MaxNpm bound the search; ToleranceRatio ends it when the
	// stable and unstable stiffnesses are within this ratio (> 1).
	MinNpm, MaxNpm float64
	ToleranceRatio float64
	// NewWall builds the loop's wall renderer for B (nil: NewLoopWall).
	NewWall func(pl Plane, stiffnessNpm float64) (WallRenderer, error)
	// NewPassivity builds the passivity controller for C (nil:
	// NewLoopPassivity).
	NewPassivity func() Passivity
}

// DefaultConfig is the configuration `hapticbench zwidth` documents: the
// Inverse3 preset of the simulated arm, a 0.5 N push from 2 mm, a 0.1 mJ
// energy bound, 0.5 mm of oscillation 1 s after contact (over 0.5 s),
// stiffness searched from 10 to 1,000,000 N/m to within 3 %.
func DefaultConfig() Config {
	c := Config{
		Physics:        sim.Inverse3Physics(),
		Hand:           sim.DefaultHand(),
		PushN:          0.5,
		GapM:           0.002,
		EnergyBoundJ:   1e-4,
		OscillationM:   0.5e-3,
		SettleS:        1,
		WindowS:        0.5,
		MinNpm:         10,
		MaxNpm:         1e6,
		ToleranceRatio: 1.03,
	}
	return c
}

// Validate says what is wrong with c, or nil.
func (c Config) Validate() error {
	if err := c.Physics.Validate(); err != nil {
		return fmt.Errorf("actors/loop/zwidth: %w", err)
	}
	h := c.Physics
	h.Hand = c.Hand
	h.Hand.Model = true
	if err := h.Validate(); err != nil {
		return fmt.Errorf("actors/loop/zwidth: hand model: %w", err)
	}
	switch {
	case !(c.PushN > 0 && c.PushN <= 5):
		return fmt.Errorf("actors/loop/zwidth: push %v N is out of range; use 0 < push ≤ 5", c.PushN)
	case !(c.GapM >= 0 && c.GapM <= 0.05):
		return fmt.Errorf("actors/loop/zwidth: gap %v m is out of range; use 0 ≤ gap ≤ 0.05", c.GapM)
	case !(c.EnergyBoundJ >= 0 && c.EnergyBoundJ <= 1):
		return fmt.Errorf("actors/loop/zwidth: energy bound %v J is out of range; use 0 ≤ bound ≤ 1", c.EnergyBoundJ)
	case !(c.OscillationM > 0 && c.OscillationM <= 0.05):
		return fmt.Errorf("actors/loop/zwidth: oscillation %v m is out of range; use 0 < oscillation ≤ 0.05", c.OscillationM)
	case !(c.SettleS >= 0 && c.WindowS > 0 && c.SettleS+c.WindowS <= 60):
		return errors.New("actors/loop/zwidth: need settle ≥ 0, window > 0 and settle + window ≤ 60 s")
	case !(c.MinNpm > 0 && c.MaxNpm > c.MinNpm && c.MaxNpm <= 1e7):
		return fmt.Errorf("actors/loop/zwidth: stiffness range %v..%v N/m is invalid; use 0 < min < max ≤ 1e7", c.MinNpm, c.MaxNpm)
	case !(c.ToleranceRatio > 1 && c.ToleranceRatio <= 2):
		return fmt.Errorf("actors/loop/zwidth: tolerance ratio %v is out of range; use 1 < ratio ≤ 2", c.ToleranceRatio)
	}
	return nil
}

func (r Row) validate() error {
	switch {
	case r.Path < PathClient || r.Path > PathClientPassivity:
		return fmt.Errorf("actors/loop/zwidth: unknown path %d; use A (client), B (effect) or C (client with passivity)", r.Path)
	case !(r.LoopHz >= 100 && r.LoopHz <= 20000):
		return fmt.Errorf("actors/loop/zwidth: loop rate %v Hz is out of range; use 100..20000", r.LoopHz)
	case !(r.RateHz >= 1 && r.RateHz <= r.LoopHz):
		return fmt.Errorf("actors/loop/zwidth: wall rate %v Hz is out of range; use 1 ≤ rate ≤ the loop's %v Hz", r.RateHz, r.LoopHz)
	case r.Path == PathEffect && r.RateHz != r.LoopHz:
		return fmt.Errorf("actors/loop/zwidth: an effect is rendered at the loop's rate; got %v Hz beside a %v Hz loop", r.RateHz, r.LoopHz)
	case !(r.DelayS >= 0 && r.DelayS <= 4/r.RateHz):
		return fmt.Errorf("actors/loop/zwidth: client delay %v s is out of range; use 0 ≤ delay ≤ 4 frames", r.DelayS)
	case r.Path == PathEffect && r.DelayS != 0:
		return errors.New("actors/loop/zwidth: an effect has no client delay; leave it 0")
	}
	return nil
}

// DefaultRows are the table's rows: A and C at 60, 90 and 200 Hz beside a
// 1 kHz loop with the client's force arriving delayFrames frames after it
// read the state, B at 1 and 4 kHz; each without and with the hand model.
func DefaultRows(delayFrames float64) []Row {
	var rows []Row
	for _, hand := range []bool{false, true} {
		for _, hz := range []float64{60, 90, 200} {
			rows = append(rows, Row{Path: PathClient, RateHz: hz, LoopHz: 1000, DelayS: delayFrames / hz, Hand: hand})
		}
		for _, hz := range []float64{1000, 4000} {
			rows = append(rows, Row{Path: PathEffect, RateHz: hz, LoopHz: hz, Hand: hand})
		}
		for _, hz := range []float64{60, 90, 200} {
			rows = append(rows, Row{Path: PathClientPassivity, RateHz: hz, LoopHz: 1000, DelayS: delayFrames / hz, Hand: hand})
		}
	}
	return rows
}

// Trial is one stiffness tried on one row (the wire type of the report).
type Trial = zwidthreport.Trial

// Result is a row's stiffness limit: the row with its path typed, and
// what the search found as the report carries it.
type Result struct {
	Row
	zwidthreport.Limit
}

// gridRatio is the step of Limit's scan: stiffnesses a quarter apart.
const gridRatio = 1.25

// Limit finds the largest stiffness of one row's stable band: it scans
// stiffnesses gridRatio apart upward from MinNpm to the first stable one
// (LowestStableNpm: a lightly damped arm on a soft wall may still ring
// past the oscillation bound 1 s after contact), on to the first unstable
// one after it, and bisects geometrically between the last two to within
// ToleranceRatio.
func Limit(c Config, r Row) (Result, error) {
	if err := c.Validate(); err != nil {
		return Result{}, err
	}
	if err := r.validate(); err != nil {
		return Result{}, err
	}
	res := Result{Row: r}
	var err error
	try := func(k float64) Trial {
		res.Trials++
		t, e := c.trial(r, k)
		if e != nil && err == nil {
			err = e
		}
		return t
	}
	top := c.MaxNpm
	if r.Path == PathEffect {
		top = math.Min(top, effect.MaxStiffnessNPerM) // the stiffest wall the loop renders
	}
	res.TopNpm = top
	// fail is the trial just above the stable band; with no band at all,
	// the softest wall's, which says why even that one failed.
	var fail Trial
	lo := 0.0
	for k := c.MinNpm; ; k *= gridRatio {
		k = math.Min(k, top)
		t := try(k)
		if err != nil {
			return Result{}, err
		}
		if t.Stable {
			if lo == 0 {
				res.LowestStableNpm = k
			}
			lo = k
		} else if lo > 0 {
			fail = t
			break
		} else if k == c.MinNpm {
			fail = t
		}
		if k == top {
			if lo == 0 {
				res.UnstableNpm, res.Failure = c.MinNpm, &fail
			} else {
				res.LimitNpm = lo // stable up to the top: a lower bound
			}
			return res, nil
		}
	}
	hi := math.Min(lo*gridRatio, top)
	for hi/lo > c.ToleranceRatio {
		mid := math.Sqrt(lo * hi)
		t := try(mid)
		if err != nil {
			return Result{}, err
		}
		if t.Stable {
			lo = mid
		} else {
			hi, fail = mid, t
		}
	}
	res.LimitNpm, res.UnstableNpm, res.Failure = lo, hi, &fail
	return res, nil
}

// Run finds the limit of every row, in order.
func Run(c Config, rows []Row) ([]Result, error) {
	out := make([]Result, 0, len(rows))
	for _, r := range rows {
		res, err := Limit(c, r)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// Fine sub-steps for the arm, so the forces the physics holds per sub-step
// (the hand's grip, the workspace boundary) are far faster than any wall.
const trialSubstepS = 1e-4

// pendingForce is a client force on its way to the loop.
type pendingForce struct {
	dueS   float64
	forceN hw.Vec3
}

// Try runs one trial of row r at stiffness kNpm.
func Try(c Config, r Row, kNpm float64) (Trial, error) {
	if err := c.Validate(); err != nil {
		return Trial{}, err
	}
	if err := r.validate(); err != nil {
		return Trial{}, err
	}
	if !(kNpm > 0 && kNpm <= 1e7) {
		return Trial{}, fmt.Errorf("actors/loop/zwidth: stiffness %v N/m is out of range; use 0 < K ≤ 1e7", kNpm)
	}
	return c.trial(r, kNpm)
}

// trial simulates one contact; c and r are valid.
func (c Config) trial(r Row, k float64) (Trial, error) {
	p := c.Physics
	p.MaxSubstepS = trialSubstepS
	push := hw.Vec3{X: c.PushN}
	if r.Hand {
		p.Hand = c.Hand
		p.Hand.Model = true
	} else {
		p.Hand = sim.Hand{}
	}
	p.Hand.PushN = push
	periodS := 1 / r.LoopHz
	arm, err := sim.NewArmWithPhysics(sim.ArmOptions{PeriodS: periodS}, p)
	if err != nil {
		// Validate checked p; this is a bug, not bad input.
		panic(fmt.Sprintf("actors/loop/zwidth: validated physics refused: %v", err))
	}
	var core sim.ArmCore
	arm.MoveCore(&core)
	centre := arm.Info().WorkspaceCenterM
	pl := Plane{PointM: centre.Add(hw.Vec3{X: c.GapM}), Normal: hw.Vec3{X: -1}}

	var wall WallRenderer
	if r.Path == PathEffect {
		newWall := c.NewWall
		if newWall == nil {
			newWall = func(pl Plane, k float64) (WallRenderer, error) { return NewLoopWall(pl, k) }
		}
		if wall, err = newWall(pl, k); err != nil {
			return Trial{}, err
		}
	}
	var pc Passivity
	if r.Path == PathClientPassivity {
		pc = NewLoopPassivity()
		if c.NewPassivity != nil {
			pc = c.NewPassivity()
		}
	}
	dtNs := int64(math.Round(periodS * 1e9))

	gravity := hw.Vec3{Z: p.MassKg * hw.GravityMps2}
	var st hw.State
	core.Fill(&st)
	var queue [8]pendingForce // delay ≤ 4 frames: at most 5 in flight
	head, n := 0, 0
	var held hw.Vec3
	clientPeriodS := 1 / r.RateHz
	nextFrameS := 0.0

	t := Trial{StiffnessNpm: k, Stable: true, ContactS: -1}
	energy := 0.0
	lo, hi := math.Inf(1), math.Inf(-1)
	const contactTimeoutS = 3
	// Blown this far into or out of the wall: unstable. Past 2.5 times
	// the resting depth, short of the workspace boundary (0.1 m away).
	escapeM := math.Min(0.09, math.Max(0.02, 2.5*c.PushN/k))
	for tick := 0; ; tick++ {
		nowS := float64(tick) * periodS
		if r.Path != PathEffect {
			for nextFrameS <= nowS+1e-12 {
				d := pl.Depth(st.PositionM)
				var f hw.Vec3
				if d > 0 {
					f = pl.Normal.Scale(k * d)
				}
				queue[(head+n)%len(queue)] = pendingForce{dueS: nextFrameS + r.DelayS, forceN: f}
				n++
				nextFrameS += clientPeriodS
			}
			for n > 0 && queue[head].dueS <= nowS+1e-12 {
				held = queue[head].forceN
				head, n = (head+1)%len(queue), n-1
			}
		}
		nowNs := int64(tick) * dtNs
		out := held
		if wall != nil {
			out = wall.Force(st.PositionM, st.VelocityMps, nowNs, dtNs)
		}
		if pc != nil {
			out = pc.Step(out, st.VelocityMps, nowNs, dtNs)
		}
		cmd := hw.Command{Mode: hw.ModeForce, ForceN: out.Add(gravity)}
		before := core.TruePosition()
		if _, err := core.Step(&cmd); err != nil {
			panic(fmt.Sprintf("actors/loop/zwidth: stepping a fresh arm: %v", err))
		}
		core.Fill(&st)
		dx := core.TruePosition().Sub(before)
		applied := core.Force().Sub(gravity) // after the driver's clamp
		if pc != nil {
			pc.Applied(applied)
		}
		dd := dx.Dot(dx)
		energy += -applied.Dot(dx) + p.DampingNspm*dd/periodS + p.KineticFrictionN*math.Sqrt(dd)
		if energy < t.MinEnergyJ {
			t.MinEnergyJ = energy
		}
		endS := nowS + periodS
		depth := pl.Depth(core.TruePosition())
		if t.ContactS < 0 {
			if depth > 0 {
				t.ContactS = endS
			} else if endS > contactTimeoutS {
				t.Stable, t.Reason = false, "never reached the wall"
				return t, nil
			}
		}
		if t.MinEnergyJ < -c.EnergyBoundJ {
			t.Stable, t.Reason = false, fmt.Sprintf("observed energy fell to %.3g J", t.MinEnergyJ)
			return t, nil
		}
		if math.Abs(depth) > escapeM {
			t.Stable, t.Reason = false, fmt.Sprintf("cursor %.0f mm from the wall", depth*1000)
			return t, nil
		}
		if t.ContactS < 0 {
			continue
		}
		since := endS - t.ContactS
		if since >= c.SettleS {
			lo, hi = math.Min(lo, depth), math.Max(hi, depth)
		}
		if since >= c.SettleS+c.WindowS {
			t.PeakToPeakM = hi - lo
			if t.PeakToPeakM > c.OscillationM {
				t.Stable, t.Reason = false, fmt.Sprintf("%.2f mm peak to peak %.1f s after contact", t.PeakToPeakM*1000, c.SettleS)
			}
			return t, nil
		}
	}
}
