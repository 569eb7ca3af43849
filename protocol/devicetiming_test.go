package protocol

import "testing"

// TestForceCodeSurvivesUniformScaling: a coded force reads back as its
// sequence number after the float32 wire and any uniform scaling the loop
// applies; forces that are no code read as none.
func TestForceCodeSurvivesUniformScaling(t *testing.T) {
	seqs := []uint32{0, 1, 2, 255, 256, 257, 258, 512, 513, 514, 4095, 4096, 4097, 123456, ForceCodeMax - 2, ForceCodeMax - 1}
	for seq := uint32(0); seq < 3*forceCodeRowLn; seq++ {
		seqs = append(seqs, seq)
	}
	for _, seq := range seqs {
		f := ForceCode(seq)
		for _, k := range []float64{1, 0.7, 0.999, 0.01} {
			x, y, z := float64(float32(f[0]*k)), float64(float32(f[1]*k)), float64(float32(f[2]*k))
			if got, ok := ReadForceCode(x, y, z); !ok || got != seq {
				t.Errorf("seq %d scaled by %v: read %d, %v", seq, k, got, ok)
			}
		}
	}
	for _, f := range [][3]float64{
		{0, 0, 0}, {0, 0, 0.5}, {0.1, 0.1, 0}, {0.3, 0.1, 0.125}, {0.0001, 0.05, 0.125},
		// Row 0, column 2 with the other sign: row 0 flips only at its
		// last column.
		{-0.125 * 3 / 256, -0.125 / 65536, -0.125},
	} {
		if seq, ok := ReadForceCode(f[0], f[1], f[2]); ok {
			t.Errorf("force %v read as code %d, want none", f, seq)
		}
	}
}

// TestForceCodePushesBackAndForth: z keeps its sign through a row of
// commands and flips at its end, so the arm is pushed back and forth, not
// away; every step from one command to the next either keeps the sign and
// moves to a neighbouring point or stays on the point and flips the sign.
func TestForceCodePushesBackAndForth(t *testing.T) {
	flips := 0
	for seq := uint32(0); seq < 5*forceCodeRowLn; seq++ {
		a, b := ForceCode(seq), ForceCode(seq+1)
		same := a[2] == b[2]
		if !same {
			flips++
		}
		// Ratios in grid steps.
		dx := (b[0]/b[2] - a[0]/a[2]) * forceCodeCols
		dy := (b[1]/b[2] - a[1]/a[2]) * forceCodeRows
		steps := abs(dx) + abs(dy)
		switch {
		case same && (steps < 0.999 || steps > 1.001):
			t.Fatalf("codes %d → %d keep the sign and move %.3f grid steps, want one", seq, seq+1, steps)
		case !same && steps > 1e-9:
			t.Fatalf("codes %d → %d flip the sign and move %.3f grid steps, want none", seq, seq+1, steps)
		}
	}
	if flips != 5 {
		t.Errorf("%d sign flips in 5 rows, want one a row", flips)
	}
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// TestForceCodeBlendsReadAsNoLaterCommand: the loop's slew limit can put a
// blend of two commands on the wire ((1-k)·F(s) + k·F(t), each possibly
// scaled by the force gate). It must never read as a command sent after t,
// which the stand-in would take for an arrival before its send: only as s,
// t, a command between or before them, or no code (or one so far ahead,
// forceCodeCols after t, that the bench rejects it as not sent).
// The old layout, whose sign flipped every command, read a blend of two
// consecutive commands at k = 0.6 as s+3.
func TestForceCodeBlendsReadAsNoLaterCommand(t *testing.T) {
	var seqs []uint32
	for _, around := range []uint32{0, forceCodeRowLn, 2 * forceCodeRowLn, 7 * forceCodeRowLn, 1000 * forceCodeRowLn} {
		for d := uint32(0); d < 12; d++ {
			seqs = append(seqs, around+d, around+forceCodeRowLn/2+d)
			if around >= 12 {
				seqs = append(seqs, around-d-1)
			}
		}
	}
	scales := [][2]float64{{1, 1}, {1, 0.6}, {0.6, 1}}
	for _, s := range seqs {
		for j := uint32(1); j <= 5; j++ {
			tt := s + j
			a, b := ForceCode(s), ForceCode(tt)
			for _, sc := range scales {
				for i := 1; i < 2000; i++ {
					k := float64(i) / 2000
					var v [3]float64
					for n := range v {
						v[n] = float64(float32((1-k)*sc[0]*a[n] + k*sc[1]*b[n]))
					}
					u, ok := ReadForceCode(v[0], v[1], v[2])
					if ok && u > tt && u < tt+forceCodeCols {
						t.Fatalf("blend of %d and %d at k = %v (scales %v) reads as %d, a later command", s, tt, k, sc, u)
					}
				}
			}
		}
	}
}
