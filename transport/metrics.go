package transport

import (
	"maps"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/v30"
)

// newMetricsHandler serves GET /metrics in the Prometheus exposition
// formats. Everything is read at scrape time from what the loops, sessions,
// store and activity actor already count, with atomic loads only: a scrape
// never takes a lock a loop takes and never stops the world (the Go
// collector reads runtime/metrics, not ReadMemStats). protoactor's own
// metrics provider stays off. The per-device series are gathered apart
// (metricsGatherer, metrics_devices.go), and the scrape yields its P every
// yieldEvery, so a large fleet's scrape leaves the loops their ticks.
func newMetricsHandler(svc *actors.Service, build BuildInfo, known startLabels, eventsClosed func() map[protocol.CloseReason]uint64, conns func() map[string]connCounts) http.Handler {
	return newMetricsHandlerYielding(svc, build, known, eventsClosed, conns, yieldEvery)
}

// newMetricsHandlerYielding is newMetricsHandler yielding every yield (0:
// never, for the measurement in metrics_scale_test.go).
func newMetricsHandlerYielding(svc *actors.Service, build BuildInfo, known startLabels, eventsClosed func() map[protocol.CloseReason]uint64, conns func() map[string]connCounts, yield time.Duration) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&serviceCollector{svc: svc, build: build, known: known, eventsClosed: eventsClosed, conns: conns},
	)
	h := promhttp.HandlerFor(&metricsGatherer{reg: reg, svc: svc, yieldEvery: yield}, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&yieldingWriter{ResponseWriter: w, y: newYielder(yield)}, r)
	})
}

// Classic bucket bounds in seconds, beside the native buckets, for
// Prometheus servers that do not scrape native histograms. Loop periods
// cover 8 kHz (125 µs) down to stalls of seconds.
var (
	periodBuckets   = []float64{50e-6, 100e-6, 125e-6, 150e-6, 200e-6, 250e-6, 500e-6, 750e-6, 1e-3, 1.25e-3, 1.5e-3, 2e-3, 3e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1}
	exchangeBuckets = []float64{1e-6, 2.5e-6, 5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 100e-3}
	storeBuckets    = []float64{100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 10}
)

// startLabels are the label values the service knows at start. Their
// series are listed from the first scrape, at 0 until counted: Prometheus'
// rate() and increase() see a series' first increment only if the series
// was there before it. (The 3.0 routes are not among them: hundreds of
// series for a format on its way out; hapticd_legacy_sessions_total and
// the deprecated routes' series are.)
type startLabels struct {
	formats            []string // the API formats of the enabled listeners
	codes              []protocol.Code
	closeReasons       []protocol.CloseReason
	deprecatedRoutes   []string     // deprecatedRouteName of each, in each enabled format
	deprecatedCommands []commandUse // each in each enabled format
}

func newStartLabels(cfg Config) startLabels {
	known := startLabels{codes: protocol.Codes(), closeReasons: protocol.CloseReasons()}
	for _, f := range []struct {
		port   int
		format string
		prefix string
	}{{cfg.Port, protocol.Codec{}.APIVersion(), ""}, {cfg.LegacyPort, v30.Codec{}.APIVersion(), protocol.LegacyRoutePrefix}} {
		if f.port < 0 {
			continue
		}
		known.formats = append(known.formats, f.format)
		for _, d := range protocol.DeprecatedRoutes() {
			known.deprecatedRoutes = append(known.deprecatedRoutes, deprecatedRouteName(d, f.prefix))
		}
	}
	for _, c := range protocol.DeprecatedCommands() {
		for _, f := range known.formats {
			known.deprecatedCommands = append(known.deprecatedCommands, commandUse{c.Name, f})
		}
	}
	return known
}

// commandUse is a deprecated command sent by sessions of one API format.
type commandUse struct{ command, format string }

// commandUses is the count of each deprecated command by API format.
func commandUses(uses []activity.DeprecatedUse) map[commandUse]uint64 {
	m := make(map[commandUse]uint64)
	for _, u := range uses {
		for format, n := range u.ByAPIFormat {
			m[commandUse{u.Name, format}] += n
		}
	}
	return m
}

// withZeros is counts with every known key in it, at 0 where not counted.
func withZeros[K comparable](known []K, counts map[K]uint64) map[K]uint64 {
	out := make(map[K]uint64, len(known)+len(counts))
	for _, k := range known {
		out[k] = 0
	}
	maps.Copy(out, counts)
	return out
}

// usesByName is the count of each deprecated route or command in use.
func usesByName(uses []activity.DeprecatedUse) map[string]uint64 {
	out := make(map[string]uint64, len(uses))
	for _, u := range uses {
		out[u.Name] = u.Count
	}
	return out
}

// serviceCollector is the service-wide hapticd_ part of /metrics (the
// per-device part is metricsGatherer's).
type serviceCollector struct {
	svc   *actors.Service
	build BuildInfo
	known startLabels
	// eventsClosed counts the events socket's ended connections by
	// reason; nil without an events port.
	eventsClosed func() map[protocol.CloseReason]uint64
	// conns reads each listener's connection counts.
	conns func() map[string]connCounts
}

var (
	descBuild      = prometheus.NewDesc("hapticd_build_info", "The running hapticd: version and VCS revision (value 1).", []string{"version", "revision"}, nil)
	descSessions   = prometheus.NewDesc("hapticd_sessions", "Connected simulation sessions.", []string{"api_format"}, nil)
	descMessages   = prometheus.NewDesc("hapticd_messages_total", "Client messages received on simulation sessions.", []string{"api_format"}, nil)
	descFrames     = prometheus.NewDesc("hapticd_frames_total", "Frames sent on simulation sessions (the inventory included).", []string{"api_format"}, nil)
	descErrors     = prometheus.NewDesc("hapticd_frame_errors_total", "Errors reported in frames, by code.", []string{"api_format", "code"}, nil)
	descWarnings   = prometheus.NewDesc("hapticd_frame_warnings_total", "Warnings reported in frames, by code.", []string{"api_format", "code"}, nil)
	descEvents     = prometheus.NewDesc("hapticd_events_total", "Activity events published, by name.", []string{"name"}, nil)
	descEventsGone = prometheus.NewDesc("hapticd_events_sockets_closed_total", "Events WebSocket connections that ended, by reason (the session close reasons).", []string{"reason"}, nil)
	descConns      = prometheus.NewDesc("hapticd_connections", "Connections a listener serves now, WebSockets and idle keep-alives included (at most --max-connections).", []string{"listener"}, nil)
	descConnsLimit = prometheus.NewDesc("hapticd_connections_limit", "A listener's connection limit (--max-connections).", []string{"listener"}, nil)
	descRefused    = prometheus.NewDesc("hapticd_connections_refused_total", "Connections a listener refused over its limit (answered 503, or closed unanswered); a probe served over it is not counted.", []string{"listener"}, nil)
	descDepRoutes  = prometheus.NewDesc("hapticd_deprecated_route_uses_total", "Calls to deprecated HTTP routes (the migration report), by route.", []string{"route"}, nil)
	descDepCmds    = prometheus.NewDesc("hapticd_deprecated_command_uses_total", "Deprecated session commands received (the migration report), by command and the sending session's API format.", []string{"command", "api_format"}, nil)
	descLegacyRts  = prometheus.NewDesc("hapticd_legacy_route_uses_total", "Calls to routes of the 3.0 API format, whose support ends in 4.0, by route.", []string{"route"}, nil)
	descLegacySess = prometheus.NewDesc("hapticd_legacy_sessions_total", "Sessions opened in the 3.0 API format.", nil, nil)
	descStore      = prometheus.NewDesc("hapticd_store_write_seconds", "Durable writes to the state directory (temp file, fsync, rename, directory fsync).", nil, nil)
	descStoreFail  = prometheus.NewDesc("hapticd_store_write_failures_total", "Durable writes to the state directory that failed (a POST answered 500, each retry of a profile document written behind).", nil, nil)
	descStoreRetry = prometheus.NewDesc("hapticd_store_documents_failing", "Profile documents written behind whose last write failed, retried every second until written.", nil, nil)
)

// Describe sends nothing: the collector is unchecked, because its series
// (devices, codes, routes) come and go.
func (c *serviceCollector) Describe(chan<- *prometheus.Desc) {}

func (c *serviceCollector) Collect(ch chan<- prometheus.Metric) {
	svc := c.svc
	ch <- prometheus.MustNewConstMetric(descBuild, prometheus.GaugeValue, 1, c.build.Version, c.build.GitHash)
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
		for use, n := range withZeros(c.known.deprecatedCommands, commandUses(u.Commands)) {
			ch <- prometheus.MustNewConstMetric(descDepCmds, prometheus.CounterValue, float64(n), use.command, use.format)
		}
		for _, r := range u.Legacy.Routes {
			ch <- prometheus.MustNewConstMetric(descLegacyRts, prometheus.CounterValue, float64(r.Count), r.Route)
		}
		ch <- prometheus.MustNewConstMetric(descLegacySess, prometheus.CounterValue, float64(u.Legacy.Sessions.Count))
	}
	if h := svc.StoreWriteLatency(); h != nil {
		ch <- newHistogram(descStore, h, storeBuckets, nil)
	}
	if n, ok := svc.StoreWriteFailures(); ok {
		ch <- prometheus.MustNewConstMetric(descStoreFail, prometheus.CounterValue, float64(n))
		ch <- prometheus.MustNewConstMetric(descStoreRetry, prometheus.GaugeValue, float64(svc.StoreDocumentsFailing()))
	}
}

// nativeSchema is the resolution of the native buckets: 2^3 = 8 buckets
// per power of two, like the loop's own histogram.
const nativeSchema = 3

// histogramMetric is a converted histogram as a prometheus.Metric.
type histogramMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	h      *dto.Histogram
}

func (m *histogramMetric) Desc() *prometheus.Desc { return m.desc }

func (m *histogramMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	out.Histogram = m.h
	return nil
}

// newHistogram is h converted (convertHistogram) as the series of desc
// with labelValues.
func newHistogram(desc *prometheus.Desc, h actors.Histogram, bounds []float64, labelValues []string) prometheus.Metric {
	return &histogramMetric{desc: desc, labels: prometheus.MakeLabelPairs(desc, labelValues), h: convertHistogram(h, bounds)}
}

// convertHistogram is h (nanoseconds) in seconds, with classic and native
// buckets. The loops' buckets are log-linear (each power of two split in 8
// equal parts), the native ones exponential; each loop bucket lands whole in the native bucket, and
// under each classic bound, that holds its midpoint, so a count is never
// split and the error stays within one bucket's width (about 6 %).
func convertHistogram(h actors.Histogram, bounds []float64) *dto.Histogram {
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
	hh := &dto.Histogram{}
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
	return hh
}

func proto[T any](v T) *T { return &v }
