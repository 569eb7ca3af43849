package transport

// The /metrics collector as it was before metrics1k (2026-11-29): the
// reference TestMetricsDeviceSeriesAsTheRegistryBuiltThem holds today's
// device families to, and the old side of TestMetricsScrapeStallFigure's
// and BenchmarkMetricsScrape1000Arms' before/after figures.

import (
	"math"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/protocol"
)

var deviceLabels = []string{"device_type", "device_id"}

var (
	descPeriod     = prometheus.NewDesc("hapticd_loop_period_seconds", "Time between successive ticks of a device's real-time loop (simulated devices: of their scheduler shard).", deviceLabels, nil)
	descTarget     = prometheus.NewDesc("hapticd_loop_target_period_seconds", "The period a device's loop aims at.", deviceLabels, nil)
	descOverruns   = prometheus.NewDesc("hapticd_loop_overruns_total", "Loop ticks that started after their deadline had passed.", deviceLabels, nil)
	descTicks      = prometheus.NewDesc("hapticd_loop_ticks_total", "Loop ticks that exchanged with the device.", deviceLabels, nil)
	descExchange   = prometheus.NewDesc("hapticd_driver_exchange_seconds", "Driver round trip of one exchange (simulated devices: the simulation step, sampled).", deviceLabels, nil)
	descDrvErrors  = prometheus.NewDesc("hapticd_driver_errors_total", "Driver errors.", deviceLabels, nil)
	descLeases     = prometheus.NewDesc("hapticd_lease_expiries_total", "Controlling sessions released because their lease lapsed.", deviceLabels, nil)
	descBusy       = prometheus.NewDesc("hapticd_busy_refusals_total", "Commands refused because another session controlled the device.", deviceLabels, nil)
	descPassivityJ = prometheus.NewDesc("hapticd_passivity_energy_joules", "Energy of what an arm's passivity controller watches (its scope: by default the rendered effects and navigation; in the output scope the whole force output) since its control began, its own damping included, capped at the reserve (0.2 J; negative: those sources drove the arm).", deviceLabels, nil)
	descAddedDamp  = prometheus.NewDesc("hapticd_passivity_added_damping_newton_seconds_per_metre", "Damping the passivity controller adds to an arm's output now.", deviceLabels, nil)
)

type beforeCollector struct{ serviceCollector }

func (c *beforeCollector) Describe(chan<- *prometheus.Desc) {}

func newBeforeMetricsHandler(svc *actors.Service, build BuildInfo, known startLabels) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&beforeCollector{serviceCollector{svc: svc, build: build, known: known}},
	)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true})
}

func (c *beforeCollector) Collect(ch chan<- prometheus.Metric) {
	svc := c.svc
	ch <- prometheus.MustNewConstMetric(descBuild, prometheus.GaugeValue, 1, c.build.Version, c.build.GitHash)
	for _, d := range svc.Devices().All() {
		lv := []string{d.Name, d.ID}
		st := d.Stats()
		if h := d.PeriodHistogram(); h != nil {
			ch <- beforeNewHistogram(descPeriod, h, periodBuckets, lv)
		}
		ch <- prometheus.MustNewConstMetric(descTarget, prometheus.GaugeValue, float64(st.TargetNs)/1e9, lv...)
		ch <- prometheus.MustNewConstMetric(descOverruns, prometheus.CounterValue, float64(st.Overruns), lv...)
		ch <- prometheus.MustNewConstMetric(descTicks, prometheus.CounterValue, float64(st.Ticks), lv...)
		// Nil for a moment after the device is listed, until its loop
		// starts (as the period's).
		if h := d.ExchangeHistogram(); h != nil {
			ch <- beforeNewHistogram(descExchange, h, exchangeBuckets, lv)
		}
		ch <- prometheus.MustNewConstMetric(descDrvErrors, prometheus.CounterValue, float64(st.Errors), lv...)
		ch <- prometheus.MustNewConstMetric(descLeases, prometheus.CounterValue, float64(st.LeaseExpiries), lv...)
		ch <- prometheus.MustNewConstMetric(descBusy, prometheus.CounterValue, float64(st.BusyRefusals), lv...)
		if d.Type == protocol.TypeArm {
			out := d.Output()
			ch <- prometheus.MustNewConstMetric(descPassivityJ, prometheus.GaugeValue, out.EnergyJ, lv...)
			ch <- prometheus.MustNewConstMetric(descAddedDamp, prometheus.GaugeValue, out.AddedDampingNsPerM, lv...)
		}
	}

	open := map[string]int{"3.x": 0, "3.0": 0}
	for _, s := range svc.Sessions() {
		open[s.APIVersion]++
	}
	for format, n := range open {
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(n), format)
	}
	traffic := make(map[string]actors.FormatTraffic, len(c.known.formats))
	for _, f := range c.known.formats {
		traffic[f] = actors.FormatTraffic{Format: f}
	}
	for _, t := range svc.Traffic() {
		traffic[t.Format] = t
	}
	for _, t := range traffic {
		ch <- prometheus.MustNewConstMetric(descMessages, prometheus.CounterValue, float64(t.Messages), t.Format)
		ch <- prometheus.MustNewConstMetric(descFrames, prometheus.CounterValue, float64(t.Frames), t.Format)
		for code, n := range withZeros(c.known.codes, t.Errors) {
			ch <- prometheus.MustNewConstMetric(descErrors, prometheus.CounterValue, float64(n), t.Format, string(code))
		}
		for code, n := range withZeros(c.known.codes, t.Warnings) {
			ch <- prometheus.MustNewConstMetric(descWarnings, prometheus.CounterValue, float64(n), t.Format, string(code))
		}
	}
	for name, n := range svc.Activity().Counts() {
		ch <- prometheus.MustNewConstMetric(descEvents, prometheus.CounterValue, float64(n), name)
	}
	if c.eventsClosed != nil {
		for reason, n := range withZeros(c.known.closeReasons, c.eventsClosed()) {
			ch <- prometheus.MustNewConstMetric(descEventsGone, prometheus.CounterValue, float64(n), string(reason))
		}
	}
	if c.conns != nil {
		for name, n := range c.conns() {
			ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(n.open), name)
			ch <- prometheus.MustNewConstMetric(descConnsLimit, prometheus.GaugeValue, float64(n.limit), name)
			ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(n.refused), name)
		}
	}
	// The migration report is the activity actor's; asking it is a
	// mailbox round trip, not a lock. A scrape during shutdown skips it.
	if u, err := svc.Activity().Usage(); err == nil {
		for route, n := range withZeros(c.known.deprecatedRoutes, usesByName(u.Routes)) {
			ch <- prometheus.MustNewConstMetric(descDepRoutes, prometheus.CounterValue, float64(n), route)
		}
		for command, n := range withZeros(c.known.deprecatedCommands, usesByName(u.Commands)) {
			ch <- prometheus.MustNewConstMetric(descDepCmds, prometheus.CounterValue, float64(n), command)
		}
		for _, r := range u.Legacy.Routes {
			ch <- prometheus.MustNewConstMetric(descLegacyRts, prometheus.CounterValue, float64(r.Count), r.Route)
		}
		ch <- prometheus.MustNewConstMetric(descLegacySess, prometheus.CounterValue, float64(u.Legacy.Sessions.Count))
	}
	if h := svc.StoreWriteLatency(); h != nil {
		ch <- beforeNewHistogram(descStore, h, storeBuckets, nil)
	}
	if n, ok := svc.StoreWriteFailures(); ok {
		ch <- prometheus.MustNewConstMetric(descStoreFail, prometheus.CounterValue, float64(n))
		ch <- prometheus.MustNewConstMetric(descStoreRetry, prometheus.GaugeValue, float64(svc.StoreDocumentsFailing()))
	}
}

// beforeHistogramMetric is a loop.Histogram as a Prometheus histogram with both
// classic and native buckets.
type beforeHistogramMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	h      dto.Histogram
}

func (m *beforeHistogramMetric) Desc() *prometheus.Desc { return m.desc }

func (m *beforeHistogramMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	out.Histogram = &m.h
	return nil
}

// newHistogram converts h (nanoseconds) to seconds. The loops' buckets
// are log-linear (each power of two split in 8 equal parts), the native
// ones exponential; each loop bucket lands whole in the native bucket, and
// under each classic bound, that holds its midpoint, so a count is never
// split and the error stays within one bucket's width (about 6 %).
func beforeNewHistogram(desc *prometheus.Desc, h actors.Histogram, bounds []float64, labelValues []string) prometheus.Metric {
	type bucket struct {
		mid float64
		n   uint64
	}
	var bs []bucket
	var total, zero uint64
	sum := h.Buckets(func(lo, hi int64, n uint64) {
		total += n
		if lo == 0 {
			zero += n // exact zeros: the native zero bucket
			return
		}
		bs = append(bs, bucket{float64(lo+hi) / 2e9, n})
	})
	m := &beforeHistogramMetric{desc: desc, labels: prometheus.MakeLabelPairs(desc, labelValues)}
	hh := &m.h
	hh.SampleCount = &total
	sumS := float64(sum) / 1e9
	hh.SampleSum = &sumS

	// Classic: cumulative counts under each bound.
	var cum uint64
	i := 0
	for _, b := range bounds {
		for i < len(bs) && bs[i].mid <= b {
			cum += bs[i].n
			i++
		}
		hh.Bucket = append(hh.Bucket, &dto.Bucket{CumulativeCount: proto(cum + zero), UpperBound: proto(b)})
	}

	// Native: bucket index k holds (2^((k-1)/8), 2^(k/8)].
	schema := int32(nativeSchema)
	zeroThreshold := 0.5e-9 // below the smallest non-zero value, 1 ns
	hh.Schema, hh.ZeroThreshold, hh.ZeroCount = &schema, &zeroThreshold, &zero
	var idx []int32
	var counts []uint64
	for _, b := range bs {
		k := int32(math.Ceil(math.Log2(b.mid) * (1 << nativeSchema)))
		if n := len(idx); n > 0 && idx[n-1] == k {
			counts[n-1] += b.n
			continue
		}
		idx = append(idx, k)
		counts = append(counts, b.n)
	}
	var prevIdx int32
	var prevCount int64
	for j, k := range idx {
		if j == 0 || k != prevIdx+1 {
			offset := k
			if j > 0 {
				offset = k - prevIdx - 1
			}
			hh.PositiveSpan = append(hh.PositiveSpan, &dto.BucketSpan{Offset: proto(offset), Length: proto(uint32(0))})
		}
		*hh.PositiveSpan[len(hh.PositiveSpan)-1].Length++
		hh.PositiveDelta = append(hh.PositiveDelta, int64(counts[j])-prevCount)
		prevIdx, prevCount = k, int64(counts[j])
	}
	if len(hh.PositiveSpan) == 0 && total == 0 {
		// An empty native histogram still needs a span list to be told
		// from a classic one.
		hh.PositiveSpan = []*dto.BucketSpan{{Offset: proto(int32(0)), Length: proto(uint32(0))}}
	}
	return m
}
