package sim

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// stepsStably runs a free arm with physics p, no command but its weight
// held, for 2 s at hz, and says what went wrong, or "".
func stepsStably(t *testing.T, p Physics, hz float64) string {
	t.Helper()
	a, err := NewArmWithPhysics(ArmOptions{PeriodS: 1 / hz, Motion: MotionNone}, p)
	if err != nil {
		t.Fatal(err)
	}
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: p.MassKg * GravityMps2}}
	var st hw.State
	peak := 0.0
	for range int(2 * hz) {
		if err := a.Exchange(&cmd, &st); err != nil {
			t.Fatal(err)
		}
		peak = math.Max(peak, st.VelocityMps.Norm())
	}
	hp, _ := a.c.HandPosition()
	if !(peak < 5) || !st.PositionM.Finite() || !hp.Finite() {
		return fmt.Sprintf("peak speed %v m/s, handle %v, hand %v", peak, st.PositionM, hp)
	}
	return ""
}

// Every Physics that Validate accepts steps without blowing up: a free arm
// with the hand model pushing 0.5 N, 2 s at 1 and 4 kHz, stays in the
// workspace at a bounded speed. Before, a grip of 1e5 N/m at the 1 ms
// sub-step Validate accepted reached 217 m/s; a grip damped at 1000 N·s/m
// on a 10 g hand, or at the 1 ms sub-step, blew up too: the hand
// coupling is integrated explicitly, and the arm now sub-steps as short as
// it needs (stableSubstepS).
func TestAcceptedPhysicsStepsStably(t *testing.T) {
	cases := []struct {
		name string
		mod  func(p *Physics)
	}{
		{"default hand", func(p *Physics) {}},
		{"hand damping 1000 (the maximum)", func(p *Physics) { p.Hand.DampingNspm = 1000 }},
		{"light hand, damping 100", func(p *Physics) { p.Hand.MassKg = 0.01; p.Hand.DampingNspm = 100 }},
		{"stiff grip 1e5, light hand", func(p *Physics) { p.Hand.MassKg = 0.01; p.Hand.StiffnessNpm = 1e5 }},
		{"stiff grip 1e5, 1 ms sub-step", func(p *Physics) { p.Hand.StiffnessNpm = 1e5; p.MaxSubstepS = 1e-3 }},
		{"stiff grip 1e5, light hand, 1 ms sub-step", func(p *Physics) {
			p.Hand.MassKg = 0.01
			p.Hand.StiffnessNpm = 1e5
			p.MaxSubstepS = 1e-3
		}},
		{"grip damping 1000, light hand", func(p *Physics) { p.Hand.MassKg = 0.01; p.Hand.DampingNspm = 1000 }},
		{"grip damping 1000, 1 ms sub-step", func(p *Physics) { p.Hand.DampingNspm = 1000; p.MaxSubstepS = 1e-3 }},
		{"light arm 0.01 kg, no hand", func(p *Physics) { p.MassKg = 0.01; p.Hand.Model = false }},
		{"light arm 0.01 kg", func(p *Physics) { p.MassKg = 0.01 }},
		{"hand of 1 g", func(p *Physics) { p.Hand.MassKg = 0.001 }},
		{"undamped stiff grip", func(p *Physics) { p.Hand.StiffnessNpm = 1e5; p.Hand.DampingNspm = 0 }},
	}
	// The corners of the ranges where the coupling is hardest to step.
	for _, armKg := range []float64{0.05, 0.2} {
		for _, handKg := range []float64{0.001, 1} {
			for _, k := range []float64{300, 1e5} {
				for _, c := range []float64{0, 3, 1000} {
					cases = append(cases, struct {
						name string
						mod  func(p *Physics)
					}{fmt.Sprintf("arm %v kg, hand %v kg, grip %v N/m %v N·s/m", armKg, handKg, k, c), func(p *Physics) {
						p.MassKg, p.Hand.MassKg, p.Hand.StiffnessNpm, p.Hand.DampingNspm = armKg, handKg, k, c
						p.MaxSubstepS = 1e-3
					}})
				}
			}
		}
	}
	for _, c := range cases {
		for _, hz := range []float64{1000, 4000} {
			t.Run(fmt.Sprintf("%s/%g Hz", c.name, hz), func(t *testing.T) {
				p := DefaultPhysics()
				p.Hand = DefaultHand()
				p.Hand.PushN = hw.Vec3{X: 0.5}
				c.mod(&p)
				if err := p.Validate(); err != nil {
					t.Skipf("refused: %v", err)
				}
				if bad := stepsStably(t, p, hz); bad != "" {
					t.Fatalf("accepted physics %+v (arm %v kg, sub-step ≤ %v s): %s", p.Hand, p.MassKg, p.MaxSubstepS, bad)
				}
			})
		}
	}
}

// Validate refuses a hand whose grip no sub-step down to 1 µs steps
// stably, and says why and what would help; it accepts the grips the arm
// sub-steps for. A grip with no damping on it or on the arm was refused
// with "use a heavier hand or a softer grip": neither helps, since the
// sampled grip spring gains energy at any sub-step and only damping takes
// it out.
func TestValidateRefusesAGripNoSubstepSteps(t *testing.T) {
	cases := []struct {
		name   string
		mod    func(p *Physics)
		refuse bool
		says   []string // the advice the error gives
		not    []string // advice that would not help
	}{
		{"default hand", func(p *Physics) {}, false, nil, nil},
		{"stiff grip 1e5 on a 1 g hand", func(p *Physics) { p.Hand.MassKg = 0.001; p.Hand.StiffnessNpm = 1e5 }, false, nil, nil},
		{"grip damping 1000 on a 1 mg hand", func(p *Physics) { p.Hand.MassKg = 1e-6; p.Hand.DampingNspm = 1000 }, true,
			[]string{"heavier hand", "less damping on the grip"}, []string{"more damping", "softer grip"}},
		{"no damping anywhere", func(p *Physics) { p.DampingNspm = 0; p.Hand.DampingNspm = 0 }, true,
			[]string{"no damping on the grip or the arm", "at least 0.000501 N·s/m of damping on the grip or the arm"},
			[]string{"heavier", "softer"}},
		{"too little damping for a stiff grip", func(p *Physics) { p.DampingNspm = 0; p.Hand.DampingNspm = 0.05; p.Hand.StiffnessNpm = 1e5 }, true,
			[]string{"0.05 N·s/m of damping on the grip and the arm together", "at least 0.101 N·s/m", "a grip of at most 4.97e+04 N/m"},
			[]string{"heavier"}},
		{"the damping that refusal advised", func(p *Physics) { p.DampingNspm = 0; p.Hand.DampingNspm = 0.101; p.Hand.StiffnessNpm = 1e5 }, false, nil, nil},
		{"the grip that refusal advised", func(p *Physics) { p.DampingNspm = 0; p.Hand.DampingNspm = 0.05; p.Hand.StiffnessNpm = 4.97e4 }, false, nil, nil},
		{"no damping but the grip's that refusal advised", func(p *Physics) { p.DampingNspm = 0; p.Hand.DampingNspm = 0.000501 }, false, nil, nil},
		{"no damping anywhere, no hand model", func(p *Physics) { p.DampingNspm = 0; p.Hand.Model = false }, false, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := DefaultPhysics()
			p.Hand = DefaultHand()
			c.mod(&p)
			err := p.Validate()
			if (err != nil) != c.refuse {
				t.Fatalf("Validate = %v, want refused %v", err, c.refuse)
			}
			if err == nil {
				return
			}
			if !strings.Contains(err.Error(), "sub-steps under 1 µs") {
				t.Fatalf("Validate = %v: does not say why", err)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Validate = %v: does not say %q", err, s)
				}
			}
			for _, s := range c.not {
				if strings.Contains(err.Error(), s) {
					t.Errorf("Validate = %v: advises %q, which would not help", err, s)
				}
			}
		})
	}
}
