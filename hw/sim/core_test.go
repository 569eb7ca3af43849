package sim

import (
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// TestExchangeCoreThenDeriveIsExchange: a reader that derives the state the
// loop published lazily sees exactly what a full Exchange reports, for
// every mode, motion and handedness.
func TestExchangeCoreThenDeriveIsExchange(t *testing.T) {
	cmds := []hw.Command{
		{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 1, Z: 2}},
		{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A1: 200}},
		{Mode: hw.ModePosition, PositionM: hw.Vec3{Y: 0.17, Z: 0.1}},
		{Mode: hw.ModeIdle},
	}
	for _, left := range []bool{false, true} {
		for _, m := range []Motion{MotionNone, MotionCircle, MotionRandom} {
			full := NewArm(ArmOptions{Index: 3, PeriodS: 0.001, Motion: m, Seed: 7})
			lazy := NewArm(ArmOptions{Index: 3, PeriodS: 0.001, Motion: m, Seed: 7})
			s := hw.Settings{LeftHanded: left, TorqueScaling: true, GravityCompensation: true, GravityScale: 1}
			if err := full.Configure(s); err != nil {
				t.Fatal(err)
			}
			if err := lazy.Configure(s); err != nil {
				t.Fatal(err)
			}
			var want, core hw.State
			for i := 0; i < 400; i++ {
				cmd := cmds[(i/100)%len(cmds)]
				if err := full.Exchange(&cmd, &want); err != nil {
					t.Fatal(err)
				}
				if _, err := lazy.ExchangeCore(&cmd, &core); err != nil {
					t.Fatal(err)
				}
				got := core
				lazy.DeriveState(&got, lazy.LeftHanded())
				if got != want {
					t.Fatalf("left %v motion %v tick %d: derived %+v, full exchange %+v", left, m, i, got, want)
				}
			}
		}
	}
}

// TestRestingArmReportsNoMove: an idle arm whose weight is carried rests,
// and ExchangeCore says so (the loop then publishes nothing); a push moves
// it again.
func TestRestingArmReportsNoMove(t *testing.T) {
	a := NewArm(ArmOptions{PeriodS: 0.001})
	hold := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: EffectiveMassKg * GravityMps2}}
	var st hw.State
	moved, err := a.ExchangeCore(&hold, &st)
	if err != nil || !moved || st.Status == 0 {
		t.Fatalf("first exchange: moved %v err %v status %v, want a filled state", moved, err, st.Status)
	}
	for i := 0; i < 10; i++ {
		if moved, err = a.ExchangeCore(&hold, &st); err != nil || moved {
			t.Fatalf("tick %d of a held arm at rest: moved %v err %v", i, moved, err)
		}
	}
	push := hold
	push.ForceN.X = 3
	if moved, err = a.ExchangeCore(&push, &st); err != nil || !moved || st.VelocityMps.X <= 0 {
		t.Fatalf("a push: moved %v err %v velocity %+v", moved, err, st.VelocityMps)
	}
}
