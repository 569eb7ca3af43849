package loop

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// TestSimulatedArmWithTheLoop runs the real simulated arm under the loop: the
// gravity feed-forward holds an idle arm up (and only when enabled), and a
// lapsed lease leaves no force behind.
func TestSimulatedArmWithTheLoop(t *testing.T) {
	run := func(t *testing.T, g *Globals, ticks int, prepare func(d *Device, c *looptest.Clock)) (first, last Snapshot) {
		t.Helper()
		clock := looptest.NewClock(1000 * ms)
		arm := sim.NewArm(sim.ArmOptions{PeriodS: 0.001, Motion: sim.MotionNone})
		d := NewDevice(arm, DeviceOptions{PeriodNs: ms, Clock: clock})
		d.SetGlobals(g)
		d.Step(clock.Advance(ms))
		d.Load(&first)
		if prepare != nil {
			prepare(d, clock)
		}
		for i := 0; i < ticks; i++ {
			d.Step(clock.Advance(ms))
		}
		d.Load(&last)
		return first, last
	}
	comp := &Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1}}
	t.Run("compensated arm holds its height", func(t *testing.T) {
		first, last := run(t, comp, 2000, nil)
		if dz := last.State.PositionM.Z - first.State.PositionM.Z; dz < -0.005 {
			t.Fatalf("a compensated idle arm sank %.1f mm in 2 s", -dz*1000)
		}
	})
	t.Run("uncompensated arm sags", func(t *testing.T) {
		first, last := run(t, &Globals{ForceScale: 1}, 2000, nil)
		if dz := last.State.PositionM.Z - first.State.PositionM.Z; dz > -0.01 {
			t.Fatalf("an uncompensated idle arm moved %.1f mm in 2 s, want it to sag", dz*1000)
		}
	})
	t.Run("a lapsed lease leaves no client force", func(t *testing.T) {
		_, last := run(t, comp, 200, func(d *Device, c *looptest.Clock) {
			reg := d.Register()
			reg.Claim(1)
			cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 3}}
			reg.Write(1, 1, c.Now()+50*ms, &cmd, nil)
		})
		if last.Mode != hw.ModeIdle || last.Owner != 0 || mag(last.State.ForceN) > 1e-9 {
			t.Fatalf("150 ms after the lease lapsed: mode %v owner %d force %+v", last.Mode, last.Owner, last.State.ForceN)
		}
	})
}
