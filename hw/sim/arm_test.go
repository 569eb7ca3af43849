package sim

import (
	"errors"
	"math"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

const testPeriodS = 0.001

func weightN() float64 { return EffectiveMassKg * GravityMps2 }

// run steps a for seconds of simulated time under cmd and calls each (when
// non-nil) with every reported state.
func run(t *testing.T, a *Arm, cmd hw.Command, seconds float64, each func(st *hw.State)) hw.State {
	t.Helper()
	var st hw.State
	n := int(math.Round(seconds / a.periodS))
	for i := 0; i < n; i++ {
		if err := a.Exchange(&cmd, &st); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		if each != nil {
			each(&st)
		}
	}
	return st
}

func dist(a, b hw.Vec3) float64 { return a.Sub(b).Norm() }

func TestArmPhysics(t *testing.T) {
	c := hw.ArmWorkspaceCenterM()
	bottom := hw.Vec3{X: c.X, Y: c.Y, Z: c.Z - WorkspaceRadiusM}
	tests := []struct {
		name    string
		cmd     hw.Command
		seconds float64
		check   func(t *testing.T, end hw.State, maxOffM float64)
	}{{
		name:    "constant upward force lifts the cursor",
		cmd:     hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: weightN() + 1}},
		seconds: 0.1,
		check: func(t *testing.T, end hw.State, _ float64) {
			if end.PositionM.Z <= c.Z+0.001 || end.VelocityMps.Z <= 0 {
				t.Errorf("cursor did not rise: z=%.4f vz=%.4f (start %.4f)", end.PositionM.Z, end.VelocityMps.Z, c.Z)
			}
		},
	}, {
		name:    "no force: gravity sags the cursor onto the boundary and it stops",
		cmd:     hw.Command{Mode: hw.ModeForce},
		seconds: 3,
		check: func(t *testing.T, end hw.State, _ float64) {
			if d := dist(end.PositionM, bottom); d > 0.002 {
				t.Errorf("rest point %+v is %.4f m from the boundary bottom %+v", end.PositionM, d, bottom)
			}
			if end.VelocityMps.Norm() != 0 {
				t.Errorf("cursor still moving at rest: %+v", end.VelocityMps)
			}
		},
	}, {
		name:    "idle mode sags the same way",
		cmd:     hw.Command{Mode: hw.ModeIdle},
		seconds: 3,
		check: func(t *testing.T, end hw.State, _ float64) {
			if d := dist(end.PositionM, bottom); d > 0.002 {
				t.Errorf("rest point %+v is %.4f m from the boundary bottom", end.PositionM, d)
			}
		},
	}, {
		name:    "holding m·g up compensates gravity: the cursor stays put",
		cmd:     hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: weightN()}},
		seconds: 2,
		check: func(t *testing.T, end hw.State, maxOffM float64) {
			if maxOffM > 1e-9 {
				t.Errorf("cursor drifted %.3g m from the centre", maxOffM)
			}
		},
	}, {
		name:    "half compensation still sags onto the boundary",
		cmd:     hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: weightN() / 2}},
		seconds: 3,
		check: func(t *testing.T, end hw.State, _ float64) {
			if d := dist(end.PositionM, bottom); d > 0.002 {
				t.Errorf("rest point %+v is %.4f m from the boundary bottom", end.PositionM, d)
			}
		},
	}, {
		name:    "static friction holds a tiny net force",
		cmd:     hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 0.1, Z: weightN()}},
		seconds: 2,
		check: func(t *testing.T, end hw.State, maxOffM float64) {
			if maxOffM != 0 {
				t.Errorf("cursor moved %.3g m under a net force below static friction", maxOffM)
			}
		},
	}, {
		name:    "a net force above static friction moves it",
		cmd:     hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 0.5, Z: weightN()}},
		seconds: 0.2,
		check: func(t *testing.T, end hw.State, maxOffM float64) {
			if end.PositionM.X <= c.X+0.001 {
				t.Errorf("cursor did not move along +X: %+v", end.PositionM)
			}
		},
	}, {
		name:    "boundary holds under a large outward force",
		cmd:     hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 100, Y: 50, Z: 30}},
		seconds: 2,
		check: func(t *testing.T, end hw.State, maxOffM float64) {
			if limit := WorkspaceRadiusM + EndStopMarginM; maxOffM > limit {
				t.Errorf("cursor reached %.4f m from the centre, beyond %.4f", maxOffM, limit)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewArm(ArmOptions{PeriodS: testPeriodS})
			maxOff := 0.0
			end := run(t, a, tt.cmd, tt.seconds, func(st *hw.State) {
				maxOff = math.Max(maxOff, dist(st.PositionM, c))
			})
			tt.check(t, end, maxOff)
		})
	}
}

func TestArmForceClamp(t *testing.T) {
	tests := []struct {
		name string
		cmd  hw.Command
	}{
		{"huge force", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 1e6, Y: -3e5, Z: 42}}},
		{"huge torques", hw.Command{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A0: 1e7, A1: -1e7, A2: 1e7}}},
		{"far position target", hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{X: 5, Y: -5, Z: 5}}},
		{"far angle target", hw.Command{Mode: hw.ModeAngle, AnglesDeg: hw.Angles3{A0: 170, A1: -80, A2: -10}}},
		{"NaN force gives no force", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: math.NaN()}}},
		{"infinite force gives no force", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: math.Inf(1)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewArm(ArmOptions{PeriodS: testPeriodS})
			limitN := MaxForceN // servos and torques carry gravity within the limit
			if tt.cmd.Mode == hw.ModeForce {
				limitN = hw.ActuatorLimitN(MaxForceN, EffectiveMassKg)
			}
			run(t, a, tt.cmd, 0.5, func(st *hw.State) {
				if f := st.ForceN.Norm(); !(f <= limitN*(1+1e-12)) {
					t.Fatalf("applied force %.3f N exceeds the clamp %.2f N", f, limitN)
				}
				if !st.PositionM.Finite() {
					t.Fatalf("position went non-finite: %+v", st.PositionM)
				}
			})
		})
	}
}

// TestArmForceLimitLeavesGravitySupportOut: the force limit is the
// client's; the host's gravity support (up to hw.MaxGravityScale times the
// weight) comes on top, as real firmware adds its own after the host's
// clamp, so +z at the limit is not cut short by the support.
func TestArmForceLimitLeavesGravitySupportOut(t *testing.T) {
	weight := EffectiveMassKg * GravityMps2
	for _, fam := range []Family{FamilyInverse3, FamilyMinverse} {
		limitN := fam.Spec().MaxForceN
		tests := []struct {
			name  string
			cmdZ  float64
			wantZ float64
		}{
			{"limit plus support", limitN + weight, limitN + weight},
			{"limit plus twice the support", limitN + 2*weight, limitN + 2*weight},
			{"beyond is clamped", 100, limitN + 2*weight},
		}
		for _, tt := range tests {
			t.Run(fam.String()+"/"+tt.name, func(t *testing.T) {
				a := NewArm(ArmOptions{Family: fam, PeriodS: testPeriodS})
				defer a.Close()
				var st hw.State
				if err := a.Exchange(&hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: tt.cmdZ}}, &st); err != nil {
					t.Fatal(err)
				}
				if math.Abs(st.ForceN.Z-tt.wantZ) > 1e-9 {
					t.Fatalf("%s asked %.3f N up applies %.3f N, want %.3f N", fam, tt.cmdZ, st.ForceN.Z, tt.wantZ)
				}
			})
		}
	}
}

func TestArmPositionServo(t *testing.T) {
	c := hw.ArmWorkspaceCenterM()
	targets := []hw.Vec3{
		{X: c.X + 0.06, Y: c.Y, Z: c.Z},
		{X: c.X - 0.05, Y: c.Y + 0.05, Z: c.Z - 0.03},
		{X: c.X, Y: c.Y - 0.07, Z: c.Z + 0.06},
		c,
	}
	for _, period := range []float64{0.001, 0.000125, 0.01} {
		for _, target := range targets {
			a := NewArm(ArmOptions{PeriodS: period})
			peak := 0.0
			end := run(t, a, hw.Command{Mode: hw.ModePosition, PositionM: target}, 3, func(st *hw.State) {
				peak = math.Max(peak, st.VelocityMps.Norm())
			})
			if d := dist(end.PositionM, target); d > 0.001 {
				t.Errorf("period %g: ended %.4f m from target %+v", period, d, target)
			}
			if peak > MaxServoSpeedMps*(1+1e-9) {
				t.Errorf("period %g: peak speed %.4f m/s exceeds the cap %.2f", period, peak, MaxServoSpeedMps)
			}
		}
	}
}

func TestArmAngleServo(t *testing.T) {
	for _, left := range []bool{false, true} {
		want := hw.Angles3{A0: 12, A1: 50, A2: -90}
		if d := dist(ForwardKinematics(want, left), hw.ArmWorkspaceCenterM()); d > WorkspaceRadiusM {
			t.Fatalf("test target lies %.3f m from the centre, outside the workspace", d)
		}
		a := NewArm(ArmOptions{PeriodS: testPeriodS})
		if err := a.Configure(hw.Settings{LeftHanded: left, GravityScale: 1}); err != nil {
			t.Fatal(err)
		}
		end := run(t, a, hw.Command{Mode: hw.ModeAngle, AnglesDeg: want}, 3, nil)
		if d := dist(end.PositionM, ForwardKinematics(want, left)); d > 0.001 {
			t.Errorf("left=%v: ended %.4f m from FK(target)", left, d)
		}
		got := end.AnglesDeg
		if math.Abs(got.A0-want.A0) > 0.5 || math.Abs(got.A1-want.A1) > 0.5 || math.Abs(got.A2-want.A2) > 0.5 {
			t.Errorf("left=%v: angles %+v, want about %+v", left, got, want)
		}
	}
}

func TestKinematicsRoundTrip(t *testing.T) {
	c := hw.ArmWorkspaceCenterM()
	const r = WorkspaceRadiusM + 0.005
	for _, left := range []bool{false, true} {
		for x := -r; x <= r; x += 0.01 {
			for y := -r; y <= r; y += 0.01 {
				for z := -r; z <= r; z += 0.01 {
					if x*x+y*y+z*z > r*r {
						continue
					}
					p := hw.Vec3{X: c.X + x, Y: c.Y + y, Z: c.Z + z}
					q, ok := InverseKinematics(p, left)
					if !ok {
						t.Fatalf("left=%v: workspace point %+v reported out of reach", left, p)
					}
					if d := dist(ForwardKinematics(q, left), p); d > 1e-9 {
						t.Fatalf("left=%v: FK(IK(%+v)) is %.3g m off", left, p, d)
					}
				}
			}
		}
	}
}

func TestKinematicsHandedness(t *testing.T) {
	p := hw.Vec3{X: 0.05, Y: 0.15, Z: 0.1}
	right, _ := InverseKinematics(p, false)
	left, _ := InverseKinematics(p, true)
	if right.A0 <= 0 || math.Abs(right.A0+left.A0) > 1e-12 {
		t.Errorf("base angle: right %.3f, left %.3f; want positive and mirrored", right.A0, left.A0)
	}
	if right.A1 != left.A1 || right.A2 != left.A2 {
		t.Errorf("handedness changed shoulder/elbow: %+v vs %+v", right, left)
	}
	if _, ok := InverseKinematics(hw.Vec3{Y: 1}, false); ok {
		t.Error("a point 1 m away was reported reachable")
	}
}

// numericJacobian differentiates ForwardKinematics, independently of the
// analytic jacobian.
func numericJacobian(q hw.Angles3, left bool) mat3 {
	const h = 1e-6 // rad
	var j mat3
	for col := 0; col < 3; col++ {
		dq := [3]float64{}
		dq[col] = h * degPerRad
		plus := ForwardKinematics(hw.Angles3{A0: q.A0 + dq[0], A1: q.A1 + dq[1], A2: q.A2 + dq[2]}, left)
		minus := ForwardKinematics(hw.Angles3{A0: q.A0 - dq[0], A1: q.A1 - dq[1], A2: q.A2 - dq[2]}, left)
		d := plus.Sub(minus).Scale(1 / (2 * h))
		j[0][col], j[1][col], j[2][col] = d.X, d.Y, d.Z
	}
	return j
}

func TestArmTorqueMode(t *testing.T) {
	tests := []struct {
		name    string
		torques hw.Angles3
		left    bool
	}{
		{"base torque", hw.Angles3{A0: 300}, false},
		{"shoulder torque", hw.Angles3{A1: 400}, false},
		{"elbow torque", hw.Angles3{A2: -250}, false},
		{"mixed, left-handed", hw.Angles3{A0: -200, A1: 150, A2: 100}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewArm(ArmOptions{PeriodS: testPeriodS})
			if err := a.Configure(hw.Settings{LeftHanded: tt.left, TorqueScaling: true, GravityScale: 1}); err != nil {
				t.Fatal(err)
			}
			q, _ := InverseKinematics(a.c.pos, tt.left)
			jt := numericJacobian(q, tt.left)
			jt = jt.transpose()
			want, ok := jt.solve([3]float64{tt.torques.A0 / 1000, tt.torques.A1 / 1000, tt.torques.A2 / 1000})
			if !ok {
				t.Fatal("singular test pose")
			}
			var st hw.State
			if err := a.Exchange(&hw.Command{Mode: hw.ModeTorque, TorquesNmm: tt.torques}, &st); err != nil {
				t.Fatal(err)
			}
			got := st.ForceN
			if d := dist(got, hw.Vec3{X: want[0], Y: want[1], Z: want[2]}); d > 1e-4 {
				t.Errorf("force %+v, Jacobian predicts %+v", got, want)
			}
			// Power balance: τ·ω equals F·v for any motion, the point of Jᵀ.
		})
	}
}

func TestArmTorqueScaling(t *testing.T) {
	over := hw.Angles3{A0: 2 * MaxJointTorqueNmm, A1: MaxJointTorqueNmm / 2}
	scaled := hw.Angles3{A0: MaxJointTorqueNmm, A1: MaxJointTorqueNmm / 4}
	clipped := hw.Angles3{A0: MaxJointTorqueNmm, A1: MaxJointTorqueNmm / 2}
	tests := []struct {
		name    string
		scaling bool
		same    hw.Angles3
	}{
		{"scaling on keeps the torque ratio", true, scaled},
		{"scaling off clips each joint", false, clipped},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewArm(ArmOptions{PeriodS: testPeriodS})
			b := NewArm(ArmOptions{PeriodS: testPeriodS})
			for _, arm := range []*Arm{a, b} {
				if err := arm.Configure(hw.Settings{TorqueScaling: tt.scaling, GravityScale: 1}); err != nil {
					t.Fatal(err)
				}
			}
			var sa, sb hw.State
			if err := a.Exchange(&hw.Command{Mode: hw.ModeTorque, TorquesNmm: over}, &sa); err != nil {
				t.Fatal(err)
			}
			if err := b.Exchange(&hw.Command{Mode: hw.ModeTorque, TorquesNmm: tt.same}, &sb); err != nil {
				t.Fatal(err)
			}
			if d := dist(sa.ForceN, sb.ForceN); d > 1e-12 {
				t.Errorf("over-limit torques gave %+v, want the force of %+v: %+v", sa.ForceN, tt.same, sb.ForceN)
			}
		})
	}
}

func TestArmAngularVelocityMatchesAngles(t *testing.T) {
	a := NewArm(ArmOptions{PeriodS: testPeriodS, Motion: MotionCircle})
	var prev, st hw.State
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: weightN()}}
	run(t, a, cmd, 0.5, nil)
	if err := a.Exchange(&cmd, &prev); err != nil {
		t.Fatal(err)
	}
	if err := a.Exchange(&cmd, &st); err != nil {
		t.Fatal(err)
	}
	fd := [3]float64{
		(st.AnglesDeg.A0 - prev.AnglesDeg.A0) / testPeriodS,
		(st.AnglesDeg.A1 - prev.AnglesDeg.A1) / testPeriodS,
		(st.AnglesDeg.A2 - prev.AnglesDeg.A2) / testPeriodS,
	}
	got := [3]float64{st.AngularVelocityDps.A0, st.AngularVelocityDps.A1, st.AngularVelocityDps.A2}
	for i := range fd {
		// The difference quotient lags the instantaneous rate by half a
		// step, hence the small absolute slack.
		if math.Abs(fd[i]-got[i]) > 0.01*math.Abs(fd[i])+0.1 {
			t.Errorf("joint %d: reported %.3f deg/s, angles changed at %.3f deg/s", i, got[i], fd[i])
		}
	}
}

func TestArmBodyOrientationFollowsBase(t *testing.T) {
	a := NewArm(ArmOptions{PeriodS: testPeriodS})
	c := hw.ArmWorkspaceCenterM()
	target := hw.Vec3{X: 0.08, Y: c.Y, Z: c.Z}
	end := run(t, a, hw.Command{Mode: hw.ModePosition, PositionM: target}, 2, nil)
	// Rotating +Y by the body orientation must point at the cursor's heading.
	q := end.BodyOrientation
	fwd := quatMul(quatMul(q, hw.Quat{Y: 1}), hw.Quat{W: q.W, X: -q.X, Y: -q.Y, Z: -q.Z})
	heading := math.Atan2(end.PositionM.X, end.PositionM.Y)
	if math.Abs(fwd.X-math.Sin(heading)) > 1e-9 || math.Abs(fwd.Y-math.Cos(heading)) > 1e-9 {
		t.Errorf("body forward %+v, want heading %.3f rad", fwd, heading)
	}
}

func TestArmMotion(t *testing.T) {
	c := hw.ArmWorkspaceCenterM()
	for _, m := range []Motion{MotionCircle, MotionRandom} {
		t.Run(m.String(), func(t *testing.T) {
			a := NewArm(ArmOptions{PeriodS: testPeriodS, Motion: m, Seed: 7})
			cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: weightN()}}
			travel, maxOff := 0.0, 0.0
			last := c
			run(t, a, cmd, 4, func(st *hw.State) {
				travel += dist(st.PositionM, last)
				last = st.PositionM
				maxOff = math.Max(maxOff, dist(st.PositionM, c))
			})
			if travel < 0.1 {
				t.Errorf("cursor travelled only %.4f m in 4 s", travel)
			}
			if maxOff > WorkspaceRadiusM {
				t.Errorf("the hand took the cursor %.4f m from the centre", maxOff)
			}
		})
	}
}

func TestArmRandomMotionIsReproducible(t *testing.T) {
	trace := func(seed int64) hw.Vec3 {
		a := NewArm(ArmOptions{Index: 3, PeriodS: testPeriodS, Motion: MotionRandom, Seed: seed})
		return run(t, a, hw.Command{}, 3, nil).PositionM
	}
	if trace(11) != trace(11) {
		t.Error("the same seed gave different paths")
	}
	if trace(11) == trace(12) {
		t.Error("different seeds gave the same path")
	}
}

func TestArmHaltAndClose(t *testing.T) {
	a := NewArm(ArmOptions{PeriodS: testPeriodS})
	var st hw.State
	push := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 3}}
	if err := a.Exchange(&push, &st); err != nil || st.ForceN.X != 3 {
		t.Fatalf("exchange: %v, force %+v", err, st.ForceN)
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := a.Halt(); err != nil {
			t.Fatalf("halt %d: %v", i, err)
		}
	}
	if err := a.Exchange(&hw.Command{Mode: hw.ModeIdle}, &st); err != nil {
		t.Fatal(err)
	}
	if st.ForceN != (hw.Vec3{}) {
		t.Errorf("force after halt: %+v, want zero", st.ForceN)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	calls := map[string]func() error{
		"exchange":  func() error { return a.Exchange(&push, &st) },
		"halt":      a.Halt,
		"configure": func() error { return a.Configure(hw.Settings{}) },
		"close":     a.Close,
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after close: %v, want ErrClosed", name, err)
		}
	}
}

func TestArmRejects(t *testing.T) {
	for _, p := range []float64{0, -1, math.NaN(), math.Inf(1), MaxPeriodS * 2} {
		if got := NewArm(ArmOptions{PeriodS: p}).periodS; got != DefaultPeriodS {
			t.Errorf("period %g became %g, want the default %g", p, got, DefaultPeriodS)
		}
	}
	if got := NewArm(ArmOptions{PeriodS: MaxPeriodS}).periodS; got != MaxPeriodS {
		t.Errorf("the largest valid period became %g", got)
	}
	a := NewArm(ArmOptions{})
	var st hw.State
	if err := a.Exchange(nil, &st); err == nil {
		t.Error("nil command accepted")
	}
	if err := a.Exchange(&hw.Command{}, nil); err == nil {
		t.Error("nil state accepted")
	}
	for _, s := range []float64{-0.1, 2.5, math.NaN()} {
		if err := a.Configure(hw.Settings{GravityScale: s}); err == nil {
			t.Errorf("gravity scale %g accepted", s)
		}
	}
}

func TestArmInfo(t *testing.T) {
	info := NewArm(ArmOptions{Index: 5}).Info()
	want := hw.Info{
		Kind: hw.KindArm, ID: ArmID(5), UUID: ArmUUID(5), Model: ModelInverse3, Simulated: true,
		FirmwareVersion: SimFirmwareVersion, HardwareVersion: SimHardwareVersion,
		MaxForceN: MaxForceN, WorkspaceCenterM: hw.ArmWorkspaceCenterM(),
		EffectiveMassKg: EffectiveMassKg, HostGravityCompensation: true,
	}
	if info != want {
		t.Errorf("info %+v, want %+v", info, want)
	}
	var st hw.State
	if err := NewArm(ArmOptions{}).Exchange(&hw.Command{}, &st); err != nil {
		t.Fatal(err)
	}
	wantStatus := hw.StatusCalibrated | hw.StatusReady | hw.StatusStarted | hw.StatusPowerSupply
	if st.Status != wantStatus {
		t.Errorf("status %b, want %b", st.Status, wantStatus)
	}
}

func TestExchangeDoesNotAllocate(t *testing.T) {
	cmds := []hw.Command{
		{Mode: hw.ModeIdle},
		{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 3}},
		{Mode: hw.ModePosition, PositionM: hw.Vec3{Y: 0.15, Z: 0.12}},
		{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A1: 100}},
		{Mode: hw.ModeAngle, AnglesDeg: hw.Angles3{A1: 30, A2: -60}},
	}
	for _, m := range []Motion{MotionNone, MotionCircle, MotionRandom} {
		a := NewArm(ArmOptions{PeriodS: testPeriodS, Motion: m})
		g := NewGrip(GripOptions{PeriodS: testPeriodS, Motion: m})
		var st hw.State
		for _, cmd := range cmds {
			if n := testing.AllocsPerRun(200, func() { _ = a.Exchange(&cmd, &st) }); n != 0 {
				t.Errorf("arm %v %v: %.1f allocations per exchange", m, cmd.Mode, n)
			}
		}
		if n := testing.AllocsPerRun(200, func() { _ = g.Exchange(nil, &st) }); n != 0 {
			t.Errorf("grip %v: %.1f allocations per exchange", m, n)
		}
	}
}

func TestInverseKinematicsOutOfReach(t *testing.T) {
	shoulder := hw.Vec3{Z: ShoulderHeightM}
	tests := []struct {
		name  string
		p     hw.Vec3
		wantD float64 // distance from the shoulder of FK(IK(p))
	}{
		{"too far", hw.Vec3{X: 0.3, Y: 0.4, Z: 0.2}, UpperLinkM + ForearmM},
		{"too close", hw.Vec3{Y: 0.01, Z: ShoulderHeightM + 0.005}, math.Abs(UpperLinkM - ForearmM)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, ok := InverseKinematics(tt.p, false)
			if ok {
				t.Fatal("reported reachable")
			}
			got := ForwardKinematics(q, false).Sub(shoulder)
			want := tt.p.Sub(shoulder)
			if d := got.Norm(); math.Abs(d-tt.wantD) > 1e-6 {
				t.Errorf("nearest point is %.4f m from the shoulder, want %.4f", d, tt.wantD)
			}
			if c := got.Dot(want) / (got.Norm() * want.Norm()); c < 1-1e-9 {
				t.Errorf("nearest point %+v is off the ray toward %+v", got, tt.p)
			}
		})
	}
}

func TestArmStableAcrossPeriods(t *testing.T) {
	c := hw.ArmWorkspaceCenterM()
	bottom := hw.Vec3{X: c.X, Y: c.Y, Z: c.Z - WorkspaceRadiusM}
	for _, period := range []float64{0.000125, 0.001, 0.004, 0.02} {
		a := NewArm(ArmOptions{PeriodS: period, Motion: MotionRandom, Seed: 1})
		maxOff := 0.0
		// A hard push out, then limp: it must neither escape nor blow up.
		run(t, a, hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: -10}}, 1, func(st *hw.State) {
			maxOff = math.Max(maxOff, dist(st.PositionM, c))
		})
		if maxOff > WorkspaceRadiusM+EndStopMarginM+1e-12 {
			t.Errorf("period %g: cursor reached %.4f m from the centre", period, maxOff)
		}
		b := NewArm(ArmOptions{PeriodS: period})
		end := run(t, b, hw.Command{}, 3, nil)
		if d := dist(end.PositionM, bottom); d > 0.002 || end.VelocityMps != (hw.Vec3{}) {
			t.Errorf("period %g: limp arm rests %.4f m from the bottom, moving at %+v", period, d, end.VelocityMps)
		}
	}
}
