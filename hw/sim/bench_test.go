package sim

import (
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// BenchmarkArmExchange is one 1 kHz tick of one arm under a force command
// with the circle hand, the common case of a service full of simulated
// arms. BenchmarkArmStepBaseline is the bare cost of the physics with no
// kinematics, motion or state report, so the ratio between the two shows
// what the driver surface costs.
func BenchmarkArmExchange(b *testing.B) {
	for _, tc := range []struct {
		name string
		cmd  hw.Command
	}{
		{"force", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 2}}},
		{"position", hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{Y: 0.17, Z: 0.1}}},
		{"torque", hw.Command{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A1: 100}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			a := NewArm(ArmOptions{PeriodS: 0.001, Motion: MotionCircle})
			var st hw.State
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Exchange(&tc.cmd, &st); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkArmStepBaseline(b *testing.B) {
	a := NewArm(ArmOptions{PeriodS: 0.001})
	f := hw.Vec3{Z: 2}
	k := a.c.coefficients()
	for b.Loop() {
		a.c.step(f, &k)
	}
}

// BenchmarkArms1000 steps a thousand arms once each per iteration: one tick
// of a service simulating a thousand arms on one core. ns/arm is the figure
// to compare with the tick budget (1 ms at 1 kHz).
func BenchmarkArms1000(b *testing.B) {
	const n = 1000
	arms := make([]*Arm, n)
	for i := range arms {
		arms[i] = NewArm(ArmOptions{Index: i, PeriodS: 0.001, Motion: Motion(i % 3), Seed: 1})
	}
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: EffectiveMassKg * GravityMps2}}
	var st hw.State
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range arms {
			if err := a.Exchange(&cmd, &st); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/arm")
}

func BenchmarkGripExchange(b *testing.B) {
	g := NewGrip(GripOptions{PeriodS: 0.001, Motion: MotionRandom})
	var st hw.State
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Exchange(nil, &st); err != nil {
			b.Fatal(err)
		}
	}
}
