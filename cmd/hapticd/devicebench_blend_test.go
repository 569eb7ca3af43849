package main

import (
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
)

// TestLoopSlewBlendReadsAsNoOtherCommand drives the service's loop (the
// stages `hapticbench device` runs: the default slew limit, the passivity
// controller, full force scale) with consecutive coded forces, as the
// latency probe sends them, and times one tick a few tens of microseconds
// after the one before, as a hardware loop's pacer does after an overrun
// (it runs the late tick, then the next deadline on the grid). On that
// tick the slew limit lets the output move only part of the way from one
// code to the next: a blend of the two, which must read as one of them or
// as no code, never as a third command (issue 26: one such frame read as
// a command not sent yet).
func TestLoopSlewBlendReadsAsNoOtherCommand(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, seq := range []uint32{5, 100, 255, 256, 257, 512, 513, 514, 4000, 123457} {
		// A short tick of every length from 1 µs to 100 µs: the slew
		// limit's step (5000 N/s × dt) sweeps the blend from the first
		// code to the whole way to the next.
		for dtNs := int64(1000); dtNs <= 100_000; dtNs += 500 {
			// An arm whose firmware compensates gravity, as the serial
			// driver's (the stand-in's) is: no feed-forward in the force.
			info := looptest.ArmInfo()
			info.Simulated, info.HostGravityCompensation = false, false
			drv := looptest.NewDriver(info)
			dev := loop.NewDevice(drv, loop.DeviceOptions{PeriodNs: ms})
			g := loop.DefaultGlobals()
			g.ForceSlewNps = protocol.ForceSlewDefaultNPerS
			dev.SetGlobals(g)
			reg := dev.Register()
			reg.Claim(1)
			write := func(s uint32, at int64) {
				f := protocol.ForceCode(s)
				cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: f[0], Y: f[1], Z: f[2]}}
				if !reg.Write(1, uint64(s)+1, at+100*ms, &cmd, nil) {
					t.Fatal("write refused")
				}
			}
			now := 10 * ms
			write(seq, now)
			for range 3 { // the slew limit lets the first code through whole
				dev.Step(now)
				now += ms
			}
			if got, ok := readWire(drv.Last()); !ok || got != seq {
				t.Fatalf("code %d settled as %d, %v: %+v", seq, got, ok, drv.Last())
			}
			write(seq+1, now)
			dev.Step(now - ms + dtNs)
			got, ok := readWire(drv.Last())
			if ok && got != seq && got != seq+1 {
				f := drv.Last().ForceN
				t.Errorf("code %d to %d, a tick %d µs after the last: the output %+v reads as command %d", seq, seq+1, dtNs/1000, f, got)
			}
		}
	}
}

// readWire reads a coded force as the stand-in does, after the float32
// wire.
func readWire(c hw.Command) (uint32, bool) {
	f := c.ForceN
	return protocol.ReadForceCode(float64(float32(f.X)), float64(float32(f.Y)), float64(float32(f.Z)))
}
