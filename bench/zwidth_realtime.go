package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hapticd/hapticd/protocol/zwidthreport"
)

// The real-time mode measures row A against a running hapticd: a client
// computes the penalty wall at its frame rate and streams the force over
// the WebSocket (set_cursor_force), exactly as an engine does, while an
// observer session reads the arm's position and force as fast as the
// service answers, to judge stability. The arm's mechanical figures the
// bounds need cannot be read over the wire, so they are the simulated
// arm's defaults (hw/sim DefaultPhysics): measure a real arm only with its
// own figures in mind.
//
// Row B declares the wall as an effect over the WebSocket, in the shape
// docs/protocol.md's Effects section gives, and fails with the service's
// answer if the service refuses or ignores it. Row C is row A with the
// arm's passivity controller switched on over HTTP on the whole output
// (the device-global entry passivity/controller, scope "output") for the
// row, and back to the service's default after it.

// Simulated-arm figures the real-time bounds use: hw/sim's DefaultPhysics
// (the bench may not import it; hw/sim's tests pin the same values).
const (
	simArmMassKg    = 0.2
	simArmDampNspm  = 1
	simArmStaticN   = 0.15
	simArmKineticN  = 0.1
	simArmMaxForceN = 10
	realtimeGapM    = 0.002
	realtimeSettleS = 1.0
	realtimeWindowS = 0.5
	realtimeEnergyJ = 1e-4
	realtimeOscM    = 0.5e-3
	realtimeMinNpm  = 10
	realtimeMaxNpm  = 5000 // a 60..200 Hz client is far below this
	// realtimeEffectMaxNpm is the stiffest wall the wire accepts
	// (docs/protocol.md, Effects: stiffness 0..20,000 N/m).
	realtimeEffectMaxNpm = 20000
	// realtimeKeepHz is how often B's client renews its lease (its push
	// command and an empty effects member) while the loop renders.
	realtimeKeepHz   = 200
	wallEffectID     = "zwidth-wall"
	realtimeScan     = 1.5
	realtimeTol      = 1.1
	realtimeTimeout  = 5 * time.Second
	realtimeRestMps  = 0.002
	realtimeHomeTime = 3 * time.Second
)

// ZwidthRealtime runs rows A at o.ClientHz and B at o.EffectHz against
// o.Target, or against hapticds it starts with one simulated arm: at
// o.LoopHz for A, at each B rate for B (an effect renders at the loop's
// rate). Against a Target, B's rate must be the target's loop rate.
func ZwidthRealtime(ctx context.Context, o ZwidthOptions) (ZwidthReport, error) {
	rep := ZwidthReport{Setup: zwidthreport.Setup{Mode: "real time against " + o.Target,
		MassKg: simArmMassKg, DampingNspm: simArmDampNspm, StaticFrictionN: simArmStaticN, KineticFrictionN: simArmKineticN,
		MaxForceN: simArmMaxForceN, PushN: o.PushN, GapM: realtimeGapM, EnergyBoundJ: realtimeEnergyJ, OscillationM: realtimeOscM,
		SettleS: realtimeSettleS, WindowS: realtimeWindowS, MinNpm: realtimeMinNpm, MaxNpm: realtimeMaxNpm, ToleranceRatio: realtimeTol,
		Renderers: "A: the client's penalty wall over set_cursor_force; B: a wall effect declared over the WebSocket (docs/protocol.md, Effects); C: A's client with the arm's passivity/controller on"}}
	paths := strings.ToUpper(o.Paths)
	if o.Hand == "on" {
		return rep, errors.New("bench: zwidth in real time: the hand model exists only in the virtual mode (a service's simulated arms have none); use --hand off")
	}
	if o.DelayFrames != math.Trunc(o.DelayFrames) || o.DelayFrames < 0 || o.DelayFrames > 4 {
		return rep, fmt.Errorf("bench: zwidth in real time: --delay-frames %v: the real-time client delays by whole frames, 0..4", o.DelayFrames)
	}
	if !(o.PushN > 0 && o.PushN <= 5) {
		return rep, fmt.Errorf("bench: zwidth: --push %v N: use 0 < push ≤ 5", o.PushN)
	}
	// Rows B first: a service that does not render effects fails them at
	// once, before minutes of rows A.
	var rows []ZwidthRow
	if strings.Contains(paths, "B") {
		rates, err := parseRates("--effect-hz", o.EffectHz, 20000)
		if err != nil {
			return rep, err
		}
		for _, hz := range rates {
			rows = append(rows, ZwidthRow{Result: zwidthreport.Result{Path: "B", RateHz: hz, LoopHz: hz}})
		}
	}
	for _, path := range []string{"A", "C"} { // the client's rows: without, then with passivity
		if !strings.Contains(paths, path) {
			continue
		}
		rates, err := parseRates("--client-hz", o.ClientHz, 1000)
		if err != nil {
			return rep, err
		}
		for _, hz := range rates {
			rows = append(rows, ZwidthRow{Result: zwidthreport.Result{Path: path, RateHz: hz, LoopHz: o.LoopHz, DelayS: o.DelayFrames / hz}})
		}
	}
	if len(rows) == 0 {
		return rep, fmt.Errorf("bench: zwidth: --paths %q names no row A, B or C", o.Paths)
	}
	binary := ""
	if o.Target == "" {
		bin, cleanup, err := FindHapticd(ctx, o.Hapticd)
		if err != nil {
			return rep, err
		}
		defer cleanup()
		binary = bin
		rep.Mode = "real time against hapticds it started (1 simulated arm each, at the row's loop rate)"
	}
	for _, row := range rows {
		if err := realtimeRow(ctx, o, binary, &row); err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, row)
	}
	rep.addBounds()
	return rep, nil
}

// realtimeRow measures one row against o.Target, or a hapticd started
// from binary at the row's loop rate.
func realtimeRow(ctx context.Context, o ZwidthOptions, binary string, row *ZwidthRow) error {
	var wsURL string
	if binary != "" {
		svc, err := startService(ctx, ServiceOptions{Binary: binary, Arms: 1, LoopHz: row.LoopHz})
		if err != nil {
			return err
		}
		defer svc.stop()
		wsURL = svc.wsURL
	} else {
		var err error
		if wsURL, _, err = targetURLs(o.Target); err != nil {
			return err
		}
	}
	ctl, err := dialClient(ctx, wsURL, 0, RoleController, 0, realtimeTimeout, subscribeTo{})
	if err != nil {
		return err
	}
	defer ctl.close()
	obs, err := dialClient(ctx, wsURL, 0, RoleObserver, 0, realtimeTimeout, subscribeTo{})
	if err != nil {
		return err
	}
	defer obs.close()
	start, err := armPositionForce(ctl.inventory, ctl.deviceID)
	if err != nil {
		return err
	}
	if row.Path == "C" {
		off, err := switchPassivity(ctx, wsURL, ctl.deviceID, true)
		if err != nil {
			return err
		}
		defer off()
	}
	rt := realtimeRun{ctx: ctx, ctl: ctl, obs: obs, home: start.pos, pushN: o.PushN, delayFrames: int(o.DelayFrames)}
	err = rt.limit(row, o)
	rt.timing.row(row)
	return err
}

func parseRates(flagName, s string, maxHz float64) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(f), &v); err != nil || !(v >= 1 && v <= maxHz) {
			return nil, fmt.Errorf("bench: zwidth: %s %q: want rates of 1..%g Hz, comma-separated", flagName, s, maxHz)
		}
		out = append(out, v)
	}
	return out, nil
}

// armPositionForce reads the arm's cursor_position and current_cursor_force.
func armPositionForce(frame []byte, id string) (armSample, error) {
	s, err := readArmSample(frame, id)
	if err != nil {
		return armSample{}, fmt.Errorf("bench: zwidth: %w", err)
	}
	return s, nil
}

type realtimeRun struct {
	ctx         context.Context
	ctl, obs    *client
	home        [3]float64
	pushN       float64
	delayFrames int
	// timing of the client's frames over the row's trials
	timing realtimeTiming
	// keepStall, when set (by tests), holds an effect trial's client
	// quiet for the duration it gives for the attempt, once, keepStallAfter
	// into the attempt's push: a loaded machine's stall, on cue.
	keepStall func(attempt int) time.Duration
	// attempts, when set (by tests), is how many times effectTrial
	// declares its wall (0: effectAttempts).
	attempts int
}

// keepStallAfter is when realtimeRun.keepStall holds the client: well
// after contact (about 50 ms into the push), before the verdict.
const keepStallAfter = 300 * time.Millisecond

// realtimeTiming accumulates how the client's frames actually went: the
// intervals between its force commands and their round trips, the delay
// the model's 2b/(T+2d) does not see.
type realtimeTiming struct {
	n                int
	sumGapS, maxGapS float64
	sumRTTS, maxRTTS float64
	lastSend         time.Time
	haveLast         bool
}

func (t *realtimeTiming) frame(sent time.Time, rtt time.Duration) {
	if t.haveLast {
		gap := sent.Sub(t.lastSend).Seconds()
		t.n++
		t.sumGapS += gap
		t.maxGapS = math.Max(t.maxGapS, gap)
		t.sumRTTS += rtt.Seconds()
		t.maxRTTS = math.Max(t.maxRTTS, rtt.Seconds())
	}
	t.lastSend, t.haveLast = sent, true
}

// row fills the row's timing figures.
func (t *realtimeTiming) row(row *ZwidthRow) {
	if t.n == 0 {
		return
	}
	row.Timing = &ZwidthTiming{Frames: t.n, MeanIntervalMs: t.sumGapS / float64(t.n) * 1e3, MaxIntervalMs: t.maxGapS * 1e3,
		MeanRTTMs: t.sumRTTS / float64(t.n) * 1e3, MaxRTTMs: t.maxRTTS * 1e3}
}

// limit scans and bisects the stiffness of one row, as the virtual mode.
func (rt *realtimeRun) limit(row *ZwidthRow, o ZwidthOptions) error {
	var fail ZwidthTrial
	lo := 0.0
	try := func(k float64) (ZwidthTrial, error) {
		row.Trials++
		var t ZwidthTrial
		var err error
		// A wall past its limit fails every time; a stall of the shared
		// machine (frames 100 ms late under load) fails one trial at
		// random. So an unstable trial is run once more, as hapticbench
		// arms retries a failing probe, and stands only if it fails again.
		for attempt := 0; attempt < 2; attempt++ {
			if row.Path == "B" {
				t, err = rt.effectTrial(k)
			} else {
				t, err = rt.trial(row.RateHz, k)
			}
			if err != nil || t.Stable {
				break
			}
		}
		if err == nil && o.Progress != nil {
			fmt.Fprintf(o.Progress, "zwidth: %s %g Hz, %s N/m: stable %v %s\n", row.Path, row.RateHz, number(k), t.Stable, t.Reason)
		}
		return t, err
	}
	top := float64(realtimeMaxNpm)
	if row.Path == "B" {
		top = realtimeEffectMaxNpm
	}
	row.TopNpm = top
	for k := float64(realtimeMinNpm); ; k *= realtimeScan {
		k = math.Min(k, top)
		t, err := try(k)
		if err != nil {
			return err
		}
		if t.Stable {
			if lo == 0 {
				row.LowestStableNpm = k
			}
			lo = k
		} else {
			fail = t
			if lo > 0 {
				break
			}
		}
		if k == top {
			if lo == 0 {
				row.UnstableNpm, row.Failure = k, &fail
			} else {
				row.LimitNpm = lo
			}
			return nil
		}
	}
	hi := math.Min(lo*realtimeScan, top)
	for hi/lo > realtimeTol {
		mid := math.Sqrt(lo * hi)
		t, err := try(mid)
		if err != nil {
			return err
		}
		if t.Stable {
			lo = mid
		} else {
			hi, fail = mid, t
		}
	}
	row.LimitNpm, row.UnstableNpm, row.Failure = lo, hi, &fail
	return nil
}

// goHome servos the arm back to its starting point and waits until it
// rests near it (the servo holds within a millimetre or two against
// friction), returning where it rests.
func (rt *realtimeRun) goHome() ([3]float64, error) {
	h := rt.home
	msg := fmt.Appendf(nil, `{"arm3":[{"device_id":%q,"commands":{"set_cursor_position":{"position":{"x":%g,"y":%g,"z":%g}}}}]}`, rt.ctl.deviceID, h[0], h[1], h[2])
	end := time.Now().Add(realtimeHomeTime)
	var prev armSample
	for i := 0; time.Now().Before(end); i++ {
		frame, err := rt.ctl.exchange(msg)
		if err != nil {
			return h, fmt.Errorf("bench: zwidth: servo home: %w", err)
		}
		if why, refused := refusal(frame); refused {
			return h, fmt.Errorf("bench: zwidth: the service refused set_cursor_position: %s", why)
		}
		s, err := armPositionForce(frame, rt.ctl.deviceID)
		if err != nil {
			return h, err
		}
		if i > 20 {
			dt := s.at.Sub(prev.at).Seconds()
			if dt > 0 && dist3(s.pos, h) < 2e-3 && dist3(s.pos, prev.pos)/dt < realtimeRestMps {
				return s.pos, nil
			}
		}
		prev = s
		if !waitUntil(rt.ctx, time.Now().Add(5*time.Millisecond)) {
			return h, rt.ctx.Err()
		}
	}
	return h, fmt.Errorf("bench: zwidth: the arm did not come to rest within 2 mm of its start in %s", realtimeHomeTime)
}

func dist3(a, b [3]float64) float64 {
	return math.Sqrt((a[0]-b[0])*(a[0]-b[0]) + (a[1]-b[1])*(a[1]-b[1]) + (a[2]-b[2])*(a[2]-b[2]))
}

// trial renders a wall of stiffness k from a client at rateHz: the
// controller streams penalty + push forces, the observer judges.
func (rt *realtimeRun) trial(rateHz, k float64) (ZwidthTrial, error) {
	t := ZwidthTrial{StiffnessNpm: k, Stable: true, ContactS: -1}
	rest, err := rt.goHome()
	if err != nil {
		return t, err
	}
	wallX := rest[0] + realtimeGapM
	ctx, cancel := context.WithCancel(rt.ctx)
	defer cancel()
	var wg sync.WaitGroup
	var ctlErr error
	wg.Add(1)
	go func() { // the client: one frame per period, the force of the state it last read
		defer wg.Done()
		period := time.Duration(float64(time.Second) / rateHz)
		queue := make([]float64, rt.delayFrames)
		x := rest[0]
		next := time.Now()
		for ctx.Err() == nil {
			if rt.delayFrames == 0 { // read the state now, then send
				frame, err := rt.ctl.exchange([]byte(`{}`))
				if err != nil {
					ctlErr = err
					return
				}
				s, err := armPositionForce(frame, rt.ctl.deviceID)
				if err != nil {
					ctlErr = err
					return
				}
				x = s.pos[0]
			}
			f := rt.pushN
			if d := x - wallX; d > 0 {
				f -= k * d
			}
			queue = append(queue, f)
			f, queue = queue[0], queue[1:]
			sent := time.Now()
			frame, err := rt.ctl.exchange(fmt.Appendf(nil, `{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":%g,"y":0,"z":0}}}}]}`, rt.ctl.deviceID, f))
			rt.timing.frame(sent, time.Since(sent))
			if err != nil {
				ctlErr = err
				return
			}
			if why, refused := refusal(frame); refused {
				ctlErr = fmt.Errorf("the service refused set_cursor_force: %s", why)
				return
			}
			s, err := armPositionForce(frame, rt.ctl.deviceID)
			if err != nil {
				ctlErr = err
				return
			}
			x = s.pos[0] // read at this frame, used at the next one
			next = next.Add(period)
			if !waitUntil(ctx, next) {
				return
			}
		}
	}()
	err = rt.observe(&t, wallX, k)
	cancel()
	wg.Wait()
	rt.timing.haveLast = false // the next trial's first frame follows the homing, not this frame
	if ctlErr != nil {
		return t, fmt.Errorf("bench: zwidth: client: %w", ctlErr)
	}
	return t, err
}

// observe reads the arm as fast as the service answers until the trial is
// decided, filling t.
func (rt *realtimeRun) observe(t *ZwidthTrial, wallX, k float64) error {
	begin := time.Now()
	var prev armSample
	energy := 0.0
	lo, hi := math.Inf(1), math.Inf(-1)
	escape := math.Min(0.09, math.Max(0.02, 2.5*rt.pushN/k))
	for i := 0; ; i++ {
		frame, err := rt.obs.exchange([]byte(`{}`))
		if err != nil {
			return fmt.Errorf("bench: zwidth: observer: %w", err)
		}
		s, err := armPositionForce(frame, rt.obs.deviceID)
		if err != nil {
			return err
		}
		now := s.at.Sub(begin).Seconds()
		if i > 0 {
			// The wall's share of the applied force along the normal: the
			// arm's X force less the user's push the client adds.
			fw := prev.f[0] - rt.pushN
			dx := s.pos[0] - prev.pos[0]
			dt := s.at.Sub(prev.at).Seconds()
			energy += -fw * dx
			if dt > 0 {
				energy += simArmDampNspm * dx * dx / dt
			}
			energy += simArmKineticN * math.Abs(dx)
			t.MinEnergyJ = math.Min(t.MinEnergyJ, energy)
		}
		prev = s
		depth := s.pos[0] - wallX
		if t.ContactS < 0 {
			if depth > 0 {
				t.ContactS = now
			} else if now > 3 {
				t.Stable, t.Reason = false, "never reached the wall"
				return nil
			}
		}
		switch {
		case t.MinEnergyJ < -realtimeEnergyJ:
			t.Stable, t.Reason = false, fmt.Sprintf("observed energy fell to %.3g J", t.MinEnergyJ)
			return nil
		case math.Abs(depth) > escape:
			t.Stable, t.Reason = false, fmt.Sprintf("cursor %.0f mm from the wall", depth*1000)
			return nil
		case t.ContactS < 0:
			continue
		}
		since := now - t.ContactS
		if since >= realtimeSettleS {
			lo, hi = math.Min(lo, depth), math.Max(hi, depth)
		}
		if since >= realtimeSettleS+realtimeWindowS {
			t.PeakToPeakM = hi - lo
			if t.PeakToPeakM > realtimeOscM {
				t.Stable, t.Reason = false, fmt.Sprintf("%.2f mm peak to peak %.1f s after contact", t.PeakToPeakM*1000, realtimeSettleS)
			}
			return nil
		}
	}
}

// effectAttempts is how many times effectTrial declares its wall before it
// gives up on a machine that keeps holding the client past its lease.
const effectAttempts = 3

// errEffectLapsed says that the client's wall effect lapsed with its lease
// in every attempt of a trial, so the trial has no verdict.
var errEffectLapsed = errors.New("the session's lease lapsed in every attempt (the client was held up longer than the lease): the service dropped the wall while the push went on, so no attempt measured the wall")

// effectTrial declares a wall of stiffness k as an effect (docs/protocol.md,
// Effects) and lets the service's loop render it while the client only
// pushes and renews its lease; the observer judges as for A. It fails with
// the service's answer when the service refuses or ignores effects.
//
// An attempt whose lease lapsed is not a verdict: a lapse drops the
// session's effects (docs/protocol.md, Effects), and the next renewal
// takes the arm back with the push alone, which runs the cursor through
// where the wall was (a 100 ms stall of a loaded machine did that). The
// trial then declares the wall again, at most effectAttempts times.
func (rt *realtimeRun) effectTrial(k float64) (ZwidthTrial, error) {
	attempts := effectAttempts
	if rt.attempts > 0 {
		attempts = rt.attempts
	}
	for attempt := 0; attempt < attempts; attempt++ {
		t, lapsed, err := rt.effectAttempt(k, attempt)
		if err != nil || !lapsed {
			return t, err
		}
	}
	return ZwidthTrial{StiffnessNpm: k, ContactS: -1}, fmt.Errorf("bench: zwidth: a %s N/m wall effect: %w", number(k), errEffectLapsed)
}

// effectAttempt is effectTrial's attempt-th declaration of its wall, judged; lapsed
// says that a renewal's answer no longer counted the wall (its lease
// lapsed), which voids the verdict.
func (rt *realtimeRun) effectAttempt(k float64, attempt int) (t ZwidthTrial, lapsed bool, err error) {
	t = ZwidthTrial{StiffnessNpm: k, Stable: true, ContactS: -1}
	rest, err := rt.goHome()
	if err != nil {
		return t, false, err
	}
	wall := rest
	wall[0] += realtimeGapM
	id := rt.ctl.deviceID
	declare := fmt.Appendf(nil, `{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":%g,"y":0,"z":0}}},`+
		`"effects":{"clear":true,"set":[{"id":%q,"type":"wall","position":{"x":%g,"y":%g,"z":%g},"normal":{"x":-1,"y":0,"z":0},"stiffness":%g,"damping":0}]}}]}`,
		id, rt.pushN, wallEffectID, wall[0], wall[1], wall[2], k)
	keep := fmt.Appendf(nil, `{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":%g,"y":0,"z":0}}},"effects":{}}]}`, id, rt.pushN)
	clear := fmt.Appendf(nil, `{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}},"effects":{"clear":true}}]}`, id)
	frame, err := rt.ctl.exchange(declare)
	if err != nil {
		return t, false, fmt.Errorf("bench: zwidth: declare the wall: %w", err)
	}
	if err := effectRefusal(frame); err != nil {
		return t, false, err
	}
	// The declaration takes effect at the loop's next tick: a frame soon
	// after must show it in force.
	inForce := false
	for end := time.Now().Add(200 * time.Millisecond); !inForce && time.Now().Before(end); {
		if frame, err = rt.ctl.exchange(keep); err != nil {
			return t, false, fmt.Errorf("bench: zwidth: renew the wall: %w", err)
		}
		if err := effectRefusal(frame); err != nil {
			return t, false, err
		}
		inForce = effectsInForce(frame, id) > 0
	}
	if !inForce {
		return t, false, fmt.Errorf("bench: zwidth: hapticd took the wall effect without an error, but its frames show no effect in force (no state.effects.count): it does not render effects yet; last frame: %s", clip(frame, 300))
	}
	ctx, cancel := context.WithCancel(rt.ctx)
	var wg sync.WaitGroup
	var ctlErr error
	wg.Add(1)
	go func() { // the client only pushes and keeps its lease
		defer wg.Done()
		period := time.Second / realtimeKeepHz
		var stall time.Duration
		if rt.keepStall != nil {
			stall = rt.keepStall(attempt)
		}
		stallAt := time.Now().Add(keepStallAfter)
		for next := time.Now(); ctx.Err() == nil; {
			if stall > 0 && time.Now().After(stallAt) {
				if !waitUntil(ctx, time.Now().Add(stall)) {
					return
				}
				stall, next = 0, time.Now()
			}
			frame, err := rt.ctl.exchange(keep)
			if err != nil {
				ctlErr = err
				return
			}
			if effectsInForce(frame, id) == 0 {
				// The lease lapsed and took the wall: renewing would
				// only push the cursor on through it.
				lapsed = true
				return
			}
			next = next.Add(period)
			if !waitUntil(ctx, next) {
				return
			}
		}
	}()
	err = rt.observe(&t, wall[0], k)
	cancel()
	wg.Wait()
	if ctlErr != nil {
		return t, false, fmt.Errorf("bench: zwidth: client: %w", ctlErr)
	}
	if _, cerr := rt.ctl.exchange(clear); cerr != nil && err == nil {
		err = fmt.Errorf("bench: zwidth: clear the wall: %w", cerr)
	}
	return t, lapsed, err
}

// effectRefusal is the service's refusal of an effects member: an error
// entry, or a warning that names effects (a service that does not know
// the member warns unknown_key).
func effectRefusal(frame []byte) error {
	var f struct {
		Errors   []json.RawMessage `json:"errors"`
		Warnings []json.RawMessage `json:"warnings"`
	}
	if err := json.Unmarshal(frame, &f); err != nil {
		return fmt.Errorf("bench: zwidth: frame is not JSON: %w", err)
	}
	if len(f.Errors) > 0 {
		return fmt.Errorf("bench: zwidth: hapticd refused the wall effect: %s", clip(f.Errors[0], 300))
	}
	for _, w := range f.Warnings {
		if strings.Contains(string(w), "effects") {
			return fmt.Errorf("bench: zwidth: hapticd does not accept effects over the WebSocket (it warned: %s); run rows B in the virtual mode", clip(w, 300))
		}
	}
	return nil
}

// effectsInForce is the arm's state.effects.count in a frame (0: none, or
// a service that reports none).
func effectsInForce(frame []byte, id string) int {
	type arm struct {
		DeviceID string `json:"device_id"`
		State    struct {
			Effects struct {
				Count int `json:"count"`
			} `json:"effects"`
		} `json:"state"`
	}
	var f struct {
		Inverse3 []arm `json:"inverse3"`
		Arm3     []arm `json:"arm3"`
	}
	if json.Unmarshal(frame, &f) != nil {
		return 0
	}
	for _, a := range append(f.Arm3, f.Inverse3...) {
		if a.DeviceID == id {
			return a.State.Effects.Count
		}
	}
	return 0
}

// The passivity controller's bodies: row C guards the whole output (the
// client's streamed wall is the source to keep passive); the service's
// default guards only what its loop renders, which leaves rows A and B
// alone (docs/protocol.md, Passivity).
const (
	passivityWholeOutput = `{"enabled":true,"scope":"output"}`
	passivityDefault     = `{"enabled":true,"scope":"rendered"}`
	passivityOff         = `{"enabled":false}`
)

// switchPassivity sets the passivity controller of arm id on the service
// behind wsURL (POST /arm3/{id}/config/passivity/controller): on the whole
// output when on, off otherwise; it returns what restores the service's
// default. Row C measures row A's client with it on.
func switchPassivity(ctx context.Context, wsURL, id string, on bool) (restore func(), err error) {
	_, httpBase, err := targetURLs(wsURL)
	if err != nil {
		return nil, err
	}
	set := func(ctx context.Context, body string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, httpBase+"/arm3/"+id+"/config/passivity/controller", strings.NewReader(body))
		if err != nil {
			return fmt.Errorf("bench: zwidth: passivity controller: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("bench: zwidth: switching the passivity controller: %w", err)
		}
		defer resp.Body.Close()
		answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("bench: zwidth: row C needs the passivity controller (POST passivity/controller), and the service answered %d: %s", resp.StatusCode, clip(answer, 300))
		}
		return nil
	}
	body := passivityOff
	if on {
		body = passivityWholeOutput
	}
	if err := set(ctx, body); err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), realtimeTimeout)
		defer cancel()
		_ = set(ctx, passivityDefault) // a service that went away has no controller left to restore
	}, nil
}
