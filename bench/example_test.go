package bench_test

import (
	"fmt"

	"github.com/hapticd/hapticd/bench"
)

// A histogram per client records round trips without allocating; the
// report merges them and reads percentiles within 0.8 %.
func ExampleHistogram() {
	a, b := bench.NewHistogram(), bench.NewHistogram()
	for _, us := range []int64{100, 120, 130} {
		a.Record(us * 1000)
	}
	for _, us := range []int64{150, 5000} {
		b.Record(us * 1000)
	}
	all := bench.NewHistogram()
	all.Merge(a)
	all.Merge(b)
	s := all.Summary()
	fmt.Printf("count %d, p50 %.0f µs, max %.0f µs\n", s.Count, s.P50Us, s.MaxUs)
	// Output: count 5, p50 130 µs, max 5000 µs
}

func ExampleParseSweep() {
	spec, err := bench.ParseSweep("clients=50,1,10,100")
	fmt.Println(spec.Over, spec.Counts, err)
	// Output: clients [1 10 50 100] <nil>
}
