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

// TestMovedCoreStepsTheSameArm: an arm whose physics state was moved out
// (as a scheduler shard does) and back steps exactly as one that kept it,
// and the moved-out core steps it meanwhile.
func TestMovedCoreStepsTheSameArm(t *testing.T) {
	kept := NewArm(ArmOptions{Index: 2, PeriodS: 0.001, Motion: MotionRandom, Seed: 4})
	moved := NewArm(ArmOptions{Index: 2, PeriodS: 0.001, Motion: MotionRandom, Seed: 4})
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 0.5, Z: 2}}
	var want, got hw.State
	var cores [2]ArmCore
	for i := 0; i < 600; i++ {
		switch i {
		case 100:
			moved.MoveCore(&cores[1])
		case 300:
			moved.MoveCore(nil)
		}
		if err := kept.Exchange(&cmd, &want); err != nil {
			t.Fatal(err)
		}
		if i >= 100 && i < 300 {
			// Stepped where it lives now, as the shard does.
			if _, err := cores[1].Step(&cmd); err != nil {
				t.Fatal(err)
			}
			got = hw.State{}
			cores[1].Fill(&got)
			DeriveArmState(&got, cores[1].LeftHanded())
		} else if err := moved.Exchange(&cmd, &got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("tick %d: moved arm %+v, kept arm %+v", i, got, want)
		}
	}
	if err := moved.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cores[1].Step(&cmd); err != nil {
		t.Fatalf("the core the arm left behind is no longer the arm's: %v", err)
	}
}
