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

// A keyedFIFO does each key's items in the order pushed while another
// key's item blocks, and that key's later items wait behind it; close
// waits for the item under way and drops what is pushed after.
func TestKeyedFIFOKeepsEachKeysOrder(t *testing.T) {
	type item struct {
		key string
		n   int
	}
	release := make(chan struct{})
	got := make(chan item, 2000)
	q := newKeyedFIFO[string](func(v item) {
		if v.key == "hung" && v.n == 0 {
			<-release
		}
		got <- v
	})
	q.push("hung", item{"hung", 0})
	q.push("hung", item{"hung", 1})
	const burst = 1000
	for i := range burst {
		q.push("free", item{"free", i})
	}
	deadline := time.After(10 * time.Second)
	for want := range burst {
		select {
		case v := <-got:
			if v != (item{"free", want}) {
				t.Fatalf("done %+v, want free's item %d (hung's wait behind its first)", v, want)
			}
		case <-deadline:
			t.Fatalf("only %d of free's %d items done while hung's first blocks", want, burst)
		}
	}
	close(release)
	for want := range 2 {
		select {
		case v := <-got:
			if v != (item{"hung", want}) {
				t.Fatalf("done %+v, want hung's item %d", v, want)
			}
		case <-deadline:
			t.Fatalf("hung's item %d not done once released", want)
		}
	}
	closed := make(chan struct{})
	go func() { q.close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("close did not return")
	}
	q.push("free", item{"free", burst})
	select {
	case v := <-got:
		t.Fatalf("done %+v, pushed after close", v)
	default:
	}
}
