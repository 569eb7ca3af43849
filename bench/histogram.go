package bench

import "github.com/hapticd/hapticd/protocol/histogram"

// rttPrecisionBits is the round-trip histograms' precision: buckets at most
// 1/128 of their value wide (under 0.8 % error), like an HDR histogram with
// two significant decimal digits; 35 KiB per client.
const rttPrecisionBits = 7

// newRTTHistogram returns an empty round-trip histogram. The histogram is
// protocol/histogram's, the one the service's loops use too, so both sides'
// percentiles are read the same way.
func newRTTHistogram() *histogram.Histogram { return histogram.New(rttPrecisionBits) }

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

// summarize returns the count, mean and the p50/p90/p99/p99.9/max of h.
// Each percentile is never below the true value and at most one bucket
// above it.
func summarize(h *histogram.Histogram) Summary {
	s := h.Summary()
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return Summary{
		Count:  s.Count,
		MeanUs: us(s.MeanNs),
		P50Us:  us(s.P50Ns),
		P90Us:  us(s.P90Ns),
		P99Us:  us(s.P99Ns),
		P999Us: us(s.P999Ns),
		MaxUs:  us(s.MaxNs),
	}
}
