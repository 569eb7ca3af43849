package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// buildHapticd builds the real service from this module.
func buildHapticd(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hapticd")
	if out, err := exec.Command("go", "build", "-o", path, hapticdPackage).CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/hapticd: %v\n%s", err, clip(out, 2000))
	}
	return path
}

// endToEnd skips with -short (why says what the test starts), else builds
// the real service and returns it with a context bounded to two minutes.
func endToEnd(t *testing.T, why string) (string, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	bin := buildHapticd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return bin, ctx
}

// oneArmService starts the real hapticd with one simulated arm at 1 kHz,
// stopped when the test ends.
func oneArmService(t *testing.T, why string) (*service, context.Context) {
	t.Helper()
	bin, ctx := endToEnd(t, why)
	svc, err := startService(ctx, ServiceOptions{Binary: bin, Arms: 1, LoopHz: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.stop() })
	return svc, ctx
}

func TestEndToEndAgainstRealHapticd(t *testing.T) {
	bin, ctx := endToEnd(t, "end-to-end run starts the real service; skipped with -short")
	rep, err := Run(ctx, RunOptions{Hapticd: bin, Arms: 2, Clients: 2, Observers: 1, RateHz: 500,
		Duration: 600 * time.Millisecond, Warmup: 200 * time.Millisecond, LoopHz: 1000, Pairs: 2})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	_ = rep.WriteTable(&table)
	t.Logf("report:\n%s", table.String())

	h := rep.Hapticd.Overall
	if h.Received == 0 || h.Received != h.Sent {
		t.Errorf("received %d of %d frames", h.Received, h.Sent)
	}
	if h.Lost+h.OutOfOrder+h.ErrorFrames != 0 || h.ClientsInError != 0 {
		t.Errorf("hapticd broke the contract: lost %d, out of order %d, error frames %d, sessions in error %d",
			h.Lost, h.OutOfOrder, h.ErrorFrames, h.ClientsInError)
	}
	// The echo serves frames the size of hapticd's first run (the frames
	// it captured); the run shown is the median one, whose mean frame
	// size may differ by a few bytes of number text.
	if len(rep.Pairs) == 0 || rep.Echo == nil || rep.Echo.Overall.FrameBytes != rep.Pairs[0].Hapticd.FrameBytes {
		t.Errorf("echo baseline missing or with another frame size than hapticd's first run (%+v)", rep.Pairs)
	}
	if rep.Loop == nil || rep.Loop.Devices != 2 || rep.Loop.Ticks == 0 {
		t.Errorf("loop figures %+v, want 2 ticking devices from /stats", rep.Loop)
	}
	if rep.Process == nil || rep.Process.Goroutines == 0 || rep.Process.RSSBytes == 0 {
		t.Errorf("process figures %+v, want goroutines and RSS from /stats", rep.Process)
	}
	if rep.BareLoop == nil || rep.BareLoop.Arms != 2 || rep.BareLoop.Ticks == 0 {
		t.Errorf("bare loop %+v, want 2 arms stepped", rep.BareLoop)
	}
	// The loop's period under load stands beside a bare loop that bore the
	// same clients' load (the echo serving them).
	if l := rep.BareLoopLoaded; l == nil || l.Arms != 2 || l.Ticks == 0 {
		t.Errorf("bare loop under the echo's load %+v, want 2 arms stepped", l)
	}
	// ...in runs of its own: the echo's figures come from the two runs
	// that had the machine to themselves, as hapticd's runs had.
	if len(rep.Pairs) != 2 || rep.Pairs[0].Echo == nil || rep.Pairs[1].Echo == nil {
		t.Errorf("pairs %+v: want 2 pairs of a hapticd run and an echo run alone, not the runs that carried the bare loop", rep.Pairs)
	}
	loaded := 0
	for _, c := range rep.Comparisons {
		// A ratio is left out where the loaded bare loop had no overruns
		// to divide by; the row still stands beside it.
		if c.Baseline == loadedBaseline {
			loaded++
		}
	}
	if loaded != 2 {
		t.Errorf("comparisons %+v: want the loop period p99 and overruns beside the loaded bare loop", rep.Comparisons)
	}
	if len(rep.Warnings) != 0 {
		t.Errorf("warnings: %q", rep.Warnings)
	}
}

func TestEndToEndCapacity(t *testing.T) {
	bin, ctx := endToEnd(t, "capacity search starts the real service; skipped with -short")
	// A limit of 100 % passes every probe that ticks: this checks the
	// search's plumbing, not the machine's speed.
	rep, err := Capacity(ctx, CapacityOptions{Hapticd: bin, LoopHz: 1000, Max: 2, Settle: 200 * time.Millisecond,
		Window: 300 * time.Millisecond, OverrunLimit: 1.01, Pairs: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Service.Capacity != 2 || rep.Service.AtMax != 2 || rep.BareLoop == nil || rep.BareLoop.Capacity != 2 || rep.BareLoop.AtMax != 2 || rep.Ratio != 1 {
		t.Errorf("capacity report %+v, want 2 arms (at max) for both in both pairs, a ratio of 1", rep)
	}
}

// TestDeviceModeAgainstRealHapticd: hapticbench device drives one stand-in
// through the real service's hardware path and another through the bare
// host loop, under a client load, and reports both from the arm's side.
func TestDeviceModeAgainstRealHapticd(t *testing.T) {
	bin, ctx := endToEnd(t, "starts the real service on a pseudo-terminal; skipped with -short")
	rep, err := Device(ctx, DeviceOptions{Hapticd: bin, Arms: 2, Clients: 2, RateHz: 200,
		Duration: 600 * time.Millisecond, Warmup: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	_ = rep.WriteTable(&table)
	t.Logf("report:\n%s", table.String())
	if rep.Hapticd.Frames == 0 || rep.BareLoop.Frames == 0 || rep.Hapticd.TargetUs != 1000 {
		t.Errorf("force frames at the arms: hapticd %+v, bare loop %+v; want both timed against a 1000 µs target", rep.Hapticd, rep.BareLoop)
	}
	if rep.Load == nil || rep.Load.Overall.Received == 0 {
		t.Errorf("client load %+v, want frames received", rep.Load)
	}
	if len(rep.Comparisons) != 4 || len(rep.Warnings) != 0 {
		t.Errorf("comparisons %+v, warnings %q", rep.Comparisons, rep.Warnings)
	}
	// The probe's force commands went through the service's session and
	// loop to the stand-in's motors, each timed on one clock.
	l := rep.CommandToMotor
	if l == nil || l.Sent == 0 || l.OwnFrame == 0 || l.Latency.Count != l.OwnFrame+l.Superseded {
		t.Fatalf("command to motor %+v: want commands sent and timed at the arm", l)
	}
	if l.Latency.P50Us <= 0 || l.Latency.MaxUs < l.Latency.P99Us || l.LoopPeriodUs != 1000 || l.BoundUs != 1250 {
		t.Errorf("command to motor %+v: want ordered percentiles beside a 1000 µs period and its 1250 µs bound", l)
	}
	if !strings.Contains(table.String(), "command to motor") || !strings.Contains(table.String(), fmt.Sprintf("%d frames rejected", l.Rejected)) {
		t.Errorf("the table does not show the command-to-motor latency and its rejected frames:\n%s", table.String())
	}
}

// TestSubscribedRunAgainstRealHapticd: with --subscribe every session's
// frames carry its own arm only, so they are a fraction of the full frame.
func TestSubscribedRunAgainstRealHapticd(t *testing.T) {
	bin, ctx := endToEnd(t, "end-to-end run starts the real service; skipped with -short")
	frameBytes := func(subscribe bool) int {
		rep, err := Run(ctx, RunOptions{Hapticd: bin, Arms: 8, Clients: 2, RateHz: 200, NoEcho: true, NoBareLoop: true,
			Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, Subscribe: subscribe})
		if err != nil {
			t.Fatal(err)
		}
		h := rep.Hapticd.Overall
		if h.Received == 0 || h.Lost+h.OutOfOrder+h.ErrorFrames != 0 {
			t.Fatalf("subscribe %v: received %d, lost %d, out of order %d, error frames %d", subscribe, h.Received, h.Lost, h.OutOfOrder, h.ErrorFrames)
		}
		return h.FrameBytes
	}
	all, one := frameBytes(false), frameBytes(true)
	if one*4 > all {
		t.Errorf("subscribed frames are %d bytes, full frames of 8 arms %d: want one arm's worth", one, all)
	}
}

// TestLeaseReleaseAgainstRealHapticd: a client that stalls has its force
// at zero after its lease (plus the ramp), every time, and never before
// the lease lapsed.
func TestLeaseReleaseAgainstRealHapticd(t *testing.T) {
	bin, ctx := endToEnd(t, "starts the real service; skipped with -short")
	rep, err := Lease(ctx, LeaseOptions{Hapticd: bin, Stalls: 5, Hold: 50 * time.Millisecond, LeaseMs: 30})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.ReleaseMs) != 5 || rep.BoundMs != 50 {
		t.Fatalf("report %+v, want 5 releases against a 50 ms bound", rep)
	}
	for i, r := range rep.ReleaseMs {
		// A release before the lease lapsed would mean the force was cut
		// under a live lease.
		if r < 30 {
			t.Errorf("stall %d: force at zero %.1f ms after the last command, before the 30 ms lease lapsed", i, r)
		}
	}
}
