package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
)

// Placement says which CPUs the load's clients and the servers (hapticd,
// the echo baseline, the bare loop) may run on. On a small shared machine
// the kernel's choice dominates a lock-step round trip: a client and a
// server on the same CPU hand over in a context switch, on two CPUs through
// a wake-up of the other (measured on the 2-core VM: 22 µs against 58 µs at
// p50 for the same service). Left to the kernel, a run lands in one mode or
// the other by chance, and a ratio of two runs measures which; a fixed
// placement, the same for hapticd and its baselines, measures the service.
type Placement string

const (
	// PlaceAny leaves placement to the kernel (the default).
	PlaceAny Placement = ""
	// PlaceShared runs clients and servers on one CPU, the first this
	// process may use.
	PlaceShared Placement = "shared"
	// PlaceSplit runs the clients on the first CPU and the servers on the
	// others.
	PlaceSplit Placement = "split"
)

// ParsePlacement reads a --cpus value.
func ParsePlacement(s string) (Placement, error) {
	switch p := Placement(s); p {
	case PlaceAny, PlaceShared, PlaceSplit:
		return p, nil
	case "any":
		return PlaceAny, nil
	}
	return PlaceAny, fmt.Errorf("bench: placement %q: want any, shared or split", s)
}

// cpuSets returns the CPUs for the clients and for the servers (both nil
// for PlaceAny).
func (p Placement) cpuSets() (client, server []int, err error) {
	if p == PlaceAny {
		return nil, nil, nil
	}
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, nil, fmt.Errorf("bench: placement %s: %w", p, err)
	}
	switch {
	case p == PlaceShared:
		return cpus[:1], cpus[:1], nil
	case len(cpus) < 2:
		return nil, nil, fmt.Errorf("bench: placement split needs two CPUs, this process may use %v", cpus)
	}
	return cpus[:1], cpus[1:], nil
}

// startOn starts cmd with its CPUs limited to cpus (nil: as this process).
//
// A limited child also gets no more Ps (GOMAXPROCS) than it has CPUs, as
// Go's runtime chooses for a process started under taskset: childEnv's
// GOMAXPROCS is this process's, meant for children that share its CPUs.
// Two Ps on one CPU make a runtime wake a second thread whenever a
// goroutine becomes runnable while another runs, only to have the two take
// turns on the CPU: measured with 1 lock-step client, hapticd and the echo
// all on one CPU, hapticd made 1.50 context switches per message with two
// Ps and 1.37 with one (the echo 1.29 either way). hapticd and its
// baselines are all started here, so they get the same number.
func startOn(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	if procs := runtime.GOMAXPROCS(0); len(cpus) < procs {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		// The last value of a variable wins (os/exec).
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(len(cpus)))
	}
	return startPinned(cmd, cpus)
}
