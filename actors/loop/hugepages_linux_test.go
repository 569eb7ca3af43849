package loop

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestLoopMemoryOnHugePages: with HAPTICD_HUGE_PAGES=1, where the kernel
// offers transparent huge pages (always or on madvise), the memory a pass
// streams is backed by them: a
// shard's blocks and their effect stages, and a bare loop's HugeSlice.
// /proc/self/smaps counts the huge pages of the mapping that holds each.
func TestLoopMemoryOnHugePages(t *testing.T) {
	thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || strings.Contains(string(thp), "[never]") {
		t.Skipf("no transparent huge pages here (%q, %v)", thp, err)
	}
	if os.Getenv(hugePagesChildEnv) == "" {
		// In a process of its own, as a service starts: in this one the
		// blocks may land in heap memory other tests faulted in on small
		// pages, which the advice does not always collapse (best effort).
		cmd := exec.Command(os.Args[0], "-test.run", "^TestLoopMemoryOnHugePages$", "-test.v")
		cmd.Env = append(os.Environ(), hugePagesChildEnv+"=1", hugePagesEnv+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if strings.Contains(string(out), "--- SKIP") {
			t.Skipf("%s", out)
		}
		return
	}
	if !kernelGivesHugePages(t) {
		t.Skip("the kernel gave no huge page to a plain madvised mapping either (memory too fragmented now): nothing to tell about the loop's")
	}
	s := NewScheduler(SchedulerOptions{Shards: 1})
	s.mu.Lock()
	var blocks []*armBlock
	for range 40 { // about 2.8 MiB of blocks: at least one whole huge page
		blocks = append(blocks, s.shards[0].record().blk)
		s.shards[0].free = s.shards[0].free[:0]
	}
	s.mu.Unlock()
	stage := blocks[0].claimStage(0)
	cases := []struct {
		name string
		p    unsafe.Pointer
		n    uintptr
	}{
		{"a shard's first block", unsafe.Pointer(blocks[0]), unsafe.Sizeof(*blocks[0])},
		{"a shard's last block", unsafe.Pointer(blocks[len(blocks)-1]), unsafe.Sizeof(*blocks[0])},
		{"a block's effect stages", unsafe.Pointer(stage), unsafe.Sizeof(*blocks[0].fx.Load())},
		{"a bare loop's arms", unsafe.Pointer(&HugeSlice[BareEffects](3000)[0]), 3000 * unsafe.Sizeof(BareEffects{})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kb, err := anonHugeKB(uintptr(c.p))
			if err != nil {
				t.Fatal(err)
			}
			if kb < hugePageBytes/1024 && !kernelGivesHugePages(t) {
				// The probe at the start found a free huge page; the
				// cases before this one may have taken the last (the
				// full suite's other processes fragment memory too).
				t.Skipf("the mapping holding %d bytes at %#x has %d kB on huge pages, and the kernel now gives none to a plain madvised mapping either (memory too fragmented now)", c.n, uintptr(c.p), kb)
			}
			if kb < hugePageBytes/1024 {
				t.Fatalf("the mapping holding %d bytes at %#x has %d kB on huge pages, want at least one (%d kB)", c.n, uintptr(c.p), kb, hugePageBytes/1024)
			}
		})
	}
}

// hugePagesChildEnv marks the process TestLoopMemoryOnHugePages runs its
// check in.
const hugePagesChildEnv = "HAPTICD_TEST_HUGE_PAGES_CHILD"

// kernelGivesHugePages says whether the kernel backs a fresh anonymous
// mapping, advised as the loop's memory is, with a huge page now: it may
// not when free memory is fragmented, which the loop cannot help.
func kernelGivesHugePages(t *testing.T) bool {
	m, err := unix.Mmap(-1, 0, 2*hugePageBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	off := (hugePageBytes - int(uintptr(unsafe.Pointer(&m[0])))%hugePageBytes) % hugePageBytes
	page := m[off : off+hugePageBytes]
	if err := unix.Madvise(page, unix.MADV_HUGEPAGE); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(page); i += 4096 {
		page[i] = 1
	}
	kb, err := anonHugeKB(uintptr(unsafe.Pointer(&page[0])))
	if err != nil {
		t.Fatal(err)
	}
	return kb >= hugePageBytes/1024
}

// anonHugeKB is the AnonHugePages of the mapping in /proc/self/smaps that
// holds addr.
func anonHugeKB(addr uintptr) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := strings.Cut(strings.Fields(line)[0], "-"); ok && !strings.HasSuffix(line, ":") {
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				in = uint64(addr) >= a && uint64(addr) < b
				continue
			}
		}
		if v, ok := strings.CutPrefix(line, "AnonHugePages:"); ok && in {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no mapping in /proc/self/smaps holds %#x", addr)
}
