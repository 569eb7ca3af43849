package sim

import (
	"regexp"
	"strconv"
	"testing"
)

func TestIDsAreStableAndDistinct(t *testing.T) {
	armRe := regexp.MustCompile(`^[0-9A-F]{4}$`)
	uuidRe := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	arms := make(map[string]int, idSpan)
	grips := make(map[string]int, idSpan)
	for i := 0; i < idSpan; i++ {
		a, g := ArmID(i), GripID(i)
		if !armRe.MatchString(a) || a == "0000" {
			t.Fatalf("ArmID(%d) = %q, want 4 uppercase hex digits, not 0000", i, a)
		}
		if n, err := strconv.Atoi(g); err != nil || n <= 0 || n > 65535 {
			t.Fatalf("GripID(%d) = %q, want a decimal in 1..65535", i, g)
		}
		if j, dup := arms[a]; dup {
			t.Fatalf("ArmID(%d) = ArmID(%d) = %s", i, j, a)
		}
		if j, dup := grips[g]; dup {
			t.Fatalf("GripID(%d) = GripID(%d) = %s", i, j, g)
		}
		arms[a], grips[g] = i, i
	}
	for _, i := range []int{0, 1, 999, -1} {
		if ArmID(i) != ArmID(i) || GripID(i) != GripID(i) || ArmUUID(i) != ArmUUID(i) {
			t.Errorf("index %d: ids differ between calls", i)
		}
		for _, u := range []string{ArmUUID(i), GripUUID(i)} {
			if !uuidRe.MatchString(u) {
				t.Errorf("index %d: uuid %q is not 8-4-4-4-12 lower hex", i, u)
			}
		}
		if ArmUUID(i) == GripUUID(i) || ArmUUID(i) == ArmUUID(i+1) {
			t.Errorf("index %d: uuids collide", i)
		}
	}
	// A restart builds the devices again from the same flags.
	if NewArm(ArmOptions{Index: 7}).Info() != NewArm(ArmOptions{Index: 7, Seed: 9, Motion: MotionCircle}).Info() {
		t.Error("arm identity depends on more than the index")
	}
	if NewGrip(GripOptions{Index: 7}).Info() != NewGrip(GripOptions{Index: 7, Seed: 9}).Info() {
		t.Error("grip identity depends on more than the index")
	}
}

func TestMotionParse(t *testing.T) {
	tests := []struct {
		in      string
		want    Motion
		wantErr bool
	}{
		{"none", MotionNone, false},
		{"", MotionNone, false},
		{"circle", MotionCircle, false},
		{"random", MotionRandom, false},
		{"Circle", MotionNone, true},
		{"spiral", MotionNone, true},
	}
	for _, tt := range tests {
		var m Motion
		err := m.Set(tt.in)
		if (err != nil) != tt.wantErr || m != tt.want {
			t.Errorf("Set(%q) = %v, %v; want %v, error %v", tt.in, m, err, tt.want, tt.wantErr)
		}
		if err == nil && tt.in != "" && m.String() != tt.in {
			t.Errorf("%v.String() = %q, want %q", m, m.String(), tt.in)
		}
	}
	if s := Motion(9).String(); s != "motion(9)" {
		t.Errorf("unknown motion prints %q", s)
	}
}
