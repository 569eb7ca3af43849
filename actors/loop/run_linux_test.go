//go:build linux

package loop

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"golang.org/x/sys/unix"
)

// TestRealtimePriorityIsUndone runs a loop with a real-time priority (which
// it gets when the test runs with CAP_SYS_NICE) and checks that the thread
// is back to normal scheduling afterwards, so no other goroutine inherits it.
func TestRealtimePriorityIsUndone(t *testing.T) {
	runtime.LockOSThread() // keep this goroutine on the thread RunLocked tunes
	defer runtime.UnlockOSThread()
	d := NewDevice(looptest.NewArm(), DeviceOptions{PeriodNs: 200 * int64(time.Microsecond), RealtimePriority: 10})
	ctx, cancel := context.WithCancel(context.Background())
	// RunLocked must run on this goroutine (the thread it tunes), so the
	// wait for ticks runs on another and cannot fail the test: the test's
	// own deadline bounds it.
	go func() {
		for d.Stats().Ticks < 20 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := RunLocked(ctx, d); err != nil {
		t.Fatal(err)
	}
	t.Logf("real-time priority granted: %v", d.Stats().Realtime)
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if attr.Policy != unix.SCHED_NORMAL {
		t.Fatalf("thread policy after RunLocked = %d, want SCHED_NORMAL", attr.Policy)
	}
}

// TestStatsRealtimeTellsTheTruth: Stats.Realtime says whether the loop's
// thread runs SCHED_FIFO, read back from the OS: true exactly when this
// process may take a real-time policy (CAP_SYS_NICE or RLIMIT_RTPRIO) and
// asked for one.
func TestStatsRealtimeTellsTheTruth(t *testing.T) {
	mayRT := func() bool {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: 10}, 0) != nil {
			return false
		}
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: unix.SCHED_NORMAL}, 0); err != nil {
			t.Fatalf("cannot restore normal scheduling: %v", err)
		}
		return true
	}()
	if got := RealtimeGranted(10); got != mayRT {
		t.Errorf("RealtimeGranted(10) = %v; the process may use SCHED_FIFO: %v", got, mayRT)
	}
	if RealtimeGranted(0) {
		t.Error("RealtimeGranted(0) = true: priority 0 asks for no real-time policy")
	}
	for _, prio := range []int{0, 10} {
		d := NewDevice(looptest.NewArm(), DeviceOptions{PeriodNs: 200 * int64(time.Microsecond), RealtimePriority: int32(prio)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- RunLocked(ctx, d) }()
		hwtest.Eventually(t, 10*time.Second, fmt.Sprintf("priority %d: 20 ticks", prio), func() bool { return d.Stats().Ticks >= 20 })
		got := d.Stats().Realtime
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if want := prio > 0 && mayRT; got != want {
			t.Fatalf("priority %d (process may use SCHED_FIFO: %v): Stats.Realtime = %v, want %v", prio, mayRT, got, want)
		}
	}
}

// TestSleepOnlyPacerSleeps: a simulated shard's pacer must really sleep
// (on the timerfd) between ticks, not spin out the period on its thread.
func TestSleepOnlyPacerSleeps(t *testing.T) {
	runtime.LockOSThread() // RUSAGE_THREAD counts this thread only
	defer runtime.UnlockOSThread()
	cpu := func() time.Duration {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	p := NewPacer(int64(time.Millisecond), SystemClock())
	p.SleepOnly()
	start, used := time.Now(), cpu()
	for range 100 {
		p.Wait()
	}
	wall, used := time.Since(start), cpu()-used
	if used > wall/2 {
		t.Fatalf("100 ticks of 1 ms took %v of CPU in %v: the pacer spun instead of sleeping", used, wall)
	}
}

// TestSpinningShardHoldsATunedThread: a shard whose pacer spins (SpinFrom
// devices or more) paces from a thread of its own with a 1 ns timer slack,
// so its clock_nanosleep wakes on time and comes back to its P; below
// SpinFrom it gives the thread back, untuned. The devices' exchanges run on
// the shard's goroutine and read the slack of the thread they run on.
func TestSpinningShardHoldsATunedThread(t *testing.T) {
	s := NewScheduler(SchedulerOptions{Shards: 1, SpinFrom: 2})
	s.Start()
	defer s.Stop()
	var slack atomic.Int64
	readSlack := func(uint64, *hw.Command, *hw.State) {
		v, _ := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
		slack.Store(int64(v))
	}
	add := func() *Device {
		drv := looptest.NewArm()
		drv.SetStateFunc(readSlack)
		d := NewDevice(drv, DeviceOptions{})
		s.Add(d)
		return d
	}
	waitSlack := func(what string, ok func(int64) bool) {
		t.Helper()
		hwtest.EventuallyNil(t, 10*time.Second, what, func() error {
			if v := slack.Load(); !ok(v) {
				return fmt.Errorf("the shard's thread has timer slack %d ns", v)
			}
			return nil
		})
	}
	first := add()
	waitSlack("one device, sleep-only", func(v int64) bool { return v > 1 })
	second := add()
	waitSlack("two devices, spinning", func(v int64) bool { return v == 1 })
	s.Remove(second)
	slack.Store(0)
	waitSlack("back to one device", func(v int64) bool { return v > 1 })
	s.Remove(first)
}

// TestRunLockedProcsLendsAPWhileItRuns: with the process's Procs, a
// hardware loop has one P lent for as long as it runs (its pacer sleeps
// holding its own), and gives it back when it stops, GOMAXPROCS with it;
// without one it lends nothing.
func TestRunLockedProcsLendsAPWhileItRuns(t *testing.T) {
	base := procsAtDefault(t)
	for _, withProcs := range []bool{false, true} {
		t.Run(fmt.Sprintf("procs %v", withProcs), func(t *testing.T) {
			var procs *Procs
			want := 0
			if withProcs {
				procs, want = NewProcs(), 1
			}
			d := NewDevice(looptest.NewArm(), DeviceOptions{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- RunLockedProcs(ctx, d, procs) }()
			hwtest.Eventually(t, 10*time.Second, "20 ticks", func() bool { return d.Stats().Ticks >= 20 })
			if got, now := procs.Lent(), runtime.GOMAXPROCS(0); got != want || now != base+want {
				t.Errorf("running: %d Ps lent, GOMAXPROCS %d; want %d and %d", got, now, want, base+want)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if got, now := procs.Lent(), runtime.GOMAXPROCS(0); got != 0 || now != base {
				t.Errorf("stopped: %d Ps lent, GOMAXPROCS %d; want 0 and %d", got, now, base)
			}
		})
	}
}

// panicAtHalt is a plain driver that panics in Exchange once told to, and
// records GOMAXPROCS when it is halted after that.
type panicAtHalt struct {
	hw.Driver
	panicking   atomic.Bool
	procsAtHalt atomic.Int64
}

func (d *panicAtHalt) Exchange(cmd *hw.Command, st *hw.State) error {
	if d.panicking.Load() {
		panic("test driver: exchange")
	}
	return d.Driver.Exchange(cmd, st)
}

func (d *panicAtHalt) Halt() error {
	if d.panicking.Load() {
		d.procsAtHalt.CompareAndSwap(0, int64(runtime.GOMAXPROCS(0)))
	}
	return d.Driver.Halt()
}

// TestRunLockedProcsHaltsBeforeItGivesThePBack: a hardware loop whose
// driver panics halts its device while its P is still lent; giving the P
// back stops the world, which the halt must not wait for.
func TestRunLockedProcsHaltsBeforeItGivesThePBack(t *testing.T) {
	base := procsAtDefault(t)
	drv := &panicAtHalt{Driver: looptest.NewArm()}
	d := NewDevice(drv, DeviceOptions{})
	done := make(chan error, 1)
	go func() { done <- RunLockedProcs(context.Background(), d, NewProcs()) }()
	hwtest.Eventually(t, 10*time.Second, "20 ticks", func() bool { return d.Stats().Ticks >= 20 })
	drv.panicking.Store(true)
	if err := <-done; err == nil {
		t.Fatal("a loop whose driver panicked returned no error")
	}
	if got := drv.procsAtHalt.Load(); got != int64(base+1) {
		t.Fatalf("GOMAXPROCS at the halt after the panic: %d, want %d (the P still lent)", got, base+1)
	}
	if now := runtime.GOMAXPROCS(0); now != base {
		t.Fatalf("GOMAXPROCS after the loop stopped: %d, want %d", now, base)
	}
}

// BenchmarkRunLockedBesideBusyGoroutines runs a hardware loop at 1 kHz for
// b.N ticks in a process whose every P runs a CPU-bound goroutine (sessions
// under load), its pacer's sleep giving up its P (RunLocked) or keeping it
// (RunLockedProcs). It reports the loop's period p99 and the share of ticks
// overrun; run the two alternated (-count) and compare within a run.
func BenchmarkRunLockedBesideBusyGoroutines(b *testing.B) {
	for _, keep := range []bool{false, true} {
		name := "sleep frees the P"
		if keep {
			name = "sleep keeps the P"
		}
		b.Run(name, func(b *testing.B) {
			var procs *Procs
			if keep {
				procs = NewProcs()
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var spins atomic.Uint64
			for range runtime.GOMAXPROCS(0) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := uint64(0); ; n++ {
						select {
						case <-stop:
							spins.Add(n)
							return
						default:
						}
					}
				}()
			}
			d := NewDevice(looptest.NewArm(), DeviceOptions{})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			b.ResetTimer()
			go func() { done <- RunLockedProcs(ctx, d, procs) }()
			for d.Stats().Ticks < uint64(b.N) {
				time.Sleep(time.Millisecond)
			}
			cancel()
			err := <-done
			b.StopTimer()
			close(stop)
			wg.Wait()
			if err != nil {
				b.Fatal(err)
			}
			st := d.Stats()
			b.ReportMetric(float64(st.Period.P99Ns)/1e3, "period-p99-µs")
			b.ReportMetric(100*float64(st.Overruns)/float64(max(st.Ticks, 1)), "overrun-%")
			b.ReportMetric(float64(spins.Load())/float64(b.N), "busy-spins/tick")
		})
	}
}
