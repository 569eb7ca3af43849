package sim

import (
	"math"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// A joint-state reply completed by DeriveCursorState and a cursor reply
// completed by DeriveArmState describe the same arm: going one way and
// back gives the state that was started from, for both hands.
func TestDeriveCursorStateInvertsDeriveArmState(t *testing.T) {
	tests := []struct {
		name     string
		position hw.Vec3
		velocity hw.Vec3
	}{
		{"centre at rest", hw.Vec3{X: 0, Y: 0.15, Z: 0.1}, hw.Vec3{}},
		{"off to the side moving", hw.Vec3{X: 0.08, Y: 0.12, Z: 0.05}, hw.Vec3{X: 0.1, Y: -0.2, Z: 0.05}},
		{"other side moving up", hw.Vec3{X: -0.1, Y: 0.1, Z: 0.15}, hw.Vec3{Z: 0.3}},
	}
	for _, tc := range tests {
		for _, left := range []bool{false, true} {
			cursor := hw.State{PositionM: tc.position, VelocityMps: tc.velocity}
			DeriveArmState(&cursor, left)
			joints := hw.State{AnglesDeg: cursor.AnglesDeg, AngularVelocityDps: cursor.AngularVelocityDps}
			DeriveCursorState(&joints, left)
			if d := joints.PositionM.Sub(tc.position).Norm(); d > 1e-9 {
				t.Errorf("%s (left %v): position %v, want %v", tc.name, left, joints.PositionM, tc.position)
			}
			if d := joints.VelocityMps.Sub(tc.velocity).Norm(); d > 1e-9 {
				t.Errorf("%s (left %v): velocity %v, want %v", tc.name, left, joints.VelocityMps, tc.velocity)
			}
			q, want := joints.BodyOrientation, cursor.BodyOrientation
			if math.Abs(q.W-want.W)+math.Abs(q.Z-want.Z) > 1e-9 {
				t.Errorf("%s (left %v): body %v, want %v", tc.name, left, q, want)
			}
		}
	}
}
