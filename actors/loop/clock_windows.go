package loop

import (
	"syscall"
	"time"
	"unsafe"
)

// The Go runtime's monotonic clock on Windows is the interrupt time, which
// advances once per clock interrupt (0.5 to 15.6 ms): too coarse for a
// 1 kHz loop's spin. The loop reads QueryPerformanceCounter instead (sub-µs
// on every Windows since 7, and under Wine).
var (
	procQueryPerformanceCounter   = kernel32.NewProc("QueryPerformanceCounter")
	procQueryPerformanceFrequency = kernel32.NewProc("QueryPerformanceFrequency")
	// qpcHz is the counter's fixed frequency (0: unavailable) and
	// runtimeOrigin the fallback's origin; both are set once at package
	// start and never written again.
	qpcHz         = qpcFrequency()
	runtimeOrigin = time.Now()
)

func qpcFrequency() int64 {
	var f int64
	if procQueryPerformanceFrequency.Find() != nil {
		return 0
	}
	if r, _, _ := procQueryPerformanceFrequency.Call(uintptr(unsafe.Pointer(&f))); r == 0 || f <= 0 {
		return 0
	}
	return f
}

// osMonoNow is QueryPerformanceCounter in nanoseconds (documented never to
// fail since Windows XP; the runtime's coarse clock if it does).
func osMonoNow() int64 {
	var c int64
	if qpcHz == 0 {
		return 1 + int64(time.Since(runtimeOrigin))
	}
	// syscall.SyscallN, not LazyProc.Call: Call's variadic arguments and
	// boxed error cost two allocations a reading, and the loop reads the
	// clock several times a tick.
	if r, _, _ := syscall.SyscallN(procQueryPerformanceCounter.Addr(), uintptr(unsafe.Pointer(&c))); r == 0 {
		return 1 + int64(time.Since(runtimeOrigin))
	}
	return qpcToNs(c, qpcHz)
}
