package hw_test

import (
	"math"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

func TestVec3Arithmetic(t *testing.T) {
	a, b := hw.Vec3{X: 1, Y: 2, Z: 3}, hw.Vec3{X: -4, Y: 0.5, Z: 2}
	if got := a.Add(b); got != (hw.Vec3{X: -3, Y: 2.5, Z: 5}) {
		t.Errorf("Add = %v", got)
	}
	if got := a.Sub(b); got != (hw.Vec3{X: 5, Y: 1.5, Z: 1}) {
		t.Errorf("Sub = %v", got)
	}
	if got := a.Scale(-2); got != (hw.Vec3{X: -2, Y: -4, Z: -6}) {
		t.Errorf("Scale = %v", got)
	}
	if got := a.Dot(b); got != 3 {
		t.Errorf("Dot = %v, want 3", got)
	}
	if got := (hw.Vec3{X: 3, Z: 4}).Norm(); got != 5 {
		t.Errorf("Norm = %v, want 5", got)
	}
}

func TestVec3ClampNorm(t *testing.T) {
	tests := []struct {
		name  string
		v     hw.Vec3
		limit float64
		want  hw.Vec3
	}{
		{"inside is unchanged", hw.Vec3{X: 3, Z: 4}, 10, hw.Vec3{X: 3, Z: 4}},
		{"on the limit is unchanged", hw.Vec3{X: 3, Z: 4}, 5, hw.Vec3{X: 3, Z: 4}},
		{"outside keeps direction", hw.Vec3{X: 30, Z: 40}, 5, hw.Vec3{X: 3, Z: 4}},
		{"zero limit gives zero", hw.Vec3{Y: 1}, 0, hw.Vec3{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.v.ClampNorm(tc.limit)
			if got.Sub(tc.want).Norm() > 1e-12 {
				t.Errorf("%v.ClampNorm(%v) = %v, want %v", tc.v, tc.limit, got, tc.want)
			}
		})
	}
}

func TestFinite(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		v    hw.Vec3
		want bool
	}{
		{"zero", hw.Vec3{}, true},
		{"ordinary", hw.Vec3{X: -1, Y: 1e6, Z: 1e-300}, true},
		{"NaN", hw.Vec3{Y: nan}, false},
		{"+Inf", hw.Vec3{Z: inf}, false},
		{"-Inf", hw.Vec3{X: -inf}, false},
		{"opposite infinities", hw.Vec3{X: inf, Y: -inf}, false},
		{"sum overflows", hw.Vec3{X: math.MaxFloat64, Y: math.MaxFloat64}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.Finite(); got != tc.want {
				t.Errorf("%v.Finite() = %v, want %v", tc.v, got, tc.want)
			}
			a := hw.Angles3{A0: tc.v.X, A1: tc.v.Y, A2: tc.v.Z}
			if got := a.Finite(); got != tc.want {
				t.Errorf("%v.Finite() = %v, want %v", a, got, tc.want)
			}
		})
	}
}
