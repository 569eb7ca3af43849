package loop

import "testing"

// Buckets must hand out every recorded value in a bucket whose bounds
// contain it, so an exporter's cumulative counts are right.
func TestHistogramBucketsContainTheirValues(t *testing.T) {
	values := []int64{0, 3, 7, 8, 9, 15, 16, 999, 1000, 1_000_000, 1_500_000, 1 << 45}
	for _, v := range values {
		var h Histogram
		h.Record(v)
		var got int
		sum := h.Buckets(func(lo, hi int64, n uint64) {
			got++
			if n != 1 || v < lo || v >= hi {
				t.Errorf("value %d: bucket [%d, %d) with count %d", v, lo, hi, n)
			}
		})
		if got != 1 || sum != v {
			t.Errorf("value %d: %d buckets, sum %d", v, got, sum)
		}
	}
}
