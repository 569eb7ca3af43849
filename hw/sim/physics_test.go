package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// physicsArm builds an arm with p at 1 kHz, failing the test on an error.
func physicsArm(t *testing.T, p Physics) *Arm {
	t.Helper()
	a, err := NewArmWithPhysics(ArmOptions{PeriodS: testPeriodS}, p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// hover is a force command that carries the arm's weight plus extra.
func hover(p Physics, extra hw.Vec3) hw.Command {
	f := extra
	f.Z += p.MassKg * GravityMps2
	return hw.Command{Mode: hw.ModeForce, ForceN: f}
}

// The arm's mass and viscous damping are integrated exactly under a held
// force: after an impulse, a free cursor's speed decays as e^(−b·t/m),
// whatever the mass and damping.
func TestFreeDecayFollowsDamping(t *testing.T) {
	tests := []struct {
		name       string
		massKg, bN float64
	}{
		{"default arm", 0.2, 1},
		{"heavy and lightly damped", 1.5, 0.3},
		{"light and strongly damped", 0.1, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPhysics()
			p.MassKg, p.DampingNspm = tc.massKg, tc.bN
			p.StaticFrictionN, p.KineticFrictionN = 0, 0
			a := physicsArm(t, p)
			run(t, a, hover(p, hw.Vec3{X: 2}), 0.02, nil) // the impulse
			v0 := run(t, a, hover(p, hw.Vec3{}), 0.001, nil).VelocityMps.X
			v1 := run(t, a, hover(p, hw.Vec3{}), 0.1, nil).VelocityMps.X
			want := v0 * math.Exp(-tc.bN*0.1/tc.massKg)
			if v0 <= 0 || math.Abs(v1-want) > 1e-9*math.Abs(v0) {
				t.Errorf("speed after 0.1 s of free decay: %.9f m/s, want %.9f (from %.6f)", v1, want, v0)
			}
		})
	}
}

// Coulomb friction holds a resting cursor against a net force below the
// static level, and a force above it moves the cursor against the kinetic
// level: the terminal speed is (F − kinetic)/b.
func TestFrictionSticksThenSlips(t *testing.T) {
	p := DefaultPhysics()
	p.StaticFrictionN, p.KineticFrictionN = 0.3, 0.2
	p.DampingNspm = 5 // a slow slide stays inside the workspace
	tests := []struct {
		name      string
		pushN     float64
		wantSpeed float64 // after 0.4 s (10 m/b); 0: the cursor never moved
	}{
		{"below static friction the cursor sticks", 0.29, 0},
		{"above static friction it slides against kinetic friction", 0.5, (0.5 - 0.2) / 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := physicsArm(t, p)
			start := a.c.TruePosition()
			end := run(t, a, hover(p, hw.Vec3{Y: tc.pushN}), 0.4, nil)
			if tc.wantSpeed == 0 {
				if a.c.TruePosition() != start || end.VelocityMps != (hw.Vec3{}) {
					t.Errorf("cursor moved under %.2f N: %+v → %+v, v %+v", tc.pushN, start, a.c.TruePosition(), end.VelocityMps)
				}
				return
			}
			if got := end.VelocityMps.Y; math.Abs(got-tc.wantSpeed) > 0.01*tc.wantSpeed {
				t.Errorf("speed under %.2f N: %.4f m/s, want (F − kinetic)/b = %.4f", tc.pushN, got, tc.wantSpeed)
			}
		})
	}
}

// The encoder reports positions on its grid: every reported coordinate is a
// multiple of the step, within half a step of the true position, and a slow
// drift shows as single steps.
func TestEncoderQuantizesPosition(t *testing.T) {
	const step = 1e-4
	p := DefaultPhysics()
	p.EncoderStepM = step
	p.StaticFrictionN, p.KineticFrictionN = 0, 0
	a := physicsArm(t, p)
	prev := math.NaN()
	steps := 0
	run(t, a, hover(p, hw.Vec3{X: 0.001}), 1, func(st *hw.State) {
		x := st.PositionM.X
		if k := x / step; math.Abs(k-math.Round(k)) > 1e-6 {
			t.Fatalf("reported x %.9f is not a multiple of %v", x, step)
		}
		if d := math.Abs(x - a.c.TruePosition().X); d > step/2+1e-12 {
			t.Fatalf("reported x %.6f is %.2e from the true %.6f, over half a step", x, d, a.c.TruePosition().X)
		}
		if !math.IsNaN(prev) && x != prev {
			if math.Abs(math.Abs(x-prev)-step) > 1e-9 {
				t.Fatalf("reported x jumped %.6f → %.6f: more than one step at a crawl", prev, x)
			}
			steps++
		}
		prev = x
	})
	if steps < 3 {
		t.Errorf("a 1 mm/s crawl over 1 s showed %d encoder steps, want several", steps)
	}
}

// The hand model is a second mass on a spring and damper: a knock on the
// handle makes hand and handle ring against each other at the two-mass
// system's damped frequency sqrt(k/μ − (c/2μ)²), μ the reduced mass.
func TestHandModelResonance(t *testing.T) {
	tests := []struct {
		name string
		hand Hand
	}{
		{"default hand", DefaultHand()},
		{"stiff light grip", Hand{Model: true, MassKg: 0.05, StiffnessNpm: 2000, DampingNspm: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPhysics()
			p.DampingNspm, p.StaticFrictionN, p.KineticFrictionN = 0, 0, 0
			p.Hand = tc.hand
			a := physicsArm(t, p)
			run(t, a, hover(p, hw.Vec3{X: 1}), 0.005, nil)
			mu := p.MassKg * tc.hand.MassKg / (p.MassKg + tc.hand.MassKg)
			z := tc.hand.DampingNspm / (2 * mu)
			want := math.Sqrt(tc.hand.StiffnessNpm/mu-z*z) / (2 * math.Pi)
			var crossings []float64
			prev, tS := 0.0, 0.0
			run(t, a, hover(p, hw.Vec3{}), 1, func(*hw.State) {
				tS += testPeriodS
				hp, _ := a.c.HandPosition()
				rel := hp.X - a.c.TruePosition().X
				if prev < 0 && rel >= 0 {
					crossings = append(crossings, tS-testPeriodS*rel/(rel-prev))
				}
				prev = rel
			})
			if len(crossings) < 4 {
				t.Fatalf("hand and handle crossed %d times in 1 s; want a ringing at %.1f Hz", len(crossings), want)
			}
			got := float64(len(crossings)-1) / (crossings[len(crossings)-1] - crossings[0])
			if math.Abs(got-want) > 0.02*want {
				t.Errorf("hand-handle resonance %.2f Hz, want %.2f Hz", got, want)
			}
		})
	}
}

// A pushing hand with no model pushes the handle itself: the same push
// moves the cursor the same way as an actuator force would.
func TestHandPushWithoutModelActsOnHandle(t *testing.T) {
	p := DefaultPhysics()
	p.Hand.PushN = hw.Vec3{X: 0.8}
	pushed := physicsArm(t, p)
	driven := physicsArm(t, DefaultPhysics())
	a := run(t, pushed, hover(p, hw.Vec3{}), 0.2, nil)
	b := run(t, driven, hover(p, hw.Vec3{X: 0.8}), 0.2, nil)
	if a.PositionM.Sub(b.PositionM).Norm() > 1e-9 {
		t.Errorf("a 0.8 N push took the handle to %+v, an actuator force to %+v", a.PositionM, b.PositionM)
	}
}

func TestPhysicsRejectsBadValues(t *testing.T) {
	tests := []struct {
		name string
		edit func(p *Physics)
		want string
	}{
		{"zero mass", func(p *Physics) { p.MassKg = 0 }, "mass"},
		{"negative damping", func(p *Physics) { p.DampingNspm = -1 }, "damping"},
		{"kinetic above static", func(p *Physics) { p.KineticFrictionN = 1 }, "friction"},
		{"coarse encoder", func(p *Physics) { p.EncoderStepM = 0.01 }, "encoder"},
		{"NaN", func(p *Physics) { p.DampingNspm = math.NaN() }, "finite"},
		{"tiny sub-step", func(p *Physics) { p.MaxSubstepS = 1e-9 }, "sub-step"},
		{"hand without mass", func(p *Physics) { p.Hand = Hand{Model: true, StiffnessNpm: 100} }, "hand mass"},
		{"push over the force limit", func(p *Physics) { p.Hand.PushN = hw.Vec3{Z: 20} }, "push"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPhysics()
			tc.edit(&p)
			a, err := NewArmWithPhysics(ArmOptions{}, p)
			if err == nil || a != nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got arm %v, error %v; want a refusal naming %q", a != nil, err, tc.want)
			}
		})
	}
	if err := Inverse3Physics().Validate(); err != nil {
		t.Errorf("the Inverse3 preset is invalid: %v", err)
	}
}

func TestPhysicsReportsMass(t *testing.T) {
	p := DefaultPhysics()
	p.MassKg = 0.35
	if got := physicsArm(t, p).Info().EffectiveMassKg; got != 0.35 {
		t.Errorf("Info.EffectiveMassKg = %v, want the physics' 0.35 (the loop's gravity compensation reads it)", got)
	}
}

func TestHandModelStepDoesNotAllocate(t *testing.T) {
	p := Inverse3Physics()
	p.Hand = DefaultHand()
	p.Hand.PushN = hw.Vec3{X: 1}
	a := physicsArm(t, p)
	cmd := hover(p, hw.Vec3{})
	var st hw.State
	if n := testing.AllocsPerRun(200, func() { _ = a.Exchange(&cmd, &st) }); n != 0 {
		t.Errorf("%.1f allocations per exchange with the hand model", n)
	}
}
