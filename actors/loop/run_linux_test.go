//go:build linux

package loop

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
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
