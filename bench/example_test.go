package bench_test

import (
	"fmt"

	"github.com/hapticd/hapticd/bench"
)

func ExampleParseSweep() {
	spec, err := bench.ParseSweep("clients=50,1,10,100")
	fmt.Println(spec.Over, spec.Counts, err)
	// Output: clients [1 10 50 100] <nil>
}
