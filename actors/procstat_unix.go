//go:build unix

package actors

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// cpuSeconds is the user and system CPU time the process has used.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// rssBytes is the process's resident set as the kernel counts it
// (/proc/self/statm on Linux, cgo shims and thread stacks included);
// elsewhere (macOS, the BSDs), the memory the Go runtime has mapped and not
// released: their rusage gives only the peak.
func rssBytes() uint64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				return pages * uint64(os.Getpagesize())
			}
		}
	}
	return runtimeMappedBytes()
}
