package emulator

import (
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// defaultPhysics is a simulated arm or grip, so emulated physics is
// simulated physics. A grip steps once per status frame.
func defaultPhysics(o Options) hw.Driver {
	if o.Kind == hw.KindGrip {
		return sim.NewGrip(sim.GripOptions{Index: o.Index, PeriodS: o.GripStatusPeriod.Seconds(), Motion: o.Motion, Seed: o.Seed})
	}
	return sim.NewArm(sim.ArmOptions{Index: o.Index, PeriodS: o.PeriodS, Motion: o.Motion, Seed: o.Seed})
}

// gravityN is the weight of the simulated end effector: the emulated
// firmware adds it (times the configured scale) to force commands, as real
// firmware compensates gravity itself.
const gravityN = sim.EffectiveMassKg * sim.GravityMps2
