package loop

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
)

// TestForceWithoutACommandForceSkipsBitForBit: a command with no force of
// its own (effects only) skips the session's force stage (forceInputs.none);
// the output and every stage's state after the tick must be those of the
// stage run in full, bit for bit, over velocities of either sign (−0
// included), bad readings, gate states, force scales and gains, with the
// observer holding +0, the controller on or off and the slew limit on or
// off, after the controller counted other sources' work.
func TestForceWithoutACommandForceSkipsBitForBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	comps := []float64{0, math.Copysign(0, -1), 1e-3, -1e-3, 0.2, -0.2, math.NaN(), math.Inf(1)}
	pick := func() float64 {
		if rng.IntN(3) == 0 {
			return comps[rng.IntN(len(comps))]
		}
		return rng.NormFloat64() * 0.1
	}
	for trial := range 20000 {
		params := &Params{ForceGateGain: []float64{0, 0.3, 1, 2}[rng.IntN(4)]}
		cmd := commandInputs{session: 1, params: params}
		in := forceInputs{scale: []float64{0, 0.5, 1}[rng.IntN(3)], limitN: 10,
			pass: passivity.Options{Enabled: rng.IntN(2) == 0}}
		var fs forceStages
		var ft forceTally
		if rng.IntN(2) == 0 {
			in.slewNps = 50
		}
		for k := range rng.IntN(20) { // a history: the gate rings, the controller counts another source's work
			v := hw.Vec3{X: rng.NormFloat64() * 0.1, Y: rng.NormFloat64() * 0.1, Z: rng.NormFloat64() * 0.1}
			fs.gate.update(v, int64(ms))
			cmd.none = true
			fs.force(&in, &cmd, &ft, hw.Vec3{}, v, 1, false, int64(trial*40+k)*int64(ms), int64(ms))
			other := hw.Vec3{X: rng.NormFloat64(), Y: rng.NormFloat64(), Z: rng.NormFloat64()}
			fs.pc.Applied(fs.pc.Step(other, v, int64(trial*40+k)*int64(ms), int64(ms), &in.pass, &ft.spell))
			fs.slewN = other
		}
		if ft.sessionObs.Holds() {
			t.Fatalf("trial %d: the observer holds a force after a history of no command force", trial)
		}
		v := hw.Vec3{X: pick(), Y: pick(), Z: pick()}
		full, skip := fs, fs
		fullT, skipT := ft, ft
		cmd.none = false
		fFull, sFull := full.force(&in, &cmd, &fullT, hw.Vec3{}, v, 1, false, int64(trial*40+39)*int64(ms), int64(ms))
		cmd.none = true
		fSkip, sSkip := skip.force(&in, &cmd, &skipT, hw.Vec3{}, v, 1, false, int64(trial*40+39)*int64(ms), int64(ms))
		if bitsOf(fFull) != bitsOf(fSkip) || sFull != sSkip {
			t.Fatalf("trial %d, v %v: output %v (sustained %v) in full, %v (%v) skipped", trial, v, fFull, sFull, fSkip, sSkip)
		}
		if fullT.sessionObs != skipT.sessionObs || bitsOf(hw.Vec3{X: fullT.sessionObs.EnergyJ}) != bitsOf(hw.Vec3{X: skipT.sessionObs.EnergyJ}) ||
			full.pc != skip.pc || bitsOf(full.slewN) != bitsOf(skip.slewN) || full.gate != skip.gate || fullT != skipT {
			t.Fatalf("trial %d, v %v: stages differ after the tick:\nfull %+v %+v\nskip %+v %+v", trial, v, full, fullT, skip, skipT)
		}
	}
}

// bitsOf is v's components as bits, so +0 and −0 differ.
func bitsOf(v hw.Vec3) [3]uint64 {
	return [3]uint64{math.Float64bits(v.X), math.Float64bits(v.Y), math.Float64bits(v.Z)}
}
