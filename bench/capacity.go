package bench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// CapacityOptions configure `hapticbench arms`: the largest number of
// simulated arms the service's scheduler steps at LoopHz with under
// OverrunLimit of its ticks overrun.
type CapacityOptions struct {
	Hapticd string  // binary; empty searches as FindHapticd does
	LoopHz  float64 // default 1000
	Max     int     // largest N tried; default 16384
	// Settle is how long a started service runs before the window; default 1 s.
	Settle time.Duration
	// Window is how long each probe measures; default 3 s.
	Window time.Duration
	// OverrunLimit is the overrun fraction a probe must stay under; default 0.01.
	OverrunLimit float64
	// Precision stops the bisection once the bracket is within this
	// fraction of the passing N; default 0.05.
	Precision float64
	// Retries re-runs a failing probe up to this many times and keeps the
	// first pass, so one burst of noise from a neighbour on a shared
	// machine does not end the search; default 1, negative for none.
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
	if o.Retries == 0 {
		o.Retries = 1
	}
}

// CapacityProbe is one N tried.
type CapacityProbe struct {
	Arms            int     `json:"arms"`
	Pass            bool    `json:"pass"`
	OverrunFraction float64 `json:"overrun_fraction"`
	// PeriodP99Us is the worst shard's period p99 over the window (since
	// the service started for a hapticd whose /stats has no shards), the
	// bare loop's over its run.
	PeriodP99Us float64 `json:"period_p99_us"`
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

// CapacityResult is one search: its answer and every probe on the way.
type CapacityResult struct {
	Capacity int `json:"capacity"`
	// AtMax says the search stopped at Max still passing: the true
	// capacity is at least Capacity.
	AtMax  bool            `json:"at_max"`
	Probes []CapacityProbe `json:"probes"`
}

// CapacityReport compares the service with the bare loop.
type CapacityReport struct {
	Machine      Machine         `json:"machine"`
	LoopHz       float64         `json:"loop_hz"`
	Effects      string          `json:"effects,omitempty"`
	OverrunLimit float64         `json:"overrun_limit"`
	WindowS      float64         `json:"window_s"`
	Service      CapacityResult  `json:"service"`
	BareLoop     *CapacityResult `json:"bare_loop,omitempty"`
	// Ratio is the service's capacity over the bare loop's; 0 with Flag
	// "baseline-lost" when the service beat the bare loop beyond noise
	// (the bare loop was no floor in that run).
	Ratio float64 `json:"ratio"`
	// RatioIsUpperBound says the bare loop's search stopped at --max still
	// passing: its true capacity is higher, so the ratio is at most Ratio.
	RatioIsUpperBound bool     `json:"ratio_is_upper_bound,omitempty"`
	Flag              string   `json:"flag,omitempty"`
	Warnings          []string `json:"warnings,omitempty"`
}

// Capacity searches the largest N (doubling, then bisecting) for the
// service and then for `hapticd baseline-arms`.
func Capacity(ctx context.Context, o CapacityOptions) (CapacityReport, error) {
	o.defaults()
	rep := CapacityReport{Machine: ThisMachine(), LoopHz: o.LoopHz, OverrunLimit: o.OverrunLimit, WindowS: o.Window.Seconds(), Effects: o.Effects}
	binary, cleanup, err := FindHapticd(ctx, o.Hapticd)
	if err != nil {
		return rep, err
	}
	defer cleanup()

	progress := func(what string, p CapacityProbe) {
		if o.Progress == nil {
			return
		}
		verdict := "pass"
		if !p.Pass {
			verdict = "fail"
		}
		fmt.Fprintf(o.Progress, "%s: %d arms: %s (overruns %.2f %%, period p99 %s µs)%s\n", what, p.Arms, verdict,
			100*p.OverrunFraction, number(p.PeriodP99Us), errSuffix(p.Error))
	}
	rep.Service, err = searchCapacity(ctx, o, func(n int) (CapacityProbe, error) {
		p, err := probeService(ctx, binary, n, o)
		progress("hapticd", p)
		return p, err
	})
	if err != nil {
		return rep, err
	}
	if !o.NoBareLoop {
		bare, err := searchCapacity(ctx, o, func(n int) (CapacityProbe, error) {
			b, err := runBareLoop(ctx, binary, n, o.LoopHz, o.Window, o.Motion, o.Effects)
			p := CapacityProbe{Arms: n}
			if err != nil {
				p.Error = err.Error()
			} else {
				p.OverrunFraction, p.PeriodP99Us, p.NsPerStep = b.OverrunFraction(), b.PeriodUsP99, b.NsPerStep
				p.Pass = p.OverrunFraction < o.OverrunLimit
			}
			progress("bare loop", p)
			return p, err
		})
		if err != nil {
			rep.Warnings = append(rep.Warnings, "bare-loop baseline skipped: "+err.Error())
		} else {
			rep.BareLoop = &bare
			switch {
			case float64(rep.Service.Capacity) > float64(bare.Capacity)*(1+max(minNoise, o.Precision)) && !bare.AtMax:
				rep.Flag = FlagBaselineLost
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("the bare loop held %d arms, hapticd %d: the baseline lost beyond noise, so no ratio is given; rerun on a quiet machine", bare.Capacity, rep.Service.Capacity))
			case bare.Capacity > 0:
				rep.Ratio = float64(rep.Service.Capacity) / float64(bare.Capacity)
				rep.RatioIsUpperBound = bare.AtMax && !rep.Service.AtMax
			}
		}
	}
	if rep.Service.Capacity == 0 {
		hint := "hapticd missed over the limit of its ticks even with 1 arm"
		if rep.BareLoop != nil && rep.BareLoop.Capacity == 0 {
			hint += ", and so did the bare loop: the machine is too busy to hold the rate; rerun it idle or raise --overrun-limit"
		}
		rep.Warnings = append(rep.Warnings, hint)
	}
	return rep, ctx.Err()
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + e
}

// searchCapacity doubles N from 1 until a probe fails or Max passes, then
// bisects between the last pass and the first failure. An error on the
// first probe is returned (nothing works); later errors count as failures,
// since a service that cannot start N arms does not handle N.
func searchCapacity(ctx context.Context, o CapacityOptions, probe func(n int) (CapacityProbe, error)) (CapacityResult, error) {
	var res CapacityResult
	try := func(n int) (bool, error) {
		for attempt := 0; ; attempt++ {
			p, err := probe(n)
			res.Probes = append(res.Probes, p)
			if err != nil && len(res.Probes) == 1 {
				return false, err
			}
			if err == nil && p.Pass {
				return true, ctx.Err()
			}
			if attempt >= o.Retries || ctx.Err() != nil {
				return false, ctx.Err()
			}
		}
	}
	pass, fail := 0, 0
	for n := 1; ; n *= 2 {
		n = min(n, o.Max)
		ok, err := try(n)
		if err != nil {
			return res, err
		}
		if !ok {
			fail = n
			break
		}
		pass = n
		if n == o.Max {
			res.Capacity, res.AtMax = n, true
			return res, nil
		}
	}
	for fail-pass > 1 && float64(fail-pass) > o.Precision*float64(pass) {
		mid := pass + (fail-pass)/2
		ok, err := try(mid)
		if err != nil {
			return res, err
		}
		if ok {
			pass = mid
		} else {
			fail = mid
		}
	}
	res.Capacity = pass
	return res, nil
}

// probeService starts hapticd with n arms and measures one window.
func probeService(ctx context.Context, binary string, n int, o CapacityOptions) (CapacityProbe, error) {
	p := CapacityProbe{Arms: n}
	so := ServiceOptions{Binary: binary, Arms: n, LoopHz: o.LoopHz, Motion: o.Motion}
	if o.Effects != "" {
		so.Extra = []string{"--sim-effects", o.Effects}
	}
	svc, err := startService(ctx, so)
	if err != nil {
		p.Error = err.Error()
		return p, err
	}
	defer svc.stop()
	win := readCapacityWindow(ctx, svc.httpBase, o.Settle, o.Window)
	if win.err != nil {
		p.Error = win.err.Error()
		return p, win.err
	}
	lf, pf, err := capacityFigures(win, n)
	if err != nil {
		p.Error = err.Error()
		return p, err
	}
	// A loop that counted far fewer ticks than the window holds stalled
	// (or the service was starved): its overrun fraction says nothing,
	// and it did not hold the rate.
	if want := o.Window.Seconds() * o.LoopHz; float64(lf.Ticks) < want/2 {
		err := fmt.Errorf("bench: hapticd's loops counted %d ticks in a %s window at %g Hz, under half the %.0f due: they did not hold the rate",
			lf.Ticks, o.Window, o.LoopHz, want)
		p.Error = err.Error()
		p.OverrunFraction = 1
		return p, nil
	}
	p.OverrunFraction, p.PeriodP99Us, p.CPUPercent = lf.OverrunFractionWorst, lf.PeriodP99UsWorst, pf.CPUPercent
	p.HeapPerArm = float64(win.after.Process.HeapBytes) / float64(n)
	p.RSSPerArm = float64(win.after.Process.RSSBytes) / float64(n)
	p.Pass = p.OverrunFraction < o.OverrunLimit
	return p, nil
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

// WriteTable writes the capacities, the ratio and every probe.
func (r CapacityReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "hapticbench arms: largest N stepped at %g Hz with under %g %% overrun ticks (%gs per probe); %s %s/%s, %d CPUs\n",
		r.LoopHz, 100*r.OverrunLimit, r.WindowS, r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs)
	if r.Effects != "" {
		fmt.Fprintf(&b, "every arm controlled and rendering %s, in hapticd (--sim-effects) and in the bare loop (--effects)\n", r.Effects)
	}
	b.WriteString("\n")
	capText := func(c CapacityResult) string {
		if c.AtMax {
			return fmt.Sprintf("≥ %d", c.Capacity)
		}
		return itoa(c.Capacity)
	}
	var t textTable
	t.add("figure", "hapticd", "baseline", "base", "ratio")
	base, ratio := "-", "-"
	baseline := "-"
	if r.BareLoop != nil {
		baseline, base = "bare loop", capText(*r.BareLoop)
		ratio = Comparison{Ratio: r.Ratio, Flag: r.Flag}.ratioText()
		if r.RatioIsUpperBound {
			ratio = "≤ " + ratio // the bare loop was still passing at --max
		}
	}
	t.add("capacity (arms)", capText(r.Service), baseline, base, ratio)
	t.write(&b)

	b.WriteString("\n")
	t = textTable{}
	t.add("search", "arms", "verdict", "overruns %", "period p99 µs*", "CPU %", "ns/step", "heap B/arm", "RSS B/arm", "error")
	add := func(name string, c CapacityResult) {
		for _, p := range c.Probes {
			verdict := "pass"
			if !p.Pass {
				verdict = "fail"
			}
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
			t.add(name, itoa(p.Arms), verdict, number(100*p.OverrunFraction), number(p.PeriodP99Us), cpu, nsStep, heap, rss, clip([]byte(p.Error), 80))
		}
	}
	add("hapticd", r.Service)
	if r.BareLoop != nil {
		add("bare loop", *r.BareLoop)
	}
	t.write(&b)
	b.WriteString("* hapticd: the worst shard's over the window (a hapticd whose /stats lists no shards: since it started); bare loop: over its run\n")
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
