package loop

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// golang.org/x/sys/windows does not wrap these kernel32 calls. The lazy
// procs are resolved once and never changed.
var (
	kernel32                   = windows.NewLazySystemDLL("kernel32.dll")
	procCreateWaitableTimerExW = kernel32.NewProc("CreateWaitableTimerExW")
	procSetWaitableTimer       = kernel32.NewProc("SetWaitableTimer")
	procSetThreadPriority      = kernel32.NewProc("SetThreadPriority")
)

const (
	createWaitableTimerHighResolution = 0x00000002 // CREATE_WAITABLE_TIMER_HIGH_RESOLUTION
	timerAllAccess                    = 0x1F0003   // TIMER_ALL_ACCESS
)

// osTimer is the pacer's high-resolution waitable timer, created on the
// first sleep (on the loop's own thread) and closed when the pacer is
// collected. h stays 0 when the system has none (before Windows 10 1803):
// the pacer then sleeps with time.Sleep.
type osTimer struct {
	h     windows.Handle
	tried bool
}

// stop does nothing: the waitable timer is one-shot, armed for each sleep.
func (*osTimer) stop() {}

// sleepUntil sleeps until the monotonic time deadlineNs on a
// high-resolution waitable timer. The default timer resolution (up to
// 15.6 ms) is useless at 1 kHz; the high-resolution one wakes within a
// fraction of a millisecond, which the spin covers.
func (p *Pacer) sleepUntil(deadlineNs int64) {
	if !p.timer.tried {
		p.timer.tried = true
		if h, err := createHighResTimer(); err == nil {
			p.timer.h = h
			runtime.AddCleanup(p, func(h windows.Handle) { _ = windows.CloseHandle(h) }, h)
		}
	}
	h := p.timer.h
	if h == 0 {
		sleepRuntime(deadlineNs)
		return
	}
	err := sleepRelative(deadlineNs, monoNow, func(due int64) error { return waitTimer(h, due) })
	if err != nil {
		sleepRuntime(deadlineNs)
	}
}

func createHighResTimer() (windows.Handle, error) {
	if err := procCreateWaitableTimerExW.Find(); err != nil {
		return 0, err
	}
	r, _, err := procCreateWaitableTimerExW.Call(0, 0, createWaitableTimerHighResolution, timerAllAccess)
	if r == 0 {
		return 0, err
	}
	return windows.Handle(r), nil
}

// waitTimer arms h to fire after due (relative, 100 ns units, negative)
// and waits for it. It runs every tick, so it calls through
// syscall.SyscallN: LazyProc.Call's variadic arguments and boxed error
// allocate on every call.
func waitTimer(h windows.Handle, due int64) error {
	r, _, errno := syscall.SyscallN(procSetWaitableTimer.Addr(), uintptr(h), uintptr(unsafe.Pointer(&due)), 0, 0, 0, 0)
	if r == 0 {
		return fmt.Errorf("actors/loop: SetWaitableTimer: %w", errno)
	}
	ev, err := windows.WaitForSingleObject(h, windows.INFINITE)
	if ev != windows.WAIT_OBJECT_0 {
		return errors.Join(errors.New("actors/loop: waitable timer wait failed"), err)
	}
	return nil
}

// tuneThread raises the calling (locked) thread's priority for pacing
// (windowsThreadPriority) and reports whether it got TIME_CRITICAL, asked
// for with rtPriority > 0. restore puts the thread back to normal and must
// run before the thread is unlocked, so no other goroutine inherits it.
func tuneThread(rtPriority int) (realtime bool, restore func()) {
	prio := windowsThreadPriority(rtPriority)
	if err := setThreadPriority(prio); err != nil {
		return false, func() {}
	}
	return prio == threadPriorityTimeCritical, func() { _ = setThreadPriority(threadPriorityNormal) }
}

func setThreadPriority(prio int) error {
	if err := procSetThreadPriority.Find(); err != nil {
		return err
	}
	r, _, err := procSetThreadPriority.Call(uintptr(windows.CurrentThread()), uintptr(prio))
	if r == 0 {
		return err
	}
	return nil
}

// pacerKeepsP: a Windows pacer waits through the runtime's system-call path
// (KeepP changes nothing here).
const pacerKeepsP = false
