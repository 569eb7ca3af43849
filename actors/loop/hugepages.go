package loop

import (
	"os"
	"unsafe"
)

// The memory a loop streams every tick (a shard's blocks and their effect
// stages, the bare loop's arms) runs to tens of megabytes at thousands of
// arms: on 4 KiB pages, thousands of pages a tick, more than the TLB
// holds, so each new page of a pass may cost a page walk. Go's heap does
// not ask the kernel for transparent huge pages, and where they are
// enabled only on request (`madvise` in
// /sys/kernel/mm/transparent_hugepage/enabled, as on many distributions)
// it gets none. So the loop's hot memory is allocated here, on the Go heap
// (the collector sees every pointer in it, as in any other allocation),
// and the kernel is asked to back it with 2 MiB pages.

// hugePagesEnv set to 1 turns the request on, for the service's shards and
// the bare loops alike. It is off by default: on the quiet machine it made
// the service's step 1 % cheaper at 10,000 arms, nothing at 2,000, and the
// capacity search no better (0.65x of the bare loop with it, 0.73x without,
// in one window: bench/results.md, 2026-11-26 13:41; docs/investigations/capacity-effects.md,
// "Huge pages and the shards' pass durations").
const hugePagesEnv = "HAPTICD_HUGE_PAGES"

func hugePagesOn() bool { return os.Getenv(hugePagesEnv) == "1" }

// newHuge allocates a zero T on the Go heap whose pages the kernel is asked
// to back with huge pages when HAPTICD_HUGE_PAGES=1 (see adviseHugePages).
func newHuge[T any]() *T {
	p := new(T)
	if hugePagesOn() {
		adviseHugePages(unsafe.Pointer(p), unsafe.Sizeof(*p))
	}
	return p
}

// HugeSlice returns n zero Ts on the Go heap, whose pages the kernel is
// asked to back with huge pages when HAPTICD_HUGE_PAGES=1 (Linux;
// otherwise, and where the kernel says no, it is an ordinary slice). The bare loops of the benchmarks keep
// their arms in it, as a shard keeps its records, so that the floor stands
// on the same pages as the service it is set beside.
func HugeSlice[T any](n int) []T {
	s := make([]T, n)
	if n > 0 && hugePagesOn() {
		adviseHugePages(unsafe.Pointer(&s[0]), uintptr(n)*unsafe.Sizeof(s[0]))
	}
	return s
}
