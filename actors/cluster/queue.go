package cluster

import "sync"

// fifo is an unbounded first-in-first-out queue worked by one goroutine.
// An actor hands it work that waits (a registry request) without waiting
// itself, and the work is done in the order
// it was handed: a node's devices are added on the gateway in the order
// of its inventories.
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

// keyedFIFO is a fifo per key: each key's items are done in the order they
// came, by a goroutine of the key's own that starts with its first item and
// ends when none are left, so one key's item that waits long (a config
// write on a hung disk) holds none of the other keys', and idle keys (a
// node's thousands of arms) cost nothing.
type keyedFIFO[K comparable, T any] struct {
	do func(T)
	mu sync.Mutex
	// queued are each key's items not yet taken; a key is here while its
	// goroutine runs.
	queued map[K][]T
	closed bool
	wg     sync.WaitGroup
}

func newKeyedFIFO[K comparable, T any](do func(T)) *keyedFIFO[K, T] {
	return &keyedFIFO[K, T]{do: do, queued: map[K][]T{}}
}

// push queues v under k; it never blocks. After close it drops v (its
// asker times out).
func (q *keyedFIFO[K, T]) push(k K, v T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	items, running := q.queued[k]
	q.queued[k] = append(items, v)
	if !running {
		q.wg.Add(1)
		go q.work(k)
	}
}

// work does k's items until none are left or the queue closes.
func (q *keyedFIFO[K, T]) work(k K) {
	defer q.wg.Done()
	for {
		q.mu.Lock()
		items := q.queued[k]
		if len(items) == 0 || q.closed {
			delete(q.queued, k)
			q.mu.Unlock()
			return
		}
		v := items[0]
		var zero T
		items[0] = zero
		q.queued[k] = items[1:]
		q.mu.Unlock()
		q.do(v)
	}
}

// close drops the items not yet begun and waits for the ones under way.
func (q *keyedFIFO[K, T]) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wg.Wait()
}
