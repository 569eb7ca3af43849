//go:build linux

package loop

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/protocol/histogram"
	"golang.org/x/sys/unix"
)

// gcNode is one node of the live heap a collection must mark: pointers to
// chase, as a service's sessions, devices and views are.
type gcNode struct {
	next, other *gcNode
	pad         [6]uintptr
}

// liveHeap links n nodes in a shuffled order, so that marking them misses
// the cache as a real heap does.
func liveHeap(n int) *gcNode {
	nodes := make([]*gcNode, n)
	for i := range nodes {
		nodes[i] = &gcNode{}
	}
	x := uint64(0x9e3779b97f4a7c15)
	for i := range nodes {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		nodes[i].next = nodes[(i+1)%n]
		nodes[i].other = nodes[x%uint64(n)]
	}
	return nodes[0]
}

// sessionLoad is clients in lock step with servers over loopback TCP,
// each reply built from fresh garbage (a frame encoded per request, as a
// session does): enough allocation to keep the collector cycling over the
// live heap. It measures each round trip.
type sessionLoad struct {
	ln   net.Listener
	wg   sync.WaitGroup
	stop chan struct{}
	mu   sync.Mutex
	rtt  *histogram.Histogram
	errs []error
	live *gcNode
	// measuring: round trips are recorded only while it is set, so the
	// figures cover the timed window the rate is divided by.
	measuring atomic.Bool
	closeOnce sync.Once
	summary   Summary
	err       error
}

func startSessionLoad(tb testing.TB, clients, liveNodes int) *sessionLoad {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &sessionLoad{ln: ln, stop: make(chan struct{}), rtt: histogram.New(precisionBits), live: liveHeap(liveNodes)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go s.serve(c)
		}
	}()
	for range clients {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			tb.Fatal(err)
		}
		s.wg.Add(1)
		go s.client(c)
	}
	return s
}

// replySize is the bytes a server writes back per request.
const replySize = 512

func (s *sessionLoad) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	req := make([]byte, 64)
	for {
		if _, err := io.ReadFull(c, req); err != nil {
			return
		}
		// The frame: a few short-lived pointerful objects and a buffer
		// grown by appends, as an encoder without pooling would.
		var head *gcNode
		for range 32 {
			head = &gcNode{next: head}
		}
		var out []byte
		for len(out) < 8<<10 {
			out = append(out, req...)
		}
		if head == nil || len(out) < replySize {
			return
		}
		if _, err := c.Write(out[:replySize]); err != nil {
			return
		}
	}
}

func (s *sessionLoad) client(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	req, reply := make([]byte, 64), make([]byte, replySize)
	local := histogram.New(precisionBits)
	defer func() {
		s.mu.Lock()
		s.rtt.Merge(local)
		s.mu.Unlock()
	}()
	for {
		select {
		case <-s.stop:
			return
		default:
		}
		t0 := time.Now()
		if _, err := c.Write(req); err != nil {
			s.fail(err)
			return
		}
		if _, err := io.ReadFull(c, reply); err != nil {
			s.fail(err)
			return
		}
		if s.measuring.Load() {
			local.Record(int64(time.Since(t0)))
		}
	}
}

func (s *sessionLoad) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, err)
}

// close stops the clients and servers and returns the round trips. It may
// be called again (a cleanup after a failed benchmark).
func (s *sessionLoad) close() (Summary, error) {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.ln.Close()
		s.wg.Wait()
		runtime.KeepAlive(s.live)
		s.summary, s.err = s.rtt.Summary(), errors.Join(s.errs...)
	})
	return s.summary, s.err
}

// gcSample is the collector's counters at one moment. The runtime's CPU
// classes are its estimates in P-time, not CPU a thread used: a pause
// counts every P (the lent ones too), and a worker or an assist counts its
// wall time, descheduled or not. They overstate the collector's CPU where
// the threads outnumber the cores; the process's CPU (rusage) is real, and
// the collector's share of it is perf's (docs/performance.md).
type gcSample struct {
	wall                                        time.Time
	cycles                                      uint64
	gc, dedicated, assist, idle, pause, process float64 // CPU seconds
}

func sampleGC() gcSample {
	ms := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/dedicated:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"},
		{Name: "/cpu/classes/gc/pause:cpu-seconds"},
	}
	metrics.Read(ms)
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return gcSample{
		wall:      time.Now(),
		cycles:    ms[0].Value.Uint64(),
		gc:        ms[1].Value.Float64(),
		dedicated: ms[2].Value.Float64(),
		assist:    ms[3].Value.Float64(),
		idle:      ms[4].Value.Float64(),
		pause:     ms[5].Value.Float64(),
		process:   time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(),
	}
}

// BenchmarkHardwareLoopsBesideCollections runs hwLoops hardware loops at
// 1 kHz for b.N ticks beside sessions that allocate enough to keep the
// collector marking a live heap, its pacers' sleeps giving up their Ps
// (RunLocked) or keeping them with one P lent per loop (RunLockedProcs:
// GOMAXPROCS cores + loops, so the collector's 25 % background share grows
// with the loops, a whole dedicated worker at 2 cores + 2 loops). It
// reports what a user sees: the worst loop's period p99 and overruns, the
// sessions' round trips, the process's CPU and the runtime's estimates of
// the collector's. Run the modes alternated, one process each, and compare
// within pairs (docs/performance.md has the commands).
func BenchmarkHardwareLoopsBesideCollections(b *testing.B) {
	const hwLoops, clients = 2, 4
	for _, live := range []struct {
		name  string
		nodes int
	}{
		{"live 4 MB", 1 << 16},
		{"live 16 MB", 1 << 18},
	} {
		// SCHED_FIFO (granted with CAP_SYS_NICE) takes the machine's other
		// load out of the loops' timing: what is left is the Go scheduler's.
		for _, prio := range []struct {
			name string
			prio int
		}{{"normal", 0}, {"fifo", 10}} {
			for _, mode := range []struct {
				name string
				lend bool
			}{
				{"sleep frees the P", false},
				{"sleep keeps the P", true},
			} {
				b.Run(live.name+"/"+prio.name+"/"+mode.name, func(b *testing.B) {
					benchLoopsBesideCollections(b, hwLoops, clients, live.nodes, prio.prio, mode.lend)
				})
			}
		}
	}
}

func benchLoopsBesideCollections(b *testing.B, hwLoops, clients, liveNodes, prio int, lend bool) {
	procsAtDefault(b)
	var procs *Procs
	if lend {
		procs = NewProcs()
	}
	load := startSessionLoad(b, clients, liveNodes)
	b.Cleanup(func() { _, _ = load.close() })
	devs := make([]*Device, hwLoops)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, hwLoops)
	for i := range devs {
		devs[i] = NewDevice(looptest.NewArm(), DeviceOptions{RealtimePriority: int32(prio)})
		go func() { done <- RunLockedProcs(ctx, devs[i], procs) }()
	}
	stopped := 0
	b.Cleanup(func() {
		cancel()
		for ; stopped < hwLoops; stopped++ {
			<-done
		}
	})
	// untilTicks waits for the first loop to reach n ticks; a loop that
	// returns meanwhile, or a minute without getting there, fails the run.
	untilTicks := func(n uint64) {
		deadline := time.Now().Add(time.Minute)
		for devs[0].Stats().Ticks < n {
			select {
			case err := <-done:
				stopped++
				b.Fatalf("a hardware loop returned early: %v", err)
			case <-time.After(time.Millisecond):
			}
			if time.Now().After(deadline) {
				b.Fatalf("the loop made %d of %d ticks in a minute", devs[0].Stats().Ticks, n)
			}
		}
	}
	// Wait for the loops to run (and the Ps to be lent) before
	// counting, so each mode is measured at its own GOMAXPROCS.
	untilTicks(20)
	procsRunning := runtime.GOMAXPROCS(0)
	from := make([]Stats, hwLoops)
	for i, d := range devs {
		from[i] = d.Stats()
	}
	before := sampleGC()
	load.measuring.Store(true)
	b.ResetTimer()
	untilTicks(from[0].Ticks + uint64(b.N))
	b.StopTimer()
	load.measuring.Store(false)
	after := sampleGC()
	cancel()
	for ; stopped < hwLoops; stopped++ {
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	rtt, err := load.close()
	if err != nil {
		b.Fatal(err)
	}
	realtime := 1.0
	var p99, maxNs int64
	var overrun float64
	for i, d := range devs {
		st := d.Stats()
		if !st.Realtime {
			realtime = 0
		}
		p99, maxNs = max(p99, st.Period.P99Ns), max(maxNs, st.Period.MaxNs)
		overrun = max(overrun, float64(st.Overruns-from[i].Overruns)/float64(max(st.Ticks-from[i].Ticks, 1)))
	}
	wall := after.wall.Sub(before.wall).Seconds()
	b.ReportMetric(float64(procsRunning), "GOMAXPROCS")
	if prio > 0 {
		b.ReportMetric(realtime, "fifo-granted")
	}
	b.ReportMetric(float64(p99)/1e3, "period-p99-µs")
	b.ReportMetric(float64(maxNs)/1e3, "period-max-µs")
	b.ReportMetric(100*overrun, "overrun-%")
	b.ReportMetric(float64(rtt.P50Ns)/1e3, "rtt-p50-µs")
	b.ReportMetric(float64(rtt.P99Ns)/1e3, "rtt-p99-µs")
	b.ReportMetric(float64(rtt.Count)/wall, "rtts/s")
	b.ReportMetric(float64(after.cycles-before.cycles)/wall, "gc/s")
	b.ReportMetric((after.gc-before.gc)/wall, "gc-cores")
	b.ReportMetric((after.dedicated-before.dedicated)/wall, "dedicated-cores")
	b.ReportMetric((after.assist-before.assist)/wall, "assist-cores")
	b.ReportMetric((after.idle-before.idle)/wall, "idle-mark-cores")
	b.ReportMetric((after.pause-before.pause)/wall, "pause-cores")
	b.ReportMetric((after.process-before.process)/wall, "process-cores")
}
