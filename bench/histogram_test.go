package bench

import (
	"math"
	"testing"
)

func TestHistogramQuantilesOnKnownData(t *testing.T) {
	// 1..100000 ns once each: the q-quantile is q·100000 exactly.
	h := NewHistogram()
	for v := int64(1); v <= 100000; v++ {
		h.Record(v)
	}
	tests := []struct {
		q    float64
		want int64
	}{
		{0.50, 50000},
		{0.90, 90000},
		{0.99, 99000},
		{0.999, 99900},
		{1, 100000},
	}
	for _, tt := range tests {
		got := h.QuantileNs(tt.q)
		if got < tt.want {
			t.Errorf("q%.3f = %d, below the true value %d", tt.q, got, tt.want)
		}
		if rel := float64(got-tt.want) / float64(tt.want); rel > 1.0/subBuckets {
			t.Errorf("q%.3f = %d, %.2f%% above the true value %d", tt.q, got, rel*100, tt.want)
		}
	}
	if h.Count() != 100000 || h.MinNs() != 1 || h.MaxNs() != 100000 {
		t.Errorf("count/min/max = %d/%d/%d, want 100000/1/100000", h.Count(), h.MinNs(), h.MaxNs())
	}
	if m := h.MeanNs(); math.Abs(m-50000.5) > 1e-6 {
		t.Errorf("mean = %v, want 50000.5", m)
	}
}

func TestHistogramSmallValuesAreExact(t *testing.T) {
	h := NewHistogram()
	for _, v := range []int64{3, 7, 7, 200, 255} {
		h.Record(v)
	}
	tests := []struct {
		q    float64
		want int64
	}{{0.2, 3}, {0.4, 7}, {0.6, 7}, {0.8, 200}, {1, 255}}
	for _, tt := range tests {
		if got := h.QuantileNs(tt.q); got != tt.want {
			t.Errorf("q%.1f = %d, want %d", tt.q, got, tt.want)
		}
	}
}

func TestHistogramBucketsCoverEveryValue(t *testing.T) {
	// Each value must land in a bucket whose upper edge is at or above it and
	// whose width keeps the error under one part in 128.
	for _, v := range []int64{0, 1, 255, 256, 257, 511, 512, 1000, 1 << 20, 123456789, 1<<41 - 1} {
		i := bucketIndex(v)
		if i < 0 || i >= bucketCount {
			t.Fatalf("value %d: bucket %d out of range", v, i)
		}
		hi := bucketHighNs(i)
		if hi < v {
			t.Errorf("value %d: bucket %d upper edge %d is below it", v, i, hi)
		}
		if i > 0 && bucketHighNs(i-1) >= v {
			t.Errorf("value %d: previous bucket %d already reaches %d", v, i-1, bucketHighNs(i-1))
		}
		if v >= linearLimit && float64(hi-v)/float64(v) > 1.0/subBuckets {
			t.Errorf("value %d: bucket upper edge %d is too far above", v, hi)
		}
	}
}

func TestHistogramOutOfRangeValues(t *testing.T) {
	h := NewHistogram()
	h.Record(-5)
	h.Record(1 << 50)
	if h.MinNs() != 0 || h.MaxNs() != 1<<50 {
		t.Errorf("min/max = %d/%d, want 0/%d", h.MinNs(), h.MaxNs(), int64(1<<50))
	}
	if got := h.QuantileNs(1); got != 1<<50 {
		t.Errorf("max quantile = %d, want the exact max", got)
	}
}

func TestHistogramMergeEqualsRecordingTogether(t *testing.T) {
	a, b, both := NewHistogram(), NewHistogram(), NewHistogram()
	for v := int64(0); v < 5000; v++ {
		x := v*v%100003 + 1000
		if v%3 == 0 {
			a.Record(x)
		} else {
			b.Record(x)
		}
		both.Record(x)
	}
	merged := NewHistogram()
	merged.Merge(a)
	merged.Merge(b)
	merged.Merge(nil)
	merged.Merge(NewHistogram())
	if merged.Summary() != both.Summary() {
		t.Errorf("merged summary %+v, want %+v", merged.Summary(), both.Summary())
	}
	if merged.MinNs() != both.MinNs() {
		t.Errorf("merged min %d, want %d", merged.MinNs(), both.MinNs())
	}
}

func TestHistogramEmpty(t *testing.T) {
	h := NewHistogram()
	if s := h.Summary(); s != (Summary{}) {
		t.Errorf("empty summary = %+v, want zero", s)
	}
	h.Record(10)
	h.Reset()
	if h.Count() != 0 || h.QuantileNs(0.5) != 0 {
		t.Errorf("reset histogram still holds values")
	}
}

func TestHistogramRecordDoesNotAllocate(t *testing.T) {
	h := NewHistogram()
	v := int64(1)
	allocs := testing.AllocsPerRun(1000, func() {
		h.Record(v)
		v = v*7 + 13
		if v > 1<<40 {
			v = 1
		}
	})
	if allocs != 0 {
		t.Errorf("Record allocates %.1f times per call, want 0", allocs)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := NewHistogram()
	for i := 0; b.Loop(); i++ {
		h.Record(int64(i&0xfffff) + 1000)
	}
}
