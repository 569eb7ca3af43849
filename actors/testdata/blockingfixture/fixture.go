// Package blockingfixture holds actors that block in every way
// TestBlockingCheckFindsEachKind must catch, and some that do not.
package blockingfixture

import (
	"os"
	"sync"
	"time"
)

type sleeper struct{}

func (sleeper) Receive(any) { time.Sleep(time.Millisecond) }

type transitive struct{}

func (transitive) Receive(any) { helper() }

func helper() { deeper() }

func deeper() { time.Sleep(time.Millisecond) }

type filer struct{}

func (filer) Receive(any) { _ = os.WriteFile("x", nil, 0o600) }

type syncer struct{ f *os.File }

func (s syncer) Receive(any) { _ = s.f.Sync() }

type waiter struct{ wg sync.WaitGroup }

func (w *waiter) Receive(any) { w.wg.Wait() }

type receiver struct{ c chan int }

func (r receiver) Receive(any) { <-r.c }

type sender struct{ c chan int }

func (s sender) Receive(any) { s.c <- 1 }

type selector struct{ a, b chan int }

func (s selector) Receive(any) {
	select {
	case <-s.a:
	case <-s.b:
	}
}

type ranger struct{ c chan int }

func (r ranger) Receive(any) {
	for range r.c {
	}
}

type literal struct{}

func (literal) Receive(any) { func() { time.Sleep(time.Millisecond) }() }

type mutual struct{}

func (mutual) Receive(any) { ping(3) }

func ping(n int) {
	if n > 0 {
		pong(n - 1)
	}
}

func pong(n int) {
	ping(n)
	time.Sleep(time.Millisecond)
}

// goroutine blocks only on a goroutine of its own: allowed.
type goroutine struct{ c chan int }

func (g goroutine) Receive(any) {
	go func() {
		time.Sleep(time.Millisecond)
		g.c <- 1
	}()
}

// polite sends and receives only when it would not wait.
type polite struct{ c chan int }

func (p polite) Receive(any) {
	select {
	case p.c <- 1:
	default:
	}
}

type selectDefault struct{ c chan int }

func (s selectDefault) Receive(any) {
	select {
	case v := <-s.c:
		_ = v
	default:
	}
}

// timer hands its blocking work to a timer's goroutine: allowed.
type timer struct{}

func (timer) Receive(any) {
	time.AfterFunc(time.Millisecond, func() { time.Sleep(time.Millisecond) })
}
