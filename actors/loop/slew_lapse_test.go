package loop

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
)

// TestSlewLimitDoesNotRaiseTheForceAfterALapse: a force still climbing
// under the slew limit when its lease lapses must not keep climbing after
// the lapse: the client went quiet, and the ramp winds the force in hand
// down (docs/effects.md, Ramp: nothing raises the force on its way to
// zero). The zero still goes out within the release bound.
func TestSlewLimitDoesNotRaiseTheForceAfterALapse(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.dev.SetGlobals(&Globals{ForceScale: 1, ForceSlewNps: 200}) // 0.2 N a tick
	deadline := r.clock.Now() + 2*ms
	r.command(7, 1, 2*ms, force(10, 0, 0), nil)
	var atLapse float64
	for r.clock.Now() < deadline {
		atLapse = r.step(ms).ForceN.X
	}
	peak, zeroAt := atLapse, int64(-1)
	for r.clock.Now() < deadline+2*ReleaseBoundNs {
		c := r.step(ms)
		if c.Mode == hw.ModeIdle || c.ForceN.X == 0 {
			if zeroAt < 0 {
				zeroAt = r.clock.Now()
			}
			continue
		}
		peak = max(peak, c.ForceN.X)
	}
	if zeroAt < 0 || zeroAt-deadline > ReleaseBoundNs {
		t.Fatalf("zero %d ns after the lapse, want within %d", zeroAt-deadline, ReleaseBoundNs)
	}
	if peak > atLapse+1e-9 {
		t.Fatalf("the force was %.3f N at the lapse and rose to %.3f N during the ramp after it", atLapse, peak)
	}
}
