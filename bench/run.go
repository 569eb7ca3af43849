package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// RunOptions configure one load run (`hapticbench run`).
type RunOptions struct {
	// Target is the URL of a running hapticd (ws://host:port/ or
	// http://host:port); empty starts one.
	Target string
	// Hapticd is the binary to start and to run baseline-arms with; empty
	// searches as FindHapticd does.
	Hapticd   string
	Arms      int     // simulated arms of a started hapticd
	Clients   int     // controlling sessions, client i commands arm i mod Arms
	Observers int     // sessions that only probe
	RateHz    float64 // per-client tick rate; 0 is as fast as possible
	Duration  time.Duration
	Warmup    time.Duration
	LoopHz    float64 // device loop rate of a started hapticd
	// FrameTimeout is how long a client waits for a frame before counting
	// it lost; default 5 s.
	FrameTimeout time.Duration
	// NoEcho and NoBareLoop skip a baseline.
	NoEcho, NoBareLoop bool
	// PerDevice keeps every device's loop figures in the report.
	PerDevice bool
	// Subscribe makes every session subscribe to its own arm
	// (session.configure.subscribe), so frames carry one arm, not all.
	Subscribe bool
	// StateFields, if set, makes every session subscribe to these arm
	// state fields only (session.configure.subscribe.state).
	StateFields []string
	// EchoCommand, if set, runs the echo baseline as its own process
	// (argv of a command that serves as ServeEcho does, given --inventory
	// and --state files), as hapticd runs in its own; empty runs it inside
	// this process (tests), which flatters the baseline.
	EchoCommand []string
	// Pairs is how many times hapticd and the echo baseline each run,
	// alternating (hapticd, echo, hapticd, echo, …; default 5, or 1 with
	// NoEcho), each hapticd run a fresh service (fresh sessions on a
	// Target). Each comparison is the median of the pairs' ratios, with
	// their range: a slow minute of a shared machine falls on one pair,
	// not on the figure, and no run is picked for being the best.
	Pairs int
	// CPUs places the clients and the servers (Placement); the default
	// leaves it to the kernel.
	CPUs Placement
	// Progress, if set, receives one line per phase.
	Progress io.Writer
	// Live, with Progress, also keeps a line rewritten in place with the
	// running phase and its elapsed time of its total: for a terminal.
	Live bool
}

// DefaultPairs is the default number of alternated hapticd and echo runs.
const DefaultPairs = 5

func (o *RunOptions) defaults() error {
	if o.Arms <= 0 && o.Target == "" {
		o.Arms = 1
	}
	if o.Clients < 0 || o.Observers < 0 || o.Clients+o.Observers == 0 {
		return fmt.Errorf("bench: %d clients and %d observers: need at least one session", o.Clients, o.Observers)
	}
	if o.RateHz < 0 {
		return fmt.Errorf("bench: rate %v Hz: must be 0 (as fast as possible) or positive", o.RateHz)
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.LoopHz <= 0 {
		o.LoopHz = 1000
	}
	if o.FrameTimeout <= 0 {
		o.FrameTimeout = 5 * time.Second
	}
	if o.Pairs <= 0 {
		o.Pairs = DefaultPairs
		if o.NoEcho {
			o.Pairs = 1 // nothing to pair with
		}
	}
	return nil
}

func (o *RunOptions) progress(format string, args ...any) {
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, format+"\n", args...)
	}
}

// LoadResult is one load phase: the same clients against hapticd or against
// the echo baseline.
type LoadResult struct {
	Server    string         `json:"server"` // "hapticd" or "echo"
	URL       string         `json:"url"`
	MeasuredS float64        `json:"measured_s"`
	Overall   Overall        `json:"overall"`
	Clients   []ClientResult `json:"clients"`
}

// Overall merges every client of a phase.
type Overall struct {
	Sessions        int     `json:"sessions"`
	TargetHz        float64 `json:"target_hz"`
	AchievedHzTotal float64 `json:"achieved_hz_total"`
	AchievedHzMean  float64 `json:"achieved_hz_mean"`
	AchievedHzMin   float64 `json:"achieved_hz_min"`
	Counts
	ClientsInError int     `json:"clients_in_error"`
	FrameBytes     int     `json:"frame_bytes"`
	RTT            Summary `json:"rtt"`
}

// Machine says where the figures were measured.
type Machine struct {
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	// PCID says whether the CPU tags TLB entries by address space (nil:
	// not known). Without it every switch between the client's and the
	// server's process empties the TLB, and a server whose round trip
	// touches more pages than the echo's falls further behind it: the one
	// client's ratio moved from 1.01× to 1.44× p50 with no code change
	// (msg27, docs/investigations/message-cost.md).
	PCID *bool `json:"pcid,omitempty"`
}

// String is the machine as every report's first line gives it: Go, OS and
// architecture, CPUs, the CPU's model and whether it has PCID (recorded
// beside every end-to-end figure: docs/performance.md).
func (m Machine) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s/%s, %d CPUs", m.GoVersion, m.OS, m.Arch, m.CPUs)
	if m.CPUModel != "" {
		fmt.Fprintf(&b, ", %s", m.CPUModel)
	}
	if m.PCID != nil {
		if *m.PCID {
			b.WriteString(", PCID (a process switch keeps the TLB)")
		} else {
			b.WriteString(", no PCID (each process switch empties the TLB)")
		}
	}
	return b.String()
}

// ThisMachine describes the machine running the benchmark.
func ThisMachine() Machine {
	m := Machine{GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel, m.PCID = readCPUInfo(string(b))
	}
	return m
}

// readCPUInfo reads the first CPU's model name and whether its flags list
// pcid from Linux's /proc/cpuinfo (pcid nil: no flags line).
func readCPUInfo(text string) (model string, pcid *bool) {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		case "flags":
			if pcid == nil {
				has := slices.Contains(strings.Fields(v), "pcid")
				pcid = &has
			}
		}
	}
	return model, pcid
}

// RunConfig echoes the options a report was made with.
type RunConfig struct {
	Target    string  `json:"target,omitempty"`
	Arms      int     `json:"arms"`
	Clients   int     `json:"clients"`
	Observers int     `json:"observers"`
	RateHz    float64 `json:"rate_hz"`
	DurationS float64 `json:"duration_s"`
	WarmupS   float64 `json:"warmup_s"`
	LoopHz    float64 `json:"loop_hz"`
	Subscribe bool    `json:"subscribe,omitempty"` // each session subscribed to its own arm
	// StateFields are the arm state fields every session subscribed to.
	StateFields []string `json:"state_fields,omitempty"`
	// Placement is RunOptions.CPUs, and the CPUs it gave each side.
	Placement  string `json:"placement,omitempty"`
	ClientCPUs []int  `json:"client_cpus,omitempty"`
	ServerCPUs []int  `json:"server_cpus,omitempty"`
}

// RunReport is everything one run measured.
type RunReport struct {
	Config  RunConfig `json:"config"`
	Machine Machine   `json:"machine"`
	// Hapticd is the hapticd run whose total rate is the median of the
	// runs (the lower middle one of an even count), with every session's
	// figures; a run that broke the one-frame-per-message contract is
	// shown instead, never hidden behind the others.
	Hapticd LoadResult `json:"hapticd"`
	// Echo is the echo run whose total rate is the median of its runs.
	Echo *LoadResult `json:"echo,omitempty"`
	// Pairs are every run's overall figures, in the order they ran: pair
	// i is hapticd's i-th run and the echo's run right after it. The
	// comparisons are the medians of the pairs' ratios.
	Pairs []RunPair `json:"pairs"`
	// EchoInProcess is true when the echo baseline ran inside hapticbench
	// (RunOptions.EchoCommand unset) instead of in a process of its own;
	// it then skips the cost of a cross-process round trip.
	EchoInProcess bool            `json:"echo_in_process,omitempty"`
	Loop          *LoopFigures    `json:"loop,omitempty"`
	Process       *ProcessFigures `json:"process,omitempty"`
	BareLoop      *BareLoop       `json:"bare_loop,omitempty"`
	// BareLoopLoaded is the bare loop run inside the echo's process in
	// echo runs of its own (loadedBareRuns of them, the run with the
	// median period p99 kept): the same arms under the same clients' load, served
	// by the echo beside them as the service serves them beside its loop.
	// The service's loop period under load is compared with it.
	BareLoopLoaded *BareLoop `json:"bare_loop_under_load,omitempty"`
	// Comparisons put each hapticd figure beside its baseline.
	Comparisons []Comparison `json:"comparisons"`
	// Warnings say what could not be measured and why.
	Warnings []string `json:"warnings,omitempty"`
}

// RunPair is one turn of a run: a hapticd run, then an echo run with the
// same clients and frame size.
type RunPair struct {
	Hapticd Overall  `json:"hapticd"`
	Echo    *Overall `json:"echo,omitempty"` // nil when the echo was skipped
}

// Comparison is one hapticd figure beside its baseline. Ratio is
// hapticd/baseline (0 when the baseline is missing or zero). For a figure
// measured in pairs (the echo's), Hapticd and Base are the medians of each
// side's runs and Ratio is the median of the pairs' ratios, which is not
// the ratio of the two medians: each pair's ratio is taken between runs
// that shared a minute of the machine.
type Comparison struct {
	Figure   string  `json:"figure"`
	Unit     string  `json:"unit"`
	Hapticd  float64 `json:"hapticd"`
	Baseline string  `json:"baseline"`
	Base     float64 `json:"base"`
	Ratio    float64 `json:"ratio"`
	// PairRatios are every pair's ratio in run order, and RatioMin and
	// RatioMax their range: the spread the median is quoted with. They
	// are kept when the baseline lost too.
	PairRatios []float64 `json:"pair_ratios,omitempty"`
	RatioMin   float64   `json:"ratio_min,omitempty"`
	RatioMax   float64   `json:"ratio_max,omitempty"`
	// Flag is "baseline-lost" when hapticd beat its baseline by more than
	// the noise (for paired figures: the median pair ratio is beyond 5 %
	// in hapticd's favour): the baseline was no floor in this run, so
	// Ratio is left 0 rather than reported.
	Flag string `json:"flag,omitempty"`
}

// loadedBaseline names the bare loop run under the echo's load.
const loadedBaseline = "bare loop + echo load"

// FlagBaselineLost marks a comparison whose baseline lost to hapticd.
const FlagBaselineLost = "baseline-lost"

// minNoise is the smallest margin a comparison must exceed to count as a
// baseline lost: run-to-run noise on a quiet machine.
const minNoise = 0.05

// Run measures hapticd under the load o describes and the echo baseline
// with the same clients and frame size, alternating in o.Pairs pairs, then
// the bare arm loop, and compares them. A started hapticd is stopped before
// each echo run so the two do not share the CPU.
func Run(ctx context.Context, o RunOptions) (RunReport, error) {
	return run(ctx, o, nil)
}

// runEcho runs the load once against a fresh echo baseline serving frames.
func runEcho(ctx context.Context, o RunOptions, frames capturedFrames, cpus []int) (LoadResult, error) {
	var url string
	var stop func()
	if len(o.EchoCommand) > 0 {
		echo, err := startEchoProcess(ctx, o.EchoCommand, frames, cpus)
		if err != nil {
			return LoadResult{}, err
		}
		url, stop = echo.url, echo.close
	} else {
		echo, err := startEcho(frames)
		if err != nil {
			return LoadResult{}, err
		}
		url, stop = echo.url, echo.close
	}
	defer stop()
	el, _, err := runLoadWith(ctx, o, "echo", url, "", nil, nil)
	return el, err
}

// runEchoWithBareLoop runs the load once against `hapticd baseline-arms`
// serving the frames as the echo does, and returns the bare loop that
// stepped the arms in that process through the measured window. The loop
// shares its process with the sessions, as the service's loop does: a bare
// loop in an idle process of its own is woken by the kernel's scheduler on
// a machine the clients saturate, where a busy runtime runs the loop's
// timer on a thread already awake, and that loop was no floor (2.05 ms
// period p99 against the service's 1.97 ms under 100 clients at 1 kHz).
func runEchoWithBareLoop(ctx context.Context, o RunOptions, frames capturedFrames, binary string, arms int) (BareLoop, error) {
	command := []string{binary, "baseline-arms", "--arms", strconv.Itoa(arms),
		"--loop-hz", strconv.FormatFloat(o.LoopHz, 'f', -1, 64), "--duration", o.Duration.String(), "--json"}
	echo, err := startEchoProcess(ctx, command, frames, nil)
	if err != nil {
		return BareLoop{}, err
	}
	defer echo.close()
	var b BareLoop
	loopErr := errors.New("bench: the bare loop did not run: the load ended before its window")
	during := func(s schedule) {
		if waitUntil(ctx, s.base.Add(s.measureStart)) {
			b, loopErr = echo.bareLoop(ctx, o.Duration)
		}
	}
	if _, _, err := runLoadWith(ctx, o, "echo", echo.url, "", nil, during); err != nil {
		return BareLoop{}, err
	}
	return b, loopErr
}

// bareCache lets a sweep run the bare loop once for all its points.
type bareCache struct {
	binary  string
	cleanup func()
	bare    *BareLoop
	err     error
}

func run(ctx context.Context, o RunOptions, cache *bareCache) (RunReport, error) {
	if err := o.defaults(); err != nil {
		return RunReport{}, err
	}
	rep := RunReport{
		Config: RunConfig{Target: o.Target, Arms: o.Arms, Clients: o.Clients, Observers: o.Observers,
			RateHz: o.RateHz, DurationS: o.Duration.Seconds(), WarmupS: o.Warmup.Seconds(), LoopHz: o.LoopHz, Subscribe: o.Subscribe,
			StateFields: o.StateFields, Placement: string(o.CPUs)},
		Machine: ThisMachine(),
	}
	clientCPUs, serverCPUs, err := o.CPUs.cpuSets()
	if err != nil {
		return rep, err
	}
	if clientCPUs != nil {
		unpin, err := pinSelf(clientCPUs)
		if err != nil {
			return rep, err
		}
		defer unpin()
		rep.Config.ClientCPUs, rep.Config.ServerCPUs = clientCPUs, serverCPUs
	}
	if cache == nil {
		cache = &bareCache{}
		defer func() {
			if cache.cleanup != nil {
				cache.cleanup()
			}
		}()
	}
	needBinary := o.Target == "" || !o.NoBareLoop
	if needBinary && cache.binary == "" && cache.err == nil {
		cache.binary, cache.cleanup, cache.err = FindHapticd(ctx, o.Hapticd)
	}
	if o.Target == "" && cache.err != nil {
		return rep, cache.err
	}
	if o.Target != "" {
		rep.Config.Arms = 0 // known only from the target's /stats
	}
	if o.Target == "" && o.Clients > o.Arms {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf(
			"%d controlling clients share %d arms: the first session to command an arm holds it, the others get device_busy (counted as busy frames)",
			o.Clients, o.Arms))
	}

	// hapticd and the echo take turns (hapticd first: the echo serves its
	// frames), so that a slow minute of a shared machine falls on one
	// pair rather than on one side.
	frames := &capturedFrames{}
	echo := &echoRounds{ctx: ctx, o: &o, rep: &rep, cache: cache, frames: frames, cpus: serverCPUs}
	var runs []hapticdRun
	for i := 0; i < o.Pairs; i++ {
		run, err := runHapticdOnce(ctx, &o, &rep, cache, frames, serverCPUs, i)
		if err != nil {
			return rep, err
		}
		runs = append(runs, run)
		pair := RunPair{Hapticd: run.load.Overall}
		if !o.NoEcho {
			el, ok, err := echo.runOnce(runs[0].load.Overall.FrameBytes)
			if err != nil {
				return rep, err
			}
			if ok {
				pair.Echo = &el.Overall
				echo.loads = append(echo.loads, el)
			}
		}
		rep.Pairs = append(rep.Pairs, pair)
	}
	shown := shownRun(runs)
	rep.Hapticd = runs[shown].load
	if w := runs[shown].window; w != nil {
		rep.Loop, rep.Process = &w.loop, &w.process
	}
	if len(echo.loads) > 0 {
		rates := make([]float64, len(echo.loads))
		for i, l := range echo.loads {
			rates[i] = l.Overall.AchievedHzTotal
		}
		rep.Echo = &echo.loads[medianIndex(rates)]
	}
	for i := 0; i < loadedBareRuns && echo.wantsBareLoop(); i++ {
		echo.runWithBareLoop(runs[0].load.Overall.FrameBytes)
	}
	echo.finish()

	if !o.NoBareLoop {
		switch {
		case cache.bare != nil:
			rep.BareLoop = cache.bare
		case cache.err != nil:
			rep.Warnings = append(rep.Warnings, "bare-loop baseline skipped: "+cache.err.Error())
		case rep.Config.Arms <= 0:
			rep.Warnings = append(rep.Warnings, "bare-loop baseline skipped: the number of arms is unknown")
		default:
			o.progress("bare-loop baseline: %d arms at %v Hz for %s", rep.Config.Arms, o.LoopHz, o.Duration)
			stopLive := o.live("bare-loop baseline", o.Duration)
			b, err := runBareLoopOn(ctx, serverCPUs, cache.binary, rep.Config.Arms, o.LoopHz, o.Duration, "", "")
			stopLive()
			if err != nil {
				cache.err = err
				rep.Warnings = append(rep.Warnings, "bare-loop baseline skipped: "+err.Error())
			} else {
				cache.bare = &b
				rep.BareLoop = &b
			}
		}
	}
	rep.Comparisons = compare(rep)
	return rep, ctx.Err()
}

// hapticdRun is one hapticd run of a run's pairs: its load, and the
// service's loop and process figures over its window (nil when they could
// not be read).
type hapticdRun struct {
	load   LoadResult
	window *struct {
		loop    LoopFigures
		process ProcessFigures
	}
}

// faulty says whether a run broke the one-frame-per-message contract.
func faulty(o Overall) bool { return o.Lost+o.OutOfOrder+o.ErrorFrames > 0 }

// shownRun picks the run a report shows in full: the first that broke the
// contract (shown, and failing the command, never hidden behind the
// others), else the run of the median rate.
func shownRun(runs []hapticdRun) int {
	rates := make([]float64, len(runs))
	for i, r := range runs {
		if faulty(r.load.Overall) {
			return i
		}
		rates[i] = r.load.Overall.AchievedHzTotal
	}
	return medianIndex(rates)
}

// medianIndex is the index of the median of xs (the lower middle one of
// an even count; the first of equal values); xs is left as it is.
func medianIndex(xs []float64) int {
	order := make([]int, len(xs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return xs[order[a]] < xs[order[b]] })
	return order[(len(xs)-1)/2]
}

// runHapticdOnce runs the load once against hapticd (a started one on
// cpus, or the target). The first run captures the frames the echo serves,
// and with a target sets the loop rate and arm count from its /stats.
func runHapticdOnce(ctx context.Context, o *RunOptions, rep *RunReport, cache *bareCache, frames *capturedFrames, cpus []int, i int) (hapticdRun, error) {
	var run hapticdRun
	wsURL, httpBase := "", ""
	var svc *service
	if o.Target != "" {
		var err error
		if wsURL, httpBase, err = targetURLs(o.Target); err != nil {
			return run, err
		}
	} else {
		o.progress("starting %s with %d simulated arms at %v Hz", cache.binary, o.Arms, o.LoopHz)
		var err error
		svc, err = startService(ctx, ServiceOptions{Binary: cache.binary, Arms: o.Arms, LoopHz: o.LoopHz, CPUs: cpus})
		if err != nil {
			return run, err
		}
		wsURL, httpBase = svc.wsURL, svc.httpBase
		// Stopped before the echo's turn, so the two never share the CPU.
		defer func() {
			if svc != nil {
				svc.stop()
			}
		}()
	}
	o.progress("pair %d of %d, hapticd: %d clients, %d observers at %s for %s (+%s warm-up)", i+1, o.Pairs, o.Clients, o.Observers, rateText(o.RateHz), o.Duration, o.Warmup)
	capture := frames
	if i > 0 {
		capture = nil // the first run's frames serve every echo run
	}
	stopLive := o.live("hapticd", o.Warmup+o.Duration)
	load, win, err := runLoad(ctx, *o, "hapticd", wsURL, httpBase, capture)
	stopLive()
	if err != nil {
		return run, err
	}
	run.load = load
	if win.err != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("hapticd run %d: %v", i+1, win.err))
	} else {
		lf, pf := windowFigures(win.before, win.after, win.elapsed, o.PerDevice)
		run.window = &struct {
			loop    LoopFigures
			process ProcessFigures
		}{lf, pf}
		if i == 0 && o.Target != "" {
			if lf.TargetUs > 0 {
				// The loop rate of a service we did not start is what it reports.
				o.LoopHz = 1e6 / lf.TargetUs
				rep.Config.LoopHz = o.LoopHz
			}
			rep.Config.Arms = countType(win.after, protocol.TypeArm)
		}
	}
	if svc != nil {
		err := svc.stop()
		svc = nil
		if err != nil {
			rep.Warnings = append(rep.Warnings, err.Error())
		}
	}
	return run, nil
}

// loadedBareRuns is how many echo runs carry the bare loop beside them;
// the run with the median period p99 is the loaded baseline.
const loadedBareRuns = 3

// echoRounds runs the echo baseline's turns of a run. Its runs for the
// comparisons run alone, as hapticd's do. The bare loop under load runs in
// runs of its own, inside the echo's process (runEchoWithBareLoop), so that
// the service's loop figures under load have a baseline that bore the same
// clients' load in the same place, not a quiet machine's. Their round trips
// are not the echo's baseline: a loop waking a thousand times a second
// beside the echo put its p99 at 2.8 times hapticd's on one CPU (--cpus
// shared).
type echoRounds struct {
	ctx       context.Context
	o         *RunOptions // the run's: a target's loop rate is known after hapticd's first run
	rep       *RunReport
	cache     *bareCache
	frames    *capturedFrames
	cpus      []int
	loads     []LoadResult // every echo run, in order
	loaded    []BareLoop
	loadedErr error
	skipped   bool
}

// wantsBareLoop says whether a bare loop can run under the echo's load.
// Not with a placement: the loop would share the servers' CPUs with the
// echo's sessions there, which was measured only when it ran as a second
// process (it lost them to the echo: a p99 of 2.8 ms under 100 clients,
// no floor); inside the echo's process it has not been measured placed.
func (e *echoRounds) wantsBareLoop() bool {
	return !e.o.NoEcho && !e.o.NoBareLoop && e.o.CPUs == PlaceAny &&
		e.cache.err == nil && e.cache.binary != "" && e.rep.Config.Arms > 0
}

// ready pads the captured frames to hapticd's size (the same in every
// run), or notes once that there are none to serve.
func (e *echoRounds) ready(frameBytes int) bool {
	if e.frames.state == nil {
		if !e.skipped {
			e.skipped = true
			e.rep.Warnings = append(e.rep.Warnings, "echo baseline skipped: no hapticd frame was captured (did every client fail?)")
		}
		return false
	}
	e.frames.padTo(frameBytes)
	return true
}

// runOnce runs the echo once for the comparisons; ok is false when there
// were no frames to serve.
func (e *echoRounds) runOnce(frameBytes int) (LoadResult, bool, error) {
	if !e.ready(frameBytes) {
		return LoadResult{}, false, nil
	}
	e.o.progress("pair %d of %d, echo: same clients, %d-byte frames", len(e.loads)+1, e.o.Pairs, len(e.frames.state))
	stopLive := e.o.live("echo", e.o.Warmup+e.o.Duration)
	el, err := runEcho(e.ctx, *e.o, *e.frames, e.cpus)
	stopLive()
	if err != nil {
		return LoadResult{}, false, err
	}
	e.rep.EchoInProcess = len(e.o.EchoCommand) == 0
	return el, true, nil
}

// runWithBareLoop runs the echo once with the bare loop beside it.
func (e *echoRounds) runWithBareLoop(frameBytes int) {
	if !e.ready(frameBytes) {
		return
	}
	e.o.progress("bare loop inside an echo's process: same clients, %d-byte frames", len(e.frames.state))
	b, err := runEchoWithBareLoop(e.ctx, *e.o, *e.frames, e.cache.binary, e.rep.Config.Arms)
	if err != nil {
		e.loadedErr = err
		return
	}
	e.loaded = append(e.loaded, b)
}

// finish records the bare loop under the echo's load (the run of the
// median period p99), or why there is none.
func (e *echoRounds) finish() {
	switch {
	case len(e.loaded) == 0 && e.loadedErr != nil:
		e.rep.Warnings = append(e.rep.Warnings, "bare-loop baseline under the echo's load skipped: "+e.loadedErr.Error())
	case len(e.loaded) > 0:
		p99s := make([]float64, len(e.loaded))
		for i, b := range e.loaded {
			p99s[i] = b.PeriodUsP99
		}
		b := e.loaded[medianIndex(p99s)]
		e.rep.BareLoopLoaded = &b
	}
}

func rateText(hz float64) string {
	if hz <= 0 {
		return "max rate"
	}
	return fmt.Sprintf("%g Hz", hz)
}

// countType counts the devices of type dt in /stats, under whichever
// names the service writes (--type-names haply or reference).
func countType(s ServiceStats, dt protocol.DeviceType) int {
	n := 0
	for _, d := range s.Devices {
		if isType(d.DeviceType, dt) {
			n++
		}
	}
	return n
}

// isType reports whether a device type name, as /stats writes it, names
// a device of type dt.
func isType(name string, dt protocol.DeviceType) bool {
	t, _, ok := (*protocol.TypeTable)(nil).Lookup([]byte(name))
	return ok && t == dt
}

// targetURLs turns --target into the simulation socket and HTTP base.
func targetURLs(target string) (wsURL, httpBase string, err error) {
	if !strings.Contains(target, "://") {
		target = "ws://" + target
	}
	u, err := url.Parse(target)
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("bench: --target %q: want ws://host:port/ or http://host:port", target)
	}
	switch u.Scheme {
	case "ws", "http":
		return "ws://" + u.Host + "/", "http://" + u.Host, nil
	case "wss", "https":
		return "wss://" + u.Host + "/", "https://" + u.Host, nil
	}
	return "", "", fmt.Errorf("bench: --target %q: scheme %q is not ws, wss, http or https", target, u.Scheme)
}

// statsWindow is the service's /stats at the start and end of the measured
// window.
type statsWindow struct {
	before, after ServiceStats
	elapsed       time.Duration
	err           error
}

// runLoad dials every session, runs them on one schedule and merges their
// results. With httpBase set it reads /stats at the window's edges; with
// capture set, client 0 copies the first frames it sees.
func runLoad(ctx context.Context, o RunOptions, server, wsURL, httpBase string, capture *capturedFrames) (LoadResult, statsWindow, error) {
	return runLoadWith(ctx, o, server, wsURL, httpBase, capture, nil)
}

// runLoadWith is runLoad with during, if set, run beside the sessions on the
// same schedule (it may wait for the measured window with waitUntil); the
// sessions stay open until it returns.
func runLoadWith(ctx context.Context, o RunOptions, server, wsURL, httpBase string, capture *capturedFrames, during func(schedule)) (LoadResult, statsWindow, error) {
	res := LoadResult{Server: server, URL: wsURL}
	n := o.Clients + o.Observers
	clients := make([]*client, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			role, idx := RoleController, i
			if i >= o.Clients {
				role, idx = RoleObserver, i-o.Clients
			}
			c, err := dialClient(ctx, wsURL, idx, role, o.RateHz, o.FrameTimeout, subscribeTo{ownArm: o.Subscribe, state: o.StateFields})
			if err == nil {
				c.result.Index = i
			}
			clients[i], errs[i] = c, err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clients {
			if c != nil {
				c.close()
			}
		}
		return res, statsWindow{}, fmt.Errorf("bench: %s: %d of %d sessions failed to open: %w", server, countErrs(errs), n, err)
	}
	if capture != nil {
		clients[0].capture = capture
	}
	if o.RateHz > 0 {
		// Spread the sessions' deadlines evenly over one period, as
		// independent engines would be, instead of firing all at once.
		periodNs := 1e9 / o.RateHz
		for i, c := range clients {
			c.phaseNs = int64(periodNs * float64(i) / float64(n))
		}
	}

	statsDone := make(chan struct{})
	s := schedule{base: time.Now(), measureStart: o.Warmup, measureEnd: o.Warmup + o.Duration, release: statsDone}
	var win statsWindow
	go func() {
		defer close(statsDone)
		var side sync.WaitGroup
		if during != nil {
			side.Go(func() { during(s) })
		}
		if httpBase != "" {
			win = readStatsWindow(ctx, httpBase, s)
		}
		side.Wait()
	}()
	for _, c := range clients {
		wg.Go(func() { c.run(ctx, s) })
	}
	wg.Wait()
	<-statsDone

	res.MeasuredS = o.Duration.Seconds()
	agg := newRTTHistogram()
	ov := Overall{Sessions: n, TargetHz: o.RateHz, AchievedHzMin: -1}
	var frameBytes, framed uint64
	for _, c := range clients {
		r := c.finish(o.Duration)
		agg.Merge(c.result.rtt)
		ov.AchievedHzTotal += r.AchievedHz
		if ov.AchievedHzMin < 0 || r.AchievedHz < ov.AchievedHzMin {
			ov.AchievedHzMin = r.AchievedHz
		}
		ov.Counts.add(r.Counts)
		if len(r.Errors) > 0 {
			ov.ClientsInError++
		}
		frameBytes += uint64(r.FrameBytes) * r.Received
		framed += r.Received
		res.Clients = append(res.Clients, r)
	}
	ov.AchievedHzMean = ov.AchievedHzTotal / float64(n)
	if framed > 0 {
		ov.FrameBytes = int(frameBytes / framed)
	}
	ov.RTT = summarize(agg)
	res.Overall = ov
	return res, win, ctx.Err()
}

func countErrs(errs []error) int {
	n := 0
	for _, e := range errs {
		if e != nil {
			n++
		}
	}
	return n
}

// readStatsWindow reads /stats when the warm-up ends and when the window
// ends.
func readStatsWindow(ctx context.Context, httpBase string, s schedule) statsWindow {
	end := s.base.Add(s.measureEnd)
	return readStatsAround(ctx, httpBase, "", s.base.Add(s.measureStart), func(time.Time) time.Time { return end })
}

// readStatsAround reads /stats{query} at start and again at end(the time
// the first read returned); elapsed runs from just before the first read to
// the second's answer, the span both reads' figures cover.
func readStatsAround(ctx context.Context, httpBase, query string, start time.Time, end func(read time.Time) time.Time) statsWindow {
	var w statsWindow
	if !waitUntil(ctx, start) {
		w.err = ctx.Err()
		return w
	}
	t0 := time.Now()
	before, err := fetchStatsRaw(ctx, httpBase, query)
	if err != nil {
		w.err = err
		return w
	}
	if !waitUntil(ctx, end(time.Now())) {
		w.err = ctx.Err()
		return w
	}
	w.after, w.err = fetchStats(ctx, httpBase, query)
	w.elapsed = time.Since(t0)
	if w.err == nil {
		w.before, w.err = before.decode()
	}
	return w
}

// waitUntil blocks until t or ctx ends; it reports whether t came.
func waitUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pairedFigures are the figures compared with the echo pair by pair;
// higher says whether a larger value is better.
var pairedFigures = []struct {
	figure, unit string
	higher       bool
	get          func(Overall) float64
}{
	{"rate total", "Hz", true, func(o Overall) float64 { return o.AchievedHzTotal }},
	{"rate per session (min)", "Hz", true, func(o Overall) float64 { return o.AchievedHzMin }},
	{"rtt p50", "µs", false, func(o Overall) float64 { return o.RTT.P50Us }},
	{"rtt p90", "µs", false, func(o Overall) float64 { return o.RTT.P90Us }},
	{"rtt p99", "µs", false, func(o Overall) float64 { return o.RTT.P99Us }},
	{"rtt p99.9", "µs", false, func(o Overall) float64 { return o.RTT.P999Us }},
	{"rtt max", "µs", false, func(o Overall) float64 { return o.RTT.MaxUs }},
}

// comparePairs puts one figure of every pair side by side: the median of
// each side's runs, and the median and range of the pairs' ratios. Pairs
// without an echo run, or whose echo figure is zero, give no ratio.
func comparePairs(pairs []RunPair, figure, unit string, higher bool, get func(Overall) float64) Comparison {
	c := Comparison{Figure: figure, Unit: unit, Baseline: "echo"}
	var hs, es []float64
	for _, p := range pairs {
		if p.Echo == nil {
			continue
		}
		h, e := get(p.Hapticd), get(*p.Echo)
		hs, es = append(hs, h), append(es, e)
		if e > 0 {
			c.PairRatios = append(c.PairRatios, h/e)
		}
	}
	if len(hs) == 0 {
		c.Baseline = "-"
		if len(pairs) > 0 {
			hs := make([]float64, len(pairs))
			for i, p := range pairs {
				hs[i] = get(p.Hapticd)
			}
			c.Hapticd = median(hs)
		}
		return c
	}
	c.Hapticd, c.Base = median(hs), median(es)
	if len(c.PairRatios) == 0 {
		return c
	}
	ratios := slices.Clone(c.PairRatios)
	r := median(ratios) // sorts ratios
	c.RatioMin, c.RatioMax = ratios[0], ratios[len(ratios)-1]
	if (higher && r > 1+minNoise) || (!higher && r < 1-minNoise) {
		c.Flag = FlagBaselineLost
	} else {
		c.Ratio = r
	}
	return c
}

// compare lines up each hapticd figure with its baseline.
func compare(r RunReport) []Comparison {
	var out []Comparison
	for _, f := range pairedFigures {
		out = append(out, comparePairs(r.Pairs, f.figure, f.unit, f.higher, f.get))
	}
	// higher says whether a larger value is better for this figure: a
	// baseline that is a floor is never beaten beyond the noise.
	add := func(figure, unit string, h float64, baseline string, b float64, ok, higher bool, tol float64) {
		c := Comparison{Figure: figure, Unit: unit, Hapticd: h, Baseline: baseline}
		if !ok {
			c.Baseline = "-"
			out = append(out, c)
			return
		}
		c.Base = b
		lost := b > 0 && ((higher && h > b*(1+tol)) || (!higher && h < b*(1-tol)))
		switch {
		case lost:
			c.Flag = FlagBaselineLost
		case b != 0:
			c.Ratio = h / b
		}
		out = append(out, c)
	}
	if r.Loop != nil {
		b := r.BareLoop
		has := b != nil
		var bl BareLoop
		if has {
			bl = *b
		}
		add("loop period p50 (median device)", "µs", r.Loop.PeriodP50UsMedian, "bare loop", bl.PeriodUsP50, has, false, minNoise)
		add("loop period p99 (worst device)", "µs", r.Loop.PeriodP99UsWorst, "bare loop", bl.PeriodUsP99, has, false, minNoise)
		add("loop overruns (worst device)", "%", 100*r.Loop.OverrunFractionWorst, "bare loop", 100*bl.OverrunFraction(), has, false, minNoise)
		// No step-cost row: the service's arms move under the clients'
		// commands while the bare loop's rest (and sleep), so the two
		// step costs measure different work. `hapticbench arms` compares
		// step costs on the same motion.
		if ll := r.BareLoopLoaded; ll != nil {
			// The same hapticd figures, beside a bare loop that bore the
			// clients' load too (the echo serving them).
			add("loop period p99 (worst device)", "µs", r.Loop.PeriodP99UsWorst, loadedBaseline, ll.PeriodUsP99, true, false, minNoise)
			add("loop overruns (worst device)", "%", 100*r.Loop.OverrunFractionWorst, loadedBaseline, 100*ll.OverrunFraction(), true, false, minNoise)
		}
	}
	if r.Process != nil && r.BareLoop != nil {
		// What stepping the arms alone costs over the same window.
		stepCPU := r.BareLoop.NsPerStep * float64(r.BareLoop.Arms) * r.BareLoop.LoopHz * r.Config.DurationS / 1e9
		add("service CPU", "s", r.Process.CPUSeconds, "arm stepping", stepCPU, true, false, minNoise)
	}
	return out
}
