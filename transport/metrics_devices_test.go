package transport

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrapeHandler is one answer of h in the protobuf format, in order.
func scrapeHandler(h http.Handler) ([]*dto.MetricFamily, error) {
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	return decodeFamilies(rec.Body, expfmt.ResponseFormat(rec.Result().Header))
}

func decodeFamilies(r io.Reader, format expfmt.Format) ([]*dto.MetricFamily, error) {
	dec := expfmt.NewDecoder(r, format)
	var out []*dto.MetricFamily
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, mf)
	}
}

func labelString(m *dto.Metric) string {
	var b strings.Builder
	for _, l := range m.Label {
		fmt.Fprintf(&b, "%s=%q,", l.GetName(), l.GetValue())
	}
	return b.String()
}

// The per-device families are built by hand (metrics_devices.go) where
// client_golang's registry built them from const metrics, checked them and
// sorted them: the exposition must stay what the registry made. This
// compares today's handler with the registry-built collector of before
// metrics1k (metrics_before_test.go) on one service of arms and grips on
// two shards: the same families in the same order, with the same help and
// type, the same series in the same order with the same labels, the same
// histogram layout, and values that agree (counters and histogram counts
// never behind the earlier scrape's, the rest equal).
func TestMetricsDeviceSeriesAsTheRegistryBuiltThem(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 40, grips: 3, simShards: 2})
	known := newStartLabels(Config{Port: 0, LegacyPort: 0})
	old := newBeforeMetricsHandler(ts.svc, BuildInfo{Version: "test"}, known)
	h := ts.metricsHandler()
	for round := range 2 {
		// Today's scrape between two of the registry's: each of its
		// counters and histogram counts lies between theirs.
		before, err := scrapeHandler(old)
		if err != nil {
			t.Fatal(err)
		}
		after, err := scrapeHandler(h)
		if err != nil {
			t.Fatal(err)
		}
		later, err := scrapeHandler(old)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, mf := range after {
			names = append(names, mf.GetName())
		}
		if len(before) != len(after) {
			var was []string
			for _, mf := range before {
				was = append(was, mf.GetName())
			}
			t.Fatalf("round %d: %d families %v, the registry made %d %v", round, len(after), names, len(before), was)
		}
		if len(later) != len(before) {
			t.Fatalf("round %d: the registry's scrapes have %d then %d families", round, len(before), len(later))
		}
		for i, b := range before {
			a, l := after[i], later[i]
			if a.GetName() != b.GetName() || a.GetHelp() != b.GetHelp() || a.GetType() != b.GetType() || len(a.Metric) != len(b.Metric) {
				t.Errorf("round %d: family %d is %s (%v, %d series, %q), the registry's %s (%v, %d series, %q)", round, i,
					a.GetName(), a.GetType(), len(a.Metric), a.GetHelp(), b.GetName(), b.GetType(), len(b.Metric), b.GetHelp())
				continue
			}
			if !strings.HasPrefix(a.GetName(), "hapticd_") {
				continue // the Go and process collectors' values move on their own
			}
			if len(l.Metric) != len(b.Metric) {
				t.Errorf("round %d: the registry's %s had %d then %d series", round, b.GetName(), len(b.Metric), len(l.Metric))
				continue
			}
			for j, bm := range b.Metric {
				am, lm := a.Metric[j], l.Metric[j]
				if labelString(am) != labelString(bm) {
					t.Errorf("round %d: %s series %d has labels %s, the registry's %s", round, a.GetName(), j, labelString(am), labelString(bm))
					continue
				}
				if err := sameValue(a.GetName(), bm, am, lm); err != nil {
					t.Errorf("round %d: %s{%s}: %v", round, a.GetName(), labelString(am), err)
				}
			}
		}
	}
	// Prometheus' linter takes the text exposition of many devices.
	if promtool, err := exec.LookPath("promtool"); err == nil {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = rec.Body
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}
	// Each device has each of its families: arms ten, grips eight.
	s := ts.scrape(t)
	for _, dev := range append(ts.armIDs, ts.gripIDs...) {
		n := 0
		for _, f := range deviceMetricFamilies {
			if s.metric(f.name, "device_id="+dev) != nil {
				n++
			}
		}
		if want := map[bool]int{true: 10, false: 8}[strings.Contains(strings.Join(ts.armIDs, ","), dev)]; n != want {
			t.Errorf("device %s has %d of its %d families", dev, n, want)
		}
	}
}

// sameValue checks a series of today's scrape against the registry's
// scrapes just before and just after it: counters and histogram counts
// between theirs, gauges equal to the earlier's (they do not move here),
// the same kind and histogram layout.
func sameValue(name string, before, after, later *dto.Metric) error {
	between := func(b, a, l float64) bool { return b <= a && a <= l }
	switch {
	case before.Counter != nil:
		if after.Counter == nil || !between(before.Counter.GetValue(), after.Counter.GetValue(), later.Counter.GetValue()) {
			return fmt.Errorf("counter %v, the registry's %v then %v", after.Counter, before.Counter, later.Counter)
		}
	case before.Gauge != nil:
		if after.Gauge == nil {
			return fmt.Errorf("no gauge, was %v", before.Gauge)
		}
		if name != "hapticd_sessions" && after.Gauge.GetValue() != before.Gauge.GetValue() {
			return fmt.Errorf("gauge %v, was %v", after.Gauge.GetValue(), before.Gauge.GetValue())
		}
	case before.Histogram != nil:
		a, b, l := after.Histogram, before.Histogram, later.Histogram
		if a == nil {
			return errors.New("no histogram")
		}
		if !between(float64(b.GetSampleCount()), float64(a.GetSampleCount()), float64(l.GetSampleCount())) ||
			!between(b.GetSampleSum(), a.GetSampleSum(), l.GetSampleSum()) ||
			a.GetSchema() != b.GetSchema() || a.GetZeroThreshold() != b.GetZeroThreshold() ||
			len(a.Bucket) != len(b.Bucket) || (len(a.PositiveSpan) == 0) != (len(b.PositiveSpan) == 0) {
			return fmt.Errorf("histogram %d samples (sum %v), schema %d, zero threshold %v, %d classic buckets, %d spans; the registry's %d then %d (%v then %v), %d, %v, %d, %d",
				a.GetSampleCount(), a.GetSampleSum(), a.GetSchema(), a.GetZeroThreshold(), len(a.Bucket), len(a.PositiveSpan),
				b.GetSampleCount(), l.GetSampleCount(), b.GetSampleSum(), l.GetSampleSum(), b.GetSchema(), b.GetZeroThreshold(), len(b.Bucket), len(b.PositiveSpan))
		}
		for k := range a.Bucket {
			if a.Bucket[k].GetUpperBound() != b.Bucket[k].GetUpperBound() ||
				!between(float64(b.Bucket[k].GetCumulativeCount()), float64(a.Bucket[k].GetCumulativeCount()), float64(l.Bucket[k].GetCumulativeCount())) {
				return fmt.Errorf("classic bucket %d: %v, the registry's %v then %v", k, a.Bucket[k], b.Bucket[k], l.Bucket[k])
			}
		}
	default:
		return fmt.Errorf("series of no known type: %v", before)
	}
	return nil
}

// Scrapes that overlap share no series (under -race, one written while
// another scrape encodes it is a reported race), and each sees every
// device once, with its own labels.
func TestMetricsConcurrentScrapesKeepTheirSeries(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 30, grips: 2, simShards: 2})
	want := map[string]bool{}
	for _, id := range append(ts.armIDs, ts.gripIDs...) {
		want[id] = true
	}
	h := ts.metricsHandler()
	var wg sync.WaitGroup
	errs := make(chan error, 4*5)
	for range 4 {
		wg.Go(func() {
			for range 5 {
				mfs, err := scrapeHandler(h)
				if err != nil {
					errs <- err
					return
				}
				for _, mf := range mfs {
					if mf.GetName() != "hapticd_loop_ticks_total" {
						continue
					}
					seen := map[string]bool{}
					for _, m := range mf.Metric {
						id := m.Label[0].GetValue()
						if m.Label[0].GetName() != "device_id" || !want[id] || seen[id] || m.Counter.GetValue() < 0 {
							errs <- fmt.Errorf("ticks series %s (%v) in a scrape of devices %v", labelString(m), m.Counter, want)
						}
						seen[id] = true
					}
					if len(seen) != len(want) {
						errs <- fmt.Errorf("a scrape has ticks of %d devices, want %d", len(seen), len(want))
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
