package bench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// ParseSweep reads a --sweep value such as "clients=1,10,50,100". Only the
// number of clients can be swept.
func ParseSweep(s string) ([]int, error) {
	key, list, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(key) != "clients" {
		return nil, fmt.Errorf("bench: --sweep %q: want clients=N,N,... (only the number of clients can be swept)", s)
	}
	var out []int
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bench: --sweep %q: %q is not a client count ≥ 1", s, f)
		}
		out = append(out, n)
	}
	sort.Ints(out)
	return out, nil
}

// SweepReport is one run per number of clients.
type SweepReport struct {
	Machine Machine     `json:"machine"`
	Points  []RunReport `json:"points"`
}

// Sweep runs Run once per client count, each against a freshly started
// hapticd (or the same --target), running the bare loop only once since it
// does not depend on the clients.
func Sweep(ctx context.Context, o RunOptions, clients []int) (SweepReport, error) {
	rep := SweepReport{Machine: ThisMachine()}
	cache := &bareCache{}
	defer func() {
		if cache.cleanup != nil {
			cache.cleanup()
		}
	}()
	for _, n := range clients {
		po := o
		po.Clients = n
		o.progress("sweep: %d clients", n)
		r, err := run(ctx, po, cache)
		if err != nil {
			return rep, fmt.Errorf("bench: sweep at %d clients: %w", n, err)
		}
		rep.Points = append(rep.Points, r)
	}
	return rep, nil
}

// WriteTable writes one line per sweep point.
func (s SweepReport) WriteTable(w io.Writer) error {
	var t textTable
	t.add("clients", "rate Hz", "echo Hz", "ratio", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs", "echo p99 µs", "ratio", "loop p99 µs", "lost", "out of order")
	for _, p := range s.Points {
		h := p.Hapticd.Overall
		echoHz, echoP99, rRate, rP99 := "-", "-", "-", "-"
		if p.Echo != nil {
			e := p.Echo.Overall
			echoHz, echoP99 = number(e.AchievedHzTotal), number(e.RTT.P99Us)
			if e.AchievedHzTotal > 0 {
				rRate = fmt.Sprintf("%.2fx", h.AchievedHzTotal/e.AchievedHzTotal)
			}
			if e.RTT.P99Us > 0 {
				rP99 = fmt.Sprintf("%.2fx", h.RTT.P99Us/e.RTT.P99Us)
			}
		}
		loopP99 := "-"
		if p.Loop != nil {
			loopP99 = number(p.Loop.PeriodP99UsWorst)
		}
		t.add(itoa(p.Config.Clients), number(h.AchievedHzTotal), echoHz, rRate, number(h.RTT.P50Us), number(h.RTT.P90Us),
			number(h.RTT.P99Us), number(h.RTT.P999Us), number(h.RTT.MaxUs), echoP99, rP99, loopP99, utoa(h.Lost), utoa(h.OutOfOrder))
	}
	var b strings.Builder
	if len(s.Points) > 0 {
		c := s.Points[0].Config
		fmt.Fprintf(&b, "hapticbench sweep: %d arms, %d observers, %s per client, %gs each, device loop %g Hz; %s %s/%s, %d CPUs\n\n",
			c.Arms, c.Observers, rateText(c.RateHz), c.DurationS, c.LoopHz, s.Machine.GoVersion, s.Machine.OS, s.Machine.Arch, s.Machine.CPUs)
	}
	t.write(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteSVG plots RTT percentiles (log scale) and the achieved total rate
// against the number of clients, hapticd solid and the echo baseline
// dashed.
func (s SweepReport) WriteSVG(w io.Writer) error {
	var xs []float64
	var hp50, hp90, hp99, hp999, ep50, ep99, hRate, eRate, target []float64
	hasEcho := false
	for _, p := range s.Points {
		xs = append(xs, float64(p.Config.Clients))
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
	title := "hapticbench sweep"
	if len(s.Points) > 0 {
		c := s.Points[0].Config
		title = fmt.Sprintf("hapticbench: %d arms, %s per client, loop %g Hz (%s, %d CPUs)", c.Arms, rateText(c.RateHz), c.LoopHz, s.Machine.GoVersion, s.Machine.CPUs)
	}
	logX := len(xs) > 1 && xs[0] > 0 && xs[len(xs)-1]/xs[0] >= 10
	return writePlot(w, title, "clients", logX, []plotPanel{rtt, rate})
}
