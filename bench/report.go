package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// perSessionRowsMax is the most sessions the table lists one by one; above
// it the table gives the spread across sessions and the JSON keeps them all.
const perSessionRowsMax = 16

// WriteTable writes the human-readable report.
func (r RunReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	c := r.Config
	target := "started hapticd"
	if c.Target != "" {
		target = c.Target
	}
	sub := ""
	if c.Subscribe {
		sub = ", each session subscribed to its own arm"
	}
	fmt.Fprintf(&b, "hapticbench run: %s, %d arms, %d clients + %d observers at %s, %gs measured after %gs warm-up, device loop %g Hz%s\n",
		target, c.Arms, c.Clients, c.Observers, rateText(c.RateHz), c.DurationS, c.WarmupS, c.LoopHz, sub)
	fmt.Fprintf(&b, "machine: %s\n\n", r.Machine)

	var tw textTable
	tw.add("figure", "hapticd", "baseline", "base", "ratio", "pairs min–max")
	for _, cmp := range r.Comparisons {
		base, ratio, spread := "-", "-", ""
		if cmp.Baseline != "-" {
			base, ratio = number(cmp.Base), cmp.ratioText()
		}
		if len(cmp.PairRatios) > 0 {
			spread = fmt.Sprintf("%.2f–%.2f (%d)", cmp.RatioMin, cmp.RatioMax, len(cmp.PairRatios))
		}
		tw.add(cmp.Figure+" ("+cmp.Unit+")", number(cmp.Hapticd), cmp.Baseline, base, ratio, spread)
	}
	tw.write(&b)
	for _, cmp := range r.Comparisons {
		switch {
		case cmp.Flag == FlagBaselineLost && len(cmp.PairRatios) > 0:
			fmt.Fprintf(&b, "FLAG: %s: hapticd beat the %s beyond noise in the median pair (pairs %.2f–%.2f); that baseline was not a floor in this run, so no ratio is given: rerun on a quiet machine\n",
				cmp.Figure, cmp.Baseline, cmp.RatioMin, cmp.RatioMax)
		case cmp.Flag == FlagBaselineLost:
			fmt.Fprintf(&b, "FLAG: %s: hapticd %s beat the %s %s beyond noise; that baseline was not a floor in this run, so no ratio is given: rerun on a quiet machine\n",
				cmp.Figure, number(cmp.Hapticd), cmp.Baseline, number(cmp.Base))
		}
	}
	writePairs(&b, r)
	if c := r.Config; c.Placement != "" {
		fmt.Fprintf(&b, "placement %s: clients on CPUs %v, hapticd and its baselines on CPUs %v\n", c.Placement, c.ClientCPUs, c.ServerCPUs)
	}

	b.WriteString("\n")
	tw = textTable{}
	tw.add("server", "sessions", "sent", "received", "missed deadlines", "lost", "out of order", "error frames", "busy frames", "sessions in error", "frame bytes")
	for _, l := range r.loads() {
		o := l.Overall
		tw.add(l.Server, itoa(o.Sessions), utoa(o.Sent), utoa(o.Received), utoa(o.MissedDeadlines), utoa(o.Lost),
			utoa(o.OutOfOrder), utoa(o.ErrorFrames), utoa(o.BusyFrames), itoa(o.ClientsInError), itoa(o.FrameBytes))
	}
	tw.write(&b)

	if h := r.Hapticd.Overall; h.TargetHz > 0 && h.Sessions > 0 {
		total := h.TargetHz * float64(h.Sessions)
		fmt.Fprintf(&b, "target: %s Hz per session, %s Hz in all; hapticd achieved %.1f %% of it", number(h.TargetHz), number(total), 100*h.AchievedHzTotal/total)
		if r.Echo != nil {
			fmt.Fprintf(&b, ", the echo baseline %.1f %%", 100*r.Echo.Overall.AchievedHzTotal/total)
		}
		b.WriteString("\n")
	}

	b.WriteString("\n")
	writeSessions(&b, r.Hapticd)

	if p := r.Process; p != nil {
		fmt.Fprintf(&b, "\nservice process over the window: CPU %.2f s (%.0f %% of one core), RSS %s, %d goroutines, %d sessions, %d GCs (%.2f ms paused), heap %s\n",
			p.CPUSeconds, p.CPUPercent, bytesText(p.RSSBytes), p.Goroutines, p.Sessions, p.GCCount, p.GCPauseMs, bytesText(p.HeapBytes))
	}
	if l := r.Loop; l != nil {
		fmt.Fprintf(&b, "device loops: %d devices, target period %s µs; period p50 %s µs (median device), p99 %s µs median / %s µs worst, max %s µs worst; overruns %d of %d ticks (worst device %.2f %%, median %.2f %%)\n",
			l.Devices, number(l.TargetUs), number(l.PeriodP50UsMedian), number(l.PeriodP99UsMedian), number(l.PeriodP99UsWorst),
			number(l.PeriodMaxUsWorst), l.Overruns, l.Ticks, 100*l.OverrunFractionWorst, 100*l.OverrunFractionMedian)
	}
	if bl := r.BareLoop; bl != nil {
		fmt.Fprintf(&b, "bare loop: %d arms at %g Hz, %d ticks, %d overruns, period p50 %s µs p99 %s µs, %s ns per arm step\n",
			bl.Arms, bl.LoopHz, bl.Ticks, bl.Overruns, number(bl.PeriodUsP50), number(bl.PeriodUsP99), number(bl.NsPerStep))
	}
	if bl := r.BareLoopLoaded; bl != nil {
		fmt.Fprintf(&b, "bare loop inside an echo's process (the same clients' load), best run: %d arms at %g Hz, %d ticks, %d overruns, period p50 %s µs p99 %s µs\n",
			bl.Arms, bl.LoopHz, bl.Ticks, bl.Overruns, number(bl.PeriodUsP50), number(bl.PeriodUsP99))
	}
	for _, l := range r.loads() {
		for _, cl := range l.Clients {
			for _, e := range cl.Errors {
				fmt.Fprintf(&b, "%s session %d (%s %s): %s\n", l.Server, cl.Index, cl.Role, cl.DeviceID, e)
			}
		}
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", wn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r RunReport) loads() []LoadResult {
	out := []LoadResult{r.Hapticd}
	if r.Echo != nil {
		out = append(out, *r.Echo)
	}
	return out
}

// writeSessions lists each session, or the spread across them when there
// are many.
func writeSessions(b *strings.Builder, l LoadResult) {
	var tw textTable
	if len(l.Clients) <= perSessionRowsMax {
		tw.add("session", "role", "device", "rate Hz", "p50 µs", "p90 µs", "p99 µs", "p99.9 µs", "max µs", "lost", "out of order")
		for _, c := range l.Clients {
			tw.add(itoa(c.Index), string(c.Role), c.DeviceID, number(c.AchievedHz), number(c.RTT.P50Us), number(c.RTT.P90Us),
				number(c.RTT.P99Us), number(c.RTT.P999Us), number(c.RTT.MaxUs), utoa(c.Lost), utoa(c.OutOfOrder))
		}
		tw.write(b)
		return
	}
	fmt.Fprintf(b, "hapticd sessions (spread across %d sessions; every session is in the JSON):\n", len(l.Clients))
	tw.add("per session", "min", "median", "max")
	rows := []struct {
		name string
		get  func(ClientResult) float64
	}{
		{"rate Hz", func(c ClientResult) float64 { return c.AchievedHz }},
		{"rtt p50 µs", func(c ClientResult) float64 { return c.RTT.P50Us }},
		{"rtt p99 µs", func(c ClientResult) float64 { return c.RTT.P99Us }},
		{"rtt max µs", func(c ClientResult) float64 { return c.RTT.MaxUs }},
	}
	for _, row := range rows {
		xs := make([]float64, len(l.Clients))
		for i, c := range l.Clients {
			xs[i] = row.get(c)
		}
		med := median(xs) // sorts xs
		tw.add(row.name, number(xs[0]), number(med), number(xs[len(xs)-1]))
	}
	tw.write(b)
}

// number prints a figure with about four significant digits.
func number(x float64) string {
	switch ax := math.Abs(x); {
	case x == 0:
		return "0"
	case ax >= 1000:
		return fmt.Sprintf("%.0f", x)
	case ax >= 100:
		return fmt.Sprintf("%.1f", x)
	case ax >= 10:
		return fmt.Sprintf("%.2f", x)
	default:
		return fmt.Sprintf("%.3f", x)
	}
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }

func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// WriteJSON writes v to w as indented JSON, ending with a newline.
func WriteJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode report: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// ratioCell is a table's ratio cell, num/den as "1.23x", or "-" where
// den is no figure to divide by (a run that measured nothing).
func ratioCell(num, den float64) string {
	if den <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", num/den)
}

// writePairs explains the paired figures and lists every pair, so that a
// reader sees how far apart the runs were, not only their median.
func writePairs(b *strings.Builder, r RunReport) {
	if len(r.Pairs) == 0 {
		return
	}
	withEcho := 0
	for _, p := range r.Pairs {
		if p.Echo != nil {
			withEcho++
		}
	}
	if withEcho > 0 {
		fmt.Fprintf(b, "echo figures: hapticd and base are the medians of each side's %d runs; ratio is the MEDIAN of the %d per-pair ratios (hapticd run i / echo run i, run back to back), \"pairs min–max\" their range\n",
			len(r.Pairs), withEcho)
	}
	var tw textTable
	tw.add("pair", "hapticd Hz", "echo Hz", "ratio", "hapticd p50 µs", "echo p50 µs", "ratio", "hapticd p99 µs", "echo p99 µs", "ratio")
	for i, p := range r.Pairs {
		h := p.Hapticd
		if p.Echo == nil {
			tw.add(itoa(i+1), number(h.AchievedHzTotal), "-", "-", number(h.RTT.P50Us), "-", "-", number(h.RTT.P99Us), "-", "-")
			continue
		}
		e := *p.Echo
		tw.add(itoa(i+1), number(h.AchievedHzTotal), number(e.AchievedHzTotal), ratioCell(h.AchievedHzTotal, e.AchievedHzTotal),
			number(h.RTT.P50Us), number(e.RTT.P50Us), ratioCell(h.RTT.P50Us, e.RTT.P50Us),
			number(h.RTT.P99Us), number(e.RTT.P99Us), ratioCell(h.RTT.P99Us, e.RTT.P99Us))
	}
	tw.write(b)
	if len(r.Pairs) > 1 {
		b.WriteString("the session table below is the hapticd run of the median rate; every run's figures are in the JSON (pairs)\n")
	}
}

// ratioText is a comparison's ratio column: the ratio, or BASELINE LOST
// when the baseline was no floor (no ratio is given then).
func (c Comparison) ratioText() string {
	switch {
	case c.Flag == FlagBaselineLost && len(c.PairRatios) > 0:
		// The median is kept in sight, never quoted as a ratio.
		return fmt.Sprintf("BASELINE LOST (median pair %.2fx)", median(slices.Clone(c.PairRatios)))
	case c.Flag == FlagBaselineLost:
		return "BASELINE LOST"
	case c.Ratio != 0:
		return fmt.Sprintf("%.2fx", c.Ratio)
	}
	return "-"
}
