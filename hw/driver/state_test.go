package driver_test

import (
	"math"
	"sync"
	"testing"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/sim"
)

// observedArm is the emulator's physics, a simulated arm whose whole state
// after each step the test can read: the truth the wire reports half of.
type observedArm struct {
	*sim.Arm
	mu   sync.Mutex
	last hw.State
}

func (o *observedArm) Exchange(cmd *hw.Command, st *hw.State) error {
	err := o.Arm.Exchange(cmd, st)
	o.mu.Lock()
	o.last = *st
	o.mu.Unlock()
	return err
}

func (o *observedArm) truth() hw.State {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.last
}

func anglesApart(a, b hw.Angles3) float64 {
	return math.Max(math.Abs(a.A0-b.A0), math.Max(math.Abs(a.A1-b.A1), math.Abs(a.A2-b.A2)))
}

// A reply carries the cursor (force and position modes) or the joints
// (torque and angle modes), never both; a client reads both every tick, so
// the half a reply does not carry must follow the arm's motion too, not
// stay at its last value. Through the emulated wire, each field the driver
// reports matches the emulated arm's own, in both modes and for both hands.
func TestArmReportsTheWholeStateInEveryMode(t *testing.T) {
	tests := []struct {
		name string
		cmd  hw.Command
	}{
		{"force mode: angles follow", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 1.5, Z: 1}}},
		{"position mode: angles follow", hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{X: 0.05, Y: 0.14, Z: 0.12}}},
		{"angle mode: position follows", hw.Command{Mode: hw.ModeAngle, AnglesDeg: hw.Angles3{A0: 25, A1: 30, A2: -70}}},
		{"torque mode: position follows", hw.Command{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A0: 60, A1: 80}}},
	}
	for i, tc := range tests {
		for _, left := range []bool{false, true} {
			name := tc.name
			if left {
				name += ", left-handed"
			}
			t.Run(name, func(t *testing.T) {
				phys := &observedArm{Arm: sim.NewArm(sim.ArmOptions{Index: 120 + i})}
				_, path := startEmulator(t, emulator.Options{Index: 120 + i, Physics: phys})
				a := openArm(t, path, driver.ArmOptions{})
				if err := a.Configure(hw.Settings{LeftHanded: left, GravityCompensation: true, GravityScale: 1}); err != nil {
					t.Fatal(err)
				}
				start := exchangeN(t, a, hw.Command{Mode: hw.ModeForce}, 3)
				from := phys.truth()
				end := exchangeN(t, a, tc.cmd, 150)
				truth := phys.truth()
				if moved := truth.PositionM.Sub(from.PositionM).Norm(); moved < 5e-3 {
					t.Fatalf("the arm moved %.4f m: the command does not move it, so the test tells nothing", moved)
				}
				// The wire's float32 rounds the carried half; what is
				// derived from it is as close as that allows.
				if d := end.PositionM.Sub(truth.PositionM).Norm(); d > 1e-5 {
					t.Errorf("position %v, arm is at %v", end.PositionM, truth.PositionM)
				}
				if d := anglesApart(end.AnglesDeg, truth.AnglesDeg); d > 0.01 {
					t.Errorf("angles %v, arm is at %v", end.AnglesDeg, truth.AnglesDeg)
				}
				if d := anglesApart(end.AnglesDeg, start.AnglesDeg); d < 1 {
					t.Errorf("angles %v barely moved from %v while the arm moved", end.AnglesDeg, start.AnglesDeg)
				}
				if d := end.VelocityMps.Sub(truth.VelocityMps).Norm(); d > 1e-4 {
					t.Errorf("velocity %v, arm moves at %v", end.VelocityMps, truth.VelocityMps)
				}
				if d := anglesApart(end.AngularVelocityDps, truth.AngularVelocityDps); d > 0.1 {
					t.Errorf("angular velocity %v, arm turns at %v", end.AngularVelocityDps, truth.AngularVelocityDps)
				}
				if q, w := end.BodyOrientation, truth.BodyOrientation; math.Abs(q.W-w.W)+math.Abs(q.Z-w.Z) > 1e-4 {
					t.Errorf("body orientation %v, arm's is %v", q, w)
				}
			})
		}
	}
}

// The wire says nothing of calibration or power (docs/hardware.md): an arm
// that identified itself and sent a plausible first state is reported
// calibrated and powered, as a client waiting for status.calibrated
// (the vendor's tutorials) needs to go on.
func TestArmReportsCalibratedAndPowered(t *testing.T) {
	_, path := startEmulator(t, emulator.Options{Index: 130})
	a := openArm(t, path, driver.ArmOptions{})
	want := hw.StatusCalibrated | hw.StatusReady | hw.StatusStarted | hw.StatusPowerSupply
	for _, cmd := range []hw.Command{{Mode: hw.ModeForce}, {Mode: hw.ModeAngle, AnglesDeg: hw.Angles3{A1: 20, A2: -40}}} {
		if st := exchangeN(t, a, cmd, 3); st.Status != want {
			t.Errorf("after %v: status %08b, want %08b", cmd.Mode, st.Status, want)
		}
	}
}
