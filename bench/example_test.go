package bench_test

import (
	"fmt"

	"github.com/hapticd/hapticd/bench"
)

func ExampleParseSweep() {
	clients, err := bench.ParseSweep("clients=50,1,10,100")
	fmt.Println(clients, err)
	// Output: [1 10 50 100] <nil>
}
