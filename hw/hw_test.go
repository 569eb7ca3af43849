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

// The vendor's uuid form, and the old one read back, so that a state
// directory written before keeps its devices' ids: a device gets the same
// derived id from its UUID in either form.
func TestUUIDForms(t *testing.T) {
	for _, tc := range []struct {
		old    string
		now    string // "" for a string ParseLegacyUUID refuses
		wantOK bool
	}{
		{"2d35f80d-d900-5f59-9b68-f49944cb04ba", "2D35F80DD9005F599B68F49944CB04BA", true},
		{"00000000-0000-0000-0000-000000000000", "00000000000000000000000000000000", true},
		{"2D35F80D-D900-5F59-9B68-F49944CB04BA", "", false}, // upper case was never written
		{"2D35F80DD9005F599B68F49944CB04BA", "", false},
		{"2d35f80dd900-5f59-9b68-f49944cb04ba", "", false},
		{"2d35f80d-d900-5f59-9b68-f49944cb04bg", "", false},
		{"grip-7-1152", "", false},
		{"", "", false},
	} {
		u, ok := ParseLegacyUUID(tc.old)
		if ok != tc.wantOK || ok && FormatUUID(u) != tc.now {
			t.Errorf("ParseLegacyUUID(%q) = %X, %v; want %s, %v", tc.old, u, ok, tc.now, tc.wantOK)
		}
		if !ok {
			continue
		}
		for _, k := range []Kind{KindArm, KindGrip} {
			free := func(string) bool { return false }
			if a, b := DerivedID(k, tc.old, free), DerivedID(k, tc.now, free); a != b {
				t.Errorf("%v %s: derived id %s, but %s from its old form %s", k, tc.now, b, a, tc.old)
			}
		}
	}
}
