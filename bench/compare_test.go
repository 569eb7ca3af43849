package bench

import (
	"strings"
	"testing"
)

// TestBaselineThatLosesIsFlagged: a baseline beaten beyond the noise gets a
// flag and no ratio, in the report's data and its table; within the noise,
// or when the baseline wins, the ratio stands.
func TestBaselineThatLosesIsFlagged(t *testing.T) {
	tests := []struct {
		name                string
		hapticdHz, echoHz   float64
		hapticdP50, echoP50 float64
		echoRates           []float64
		wantRateFlag        bool
		wantP50Flag         bool
	}{
		{"baseline is a floor", 9000, 10000, 60, 40, []float64{10000, 9900}, false, false},
		{"tie within the default noise", 10300, 10000, 41, 42, []float64{10000, 9990}, false, false},
		{"echo slower beyond noise", 12000, 10000, 40, 42, []float64{10000, 9900}, true, false},
		{"echo slower and its p50 higher", 12000, 10000, 30, 42, []float64{10000, 9900}, true, true},
		{"noisy echo runs widen the margin", 11500, 10000, 40, 40, []float64{10000, 8000}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := RunReport{EchoRates: tc.echoRates}
			r.Hapticd.Overall.AchievedHzTotal, r.Hapticd.Overall.RTT.P50Us = tc.hapticdHz, tc.hapticdP50
			r.Echo = &LoadResult{}
			r.Echo.Overall.AchievedHzTotal, r.Echo.Overall.RTT.P50Us = tc.echoHz, tc.echoP50
			r.Comparisons = compare(r)
			got := map[string]Comparison{}
			for _, c := range r.Comparisons {
				got[c.Figure] = c
			}
			for fig, want := range map[string]bool{"rate total": tc.wantRateFlag, "rtt p50": tc.wantP50Flag} {
				c := got[fig]
				if flagged := c.Flag == FlagBaselineLost; flagged != want {
					t.Errorf("%s: flag %q, want flagged %v (%+v)", fig, c.Flag, want, c)
				}
				if (c.Ratio != 0) == (c.Flag != "") {
					t.Errorf("%s: ratio %v with flag %q: want exactly one of them", fig, c.Ratio, c.Flag)
				}
			}
			var b strings.Builder
			if err := r.WriteTable(&b); err != nil {
				t.Fatal(err)
			}
			if lost := tc.wantRateFlag || tc.wantP50Flag; strings.Contains(b.String(), "BASELINE LOST") != lost {
				t.Errorf("table shows BASELINE LOST: %v, want %v:\n%s", !lost, lost, b.String())
			}
		})
	}
}

// TestLoopUnderLoadIsSetBesideTheLoadedBareLoop: the service's loop period
// and overruns under the clients' load stand beside the bare loop run under
// the same load, as well as beside the quiet one; without that run there is
// no such row.
func TestLoopUnderLoadIsSetBesideTheLoadedBareLoop(t *testing.T) {
	r := RunReport{
		Loop:     &LoopFigures{PeriodP99UsWorst: 3000, OverrunFractionWorst: 0.02},
		BareLoop: &BareLoop{Arms: 100, LoopHz: 1000, Ticks: 1000, Overruns: 1, PeriodUsP99: 1000},
	}
	loadedRows := func() map[string]Comparison {
		got := map[string]Comparison{}
		for _, c := range compare(r) {
			if c.Baseline == loadedBaseline {
				got[c.Figure] = c
			}
		}
		return got
	}
	if got := loadedRows(); len(got) != 0 {
		t.Fatalf("rows against a loaded bare loop that did not run: %+v", got)
	}
	r.BareLoopLoaded = &BareLoop{Arms: 100, LoopHz: 1000, Ticks: 1000, Overruns: 10, PeriodUsP99: 2000}
	got := loadedRows()
	if c := got["loop period p99 (worst device)"]; c.Ratio != 1.5 || c.Base != 2000 {
		t.Errorf("period p99 under load: %+v, want 3000 against 2000, ratio 1.5", c)
	}
	if c := got["loop overruns (worst device)"]; c.Ratio != 2 || c.Base != 1 {
		t.Errorf("overruns under load: %+v, want 2 %% against 1 %%, ratio 2", c)
	}
	var b strings.Builder
	r.Comparisons = compare(r)
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), loadedBaseline) || !strings.Contains(b.String(), "bare loop inside an echo's process") {
		t.Errorf("the table does not show the loaded bare loop:\n%s", b.String())
	}
}

// TestEchoBaselineIsTheBestOfItsRuns: with several echo runs, each figure is
// compared with the best any run did, so the run with the highest rate does
// not bring a worse tail along: hapticd's p99 under the fastest run's but
// over the other run's is a ratio above 1, not a win.
func TestEchoBaselineIsTheBestOfItsRuns(t *testing.T) {
	fast := Overall{AchievedHzTotal: 28000, RTT: Summary{P50Us: 19, P99Us: 160}}
	steady := Overall{AchievedHzTotal: 16000, RTT: Summary{P50Us: 40, P99Us: 70}}
	r := RunReport{EchoRates: []float64{fast.AchievedHzTotal, steady.AchievedHzTotal}}
	r.Echo = &LoadResult{Overall: fast}
	r.EchoFloor = bestOf(bestOf(nil, fast), steady)
	r.Hapticd.Overall = Overall{AchievedHzTotal: 23000, RTT: Summary{P50Us: 37, P99Us: 102}}
	got := map[string]Comparison{}
	for _, c := range compare(r) {
		got[c.Figure] = c
	}
	for fig, wantBase := range map[string]float64{"rate total": 28000, "rtt p50": 19, "rtt p99": 70} {
		if c := got[fig]; c.Base != wantBase {
			t.Errorf("%s: baseline %v, want the best echo run's %v", fig, c.Base, wantBase)
		}
	}
	if c := got["rtt p99"]; c.Ratio <= 1 {
		t.Errorf("rtt p99: ratio %v against the steadier run's 70 µs, want above 1", c.Ratio)
	}
}
