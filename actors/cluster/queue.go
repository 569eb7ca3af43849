package cluster

import "sync"

// fifo is an unbounded first-in-first-out queue worked by one goroutine.
// An actor hands it work that waits (a registry request, a config answer
// that fsyncs) without waiting itself, and the work is done in the order
// it was handed: a gateway's config requests are answered in the order
// they came, and a node's devices are added in the order of its
// inventories.
type fifo[T any] struct {
	mu    sync.Mutex
	items []T
	// wake holds one token while items may be non-empty; push never
	// waits for the worker.
	wake chan struct{}
}

func newFIFO[T any]() *fifo[T] { return &fifo[T]{wake: make(chan struct{}, 1)} }

// push queues v; it never blocks.
func (q *fifo[T]) push(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default: // a token is already there
	}
}

// pop takes the oldest item, if any.
func (q *fifo[T]) pop() (T, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var zero T
	if len(q.items) == 0 {
		return zero, false
	}
	v := q.items[0]
	q.items[0] = zero
	q.items = q.items[1:]
	return v, true
}

// run calls do on each item in order until stop closes; items still
// queued then are dropped (their askers time out).
func (q *fifo[T]) run(stop <-chan struct{}, do func(T)) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		v, ok := q.pop()
		if !ok {
			select {
			case <-stop:
				return
			case <-q.wake:
			}
			continue
		}
		do(v)
	}
}
