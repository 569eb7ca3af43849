package emulator

import (
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// defaultPhysics is a simulated arm, so emulated physics is simulated
// physics.
func defaultPhysics(o Options) (hw.Driver, error) {
	return sim.NewArm(sim.ArmOptions{Index: o.Index, PeriodS: o.PeriodS, Motion: o.Motion, Seed: o.Seed}), nil
}

// gravityN is the weight of the simulated end effector: the emulated
// firmware adds it (times the configured scale) to force commands, as real
// firmware compensates gravity itself.
const gravityN = sim.EffectiveMassKg * sim.GravityMps2
