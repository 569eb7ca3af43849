// Command hapticd is the haptic device control service: simulated and real
// arms and grips, served over HTTP and WebSocket on loopback.
//
//	hapticd                     run the service (one simulated arm and grip)
//	hapticd help                list the subcommands (cli.go holds their table)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/transport"
)

// version is hapticd's own version (the API it emulates is actors.APIVersion).
// Release builds stamp it: -ldflags "-X main.version=1.2.3".
var version = "0.1.0"

func main() { exit(run(os.Args[1:], os.Stdout)) }

// listFlag is a repeatable, comma-separable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*l = append(*l, part)
		}
	}
	return nil
}

type options struct {
	bind                         string
	port, legacyPort, eventsPort int
	stateDir                     string
	simArms, simGrips            int
	simMotion                    sim.Motion
	simEffects                   simEffects
	loopHz                       int
	logLevel, logFormat          string
	typeAlias                    listFlag
	typeNames                    string
	allowOrigins, allowHosts     listFlag
	eventRing                    int
	maxConnections               int
	hwPorts                      listFlag
	hwScanPeriod                 time.Duration
	writeTimeout                 time.Duration
	emulateArms                  int
	// emulate is --emulate as given; emulated is what to emulate once
	// --emulate-arms is folded in.
	emulate, emulated sim.Fleet
	realtimePriority  int
	record            string
	lab               labOptions

	// sim is --sim as given; fleet is what to simulate once the
	// shorthands (--sim-arms, --sim-grips) are folded in.
	sim, fleet sim.Fleet
	// simMotionSet is true when --sim-motion was given: then it moves
	// every simulated device, else only grips move (simMotion).
	simMotionSet bool

	// wrapStore, set by tests only (no flag), wraps the state directory's
	// store (actors.Options.WrapStore): a disk slow to take one document.
	wrapStore func(actors.Store) actors.Store
}

// maxLoopHz is the fastest loop the service runs (--loop-hz); the pacer
// holds 1 to 8 kHz on these machines.
const maxLoopHz = 8000

// maxEventRing bounds --event-ring. The ring is allocated whole at start
// (120 bytes a slot before the events' data), and every events socket
// that asks ?since=0 copies all of it: 65,536 (16 times the default) is
// 7.5 MB a socket, where 2,000,000,000 was a 240 GB allocation.
const maxEventRing = 65536

func parseFlags(args []string) (*options, error) {
	o := &options{}
	fs := newFlagSet("serve")
	fs.StringVar(&o.bind, "bind", "127.0.0.1", "address every listener binds; keep loopback unless you know why")
	fs.IntVar(&o.port, "port", 10001, "3.x HTTP and simulation WebSocket port (0: a free port)")
	fs.IntVar(&o.legacyPort, "legacy-port", 10000, "legacy 3.0 API port (0: a free port, negative: off)")
	fs.IntVar(&o.eventsPort, "events-port", 10020, "events WebSocket port (0: a free port, negative: off)")
	fs.StringVar(&o.stateDir, "state-dir", defaultStateDir(), "directory for durable configuration")
	fs.DurationVar(&o.writeTimeout, "write-timeout", actors.DefaultWriteTimeout, fmt.Sprintf("how long a config or settings write waits for the state directory's disk (%v..%v): past it the write is called off, not applied, and answered 503; a session's end and the shutdown wait no longer for profile writes", actors.MinWriteTimeout, actors.MaxWriteTimeout))
	fs.Var(&o.sim, "sim", "what to simulate, family=count pairs: inverse3, minverse, inverse3x, verse_grip (wired), wireless_verse_grip; e.g. inverse3=2,minverse=1,verse_grip=1 (given: no default devices)")
	fs.IntVar(&o.simArms, "sim-arms", 1, "number of simulated arms (Inverse3): short for --sim inverse3=N")
	fs.IntVar(&o.simGrips, "sim-grips", 1, "number of simulated wireless grips: short for --sim wireless_verse_grip=N")
	fs.Var(&o.simMotion, "sim-motion", "scripted hand on simulated devices: none, circle or random (unset: arms rest, grips rock and click as in a hand)")
	fs.Var(&o.simEffects, "sim-effects", "capacity runs: hold every simulated arm (device_busy to clients) with a zero force and these effects rendered by its loop, comma-separated: wall (through each arm's workspace centre, 2000 N/m), damper (2 N·s/m); see hapticbench arms --effects")
	fs.IntVar(&o.loopHz, "loop-hz", 1000, "real-time loop rate in Hz (1..8000)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.logFormat, "log-format", "console", "console or json")
	fs.Var(&o.typeAlias, "type-alias", "extra device-type names accepted on input, e.g. haptic=arm3 (repeatable, or comma-separated: haptic=arm3,stylus=grip)")
	fs.StringVar(&o.typeNames, "type-names", "haply", "device-type names written: haply (inverse3, verse_grip, wireless_verse_grip) or reference (arm3, grip)")
	fs.Var(&o.allowOrigins, "allow-origin", "browser origin allowed besides loopback (repeatable)")
	fs.Var(&o.allowHosts, "allow-host", "Host header allowed besides loopback (repeatable)")
	fs.IntVar(&o.eventRing, "event-ring", 4096, fmt.Sprintf("recent events kept for ?since= replay (1..%d)", maxEventRing))
	fs.IntVar(&o.maxConnections, "max-connections", transport.DefaultMaxConnections, "connections each listener serves at once, WebSockets and idle keep-alives included; past it a new one is answered 503 with Retry-After (but /healthz, /readyz and /metrics, served)")
	fs.Var(&o.hwPorts, "hw-port", "serial port of a real device to open (repeatable)")
	fs.DurationVar(&o.hwScanPeriod, "hw-scan-period", time.Second, "how often to scan for USB devices (0: no scan)")
	fs.Var(&o.emulate, "emulate", "development: devices to emulate on pseudo-terminals and drive through the real serial drivers, family=count pairs as --sim takes: inverse3, minverse, inverse3x, verse_grip, wireless_verse_grip; e.g. inverse3=1,minverse=1,verse_grip=1 (Linux)")
	fs.IntVar(&o.emulateArms, "emulate-arms", 0, "development: emulate N Inverse3 arms on pseudo-terminals: short for --emulate inverse3=N")
	fs.IntVar(&o.realtimePriority, "realtime-priority", 0, "run loop threads SCHED_FIFO at this priority, 1..99 (needs CAP_SYS_NICE; 0: normal scheduling)")
	fs.StringVar(&o.record, "record", "", "record everything from start to an MCAP file in this directory (POST /recordings records on demand, into STATE-DIR/recordings by default)")
	o.lab.register(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return nil, err
	}
	if err := o.lab.check(); err != nil {
		return nil, err
	}
	if o.loopHz < 1 || o.loopHz > maxLoopHz {
		return nil, fmt.Errorf("--loop-hz %d is out of range 1..%d", o.loopHz, maxLoopHz)
	}
	if o.eventRing < 1 || o.eventRing > maxEventRing {
		return nil, fmt.Errorf("--event-ring %d is out of range 1..%d (each events socket replaying ?since=0 copies the whole ring)", o.eventRing, maxEventRing)
	}
	if o.maxConnections < 1 {
		return nil, fmt.Errorf("--max-connections %d must be 1 or more (default %d)", o.maxConnections, transport.DefaultMaxConnections)
	}
	if err := actors.CheckWriteTimeout(o.writeTimeout); err != nil {
		return nil, fmt.Errorf("--write-timeout: %w", err)
	}
	if o.hwScanPeriod < 0 {
		return nil, fmt.Errorf("--hw-scan-period %v must not be negative (0: no scan)", o.hwScanPeriod)
	}
	if o.simArms < 0 || o.simGrips < 0 || o.emulateArms < 0 {
		return nil, errors.New("--sim-arms, --sim-grips and --emulate-arms must not be negative")
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	o.simMotionSet = given["sim-motion"]
	fleet, err := simFleet(o, given)
	if err != nil {
		return nil, err
	}
	o.fleet = fleet
	if o.emulated, err = emulatedFleet(o, given); err != nil {
		return nil, err
	}
	if o.realtimePriority < 0 || o.realtimePriority > 99 {
		return nil, fmt.Errorf("--realtime-priority %d is out of range 0..99", o.realtimePriority)
	}
	if o.port < 0 {
		return nil, errors.New("--port must not be negative: the 3.x API is always served")
	}
	return o, nil
}

func serve(args []string) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	log, err := newLogger(o.logLevel, o.logFormat, os.Stderr)
	if err != nil {
		return err
	}
	return serveUntilSignal(o, log, nil)
}

// serveUntilSignal starts the service, lets more run on it (replay adds
// its devices), logs ready and serves until one of stopSignals arrives. A
// signal during the start stops it there: what was started is shut down, no
// ready line is logged, and the exit is as clean as a stop after ready.
// SIGQUIT first writes every goroutine's stack to stderr, as Go's default
// does, and the clean stop then answers errQuitDumped.
func serveUntilSignal(o *options, log zerolog.Logger, more func(*service) error) error {
	// Catch signals before any listener answers: a supervisor (or a test)
	// that sees the port up and sends SIGTERM at once must get a clean
	// shutdown, not the default action that kills the process mid-write.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, stopSignals()...)
	defer signal.Stop(sig)
	ignoreBrokenLogPipe()
	// The start reads the signal through ctx: a large fleet takes seconds
	// to add, and a Ctrl-C then must not wait for the ready line.
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	served := make(chan struct{})
	defer close(served)
	go watchSignals(sig, cancel, served, signalActions{log: log, dump: os.Stderr, exit: os.Exit})
	sv, err := startService(ctx, o, log)
	if errors.Is(err, errStoppedDuringStart) {
		return stoppedBy(ctx, nil)
	}
	if err != nil {
		return err
	}
	if more != nil {
		if err := more(sv); err != nil {
			return sv.stop(err)
		}
	}
	if ctx.Err() != nil {
		// A signal after the listeners (a supervisor that saw the port
		// up) or during more's work: as clean a stop as after ready.
		if err := sv.stopBeforeReady(ctx, ""); !errors.Is(err, errStoppedDuringStart) {
			return err
		}
		return stoppedBy(ctx, nil)
	}
	releaseStartGarbage()
	logReady(log, sv)

	<-ctx.Done()
	log.Info().Str("signal", signalOf(ctx)).Msg("shutting down")
	return stoppedBy(ctx, sv.stop(nil))
}

// signalActions is what watchSignals does beside cancelling the serving
// context: log, dump the goroutines, end the process (os.Exit; a test's
// stand-in).
type signalActions struct {
	log  zerolog.Logger
	dump io.Writer
	exit func(code int)
}

// watchSignals turns the first stop signal into the serving context's
// cancel, and keeps reading until served is closed (serveUntilSignal has
// returned): a stop that hangs (a disk that does not answer; the stop's
// waits are bounded by stopBudget, a wedged goroutine is not) must still
// leave the operator Go's own way out. A second SIGQUIT dumps every
// goroutine's stack and exits 2 at once, as Go's default does; another
// stop signal only says that the stop is under way and how to end it now.
// A SIGQUIT's dump is written before the stop it asks for, so it shows
// what was running when the user asked; dump may be gone (EPIPE): no
// matter, the stop goes on.
func watchSignals(sig <-chan os.Signal, cancel context.CancelCauseFunc, served <-chan struct{}, do signalActions) {
	stopping := false
	for {
		select {
		case s := <-sig:
			if s == dumpSignal {
				_ = pprof.Lookup("goroutine").WriteTo(do.dump, 2)
				if stopping {
					do.log.Error().Str("signal", s.String()).Msg("stop under way did not end: goroutines dumped, exiting now")
					do.exit(2)
					return
				}
			}
			if stopping {
				do.log.Warn().Str("signal", s.String()).Dur("stop_budget", stopBudget).
					Msg("already stopping; send SIGQUIT to dump the goroutines and exit now")
				continue
			}
			stopping = true
			cancel(stopSignal{s})
		case <-served:
			return
		}
	}
}

// errQuitDumped ends a clean stop asked for by SIGQUIT: the process exits
// 2 as Go's own SIGQUIT dump does, so a supervisor that restarts a service
// that failed (systemd's Restart=on-failure) brings it back after a dump
// asked for while debugging, and a script sees that it did not end by an
// ordinary stop.
var errQuitDumped = errors.New("stopped cleanly after the goroutine dump SIGQUIT asked for")

// stoppedBy is what a stop that ended with err answers for the signal that
// ended ctx: a failed stop's err first, else errQuitDumped for SIGQUIT.
func stoppedBy(ctx context.Context, err error) error {
	var s stopSignal
	if err == nil && errors.As(context.Cause(ctx), &s) && s.sig == dumpSignal {
		return errQuitDumped
	}
	return err
}

// stopSignal is the cause of the serving context's end: the signal that
// asked for the stop.
type stopSignal struct{ sig os.Signal }

func (s stopSignal) Error() string { return "stopped by " + s.sig.String() }

// signalOf names the signal that ended ctx ("" if none did).
func signalOf(ctx context.Context) string {
	var s stopSignal
	if errors.As(context.Cause(ctx), &s) {
		return s.sig.String()
	}
	return ""
}

// errStoppedDuringStart is what startService answers once it has shut down
// cleanly because its context ended: a stop asked for, not a failure.
var errStoppedDuringStart = errors.New("stopped during the start")

// stopBeforeReady shuts down what the start has brought up after ctx
// ended before the ready line (progress says how far it got, for the log).
// It answers errStoppedDuringStart when the shutdown went cleanly, the
// shutdown's errors otherwise.
func (sv *service) stopBeforeReady(ctx context.Context, progress string) error {
	ev := sv.log.Info().Str("signal", signalOf(ctx))
	if progress != "" {
		ev = ev.Str("started", progress)
	}
	ev.Msg("shutting down before ready")
	if err := sv.stop(nil); err != nil {
		return err
	}
	return errStoppedDuringStart
}

// logReady logs the line that says everything listens (also under the
// Windows service).
func logReady(log zerolog.Logger, sv *service) {
	ev := log.Info().Int("arms", len(sv.svc.Devices().OfType(protocol.TypeArm))).Int("grips", len(sv.svc.Devices().OfType(protocol.TypeGrip)))
	if sv.lab != nil {
		// A gateway's start lists its nodes' devices: say which nodes it
		// did not wait for.
		_, detail := sv.lab.Ready()
		ev = ev.Str("lab", detail)
	}
	ev.Msg("ready")
}

// service is a running hapticd: actors, listeners and hardware.
type service struct {
	log      zerolog.Logger
	svc      *actors.Service
	srv      *transport.Server
	hardware *hardware
	lab      lab            // nil in standalone
	dirLock  *store.DirLock // nil without a state directory
}

// startService wires everything the flags ask for and starts serving. It
// watches ctx between the simulated devices it adds and before the
// listeners start: once ctx ends it shuts down what it started and
// answers errStoppedDuringStart.
func startService(ctx context.Context, o *options, log zerolog.Logger) (*service, error) {
	tuneGC(os.LookupEnv)
	aliases, err := protocol.ParseTypeAliases(strings.Join(o.typeAlias, ","))
	if err != nil {
		return nil, fmt.Errorf("--type-alias: %w", err)
	}
	naming, err := protocol.ParseNaming(o.typeNames)
	if err != nil {
		return nil, fmt.Errorf("--type-names: %w", err)
	}
	types, err := protocol.NewNamedTypeTable(naming, aliases)
	if err != nil {
		return nil, fmt.Errorf("--type-alias: %w", err)
	}
	// Before anything reads the state directory: a second process on it
	// would write over what this one acknowledged.
	var dirLock *store.DirLock
	if o.stateDir != "" {
		dirLock, err = store.Lock(o.stateDir)
		switch {
		case errors.Is(err, store.ErrLockUnsupported):
			log.Warn().Err(err).Msg("running without a lock on the state directory")
		case err != nil:
			return nil, err
		}
	}
	hardware, err := newHardware(o, log)
	if err != nil {
		_ = dirLock.Release()
		return nil, err
	}
	svc, err := actors.Start(actors.Options{
		StateDir:         o.stateDir,
		LoopHz:           o.loopHz,
		Types:            types,
		Log:              log,
		EventRingSize:    o.eventRing,
		OnDeviceLost:     hardware.onDeviceLost,
		SimShards:        runtime.NumCPU(),
		SimProcs:         loop.NewProcs(), // one service a process
		RealtimePriority: o.realtimePriority,
		WriteTimeout:     o.writeTimeout,
		WrapStore:        o.wrapStore,
	})
	if err != nil {
		hardware.closeEmulators()
		_ = dirLock.Release()
		return nil, err
	}
	if o.realtimePriority > 0 && !loop.RealtimeGranted(o.realtimePriority) {
		// Otherwise only GET /stats' "realtime": false per loop says so.
		log.Warn().Int("priority", o.realtimePriority).Msg("--realtime-priority: the OS refused SCHED_FIFO (it needs CAP_SYS_NICE, or a LimitRTPRIO / RLIMIT_RTPRIO of at least the priority; on this OS it may not exist): the loops run at normal priority")
	}
	sv := &service{log: log, svc: svc, hardware: hardware, dirLock: dirLock}
	log.Info().Str("state_dir", o.stateDir).Int("loop_hz", o.loopHz).Msg("state directory")

	periodS := 1 / float64(o.loopHz)
	total, added := 0, 0
	for _, e := range o.fleet.Sorted() {
		total += e.Count
	}
	for _, e := range o.fleet.Sorted() {
		for i := 0; i < e.Count; i++ {
			if ctx.Err() != nil {
				return nil, sv.stopBeforeReady(ctx, fmt.Sprintf("%d of %d simulated devices", added, total))
			}
			dev := sim.NewDevice(e.Family, o.lab.simIndexBase+i, sim.ArmOptions{PeriodS: periodS, Motion: simMotion(o, e.Family), Seed: int64(i)})
			d, err := svc.AddDevice(dev, false)
			if err != nil {
				return nil, sv.stop(fmt.Errorf("simulated %s %d: %w", e.Family, i, err))
			}
			if len(o.simEffects) > 0 && d.Info.Kind == hw.KindArm {
				if err := holdWithEffects(d, o.simEffects); err != nil {
					return nil, sv.stop(fmt.Errorf("simulated %s %d: %w", e.Family, i, err))
				}
			}
			added++
		}
	}
	if ctx.Err() != nil {
		return nil, sv.stopBeforeReady(ctx, fmt.Sprintf("%d of %d simulated devices", added, total))
	}
	hardware.start(svc)

	var labReady labReadiness
	sv.srv, err = transport.Start(transport.Config{
		Service:      svc,
		Log:          log,
		Bind:         o.bind,
		Port:         o.port,
		LegacyPort:   o.legacyPort,
		EventsPort:   o.eventsPort,
		AllowOrigins: o.allowOrigins,
		AllowHosts:   o.allowHosts,
		Build:        transport.ReadBuildInfo(version),
		RecordDir:    recordDir(o),
		RecordAll:    o.record != "",

		MaxConnections: o.maxConnections,
		Ports:          hardware.ports(),
		Lab:            labReady.check(o.lab.role),
	})
	if err != nil {
		return nil, sv.stop(err)
	}
	if sv.lab, err = startLab(&o.lab, svc, "http://"+sv.srv.Addr("http").String(), labBuild(), browserAllowed{o.allowOrigins, o.allowHosts}, log); err != nil {
		return nil, sv.stop(err)
	}
	if sv.lab != nil {
		started := sv.lab // the check keeps its own copy, whatever becomes of sv
		labReady.started.Store(&started)
		// A gateway lists its nodes' devices before it says it is ready,
		// as /readyz does (a node down at its start is not waited for
		// past --cluster-node-timeout, nor one refused for its build,
		// which /readyz names while it lasts).
		if err := waitLabReady(ctx, sv.lab); err != nil {
			return nil, sv.stopBeforeReady(ctx, "listeners and the cluster link")
		}
	}
	return sv, nil
}

// labReadiness is /readyz's lab check: not ready until the lab started
// (the listeners answer before), then the lab's own word.
type labReadiness struct{ started atomic.Pointer[lab] }

// check is the transport's Lab check for role: nil in standalone.
func (r *labReadiness) check(role string) func() (bool, string) {
	if role == "standalone" {
		return nil
	}
	return func() (bool, string) {
		l := r.started.Load()
		if l == nil {
			return false, "the cluster link is starting"
		}
		return (*l).Ready()
	}
}

// waitLabReady waits until l's start is over (lab.Started) or ctx ends
// (ctx's error then).
func waitLabReady(ctx context.Context, l lab) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, _ := l.Started(); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// recordDir is where recordings go: --record's directory, else the state
// directory's recordings/.
func recordDir(o *options) string {
	if o.record != "" {
		return o.record
	}
	if o.stateDir == "" {
		return ""
	}
	return filepath.Join(o.stateDir, "recordings")
}

// stopBudget bounds the stop's waits for the loops, the handed-off work
// and the listeners; the state directory's disk is bounded by
// --write-timeout instead (actors.Service.Shutdown), which may take the
// stop past it. listenersStop is what the listeners get at least: an
// events socket's queue 1 s, its close 2 s (transport/events ShutFor).
const (
	stopBudget    = 5 * time.Second
	listenersStop = 3 * time.Second
)

// stop shuts down in the order STYLE.md 15 gives: no new hardware, sockets
// closed, devices to zero force and state flushed, listeners stopped, then
// the emulated arms unplugged. It returns cause joined with what failed.
//
// Recordings stop with the listeners (srv.Shutdown's StopAll), after
// svc.Shutdown halted every device: each device's halt is the last state
// its taps get (loop.Tap), so a recording running at the stop ends with
// every arm at the zero force the stop left it at. Stopping them before
// the halt would end their files on the release's ramp.
func (sv *service) stop(cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopBudget)
	defer cancel()
	var errs []error
	if cause != nil {
		errs = append(errs, cause)
	}
	sv.hardware.stop()
	if sv.lab != nil {
		sv.lab.Close() // no more commands from or states to the lab
	}
	if sv.srv != nil {
		// The events sockets stay until the service has stopped: their
		// watchers read the sessions' ends first (srv.Shutdown closes them).
		sv.srv.CloseSessionSockets()
	}
	if err := sv.svc.Shutdown(ctx); err != nil {
		errs = append(errs, err)
	}
	if sv.srv != nil {
		// A budget of their own if the service's stop used the common
		// one: a disk that took its time (within --write-timeout) over
		// the state is no reason to cut the listeners short.
		lctx := ctx
		if by, _ := ctx.Deadline(); time.Until(by) < listenersStop {
			var lcancel context.CancelFunc
			lctx, lcancel = context.WithTimeout(context.Background(), listenersStop)
			defer lcancel()
		}
		if err := sv.srv.Shutdown(lctx); err != nil {
			errs = append(errs, err)
		}
	}
	sv.hardware.closeEmulators()
	if err := sv.dirLock.Release(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		sv.log.Info().Msg("stopped")
	}
	return errors.Join(errs...)
}
