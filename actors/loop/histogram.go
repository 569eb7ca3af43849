package loop

import (
	"math/bits"
	"sync/atomic"
)

// Histogram buckets: values below histSub are exact; above, every power of
// two is split into histSub equal buckets, so a bucket is at most 1/8 of its
// value wide (the midpoint reported is within about 6%). Values from 0 to
// 2^40 ns (about 18 minutes) are kept; larger ones land in the last bucket.
const (
	histSubBits = 3
	histSub     = 1 << histSubBits
	histMaxBits = 40
	histBuckets = (histMaxBits-histSubBits)*histSub + histSub
)

// Histogram counts durations in nanoseconds in fixed log-linear buckets. It
// is safe for concurrent use; Record does not allocate and takes no lock.
// The zero value is empty and ready.
type Histogram struct {
	sum     atomic.Int64
	max     atomic.Int64
	buckets [histBuckets]atomic.Uint64
}

// Summary is a histogram's distribution at one moment.
type Summary struct {
	Count                                      uint64
	MeanNs, P50Ns, P90Ns, P99Ns, P999Ns, MaxNs int64
}

func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	if v >= 1<<histMaxBits {
		return histBuckets - 1
	}
	e := bits.Len64(v) - histSubBits - 1
	return (e+1)*histSub + int(v>>e) - histSub
}

// histMid is the midpoint of bucket i, the value reported for it.
func histMid(i int) int64 {
	if i < histSub {
		return int64(i)
	}
	e := i/histSub - 1
	lo := int64(i%histSub+histSub) << e
	return lo + (int64(1)<<e)/2
}

// Record counts one duration; negative values count as zero.
func (h *Histogram) Record(ns int64) {
	if ns < 0 {
		ns = 0
	}
	h.buckets[histIndex(uint64(ns))].Add(1)
	h.sum.Add(ns)
	for {
		m := h.max.Load()
		if ns <= m || h.max.CompareAndSwap(m, ns) {
			break
		}
	}
}

// Summary returns the count, percentiles and maximum recorded so far. The
// count is the buckets' total (Record keeps no separate counter: one atomic
// add fewer per tick). Under concurrent Records it is a close, not an
// exact, picture.
func (h *Histogram) Summary() Summary {
	var counts [histBuckets]uint64
	var total uint64
	for i := range h.buckets {
		counts[i] = h.buckets[i].Load()
		total += counts[i]
	}
	s := Summary{Count: total, MaxNs: h.max.Load()}
	if total == 0 {
		return s
	}
	s.MeanNs = h.sum.Load() / int64(total)
	qs := [...]struct {
		num, den uint64
		dst      *int64
	}{{50, 100, &s.P50Ns}, {90, 100, &s.P90Ns}, {99, 100, &s.P99Ns}, {999, 1000, &s.P999Ns}}
	var seen uint64
	q := 0
	for i := 0; i < histBuckets && q < len(qs); i++ {
		seen += counts[i]
		for q < len(qs) && seen*qs[q].den >= total*qs[q].num && seen > 0 {
			v := histMid(i)
			if v > s.MaxNs || i == histBuckets-1 {
				// A midpoint may exceed the true maximum, and the last
				// bucket also holds everything beyond the range.
				v = s.MaxNs
			}
			*qs[q].dst = v
			q++
		}
	}
	return s
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
}
