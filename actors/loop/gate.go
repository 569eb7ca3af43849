package loop

import (
	"math"

	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
)

// The force gate tells oscillation from voluntary motion by frequency: a
// hand moves the arm below about 5 Hz, while an unstable contact (a stiff
// wall rendered at too low a rate, too little damping) rings at 10–50 Hz. The
// gate high-passes the end effector's velocity twice at gateCornerHz (a
// second-order high-pass: a steady push accelerates the arm, and a ramp in
// velocity must not read as ringing), low-passes
// the squared result into an energy (time constant gateEnergyTauS), and maps
// the energy e to an oscillation level s = e / (e + gateRefMps²) in [0, 1):
// a ringing of gateRefMps (rms) gives s = 0.5. Force is multiplied by
// 1 − gain·s, so gain 0 passes it unchanged and gain 1 removes nearly all of
// it while the arm rings hard; steady motion has no high-passed energy and
// is never attenuated.
const (
	gateCornerHz   = 8
	gateEnergyTauS = 0.03
	gateRefMps     = 0.02
)

// forceGate is the filter state. The loop updates it once per tick while
// a force may be commanded or ramps out, and zeroes it otherwise (see
// Device.stepLocked).
type forceGate struct {
	prevV  hw.Vec3
	hp1    hw.Vec3 // velocity high-passed once, m/s
	hp     hw.Vec3 // high-passed twice, m/s
	energy float64 // low-passed |hp|², (m/s)²
	primed bool
}

// gateCoeffs are the filters' coefficients for one tick length. Every arm
// of a shard's pass has the same one (the pass's now less the last's), so
// the pass computes them once instead of two divisions an arm
// (passScratch.gate); the values are the same bits either way.
type gateCoeffs struct {
	dtNs int64
	ok   bool    // computed for dtNs
	a    float64 // the high-passes' rc/(rc+dt)
	e    float64 // the energy low-pass's dt/(tau+dt)
}

// forDt returns k's coefficients for a tick dtNs long, computing them
// only when the length changed.
func (k *gateCoeffs) forDt(dtNs int64) *gateCoeffs {
	if !k.ok || k.dtNs != dtNs {
		const rc = 1 / (2 * math.Pi * gateCornerHz)
		dt := float64(dtNs) * 1e-9
		*k = gateCoeffs{dtNs: dtNs, ok: true, a: rc / (rc + dt), e: dt / (gateEnergyTauS + dt)}
	}
	return k
}

// update feeds one tick's velocity, dtNs after the last.
func (g *forceGate) update(v hw.Vec3, dtNs int64) {
	var k gateCoeffs
	g.updateWith(v, k.forDt(dtNs))
}

// updateWith is update with the tick's coefficients computed already. A
// bad reading (not finite, or faster than any arm moves:
// passivity.MaxSpeedMps) is skipped, as the passivity observers skip it:
// fed to the high-passes, one 1,000 m/s frame read as violent ringing
// and took a session's 5 N push down to nothing for 0.7 s.
func (g *forceGate) updateWith(v hw.Vec3, k *gateCoeffs) {
	if !(v.Dot(v) <= passivity.MaxSpeedMps*passivity.MaxSpeedMps) { // also NaN and ±Inf
		return
	}
	if !g.primed {
		g.prevV, g.primed = v, true
	}
	a := k.a
	hp1 := hw.Vec3{
		X: a * (g.hp1.X + v.X - g.prevV.X),
		Y: a * (g.hp1.Y + v.Y - g.prevV.Y),
		Z: a * (g.hp1.Z + v.Z - g.prevV.Z),
	}
	g.hp = hw.Vec3{
		X: a * (g.hp.X + hp1.X - g.hp1.X),
		Y: a * (g.hp.Y + hp1.Y - g.hp1.Y),
		Z: a * (g.hp.Z + hp1.Z - g.hp1.Z),
	}
	g.prevV, g.hp1 = v, hp1
	e := g.hp.X*g.hp.X + g.hp.Y*g.hp.Y + g.hp.Z*g.hp.Z
	g.energy += k.e * (e - g.energy)
}

// attenuation is the fraction of force the gate removes at gain (0..1).
func (g *forceGate) attenuation(gain float64) float64 {
	s := g.energy / (g.energy + gateRefMps*gateRefMps)
	return clamp(gain, 0, 1) * s
}
