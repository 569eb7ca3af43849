package zwidth

import (
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol/zwidthreport"
)

// Report is what `hapticd zwidth` prints as JSON for hapticbench: the
// figures the theoretical bounds need (zwidthreport.Setup, the wire
// contract bench reads) beside every row's limit.
type Report struct {
	zwidthreport.Setup
	Results []Result `json:"results"`
}

// NewReport describes results found with c; renderers names the wall and
// passivity implementations used.
func NewReport(c Config, renderers string, results []Result) Report {
	p, h := c.Physics, c.Hand
	return Report{
		Setup: zwidthreport.Setup{
			Mode:   "virtual",
			MassKg: p.MassKg, DampingNspm: p.DampingNspm,
			StaticFrictionN: p.StaticFrictionN, KineticFrictionN: p.KineticFrictionN,
			EncoderStepM: p.EncoderStepM, MaxForceN: sim.MaxForceN,
			HandMassKg: h.MassKg, HandStiffnessNpm: h.StiffnessNpm, HandDampingNspm: h.DampingNspm,
			PushN: c.PushN, GapM: c.GapM, EnergyBoundJ: c.EnergyBoundJ, OscillationM: c.OscillationM,
			SettleS: c.SettleS, WindowS: c.WindowS, MinNpm: c.MinNpm, MaxNpm: c.MaxNpm, ToleranceRatio: c.ToleranceRatio,
			Renderers: renderers,
		},
		Results: results,
	}
}
