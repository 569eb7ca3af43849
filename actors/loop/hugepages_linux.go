package loop

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePageBytes is the size of a transparent huge page on amd64 and on
// arm64 with 4 KiB base pages. (Where it is larger, the advice covers less
// than a huge page and changes nothing.)
const hugePageBytes = 2 << 20

// adviseHugePages asks the kernel to back [p, p+n) with huge pages: it
// marks the 2 MiB-aligned range around it MADV_HUGEPAGE, so pages first
// touched there from now on come as huge pages, and collapses what is
// already mapped there into huge pages (MADV_COLLAPSE, Linux 6.1 and
// later; before, khugepaged does it in its own time). The range reaches
// past the allocation to whole huge pages, so neighbouring heap objects
// share them: a few MiB at most, for memory a loop streams every tick.
// Best effort: errors (an old kernel, THP off, no huge page free) leave
// ordinary pages. Not on the tick path: it is a system call or two, and a
// collapse copies up to 2 MiB.
func adviseHugePages(p unsafe.Pointer, n uintptr) {
	beg := uintptr(p) &^ (hugePageBytes - 1)
	end := (uintptr(p) + n + hugePageBytes - 1) &^ (hugePageBytes - 1)
	// The addresses stay uintptrs: the object at p keeps the memory
	// mapped (Go's heap does not move), and KeepAlive holds it to here.
	// ENOMEM: part of the range is not mapped (the heap's edge); the rest
	// took the advice.
	if _, _, e := unix.Syscall(unix.SYS_MADVISE, beg, end-beg, unix.MADV_HUGEPAGE); e == 0 || e == unix.ENOMEM {
		_, _, _ = unix.Syscall(unix.SYS_MADVISE, beg, end-beg, unix.MADV_COLLAPSE)
	}
	runtime.KeepAlive(p)
}
