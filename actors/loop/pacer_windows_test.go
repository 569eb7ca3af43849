package loop

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// On Windows the pacer sleeps most of each period on a high-resolution
// waitable timer, not the time.Sleep fallback, and meets its deadlines on
// the QPC clock: no Wait that was not an overrun returns before its
// deadline.
func TestPacerUsesAHighResolutionTimer(t *testing.T) {
	const period = 2 * int64(time.Millisecond)
	p := NewPacer(period, SystemClock())
	p.Wait() // starts the grid
	for i := 1; i <= 50; i++ {
		deadline := p.next + period
		now, overrun := p.Wait()
		if !overrun && now < deadline {
			t.Fatalf("tick %d returned %d ns before its deadline", i, deadline-now)
		}
	}
	if p.timer.h == 0 {
		t.Fatal("no high-resolution waitable timer was created (CreateWaitableTimerExW with CREATE_WAITABLE_TIMER_HIGH_RESOLUTION failed); the pacer fell back to time.Sleep")
	}
}

// A loop thread's priority is raised while it runs and back to normal after.
func TestTuneThreadRaisesAndRestoresPriority(t *testing.T) {
	runtime.LockOSThread() // the priority is the thread's: stay on it
	defer runtime.UnlockOSThread()
	tests := []struct {
		rt       int
		want     int
		realtime bool
	}{
		{0, threadPriorityHighest, false},
		{10, threadPriorityTimeCritical, true},
	}
	for _, tc := range tests {
		realtime, restore := tuneThread(tc.rt)
		got := threadPriority(t)
		restore()
		if got != tc.want || realtime != tc.realtime {
			t.Errorf("tuneThread(%d): priority %d realtime %v, want %d %v", tc.rt, got, realtime, tc.want, tc.realtime)
		}
		if after := threadPriority(t); after != threadPriorityNormal {
			t.Errorf("after restore the priority is %d, want normal", after)
		}
	}
}

var procGetThreadPriority = kernel32.NewProc("GetThreadPriority")

func threadPriority(t *testing.T) int {
	t.Helper()
	r, _, err := procGetThreadPriority.Call(uintptr(windows.CurrentThread()))
	if int32(r) == 0x7fffffff { // THREAD_PRIORITY_ERROR_RETURN
		t.Fatalf("GetThreadPriority: %v", err)
	}
	return int(int32(r))
}
