package loop

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
)

func TestGravityFeedForwardOutsideControl(t *testing.T) {
	arm := looptest.ArmInfo()
	mg := arm.EffectiveMassKg * hw.GravityMps2
	on := &Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1}}
	firmware := arm
	firmware.HostGravityCompensation = false
	tests := []struct {
		name    string
		info    hw.Info
		globals *Globals
		prepare func(r *rig)
		wantZ   float64 // of the driver's force; NaN-free: 0 with mode idle means nothing sent
		wantOut hw.ControlMode
	}{
		{"idle arm floats", arm, on, func(r *rig) {}, mg, hw.ModeForce},
		{"half scale", arm, &Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 0.5}}, func(r *rig) {}, mg / 2, hw.ModeForce},
		{"compensation off", arm, &Globals{ForceScale: 1}, func(r *rig) {}, 0, hw.ModeIdle},
		{"firmware compensates", firmware, on, func(r *rig) {}, 0, hw.ModeIdle},
		{"after halt nothing", arm, on, func(r *rig) { r.dev.Halt() }, 0, hw.ModeIdle},
		{"after a lease ends", arm, on, func(r *rig) {
			r.command(1, 1, 5*ms, force(0, 0, 3), nil)
			for i := 0; i < 40; i++ {
				r.step(ms)
			}
		}, mg, hw.ModeForce},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.info, DeviceOptions{RampNs: 10 * ms})
			r.dev.SetGlobals(tt.globals)
			r.step(ms)
			tt.prepare(r)
			c := r.step(ms)
			if c.Mode != tt.wantOut || !near(c.ForceN.Z, tt.wantZ, 1e-9) || c.ForceN.X != 0 || c.ForceN.Y != 0 {
				t.Fatalf("driver got %+v, want mode %v with %.3f N up", c, tt.wantOut, tt.wantZ)
			}
			s := r.snapshot()
			if s.Mode != hw.ModeIdle || s.State.ForceN != (hw.Vec3{}) {
				t.Fatalf("snapshot reports mode %v force %+v; want idle and no client force", s.Mode, s.State.ForceN)
			}
		})
	}
}

func TestGravityIsNotRampedOrReportedAsClientForce(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{RampNs: 10 * ms})
	mg := looptest.ArmInfo().EffectiveMassKg * hw.GravityMps2
	r.dev.SetGlobals(&Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1}})
	r.command(1, 1, 20*ms, force(2, 0, 0), nil)
	if c := r.step(ms); !near(c.ForceN.X, 2, 1e-9) || !near(c.ForceN.Z, mg, 1e-9) {
		t.Fatalf("under control the driver got %+v", c)
	}
	if s := r.snapshot(); !near(s.State.ForceN.X, 2, 1e-9) || !near(s.State.ForceN.Z, 0, 1e-9) {
		t.Fatalf("snapshot force %+v, want the client's 2 N along X only", s.State.ForceN)
	}
	r.dev.Register().Release(1)
	r.step(ms)
	c := r.step(5 * ms) // half way down the ramp
	if !near(c.ForceN.X, 1, 1e-9) || !near(c.ForceN.Z, mg, 1e-9) {
		t.Fatalf("half way through the ramp the driver got %+v, want 1 N along X and full gravity", c)
	}
	// A failed exchange does not skew the reported force.
	r.drv.FailNext(1, nil)
	r.step(ms)
	if s := r.snapshot(); !near(s.State.ForceN.Z, 0, 1e-9) {
		t.Fatalf("after a failed exchange the snapshot reports %+v", s.State.ForceN)
	}
}
