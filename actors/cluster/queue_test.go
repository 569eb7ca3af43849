package cluster

import (
	"testing"
	"time"
)

// TestFIFOKeepsOrder: work pushed from one goroutine is done in the order
// pushed, including what is pushed while the worker is busy, and push never
// waits for the worker.
func TestFIFOKeepsOrder(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{{"one", 1}, {"a burst", 1000}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newFIFO[int]()
			stop := make(chan struct{})
			release := make(chan struct{})
			got := make(chan int, tt.n)
			done := make(chan struct{})
			go func() {
				defer close(done)
				q.run(stop, func(v int) {
					<-release // the worker is busy until every push is in
					got <- v
				})
			}()
			for i := range tt.n {
				q.push(i) // would hang here if push waited for the worker
			}
			close(release)
			deadline := time.After(10 * time.Second)
			for want := range tt.n {
				select {
				case v := <-got:
					if v != want {
						t.Fatalf("item %d done as number %d", v, want)
					}
				case <-deadline:
					t.Fatalf("only %d of %d items done", want, tt.n)
				}
			}
			close(stop)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the worker did not stop")
			}
		})
	}
}
