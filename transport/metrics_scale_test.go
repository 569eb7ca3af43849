package transport

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/hapticd/hapticd/actors"
)

// startFleet starts a service of n simulated arms at 1 kHz as the hapticd
// binary runs them: one scheduler shard per CPU, GOGC 50 (restored at the
// test's end), the start's garbage released before the first scrape.
func startFleet(t testing.TB, n int) *testService {
	t.Helper()
	old := debug.SetGCPercent(50)
	t.Cleanup(func() { debug.SetGCPercent(old) })
	ts := startService(t, serviceConfig{arms: n, simShards: runtime.NumCPU()})
	debug.FreeOSMemory()
	return ts
}

func (ts *testService) metricsHandler() http.Handler {
	return newMetricsHandler(ts.svc, BuildInfo{Version: "test"}, newStartLabels(Config{Port: 0, LegacyPort: 0}), nil, nil)
}

// discardWriter is an http.ResponseWriter that keeps nothing but the size.
type discardWriter struct {
	h http.Header
	n int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// BenchmarkMetricsScrape1000Arms is one GET /metrics of a 1,000-arm
// service, in the text format (curl's) and the protobuf one (Prometheus'
// with native histograms), handled in process, by today's handler and by
// the registry-built collector of before metrics1k: its allocations per
// scrape are the garbage a scrape leaves the collector.
//
//	go test -run XXX -bench MetricsScrape -benchmem -benchtime 20x ./transport/
func BenchmarkMetricsScrape1000Arms(b *testing.B) {
	ts := startFleet(b, 1000)
	known := newStartLabels(Config{Port: 0, LegacyPort: 0})
	for _, hv := range []struct {
		name string
		h    http.Handler
	}{
		{"before", newBeforeMetricsHandler(ts.svc, BuildInfo{Version: "test"}, known)},
		{"after", ts.metricsHandler()},
	} {
		for _, f := range []struct{ name, accept string }{
			{"text", ""},
			{"protobuf", string(expfmt.NewFormat(expfmt.TypeProtoDelim))},
		} {
			b.Run(hv.name+"/"+f.name, func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
				if f.accept != "" {
					req.Header.Set("Accept", f.accept)
				}
				var size int
				b.ReportAllocs()
				for b.Loop() {
					w := &discardWriter{h: http.Header{}}
					hv.h.ServeHTTP(w, req)
					size = w.n
				}
				b.ReportMetric(float64(size), "bytes/scrape")
			})
		}
	}
}

// shardWatch reads the loops' period histograms (one per scheduler shard)
// and overruns between two moments, without disturbing them.
type shardWatch struct {
	hists []actors.Histogram
	devs  []*actors.Device // one per shard, for its overruns
}

func newShardWatch(svc *actors.Service) *shardWatch {
	w := &shardWatch{}
	for _, d := range svc.Devices().All() {
		h := d.PeriodHistogram()
		if h == nil || slices.Contains(w.hists, h) {
			continue
		}
		w.hists = append(w.hists, h)
		w.devs = append(w.devs, d)
	}
	return w
}

type watchMark struct {
	counts   []map[int64]uint64 // per shard: bucket lo → count
	overruns uint64
	gcs      uint64
}

func (w *shardWatch) mark() watchMark {
	m := watchMark{}
	for i, h := range w.hists {
		c := map[int64]uint64{}
		h.Buckets(func(lo, _ int64, n uint64) { c[lo] = n })
		m.counts = append(m.counts, c)
		m.overruns += w.devs[i].Stats().Overruns
	}
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	m.gcs = s[0].Value.Uint64()
	return m
}

// windowFigure is what the loops did between two marks.
type windowFigure struct {
	maxPeriodMs       float64 // the longest tick period (its bucket's lower bound)
	late2ms, late5ms  uint64  // periods of 2 ms and more, of 5 ms and more
	overruns, gcs     uint64
	ticks             uint64
	scrapeMs, scrapeB []float64
}

func (w *shardWatch) since(a, b watchMark) windowFigure {
	f := windowFigure{overruns: b.overruns - a.overruns, gcs: b.gcs - a.gcs}
	for i := range w.hists {
		for lo, n := range b.counts[i] {
			d := n - a.counts[i][lo]
			if d == 0 {
				continue
			}
			f.ticks += d
			f.maxPeriodMs = max(f.maxPeriodMs, float64(lo)/1e6)
			if lo >= 2e6 {
				f.late2ms += d
			}
			if lo >= 5e6 {
				f.late5ms += d
			}
		}
	}
	return f
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestMetricsScrapeStallFigure measures what GET /metrics does to the loops of a
// large fleet (1,000 simulated arms at 1 kHz on one shard per CPU, as the
// binary runs them): windows of the same length with and without scrapes,
// alternated, and the collector before metrics1k alternated with today's
// (ABAB), in one run. Each scrape is a curl process, as an operator's or
// Prometheus' is (another process). It reports, asserting nothing:
//
//	HAPTICD_SCRAPE_STALL=1 go test -count=1 -v -run ScrapeStallFigure ./transport/
//
// HAPTICD_SCRAPE_STALL_ARMS (1000), _PAIRS (3), _SCRAPES (5 a window) and
// _FORMAT (text; "protobuf" asks as Prometheus does, gzip included) vary it;
// HAPTICD_SCRAPE_STALL_NOGC=1 adds windows of the old collector scraped
// with the garbage collector off (debug.SetGCPercent(-1)), to tell the
// scrape's garbage from its CPU, and of today's without its yields.
func TestMetricsScrapeStallFigure(t *testing.T) {
	if os.Getenv("HAPTICD_SCRAPE_STALL") == "" {
		t.Skip("a measurement, not a test: HAPTICD_SCRAPE_STALL=1 runs it")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl not found")
	}
	arms := envInt("HAPTICD_SCRAPE_STALL_ARMS", 1000)
	pairs := envInt("HAPTICD_SCRAPE_STALL_PAIRS", 3)
	scrapes := envInt("HAPTICD_SCRAPE_STALL_SCRAPES", 5)
	var headers []string
	if os.Getenv("HAPTICD_SCRAPE_STALL_FORMAT") == "protobuf" {
		headers = []string{"-H", "Accept: " + string(expfmt.NewFormat(expfmt.TypeProtoDelim)), "-H", "Accept-Encoding: gzip"}
	}

	ts := startFleet(t, arms)
	known := newStartLabels(Config{Port: 0, LegacyPort: 0})
	mux := http.NewServeMux()
	mux.Handle("/before", newBeforeMetricsHandler(ts.svc, BuildInfo{Version: "test"}, known))
	mux.Handle("/after", ts.metricsHandler())
	mux.Handle("/after-noyield", newMetricsHandlerYielding(ts.svc, BuildInfo{Version: "test"}, known, nil, nil, 0))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	time.Sleep(2 * time.Second) // the shards settle
	watch := newShardWatch(ts.svc)
	t.Logf("%d arms on %d shards, GOMAXPROCS %d", arms, len(watch.hists), runtime.GOMAXPROCS(0))

	const gap = 300 * time.Millisecond
	scrapeWindow := func(path string) (windowFigure, error) {
		a := watch.mark()
		var ms, size []float64
		for range scrapes {
			args := append([]string{"-s", "-o", "/dev/null", "-w", "%{size_download} %{time_total}"}, headers...)
			out, err := exec.Command(curl, append(args, srv.URL+path)...).Output()
			if err != nil {
				return windowFigure{}, fmt.Errorf("curl %s: %w", path, err)
			}
			var n, secs float64
			if _, err := fmt.Sscan(string(out), &n, &secs); err != nil {
				return windowFigure{}, fmt.Errorf("curl's %q: %w", out, err)
			}
			ms, size = append(ms, secs*1e3), append(size, n)
			time.Sleep(gap)
		}
		f := watch.since(a, watch.mark())
		f.scrapeMs, f.scrapeB = ms, size
		return f, nil
	}
	quietWindow := func(d time.Duration) windowFigure {
		a := watch.mark()
		time.Sleep(d)
		return watch.since(a, watch.mark())
	}

	variants := []string{"before", "after"}
	if os.Getenv("HAPTICD_SCRAPE_STALL_NOGC") != "" {
		variants = append(variants, "before-nogc", "after-noyield")
	}
	got := map[string][]windowFigure{}
	// excess is, per scrape window, its periods of 2 ms and more per
	// 1,000 ticks less the quiet window's just after it: the host's own
	// load drifts over a run, a pair sees about the same.
	excess := map[string][]float64{}
	perK := func(n, ticks uint64) float64 { return float64(n) * 1000 / float64(max(ticks, 1)) }
	for p := range pairs {
		for _, v := range variants {
			path, nogc := strings.CutSuffix(v, "-nogc")
			if nogc {
				old := debug.SetGCPercent(-1)
				f, err := scrapeWindow("/" + path)
				debug.SetGCPercent(old)
				if err != nil {
					t.Fatal(err)
				}
				got[v] = append(got[v], f)
			} else {
				f, err := scrapeWindow("/" + path)
				if err != nil {
					t.Fatal(err)
				}
				got[v] = append(got[v], f)
			}
			last := got[v][len(got[v])-1]
			got["quiet"] = append(got["quiet"], quietWindow(time.Duration(scrapes)*(gap+time.Duration(slices.Max(last.scrapeMs))*time.Millisecond)))
			t.Logf("pair %d %-11s: %s", p, v, last)
			quiet := got["quiet"][len(got["quiet"])-1]
			t.Logf("pair %d %-11s: %s", p, "quiet", quiet)
			excess[v] = append(excess[v], perK(last.late2ms, last.ticks)-perK(quiet.late2ms, quiet.ticks))
		}
	}
	// Per 1,000 ticks, so that windows of different lengths compare.
	for _, v := range append(variants, "quiet") {
		var maxes, ms []float64
		var late2, late5, over, ticks uint64
		for _, f := range got[v] {
			maxes = append(maxes, f.maxPeriodMs)
			ms = append(ms, f.scrapeMs...)
			late2, late5, over, ticks = late2+f.late2ms, late5+f.late5ms, over+f.overruns, ticks+f.ticks
		}
		slices.Sort(maxes)
		slices.Sort(ms)
		median := 0.0
		if len(ms) > 0 {
			median = ms[len(ms)/2]
		}
		ex := slices.Sorted(slices.Values(excess[v]))
		exMedian := 0.0
		if len(ex) > 0 {
			exMedian = ex[len(ex)/2]
		}
		t.Logf("%-11s %2d windows: periods >= 2 ms %5.1f (median excess over the next quiet window %5.1f), >= 5 ms %5.1f, overruns %5.1f per 1,000 ticks (%d ticks); window max period median %.1f ms, worst %.1f ms; scrape median %.0f ms",
			v, len(maxes), perK(late2, ticks), exMedian, perK(late5, ticks), perK(over, ticks), ticks, maxes[len(maxes)/2], maxes[len(maxes)-1], median)
	}
}

func (f windowFigure) String() string {
	return fmt.Sprintf("max period %.2f ms, >=2ms %d, >=5ms %d of %d ticks, overruns %d, GCs %d, scrapes %v ms %v B",
		f.maxPeriodMs, f.late2ms, f.late5ms, f.ticks, f.overruns, f.gcs, roundAll(f.scrapeMs), f.scrapeB)
}

func roundAll(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(int(x*10)) / 10
	}
	return out
}
