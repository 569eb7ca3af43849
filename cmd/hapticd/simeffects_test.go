package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

func TestSimEffectsFlag(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  simEffects
		err   string
	}{
		{"wall,damper", simEffects{"wall", "damper"}, ""},
		{" damper ", simEffects{"damper"}, ""},
		{"", nil, "no effect"},
		{"wall,wall", nil, `"wall" given twice`},
		{"wall,spring", nil, `unknown effect "spring"`},
	} {
		o, err := parseFlags([]string{"--sim-effects", tt.value})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("--sim-effects %q: error %v, want one saying %q", tt.value, err, tt.err)
			}
			continue
		}
		if err != nil || !slices.Equal(o.simEffects, tt.want) {
			t.Errorf("--sim-effects %q = %q, %v; want %q", tt.value, o.simEffects, err, tt.want)
		}
	}
}

// TestSimEffectsHoldArms: with --sim-effects every simulated arm, and no
// grip, is controlled by the service's own session, and its loop renders
// the effects declared (a moving arm feels them), so a capacity run
// measures the loop with effects.
func TestSimEffectsHoldArms(t *testing.T) {
	sv := startInProcess(t, "--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--sim-arms", "3", "--sim-grips", "1",
		"--sim-motion", "circle", "--sim-effects", "wall,damper", "--state-dir", filepath.Join(t.TempDir(), "state"))
	arms := 0
	for _, d := range sv.svc.Devices().All() {
		owner := d.Register().Owner()
		if d.Info.Kind != hw.KindArm {
			if owner != 0 {
				t.Errorf("%s %s: held by session %d, want a grip left alone", d.Name, d.ID, owner)
			}
			continue
		}
		arms++
		if owner != simEffectsSession {
			t.Errorf("%s %s: owner %d, want the service's --sim-effects session", d.Name, d.ID, owner)
		}
		if got := d.Register().Claim(7); got != simEffectsSession {
			t.Errorf("%s %s: a client's claim gave owner %d, want it refused", d.Name, d.ID, got)
		}
		hwtest.EventuallyNil(t, 10*time.Second, "the loop to render the wall and the damper", func() error {
			var rep loop.EffectsReport
			if !d.Loop().LoadEffects(&rep) || !rep.Rendering || rep.N != 2 || rep.Session != simEffectsSession {
				return fmt.Errorf("effects report %+v", rep)
			}
			if f := rep.Effects[1].ForceN; f == (hw.Vec3{}) {
				return fmt.Errorf("the damper pushes nothing on a moving arm: %+v", rep.Effects[1])
			}
			return nil
		})
	}
	if arms != 3 {
		t.Errorf("%d arms, want 3", arms)
	}
}

// TestBaselineArmsWithEffects: the bare loop renders the same effects,
// and refuses a name it does not know.
func TestBaselineArmsWithEffects(t *testing.T) {
	var out strings.Builder
	if err := baselineArms([]string{"--arms", "4", "--threads", "2", "--loop-hz", "500", "--duration", "200ms", "--motion", "circle", "--effects", "wall,damper"}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "4 arms at 500 Hz") {
		t.Errorf("output %q", out.String())
	}
	if err := baselineArms([]string{"--arms", "4", "--effects", "wall,foo"}, nil, &out); err == nil || !strings.Contains(err.Error(), `unknown effect "foo"`) {
		t.Errorf("--effects wall,foo: %v, want an error naming the effect", err)
	}
	// Run again until a run ticks: on a loaded machine the loop's thread
	// may get no CPU within a 100 ms run (the full suite's, 2026-11-29:
	// 0 ticks), which says nothing of the effects.
	var res protocol.BaselineArms
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if res, err = stepBareLoops(4, 1, 1000, 100*time.Millisecond, 0, simEffects{"damper"}); err != nil || res.Ticks > 0 {
			break
		}
	}
	if err != nil || res.Ticks == 0 || res.NsPerStep <= 0 {
		t.Errorf("stepBareLoops with a damper = %+v, %v; want ticks and a step cost", res, err)
	}
}

// TestSimEffectsWallThroughEachFamilysCentre: --sim-effects' wall goes
// through each arm's own workspace centre, as its help says: a Minverse's
// (2 cm lower and 3 cm nearer than an Inverse3's) too, where the wall
// through an Inverse3's centre lay above its resting cursor, which a wall
// never touches from behind (its proxy stays with the cursor).
func TestSimEffectsWallThroughEachFamilysCentre(t *testing.T) {
	sv := startInProcess(t, "--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--sim", "inverse3=1,minverse=1,inverse3x=1",
		"--sim-effects", "wall", "--state-dir", filepath.Join(t.TempDir(), "state"))
	families := map[uint8]bool{}
	for _, d := range sv.svc.Devices().All() {
		families[d.Info.Model] = true
		set := d.Effects()
		if set == nil {
			t.Fatalf("%s %s renders no effects", d.Name, d.ID)
		}
		wall, ok := set.Find("wall")
		if !ok || wall.Params.PointM != d.Info.WorkspaceCenterM {
			t.Errorf("%s %s (device type %d): the wall %+v, want it through the arm's workspace centre %v", d.Name, d.ID, d.Info.Model, wall.Params, d.Info.WorkspaceCenterM)
		}
	}
	if len(families) != 3 {
		t.Fatalf("device types %v, want the three arm families", families)
	}
}
