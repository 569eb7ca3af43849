package hw

import "testing"

// A command's target and CommandTarget invert each other for every mode
// that acts on something, and idle carries nothing.
func TestCommandTargetRoundTrip(t *testing.T) {
	v := [3]float64{1.5, -2, 3.25}
	for _, m := range []ControlMode{ModeForce, ModePosition, ModeTorque, ModeAngle} {
		c, ok := CommandTarget(m, v)
		if !ok || c.Mode != m {
			t.Fatalf("CommandTarget(%v) = %+v, %v", m, c, ok)
		}
		if got := c.Target(); got != v {
			t.Errorf("mode %v: Target() = %v, want %v", m, got, v)
		}
	}
	if _, ok := CommandTarget(ModeIdle, v); ok {
		t.Error("CommandTarget(ModeIdle) acts on something")
	}
	idle := Command{ForceN: Vec3{X: 1}}
	if got := idle.Target(); got != ([3]float64{}) {
		t.Errorf("an idle command's target is %v, want zero", got)
	}
}
