// Package zwidthreport is the JSON `hapticd zwidth` prints and
// `hapticbench zwidth` reads: the one definition of that contract between
// the two binaries. It lives under protocol because bench may import only
// protocol; actors/loop/zwidth fills it, bench adds its bounds beside it.
package zwidthreport

// Report is a run's figures and its rows.
type Report struct {
	Setup
	Results []Result `json:"results"`
}

// Setup is everything a row's theoretical bounds need besides the row.
type Setup struct {
	// Mode is "virtual" (simulated time, deterministic) or says which
	// service a real-time run measured.
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
	// Renderers names what rendered the walls and the passivity control.
	Renderers string `json:"renderers"`
}

// Result is one row and its measured limit.
type Result struct {
	// Path is "A" (a client streams the wall's force), "B" (the loop
	// renders the wall) or "C" (A with the passivity controller).
	Path string `json:"path"`
	// RateHz is the rate the wall is computed at; LoopHz the loop's.
	RateHz float64 `json:"rate_hz"`
	LoopHz float64 `json:"loop_hz"`
	// DelayS is, for A and C, how long after the client read a state its
	// force reaches the loop.
	DelayS float64 `json:"delay_s"`
	Hand   bool    `json:"hand"`
	Limit
}

// Limit is what a row's search found.
type Limit struct {
	// LimitNpm is the largest stiffness found stable (0: none was).
	LimitNpm float64 `json:"limit_npm"`
	// LowestStableNpm is where the stable band starts.
	LowestStableNpm float64 `json:"lowest_stable_npm"`
	// UnstableNpm is the smallest stiffness above the stable band found
	// unstable (0: not even the top was, so LimitNpm is a lower bound).
	UnstableNpm float64 `json:"unstable_npm"`
	Trials      int     `json:"trials"`
	// TopNpm is the top of the row's search.
	TopNpm float64 `json:"top_npm"`
	// Failure is the trial at UnstableNpm.
	Failure *Trial `json:"failure,omitempty"`
}

// Trial is one stiffness tried on one row.
type Trial struct {
	StiffnessNpm float64 `json:"stiffness_npm"`
	Stable       bool    `json:"stable"`
	// Reason says why an unstable trial failed.
	Reason string `json:"reason,omitempty"`
	// MinEnergyJ is the lowest observed energy, J.
	MinEnergyJ float64 `json:"min_energy_j"`
	// PeakToPeakM is the motion along the wall's normal in the window, m.
	PeakToPeakM float64 `json:"peak_to_peak_m"`
	// ContactS is when the cursor first entered the wall, s (-1: never).
	ContactS float64 `json:"contact_s"`
}
