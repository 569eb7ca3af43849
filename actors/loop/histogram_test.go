package loop

import (
	"math/rand/v2"
	"testing"
)

func TestHistogramPercentiles(t *testing.T) {
	tests := []struct {
		name   string
		values func(h *Histogram)
		want   Summary // percentiles compared within 7 %, count and max exactly
	}{
		{"empty", func(h *Histogram) {}, Summary{}},
		{"one value", func(h *Histogram) { h.Record(1000) },
			Summary{Count: 1, P50Ns: 1000, P90Ns: 1000, P99Ns: 1000, P999Ns: 1000, MaxNs: 1000}},
		{"small values are exact", func(h *Histogram) {
			for v := int64(1); v <= 4; v++ {
				h.Record(v)
			}
		}, Summary{Count: 4, P50Ns: 2, P90Ns: 4, P99Ns: 4, P999Ns: 4, MaxNs: 4}},
		{"uniform 1 µs to 1 ms", func(h *Histogram) {
			for v := int64(1); v <= 1000; v++ {
				h.Record(v * 1000)
			}
		}, Summary{Count: 1000, MeanNs: 500_500, P50Ns: 500_000, P90Ns: 900_000, P99Ns: 990_000, P999Ns: 999_000, MaxNs: 1_000_000}},
		{"a 1 % tail", func(h *Histogram) {
			for i := 0; i < 9900; i++ {
				h.Record(1_000_000)
			}
			for i := 0; i < 100; i++ {
				h.Record(5_000_000)
			}
		}, Summary{Count: 10000, P50Ns: 1_000_000, P90Ns: 1_000_000, P99Ns: 1_000_000, P999Ns: 5_000_000, MaxNs: 5_000_000}},
		{"negative counts as zero", func(h *Histogram) { h.Record(-5) }, Summary{Count: 1}},
		{"beyond the range", func(h *Histogram) { h.Record(1 << 50) },
			Summary{Count: 1, P50Ns: 1 << 50, P90Ns: 1 << 50, P99Ns: 1 << 50, P999Ns: 1 << 50, MaxNs: 1 << 50}},
	}
	within := func(got, want int64) bool {
		d := float64(got - want)
		return d*d <= (0.07*float64(want))*(0.07*float64(want))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			tt.values(&h)
			s := h.Summary()
			if s.Count != tt.want.Count || s.MaxNs != tt.want.MaxNs || (tt.want.MeanNs != 0 && s.MeanNs != tt.want.MeanNs) {
				t.Fatalf("count %d max %d, want %d and %d", s.Count, s.MaxNs, tt.want.Count, tt.want.MaxNs)
			}
			for _, p := range []struct {
				name      string
				got, want int64
			}{{"p50", s.P50Ns, tt.want.P50Ns}, {"p90", s.P90Ns, tt.want.P90Ns}, {"p99", s.P99Ns, tt.want.P99Ns}, {"p99.9", s.P999Ns, tt.want.P999Ns}} {
				if !within(p.got, p.want) {
					t.Errorf("%s = %d, want %d ± 7 %%", p.name, p.got, p.want)
				}
			}
		})
	}
}

func TestHistogramBucketsCoverEveryValue(t *testing.T) {
	// Every value maps to a bucket whose reported midpoint is within the
	// bucket's relative width of it, and indexes grow with values.
	prev := -1
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100_000; i++ {
		v := uint64(i)
		if i > 50_000 {
			v = rng.Uint64N(1 << 40)
		}
		idx := histIndex(v)
		if idx < 0 || idx >= histBuckets {
			t.Fatalf("value %d maps to bucket %d of %d", v, idx, histBuckets)
		}
		if i <= 50_000 && idx < prev {
			t.Fatalf("bucket index fell from %d to %d at %d", prev, idx, v)
		}
		prev = idx
		if m := histMid(idx); float64(m) < float64(v)*0.93-1 || float64(m) > float64(v)*1.07+1 {
			t.Fatalf("value %d reported as %d", v, m)
		}
	}
}

func TestHistogramResetAndRecordDoNotAllocate(t *testing.T) {
	var h Histogram
	v := int64(0)
	if a := testing.AllocsPerRun(1000, func() { v += 997; h.Record(v) }); a != 0 {
		t.Fatalf("Record allocates %.1f times, want 0", a)
	}
	if a := testing.AllocsPerRun(10, func() { _ = h.Summary() }); a != 0 {
		t.Fatalf("Summary allocates %.1f times, want 0", a)
	}
	h.Reset()
	if s := h.Summary(); s != (Summary{}) {
		t.Fatalf("summary after Reset = %+v", s)
	}
}

func TestRateWarning(t *testing.T) {
	tests := []struct {
		name     string
		periodNs int64
		jitterNs int64 // every 20th tick is late by this much
		warn     bool
	}{
		{"steady", ms, 0, false},
		{"small jitter", ms, ms / 4, false},
		{"5 % of ticks at 2 ms", ms, ms, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRunnerStats(ms)
			now := int64(1000 * ms)
			var warnings int
			var p99 int64
			for i := 0; i < 2500; i++ {
				now += tt.periodNs
				if i%20 == 0 {
					now += tt.jitterNs
				}
				if w, p := rs.tick(now, false); w {
					warnings++
					p99 = p
				}
			}
			if (warnings > 0) != tt.warn {
				t.Fatalf("%d warnings (p99 %d ns), want warning: %v", warnings, p99, tt.warn)
			}
			if tt.warn && (warnings > 2 || p99 <= ms*3/2) {
				t.Fatalf("%d warnings with p99 %d ns over ~2.5 s, want at most one per second above the bound", warnings, p99)
			}
		})
	}
}
