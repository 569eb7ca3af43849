package histogram_test

import (
	"fmt"

	"github.com/hapticd/hapticd/protocol/histogram"
)

// A histogram per client records round trips without allocating; a report
// merges them and reads percentiles within one bucket (0.8 % at precision 7).
func Example() {
	a, b := histogram.New(7), histogram.New(7)
	for _, us := range []int64{100, 120, 130} {
		a.Record(us * 1000)
	}
	for _, us := range []int64{150, 5000} {
		b.Record(us * 1000)
	}
	all := histogram.New(7)
	all.Merge(a)
	all.Merge(b)
	s := all.Summary()
	fmt.Printf("count %d, p50 %.0f µs, max %.0f µs\n", s.Count, float64(s.P50Ns)/1e3, float64(s.MaxNs)/1e3)
	// Output: count 5, p50 130 µs, max 5000 µs
}
