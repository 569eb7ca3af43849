//go:build linux

package transport

import (
	"bytes"
	"os"
	"sort"
	"syscall"
	"testing"
	"unsafe"

	"github.com/gorilla/websocket"
)

// BenchmarkLockstepPagesTouched counts the distinct 4 KiB pages of the
// process one lock-step round trip touches, to hapticd and to the bare echo
// of BenchmarkLockstepRoundTrip: on a CPU without PCID each of them is a
// page walk per message once another process ran (issue 26, msg27). Before
// each round trip the pages' accessed bits are cleared (writing 1 to
// /proc/self/clear_refs, which also empties the TLB); after it the kernel
// sums the pages referenced since (/proc/self/smaps, Referenced). The same
// clear and read with no round trip between is subtracted (the read's own
// pages). The client is the same code for both, so hapticd-pages less
// echo-pages is the service's footprint beyond the echo's. The arm's loop
// runs at 10 Hz and a window in which it ticked is dropped (windows-kept:
// the share left); the message's element then comes from the frame cache,
// as it does for most messages at 1 kHz too. Reported: medians, in pages,
// of the whole process and of its parts: heap (the Go arena: objects and
// goroutine stacks), offheap (other anonymous memory: the runtime's own
// structures, the binary's bss), and the binary's text, rodata and data.
//
// Run it on one CPU (taskset -c 0) as the other lock-step benchmarks; it
// needs a kernel with /proc/PID/clear_refs (CONFIG_PROC_PAGE_MONITOR).
func BenchmarkLockstepPagesTouched(b *testing.B) {
	pc, err := openPageCounter()
	if err != nil {
		b.Skipf("no page accounting here: %v", err)
	}
	defer pc.close()
	// The arm's loop at 10 Hz, not 1 kHz: a window (the clearing, the
	// round trip and the count, some milliseconds) seldom holds a tick.
	lp := startLockstepPair(b, 10)
	arm := lp.ts.svc.Devices().All()[0]
	var base, hd, echo []pageCount
	// window counts the pages touched by trip (nil: none) into to, unless
	// the arm's loop ticked meanwhile: a tick's pages are not the
	// message's.
	window := func(to *[]pageCount, trip *websocket.Conn) {
		ticks := arm.Stats().Ticks
		pc.clear(b)
		if trip != nil {
			roundTripBytes(b, trip, lp.msg)
		}
		c := pc.count(b)
		if arm.Stats().Ticks == ticks {
			*to = append(*to, c)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		window(&base, nil)
		window(&hd, lp.svc)
		window(&echo, lp.echo)
	}
	b.StopTimer()
	if len(base) == 0 || len(hd) == 0 || len(echo) == 0 {
		if b.N == 1 {
			return // the first run, of one round trip: its figures are not read
		}
		b.Fatalf("every window of a kind had a tick of the arm's loop in it (%d, %d, %d kept of %d)", len(base), len(hd), len(echo), b.N)
	}
	b.ReportMetric(float64(len(hd)+len(echo))/float64(2*b.N), "windows-kept")
	for _, part := range []struct {
		name string
		of   func(pageCount) float64
	}{
		{"", func(c pageCount) float64 { return float64(c.heap + c.offheap + c.text + c.rodata + c.data + c.other) }},
		{"heap-", func(c pageCount) float64 { return float64(c.heap) }},
		{"offheap-", func(c pageCount) float64 { return float64(c.offheap) }},
		{"text-", func(c pageCount) float64 { return float64(c.text) }},
		{"rodata-", func(c pageCount) float64 { return float64(c.rodata) }},
		{"data-", func(c pageCount) float64 { return float64(c.data) }},
	} {
		b0 := medianOf(base, part.of)
		b.ReportMetric(medianOf(hd, part.of)-b0, "hapticd-"+part.name+"pages")
		b.ReportMetric(medianOf(echo, part.of)-b0, "echo-"+part.name+"pages")
	}
}

// pageCount is what /proc/self/smaps says was referenced, in 4 KiB pages,
// by kind of mapping.
type pageCount struct {
	heap, offheap, text, rodata, data, other int
}

// pageCounter clears and sums the process's referenced pages.
type pageCounter struct {
	clearRefs *os.File
	smaps     *os.File
	exe       []byte // the binary's path, as smaps names its mappings
	// buf is on the Go heap: the arena lies near it (its base is random
	// since Go 1.26, no longer at 0xc000000000).
	buf      []byte
	fieldBuf [][]byte
}

func openPageCounter() (*pageCounter, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cr, err := os.OpenFile("/proc/self/clear_refs", os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	sm, err := os.Open("/proc/self/smaps")
	if err != nil {
		cr.Close()
		return nil, err
	}
	return &pageCounter{clearRefs: cr, smaps: sm, exe: []byte(exe), buf: make([]byte, 4<<20), fieldBuf: make([][]byte, 0, 16)}, nil
}

func (p *pageCounter) close() {
	p.clearRefs.Close()
	p.smaps.Close()
}

// clear clears the accessed bit of every page of the process.
func (p *pageCounter) clear(b *testing.B) {
	one := [1]byte{'1'}
	if _, _, e := syscall.RawSyscall(syscall.SYS_WRITE, p.clearRefs.Fd(), uintptr(unsafe.Pointer(&one[0])), 1); e != 0 {
		b.Fatal(e)
	}
}

// count sums the pages referenced since clear. Its system calls, as
// clear's, are raw: a call the runtime saw would let another goroutine (the
// arm's loop) have the P while the kernel reads the accessed bits.
func (p *pageCounter) count(b *testing.B) pageCount {
	n := 0
	for {
		m, _, e := syscall.RawSyscall6(syscall.SYS_PREAD64, p.smaps.Fd(), uintptr(unsafe.Pointer(&p.buf[n])), uintptr(len(p.buf)-n), uintptr(n), 0, 0)
		if e != 0 {
			b.Fatal(e)
		}
		n += int(m)
		if m == 0 || n == len(p.buf) {
			break
		}
	}
	if n == len(p.buf) {
		b.Fatalf("/proc/self/smaps is over %d bytes", len(p.buf))
	}
	// Parsed without allocating: a count that allocated would bring the
	// collector into the windows it measures.
	var c pageCount
	kind := &c.other
	for rest := p.buf[:n]; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		f := p.fields(line)
		switch {
		case len(f) == 0:
		case !bytes.Contains(f[0], []byte("-")): // a field of the mapping above
			if string(f[0]) == "Referenced:" && len(f) > 1 {
				*kind += atoi(f[1]) / 4
			}
		default: // a mapping's header: range perms offset dev inode [path]
			kind = c.part(f, p.exe, uintptr(unsafe.Pointer(&p.buf[0])))
		}
	}
	return c
}

// fields splits line at spaces into p.fieldBuf.
func (p *pageCounter) fields(line []byte) [][]byte {
	f := p.fieldBuf[:0]
	start := -1
	for i, ch := range line {
		switch {
		case ch == ' ' || ch == '\t':
			if start >= 0 {
				f = append(f, line[start:i])
				start = -1
			}
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		f = append(f, line[start:])
	}
	p.fieldBuf = f
	return f
}

// atoi reads the decimal number at the start of b.
func atoi(b []byte) int {
	n := 0
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			break
		}
		n = 10*n + int(ch-'0')
	}
	return n
}

// part is the count a mapping (its smaps header, split in fields) adds to:
// the Go heap arena (within 4 GiB of heapAt, an address in it), other
// anonymous memory, the binary, or the rest (vdso, libraries).
func (c *pageCount) part(header [][]byte, exe []byte, heapAt uintptr) *int {
	switch {
	case len(header) > 5 && bytes.Equal(header[5], exe) && bytes.Contains(header[1], []byte("x")):
		return &c.text
	case len(header) > 5 && bytes.Equal(header[5], exe) && bytes.Contains(header[1], []byte("w")):
		return &c.data
	case len(header) > 5 && bytes.Equal(header[5], exe):
		return &c.rodata
	case len(header) > 5:
		return &c.other // a named mapping: [vdso], [stack], a library
	}
	var start uint64
	for _, ch := range header[0] {
		if ch == '-' {
			break
		}
		start <<= 4
		switch {
		case ch >= 'a':
			start |= uint64(ch-'a') + 10
		default:
			start |= uint64(ch - '0')
		}
	}
	if d := int64(start) - int64(heapAt); d > -4<<30 && d < 4<<30 {
		return &c.heap
	}
	return &c.offheap
}

func medianOf(cs []pageCount, of func(pageCount) float64) float64 {
	v := make([]float64, len(cs))
	for i, c := range cs {
		v[i] = of(c)
	}
	sort.Float64s(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}
