package actors

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// cpuSeconds is the user and kernel CPU time the process has used
// (GetProcessTimes).
func cpuSeconds() float64 {
	var creation, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &creation, &exit, &kernel, &user); err != nil {
		return 0
	}
	// Filetime durations are in 100 ns units.
	ticks := func(f windows.Filetime) float64 { return float64(uint64(f.HighDateTime)<<32 | uint64(f.LowDateTime)) }
	return (ticks(kernel) + ticks(user)) / 1e7
}

// processMemoryCounters is PROCESS_MEMORY_COUNTERS (psapi.h).
type processMemoryCounters struct {
	cb                         uint32
	pageFaultCount             uint32
	peakWorkingSetSize         uintptr
	workingSetSize             uintptr
	quotaPeakPagedPoolUsage    uintptr
	quotaPagedPoolUsage        uintptr
	quotaPeakNonPagedPoolUsage uintptr
	quotaNonPagedPoolUsage     uintptr
	pagefileUsage              uintptr
	peakPagefileUsage          uintptr
}

// getProcessMemoryInfo is kernel32's K32GetProcessMemoryInfo (Windows 7
// and later), which golang.org/x/sys/windows does not wrap. The lazy proc
// is resolved once and never changed.
var getProcessMemoryInfo = windows.NewLazySystemDLL("kernel32.dll").NewProc("K32GetProcessMemoryInfo")

// rssBytes is the process's working set (GetProcessMemoryInfo), which is
// what Task Manager shows as its memory; the Go runtime's own figure when
// the call is missing.
func rssBytes() uint64 {
	var c processMemoryCounters
	c.cb = uint32(unsafe.Sizeof(c))
	if getProcessMemoryInfo.Find() != nil {
		return runtimeMappedBytes()
	}
	r, _, _ := getProcessMemoryInfo.Call(uintptr(windows.CurrentProcess()), uintptr(unsafe.Pointer(&c)), uintptr(c.cb))
	if r == 0 {
		return runtimeMappedBytes()
	}
	return uint64(c.workingSetSize)
}
