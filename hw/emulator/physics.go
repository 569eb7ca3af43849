package emulator

import (
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// defaultPhysics is the simulated device of o's family, so emulated physics
// is simulated physics: a Minverse rests at the Minverse's workspace centre
// and pushes no harder than its limit. A grip steps once per status frame.
func defaultPhysics(o Options) hw.Driver {
	period := o.PeriodS
	if o.Kind == hw.KindGrip {
		period = o.GripStatusPeriod.Seconds()
	}
	return sim.NewDevice(o.Family, o.Index, sim.ArmOptions{PeriodS: period, Motion: o.Motion, Seed: o.Seed})
}

// gravityN is the weight of the physics' end effector: the emulated
// firmware adds it (times the configured scale) to force commands, as real
// firmware compensates gravity itself. A model that reports no mass is
// taken as the simulated arm's.
func gravityN(physics hw.Driver) float64 {
	m := physics.Info().EffectiveMassKg
	if m <= 0 {
		m = sim.EffectiveMassKg
	}
	return m * sim.GravityMps2
}
