package loop

import (
	"runtime"
	"sync"
)

// Procs lends the Go scheduler one P (GOMAXPROCS) for every paced thread
// that sleeps holding its own (Pacer.KeepP), so the process's other
// goroutines keep as many Ps as they had: a thread that sleeps without
// giving its P back would otherwise take it from them, and with every P
// held so, they would run only when the runtime preempts a loop (10 ms).
//
// A process has one Procs, made by its main: two would each read the other's
// loan as the base. Hold and Release are safe for concurrent use; a nil
// *Procs lends nothing. Raising GOMAXPROCS stops the world for a moment, so
// a loop asks once when it starts spinning, not every tick. Once a loan has
// been made, GOMAXPROCS counts as set by the program, and the runtime no
// longer follows a change of the CPU limit (cgroup) by itself.
type Procs struct {
	mu   sync.Mutex // guards the following
	base int        // GOMAXPROCS before the first loan
	lent int
}

// NewProcs returns a Procs that has lent nothing.
func NewProcs() *Procs { return &Procs{} }

// Hold lends one P and reports whether it did: false for a nil Procs and
// where a pacer cannot keep its P (not Linux). A true Hold needs one
// Release.
func (p *Procs) Hold() bool {
	if p == nil || !pacerKeepsP {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lent == 0 {
		p.base = runtime.GOMAXPROCS(0)
	}
	p.lent++
	runtime.GOMAXPROCS(p.base + p.lent)
	return true
}

// Release takes back the P of one true Hold.
func (p *Procs) Release() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lent == 0 {
		return
	}
	p.lent--
	runtime.GOMAXPROCS(p.base + p.lent)
}

// Lent returns how many Ps are lent now.
func (p *Procs) Lent() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lent
}
