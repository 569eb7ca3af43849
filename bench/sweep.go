package bench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// SweepSpec is what a sweep varies: Over is "clients" or "arms", Counts
// the values, ascending.
type SweepSpec struct {
	Over   string
	Counts []int
}

// ParseSweep reads a --sweep value such as "clients=1,10,50,100" or
// "arms=1,100,1000".
func ParseSweep(s string) (SweepSpec, error) {
	key, list, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	if !ok || (key != "clients" && key != "arms") {
		return SweepSpec{}, fmt.Errorf("bench: --sweep %q: want clients=N,N,... or arms=N,N,...", s)
	}
	spec := SweepSpec{Over: key}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return SweepSpec{}, fmt.Errorf("bench: --sweep %q: %q is not a count ≥ 1", s, f)
		}
		spec.Counts = append(spec.Counts, n)
	}
	sort.Ints(spec.Counts)
	return spec, nil
}

// SweepReport is one run per point of a sweep.
type SweepReport struct {
	Machine Machine     `json:"machine"`
	Over    string      `json:"over"` // "clients" or "arms"
	Points  []RunReport `json:"points"`
}

// Sweep runs Run once per count, each against a freshly started hapticd
// (or the same --target). Over clients the bare loop runs once, since it
// does not depend on them; over arms it runs at every point, beside it.
func Sweep(ctx context.Context, o RunOptions, spec SweepSpec) (SweepReport, error) {
	rep := SweepReport{Machine: ThisMachine(), Over: spec.Over}
	cache := &bareCache{}
	defer func() {
		if cache.cleanup != nil {
			cache.cleanup()
		}
	}()
	for _, n := range spec.Counts {
		po := o
		if spec.Over == "arms" {
			po.Arms = n
			cache.bare, cache.err = nil, nil
		} else {
			po.Clients = n
		}
		o.progress("sweep: %d %s", n, spec.Over)
		r, err := run(ctx, po, cache)
		if err != nil {
			return rep, fmt.Errorf("bench: sweep at %d %s: %w", n, spec.Over, err)
		}
		rep.Points = append(rep.Points, r)
	}
	return rep, nil
}

// x is a point's position on the sweep's axis.
func (s SweepReport) x(p RunReport) int {
	if s.Over == "arms" {
		return p.Config.Arms
	}
	return p.Config.Clients
}

func (s SweepReport) axis() string {
	if s.Over == "" {
		return "clients"
	}
	return s.Over
}

// WriteTable writes one line per sweep point.
func (s SweepReport) WriteTable(w io.Writer) error {
	var t textTable
	t.add(s.axis(), "rate Hz", "echo Hz", "ratio", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs", "echo p99 µs", "ratio", "loop p99 µs", "bare+load p99 µs", "lost", "out of order")
	for _, p := range s.Points {
		h := p.Hapticd.Overall
		echoHz, echoP99, rRate, rP99 := "-", "-", "-", "-"
		if p.Echo != nil {
			e := p.Echo.Overall
			echoHz, echoP99 = number(e.AchievedHzTotal), number(e.RTT.P99Us)
			rRate, rP99 = ratioCell(h.AchievedHzTotal, e.AchievedHzTotal), ratioCell(h.RTT.P99Us, e.RTT.P99Us)
		}
		loopP99, loadedP99 := "-", "-"
		if p.Loop != nil {
			loopP99 = number(p.Loop.PeriodP99UsWorst)
		}
		if p.BareLoopLoaded != nil {
			loadedP99 = number(p.BareLoopLoaded.PeriodUsP99)
		}
		t.add(itoa(s.x(p)), number(h.AchievedHzTotal), echoHz, rRate, number(h.RTT.P50Us), number(h.RTT.P90Us),
			number(h.RTT.P99Us), number(h.RTT.P999Us), number(h.RTT.MaxUs), echoP99, rP99, loopP99, loadedP99, utoa(h.Lost), utoa(h.OutOfOrder))
	}
	var b strings.Builder
	if len(s.Points) > 0 {
		c := s.Points[0].Config
		fmt.Fprintf(&b, "hapticbench sweep over %s: %d arms, %d clients, %d observers, %s per client, %gs each, device loop %g Hz; %s %s/%s, %d CPUs\n\n",
			s.axis(), c.Arms, c.Clients, c.Observers, rateText(c.RateHz), c.DurationS, c.LoopHz, s.Machine.GoVersion, s.Machine.OS, s.Machine.Arch, s.Machine.CPUs)
	}
	t.write(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSVG plots RTT percentiles (log scale), the achieved total rate and
// the device loop's period p99 against the swept count, hapticd solid and
// the baselines (echo, bare loop) dashed.
func (s SweepReport) WriteSVG(w io.Writer) error {
	var xs []float64
	var hp50, hp90, hp99, hp999, ep50, ep99, hRate, eRate, target, loopP99, bareP99 []float64
	hasEcho, hasLoop, hasBare := false, false, false
	for _, p := range s.Points {
		xs = append(xs, float64(s.x(p)))
		if p.Loop != nil {
			hasLoop = true
			loopP99 = append(loopP99, p.Loop.PeriodP99UsWorst)
		} else {
			loopP99 = append(loopP99, 0)
		}
		if p.BareLoop != nil {
			hasBare = true
			bareP99 = append(bareP99, p.BareLoop.PeriodUsP99)
		} else {
			bareP99 = append(bareP99, 0)
		}
		h := p.Hapticd.Overall
		hp50, hp90, hp99, hp999 = append(hp50, h.RTT.P50Us), append(hp90, h.RTT.P90Us), append(hp99, h.RTT.P99Us), append(hp999, h.RTT.P999Us)
		hRate = append(hRate, h.AchievedHzTotal)
		target = append(target, p.Config.RateHz*float64(p.Config.Clients+p.Config.Observers))
		var e Overall
		if p.Echo != nil {
			e, hasEcho = p.Echo.Overall, true
		}
		ep50, ep99, eRate = append(ep50, e.RTT.P50Us), append(ep99, e.RTT.P99Us), append(eRate, e.AchievedHzTotal)
	}
	rtt := plotPanel{title: "Round-trip time per lock-step tick", yLabel: "RTT (µs, log scale)", logY: true,
		series: []plotSeries{
			{name: "hapticd p50", color: "#1f77b4", xs: xs, ys: hp50},
			{name: "hapticd p90", color: "#2ca02c", xs: xs, ys: hp90},
			{name: "hapticd p99", color: "#ff7f0e", xs: xs, ys: hp99},
			{name: "hapticd p99.9", color: "#d62728", xs: xs, ys: hp999},
		}}
	rate := plotPanel{title: "Achieved rate, all sessions together", yLabel: "frames per second",
		series: []plotSeries{{name: "hapticd", color: "#1f77b4", xs: xs, ys: hRate}}}
	if hasEcho {
		rtt.series = append(rtt.series,
			plotSeries{name: "echo p50", color: "#1f77b4", dash: "6 4", xs: xs, ys: ep50},
			plotSeries{name: "echo p99", color: "#ff7f0e", dash: "6 4", xs: xs, ys: ep99})
		rate.series = append(rate.series, plotSeries{name: "echo baseline", color: "#7f7f7f", dash: "6 4", xs: xs, ys: eRate})
	}
	if len(s.Points) > 0 && s.Points[0].Config.RateHz > 0 {
		rate.series = append(rate.series, plotSeries{name: "target", color: "#000000", dash: "2 3", xs: xs, ys: target})
	}
	panels := []plotPanel{rtt, rate}
	if hasLoop {
		loop := plotPanel{title: "Device loop period p99 (worst device)", yLabel: "period p99 (µs, log scale)", logY: true,
			series: []plotSeries{{name: "hapticd", color: "#1f77b4", xs: xs, ys: loopP99}}}
		if hasBare {
			loop.series = append(loop.series, plotSeries{name: "bare loop", color: "#7f7f7f", dash: "6 4", xs: xs, ys: bareP99})
		}
		panels = append(panels, loop)
	}
	title := "hapticbench sweep"
	if len(s.Points) > 0 {
		c := s.Points[0].Config
		what := fmt.Sprintf("%d arms", c.Arms)
		if s.Over == "arms" {
			what = fmt.Sprintf("%d clients", c.Clients)
		}
		title = fmt.Sprintf("hapticbench: %s, %s per client, loop %g Hz (%s, %d CPUs)", what, rateText(c.RateHz), c.LoopHz, s.Machine.GoVersion, s.Machine.CPUs)
	}
	logX := len(xs) > 1 && xs[0] > 0 && xs[len(xs)-1]/xs[0] >= 10
	return writePlot(w, title, s.axis(), logX, panels)
}
