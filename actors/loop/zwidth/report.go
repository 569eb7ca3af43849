package zwidth

import "github.com/hapticd/hapticd/hw/sim"

// Report is what `hapticd zwidth` prints as JSON for hapticbench: the
// figures the theoretical bounds need beside every row's limit. Its field
// names are the wire contract with bench (which may not import this
// package), so they change only together with bench/zwidth.go.
type Report struct {
	// Mode is "virtual": simulated time, deterministic.
	Mode string `json:"mode"`
	// The arm: mass, viscous damping b, Coulomb friction, encoder step.
	MassKg           float64 `json:"mass_kg"`
	DampingNspm      float64 `json:"damping_nspm"`
	StaticFrictionN  float64 `json:"static_friction_n"`
	KineticFrictionN float64 `json:"kinetic_friction_n"`
	EncoderStepM     float64 `json:"encoder_step_m"`
	// MaxForceN is the arm's force clamp, N.
	MaxForceN float64 `json:"max_force_n"`
	// The hand model rows with Hand use.
	HandMassKg       float64 `json:"hand_mass_kg"`
	HandStiffnessNpm float64 `json:"hand_stiffness_npm"`
	HandDampingNspm  float64 `json:"hand_damping_nspm"`
	// The trial: the user's push, the starting gap, the criteria.
	PushN          float64 `json:"push_n"`
	GapM           float64 `json:"gap_m"`
	EnergyBoundJ   float64 `json:"energy_bound_j"`
	OscillationM   float64 `json:"oscillation_m"`
	SettleS        float64 `json:"settle_s"`
	WindowS        float64 `json:"window_s"`
	MinNpm         float64 `json:"min_npm"`
	MaxNpm         float64 `json:"max_npm"`
	ToleranceRatio float64 `json:"tolerance_ratio"`
	// Renderers names what rendered B and C: the stand-ins of this
	// package, or the loop's own once they are plugged in.
	Renderers string   `json:"renderers"`
	Results   []Result `json:"results"`
}

// NewReport describes results found with c; renderers names the wall and
// passivity implementations used.
func NewReport(c Config, renderers string, results []Result) Report {
	p, h := c.Physics, c.Hand
	return Report{
		Mode:   "virtual",
		MassKg: p.MassKg, DampingNspm: p.DampingNspm,
		StaticFrictionN: p.StaticFrictionN, KineticFrictionN: p.KineticFrictionN,
		EncoderStepM: p.EncoderStepM, MaxForceN: sim.MaxForceN,
		HandMassKg: h.MassKg, HandStiffnessNpm: h.StiffnessNpm, HandDampingNspm: h.DampingNspm,
		PushN: c.PushN, GapM: c.GapM, EnergyBoundJ: c.EnergyBoundJ, OscillationM: c.OscillationM,
		SettleS: c.SettleS, WindowS: c.WindowS, MinNpm: c.MinNpm, MaxNpm: c.MaxNpm, ToleranceRatio: c.ToleranceRatio,
		Renderers: renderers,
		Results:   results,
	}
}
