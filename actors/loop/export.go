package loop

// Buckets calls fn for every non-empty bucket of h, lowest first, with the
// bucket's bounds in nanoseconds (lo inclusive, hi exclusive) and its count,
// and returns the sum of the values recorded. It reads the buckets one
// atomic at a time, so it never stops a recorder; under concurrent Records
// the picture is close rather than exact. The last bucket also holds
// everything beyond the range; its hi is then the maximum recorded + 1.
func (h *Histogram) Buckets(fn func(loNs, hiNs int64, n uint64)) (sumNs int64) {
	for i := range h.buckets {
		n := h.buckets[i].Load()
		if n == 0 {
			continue
		}
		lo, hi := histBounds(i)
		if i == histBuckets-1 {
			hi = max(hi, h.max.Load()+1)
		}
		fn(lo, hi, n)
	}
	return h.sum.Load()
}

// histBounds are bucket i's bounds: [lo, hi).
func histBounds(i int) (lo, hi int64) {
	if i < histSub {
		return int64(i), int64(i) + 1
	}
	e := i/histSub - 1
	lo = int64(i%histSub+histSub) << e
	return lo, lo + int64(1)<<e
}

// PeriodHistogram is the histogram behind Stats.Period (the period of the
// device's runner, shared by every device of a scheduler shard), or nil
// before a runner started. Reading it never disturbs the loop.
func (d *Device) PeriodHistogram() *Histogram {
	if r := d.runner.Load(); r != nil {
		return &r.period
	}
	return nil
}

// ExchangeHistogram is the histogram behind Stats.Exchange.
func (d *Device) ExchangeHistogram() *Histogram { return &d.exchange }
