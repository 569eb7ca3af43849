package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// These tests start the test binary itself as a fake hapticd process (see
// TestMain), so starting, readiness, stopping and baseline-arms are tested
// with real processes and sockets while the real service may not build.

func TestRunStartsAndStopsTheService(t *testing.T) {
	bin := fakeHapticdBinary(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, RunOptions{Hapticd: bin, Arms: 3, Clients: 3, Observers: 1, RateHz: 500,
		Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
	h := rep.Hapticd.Overall
	if h.Received == 0 || h.Lost+h.OutOfOrder+h.ErrorFrames != 0 {
		t.Errorf("hapticd load: %+v", h)
	}
	if rep.Loop == nil || rep.Loop.Devices != 3 {
		t.Errorf("loop figures %+v, want the 3 started arms", rep.Loop)
	}
	if rep.Process == nil || rep.Process.Sessions != 4 {
		t.Errorf("process figures %+v, want the 4 sessions open during the window", rep.Process)
	}
	if rep.BareLoop == nil || rep.BareLoop.Arms != 3 || rep.BareLoop.LoopHz != 1000 {
		t.Errorf("bare loop %+v, want baseline-arms run with 3 arms at 1000 Hz", rep.BareLoop)
	}
	figures := map[string]Comparison{}
	for _, c := range rep.Comparisons {
		figures[c.Figure] = c
	}
	for _, name := range []string{"rtt p99", "rate total", "loop period p99 (worst device)", "service CPU"} {
		// A noisy run may beat the echo: then a flag stands for the ratio.
		if c, ok := figures[name]; !ok || c.Baseline == "-" || (c.Ratio <= 0 && c.Flag != FlagBaselineLost) {
			t.Errorf("comparison %q = %+v, want a baseline and a ratio (or a baseline-lost flag)", name, c)
		}
	}
}

func TestStartServiceReportsAnEarlyExit(t *testing.T) {
	// A binary that exits at once must give an error with its output, not
	// a hang until the ready timeout.
	script := filepath.Join(t.TempDir(), "hapticd")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'hapticd: --state-dir: permission denied' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := startService(context.Background(), ServiceOptions{Binary: script, Arms: 1, LoopHz: 1000, ReadyIn: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "exited before ready") || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("startService = %v, want an early-exit error carrying the service's last log line", err)
	}
}

func TestFindHapticdExplicitPath(t *testing.T) {
	if _, _, err := FindHapticd(context.Background(), filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("FindHapticd accepted a path that does not exist")
	}
	bin := fakeHapticdBinary(t, 0)
	got, cleanup, err := FindHapticd(context.Background(), bin)
	defer cleanup()
	if err != nil || got != bin {
		t.Errorf("FindHapticd(%q) = %q, %v", bin, got, err)
	}
}

// fakeCapacity searches the fake service's capacity and its bare loop's,
// with effects (hapticbench arms --effects) if given, and returns the
// report with its table.
func fakeCapacity(t *testing.T, bin string, effects ...string) (CapacityReport, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := Capacity(ctx, CapacityOptions{Hapticd: bin, LoopHz: 1000, Max: 16, Precision: 1e-9, Retries: -1, Pairs: 2,
		Settle: 50 * time.Millisecond, Window: 150 * time.Millisecond, Effects: strings.Join(effects, ",")})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	return rep, b.String()
}

func TestCapacityAgainstFakeProcesses(t *testing.T) {
	// The fake service steps up to 5 arms without overruns and its bare
	// loop up to 10: the search must find exactly those.
	rep, table := fakeCapacity(t, fakeHapticdBinary(t, 5))
	if rep.Service.Capacity != 5 || rep.BareLoop == nil || rep.BareLoop.Capacity != 10 {
		t.Fatalf("capacities: service %g, bare loop %+v; want 5 and 10", rep.Service.Capacity, rep.BareLoop)
	}
	if rep.Ratio != 0.5 {
		t.Errorf("ratio %v, want 0.5", rep.Ratio)
	}
	if !strings.Contains(table, "0.50x") {
		t.Errorf("capacity table lacks the ratio:\n%s", table)
	}
}

// TestCapacityWithEffects: --effects reaches the service (--sim-effects)
// and the bare loop (--effects), whose fakes each hold half the arms with
// effects, and the report says what was rendered.
func TestCapacityWithEffects(t *testing.T) {
	rep, table := fakeCapacity(t, fakeHapticdBinary(t, 8), "wall", "damper")
	if rep.Service.Capacity != 4 || rep.BareLoop == nil || rep.BareLoop.Capacity != 8 {
		t.Fatalf("capacities: service %g, bare loop %+v; want 4 and 8 (half of 8 and 16: effects given to both)", rep.Service.Capacity, rep.BareLoop)
	}
	if rep.Effects != "wall,damper" || !strings.Contains(table, "rendering wall,damper") || !strings.Contains(table, "0.50x") {
		t.Errorf("report effects %q, table:\n%s\nwant the effects named and the ratio 0.50x", rep.Effects, table)
	}
}

// TestCapacityFlagsABareLoopThatLoses: when the bare loop holds fewer arms
// than the service, the report gives no ratio and says so.
func TestCapacityFlagsABareLoopThatLoses(t *testing.T) {
	bin := fakeHapticdBinary(t, 8)
	t.Setenv(fakeBareEnv, "0.25") // the bare loop holds 2
	rep, table := fakeCapacity(t, bin)
	if rep.Service.Capacity != 8 || rep.BareLoop == nil || rep.BareLoop.Capacity != 2 {
		t.Fatalf("capacities: service %g, bare loop %+v; want 8 and 2", rep.Service.Capacity, rep.BareLoop)
	}
	if rep.Ratio != 0 || rep.Flag != FlagBaselineLost || len(rep.Warnings) == 0 {
		t.Errorf("ratio %v, flag %q, warnings %q; want no ratio, the baseline-lost flag and a warning", rep.Ratio, rep.Flag, rep.Warnings)
	}
	if !strings.Contains(table, "BASELINE LOST") {
		t.Errorf("capacity table does not flag the lost baseline:\n%s", table)
	}
}

// TestSweepOverArms starts a service per arm count and runs the bare loop
// beside each, and the plot gains the loop panel.
func TestSweepOverArms(t *testing.T) {
	bin := fakeHapticdBinary(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Sweep(ctx, RunOptions{Hapticd: bin, Clients: 1, RateHz: 500, NoEcho: true,
		Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond}, SweepSpec{Over: "arms", Counts: []int{1, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) != 2 {
		t.Fatalf("%d points, want 2", len(rep.Points))
	}
	for i, want := range []int{1, 3} {
		p := rep.Points[i]
		if p.Config.Arms != want || p.BareLoop == nil || p.BareLoop.Arms != want || p.Loop == nil || p.Loop.Devices != want {
			t.Errorf("point %d: config %+v, bare loop %+v, loop %+v; want %d arms in each", i, p.Config, p.BareLoop, p.Loop, want)
		}
	}
	var svg strings.Builder
	if err := rep.WriteSVG(&svg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "Device loop period p99") || !strings.Contains(svg.String(), ">arms<") {
		t.Error("the arms sweep's plot lacks the device-loop panel or the arms axis")
	}
}
