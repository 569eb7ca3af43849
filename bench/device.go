package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// DeviceTiming is a host loop's period as an arm stand-in saw it.
type DeviceTiming = protocol.DeviceTiming

// DeviceOptions configure `hapticbench device`: hapticd drives an arm
// stand-in on a pseudo-terminal as real hardware while a bare host loop
// (`hapticd baseline-device`) drives a second stand-in, at the same time and
// under the same client load, and both stand-ins time every force frame.
type DeviceOptions struct {
	Hapticd string  // binary; empty searches as FindHapticd does
	LoopHz  float64 // default 1000
	Arms    int     // simulated arms beside the stand-in, for the client load
	Clients int     // controlling sessions on the simulated arms (0: none)
	RateHz  float64 // per client; 0 as fast as possible
	// ProbeRateHz is the rate of the client whose force commands are timed
	// to the stand-in arm (CommandLatency); default LoopHz, negative turns
	// the probe off.
	ProbeRateHz float64
	Duration    time.Duration
	Warmup      time.Duration
	Progress    io.Writer
}

// DeviceReport sets hapticd's loop, timed from the device side, beside the
// bare host loop's in the same run.
type DeviceReport struct {
	Machine  Machine      `json:"machine"`
	Options  DeviceConfig `json:"config"`
	Hapticd  DeviceTiming `json:"hapticd"`
	BareLoop DeviceTiming `json:"bare_loop"`
	Load     *LoadResult  `json:"load,omitempty"`
	// CommandToMotor is the probe client's command-to-motor latency on the
	// stand-in arm (nil with the probe off).
	CommandToMotor *CommandLatency `json:"command_to_motor,omitempty"`
	Comparisons    []Comparison    `json:"comparisons"`
	Warnings       []string        `json:"warnings,omitempty"`
	Loop           *LoopFigures    `json:"service_loops,omitempty"`
	Process        *ProcessFigures `json:"process,omitempty"`
}

// DeviceConfig is what a device run measured.
type DeviceConfig struct {
	LoopHz  float64 `json:"loop_hz"`
	Arms    int     `json:"arms"`
	Clients int     `json:"clients"`
	RateHz  float64 `json:"rate_hz"`
	// ProbeRateHz is the latency probe's rate (0: as fast as lock-step
	// allows; absent: no probe).
	ProbeRateHz *float64 `json:"probe_rate_hz,omitempty"`
	DurationS   float64  `json:"duration_s"`
	WarmupS     float64  `json:"warmup_s"`
}

func (o *DeviceOptions) defaults() {
	if o.LoopHz <= 0 {
		o.LoopHz = 1000
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup < 0 {
		o.Warmup = 0
	}
	if o.Clients > 0 && o.Arms < 1 {
		o.Arms = 1
	}
	if o.ProbeRateHz == 0 {
		o.ProbeRateHz = o.LoopHz
	}
}

// Device runs `hapticbench device`.
func Device(ctx context.Context, o DeviceOptions) (DeviceReport, error) {
	o.defaults()
	rep := DeviceReport{Machine: ThisMachine(), Options: DeviceConfig{LoopHz: o.LoopHz, Arms: o.Arms, Clients: o.Clients,
		RateHz: o.RateHz, DurationS: o.Duration.Seconds(), WarmupS: o.Warmup.Seconds()}}
	if o.ProbeRateHz >= 0 {
		rate := o.ProbeRateHz
		rep.Options.ProbeRateHz = &rate
	}
	binary, cleanup, err := FindHapticd(ctx, o.Hapticd)
	if err != nil {
		return rep, err
	}
	defer cleanup()
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, format+"\n", args...)
		}
	}
	hz := strconv.FormatFloat(o.LoopHz, 'f', -1, 64)
	forService, err := startStandIn(ctx, binary, hz, 910)
	if err != nil {
		return rep, err
	}
	defer forService.stop()
	forBare, err := startStandIn(ctx, binary, hz, 911)
	if err != nil {
		return rep, err
	}
	defer forBare.stop()

	progress("starting %s on stand-in %s with %d simulated arms at %s Hz", binary, forService.path, o.Arms, hz)
	svc, err := startService(ctx, ServiceOptions{Binary: binary, Arms: o.Arms, LoopHz: o.LoopHz, Extra: []string{"--hw-port", forService.path}})
	if err != nil {
		return rep, err
	}
	defer svc.stop()
	armID, err := waitHardwareArm(ctx, svc.httpBase)
	if err != nil {
		return rep, err
	}
	progress("starting the bare host loop on stand-in %s", forBare.path)
	bare := exec.CommandContext(ctx, binary, "baseline-device", "--port", forBare.path, "--loop-hz", hz)
	bare.Env = childEnv()
	bareIn, err := bare.StdinPipe()
	if err != nil {
		return rep, fmt.Errorf("bench: baseline-device: %w", err)
	}
	var bareErr strings.Builder
	bare.Stderr = &bareErr
	if err := bare.Start(); err != nil {
		return rep, fmt.Errorf("bench: start baseline-device: %w", err)
	}
	bareStopped := false
	stopBare := func() error {
		if bareStopped {
			return nil
		}
		bareStopped = true
		_ = bareIn.Close()
		if err := bare.Wait(); err != nil {
			return fmt.Errorf("bench: baseline-device: %w: %s", err, strings.TrimSpace(bareErr.String()))
		}
		return nil
	}
	defer stopBare()

	// Both stand-ins restart their record when the measured window opens.
	mark := time.AfterFunc(o.Warmup, func() {
		forService.send("mark")
		forBare.send("mark")
	})
	defer mark.Stop()
	// The latency probe commands the stand-in arm on the same timeline as
	// the load, from its own session.
	type probeResult struct {
		sends probeSends
		err   error
	}
	probeDone := make(chan probeResult, 1)
	if o.ProbeRateHz >= 0 {
		progress("latency probe: coded force commands to %s at %s", armID, rateText(o.ProbeRateHz))
		go func() {
			p, err := runProbe(ctx, svc.wsURL, armID, o.ProbeRateHz, o.Warmup, o.Duration)
			probeDone <- probeResult{p, err}
		}()
	}
	if o.Clients > 0 {
		progress("load: %d clients at %s for %s (+%s warm-up)", o.Clients, rateText(o.RateHz), o.Duration, o.Warmup)
		ro := RunOptions{Arms: o.Arms, Clients: o.Clients, RateHz: o.RateHz, Duration: o.Duration, Warmup: o.Warmup, LoopHz: o.LoopHz}
		if err := ro.defaults(); err != nil {
			return rep, err
		}
		load, win, err := runLoad(ctx, ro, "hapticd", svc.wsURL, svc.httpBase, nil)
		if err != nil {
			return rep, err
		}
		rep.Load = &load
		if win.err != nil {
			rep.Warnings = append(rep.Warnings, win.err.Error())
		} else {
			lf, pf := windowFigures(win.before, win.after, win.elapsed, false)
			rep.Loop, rep.Process = &lf, &pf
		}
	} else {
		progress("no client load: %s (+%s warm-up)", o.Duration, o.Warmup)
		if !waitUntil(ctx, time.Now().Add(o.Warmup+o.Duration)) {
			return rep, ctx.Err()
		}
	}
	if o.ProbeRateHz >= 0 {
		pr := <-probeDone
		if pr.err != nil {
			return rep, pr.err
		}
		// The last commands' frames: a few ticks after the last send.
		waitUntil(ctx, time.Now().Add(max(20*time.Millisecond, time.Duration(20e9/o.LoopHz))))
		arrivals, err := forService.arrivals()
		if err != nil {
			return rep, err
		}
		lat, err := commandLatency(pr.sends, arrivals)
		if err != nil {
			return rep, err
		}
		lat.DeviceID, lat.RateHz = armID, o.ProbeRateHz
		lat.LoopPeriodUs = 1e6 / o.LoopHz
		lat.BoundUs = lat.LoopPeriodUs + latencyBoundExtraUs
		rep.CommandToMotor = &lat
		if lat.Latency.Count == 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("latency probe: none of %d commands reached the arm", lat.Sent))
		}
	}
	// The window's end: both stand-ins report before anything stops.
	if rep.Hapticd, err = forService.report(); err != nil {
		return rep, err
	}
	if rep.BareLoop, err = forBare.report(); err != nil {
		return rep, err
	}
	if err := stopBare(); err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
	}
	if err := svc.stop(); err != nil {
		rep.Warnings = append(rep.Warnings, err.Error())
	}
	rep.Comparisons = compareDevice(rep.Hapticd, rep.BareLoop)
	return rep, ctx.Err()
}

// compareDevice sets the service's device-side figures beside the bare
// loop's; lower is better for all of them.
func compareDevice(h, b DeviceTiming) []Comparison {
	var out []Comparison
	add := func(figure, unit string, hv, bv float64) {
		c := Comparison{Figure: figure, Unit: unit, Hapticd: hv, Baseline: "bare host loop", Base: bv}
		switch {
		case bv > 0 && hv < bv*(1-minNoise):
			c.Flag = FlagBaselineLost
		case bv > 0:
			c.Ratio = hv / bv
		}
		out = append(out, c)
	}
	add("period p50 at the arm", "µs", h.PeriodUsP50, b.PeriodUsP50)
	add("period p99 at the arm", "µs", h.PeriodUsP99, b.PeriodUsP99)
	add("period max at the arm", "µs", h.PeriodUsMax, b.PeriodUsMax)
	add("late ticks", "%", latePercent(h), latePercent(b))
	return out
}

func latePercent(t DeviceTiming) float64 {
	if t.Frames == 0 {
		return 100
	}
	return 100 * float64(t.Late) / float64(t.Frames)
}

// waitHardwareArm waits (up to 30 s) for a non-simulated arm in /stats: the
// stand-in, woken and driven by the service's hardware loop. It returns the
// arm's device id.
func waitHardwareArm(ctx context.Context, httpBase string) (string, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		st, err := fetchStats(ctx, httpBase, "")
		if err == nil {
			for _, d := range st.Devices {
				if isType(d.DeviceType, protocol.TypeArm) && !d.Simulated && d.Loop.Ticks > 0 {
					return d.DeviceID, nil
				}
			}
		}
		if !waitUntil(ctx, time.Now().Add(50*time.Millisecond)) {
			return "", ctx.Err()
		}
	}
	return "", errors.New("bench: hapticd did not drive the stand-in arm within 30 s (is --hw-port supported on this platform?)")
}

// standIn is a running `hapticd device-standin`.
type standIn struct {
	path  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
	done  bool
}

func startStandIn(ctx context.Context, binary, loopHz string, index int) (*standIn, error) {
	cmd := exec.CommandContext(ctx, binary, "device-standin", "--loop-hz", loopHz, "--index", strconv.Itoa(index))
	cmd.Env = childEnv()
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: device-standin: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("bench: device-standin: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start device-standin: %w", err)
	}
	s := &standIn{cmd: cmd, in: in, lines: bufio.NewScanner(out)}
	s.lines.Buffer(nil, 256<<20) // "arrivals" is one line: ~40 bytes a command
	if !s.lines.Scan() {
		s.stop()
		return nil, fmt.Errorf("bench: device-standin printed no pseudo-terminal path: %v", s.lines.Err())
	}
	s.path = s.lines.Text()
	return s, nil
}

func (s *standIn) send(line string) { _, _ = io.WriteString(s.in, line+"\n") }

// report asks the stand-in for its timing since the last mark.
func (s *standIn) report() (DeviceTiming, error) {
	var t DeviceTiming
	s.send("report")
	if !s.lines.Scan() {
		return t, fmt.Errorf("bench: device-standin printed no timing: %v", s.lines.Err())
	}
	if err := json.Unmarshal(s.lines.Bytes(), &t); err != nil {
		return t, fmt.Errorf("bench: device-standin timing %q: %w", clip(s.lines.Bytes(), 200), err)
	}
	return t, nil
}

// arrivals asks the stand-in for every coded force that reached it.
func (s *standIn) arrivals() ([]protocol.ForceArrival, error) {
	var a protocol.ForceArrivals
	s.send("arrivals")
	if !s.lines.Scan() {
		return nil, fmt.Errorf("bench: device-standin printed no arrivals: %v", s.lines.Err())
	}
	if err := json.Unmarshal(s.lines.Bytes(), &a); err != nil {
		return nil, fmt.Errorf("bench: device-standin arrivals %q: %w", clip(s.lines.Bytes(), 200), err)
	}
	return a.Arrivals, nil
}

func (s *standIn) stop() {
	if s.done {
		return
	}
	s.done = true
	_ = s.in.Close()
	_ = s.cmd.Wait()
}

// WriteTable writes the device-side comparison.
func (r DeviceReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	c := r.Options
	fmt.Fprintf(&b, "hapticbench device: loop %g Hz timed at the arm (a stand-in on a pseudo-terminal), hapticd beside a bare host loop in the same run; %d simulated arms, %d clients at %s, %gs measured after %gs; %s\n\n",
		c.LoopHz, c.Arms, c.Clients, rateText(c.RateHz), c.DurationS, c.WarmupS, r.Machine)
	var t textTable
	t.add("figure", "hapticd", "baseline", "base", "ratio")
	for _, cmp := range r.Comparisons {
		t.add(cmp.Figure+" ("+cmp.Unit+")", number(cmp.Hapticd), cmp.Baseline, number(cmp.Base), cmp.ratioText())
	}
	t.write(&b)
	fmt.Fprintf(&b, "force frames at the arm: hapticd %d, bare loop %d\n", r.Hapticd.Frames, r.BareLoop.Frames)
	if l := r.CommandToMotor; l != nil {
		verdict := "within"
		if l.Latency.P99Us > l.BoundUs {
			verdict = "OVER"
		}
		fmt.Fprintf(&b, "\ncommand to motor (a client's send of a force command on %s to the force frame the arm received, one clock), probe at %s:\n", l.DeviceID, rateText(l.RateHz))
		var t textTable
		t.add("latency", "p50 µs", "p90 µs", "p99 µs", "max µs", "loop period µs", "p99 bound µs")
		t.add("command to motor", number(l.Latency.P50Us), number(l.Latency.P90Us), number(l.Latency.P99Us), number(l.Latency.MaxUs),
			number(l.LoopPeriodUs), number(l.BoundUs))
		t.write(&b)
		fmt.Fprintf(&b, "p99 %s the bound (one loop period + %d µs); %d commands: %d in a frame of their own, %d replaced by a later one before their tick (timed to its frame), %d never at the arm; %d frames rejected (they read as a command not sent yet: a blend of two commands); probe round trip p50 %s µs p99 %s µs\n",
			verdict, latencyBoundExtraUs, l.Sent, l.OwnFrame, l.Superseded, l.Missing, l.Rejected, number(l.ProbeRTT.P50Us), number(l.ProbeRTT.P99Us))
	}
	if l := r.Load; l != nil {
		o := l.Overall
		fmt.Fprintf(&b, "client load: %d sessions, %s Hz achieved, rtt p50 %s µs p99 %s µs\n", o.Sessions, number(o.AchievedHzTotal), number(o.RTT.P50Us), number(o.RTT.P99Us))
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
