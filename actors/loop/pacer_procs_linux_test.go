//go:build linux

package loop

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw/hwtest"
	"golang.org/x/sys/unix"
)

// TestProcsLendsOnePPerHold: each Hold raises GOMAXPROCS by one over what
// it was before the first, each Release lowers it again, a Release with
// nothing lent changes nothing, and a nil Procs lends nothing.
func TestProcsLendsOnePPerHold(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(base) })
	p := NewProcs()
	steps := []struct {
		name     string
		do       func() bool
		wantOK   bool
		wantLent int
	}{
		{"first hold", p.Hold, true, 1},
		{"second hold", p.Hold, true, 2},
		{"one release", func() bool { p.Release(); return true }, true, 1},
		{"last release", func() bool { p.Release(); return true }, true, 0},
		{"release with nothing lent", func() bool { p.Release(); return true }, true, 0},
		{"nil hold", (*Procs)(nil).Hold, false, 0},
	}
	for _, s := range steps {
		if ok := s.do(); ok != s.wantOK {
			t.Fatalf("%s: returned %v, want %v", s.name, ok, s.wantOK)
		}
		if got := p.Lent(); got != s.wantLent {
			t.Fatalf("%s: %d lent, want %d", s.name, got, s.wantLent)
		}
		if got := runtime.GOMAXPROCS(0); got != base+s.wantLent {
			t.Fatalf("%s: GOMAXPROCS %d, want %d", s.name, got, base+s.wantLent)
		}
	}
}

// TestSpinningShardsBorrowAPEach: with Procs, every shard that spins (and so
// sleeps holding its P) has one P lent while it spins, so the process's other
// goroutines keep GOMAXPROCS's Ps; a shard back under SpinFrom, a shard
// left with nothing to step, and every shard at Stop, gives its P back. The
// shards keep ticking all along.
func TestSpinningShardsBorrowAPEach(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(base) })
	procs := NewProcs()
	s := NewScheduler(SchedulerOptions{Shards: 2, ShardFill: 2, SpinFrom: 2, Procs: procs})
	s.Start()
	stopped := false
	defer func() {
		if !stopped {
			s.Stop()
		}
	}()
	var devs []*Device
	add := func(n int) {
		for range n {
			d := NewDevice(looptest.NewArm(), DeviceOptions{})
			s.Add(d)
			devs = append(devs, d)
		}
	}
	wantLent := func(what string, n int) {
		t.Helper()
		hwtest.EventuallyNil(t, 10*time.Second, what, func() error {
			if got, procsNow := procs.Lent(), runtime.GOMAXPROCS(0); got != n || procsNow != base+n {
				return fmt.Errorf("%d Ps lent and GOMAXPROCS %d, want %d and %d", got, procsNow, n, base+n)
			}
			return nil
		})
	}
	ticking := func(what string) {
		t.Helper()
		for _, d := range devs {
			from := d.Stats().Ticks
			hwtest.Eventually(t, 10*time.Second, what+": a device ticks", func() bool { return d.Stats().Ticks >= from+20 })
		}
	}
	add(1)
	wantLent("one device, no shard spinning", 0)
	add(3) // two a shard: both spin
	wantLent("both shards spinning", 2)
	ticking("both shards spinning")
	s.Remove(devs[3])
	devs = devs[:3]
	wantLent("one shard back under SpinFrom", 1)
	ticking("one shard spinning")
	for _, d := range devs {
		s.Remove(d)
	}
	devs = nil
	wantLent("no device left", 0)
	add(2) // to the first shard: it spins again
	wantLent("a shard spinning again", 1)
	ticking("a shard spinning again")
	s.Stop()
	stopped = true
	if got, procsNow := procs.Lent(), runtime.GOMAXPROCS(0); got != 0 || procsNow != base {
		t.Fatalf("after Stop: %d Ps lent and GOMAXPROCS %d, want 0 and %d", got, procsNow, base)
	}
}

// TestKeptPSleepAnswersStopTheWorld: a pacer that sleeps holding its P
// must still let the runtime stop the world (a collection) at once, not at
// its deadline: every goroutine of the process waits for the stop.
func TestKeptPSleepAnswersStopTheWorld(t *testing.T) {
	base := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(base) })
	procs := NewProcs()
	const period = 2 * time.Second
	woke := make(chan time.Time, 1)
	tid := make(chan int, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if procs.Hold() {
			defer procs.Release()
		}
		p := NewPacer(int64(period), SystemClock())
		p.KeepP(true)
		p.Wait() // the grid's first tick
		tid <- unix.Gettid()
		p.Wait()
		woke <- time.Now()
	}()
	// The thread's current system call, as /proc shows it: the sleep.
	sys := fmt.Sprintf("/proc/self/task/%d/syscall", <-tid)
	hwtest.EventuallyNil(t, 10*time.Second, "the pacer's thread in clock_nanosleep", func() error {
		b, err := os.ReadFile(sys)
		if err != nil {
			return err
		}
		if f := strings.Fields(string(b)); len(f) == 0 || f[0] != strconv.Itoa(unix.SYS_CLOCK_NANOSLEEP) {
			return fmt.Errorf("%s: %q", sys, b)
		}
		return nil
	})
	runtime.GC()
	collected := time.Now()
	if w := <-woke; !collected.Before(w) {
		t.Fatalf("the collection ended %v after the pacer woke: it waited for the kept-P sleep's deadline", collected.Sub(w))
	}
}
