package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// The two sides of `hapticbench arms`, as probes, pairs and progress name them.
const (
	SideService  = "hapticd"
	SideBareLoop = "bare loop"
)

// CapacityOptions configure `hapticbench arms`: the largest number of
// simulated arms the service's scheduler steps at LoopHz with under
// OverrunLimit of its ticks overrun, beside the bare loop's, searched in
// pairs (docs/performance.md, "How the capacity is searched").
type CapacityOptions struct {
	Hapticd string  // binary; empty searches as FindHapticd does
	LoopHz  float64 // default 1000
	Max     int     // largest N tried; default 16384
	// Settle is how long a started service runs before the window; default 1 s.
	Settle time.Duration
	// Window is how long each window measures; default 3 s.
	Window time.Duration
	// OverrunLimit is the overrun fraction a probe must stay under; default 0.01.
	OverrunLimit float64
	// Precision stops the bisection once the bracket is within this
	// fraction of the passing N; default 0.05.
	Precision float64
	// Pairs is how many times both sides are searched. The two searches
	// of a pair run in lockstep (a probe of one side, then a probe of the
	// other), pairs alternate which side probes first, and the figure is
	// the median of the pairs' ratios; default DefaultPairs.
	Pairs int
	// Repeats is the most windows a probe near the line takes: it stops
	// once a majority of Repeats windows agree, and passes by that
	// majority (the median window). Odd; default 3; 1 for one window.
	Repeats int
	// Near says which windows decide alone: one whose overrun fraction is
	// under OverrunLimit/Near passes its probe; any other (near the line,
	// or over it, where a neighbour's burst lands) makes the probe take
	// more windows. Default 3 (under 0.33 % against 1 %); 1 repeats only
	// the windows at or over the limit.
	Near float64
	// Retries re-runs a probe that failed up to this many times and keeps
	// the first pass. It was the noise guard before Repeats; being biased
	// toward passing it is off by default (0 or negative: none).
	Retries    int
	NoBareLoop bool
	// Motion is hapticd's --sim-motion, given to the bare loop too
	// (default none: arms at rest).
	Motion string
	// Effects is hapticd's --sim-effects (e.g. "wall,damper"), given to
	// the bare loop as --effects: every arm is controlled and renders
	// them (empty: none, arms nobody controls).
	Effects  string
	Progress io.Writer
}

// Validate refuses options no search can run with; zero values mean the
// defaults.
func (o CapacityOptions) Validate() error {
	switch {
	case o.Pairs < 0:
		return fmt.Errorf("bench: arms: --pairs %d: want 1 or more", o.Pairs)
	case o.Repeats < 0 || (o.Repeats > 0 && o.Repeats%2 == 0):
		return fmt.Errorf("bench: arms: --repeats %d: want an odd count (a probe passes by the median of its windows)", o.Repeats)
	case o.Near != 0 && o.Near < 1:
		return fmt.Errorf("bench: arms: --near %g: want a factor of 1 or more (1: repeat only windows at or over the limit)", o.Near)
	case o.OverrunLimit < 0:
		return fmt.Errorf("bench: arms: --overrun-limit %g: want a fraction of the ticks above 0 (1 or more passes every window that ticked)", o.OverrunLimit)
	case o.Precision < 0 || o.Precision >= 1:
		return fmt.Errorf("bench: arms: --precision %g: want a fraction above 0 and under 1", o.Precision)
	case o.Max < 0:
		return fmt.Errorf("bench: arms: --max %d: want 1 or more", o.Max)
	}
	return nil
}

func (o *CapacityOptions) defaults() {
	if o.LoopHz <= 0 {
		o.LoopHz = 1000
	}
	if o.Max <= 0 {
		o.Max = 16384
	}
	if o.Settle <= 0 {
		o.Settle = time.Second
	}
	if o.Window <= 0 {
		o.Window = 3 * time.Second
	}
	if o.OverrunLimit <= 0 {
		o.OverrunLimit = 0.01
	}
	if o.Precision <= 0 {
		o.Precision = 0.05
	}
	if o.Pairs <= 0 {
		o.Pairs = DefaultPairs
	}
	if o.Repeats <= 0 {
		o.Repeats = 3
	}
	if o.Near <= 0 {
		o.Near = 3
	}
	o.Retries = max(o.Retries, 0)
}

// decidesAlone says whether a window is far enough under the limit to pass
// its probe alone. Failures are always confirmed: noise on a machine adds
// overruns (a neighbour's burst turns 0.5 % into 5 %) far more often than
// it removes them.
func (o CapacityOptions) decidesAlone(f float64) bool {
	return f < o.OverrunLimit/o.Near
}

// CapacityWindow is one measurement of N arms: a started hapticd's window
// after its settle, or one `hapticd baseline-arms` run.
type CapacityWindow struct {
	OverrunFraction float64 `json:"overrun_fraction"`
	// PeriodP99Us is the worst shard's period p99 over the window (since
	// the service started for a hapticd whose /stats has no shards), the
	// bare loop's over its run.
	PeriodP99Us float64 `json:"period_p99_us"`
	// PassP99Us is the worst shard's pass p99 over the window (busy_buckets
	// in /stats: a tick's stepping, from the pacer's wake-up), the bare
	// loop's worst thread's over its run: the two sides' tails at equal
	// arms. Zero for a hapticd that does not serve it.
	PassP99Us float64 `json:"pass_p99_us,omitempty"`
	// CPUPercent is the service's CPU use (100 = one core); NsPerStep the
	// bare loop's cost per arm step.
	CPUPercent float64 `json:"cpu_percent,omitempty"`
	NsPerStep  float64 `json:"ns_per_step,omitempty"`
	// HeapPerArm and RSSPerArm are the service's live heap and resident
	// memory at the window's end over the arms (everything, divided).
	HeapPerArm float64 `json:"heap_bytes_per_arm,omitempty"`
	RSSPerArm  float64 `json:"rss_bytes_per_arm,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// CapacityProbe is one N tried by one side: one window when it passes far
// under the line, else up to Repeats. Its figures are the median window's
// (by overrun fraction; the lower middle one of two), and it passes when
// most of its windows did.
type CapacityProbe struct {
	// Seq is the probe's place in the whole run, both sides counted
	// (from 1): the order the machine saw them in.
	Seq int `json:"seq"`
	// StartedAt is when its first window began.
	StartedAt time.Time `json:"started_at"`
	Pair      int       `json:"pair"` // from 1
	Side      string    `json:"side"` // SideService or SideBareLoop
	Arms      int       `json:"arms"`
	Pass      bool      `json:"pass"`
	CapacityWindow
	Windows []CapacityWindow `json:"windows"`
}

// CapacityResult is one side's search in one pair: its answer and every
// probe on the way.
type CapacityResult struct {
	Capacity int `json:"capacity"`
	// AtMax says the search stopped at Max still passing: the true
	// capacity is at least Capacity.
	AtMax  bool            `json:"at_max"`
	Probes []CapacityProbe `json:"probes"`
	// Error ends a search whose side could not run at all: the bare
	// loop's first probe of the run failed, so it is skipped from then on
	// and this pair's search has no capacity; Probes hold what was tried.
	Error string `json:"error,omitempty"`
}

// CapacityPair is one pair of searches, run in lockstep.
type CapacityPair struct {
	Pair     int             `json:"pair"`  // from 1
	First    string          `json:"first"` // the side that probed first at each step
	Service  CapacityResult  `json:"service"`
	BareLoop *CapacityResult `json:"bare_loop,omitempty"`
	// Ratio is the service's capacity over the bare loop's (0 without a
	// bare-loop capacity); RatioIsUpperBound says the bare loop still
	// passed at Max.
	Ratio             float64 `json:"ratio,omitempty"`
	RatioIsUpperBound bool    `json:"ratio_is_upper_bound,omitempty"`
}

// CapacitySummary is one side's capacities over the pairs.
type CapacitySummary struct {
	Capacity float64 `json:"capacity"` // median of the pairs'
	Min      int     `json:"min"`
	Max      int     `json:"max"`
	// AtMax counts the pairs whose search stopped at Max still passing.
	AtMax int `json:"at_max"` // 0 listed too: docs/performance.md names it among the medians
}

// CapacityReport compares the service with the bare loop.
type CapacityReport struct {
	Machine      Machine `json:"machine"`
	LoopHz       float64 `json:"loop_hz"`
	Effects      string  `json:"effects,omitempty"`
	OverrunLimit float64 `json:"overrun_limit"`
	WindowS      float64 `json:"window_s"`
	Repeats      int     `json:"repeats"`
	Near         float64 `json:"near"`
	// Pairs holds every pair's searches with every probe and window.
	Pairs    []CapacityPair   `json:"pairs"`
	Service  CapacitySummary  `json:"service"`
	BareLoop *CapacitySummary `json:"bare_loop,omitempty"`
	// Ratio is the median of the pairs' ratios; 0 with Flag
	// "baseline-lost" when that median is beyond noise in the service's
	// favour (the bare loop was no floor in that run). PairRatios are the
	// pairs' ratios in run order, RatioMin and RatioMax their range.
	Ratio      float64   `json:"ratio"`
	PairRatios []float64 `json:"pair_ratios,omitempty"`
	RatioMin   float64   `json:"ratio_min,omitempty"`
	RatioMax   float64   `json:"ratio_max,omitempty"`
	// RatioIsUpperBound says a pair's bare-loop search stopped at --max
	// still passing: its true capacity is higher, so the ratio is at most
	// Ratio.
	RatioIsUpperBound bool     `json:"ratio_is_upper_bound,omitempty"`
	Flag              string   `json:"flag,omitempty"`
	Warnings          []string `json:"warnings,omitempty"`
}

// windowFunc measures one window of n arms on one side. An error means
// nothing was measured (the process did not start or answer); a window
// that measured a failure returns no error.
type windowFunc func(ctx context.Context, n int) (CapacityWindow, error)

// Capacity searches the largest N (doubling, then bisecting) for the
// service and for `hapticd baseline-arms`, in o.Pairs pairs of lockstep
// searches, and gives the median of the pairs' ratios.
func Capacity(ctx context.Context, o CapacityOptions) (CapacityReport, error) {
	if err := o.Validate(); err != nil {
		return CapacityReport{}, err
	}
	o.defaults()
	rep := CapacityReport{Machine: ThisMachine(), LoopHz: o.LoopHz, OverrunLimit: o.OverrunLimit, WindowS: o.Window.Seconds(),
		Effects: o.Effects, Repeats: o.Repeats, Near: o.Near}
	binary, cleanup, err := FindHapticd(ctx, o.Hapticd)
	if err != nil {
		return rep, err
	}
	defer cleanup()

	service := func(ctx context.Context, n int) (CapacityWindow, error) {
		return serviceWindow(ctx, binary, n, o)
	}
	var bare windowFunc
	if !o.NoBareLoop {
		bare = func(ctx context.Context, n int) (CapacityWindow, error) {
			b, err := runBareLoop(ctx, binary, n, o.LoopHz, o.Window, o.Motion, o.Effects)
			if err != nil {
				return CapacityWindow{Error: err.Error()}, err
			}
			return CapacityWindow{OverrunFraction: b.OverrunFraction(), PeriodP99Us: b.PeriodUsP99, PassP99Us: b.Busy.P99Us, NsPerStep: b.NsPerStep}, nil
		}
	}
	var searchErr error
	rep.Pairs, rep.Warnings, searchErr = searchCapacityPairs(ctx, o, service, bare, o.progressLine, o.pairLine)
	rep.summarize(o)
	if searchErr != nil {
		return rep, searchErr
	}
	return rep, ctx.Err()
}

// progressLine prints a probe as it is decided.
func (o CapacityOptions) progressLine(p CapacityProbe) {
	if o.Progress == nil {
		return
	}
	var windows string
	if len(p.Windows) > 1 {
		fs := make([]string, len(p.Windows))
		for i, w := range p.Windows {
			fs[i] = fmt.Sprintf("%.2f", 100*w.OverrunFraction)
		}
		windows = fmt.Sprintf(", median of %s %%", strings.Join(fs, ", "))
	}
	var pass string
	if p.PassP99Us > 0 {
		pass = fmt.Sprintf(", pass p99 %s µs", number(p.PassP99Us))
	}
	fmt.Fprintf(o.Progress, "pair %d of %d, %s: %d arms: %s (overruns %.2f %%%s; period p99 %s µs%s)%s\n", p.Pair, o.Pairs, p.Side, p.Arms,
		verdictText(p.Pass), 100*p.OverrunFraction, windows, number(p.PeriodP99Us), pass, errSuffix(p.Error))
}

// pairLine prints a pair's capacities and ratio when it is done.
func (o CapacityOptions) pairLine(p CapacityPair) {
	if o.Progress == nil {
		return
	}
	line := fmt.Sprintf("pair %d of %d: %s %s", p.Pair, o.Pairs, SideService, capResultText(p.Service))
	if p.BareLoop != nil {
		line += fmt.Sprintf(", %s %s", SideBareLoop, capResultText(*p.BareLoop))
		if p.BareLoop.Capacity > 0 {
			line += fmt.Sprintf(": %.2fx", p.Ratio)
		}
	}
	fmt.Fprintln(o.Progress, line)
}

func verdictText(pass bool) string {
	if pass {
		return "pass"
	}
	return "fail"
}

// summarize sets the report's medians, ratio and warnings from its pairs.
func (r *CapacityReport) summarize(o CapacityOptions) {
	var service, bare []int
	r.PairRatios = nil
	for _, p := range r.Pairs {
		service = append(service, p.Service.Capacity)
		if p.Service.AtMax {
			r.Service.AtMax++
		}
		if p.BareLoop == nil || p.BareLoop.Error != "" {
			continue
		}
		bare = append(bare, p.BareLoop.Capacity)
		if p.BareLoop.Capacity > 0 {
			r.PairRatios = append(r.PairRatios, p.Ratio)
			r.RatioIsUpperBound = r.RatioIsUpperBound || p.RatioIsUpperBound
		}
	}
	summary := func(cs []int) CapacitySummary {
		fs := make([]float64, len(cs))
		for i, c := range cs {
			fs[i] = float64(c)
		}
		return CapacitySummary{Capacity: median(fs), Min: slices.Min(cs), Max: slices.Max(cs)}
	}
	if len(service) > 0 {
		at := r.Service.AtMax
		r.Service = summary(service)
		r.Service.AtMax = at
	}
	if len(bare) > 0 {
		s := summary(bare)
		for _, p := range r.Pairs {
			if p.BareLoop != nil && p.BareLoop.AtMax {
				s.AtMax++
			}
		}
		r.BareLoop = &s
	}
	if len(r.PairRatios) > 0 {
		ratios := slices.Clone(r.PairRatios)
		m := median(ratios) // sorts ratios
		r.RatioMin, r.RatioMax = ratios[0], ratios[len(ratios)-1]
		if m > 1+max(minNoise, o.Precision) {
			r.Flag = FlagBaselineLost
			r.Warnings = append(r.Warnings, fmt.Sprintf("the bare loop held a median of %s arms, hapticd %s (median pair ratio %.2fx): the baseline lost beyond noise, so no ratio is given; rerun on a quiet machine",
				strconv.FormatFloat(r.BareLoop.Capacity, 'f', -1, 64), strconv.FormatFloat(r.Service.Capacity, 'f', -1, 64), m))
		} else {
			r.Ratio = m
		}
	}
	if len(r.Pairs) > 0 && r.Service.Capacity == 0 {
		hint := "hapticd missed over the limit of its ticks even with 1 arm"
		if r.BareLoop != nil && r.BareLoop.Capacity == 0 {
			hint += ", and so did the bare loop: the machine is too busy to hold the rate; rerun it idle or raise --overrun-limit"
		}
		r.Warnings = append(r.Warnings, hint)
	}
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// capacitySearch is one side's search as a sequence of steps, so that two
// searches can take turns: it doubles N from its start while probes pass
// (up to max), halves it while they fail (a start above the capacity),
// then bisects between the largest pass and the smallest failure until
// the bracket is within precision of the pass.
type capacitySearch struct {
	max       int
	precision float64
	pass      int // largest N that passed (0: none yet)
	fail      int // smallest N that failed (0: none yet)
	next      int // N to probe next; 0 once done
	atMax     bool
}

func newCapacitySearch(start, limit int, precision float64) *capacitySearch {
	return &capacitySearch{max: limit, precision: precision, next: min(max(start, 1), limit)}
}

func (s *capacitySearch) done() bool { return s.next == 0 }

// capacity is the answer once done.
func (s *capacitySearch) capacity() int { return s.pass }

// record takes the verdict of a probe at s.next and picks the next N.
func (s *capacitySearch) record(pass bool) {
	n := s.next
	if pass {
		s.pass = n
	} else {
		s.fail = n
	}
	switch {
	case s.fail == 0: // passing from the start: double
		if n >= s.max {
			s.atMax, s.next = true, 0
			return
		}
		s.next = min(2*n, s.max)
	case s.pass == 0: // failing from the start: halve
		if n == 1 {
			s.next = 0
			return
		}
		s.next = n / 2
	case s.fail-s.pass <= 1 || float64(s.fail-s.pass) <= s.precision*float64(s.pass):
		s.next = 0
	default:
		s.next = s.pass + (s.fail-s.pass)/2
	}
}

// probeSide measures n arms: one window when it passes far under the
// line, else windows until a majority of o.Repeats agree. An error (nothing measured)
// ends the probe as a failure and is returned.
func probeSide(ctx context.Context, o CapacityOptions, n int, window windowFunc) (CapacityProbe, error) {
	p := CapacityProbe{Arms: n}
	need := o.Repeats/2 + 1
	passes, fails := 0, 0
	for len(p.Windows) < o.Repeats {
		w, err := window(ctx, n)
		if err != nil && w.Error == "" {
			w.Error = err.Error()
		}
		p.Windows = append(p.Windows, w)
		if err != nil {
			p.CapacityWindow = w
			return p, err
		}
		if w.OverrunFraction < o.OverrunLimit {
			passes++
		} else {
			fails++
		}
		if passes >= need || fails >= need || ctx.Err() != nil || (len(p.Windows) == 1 && o.decidesAlone(w.OverrunFraction)) {
			break
		}
	}
	overruns := make([]float64, len(p.Windows))
	for i, w := range p.Windows {
		overruns[i] = w.OverrunFraction
	}
	p.CapacityWindow = p.Windows[medianIndex(overruns)]
	p.Pass = passes > fails
	return p, ctx.Err()
}

// searchSide is one side's state within a pair.
type searchSide struct {
	name   string
	window windowFunc
	search *capacitySearch
	res    *CapacityResult
}

// searchCapacityPairs runs o.Pairs pairs of searches, the service's and
// (bare non-nil) the bare loop's, in lockstep: one probe of the side that
// goes first, one of the other, and so on, a side that is done leaving the
// other to finish alone. Odd pairs start with the service, even ones with
// the bare loop. After the first pair each side starts from half its
// previous capacity rather than from 1, which saves the doubling through
// sizes far below the line. An error on a side's first probe of the run
// means nothing works: the service's ends the run, the bare loop's drops
// the baseline with a warning. Later errors are failures at that N (a side
// that cannot start N arms does not handle N). report sees every probe,
// pairDone every finished pair (either may be nil).
func searchCapacityPairs(ctx context.Context, o CapacityOptions, service, bare windowFunc, report func(CapacityProbe), pairDone func(CapacityPair)) ([]CapacityPair, []string, error) {
	var (
		pairs    []CapacityPair
		warnings []string
		seq      int
		probed   = map[string]bool{}
		hint     = map[string]int{}
	)
	for pair := 1; pair <= o.Pairs; pair++ {
		cp := CapacityPair{Pair: pair}
		sides := []*searchSide{{name: SideService, window: service, res: &cp.Service}}
		if bare != nil {
			cp.BareLoop = &CapacityResult{}
			sides = append(sides, &searchSide{name: SideBareLoop, window: bare, res: cp.BareLoop})
			if pair%2 == 0 {
				sides[0], sides[1] = sides[1], sides[0]
			}
		}
		cp.First = sides[0].name
		for _, sd := range sides {
			sd.search = newCapacitySearch(max(1, hint[sd.name]/2), o.Max, o.Precision)
		}
		for running := true; running; {
			running = false
			for _, sd := range sides {
				if sd.search.done() {
					continue
				}
				running = true
				pass, err := stepSide(ctx, o, pair, sd, &seq, report)
				if err != nil && !probed[sd.name] {
					if sd.name == SideService {
						pairs = append(pairs, cp)
						return pairs, warnings, err
					}
					warnings = append(warnings, "bare-loop baseline skipped: "+err.Error())
					// The pair keeps what was probed, with the error, in
					// the report and its JSON; later pairs run without.
					cp.BareLoop.Error = err.Error()
					bare = nil
					sides = slices.DeleteFunc(sides, func(s *searchSide) bool { return s == sd })
					break
				}
				probed[sd.name] = true
				if ctx.Err() != nil {
					pairs = append(pairs, cp)
					return pairs, warnings, ctx.Err()
				}
				sd.search.record(pass)
			}
		}
		for _, sd := range sides {
			sd.res.Capacity, sd.res.AtMax = sd.search.capacity(), sd.search.atMax
			hint[sd.name] = sd.res.Capacity
		}
		if cp.BareLoop != nil && cp.BareLoop.Capacity > 0 {
			cp.Ratio = float64(cp.Service.Capacity) / float64(cp.BareLoop.Capacity)
			cp.RatioIsUpperBound = cp.BareLoop.AtMax && !cp.Service.AtMax
		}
		pairs = append(pairs, cp)
		if pairDone != nil {
			pairDone(cp)
		}
	}
	return pairs, warnings, nil
}

// stepSide probes one side at its search's next N, and again up to
// o.Retries times while the probe fails; every probe is kept and
// reported. It says whether one passed.
func stepSide(ctx context.Context, o CapacityOptions, pair int, sd *searchSide, seq *int, report func(CapacityProbe)) (bool, error) {
	n := sd.search.next
	for attempt := 0; ; attempt++ {
		started := time.Now()
		p, err := probeSide(ctx, o, n, sd.window)
		*seq++
		p.Seq, p.StartedAt, p.Pair, p.Side = *seq, started, pair, sd.name
		sd.res.Probes = append(sd.res.Probes, p)
		if report != nil {
			report(p)
		}
		if err != nil || p.Pass || attempt >= o.Retries {
			return p.Pass, err
		}
	}
}

// serviceWindow starts hapticd with n arms and measures one window.
func serviceWindow(ctx context.Context, binary string, n int, o CapacityOptions) (CapacityWindow, error) {
	var w CapacityWindow
	so := ServiceOptions{Binary: binary, Arms: n, LoopHz: o.LoopHz, Motion: o.Motion}
	if o.Effects != "" {
		so.Extra = []string{"--sim-effects", o.Effects}
	}
	svc, err := startService(ctx, so)
	if err != nil {
		w.Error = err.Error()
		return w, err
	}
	defer svc.stop()
	win := readCapacityWindow(ctx, svc.httpBase, o.Settle, o.Window)
	if win.err != nil {
		w.Error = win.err.Error()
		return w, win.err
	}
	lf, pf, err := capacityFigures(win, n)
	if err != nil {
		w.Error = err.Error()
		return w, err
	}
	// A loop that counted far fewer ticks than the window holds stalled
	// (or the service was starved): its overrun fraction says nothing,
	// and it did not hold the rate.
	if want := o.Window.Seconds() * o.LoopHz; float64(lf.Ticks) < want/2 {
		w.Error = fmt.Sprintf("bench: hapticd's loops counted %d ticks in a %s window at %g Hz, under half the %.0f due: they did not hold the rate",
			lf.Ticks, o.Window, o.LoopHz, want)
		w.OverrunFraction = 1
		return w, nil
	}
	w.OverrunFraction, w.PeriodP99Us, w.CPUPercent = lf.OverrunFractionWorst, lf.PeriodP99UsWorst, pf.CPUPercent
	w.PassP99Us = lf.PassP99UsWorst
	w.HeapPerArm = float64(win.after.Process.HeapBytes) / float64(n)
	w.RSSPerArm = float64(win.after.Process.RSSBytes) / float64(n)
	return w, nil
}

// capacityFigures is a probe's window of n arms: from the shards, or from
// every device's entry for a hapticd whose /stats lists no shards (an older
// binary in a before-and-after run). Ticks is per loop: the fewest a shard
// counted, or the devices' mean.
func capacityFigures(win statsWindow, n int) (LoopFigures, ProcessFigures, error) {
	if len(win.after.Shards) > 0 {
		// The simulated arms all live on the shards (--sim-grips 0).
		if got := shardDevices(win.after); got != n {
			return LoopFigures{}, ProcessFigures{}, fmt.Errorf("bench: hapticd started with --sim-arms %d holds %d devices on its shards (/stats)", n, got)
		}
		lf, pf := shardWindowFigures(win.before, win.after, win.elapsed)
		return lf, pf, nil
	}
	if got := countType(win.after, protocol.TypeArm); got != n {
		return LoopFigures{}, ProcessFigures{}, fmt.Errorf("bench: hapticd started with --sim-arms %d lists %d arms in /stats", n, got)
	}
	lf, pf := windowFigures(win.before, win.after, win.elapsed, false)
	lf.Ticks /= uint64(n) // each device repeats its shard's ticks
	return lf, pf, nil
}

// shardDevices counts the devices on the service's simulation shards.
func shardDevices(s ServiceStats) int {
	n := 0
	for _, sh := range s.Shards {
		n += sh.Devices
	}
	return n
}

// shardWindowFigures is windowFigures from the shards: the worst shard's
// overrun fraction and period p99 over the window (from its period
// histogram's buckets), and in Ticks the fewest ticks a shard holding
// devices counted. A shard with no devices sleeps and is left out.
func shardWindowFigures(before, after ServiceStats, window time.Duration) (LoopFigures, ProcessFigures) {
	var lf LoopFigures
	first := true
	for i, sh := range after.Shards {
		if sh.Devices == 0 {
			continue
		}
		var b protocol.ShardStats
		if i < len(before.Shards) {
			b = before.Shards[i]
		}
		ticks, overruns := sub(sh.Loop.Ticks, b.Loop.Ticks), sub(sh.Loop.Overruns, b.Loop.Overruns)
		f := 1.0 // a shard that did not tick in the window missed every deadline
		if ticks > 0 {
			f = float64(overruns) / float64(ticks)
		}
		p99, ok := protocol.WindowQuantileUs(b.PeriodBuckets, sh.PeriodBuckets, 0.99)
		if !ok {
			p99 = sh.Loop.PeriodUsP99
		}
		lf.Devices += sh.Devices
		lf.TargetUs = max(lf.TargetUs, sh.Loop.TargetUs)
		lf.Overruns += overruns
		lf.OverrunFractionWorst = max(lf.OverrunFractionWorst, f)
		lf.PeriodP99UsWorst = max(lf.PeriodP99UsWorst, p99)
		if pass, ok := protocol.WindowQuantileUs(b.BusyBuckets, sh.BusyBuckets, 0.99); ok {
			lf.PassP99UsWorst = max(lf.PassP99UsWorst, pass)
		}
		lf.PeriodMaxUsWorst = max(lf.PeriodMaxUsWorst, sh.Loop.PeriodUsMax)
		if first || ticks < lf.Ticks {
			lf.Ticks = ticks
		}
		first = false
	}
	_, pf := windowFigures(ServiceStats{Process: before.Process}, ServiceStats{Process: after.Process}, window, false)
	return lf, pf
}

// readCapacityWindow reads /stats settle after now and again window after
// that read returned, so a probe measures at least window however late a
// loaded machine serves the first read (a window cut short by a late read
// holds too few ticks to judge an overrun fraction by).
func readCapacityWindow(ctx context.Context, httpBase string, settle, window time.Duration) statsWindow {
	return readStatsAround(ctx, httpBase, statsNoDevices, time.Now().Add(settle), func(read time.Time) time.Time { return read.Add(window) })
}

// WriteTable writes the capacities with their ratio, every pair and every
// probe in the order they ran.
func (r CapacityReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "hapticbench arms: largest N stepped at %g Hz with under %g %% overrun ticks (%gs per window; a probe not far under the line takes up to %d windows and passes by their median); %s\n",
		r.LoopHz, 100*r.OverrunLimit, r.WindowS, r.Repeats, r.Machine)
	if r.Effects != "" {
		fmt.Fprintf(&b, "every arm controlled and rendering %s, in hapticd (--sim-effects) and in the bare loop (--effects)\n", r.Effects)
	}
	if len(r.Pairs) > 1 {
		fmt.Fprintf(&b, "%d pairs of searches, each pair's two in lockstep (one probe each in turn, pairs alternating which goes first); the ratio is the median of the pairs' ratios\n", len(r.Pairs))
	}
	b.WriteString("\n")
	capText := func(s CapacitySummary) string {
		t := strconv.FormatFloat(s.Capacity, 'f', -1, 64) // a median: whole, or a half
		if len(r.Pairs) > 1 {
			t += fmt.Sprintf(" (%d–%d)", s.Min, s.Max)
		}
		if s.AtMax > 0 {
			t = "≥ " + t // a search stopped at --max still passing
		}
		return t
	}
	var t textTable
	t.add("figure", "hapticd", "baseline", "base", "ratio", "pairs min–max")
	base, ratio, baseline, spread := "-", "-", "-", "-"
	if r.BareLoop != nil {
		baseline, base = SideBareLoop, capText(*r.BareLoop)
		ratio = Comparison{Ratio: r.Ratio, Flag: r.Flag, PairRatios: r.PairRatios}.ratioText()
		if r.RatioIsUpperBound && r.Ratio != 0 {
			ratio = "≤ " + ratio // a bare-loop search was still passing at --max
		}
		if len(r.PairRatios) > 0 {
			spread = fmt.Sprintf("%.2f–%.2f (%d)", r.RatioMin, r.RatioMax, len(r.PairRatios))
		}
	}
	t.add("capacity (arms)", capText(r.Service), baseline, base, ratio, spread)
	t.write(&b)

	if len(r.Pairs) > 1 || r.BareLoop != nil {
		b.WriteString("\n")
		t = textTable{}
		t.add("pair", "first", SideService, SideBareLoop, "ratio")
		for _, p := range r.Pairs {
			bare, ratio := "-", "-"
			if p.BareLoop != nil {
				bare = capResultText(*p.BareLoop)
				if p.Ratio != 0 || p.BareLoop.Capacity > 0 {
					ratio = fmt.Sprintf("%.2fx", p.Ratio)
					if p.RatioIsUpperBound {
						ratio = "≤ " + ratio
					}
				}
			}
			t.add(itoa(p.Pair), p.First, capResultText(p.Service), bare, ratio)
		}
		t.write(&b)
	}

	b.WriteString("\n")
	t = textTable{}
	t.add("seq", "pair", "search", "arms", "verdict", "overruns %", "windows %", "period p99 µs*", "CPU %", "ns/step", "heap B/arm", "RSS B/arm", "error")
	for _, p := range r.probesInOrder() {
		cpu, nsStep, heap, rss := "-", "-", "-", "-"
		if p.HeapPerArm > 0 {
			heap, rss = number(p.HeapPerArm), number(p.RSSPerArm)
		}
		if p.CPUPercent > 0 {
			cpu = number(p.CPUPercent)
		}
		if p.NsPerStep > 0 {
			nsStep = number(p.NsPerStep)
		}
		windows := make([]string, len(p.Windows))
		for i, w := range p.Windows {
			windows[i] = number(100 * w.OverrunFraction)
		}
		t.add(itoa(p.Seq), itoa(p.Pair), p.Side, itoa(p.Arms), verdictText(p.Pass), number(100*p.OverrunFraction), strings.Join(windows, " "),
			number(p.PeriodP99Us), cpu, nsStep, heap, rss, clip([]byte(p.Error), 80))
	}
	t.write(&b)
	b.WriteString("overruns %: the median window's; windows %: each window's, in order\n")
	b.WriteString("* hapticd: the worst shard's over the window (a hapticd whose /stats lists no shards: since it started); bare loop: over its run\n")
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// capResultText is one search's capacity, ≥ when it stopped at --max.
func capResultText(c CapacityResult) string {
	if c.Error != "" {
		return "error"
	}
	if c.AtMax {
		return fmt.Sprintf("≥ %d", c.Capacity)
	}
	return itoa(c.Capacity)
}

// probesInOrder is every probe of every pair, both sides, in the order
// they ran.
func (r CapacityReport) probesInOrder() []CapacityProbe {
	var all []CapacityProbe
	for _, p := range r.Pairs {
		all = append(all, p.Service.Probes...)
		if p.BareLoop != nil {
			all = append(all, p.BareLoop.Probes...)
		}
	}
	slices.SortStableFunc(all, func(a, b CapacityProbe) int { return a.Seq - b.Seq })
	return all
}
