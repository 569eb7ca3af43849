package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strings"

	"github.com/hapticd/hapticd/protocol/zwidthreport"
)

// ZwidthOptions configure `hapticbench zwidth`.
type ZwidthOptions struct {
	// Hapticd is the binary whose `zwidth` subcommand runs the virtual
	// mode (FindHapticd's rules when empty).
	Hapticd string
	// Realtime measures against a service (ZwidthRealtime) instead of
	// simulating: Target's, or one started with one simulated arm.
	Realtime bool
	// Target is a running hapticd (ws://host:port/); it implies Realtime.
	Target string
	// DelayFrames is the client's delay in frames of its rate, from reading
	// a state to its force reaching the loop (the engine pipeline: read at
	// the frame's start, send at its end, is 1).
	DelayFrames float64
	// PushN is the user's push into the wall, N.
	PushN float64
	// ClientHz and EffectHz are the rates of rows A/C and B, as hapticd
	// zwidth's flags spell them ("60,90,200").
	ClientHz, EffectHz string
	// LoopHz is the loop under rows A and C.
	LoopHz float64
	// Paths picks rows among A, B and C; Hand is off, on or both.
	Paths, Hand string
	Progress    io.Writer
}

// ZwidthReport is the table: hapticd zwidth's figures and, per row, its
// theoretical bounds. The figures and rows are the wire contract of
// `hapticd zwidth` (protocol/zwidthreport).
type ZwidthReport struct {
	zwidthreport.Setup
	Results []ZwidthRow `json:"results"`
}

// ZwidthRow is one row: the measured limit beside its bounds.
type ZwidthRow struct {
	zwidthreport.Result

	// ColgateNpm is 2b/T (Colgate and Brown 1994), T = 1/RateHz.
	ColgateNpm float64 `json:"colgate_npm"`
	// DelayBoundNpm is 2b/(T + 2·delay).
	DelayBoundNpm float64 `json:"delay_bound_npm"`
	// BoundNpm adds the friction term (ZwidthBound): the row's bound. For
	// C it is the bound of the same client without the controller.
	BoundNpm float64 `json:"bound_npm"`
	// Ratio is LimitNpm / BoundNpm.
	Ratio float64 `json:"ratio"`
	// Note explains a row more than 2 times away from its bound.
	Note string `json:"note,omitempty"`
	// Timing is how a real-time row A's client frames went (nil in
	// virtual time, where they go exactly as modelled).
	Timing *ZwidthTiming `json:"timing,omitempty"`
}

// ZwidthTiming is a real-time client's frames over a row's trials: the
// intervals between its force commands (the model holds each for exactly
// 1/rate) and their round trips.
type ZwidthTiming struct {
	Frames         int     `json:"frames"`
	MeanIntervalMs float64 `json:"mean_interval_ms"`
	MaxIntervalMs  float64 `json:"max_interval_ms"`
	MeanRTTMs      float64 `json:"mean_rtt_ms"`
	MaxRTTMs       float64 `json:"max_rtt_ms"`
}

// ZwidthTrial is the trial that failed just above a row's limit.
type ZwidthTrial = zwidthreport.Trial

// ZwidthBound is the largest stiffness of a wall sampled every periodS
// with delayS of latency, on an arm of mass massKg and viscous damping
// dampingNspm, that a user pushing with pushN against Coulomb friction
// frictionN bounces on without gaining height.
//
// Colgate and Brown (1994) show a sampled spring behaves as the spring plus
// a negative damping K·T/2; a delay d adds K·d (Diolaiti et al. 2006 give
// the same 2b/(T + 2d) bound). Over one half cycle of contact, at
// ω = √(K/m), that net damping K·τ − b (τ = T/2 + d) returns the kinetic
// energy times 1 + π(K·τ − b)/√(K·m). Out of the wall the push brings the
// handle back against friction, so the next impact carries only
// R = (push − friction)/(push + friction) of it. Stable while the product
// stays under 1: K < s² with s the positive root of
// τ·s² − c·s − b = 0, c = (1 − R)·√m/(π·R). Without friction (R = 1) this
// is 2b/(T + 2d) exactly; friction raises it (Abbott and Okamura 2005 show
// the same qualitatively: Coulomb friction makes stiffer walls passive).
func ZwidthBound(periodS, delayS, massKg, dampingNspm, pushN, frictionN float64) float64 {
	tau := periodS/2 + delayS
	r := 1.0
	if pushN > frictionN && frictionN > 0 {
		r = (pushN - frictionN) / (pushN + frictionN)
	}
	c := (1 - r) * math.Sqrt(massKg) / (math.Pi * r)
	s := (c + math.Sqrt(c*c+4*tau*dampingNspm)) / (2 * tau)
	return s * s
}

// addBounds fills every row's bounds, ratio and note.
func (r *ZwidthReport) addBounds() {
	clientBound := map[[2]float64]float64{}
	for i := range r.Results {
		row := &r.Results[i]
		m := r.MassKg
		if row.Hand {
			m += r.HandMassKg // the hand moves with the handle between bounces
		}
		t := 1 / row.RateHz
		row.ColgateNpm = 2 * r.DampingNspm / t
		row.DelayBoundNpm = 2 * r.DampingNspm / (t + 2*row.DelayS)
		row.BoundNpm = ZwidthBound(t, row.DelayS, m, r.DampingNspm, r.PushN, r.KineticFrictionN)
		if row.Path == "A" {
			clientBound[[2]float64{row.RateHz, b2f(row.Hand)}] = row.BoundNpm
		}
	}
	for i := range r.Results {
		row := &r.Results[i]
		if row.Path == "C" {
			if b, ok := clientBound[[2]float64{row.RateHz, b2f(row.Hand)}]; ok {
				row.BoundNpm = b
			}
		}
		if row.BoundNpm > 0 {
			row.Ratio = row.LimitNpm / row.BoundNpm
		}
		row.Note = r.explain(row)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// explain says why a row is more than 2 times away from its bound, or
// nothing when it is within.
func (r *ZwidthReport) explain(row *ZwidthRow) string {
	if row.LimitNpm == 0 {
		return "no stiffness in the searched range was stable: " + row.failureText()
	}
	if row.Ratio >= 0.5 && row.Ratio <= 2 {
		return ""
	}
	var why []string
	if row.UnstableNpm == 0 {
		top := row.TopNpm
		if top == 0 {
			top = r.MaxNpm
		}
		why = append(why, fmt.Sprintf("stable up to the top of the search (%s N/m): the limit is only a lower bound", number(top)))
		if row.Ratio < 0.5 {
			ceiling := "the stiffest wall the loop renders (actors/loop/effect's MaxStiffnessNPerM)"
			if r.Mode != "virtual" {
				ceiling = "the stiffest wall a session may declare over the WebSocket (docs/protocol.md, Effects)"
			}
			why = append(why, "B's search stops at "+ceiling+", below this rate's bound")
		}
		return strings.Join(why, "; ")
	}
	if row.Path == "C" && row.Ratio > 2 {
		why = append(why, "the passivity controller adds damping whenever the observed energy goes negative, so the bare client's sampled-data bound (shown) no longer limits it; what does is the damping the controller may add at the loop's rate")
	}
	if row.Hand && row.Path != "C" && row.Ratio > 2 {
		why = append(why, fmt.Sprintf("the hand's grip damping (%s N·s/m) dissipates at the contact frequency, and the bound counts only the arm's b", number(r.HandDampingNspm)))
	}
	// The force clamp caps what a bounce can gain once the impact's peak
	// force √(2·E·K) passes it.
	approach := math.Max(r.PushN-r.KineticFrictionN, 0) * r.GapM
	if peak := math.Sqrt(2 * approach * row.UnstableNpm); row.Ratio > 2 && r.MaxForceN > 0 && peak > r.MaxForceN {
		why = append(why, fmt.Sprintf("near the limit an impact's peak force (%s N) passes the arm's %s N clamp, which caps the energy each bounce gains", number(peak), number(r.MaxForceN)))
	}
	if row.Ratio < 0.5 && strings.HasPrefix(r.Mode, "real time") {
		why = append(why, "below the bound: the real path adds what the row's delay leaves out (the service's tick between a command's arrival and its use, the round trip, and the client's timer jitter on a shared machine), each a further delay in 2b/(T+2d); the failing trial: "+row.failureText())
	} else if row.Ratio < 0.5 {
		why = append(why, "below the bound: the stable-band criterion (oscillation under "+number(r.OscillationM*1000)+" mm "+number(r.SettleS)+" s after contact) binds before instability: "+row.failureText())
	}
	if len(why) == 0 {
		why = append(why, "not explained by the bound's model (bouncing contact, Coulomb friction, delay); the failing trial: "+row.failureText())
	}
	return strings.Join(why, "; ")
}

func (row *ZwidthRow) failureText() string {
	if row.Failure == nil {
		return "none"
	}
	return fmt.Sprintf("%s N/m: %s", number(row.Failure.StiffnessNpm), row.Failure.Reason)
}

// Zwidth runs the virtual mode: `hapticd zwidth` with o's rows, then the
// bounds. A Target selects the real-time mode (ZwidthRealtime).
func Zwidth(ctx context.Context, o ZwidthOptions) (ZwidthReport, error) {
	if o.Realtime || o.Target != "" {
		return ZwidthRealtime(ctx, o)
	}
	bin, cleanup, err := FindHapticd(ctx, o.Hapticd)
	if err != nil {
		return ZwidthReport{}, err
	}
	defer cleanup()
	args := []string{"zwidth", fmt.Sprintf("--delay-frames=%g", o.DelayFrames), fmt.Sprintf("--push=%g", o.PushN),
		"--client-hz=" + o.ClientHz, "--effect-hz=" + o.EffectHz, fmt.Sprintf("--loop-hz=%g", o.LoopHz),
		"--paths=" + o.Paths, "--hand=" + o.Hand}
	if o.Progress != nil {
		fmt.Fprintf(o.Progress, "zwidth: %s %s\n", bin, strings.Join(args, " "))
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = childEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return ZwidthReport{}, fmt.Errorf("bench: hapticd zwidth: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return parseZwidth(stdout.Bytes())
}

// parseZwidth reads hapticd zwidth's JSON and adds the bounds.
func parseZwidth(b []byte) (ZwidthReport, error) {
	var r ZwidthReport
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return ZwidthReport{}, fmt.Errorf("bench: hapticd zwidth printed no report this hapticbench reads (versions apart?): %w", err)
	}
	if r.Mode == "" || len(r.Results) == 0 {
		return ZwidthReport{}, errors.New("bench: hapticd zwidth printed an empty report")
	}
	r.addBounds()
	return r, nil
}

// WriteTable prints the rows beside their bounds, then the notes.
func (r ZwidthReport) WriteTable(w io.Writer) error {
	var t textTable
	t.add("row", "wall rate", "loop", "delay", "hand", "limit N/m", "2b/T", "2b/(T+2d)", "bound", "limit/bound", "")
	for i, row := range r.Results {
		hand := "off"
		if row.Hand {
			hand = "on"
		}
		limit := number(row.LimitNpm)
		if row.UnstableNpm == 0 && row.LimitNpm > 0 {
			limit = "≥ " + limit
		}
		mark := ""
		if row.Note != "" {
			mark = fmt.Sprintf("[%d]", i+1)
		}
		t.add(pathName(row.Path), number(row.RateHz)+" Hz", number(row.LoopHz)+" Hz", number(row.DelayS*1000)+" ms", hand,
			limit, number(row.ColgateNpm), number(row.DelayBoundNpm), number(row.BoundNpm), fmt.Sprintf("%.2f", row.Ratio), mark)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "hapticbench zwidth (%s): largest stable wall stiffness per path\n", r.Mode)
	fmt.Fprintf(&b, "arm: m %s kg, b %s N·s/m, friction %s/%s N (static/kinetic), encoder %s µm, clamp %s N; hand model: %s kg, %s N/m, %s N·s/m\n",
		number(r.MassKg), number(r.DampingNspm), number(r.StaticFrictionN), number(r.KineticFrictionN), number(r.EncoderStepM*1e6), number(r.MaxForceN),
		number(r.HandMassKg), number(r.HandStiffnessNpm), number(r.HandDampingNspm))
	fmt.Fprintf(&b, "trial: push %s N from %s mm; stable = energy ≥ −%s mJ and ≤ %s mm peak to peak %s–%s s after contact; renderers: %s\n\n",
		number(r.PushN), number(r.GapM*1000), number(r.EnergyBoundJ*1000), number(r.OscillationM*1000), number(r.SettleS), number(r.SettleS+r.WindowS), r.Renderers)
	io.WriteString(w, b.String())
	t.write(w)
	b.Reset()
	b.WriteString("\nbound: 2b/(T+2d) with the friction term of a bouncing contact (bench.ZwidthBound); for C, the same client's bound without the controller\n")
	for i, row := range r.Results {
		if row.Note != "" {
			fmt.Fprintf(&b, "[%d] %s %s Hz, hand %v: %s\n", i+1, row.Path, number(row.RateHz), row.Hand, row.Note)
		}
	}
	for _, row := range r.Results {
		if tm := row.Timing; tm != nil {
			fmt.Fprintf(&b, "%s %s Hz client: %d frames, %s ms apart on average (max %s; the model: %s), round trip %s ms on average (max %s)\n",
				row.Path, number(row.RateHz), tm.Frames, number(tm.MeanIntervalMs), number(tm.MaxIntervalMs), number(1000/row.RateHz),
				number(tm.MeanRTTMs), number(tm.MaxRTTMs))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func pathName(p string) string {
	switch p {
	case "A":
		return "A client"
	case "B":
		return "B effect"
	case "C":
		return "C client+passivity"
	}
	return p
}

// Limit is the limit of the row with path ("A", "B" or "C") at rateHz,
// with or without the hand, and false when the report has no such row.
func (r ZwidthReport) Limit(path string, rateHz float64, hand bool) (float64, bool) {
	for _, row := range r.Results {
		if row.Path == path && row.RateHz == rateHz && row.Hand == hand {
			return row.LimitNpm, true
		}
	}
	return 0, false
}

// WriteSVG plots each path's limit against the wall's rate beside the
// bounds, without and with the hand model.
func (r ZwidthReport) WriteSVG(w io.Writer) error {
	colors := map[string]string{"A": "#1f77b4", "B": "#2ca02c", "C": "#d62728"}
	var panels []plotPanel
	for _, hand := range []bool{false, true} {
		p := plotPanel{yLabel: "stiffness, N/m", logY: true, title: "hand model off"}
		if hand {
			p.title = "hand model on"
		}
		var bxs, bys, cxs, cys []float64
		for _, path := range []string{"A", "B", "C"} {
			s := plotSeries{name: pathName(path) + " limit", color: colors[path]}
			for _, row := range r.Results {
				if row.Path != path || row.Hand != hand {
					continue
				}
				s.xs, s.ys = append(s.xs, row.RateHz), append(s.ys, row.LimitNpm)
				if path != "C" {
					bxs, bys = append(bxs, row.RateHz), append(bys, row.BoundNpm)
					cxs, cys = append(cxs, row.RateHz), append(cys, row.ColgateNpm)
				}
			}
			if len(s.xs) > 0 {
				p.series = append(p.series, s)
			}
		}
		if len(p.series) == 0 {
			continue
		}
		p.series = append(p.series,
			plotSeries{name: "bound (delay, friction)", color: "#555", dash: "6 4", xs: bxs, ys: bys},
			plotSeries{name: "2b/T", color: "#aaa", dash: "2 3", xs: cxs, ys: cys})
		panels = append(panels, p)
	}
	if len(panels) == 0 {
		return errors.New("bench: zwidth: no rows to plot")
	}
	return writePlot(w, "hapticbench zwidth: largest stable wall stiffness ("+r.Mode+")", "rate the wall is computed at, Hz", true, panels)
}
