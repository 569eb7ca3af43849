package bench

import (
	"math"
	"strings"
	"testing"
)

// TestBaselineThatLosesIsFlagged: a baseline beaten beyond the noise in
// the median pair gets a flag and no ratio, in the report's data and its
// table; within the noise, or when the baseline wins, the ratio stands.
func TestBaselineThatLosesIsFlagged(t *testing.T) {
	type run struct{ hz, p50 float64 }
	tests := []struct {
		name         string
		hapticd      []run
		echo         []run
		wantRateFlag bool
		wantP50Flag  bool
	}{
		{"baseline is a floor", []run{{9000, 60}, {9100, 61}, {8900, 59}}, []run{{10000, 40}, {9900, 41}, {10100, 40}}, false, false},
		{"tie within the noise", []run{{10300, 41}, {10200, 42}, {10100, 41}}, []run{{10000, 42}, {10000, 42}, {10000, 42}}, false, false},
		{"echo slower beyond noise", []run{{12000, 40}, {12000, 40}, {12000, 40}}, []run{{10000, 42}, {10000, 42}, {10000, 42}}, true, false},
		{"echo slower and its p50 higher", []run{{12000, 30}, {12000, 30}, {12000, 30}}, []run{{10000, 42}, {10000, 42}, {10000, 42}}, true, true},
		// One pair where the echo had a bad minute does not flag the run.
		{"one pair lost, the median did not", []run{{9000, 60}, {12000, 40}, {9000, 60}}, []run{{10000, 40}, {8000, 80}, {10000, 40}}, false, false},
		// ...nor does one good pair rescue a run whose baseline lost.
		{"the median pair lost", []run{{12000, 30}, {9000, 60}, {12000, 30}}, []run{{10000, 42}, {10000, 40}, {10000, 42}}, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r RunReport
			for i := range tc.hapticd {
				p := RunPair{Echo: &Overall{}}
				p.Hapticd.AchievedHzTotal, p.Hapticd.RTT.P50Us = tc.hapticd[i].hz, tc.hapticd[i].p50
				p.Echo.AchievedHzTotal, p.Echo.RTT.P50Us = tc.echo[i].hz, tc.echo[i].p50
				r.Pairs = append(r.Pairs, p)
			}
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
				if len(c.PairRatios) != len(tc.hapticd) {
					t.Errorf("%s: pair ratios %v, want one per pair, flagged or not", fig, c.PairRatios)
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

// TestPairedRatioIsTheMedianOfThePairs: each ratio is taken inside a
// pair (runs that shared a minute of the machine) and the median of those
// is quoted: not the ratio of each side's best run, nor of their medians.
func TestPairedRatioIsTheMedianOfThePairs(t *testing.T) {
	pair := func(h, e float64) RunPair {
		return RunPair{Hapticd: Overall{RTT: Summary{P99Us: h}}, Echo: &Overall{RTT: Summary{P99Us: e}}}
	}
	// Ratios 1.2, 1.5, 1.1, 1.4, 3.0: the median is 1.4. The best of
	// each side (60 / 50) would say 1.2 and the medians (100 / 80) 1.25.
	r := RunReport{Pairs: []RunPair{pair(60, 50), pair(150, 100), pair(88, 80), pair(112, 80), pair(300, 100)}}
	var c Comparison
	for _, x := range compare(r) {
		if x.Figure == "rtt p99" {
			c = x
		}
	}
	if math.Abs(c.Ratio-1.4) > 1e-9 || math.Abs(c.RatioMin-1.1) > 1e-9 || math.Abs(c.RatioMax-3) > 1e-9 {
		t.Errorf("rtt p99: ratio %v in %v–%v, want the median pair's 1.4 in 1.1–3", c.Ratio, c.RatioMin, c.RatioMax)
	}
	if c.Hapticd != 112 || c.Base != 80 {
		t.Errorf("rtt p99: hapticd %v beside %v, want each side's median run, 112 and 80", c.Hapticd, c.Base)
	}
	if want := []float64{1.2, 1.5, 1.1, 1.4, 3}; len(c.PairRatios) != 5 || math.Abs(c.PairRatios[4]-want[4]) > 1e-9 {
		t.Errorf("pair ratios %v, want %v in run order", c.PairRatios, want)
	}
}

// TestShownRunIsTheMedianUnlessOneBrokeTheContract picks the run a report
// shows in full.
func TestShownRunIsTheMedianUnlessOneBrokeTheContract(t *testing.T) {
	run := func(hz float64, lost uint64) hapticdRun {
		var r hapticdRun
		r.load.Overall.AchievedHzTotal, r.load.Overall.Lost = hz, lost
		return r
	}
	tests := []struct {
		name string
		runs []hapticdRun
		want int
	}{
		{"odd count", []hapticdRun{run(300, 0), run(100, 0), run(200, 0)}, 2},
		{"even count takes the lower middle", []hapticdRun{run(400, 0), run(100, 0), run(300, 0), run(200, 0)}, 3},
		{"a faulty run is shown", []hapticdRun{run(300, 0), run(500, 1), run(200, 0)}, 1},
		{"one run", []hapticdRun{run(10, 0)}, 0},
	}
	for _, tt := range tests {
		if got := shownRun(tt.runs); got != tt.want {
			t.Errorf("%s: shown run %d, want %d", tt.name, got, tt.want)
		}
	}
}
