package loop

import "github.com/hapticd/hapticd/protocol/histogram"

// PeriodHistogram is the histogram behind Stats.Period (the period of the
// device's runner, shared by every device of a scheduler shard), or nil
// before a runner started. Reading it never disturbs the loop.
func (d *Device) PeriodHistogram() *histogram.Histogram {
	if r := d.runner.Load(); r != nil {
		return r.period
	}
	return nil
}

// ExchangeHistogram is the histogram behind Stats.Exchange (its runner's:
// a scheduler shard times a sample of its devices' exchanges), or nil
// before a runner started.
func (d *Device) ExchangeHistogram() *histogram.Histogram {
	if r := d.runner.Load(); r != nil {
		return r.exchange
	}
	return nil
}
