// Package histogram counts durations in log-linear buckets. It is hapticd's
// one histogram: the device loops record their periods and exchanges in it
// (actors/loop, reported by GET /stats) and the load generator its round
// trips (bench), so both read percentiles the same way.
//
// It lives under protocol because that is the one package both actors and
// bench may import (deps_test.go); like protocol it imports only the
// standard library and does no I/O.
//
// # Buckets
//
// Values below 2^p (p the precision bits given to New) are exact; above,
// every power of two is split into 2^p equal buckets, so a bucket is at most
// 1/2^p of its value wide. Values up to 2^40 ns (about 18 minutes) are
// bucketed; larger ones land in the last bucket, and only the maximum keeps
// them exactly.
//
// # Concurrency
//
// Record, Summary, QuantileNs and Merge are safe for concurrent use, and
// Record neither allocates nor locks (one atomic add per bucket and sum, a
// CAS loop on max and min). Under concurrent Records a Summary is a close,
// not an exact, picture. Reset is for the only recorder.
package histogram

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// maxBits bounds the bucketed range: values from 0 to 2^maxBits ns.
const maxBits = 40

// Histogram is a log-linear histogram of durations in nanoseconds. Create
// it with New.
type Histogram struct {
	sum atomic.Int64
	max atomic.Int64
	// min holds the smallest value plus one, so that zero means "none yet".
	min     atomic.Int64
	subBits int
	buckets []atomic.Uint64
}

// Summary is a histogram's distribution at one moment, in nanoseconds.
type Summary struct {
	Count                                             uint64
	MeanNs, P50Ns, P90Ns, P99Ns, P999Ns, MinNs, MaxNs int64
}

// New returns an empty histogram whose buckets are at most 1/2^precisionBits
// of their value wide (1..10): 3 (12.5 %, 2.4 KiB) for the many loops of a
// service, 7 (0.8 %, 35 KiB) for a load test's few clients.
func New(precisionBits int) *Histogram {
	p := min(max(precisionBits, 1), 10)
	return &Histogram{subBits: p, buckets: make([]atomic.Uint64, (maxBits-p)*(1<<p)+(1<<p))}
}

func (h *Histogram) index(v uint64) int {
	sub := 1 << h.subBits
	if v < uint64(sub) {
		return int(v)
	}
	if v >= 1<<maxBits {
		return len(h.buckets) - 1
	}
	e := bits.Len64(v) - h.subBits - 1
	return (e+1)*sub + int(v>>e) - sub
}

// upper is the largest value bucket i holds.
func (h *Histogram) upper(i int) int64 {
	sub := 1 << h.subBits
	if i < sub {
		return int64(i)
	}
	e := i/sub - 1
	lo := int64(i%sub+sub) << e
	return lo + int64(1)<<e - 1
}

// Record counts one duration; negative values (a clock that stepped back)
// count as zero.
func (h *Histogram) Record(ns int64) {
	ns = max(ns, 0)
	h.buckets[h.index(uint64(ns))].Add(1)
	h.sum.Add(ns)
	for {
		m := h.max.Load()
		if ns <= m || h.max.CompareAndSwap(m, ns) {
			break
		}
	}
	for {
		m := h.min.Load()
		if (m != 0 && ns+1 >= m) || h.min.CompareAndSwap(m, ns+1) {
			break
		}
	}
}

// Merge adds every value recorded in o to h. Both must have the same
// precision; Merge of a different one does nothing.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.subBits != h.subBits {
		return
	}
	for i := range o.buckets {
		if n := o.buckets[i].Load(); n != 0 {
			h.buckets[i].Add(n)
		}
	}
	h.sum.Add(o.sum.Load())
	if m := o.max.Load(); m > 0 {
		for {
			cur := h.max.Load()
			if m <= cur || h.max.CompareAndSwap(cur, m) {
				break
			}
		}
	}
	if m := o.min.Load(); m != 0 {
		for {
			cur := h.min.Load()
			if (cur != 0 && m >= cur) || h.min.CompareAndSwap(cur, m) {
				break
			}
		}
	}
}

// Reset empties the histogram. It is meant for the histogram's only
// recorder (a loop closing a measurement window); concurrent Records may be
// partly lost.
func (h *Histogram) Reset() {
	for i := range h.buckets {
		h.buckets[i].Store(0)
	}
	h.sum.Store(0)
	h.max.Store(0)
	h.min.Store(0)
}

// count is the buckets' total: Record keeps no separate counter (one
// atomic add fewer per tick).
func (h *Histogram) count() uint64 {
	var n uint64
	for i := range h.buckets {
		n += h.buckets[i].Load()
	}
	return n
}

// QuantileNs returns the value at quantile q (0..1): the upper edge of the
// bucket holding the ceil(q·count)-th smallest value, clamped to the
// recorded minimum and maximum, so it is never below the true quantile and
// at most one bucket width above it. It returns 0 when empty.
func (h *Histogram) QuantileNs(q float64) int64 {
	return h.quantile(q, h.count())
}

func (h *Histogram) quantile(q float64, total uint64) int64 {
	if total == 0 {
		return 0
	}
	lo, hi := h.min.Load()-1, h.max.Load()
	if math.IsNaN(q) || q <= 0 {
		return lo
	}
	if q >= 1 {
		return hi
	}
	rank := max(uint64(math.Ceil(q*float64(total))), 1)
	var seen uint64
	for i := range h.buckets {
		if seen += h.buckets[i].Load(); seen >= rank {
			if i == len(h.buckets)-1 {
				return hi // the last bucket also holds everything beyond the range
			}
			return min(max(h.upper(i), lo), hi)
		}
	}
	return hi // Records since total was read moved the rank past the end
}

// Summary returns the count, mean, p50/p90/p99/p99.9, minimum and maximum.
// It does not allocate.
func (h *Histogram) Summary() Summary {
	total := h.count()
	if total == 0 {
		return Summary{}
	}
	return Summary{
		Count:  total,
		MeanNs: h.sum.Load() / int64(total),
		P50Ns:  h.quantile(0.50, total),
		P90Ns:  h.quantile(0.90, total),
		P99Ns:  h.quantile(0.99, total),
		P999Ns: h.quantile(0.999, total),
		MinNs:  h.min.Load() - 1,
		MaxNs:  h.max.Load(),
	}
}
