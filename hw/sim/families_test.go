package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/hapticd/hapticd/hw"
)

// Each family's device reports its own identity and limits, and its
// physics keeps to them: pushed hard outward, the cursor stops at the
// family's workspace sphere, and the force applied is the family's limit.
func TestFamiliesBuildTheirDevices(t *testing.T) {
	ids := map[string]Family{}
	for _, spec := range Families() {
		t.Run(spec.Name, func(t *testing.T) {
			for i := range 3 {
				info := NewDevice(spec.Family, i, ArmOptions{PeriodS: 0.001}).Info()
				// Versions as a real device's: the vendor shows an
				// Inverse3 at major 7, minor 4 (a zero was 0.0).
				if info.Kind != spec.Kind || info.Model != spec.Model || info.Link != spec.Link || !info.Simulated ||
					info.FirmwareVersion != SimFirmwareVersion || info.HardwareVersion != SimHardwareVersion {
					t.Fatalf("info %+v does not match the family %+v", info, spec)
				}
				if f, dup := ids[info.Kind.String()+info.ID]; dup {
					t.Fatalf("%s %d has id %s, as a %s does", spec.Name, i, info.ID, f)
				}
				ids[info.Kind.String()+info.ID] = spec.Family
			}
			if spec.Kind != hw.KindArm {
				return
			}
			// A real arm of the family gets the same figures (hw/driver
			// reads them by the device type number).
			fig := hw.ArmFiguresOf(spec.Model)
			if fig != (hw.ArmFigures{MaxForceN: spec.MaxForceN, WorkspaceRadiusM: spec.WorkspaceRadiusM, WorkspaceCenterM: spec.WorkspaceCenterM, EffectiveMassKg: fig.EffectiveMassKg}) {
				t.Fatalf("hw's figures for device type %d are %+v, the simulated family's %+v", spec.Model, fig, spec)
			}
			// The mass the loop's gravity feed-forward lifts is the one
			// the physics pulls down, and a real arm's driver reports.
			arm := NewArm(ArmOptions{Family: spec.Family, PeriodS: 0.001})
			if info := arm.Info(); info.MaxForceN != spec.MaxForceN || info.WorkspaceCenterM != spec.WorkspaceCenterM || info.EffectiveMassKg != fig.EffectiveMassKg {
				t.Fatalf("info %+v, want the family's force %g, centre %v and mass %g", info, spec.MaxForceN, spec.WorkspaceCenterM, fig.EffectiveMassKg)
			}
			var st hw.State
			push := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 50}}
			for range 3000 {
				if err := arm.Exchange(&push, &st); err != nil {
					t.Fatal(err)
				}
				if d := st.PositionM.Sub(spec.WorkspaceCenterM).Norm(); d > spec.WorkspaceRadiusM+EndStopMarginM+1e-9 {
					t.Fatalf("cursor %.4f m from the centre, past the %g m workspace", d, spec.WorkspaceRadiusM)
				}
			}
			// The family's limit plus room for the host's gravity support.
			if want := hw.ActuatorLimitN(spec.MaxForceN, fig.EffectiveMassKg); math.Abs(st.ForceN.Norm()-want) > 1e-9 {
				t.Fatalf("a 50 N command applied %g N, want the family's actuator limit %g N", st.ForceN.Norm(), want)
			}
			if d := st.PositionM.Sub(spec.WorkspaceCenterM).Norm(); d < spec.WorkspaceRadiusM {
				t.Fatalf("pushed outward for 3 s the cursor is %.4f m from the centre, inside the %g m sphere", d, spec.WorkspaceRadiusM)
			}
		})
	}
	// Before families, Index alone decided; the Inverse3 and the wireless
	// grip keep those ids, so stored configuration comes back.
	if NewArm(ArmOptions{Index: 7}).Info().ID != ArmID(7) || NewGrip(GripOptions{Index: 7}).Info().ID != GripID(7) {
		t.Fatal("the default families changed their ids")
	}
	if NewGrip(GripOptions{Link: hw.LinkWired}).Info().Model != ModelVerseGrip {
		t.Fatal("a grip asked for by link is not the wired family")
	}
}

func TestParseFleet(t *testing.T) {
	for _, tt := range []struct {
		in, want, err string
	}{
		{"", "", ""},
		{"inverse3=2, minverse=1 ,verse_grip=0", "inverse3=2,minverse=1,verse_grip=0", ""},
		{"wireless_verse_grip=16384", "wireless_verse_grip=16384", ""},
		{"inverse3=2,inverse3=1", "", "given twice"},
		{"inverse=1", "", `unknown device family "inverse"`},
		{"minverse", "", "not family=count"},
		{"minverse=x", "", "whole number"},
		{"minverse=16385", "", "whole number"},
	} {
		fl, err := ParseFleet(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want one saying %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || fl.String() != tt.want {
			t.Errorf("%q: %q, %v; want %q", tt.in, fl.String(), err, tt.want)
		}
	}
	var fl Fleet
	if err := fl.Set("minverse=1"); err != nil {
		t.Fatal(err)
	}
	if err := fl.Set("minverse=2"); err == nil {
		t.Fatal("a family given in two flags was accepted")
	}
	if got := (Fleet{{FamilyVerseGrip, 1}, {FamilyMinverse, 2}, {FamilyInverse3, 1}}).Sorted().String(); got != "inverse3=1,minverse=2,verse_grip=1" {
		t.Fatalf("sorted fleet %s", got)
	}
}

// MotionRandom walks an arm "inside its range": of every family, so a
// Minverse (0.05 m) is not held against its boundary by a hand walking an
// Inverse3's 0.07 m (a third of the time, before).
func TestRandomMotionStaysInsideEachFamilysWorkspace(t *testing.T) {
	for _, spec := range Families() {
		if spec.Kind != hw.KindArm {
			continue
		}
		for seed := range int64(2) {
			a := NewArm(ArmOptions{Family: spec.Family, PeriodS: 0.001, Motion: MotionRandom, Seed: seed})
			// The loop's gravity feed-forward, as the service holds an idle arm.
			cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: EffectiveMassKg * GravityMps2}}
			var st hw.State
			past := 0
			const ticks = 30000
			for range ticks {
				if err := a.Exchange(&cmd, &st); err != nil {
					t.Fatal(err)
				}
				if st.PositionM.Sub(spec.WorkspaceCenterM).Norm() > spec.WorkspaceRadiusM {
					past++
				}
			}
			if past > 0 {
				t.Errorf("%s, seed %d: the random walk held the cursor past its %g m workspace for %d of %d ticks", spec.Name, seed, spec.WorkspaceRadiusM, past, ticks)
			}
		}
	}
}

// The first grip of each family moves its own way: the
// scripts are shifted by the index in the kind's id space, not the family's
// (the first wired and the first wireless grip read the same orientation,
// buttons and battery at every moment; toursim).
func TestFirstDevicesOfTwoFamiliesMoveApart(t *testing.T) {
	for _, motion := range []Motion{MotionCircle, MotionRandom} {
		// Grips: two arm families differ anyway (their workspaces do).
		for _, pair := range [][2]Family{{FamilyVerseGrip, FamilyWirelessVerseGrip}} {
			a := NewDevice(pair[0], 0, ArmOptions{PeriodS: 0.001, Motion: motion, Seed: 1})
			b := NewDevice(pair[1], 0, ArmOptions{PeriodS: 0.001, Motion: motion, Seed: 1})
			same := true
			var sa, sb hw.State
			var idle hw.Command
			for range 3000 {
				if err := a.Exchange(&idle, &sa); err != nil {
					t.Fatal(err)
				}
				if err := b.Exchange(&idle, &sb); err != nil {
					t.Fatal(err)
				}
				same = same && sa.Orientation == sb.Orientation && sa.Buttons == sb.Buttons && sa.PositionM == sb.PositionM
			}
			if same {
				t.Errorf("%v: %v 0 and %v 0 moved alike for 3 s", motion, pair[0], pair[1])
			}
		}
	}
}
