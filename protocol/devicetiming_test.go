package protocol

import "testing"

// TestForceCodeSurvivesUniformScaling: a coded force reads back as its
// sequence number after the float32 wire and any uniform scaling the loop
// applies; forces that are no code read as none.
func TestForceCodeSurvivesUniformScaling(t *testing.T) {
	for _, seq := range []uint32{0, 1, 2, 4095, 4096, 4097, 123456, ForceCodeMax - 1} {
		f := ForceCode(seq)
		for _, k := range []float64{1, 0.7, 0.999, 0.01} {
			x, y, z := float64(float32(f[0]*k)), float64(float32(f[1]*k)), float64(float32(f[2]*k))
			if got, ok := ReadForceCode(x, y, z); !ok || got != seq {
				t.Errorf("seq %d scaled by %v: read %d, %v", seq, k, got, ok)
			}
		}
	}
	for _, f := range [][3]float64{{0, 0, 0}, {0, 0, 0.5}, {0.1, 0.1, 0}, {0.3, 0.1, 0.125}, {0.0001, 0.05, 0.125}} {
		if seq, ok := ReadForceCode(f[0], f[1], f[2]); ok {
			t.Errorf("force %v read as code %d, want none", f, seq)
		}
	}
	if a, b := ForceCode(6), ForceCode(7); a[2] != -b[2] {
		t.Errorf("consecutive codes push %v and %v: want opposite signs", a[2], b[2])
	}
}
