package bench

import (
	"math"
	"math/bits"
)

// Histogram layout: values below linearLimit get one bucket each (exact);
// above it every power of two is split into subBuckets equal buckets, so a
// bucket is never wider than 1/128 of its value (under 0.8 % error), like an
// HDR histogram with two significant decimal digits. The largest tracked
// value is about 2^40 ns (18 minutes); larger values land in the last bucket
// and only Max keeps them exactly.
const (
	subBucketBits = 7
	subBuckets    = 1 << subBucketBits // 128
	linearLimit   = 2 * subBuckets     // 256: values below are exact
	maxShift      = 33                 // highest shift kept: values up to 2^41-1
	bucketCount   = linearLimit + maxShift*subBuckets
)

// Histogram records durations in nanoseconds in fixed log-linear buckets.
// Its memory is fixed (about 36 KiB), Record never allocates, and two
// histograms merge exactly.
//
// A Histogram is not safe for concurrent use: each client loop owns one and
// the report merges them once the loops have stopped.
type Histogram struct {
	count  uint64
	sumNs  float64
	minNs  int64
	maxNs  int64
	counts [bucketCount]uint64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{} }

// bucketIndex maps a non-negative value to its bucket.
func bucketIndex(v int64) int {
	if v < linearLimit {
		return int(v)
	}
	shift := bits.Len64(uint64(v)) - (subBucketBits + 1) // v>>shift is in [128, 256)
	if shift > maxShift {
		return bucketCount - 1
	}
	return linearLimit + (shift-1)*subBuckets + int(v>>uint(shift)) - subBuckets
}

// bucketHighNs is the largest value that lands in bucket i.
func bucketHighNs(i int) int64 {
	if i < linearLimit {
		return int64(i)
	}
	j := i - linearLimit
	shift := j/subBuckets + 1
	low := int64(subBuckets+j%subBuckets) << uint(shift)
	return low + (int64(1) << uint(shift)) - 1
}

// Record adds one duration. Negative durations (a clock that stepped back)
// count as zero.
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	if h.count == 0 || ns < h.minNs {
		h.minNs = ns
	}
	if ns > h.maxNs {
		h.maxNs = ns
	}
	h.count++
	h.sumNs += float64(ns)
	h.counts[bucketIndex(ns)]++
}

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.count == 0 {
		return
	}
	if h.count == 0 || o.minNs < h.minNs {
		h.minNs = o.minNs
	}
	if o.maxNs > h.maxNs {
		h.maxNs = o.maxNs
	}
	h.count += o.count
	h.sumNs += o.sumNs
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

// Reset empties the histogram.
func (h *Histogram) Reset() { *h = Histogram{} }

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.count }

// MaxNs is the largest recorded value, exactly; 0 when empty.
func (h *Histogram) MaxNs() int64 { return h.maxNs }

// MinNs is the smallest recorded value, exactly; 0 when empty.
func (h *Histogram) MinNs() int64 { return h.minNs }

// MeanNs is the mean of the recorded values; 0 when empty.
func (h *Histogram) MeanNs() float64 {
	if h.count == 0 {
		return 0
	}
	return h.sumNs / float64(h.count)
}

// QuantileNs returns the value at quantile q (0..1): the upper edge of the
// bucket holding the ceil(q·count)-th smallest value, clamped to the
// recorded min and max, so it is never below the true quantile and at most
// one bucket width (under 0.8 %) above it. It returns 0 when empty.
func (h *Histogram) QuantileNs(q float64) int64 {
	if h.count == 0 {
		return 0
	}
	if math.IsNaN(q) || q <= 0 {
		return h.minNs
	}
	if q >= 1 {
		return h.maxNs
	}
	rank := uint64(math.Ceil(q * float64(h.count)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := bucketHighNs(i)
			if v > h.maxNs {
				v = h.maxNs
			}
			if v < h.minNs {
				v = h.minNs
			}
			return v
		}
	}
	return h.maxNs
}

// Summary is the distribution of a set of durations, in microseconds for
// reading and for JSON.
type Summary struct {
	Count  uint64  `json:"count"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P99Us  float64 `json:"p99_us"`
	P999Us float64 `json:"p99_9_us"`
	MaxUs  float64 `json:"max_us"`
}

// Summary returns the count, mean and the p50/p90/p99/p99.9/max of h.
func (h *Histogram) Summary() Summary {
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return Summary{
		Count:  h.count,
		MeanUs: h.MeanNs() / 1e3,
		P50Us:  us(h.QuantileNs(0.50)),
		P90Us:  us(h.QuantileNs(0.90)),
		P99Us:  us(h.QuantileNs(0.99)),
		P999Us: us(h.QuantileNs(0.999)),
		MaxUs:  us(h.maxNs),
	}
}
