//go:build linux

package loop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
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
	base := procsAtDefault(t)
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
	base := procsAtDefault(t)
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
	procsAtDefault(t)
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

// procsAtDefault puts GOMAXPROCS at the runtime's default for the test and
// returns it: the testing package sets GOMAXPROCS itself (to each -cpu
// value), and a last Release gives the default back, not the count the
// testing package chose. With GOMAXPROCS in the environment the count is
// left as it is (Release restores it then).
func procsAtDefault(t testing.TB) int {
	t.Helper()
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	if !envSetsGOMAXPROCS(os.Getenv("GOMAXPROCS")) {
		runtime.SetDefaultGOMAXPROCS()
	}
	return runtime.GOMAXPROCS(0)
}

// procsChildEnv makes the test binary TestProcsGiveBackTheDefault's child.
const procsChildEnv = "HAPTICD_LOOP_PROCS_CHILD"

// TestProcsGiveBackTheDefault: once its last loan is back, a Procs hands
// GOMAXPROCS back to the runtime, which follows the CPUs the process may use
// again: the process's affinity, narrowed to one CPU while a loan was out,
// sets the count at the Release, and widened again it brings the default
// back. With GOMAXPROCS set in the environment the runtime never follows,
// and the environment's count comes back instead. The runtime reads the
// environment when a process starts, so each case is a child process.
func TestProcsGiveBackTheDefault(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs: narrowing the affinity to one must change the default")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, env    string // env: GOMAXPROCS, "" for unset
		wantReleased int    // GOMAXPROCS right after the last Release (0: the child's count at start)
		wantWidened  int
	}{
		{"unset", "", 1, 0},
		{"set to 3", "3", 3, 3},
		{"set to x, which the runtime ignores", "x", 1, 0},
		// The runtime parses a 32-bit count: past it, the variable is
		// ignored, and the count is the runtime's to follow again.
		{"set past 32 bits, which the runtime ignores", "4294967296", 1, 0},
	}
	line := regexp.MustCompile(`procs: before=(\d+) released=(\d+) widened=(\d+)`)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(exe, "-test.run", "^TestProcsChildProcess$", "-test.v")
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GOMAXPROCS=") })
			cmd.Env = append(cmd.Env, procsChildEnv+"=1")
			if c.env != "" {
				cmd.Env = append(cmd.Env, "GOMAXPROCS="+c.env)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			m := line.FindStringSubmatch(string(out))
			if m == nil {
				t.Fatalf("child printed no procs line:\n%s", out)
			}
			before, _ := strconv.Atoi(m[1])
			released, _ := strconv.Atoi(m[2])
			widened, _ := strconv.Atoi(m[3])
			wantWidened := c.wantWidened
			if wantWidened == 0 {
				wantWidened = before
			}
			if released != c.wantReleased || widened != wantWidened {
				t.Errorf("GOMAXPROCS %d at start, %d after the last Release (one CPU allowed), %d with every CPU allowed again; want %d and %d",
					before, released, widened, c.wantReleased, wantWidened)
			}
		})
	}
}

// TestProcsChildProcess is TestProcsGiveBackTheDefault's child: it lends a
// P, narrows the process to one CPU, takes the P back, widens the process
// again, and prints GOMAXPROCS at each step.
func TestProcsChildProcess(t *testing.T) {
	if os.Getenv(procsChildEnv) != "1" {
		t.Skip("the child of TestProcsGiveBackTheDefault")
	}
	before := runtime.GOMAXPROCS(0)
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		t.Fatal(err)
	}
	var one unix.CPUSet
	for cpu := range 1024 {
		if all.IsSet(cpu) {
			one.Set(cpu)
			break
		}
	}
	p := NewProcs()
	if !p.Hold() {
		t.Fatal("Hold lent nothing")
	}
	setProcessAffinity(t, one)
	p.Release()
	released := runtime.GOMAXPROCS(0)
	setProcessAffinity(t, all)
	if !envSetsGOMAXPROCS(os.Getenv("GOMAXPROCS")) {
		// The runtime looks again about once a second (sysmon); the parent
		// judges what it sees.
		for deadline := time.Now().Add(10 * time.Second); runtime.GOMAXPROCS(0) != before && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	fmt.Printf("procs: before=%d released=%d widened=%d\n", before, released, runtime.GOMAXPROCS(0))
}

// setProcessAffinity sets the affinity of every thread of the process; a
// thread started meanwhile inherits its starter's, so it repeats until a
// pass finds every thread set.
func setProcessAffinity(t *testing.T, set unix.CPUSet) {
	t.Helper()
	for range 100 {
		tasks, err := filepath.Glob("/proc/self/task/*")
		if err != nil {
			t.Fatal(err)
		}
		changed := false
		for _, task := range tasks {
			tid, err := strconv.Atoi(filepath.Base(task))
			if err != nil {
				continue
			}
			var now unix.CPUSet
			if unix.SchedGetaffinity(tid, &now) != nil || now == set {
				continue // gone, or already set
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil {
				t.Fatalf("affinity of thread %d: %v", tid, err)
			}
			changed = true
		}
		if !changed {
			return
		}
	}
	t.Fatal("threads kept appearing with another affinity")
}

// TestEnvSetsGOMAXPROCSAsTheRuntime: Procs takes the GOMAXPROCS variable
// as set exactly where the runtime does (a positive count in 32 bits,
// base 10, an optional sign), so that the last Release restores a count
// only where the runtime never follows the CPUs.
func TestEnvSetsGOMAXPROCSAsTheRuntime(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want bool
	}{
		{"", false}, {"0", false}, {"-1", false}, {"x", false}, {"2x", false}, {" 2", false}, {"0x2", false},
		{"1_0", false}, {"1", true}, {"3", true}, {"+3", true}, {"007", true},
		{"2147483647", true}, {"2147483648", false}, {"4294967296", false}, {"99999999999999999999", false},
	} {
		if got := envSetsGOMAXPROCS(tc.v); got != tc.want {
			t.Errorf("GOMAXPROCS=%q: set %v, want %v (as the runtime's schedinit takes it)", tc.v, got, tc.want)
		}
	}
}
