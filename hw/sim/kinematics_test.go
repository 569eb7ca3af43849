package sim

import (
	"math"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// TestClosedFormJacobian checks the closed-form J⁻¹·v and J⁻ᵀ·τ against a
// numerically differentiated forward kinematics over the workspace, for
// both hands.
func TestClosedFormJacobian(t *testing.T) {
	c := hw.ArmWorkspaceCenterM()
	v := hw.Vec3{X: 0.11, Y: -0.07, Z: 0.05}
	tau := [3]float64{0.3, -0.2, 0.15}
	for _, left := range []bool{false, true} {
		for x := -0.09; x <= 0.09; x += 0.03 {
			for y := -0.09; y <= 0.09; y += 0.03 {
				for z := -0.09; z <= 0.09; z += 0.03 {
					p := hw.Vec3{X: c.X + x, Y: c.Y + y, Z: c.Z + z}
					ps, _ := solvePose(p, left)
					j := numericJacobian(ps.anglesDeg, left)
					w, ok := ps.jointRatesRad(v)
					if !ok {
						t.Fatalf("singular pose at %+v", p)
					}
					var back hw.Vec3 // J·ω must give v back
					back.X = j[0][0]*w[0] + j[0][1]*w[1] + j[0][2]*w[2]
					back.Y = j[1][0]*w[0] + j[1][1]*w[1] + j[1][2]*w[2]
					back.Z = j[2][0]*w[0] + j[2][1]*w[1] + j[2][2]*w[2]
					if d := dist(back, v); d > 1e-6 {
						t.Fatalf("left=%v at %+v: J·J⁻¹·v off by %.3g", left, p, d)
					}
					f, ok := ps.forceFromTorques(tau)
					if !ok {
						t.Fatalf("singular pose at %+v", p)
					}
					for col := 0; col < 3; col++ { // Jᵀ·F must give τ back
						got := j[0][col]*f.X + j[1][col]*f.Y + j[2][col]*f.Z
						if math.Abs(got-tau[col]) > 1e-6 {
							t.Fatalf("left=%v at %+v: joint %d torque %.6f, want %.6f", left, p, col, got, tau[col])
						}
					}
				}
			}
		}
	}
}

// mat3 is a row-major 3×3 matrix.
type mat3 [3][3]float64

func (m *mat3) det() float64 {
	return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
		m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
		m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
}

// solve returns x with m·x = b by Cramer's rule; ok is false when m is
// (nearly) singular, so callers can refuse rather than blow up.
func (m *mat3) solve(b [3]float64) (x [3]float64, ok bool) {
	d := m.det()
	if math.Abs(d) < 1e-12 || math.IsNaN(d) {
		return x, false
	}
	for col := 0; col < 3; col++ {
		t := *m
		for row := 0; row < 3; row++ {
			t[row][col] = b[row]
		}
		x[col] = t.det() / d
	}
	return x, true
}

func (m *mat3) transpose() mat3 {
	var t mat3
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			t[i][j] = m[j][i]
		}
	}
	return t
}
