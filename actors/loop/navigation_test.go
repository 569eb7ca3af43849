package loop

import (
	"testing"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
)

// testNavigation is a 5 cm sphere at the device origin with a 3 cm zone,
// 4 1/s, 50 N/m in the zone and an 800 N/m wall.
func testNavigation(t *testing.T) *Navigation {
	t.Helper()
	id := [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	b, err := effect.NewBubble(effect.Bubble{Primitive: effect.PrimSphere, Shape: effect.Params{RadiusM: 0.05},
		ToLocal: id, ToApp: id, DevMPerLocalM: 1, WidthM: 0.03, SpeedGainPerS: 4, MaxSpeedMps: 0.5,
		DeadDampingNsPerM: 1, ZoneStiffnessNPerM: 50, WallStiffnessNPerM: 800, WallDampingNsPerM: 4})
	if err != nil {
		t.Fatal(err)
	}
	return &Navigation{Bubble: b, Track: NewNavigationTrack()}
}

// TestNavigationRendersUnderTheLease: the navigation carried by a
// session's command pushes back in the velocity zone and slides the
// workspace, its energy counted as the navigation's; when the lease
// lapses its force ramps out within the release bound and the workspace
// stops where it was.
func TestNavigationRendersUnderTheLease(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	nav := testNavigation(t)
	// 2 cm into the zone, moving outward at 1 cm/s.
	r.drv.SetState(hw.State{PositionM: hw.Vec3{X: 0.07}, VelocityMps: hw.Vec3{X: 0.01}})
	var rep NavigationReport
	if nav.Track.Load(&rep) {
		t.Fatal("a track reports before the loop rendered it")
	}
	r.command(7, 1, 200*ms, force(0, 0, 2), &Params{Navigation: nav})
	r.dev.Output() // a reader: the loop stores the figures every few ticks
	out := r.run(100, nil)
	if !near(out.ForceN.X, -1, 1e-6) || !near(out.ForceN.Z, 2, 1e-6) {
		t.Fatalf("output %v, want the session's 2 N up and the zone's spring, 1 N inward", out.ForceN)
	}
	if !nav.Track.Load(&rep) || rep.Zone != effect.ZoneVelocity || !rep.Rendering || !near(rep.VelocityMps.X, 0.08, 1e-9) ||
		!near(rep.OffsetM.X, 0.08*0.1, 0.08*1e-3) { // 99 or 100 ticks of 1 ms
		t.Fatalf("report %+v, want the velocity zone at 0.08 m/s, 8 mm slid over 100 ticks", rep)
	}
	if e := r.dev.Output().NavigationEnergyJ; !(e > 0) {
		t.Fatalf("navigation energy %v J: the spring the hand stretches absorbs energy", e)
	}
	endNs := r.clock.Now() + 100*ms + 1 // the lease written above
	for r.clock.Now() < endNs {
		r.step(ms)
	}
	nav.Track.Load(&rep)
	at := rep.OffsetM
	for r.clock.Now() <= endNs+ReleaseBoundNs {
		out = r.step(ms)
	}
	if out.ForceN != (hw.Vec3{}) {
		t.Fatalf("output %v %d ms after the lapse, want none", out.ForceN, ReleaseBoundNs/ms)
	}
	nav.Track.Load(&rep)
	if rep.Rendering || rep.VelocityMps != (hw.Vec3{}) || rep.OffsetM != at {
		t.Fatalf("after the lapse: %+v, want the workspace at rest at %v", rep, at)
	}
	// Another session's command carries none of it.
	r.command(8, 1, 200*ms, force(0, 0, 2), nil)
	if out = r.run(10, nil); out.ForceN.X != 0 {
		t.Fatalf("session 8 feels session 7's navigation: %v", out.ForceN)
	}
}

// TestNavigationRendersUnderAnIdleCommand: a session that navigates and
// only renews its lease (an idle command, as an effects member writes) gets
// its navigation, and loses it with the lease like a force command.
func TestNavigationRendersUnderAnIdleCommand(t *testing.T) {
	cases := []struct {
		name string
		p    *Params
		want hw.Vec3
	}{
		{"navigating", &Params{Navigation: testNavigation(t)}, hw.Vec3{X: -1}},
		{"not navigating", &Params{}, hw.Vec3{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
			r.drv.SetState(hw.State{PositionM: hw.Vec3{X: 0.07}})
			r.command(7, 1, 100*ms, hw.Command{}, c.p)
			if out := r.run(50, nil); !near(out.ForceN.X, c.want.X, 1e-6) || out.ForceN.Y != 0 || out.ForceN.Z != 0 {
				t.Fatalf("output %v, want %v", out.ForceN, c.want)
			}
			endNs := r.clock.Now() + 50*ms + 1
			var out hw.Command
			for r.clock.Now() <= endNs+ReleaseBoundNs {
				out = r.step(ms)
			}
			if out.ForceN != (hw.Vec3{}) {
				t.Fatalf("output %v after the lease, want none", out.ForceN)
			}
		})
	}
}

func TestStepWithNavigationDoesNotAllocate(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	cmd := force(0, 0, 1)
	p := &Params{Navigation: testNavigation(t)}
	reg := r.dev.Register()
	reg.Claim(7)
	i := 0
	allocs := testing.AllocsPerRun(2000, func() {
		i++
		x := 0.03 + 0.06*float64(i%10)/10 // through every zone
		r.drv.SetState(hw.State{PositionM: hw.Vec3{X: x}, VelocityMps: hw.Vec3{X: 0.05}})
		reg.Write(7, uint64(i), r.clock.Now()+100*ms, &cmd, p)
		r.dev.Step(r.clock.Advance(ms))
	})
	if allocs != 0 {
		t.Fatalf("Step with navigation allocates %.2f times per tick, want 0", allocs)
	}
}
