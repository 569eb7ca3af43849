//go:build linux

package bench

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read CPU affinity: %w", err)
	}
	var cpus []int
	for i := 0; i < 1024 && len(cpus) < set.Count(); i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 0 {
		return nil, errors.New("no CPU in this process's affinity")
	}
	return cpus, nil
}

func cpuSet(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return set
}

// startPinned forks cmd from a thread limited to cpus: a child inherits
// the affinity of the thread that forked it, so every thread it ever
// starts stays on cpus, with no window in which an early one escapes.
func startPinned(cmd *exec.Cmd, cpus []int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return fmt.Errorf("bench: read CPU affinity: %w", err)
	}
	set := cpuSet(cpus)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("bench: limit to CPUs %v: %w", cpus, err)
	}
	err := cmd.Start()
	if rerr := unix.SchedSetaffinity(0, &old); rerr != nil && err == nil {
		// The thread is still limited: keep this goroutine wired to it,
		// so no other goroutine inherits the limit.
		runtime.LockOSThread()
	}
	return err
}

// pinSelf limits every thread of this process to cpus (threads started
// later inherit it from the thread that starts them) and returns what puts
// each back as it was. It goes over the threads twice: a thread started
// by one not yet limited, during the first pass, is caught by the second.
func pinSelf(cpus []int) (restore func(), err error) {
	set := cpuSet(cpus)
	type saved struct {
		tid int
		set unix.CPUSet
	}
	var done []saved
	seen := map[int]bool{}
	restore = func() {
		for _, s := range done {
			_ = unix.SchedSetaffinity(s.tid, &s.set)
		}
	}
	for pass := 0; pass < 2; pass++ {
		if err := pinThreads(set, seen, func(tid int, old unix.CPUSet) { done = append(done, saved{tid, old}) }); err != nil {
			restore()
			return nil, fmt.Errorf("bench: limit this process to CPUs %v: %w", cpus, err)
		}
	}
	return restore, nil
}

// pinThreads limits each thread of this process not in seen to set,
// reporting its previous affinity to saved.
func pinThreads(set unix.CPUSet, seen map[int]bool, saved func(tid int, old unix.CPUSet)) error {
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("list threads: %w", err)
	}
	for _, e := range tids {
		tid, err := strconv.Atoi(e.Name())
		if err != nil || seen[tid] {
			continue
		}
		var old unix.CPUSet
		if unix.SchedGetaffinity(tid, &old) != nil {
			continue // the thread has exited
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue
			}
			return fmt.Errorf("thread %d: %w", tid, err)
		}
		seen[tid] = true
		saved(tid, old)
	}
	return nil
}
