package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/bench/echoserver"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/histogram"
)

// runBaselineArms implements `hapticd baseline-arms --arms N --loop-hz H
// --duration D [--threads T] [--json]`: it steps N simulated arms on T
// threads (default GOMAXPROCS, as many as the service's scheduler shards),
// each paced by absolute deadlines, with no actors, sessions or registers
// around them. It is the floor the service's scheduler is measured against,
// and lives in the service binary because the load generator may not import
// hw/sim.
//
// With --inventory and --state it is also an echo baseline serving those
// frames (bench/echoserver): the bare loop inside an echo's process, as the
// service's loop is inside the service's. It prints the echo's URL, steps
// the arms once a line arrives on stdin, prints the result, and serves
// until stdin closes.
func runBaselineArms(args []string) error {
	return baselineArms(args, os.Stdin, os.Stdout)
}

func baselineArms(args []string, in io.Reader, w io.Writer) error {
	fs := newFlagSet("baseline-arms")
	arms := fs.Int("arms", 1, "simulated arms to step each tick")
	loopHz := fs.Float64("loop-hz", 1000, "ticks per second")
	duration := fs.Duration("duration", 5*time.Second, "how long to run")
	var motion sim.Motion
	fs.Var(&motion, "motion", "scripted hand on the arms, as hapticd's --sim-motion: none, circle or random")
	var fx simEffects
	fs.Var(&fx, "effects", "effects every arm renders, as hapticd's --sim-effects: wall, damper (comma-separated)")
	threads := fs.Int("threads", runtime.GOMAXPROCS(0), "paced threads the arms are split over (the service runs one scheduler shard per GOMAXPROCS)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	inventory := fs.String("inventory", "", "with --state: also serve these frames as an echo baseline (hapticbench), and step the arms once a line arrives on stdin")
	state := fs.String("state", "", "the echo's state frame (with --inventory)")
	if err := parseNoArgs(fs, args); err != nil {
		return fmt.Errorf("baseline-arms: %w", err)
	}
	if *arms < 1 || *loopHz <= 0 || *loopHz > 1e6 || *duration <= 0 || *threads < 1 {
		return errors.New("baseline-arms: need --arms ≥ 1, --loop-hz in (0, 1e6], a positive --duration and --threads ≥ 1")
	}
	if (*inventory == "") != (*state == "") {
		return errors.New("baseline-arms: --inventory and --state go together")
	}
	lines := bufio.NewScanner(in)
	if *inventory != "" {
		echo, err := echoserver.StartFiles(*inventory, *state, w)
		if err != nil {
			return fmt.Errorf("baseline-arms: %w", err)
		}
		defer echo.Close()
		if !lines.Scan() {
			return nil // stdin closed before the loop was asked for
		}
	}
	res, err := stepBareLoops(*arms, *threads, *loopHz, *duration, motion, fx)
	if err != nil {
		return fmt.Errorf("baseline-arms: %w", err)
	}
	if err := writeBaseline(w, res, *asJSON); err != nil {
		return err
	}
	if *inventory != "" {
		for lines.Scan() { // the echo serves until stdin closes
		}
	}
	return nil
}

// writeBaseline prints a bare loop's result as one JSON object or a line of
// text.
func writeBaseline(w io.Writer, res protocol.BaselineArms, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("baseline-arms: encode result: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	b := res.Busy
	_, err := fmt.Fprintf(w, "%d arms at %g Hz: %d ticks, %d overruns, period p50 %.1f µs p99 %.1f µs, %.0f ns per arm step, pass p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f µs\n",
		res.Arms, res.LoopHz, res.Ticks, res.Overruns, res.PeriodUsP50, res.PeriodUsP99, res.NsPerStep, b.P50Us, b.P90Us, b.P99Us, b.P999Us, b.MaxUs)
	return err
}

// stepBareLoops splits the arms over threads contiguous runs and steps
// each run on its own paced thread, and reports the worst thread (the
// service's capacity is judged by its worst shard too). Ticks and Overruns
// are that thread's; NsPerStep is over all threads. With fx, every arm
// renders those effects (see bareEffects).
func stepBareLoops(arms, threads int, loopHz float64, d time.Duration, motion sim.Motion, fx simEffects) (protocol.BaselineArms, error) {
	threads = min(threads, arms)
	periodS := 1 / loopHz
	// The arms' physics states lie in one slice of values, not pointers:
	// the tightest layout the physics allows (nothing but what a step
	// touches), so this is a floor for any service layout; on huge pages when
	// asked (HAPTICD_HUGE_PAGES=1), as the service's shards' records are.
	all := loop.HugeSlice[sim.ArmCore](arms)
	for i := range all {
		// The same options hapticd's --sim-arms gives its arms.
		sim.NewArm(sim.ArmOptions{Index: i, PeriodS: periodS, Motion: motion, Seed: int64(i)}).MoveCore(&all[i])
	}
	var effects *bareEffects
	if len(fx) > 0 {
		var err error
		if effects, err = newBareEffects(arms, fx); err != nil {
			return protocol.BaselineArms{}, err
		}
	}
	results := make([]bareResult, threads)
	procs := loop.NewProcs() // as the service's, for the echo's goroutines
	var wg sync.WaitGroup
	for t := range threads {
		lo, hi := t*arms/threads, (t+1)*arms/threads
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[t] = stepBareLoop(all[lo:hi], effects.slice(lo, hi), loopHz, d, procs)
		}()
	}
	wg.Wait()
	res := protocol.BaselineArms{Arms: arms, LoopHz: loopHz}
	worst := results[0]
	var stepNs, steps float64
	for _, r := range results {
		if r.fraction() > worst.fraction() || (r.fraction() == worst.fraction() && r.p99 > worst.p99) {
			worst = r
		}
		stepNs += float64(r.stepNs)
		steps += float64(r.ticks) * float64(r.arms)
	}
	res.Ticks, res.Overruns = worst.ticks, worst.overruns
	res.PeriodUsP50, res.PeriodUsP99 = float64(worst.p50)/1e3, float64(worst.p99)/1e3
	res.Busy = worst.busy
	if steps > 0 {
		res.NsPerStep = stepNs / steps
	}
	return res, nil
}

// bareEffects is what a bare loop written to render effects on many arms
// would keep: for each arm its Set and an effect.Renderer with room for
// two effects inline, side by side in one slice (loop.BareEffects, as the
// benchmark's bare loop; separately allocated room costs such a loop
// several times more).
type bareEffects struct {
	sets []*effect.Set
	r    []loop.BareEffects
}

// newBareEffects declares fx on n arms, a Set each, as hapticd's
// --sim-effects does.
func newBareEffects(n int, fx simEffects) (*bareEffects, error) {
	e := &bareEffects{sets: make([]*effect.Set, n), r: loop.HugeSlice[loop.BareEffects](n)}
	for i := range n {
		// baseline-arms steps Inverse3s (sim.NewArm's default family).
		set, err := fx.set(simEffectsSession, hw.ArmWorkspaceCenterM())
		if err != nil {
			return nil, err
		}
		e.sets[i] = set
		e.r[i].Init()
	}
	return e, nil
}

// slice is the effects of arms [lo, hi); nil for none.
func (e *bareEffects) slice(lo, hi int) *bareEffects {
	if e == nil {
		return nil
	}
	return &bareEffects{sets: e.sets[lo:hi], r: e.r[lo:hi]}
}

// bareResult is one bare thread's run.
type bareResult struct {
	arms            int
	ticks, overruns uint64
	stepNs          int64
	p50, p99        int64
	busy            protocol.DurationStats
}

func (r bareResult) fraction() float64 {
	if r.ticks == 0 {
		return 1
	}
	return float64(r.overruns) / float64(r.ticks)
}

// stepBareLoop runs one thread's loop, paced as the service's scheduler
// shard of as many arms is: from loop.DefaultSpinFrom arms it spins the
// last stretch before each deadline on a locked thread, below it sleeps on
// the runtime's poller; a spinning thread sleeps holding its P, with a P
// lent for it (loop.Procs), as a spinning shard does. (Spinning below it, the bare loop lost to the
// service's under 100 clients: its thread woke from clock_nanosleep to
// find its P given to the echo's sessions, 2.34 against 2.10 ms period
// p99.) Each tick it gives every arm the command the service's loop gives
// an idle arm (the gravity feed-forward, with compensation on by default)
// and steps the physics only (ArmCore.Step), as the service's loop does:
// joint angles are derived only when a client reads them, and an arm at
// rest is not stepped again.
//
// With fx, each tick renders every arm's effects from its last position
// and velocity and adds them to the feed-forward, and no arm sleeps (the
// service's loop never puts an arm it renders effects for to sleep).
func stepBareLoop(arms []sim.ArmCore, fx *bareEffects, loopHz float64, d time.Duration, procs *loop.Procs) bareResult {
	spin := len(arms) >= loop.DefaultSpinFrom
	keepP := false
	if spin {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		// Sleeping holding the P, as a spinning shard of the service does.
		if keepP = procs.Hold(); keepP {
			defer procs.Release()
		}
	}
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: sim.EffectiveMassKg * hw.GravityMps2}}

	clock := loop.SystemClock()
	periodNs := int64(float64(time.Second) / loopHz)
	// Periods go into the histogram the service's loops use
	// (protocol/histogram), finer: within 0.8 %, and no allocation per tick.
	periods := histogram.New(7)
	// Passes go into a histogram as coarse as a service shard's (its
	// Stats.Busy), so that the two percentiles compare bucket for bucket.
	passes := histogram.New(3)
	p := loop.NewPacer(periodNs, clock)
	p.Spin(spin)
	p.KeepP(keepP)
	res := bareResult{arms: len(arms)}
	// An arm at rest with no scripted hand stays at rest under the same
	// command: like the service's loop, stop stepping it.
	asleep := make([]bool, len(arms))
	ff := cmd.ForceN.Z
	fxCmd := hw.Command{Mode: hw.ModeForce}
	in := effect.Input{DtNs: periodNs}
	end := clock.Now() + d.Nanoseconds()
	prev := int64(0)
	for {
		now, overrun := p.Wait()
		if now >= end {
			break
		}
		if prev != 0 {
			periods.Record(now - prev)
		}
		prev = now
		if overrun {
			res.overruns++
		}
		res.ticks++
		if fx != nil {
			in.NowNs = now
			for i := range arms {
				if j := i + loop.BarePrefetchAhead; j < len(arms) {
					loop.PrefetchBareArm(&arms[j], &fx.r[j])
				}
				a := &arms[i]
				in.PositionM, in.VelocityMps = a.Position(), a.Velocity()
				f := fx.r[i].Renderer.Render(fx.sets[i], &in, 1)
				f.Z += ff
				fxCmd.ForceN = f
				_, _ = a.Step(&fxCmd)
			}
			pass := clock.Now() - now
			res.stepNs += pass
			passes.Record(pass)
			continue
		}
		for i := range arms {
			if asleep[i] {
				continue
			}
			// A sim arm fails only after Close.
			if moved, _ := arms[i].Step(&cmd); !moved && arms[i].TimeInvariant() {
				asleep[i] = true
			}
		}
		pass := clock.Now() - now
		res.stepNs += pass
		passes.Record(pass)
	}
	res.p50, res.p99 = periods.QuantileNs(0.50), periods.QuantileNs(0.99)
	b := passes.Summary()
	res.busy = protocol.DurationStats{Count: b.Count, P50Us: float64(b.P50Ns) / 1e3, P90Us: float64(b.P90Ns) / 1e3,
		P99Us: float64(b.P99Ns) / 1e3, P999Us: float64(b.P999Ns) / 1e3, MaxUs: float64(b.MaxNs) / 1e3}
	return res
}
