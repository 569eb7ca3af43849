package loop

import (
	"os"
	"runtime"
	"strconv"
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
// a loop asks once when it starts spinning, not every tick.
//
// While a loan is out GOMAXPROCS counts as set by the program, and the
// runtime does not follow a change of the CPU limit (cgroup) or affinity by
// itself. When the last loan returns, Release gives the runtime its default
// back (runtime.SetDefaultGOMAXPROCS), so it follows them again; unless the
// GOMAXPROCS environment variable set the count (the runtime never follows
// then), in which case the count from before the first loan is restored.
//
// The collector's background share is a quarter of GOMAXPROCS, so a loan
// raises it too (a whole dedicated mark worker at 2 cores + 2 loops).
// Measured, that worker does what the sessions' allocations did as
// assists without the loans, and the collector's CPU went down
// (docs/performance.md, "The collector beside lent Ps").
type Procs struct {
	// explicit says GOMAXPROCS came from the environment: the runtime
	// took it (a positive count) and does not manage it.
	explicit bool

	mu   sync.Mutex // guards the following
	base int        // GOMAXPROCS before the first loan
	lent int
}

// NewProcs returns a Procs that has lent nothing. It reads the GOMAXPROCS
// environment variable, as the runtime did when the process started.
func NewProcs() *Procs { return &Procs{explicit: envSetsGOMAXPROCS(os.Getenv("GOMAXPROCS"))} }

// envSetsGOMAXPROCS says whether the runtime takes this value of the
// GOMAXPROCS environment variable: a positive count that fits in 32 bits,
// parsed as the runtime's schedinit parses it (anything else it ignores,
// keeping its default; Atoi would take a count past 32 bits as set).
func envSetsGOMAXPROCS(v string) bool {
	n, err := strconv.ParseInt(v, 10, 32)
	return err == nil && n > 0
}

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

// Release takes back the P of one true Hold; the last one gives GOMAXPROCS
// back to the runtime's default (or to the environment's count).
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
	switch {
	case p.lent > 0:
		runtime.GOMAXPROCS(p.base + p.lent)
	case p.explicit:
		runtime.GOMAXPROCS(p.base)
	default:
		// Not GOMAXPROCS(p.base): that would leave the count set by the
		// program, frozen at what the CPU limit was before the loan. A
		// count the program itself set with runtime.GOMAXPROCS (hapticd's
		// main sets none; `go test -cpu N` does) is given up here too.
		runtime.SetDefaultGOMAXPROCS()
	}
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
