package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedSide is a side whose windows follow an overrun curve over N,
// each window's fraction multiplied by noise(i) for its i-th window (from
// 0); every call is logged as its side's name and N.
type scriptedSide struct {
	name  string
	curve func(n int) float64
	noise func(i int) float64 // nil: none
	log   *[]string
	calls int
}

func (s *scriptedSide) window(_ context.Context, n int) (CapacityWindow, error) {
	f := s.curve(n)
	if s.noise != nil {
		f *= s.noise(s.calls)
	}
	s.calls++
	if s.log != nil {
		*s.log = append(*s.log, fmt.Sprintf("%s %d", s.name, n))
	}
	return CapacityWindow{OverrunFraction: min(f, 1)}, nil
}

// steepLine is an overrun curve that reaches 1 % at n = c: a capacity of
// c-1 under the default limit, with windows near the line from about
// 0.76c to 1.32c.
func steepLine(c int) func(n int) float64 {
	return func(n int) float64 { return 0.01 * math.Pow(float64(n)/float64(c), 4) }
}

// cliff passes up to c arms far from the line and fails far beyond.
func cliff(c int) func(n int) float64 {
	return func(n int) float64 {
		if n <= c {
			return 0
		}
		return 0.5
	}
}

func searchOptions(pairs, repeats int, precision float64) CapacityOptions {
	o := CapacityOptions{Max: 1 << 14, Pairs: pairs, Repeats: repeats}
	o.defaults()
	o.Precision = precision
	return o
}

func TestCapacitySearchFindsTheLargestPassingN(t *testing.T) {
	tests := []struct {
		name      string
		threshold int // the largest N that passes
		max       int
		start     int
		want      int
		wantAtMax bool
	}{
		{"nothing passes", 0, 1024, 1, 0, false},
		{"one arm", 1, 1024, 1, 1, false},
		{"between powers of two", 37, 1024, 1, 37, false},
		{"a power of two", 256, 1024, 1, 256, false},
		{"beyond max", 5000, 1024, 1, 1024, true},
		{"max not a power of two", 5000, 1000, 1, 1000, true},
		{"started below", 37, 1024, 20, 37, false},
		{"started above", 37, 1024, 500, 37, false},
		{"started above, nothing passes", 0, 1024, 500, 0, false},
		{"started above max", 5000, 1000, 3000, 1000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newCapacitySearch(tt.start, tt.max, 1e-9)
			var probed []int
			for !s.done() {
				if len(probed) > 100 {
					t.Fatalf("no answer after %d probes: %v", len(probed), probed)
				}
				probed = append(probed, s.next)
				if s.next > tt.max || s.next < 1 {
					t.Errorf("probed %d arms, outside 1..%d", s.next, tt.max)
				}
				s.record(s.next <= tt.threshold)
			}
			if s.capacity() != tt.want || s.atMax != tt.wantAtMax {
				t.Errorf("capacity %d (at max %v), want %d (at max %v); probed %v", s.capacity(), s.atMax, tt.want, tt.wantAtMax, probed)
			}
		})
	}
}

func TestCapacitySearchStopsWithinPrecision(t *testing.T) {
	o := searchOptions(1, 1, 0.05)
	o.Max = 1 << 20
	side := &scriptedSide{name: SideService, curve: cliff(3000)}
	pairs, _, err := searchCapacityPairs(context.Background(), o, side.window, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := pairs[0].Service.Capacity
	if got > 3000 || float64(3000-got) > o.Precision*float64(got) {
		t.Errorf("capacity %d, want within %.0f %% below 3000", got, 100*o.Precision)
	}
}

// TestCapacitySearchThroughNoise: windows are noisy (one in three of a
// side's windows is multiplied by 6 or divided by 2.5); a probe
// deciding by the median of three windows still finds the capacity
// exactly, and both sides find theirs in every pair. One window per probe
// is fooled by the same noise, which is what the median is for.
func TestCapacitySearchThroughNoise(t *testing.T) {
	spikes := func(i int) float64 {
		if i%3 == 1 {
			return 6
		}
		return 1
	}
	// Dips stay within the factor (Near, 3) under the line that a window
	// must pass by to decide alone: a pass far under it is trusted.
	dips := func(i int) float64 {
		if i%3 == 2 {
			return 1 / 2.5
		}
		return 1
	}
	both := func(i int) float64 {
		switch i % 6 {
		case 1:
			return 6
		case 4:
			return 1 / 2.5
		}
		return 1
	}
	tests := []struct {
		name          string
		noise         func(int) float64
		repeats       int
		service, bare int // where each side's curve crosses 1 %
		wantExact     bool
	}{
		{"spikes, median of 3", spikes, 3, 700, 1000, true},
		{"dips, median of 3", dips, 3, 700, 1000, true},
		{"spikes and dips, median of 3", both, 3, 6913, 7937, true},
		{"spikes and dips, median of 5", both, 5, 6913, 7937, true},
		{"spikes and dips, one window", both, 1, 6913, 7937, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := searchOptions(3, tt.repeats, 1e-9)
			service := &scriptedSide{name: SideService, curve: steepLine(tt.service), noise: tt.noise}
			bare := &scriptedSide{name: SideBareLoop, curve: steepLine(tt.bare), noise: tt.noise}
			pairs, warnings, err := searchCapacityPairs(context.Background(), o, service.window, bare.window, nil, nil)
			if err != nil || len(warnings) > 0 {
				t.Fatal(err, warnings)
			}
			exact := true
			for _, p := range pairs {
				if p.Service.Capacity != tt.service-1 || p.BareLoop.Capacity != tt.bare-1 {
					exact = false
					if tt.wantExact {
						t.Errorf("pair %d: capacities %d and %d, want %d and %d", p.Pair, p.Service.Capacity, p.BareLoop.Capacity, tt.service-1, tt.bare-1)
					}
				}
				for _, pr := range append(slices.Clone(p.Service.Probes), p.BareLoop.Probes...) {
					if len(pr.Windows) > tt.repeats {
						t.Errorf("%s probe at %d took %d windows, over the %d repeats", pr.Side, pr.Arms, len(pr.Windows), tt.repeats)
					}
				}
			}
			if !tt.wantExact && exact {
				t.Errorf("one window per probe found every capacity exactly through the noise: the noise does not test the median")
			}
		})
	}
}

// TestCapacityPairsAlternate: within a pair the two searches take turns,
// one probe each, until one is done; odd pairs start with hapticd, even
// ones with the bare loop; the probes carry their place in the run.
func TestCapacityPairsAlternate(t *testing.T) {
	var log []string
	o := searchOptions(3, 1, 0.05)
	service := &scriptedSide{name: SideService, curve: cliff(300), log: &log}
	bare := &scriptedSide{name: SideBareLoop, curve: cliff(5000), log: &log}
	var reported []CapacityProbe
	var done []int // pairs as reported done, with the probes seen by then
	pairs, _, err := searchCapacityPairs(context.Background(), o, service.window, bare.window,
		func(p CapacityProbe) { reported = append(reported, p) },
		func(p CapacityPair) { done = append(done, p.Pair, len(reported)) })
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 6 || done[0] != 1 || done[2] != 2 || done[4] != 3 || done[5] != len(reported) ||
		reported[done[1]-1].Pair != 1 || reported[done[1]].Pair != 2 {
		t.Errorf("pairs reported done as (pair, probes so far) %v of %d probes: want 1, 2, 3, each once its last probe was reported", done, len(reported))
	}
	if len(pairs) != 3 || len(reported) != len(log) {
		t.Fatalf("%d pairs, %d probes reported, %d windows; want 3 pairs and a report per window", len(pairs), len(reported), len(log))
	}
	for i, p := range reported {
		if p.Seq != i+1 || fmt.Sprintf("%s %d", p.Side, p.Arms) != log[i] {
			t.Errorf("probe %d reported as seq %d, %s %d; ran as %s", i+1, p.Seq, p.Side, p.Arms, log[i])
		}
	}
	for _, p := range pairs {
		want := SideService
		if p.Pair%2 == 0 {
			want = SideBareLoop
		}
		if p.First != want {
			t.Errorf("pair %d went first with %s, want %s", p.Pair, p.First, want)
		}
		var mine []CapacityProbe
		for _, r := range reported {
			if r.Pair == p.Pair {
				mine = append(mine, r)
			}
		}
		// Until the shorter search ends the sides alternate, starting with
		// p.First; the longer one then finishes alone.
		turns := 2 * min(len(p.Service.Probes), len(p.BareLoop.Probes))
		if mine[0].Side != want {
			t.Errorf("pair %d's first probe is %s's, want %s's", p.Pair, mine[0].Side, want)
		}
		for i := 1; i < turns && i < len(mine); i++ {
			if mine[i].Side == mine[i-1].Side {
				t.Errorf("pair %d: probes %d and %d both %s's while both searched", p.Pair, mine[i-1].Seq, mine[i].Seq, mine[i].Side)
			}
		}
		if p.Service.Capacity < 286 || p.Service.Capacity > 300 || p.BareLoop.Capacity < 4762 || p.BareLoop.Capacity > 5000 {
			t.Errorf("pair %d: capacities %d and %d, want within 5 %% under 300 and 5000", p.Pair, p.Service.Capacity, p.BareLoop.Capacity)
		}
	}
	// Later pairs start from half the previous capacity, not from 1.
	for _, p := range pairs[1:] {
		if first := p.Service.Probes[0].Arms; first == 1 {
			t.Errorf("pair %d's service search started from 1, want half the last capacity", p.Pair)
		}
	}
}

func TestCapacityReportMedians(t *testing.T) {
	pair := func(service, bare int, bareAtMax bool) CapacityPair {
		p := CapacityPair{Service: CapacityResult{Capacity: service}, BareLoop: &CapacityResult{Capacity: bare, AtMax: bareAtMax}}
		if bare > 0 {
			p.Ratio = float64(service) / float64(bare)
			p.RatioIsUpperBound = bareAtMax
		}
		return p
	}
	tests := []struct {
		name               string
		pairs              []CapacityPair
		wantRatio          float64
		wantMin, wantMax   float64
		wantService        float64
		wantBare           float64
		wantFlag           string
		wantUpperBound     bool
		wantPairRatioCount int
	}{
		{"odd count", []CapacityPair{pair(6912, 7936, false), pair(5888, 10240, false), pair(7680, 7936, false)},
			0.87097, 0.575, 0.9677, 6912, 7936, "", false, 3},
		{"even count", []CapacityPair{pair(800, 1000, false), pair(900, 1000, false)},
			0.85, 0.8, 0.9, 850, 1000, "", false, 2},
		{"baseline lost", []CapacityPair{pair(1300, 1000, false), pair(1200, 1000, false), pair(900, 1000, false)},
			0, 0.9, 1.3, 1200, 1000, FlagBaselineLost, false, 3},
		{"one lucky pair flags nothing", []CapacityPair{pair(1300, 1000, false), pair(900, 1000, false), pair(950, 1000, false)},
			0.95, 0.9, 1.3, 950, 1000, "", false, 3},
		{"bare loop at max", []CapacityPair{pair(500, 1024, true), pair(600, 1000, false), pair(550, 1000, false)},
			0.55, 0.48828, 0.6, 550, 1000, "", true, 3},
		{"a bare loop that held nothing gives no ratio", []CapacityPair{pair(0, 0, false), pair(600, 1000, false)},
			0.6, 0.6, 0.6, 300, 500, "", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := CapacityReport{Pairs: tt.pairs}
			o := CapacityOptions{}
			o.defaults()
			r.summarize(o)
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-4 }
			if !near(r.Ratio, tt.wantRatio) || !near(r.RatioMin, tt.wantMin) || !near(r.RatioMax, tt.wantMax) || r.Flag != tt.wantFlag {
				t.Errorf("ratio %g (%g–%g), flag %q; want %g (%g–%g), %q", r.Ratio, r.RatioMin, r.RatioMax, r.Flag, tt.wantRatio, tt.wantMin, tt.wantMax, tt.wantFlag)
			}
			if r.Service.Capacity != tt.wantService || r.BareLoop == nil || r.BareLoop.Capacity != tt.wantBare {
				t.Errorf("median capacities %g and %+v, want %g and %g", r.Service.Capacity, r.BareLoop, tt.wantService, tt.wantBare)
			}
			if r.RatioIsUpperBound != tt.wantUpperBound || len(r.PairRatios) != tt.wantPairRatioCount {
				t.Errorf("upper bound %v, pair ratios %v; want %v and %d ratios", r.RatioIsUpperBound, r.PairRatios, tt.wantUpperBound, tt.wantPairRatioCount)
			}
			if tt.wantFlag != "" && len(r.Warnings) == 0 {
				t.Error("a lost baseline gave no warning")
			}
		})
	}
}

// TestProbeRepeatsAllButClearPasses: a window far under the limit passes
// its probe alone; one near or over it makes the probe take windows until
// a majority of three agree, and the probe shows the median window.
func TestProbeRepeatsAllButClearPasses(t *testing.T) {
	boom := errors.New("cannot start")
	tests := []struct {
		name        string
		overruns    []float64 // the windows the side would measure, in order
		err         error     // returned by the first window
		wantWindows int
		wantPass    bool
		wantOverrun float64
	}{
		{"far under", []float64{0.001, 0.5, 0.5}, nil, 1, true, 0.001},
		{"far over, confirmed", []float64{0.2, 0.3, 0}, nil, 2, false, 0.2},
		{"far over, a burst", []float64{0.2, 0.001, 0.004}, nil, 3, true, 0.004},
		{"near, two agree on pass", []float64{0.009, 0.004, 0.5}, nil, 2, true, 0.004},
		{"near, two agree on fail", []float64{0.012, 0.015, 0}, nil, 2, false, 0.012},
		{"near, the third decides for pass", []float64{0.0101, 0.002, 0.008, 0.5}, nil, 3, true, 0.008},
		{"near, the third decides for fail", []float64{0.008, 0.3, 0.011, 0}, nil, 3, false, 0.011},
		{"just under the near band", []float64{0.0033, 0.5}, nil, 1, true, 0.0033},
		{"at the near band's edge", []float64{0.00334, 0.002}, nil, 2, true, 0.002},
		{"an error ends the probe", []float64{0}, boom, 1, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := CapacityOptions{}
			o.defaults()
			calls := 0
			p, err := probeSide(context.Background(), o, 100, func(_ context.Context, n int) (CapacityWindow, error) {
				w := CapacityWindow{OverrunFraction: tt.overruns[calls]}
				calls++
				if tt.err != nil {
					return w, tt.err
				}
				return w, nil
			})
			if !errors.Is(err, tt.err) {
				t.Fatalf("error %v, want %v", err, tt.err)
			}
			if len(p.Windows) != tt.wantWindows || calls != tt.wantWindows || p.Pass != tt.wantPass || p.OverrunFraction != tt.wantOverrun {
				t.Errorf("%d windows (%d measured), pass %v, overruns %g; want %d, %v, %g", len(p.Windows), calls, p.Pass, p.OverrunFraction, tt.wantWindows, tt.wantPass, tt.wantOverrun)
			}
			if tt.err != nil && !strings.Contains(p.Error, "cannot start") {
				t.Errorf("probe error %q, want the window's", p.Error)
			}
		})
	}
}

func TestCapacitySearchRetriesAFailingProbe(t *testing.T) {
	o := searchOptions(1, 1, 1e-9)
	o.Max, o.Retries = 64, 1
	calls := map[int]int{}
	pairs, _, err := searchCapacityPairs(context.Background(), o, func(_ context.Context, n int) (CapacityWindow, error) {
		calls[n]++
		// 4 arms fail once (noise), then pass; 16 and more always fail.
		if n < 16 && !(n == 4 && calls[n] == 1) {
			return CapacityWindow{}, nil
		}
		return CapacityWindow{OverrunFraction: 0.5}, nil
	}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pairs[0].Service.Capacity != 15 {
		t.Errorf("capacity %d, want 15: with --retries 1 a single failure at 4 must not end the search", pairs[0].Service.Capacity)
	}
	if calls[4] != 2 || calls[16] != 2 {
		t.Errorf("probes per N %v: want 4 and 16 tried twice (one retry)", calls)
	}
}

func TestCapacitySearchErrors(t *testing.T) {
	o := searchOptions(2, 3, 1e-9)
	o.Max = 64
	boom := errors.New("cannot start")
	failing := func(context.Context, int) (CapacityWindow, error) { return CapacityWindow{}, boom }
	passing := (&scriptedSide{name: SideService, curve: cliff(64)}).window
	if _, _, err := searchCapacityPairs(context.Background(), o, failing, passing, nil, nil); !errors.Is(err, boom) {
		t.Errorf("the service's first probe failing to run: got %v, want it returned", err)
	}
	// The bare loop's first probe failing drops the baseline with a
	// warning, and the pair keeps that probe and its error: a report
	// must show what was tried, not a run that seems never to have had a
	// bare loop.
	pairs, warnings, err := searchCapacityPairs(context.Background(), o, passing, failing, nil, nil)
	if err != nil || len(pairs) != 2 || pairs[1].BareLoop != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "bare-loop baseline skipped") {
		t.Errorf("pairs %+v, warnings %q, error %v; want 2 pairs, the second without a bare loop, and one warning", pairs, warnings, err)
	}
	if len(pairs) > 0 {
		bl := pairs[0].BareLoop
		switch {
		case bl == nil:
			t.Errorf("pair 1 dropped the bare loop's failed probe")
		case bl.Error != boom.Error() || len(bl.Probes) != 1 || bl.Probes[0].Error != boom.Error() || bl.Probes[0].Side != SideBareLoop:
			t.Errorf("pair 1's bare loop %+v: want its one probe with the error %q", *bl, boom)
		case pairs[0].Ratio != 0:
			t.Errorf("pair 1's ratio %v without a bare-loop capacity, want none", pairs[0].Ratio)
		}
		r := CapacityReport{Pairs: pairs}
		r.summarize(o)
		if r.BareLoop != nil || len(r.PairRatios) != 0 {
			t.Errorf("summary %+v, ratios %v: the failed bare loop counted as a capacity", r.BareLoop, r.PairRatios)
		}
		b, err := json.Marshal(r)
		if err != nil || !strings.Contains(string(b), `"error":"cannot start"`) {
			t.Errorf("the report's JSON %s (%v) has no bare-loop error", b, err)
		}
		// Every median docs/performance.md lists is there, at_max even
		// when 0 (it was left out then: tourbench).
		if !regexp.MustCompile(`"service":\{"capacity":[^{}]*"at_max":\d+\}`).Match(b) {
			t.Errorf("the report's JSON %s lacks the service's medians with at_max", b)
		}
		var txt strings.Builder
		if err := r.WriteTable(&txt); err != nil || !strings.Contains(txt.String(), "cannot start") {
			t.Errorf("the report's table (%v) has no bare-loop error:\n%s", err, txt.String())
		}
	}
	// A later error is a failure at that N, not the end of the search.
	pairs, _, err = searchCapacityPairs(context.Background(), o, func(_ context.Context, n int) (CapacityWindow, error) {
		if n > 8 {
			return CapacityWindow{}, boom
		}
		return CapacityWindow{}, nil
	}, nil, nil, nil)
	if err != nil || pairs[0].Service.Capacity != 8 || pairs[1].Service.Capacity != 8 {
		t.Errorf("pairs %+v, %v; want capacity 8 in both and no error", pairs, err)
	}
}

func TestCapacityOptionsValidate(t *testing.T) {
	tests := []struct {
		o    CapacityOptions
		want string
	}{
		{CapacityOptions{}, ""},
		{CapacityOptions{Pairs: 5, Repeats: 3, Near: 3, OverrunLimit: 0.01}, ""},
		{CapacityOptions{Pairs: -1}, "--pairs -1"},
		{CapacityOptions{Repeats: 2}, "--repeats 2: want an odd count"},
		{CapacityOptions{Repeats: -3}, "--repeats -3"},
		{CapacityOptions{Near: 0.5}, "--near 0.5"},
		{CapacityOptions{OverrunLimit: -0.01}, "--overrun-limit -0.01"},
		{CapacityOptions{Precision: 1}, "precision 1"},
		{CapacityOptions{Max: -4}, "--max -4"},
	}
	for _, tt := range tests {
		err := tt.o.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tt.o, err, tt.want)
		}
	}
}

func TestCapacityTable(t *testing.T) {
	rep := CapacityReport{LoopHz: 1000, OverrunLimit: 0.01, WindowS: 3, Repeats: 3, Near: 3, Machine: Machine{GoVersion: "go1.26.8", CPUs: 2},
		Pairs: []CapacityPair{
			{Pair: 1, First: SideService,
				Service: CapacityResult{Capacity: 3000, Probes: []CapacityProbe{
					{Seq: 1, Pair: 1, Side: SideService, Arms: 2048, Pass: true, CapacityWindow: CapacityWindow{OverrunFraction: 0.001}, Windows: []CapacityWindow{{OverrunFraction: 0.001}}},
					{Seq: 3, Pair: 1, Side: SideService, Arms: 4096, CapacityWindow: CapacityWindow{OverrunFraction: 0.0123}, Windows: []CapacityWindow{{OverrunFraction: 0.0123}, {OverrunFraction: 0.0456}}}}},
				BareLoop: &CapacityResult{Capacity: 8192, AtMax: true, Probes: []CapacityProbe{
					{Seq: 2, Pair: 1, Side: SideBareLoop, Arms: 8192, Pass: true, CapacityWindow: CapacityWindow{NsPerStep: 80}, Windows: []CapacityWindow{{NsPerStep: 80}}}}},
				Ratio: 3000.0 / 8192, RatioIsUpperBound: true},
			{Pair: 2, First: SideBareLoop, Service: CapacityResult{Capacity: 3500}, BareLoop: &CapacityResult{Capacity: 7000}, Ratio: 0.5},
		}}
	o := CapacityOptions{}
	o.defaults()
	rep.summarize(o)
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"capacity (arms)", "3250 (3000–3500)", "≥ 7596 (7000–8192)", "≤ 0.43x", "0.37–0.50 (2)",
		"≥ 8192", "0.37x", "4096", "fail", "1.230", "1.230 4.560", "bare loop", "up to 3 windows"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("capacity table lacks %q:\n%s", want, b.String())
		}
	}
	// The probes are listed in the order they ran, both sides together.
	if i2048, i8192, i4096 := strings.Index(b.String(), "2048"), strings.Index(b.String(), "  8192 "), strings.Index(b.String(), "4096"); !(i2048 < i8192 && i8192 < i4096) {
		t.Errorf("probes not in run order:\n%s", b.String())
	}
}

// TestCapacityWindowOutlastsALateRead: on a loaded machine the first
// /stats read may come back late; the probe still measures a whole window
// after it, so an over-capacity service is not judged on the few ticks of
// a window cut short (TestCapacityAgainstFakeProcesses flaked so under a
// load average of 40, its fake's overrun count rounding to zero).
func TestCapacityWindowOutlastsALateRead(t *testing.T) {
	f := newFake(2, fakeFaults{overrunPermille: 100})
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reads.Add(1) == 1 {
			// A read served well past the window's planned end.
			time.Sleep(300 * time.Millisecond)
		}
		f.stats(w, r)
	}))
	t.Cleanup(srv.Close)
	const window = 150 * time.Millisecond
	win := readCapacityWindow(context.Background(), srv.URL, 10*time.Millisecond, window)
	if win.err != nil {
		t.Fatal(win.err)
	}
	if win.elapsed < window {
		t.Errorf("window %s, want at least %s after the late read", win.elapsed, window)
	}
	lf, _, err := capacityFigures(win, 2)
	if err != nil {
		t.Fatal(err)
	}
	if lf.Ticks < uint64(window.Milliseconds())*9/10 || lf.OverrunFractionWorst < 0.05 {
		t.Errorf("window figures: %d ticks, overrun fraction %g; want the whole window's ticks and the fake's 10 %% overruns", lf.Ticks, lf.OverrunFractionWorst)
	}
}

// TestCapacityFiguresFromShardsOrDevices: a probe reads /stats without the
// device entries and takes the window from the shards, the period p99 and
// the pass p99 the window's; from a hapticd whose /stats lists no shards (an older binary
// in a before-and-after run) it takes the same figures from every device;
// a service holding another number of arms than it was started with fails
// the probe either way.
func TestCapacityFiguresFromShardsOrDevices(t *testing.T) {
	cases := []struct {
		name    string
		faults  fakeFaults
		arms    int
		wantP99 float64
		// wantPass: the window's pass p99, 0 for a hapticd without shards
		wantPass float64
		wantErr  string
	}{
		{"shards", fakeFaults{overrunPermille: 20}, 3, 2048, 1536, ""},
		{"no shards", fakeFaults{overrunPermille: 20, noShards: true}, 3, 1030, 0, ""},
		{"shards, arms missing", fakeFaults{overrunPermille: 20}, 4, 0, 0, "holds 3 devices on its shards"},
		{"no shards, arms missing", fakeFaults{overrunPermille: 20, noShards: true}, 4, 0, 0, "lists 3 arms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(3, c.faults)
			var queries []string
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				queries = append(queries, r.URL.RawQuery)
				mu.Unlock()
				f.stats(w, r)
			}))
			t.Cleanup(srv.Close)
			const window = 200 * time.Millisecond
			win := readCapacityWindow(context.Background(), srv.URL, 10*time.Millisecond, window)
			if win.err != nil {
				t.Fatal(win.err)
			}
			if len(win.after.Devices) != 0 && !c.faults.noShards {
				t.Errorf("the window's /stats held %d device entries, want none", len(win.after.Devices))
			}
			mu.Lock()
			if len(queries) != 2 || queries[0] != "devices=none" || queries[1] != "devices=none" {
				t.Errorf("queries %q, want two of devices=none", queries)
			}
			mu.Unlock()
			lf, _, err := capacityFigures(win, c.arms)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if lf.Ticks < uint64(window.Milliseconds())*9/10 || lf.OverrunFractionWorst < 0.01 || lf.OverrunFractionWorst > 0.03 {
				t.Errorf("%d ticks, overrun fraction %g; want the window's ticks and the fake's 2 %%", lf.Ticks, lf.OverrunFractionWorst)
			}
			if lf.PeriodP99UsWorst != c.wantP99 {
				t.Errorf("period p99 %g µs, want %g", lf.PeriodP99UsWorst, c.wantP99)
			}
			if lf.PassP99UsWorst != c.wantPass {
				t.Errorf("pass p99 %g µs, want %g", lf.PassP99UsWorst, c.wantPass)
			}
		})
	}
}

// Every report's first line names the machine as run's does, PCID
// included (docs/performance.md: record it beside every end-to-end
// figure); device and arms printed only Go, OS and CPUs (tourbench).
func TestEveryReportNamesTheMachinesPCID(t *testing.T) {
	pcid := true
	m := Machine{GoVersion: "go1.26.8", OS: "linux", Arch: "amd64", CPUs: 2, CPUModel: "Some CPU", PCID: &pcid}
	for _, tc := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"run", RunReport{Machine: m}.WriteTable},
		{"device", DeviceReport{Machine: m}.WriteTable},
		{"arms", CapacityReport{Machine: m, LoopHz: 1000}.WriteTable},
		{"lease", LeaseReport{Machine: m}.WriteTable},
	} {
		var b strings.Builder
		if err := tc.write(&b); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		first, _, _ := strings.Cut(b.String(), "\n\n")
		if !strings.Contains(first, m.String()) {
			t.Errorf("%s's heading %q does not name the machine as %q", tc.name, first, m.String())
		}
	}
}

// A side's summary lists at_max when no pair stopped at the maximum too:
// docs/performance.md names it among the medians a script reads, and it
// was left out at 0 (tourbench).
func TestCapacitySummaryListsAtMaxZero(t *testing.T) {
	b, err := json.Marshal(CapacitySummary{Capacity: 900, Min: 880, Max: 910})
	if err != nil || !strings.Contains(string(b), `"at_max":0`) {
		t.Fatalf("summary JSON %s (%v), want at_max 0 listed", b, err)
	}
}
