package histogram

import (
	"sync"
	"testing"
)

func TestQuantilesOnKnownData(t *testing.T) {
	// 1..100000 ns once each: the q-quantile is q·100000 exactly. Each
	// quantile is never below it and at most one bucket width above.
	for _, p := range []int{3, 7} {
		h := New(p)
		for v := int64(1); v <= 100000; v++ {
			h.Record(v)
		}
		for _, tt := range []struct {
			q    float64
			want int64
		}{{0.50, 50000}, {0.90, 90000}, {0.99, 99000}, {0.999, 99900}, {1, 100000}} {
			got := h.QuantileNs(tt.q)
			if got < tt.want || float64(got-tt.want)/float64(tt.want) > 1/float64(int(1)<<p) {
				t.Errorf("precision %d: q%.3f = %d, want %d to one bucket above", p, tt.q, got, tt.want)
			}
		}
		s := h.Summary()
		if s.Count != 100000 || s.MinNs != 1 || s.MaxNs != 100000 || s.MeanNs != 50000 {
			t.Errorf("precision %d: summary %+v", p, s)
		}
	}
}

func TestSmallValuesAreExact(t *testing.T) {
	h := New(7)
	for _, v := range []int64{3, 7, 7, 100, 127} {
		h.Record(v)
	}
	for _, tt := range []struct {
		q    float64
		want int64
	}{{0.2, 3}, {0.4, 7}, {0.6, 7}, {0.8, 100}, {1, 127}} {
		if got := h.QuantileNs(tt.q); got != tt.want {
			t.Errorf("q%.1f = %d, want %d", tt.q, got, tt.want)
		}
	}
}

func TestBucketsCoverEveryValue(t *testing.T) {
	for _, p := range []int{3, 7} {
		h := New(p)
		for _, v := range []int64{0, 1, 7, 8, 9, 127, 128, 129, 255, 256, 1000, 1 << 20, 123456789, 1<<40 - 1} {
			i := h.index(uint64(v))
			if i < 0 || i >= len(h.buckets) {
				t.Fatalf("precision %d: value %d in bucket %d of %d", p, v, i, len(h.buckets))
			}
			hi := h.upper(i)
			if hi < v || (i > 0 && h.upper(i-1) >= v) {
				t.Errorf("precision %d: value %d in bucket %d, which ends at %d (previous at %d)", p, v, i, hi, h.upper(i-1))
			}
			if float64(hi-v) > float64(v)/float64(int(1)<<p) {
				t.Errorf("precision %d: value %d in a bucket ending at %d, too far above", p, v, hi)
			}
		}
	}
}

func TestOutOfRangeValues(t *testing.T) {
	h := New(3)
	h.Record(-5)
	h.Record(1 << 50)
	if s := h.Summary(); s.MinNs != 0 || s.MaxNs != 1<<50 || h.QuantileNs(1) != 1<<50 || s.P99Ns != 1<<50 {
		t.Errorf("summary %+v, want min 0 and every high quantile the exact max", s)
	}
}

func TestMergeEqualsRecordingTogether(t *testing.T) {
	a, b, both := New(7), New(7), New(7)
	for v := int64(0); v < 5000; v++ {
		x := v*v%100003 + 1000
		if v%3 == 0 {
			a.Record(x)
		} else {
			b.Record(x)
		}
		both.Record(x)
	}
	merged := New(7)
	merged.Merge(a)
	merged.Merge(b)
	merged.Merge(nil)
	merged.Merge(New(7))
	merged.Merge(New(3)) // another precision: ignored
	if merged.Summary() != both.Summary() {
		t.Errorf("merged summary %+v, want %+v", merged.Summary(), both.Summary())
	}
}

func TestEmptyAndReset(t *testing.T) {
	h := New(3)
	if s := h.Summary(); s != (Summary{}) || h.QuantileNs(0.5) != 0 {
		t.Errorf("empty summary = %+v", s)
	}
	h.Record(10)
	h.Reset()
	if s := h.Summary(); s != (Summary{}) {
		t.Errorf("summary after Reset = %+v", s)
	}
}

func TestRecordAndSummaryDoNotAllocate(t *testing.T) {
	h := New(3)
	v := int64(1)
	if a := testing.AllocsPerRun(1000, func() { v = (v*7 + 13) % (1 << 41); h.Record(v) }); a != 0 {
		t.Errorf("Record allocates %.1f times per call, want 0", a)
	}
	if a := testing.AllocsPerRun(10, func() { _ = h.Summary() }); a != 0 {
		t.Errorf("Summary allocates %.1f times per call, want 0", a)
	}
}

// Records from several goroutines while another reads: every value counts.
func TestConcurrentRecords(t *testing.T) {
	h := New(3)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int64(1); i <= 1000; i++ {
				h.Record(i * 1000)
			}
		}()
	}
	for i := 0; i < 10; i++ {
		_ = h.Summary()
	}
	wg.Wait()
	if s := h.Summary(); s.Count != 4000 || s.MinNs != 1000 || s.MaxNs != 1_000_000 {
		t.Fatalf("summary %+v", s)
	}
}

func BenchmarkRecord(b *testing.B) {
	h := New(7)
	for i := 0; b.Loop(); i++ {
		h.Record(int64(i&0xfffff) + 1000)
	}
}
