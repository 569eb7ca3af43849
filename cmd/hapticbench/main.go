package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hapticd/hapticd/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var usage usageError
	switch {
	case err == nil:
	case errors.As(err, &usage):
		fmt.Fprintln(os.Stderr, "hapticbench:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "hapticbench:", err)
		os.Exit(1)
	}
}

// usageError is a mistake on the command line (exit status 2).
type usageError struct{ error }

const usageText = `usage:
  hapticbench run  [flags]   drive lock-step sessions against hapticd, beside the echo and bare-loop baselines
  hapticbench arms [flags]   find how many simulated arms the service steps at --loop-hz with under 1 % overruns
  hapticbench device [flags] time the service's hardware loop from the arm's side, beside a bare host loop
  hapticbench lease [flags]  measure how soon a stalled client's force is at zero, over many stalls
  hapticbench lab [flags]    lock-step through a gateway (--role gateway) against the node directly, in one run
  hapticbench zwidth [flags] the stiffest stable wall: a client's, the loop's effect, with passivity (virtual time, or --target)
run "hapticbench COMMAND -h" for a command's flags`

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usageError{errors.New(usageText)}
	}
	var err error
	switch args[0] {
	case "run":
		err = runCommand(ctx, args[1:], stdout, stderr)
	case "arms":
		err = armsCommand(ctx, args[1:], stdout, stderr)
	case "device":
		err = deviceCommand(ctx, args[1:], stdout, stderr)
	case "lease":
		err = leaseCommand(ctx, args[1:], stdout, stderr)
	case "lab":
		err = labCommand(ctx, args[1:], stdout, stderr)
	case "zwidth":
		err = zwidthCommand(ctx, args[1:], stdout, stderr)
	case "echo-serve":
		err = echoServeCommand(args[1:], os.Stdin, stdout, stderr)
	case "-h", "-help", "--help", "help":
		if len(args) == 2 && args[0] == "help" && args[1] != "help" {
			// help CMD: CMD's flags, as CMD -h prints them.
			return dispatch(ctx, []string{args[1], "-h"}, stdout, stderr)
		}
		fmt.Fprintln(stdout, usageText)
		return nil
	default:
		return usageError{fmt.Errorf("unknown command %q\n%s", args[0], usageText)}
	}
	if errors.Is(err, flag.ErrHelp) {
		return nil // -h printed the flags: asked for, so not a failure
	}
	return err
}

// parseArgs parses a command's flags and refuses stray arguments. It
// returns flag.ErrHelp for -h (the flags are printed already) and a
// usageError for a bad command line.
func parseArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("%s: unexpected arguments %q", strings.TrimPrefix(fs.Name(), "hapticbench "), fs.Args())}
	}
	var bad error
	fs.Visit(func(f *flag.Flag) {
		if !positiveFlags[f.Name] || bad != nil {
			return
		}
		g, ok := f.Value.(flag.Getter)
		if !ok {
			return
		}
		var positive bool
		switch v := g.Get().(type) {
		case int:
			positive = v > 0
		case float64:
			positive = v > 0
		case time.Duration:
			positive = v > 0
		default:
			return
		}
		if !positive {
			// The library reads zero as "the default": given on the
			// command line, it was run with the default instead, silently.
			bad = usageError{fmt.Errorf("--%s %s: must be more than 0 (leave it out for the default, %s)", f.Name, f.Value, f.DefValue)}
		}
	})
	return bad
}

// positiveFlags are the flags whose value must be above zero when given.
var positiveFlags = map[string]bool{
	"pairs": true, "duration": true, "loop-hz": true, "window": true, "max": true,
	"repeats": true, "stalls": true, "threads": true,
}

// emit prints a report's table and, with --json, writes its JSON to
// jsonPath. With "--json -" the JSON goes to stdout and the table to
// stderr, so stdout holds one JSON document a pipe can parse.
func emit(rep report, jsonPath string, stdout, stderr io.Writer) error {
	table := stdout
	if jsonPath == "-" {
		table = stderr
	}
	if err := rep.WriteTable(table); err != nil {
		return err
	}
	switch jsonPath {
	case "":
		return nil
	case "-":
		return bench.WriteJSON(stdout, rep)
	}
	return writeFile(jsonPath, func(w io.Writer) error { return bench.WriteJSON(w, rep) })
}

func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("hapticbench run", stderr)
	var o bench.RunOptions
	if exe, err := os.Executable(); err == nil {
		o.EchoCommand = []string{exe, "echo-serve"}
	}
	fs.StringVar(&o.Target, "target", "", "URL of a running hapticd (ws://127.0.0.1:10001/); empty starts one")
	hapticdFlag(fs, &o.Hapticd, "hapticd binary to start and to run baseline-arms with")
	fs.IntVar(&o.Arms, "arms", 1, "simulated arms of the started hapticd")
	fs.IntVar(&o.Clients, "clients", 1, "controlling sessions; client i commands arm i mod arms")
	fs.IntVar(&o.Observers, "observers", 0, "sessions that only probe positions")
	fs.Float64Var(&o.RateHz, "rate", 0, "lock-step ticks per second per session; 0 is as fast as possible (timer pacing holds up to about 1 kHz)")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&o.Warmup, "warmup", 2*time.Second, "time run before measuring (not recorded)")
	fs.Float64Var(&o.LoopHz, "loop-hz", 1000, "device loop rate of the started hapticd")
	fs.DurationVar(&o.FrameTimeout, "frame-timeout", 5*time.Second, "a frame not received within this is lost")
	fs.BoolVar(&o.NoEcho, "no-echo", false, "skip the echo baseline")
	fs.BoolVar(&o.NoBareLoop, "no-bare-loop", false, "skip the bare-loop baseline")
	fs.BoolVar(&o.PerDevice, "per-device", false, "keep every device's loop figures in the JSON")
	fs.BoolVar(&o.Subscribe, "subscribe", false, "each session subscribes to its own arm (session.configure.subscribe): frames carry one arm")
	jsonPath := fs.String("json", "", "also write the report as JSON to this file (- for stdout, with the table on stderr)")
	sweep := fs.String("sweep", "", "run once per client or arm count, e.g. clients=1,10,50,100 or arms=1,100,1000")
	fs.IntVar(&o.Pairs, "pairs", bench.DefaultPairs, "hapticd and echo runs, alternated (hapticd, echo, hapticd, …); each ratio is the median of the pairs' ratios, every pair printed")
	state := fs.String("state", "", "arm state fields every session subscribes to, comma-separated (session.configure.subscribe.state), e.g. cursor_position,cursor_velocity")
	cpus := fs.String("cpus", "", "placement: empty or any (the kernel's), shared (clients and servers on one CPU) or split (clients on one CPU, servers on the others)")
	plot := fs.String("plot", "", "with --sweep, write an SVG plot of RTT percentiles and achieved rate to this file")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *plot != "" && *sweep == "" {
		return usageError{errors.New("run: --plot draws a sweep; add --sweep clients=1,10,50,100 or arms=1,100,1000")}
	}
	var err error
	if o.CPUs, err = bench.ParsePlacement(*cpus); err != nil {
		return usageError{err}
	}
	if *state != "" {
		o.StateFields = strings.Split(*state, ",")
	}
	if !*quiet {
		o.Progress = stderr
		o.Live = isTerminal(stderr)
	}

	if *sweep != "" {
		spec, err := bench.ParseSweep(*sweep)
		if err != nil {
			return usageError{err}
		}
		rep, err := bench.Sweep(ctx, o, spec)
		if err != nil {
			return err
		}
		if err := emit(rep, *jsonPath, stdout, stderr); err != nil {
			return err
		}
		if *plot != "" {
			if err := writeFile(*plot, rep.WriteSVG); err != nil {
				return err
			}
		}
		for _, p := range rep.Points {
			if err := contractError(p); err != nil {
				return err
			}
		}
		return nil
	}

	rep, err := bench.Run(ctx, o)
	if err != nil {
		return err
	}
	if err := emit(rep, *jsonPath, stdout, stderr); err != nil {
		return err
	}
	return contractError(rep)
}

// contractError fails the command when hapticd broke the one-frame-per-
// message contract or answered with errors.
func contractError(r bench.RunReport) error {
	o := r.Hapticd.Overall
	if o.Lost+o.OutOfOrder+o.ErrorFrames == 0 {
		return nil
	}
	return fmt.Errorf("hapticd at %d clients: %d frames lost, %d out of order, %d with errors; see the session lines above",
		r.Config.Clients, o.Lost, o.OutOfOrder, o.ErrorFrames)
}

func armsCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("hapticbench arms", stderr)
	var o bench.CapacityOptions
	hapticdFlag(fs, &o.Hapticd, "hapticd binary")
	fs.Float64Var(&o.LoopHz, "loop-hz", 1000, "device loop rate to hold")
	fs.IntVar(&o.Max, "max", 32768, "largest number of arms to try (a baseline still passing there makes the ratio an upper bound, printed ≤)")
	fs.DurationVar(&o.Window, "window", 3*time.Second, "measured time per probe")
	fs.DurationVar(&o.Settle, "settle", time.Second, "time a started hapticd runs before each window")
	fs.Float64Var(&o.OverrunLimit, "overrun-limit", 0.01, "overrun fraction a probe must stay under")
	fs.IntVar(&o.Pairs, "pairs", bench.DefaultPairs, "searches of both sides, each pair's two in lockstep (a probe of one, then of the other; pairs alternate which goes first); the ratio is the median of the pairs' ratios, every pair and probe printed")
	fs.IntVar(&o.Repeats, "repeats", 3, "most windows a probe takes unless its first passes far under the line (see --near); it passes by their median (odd; 1: one window per probe)")
	fs.Float64Var(&o.Near, "near", 3, "a first window under --overrun-limit divided by this passes its probe alone; any other takes more windows (1 or more)")
	fs.Float64Var(&o.Precision, "precision", 0.05, "the bisection stops once the bracket is within this fraction of the passing N")
	fs.IntVar(&o.Retries, "retries", 0, "re-run a probe the median failed this many times, keeping the first pass (biased toward passing: --repeats is the noise guard); 0 for none")
	fs.BoolVar(&o.NoBareLoop, "no-bare-loop", false, "skip the bare-loop baseline")
	fs.StringVar(&o.Motion, "sim-motion", "none", "scripted hand on the arms, in hapticd and in the bare loop alike: none (arms at rest), circle or random")
	fs.StringVar(&o.Effects, "effects", "", "effects every arm renders, in hapticd (--sim-effects, arms held by the service) and in the bare loop alike: wall, damper (comma-separated; empty: none)")
	return reportCommand(fs, args, stdout, stderr, &o.Progress, func() (report, error) {
		if err := o.Validate(); err != nil {
			return nil, usageError{err}
		}
		return bench.Capacity(ctx, o)
	})
}

func deviceCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("hapticbench device", stderr)
	var o bench.DeviceOptions
	hapticdFlag(fs, &o.Hapticd, "hapticd binary")
	fs.Float64Var(&o.LoopHz, "loop-hz", 1000, "device loop rate of hapticd and the bare host loop")
	fs.IntVar(&o.Arms, "arms", 0, "simulated arms beside the stand-in, for the client load")
	fs.IntVar(&o.Clients, "clients", 0, "controlling sessions on the simulated arms during the window (0: no load)")
	fs.Float64Var(&o.RateHz, "rate", 1000, "lock-step ticks per second per client; 0 is as fast as possible")
	fs.Float64Var(&o.ProbeRateHz, "probe-rate", 0, "force commands per second of the client timed from its send to the stand-in's force frame (default: --loop-hz; -1: no probe)")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured time")
	fs.DurationVar(&o.Warmup, "warmup", 2*time.Second, "time run before measuring")
	return reportCommand(fs, args, stdout, stderr, &o.Progress, func() (report, error) { return bench.Device(ctx, o) })
}

func leaseCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("hapticbench lease", stderr)
	var o bench.LeaseOptions
	hapticdFlag(fs, &o.Hapticd, "hapticd binary")
	fs.StringVar(&o.Target, "target", "", "URL of a running hapticd (ws://127.0.0.1:10001/); empty starts one with one simulated arm")
	fs.IntVar(&o.Stalls, "stalls", 100, "how many times the controlling client stalls")
	fs.DurationVar(&o.Hold, "hold", 200*time.Millisecond, "how long the client commands a force before each stall")
	fs.IntVar(&o.LeaseMs, "lease-ms", 100, "the session's lease (session.configure.lease)")
	fs.Float64Var(&o.LoopHz, "loop-hz", 1000, "device loop rate of a started hapticd")
	return reportCommand(fs, args, stdout, stderr, &o.Progress, func() (report, error) { return bench.Lease(ctx, o) })
}

func labCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("hapticbench lab", stderr)
	var o bench.LabOptions
	hapticdFlag(fs, &o.Hapticd, "hapticd binary")
	fs.IntVar(&o.Arms, "arms", 1, "simulated arms on the node")
	fs.IntVar(&o.Clients, "clients", 1, "controlling sessions, on each path in turn")
	fs.Float64Var(&o.RateHz, "rate", 0, "lock-step ticks per second per session; 0 is as fast as possible")
	fs.DurationVar(&o.Duration, "duration", 5*time.Second, "measured time per path")
	fs.IntVar(&o.Pairs, "pairs", bench.DefaultPairs, "runs of each path, alternated (direct, gateway, direct, …); each ratio is the median of the pairs' ratios")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "time run before measuring each path")
	fs.Float64Var(&o.LoopHz, "loop-hz", 1000, "device loop rate of both processes")
	return reportCommand(fs, args, stdout, stderr, &o.Progress, func() (report, error) { return bench.Lab(ctx, o) })
}

func zwidthCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := commandFlags("hapticbench zwidth", stderr)
	var o bench.ZwidthOptions
	hapticdFlag(fs, &o.Hapticd, "hapticd binary whose `zwidth` subcommand runs the virtual mode")
	fs.BoolVar(&o.Realtime, "realtime", false, "measure rows A and B in real time through the WebSocket (B declares the wall as an effect) against --target, or hapticds started with one simulated arm, instead of the deterministic virtual-time mode")
	fs.StringVar(&o.Target, "target", "", "a running hapticd (ws://127.0.0.1:10001/) to measure in real time (implies --realtime)")
	fs.Float64Var(&o.DelayFrames, "delay-frames", 1, "client delay in its own frames, from reading a state to its force reaching the loop (an engine reads at a frame's start and sends at its end: 1)")
	fs.Float64Var(&o.PushN, "push", 0.5, "the user's steady push into the wall, N")
	fs.StringVar(&o.ClientHz, "client-hz", "60,90,200", "client frame rates of rows A and C, Hz")
	fs.StringVar(&o.EffectHz, "effect-hz", "1000,4000", "loop rates of rows B, Hz")
	fs.Float64Var(&o.LoopHz, "loop-hz", 1000, "the loop's rate under rows A and C, Hz")
	fs.StringVar(&o.Paths, "paths", "ABC", "rows to run: any of A (client), B (effect), C (client with passivity)")
	fs.StringVar(&o.Hand, "hand", "both", "rows without the hand model (off), with it (on), or both")
	plot := fs.String("plot", "", "also write an SVG plot of the limits beside the bounds to this file")
	var rep bench.ZwidthReport
	err := reportCommand(fs, args, stdout, stderr, &o.Progress, func() (report, error) {
		var err error
		rep, err = bench.Zwidth(ctx, o)
		return rep, err
	})
	if err != nil || *plot == "" {
		return err
	}
	return writeFile(*plot, rep.WriteSVG)
}

// report is what a command prints: a table, and JSON with --json.
type report interface{ WriteTable(io.Writer) error }

// reportCommand adds --json and --quiet to a command's flags, parses them,
// runs the command (progress lines go to stderr unless --quiet) and prints
// its report.
func reportCommand(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, progress *io.Writer, run func() (report, error)) error {
	jsonPath := fs.String("json", "", "also write the report as JSON to this file (- for stdout, with the table on stderr)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if !*quiet {
		*progress = stderr
	}
	rep, err := run()
	if err != nil {
		return err
	}
	return emit(rep, *jsonPath, stdout, stderr)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// echoServeCommand is the echo baseline's own process (started by run; not
// for users): it serves two captured frames until stdin closes.
func echoServeCommand(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := commandFlags("hapticbench echo-serve", stderr)
	inv := fs.String("inventory", "", "file with the inventory frame")
	state := fs.String("state", "", "file with the state frame")
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	if *inv == "" || *state == "" {
		return usageError{errors.New("echo-serve needs --inventory and --state")}
	}
	return bench.ServeEcho(*inv, *state, stdin, stdout)
}

// isTerminal reports whether w is a terminal, where a progress line
// rewritten in place reads well (a file or a pipe gets none).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// commandFlags is a subcommand's flag set: errors are returned, usage goes
// to stderr.
func commandFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// hapticdFlag is the --hapticd flag every subcommand that starts hapticd
// takes; use says what for, and the help adds where it is found when empty
// (bench.FindHapticd's rules).
func hapticdFlag(fs *flag.FlagSet, p *string, use string) {
	fs.StringVar(p, "hapticd", "", use+" (default: next to hapticbench, then $PATH, else go build)")
}
