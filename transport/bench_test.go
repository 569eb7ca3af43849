package transport

import (
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// BenchmarkLockstepRoundTrip measures one lock-step client (send a command,
// wait for its frame) against hapticd, beside a bare gorilla/websocket echo
// server that answers with a pre-encoded frame of the same size, measured in
// the same run with the same client code. Round trips alternate between the
// two so machine noise hits both alike. Reported: p50/p99 of each in µs and
// the ratios.
func BenchmarkLockstepRoundTrip(b *testing.B) {
	lockstepRoundTrips(b, nil)
}

// BenchmarkLockstepRoundTripEvicted is BenchmarkLockstepRoundTrip with the
// caches (and the TLB) flushed by writing every cache line of a buffer before
// each round trip, outside the timing: it shows what each path costs when
// its code and data must come back from memory, as on a core whose caches
// the client and the kernel churn between messages (issue 26, msg27). Run it
// on one CPU (taskset -c 0) so the client, the service and the echo share
// that core's caches as under hapticbench --cpus shared. The buffer sizes:
// the size of one core's L2 (what another process on the core pushes out)
// and twice the L3.
//
// The case tlb=4096pages writes one line per 4 KiB page of 16 MiB instead: it
// empties the TLB (4,096 pages, more than its entries) while those lines all
// fall in a few cache sets, as a switch between two processes does on a CPU
// without PCID (this VM's), which flushes the TLB and leaves the caches.
// ns/op includes the flushing: read the reported p50s and their ratio.
func BenchmarkLockstepRoundTripEvicted(b *testing.B) {
	for _, c := range []struct {
		name         string
		size, stride int
	}{
		{"evict=1024KiB", 1 << 20, 64},
		{"evict=16384KiB", 16 << 20, 64},
		{"tlb=4096pages", 16 << 20, 4096},
	} {
		b.Run(c.name, func(b *testing.B) {
			lockstepRoundTrips(b, &evictor{buf: make([]byte, c.size), stride: c.stride})
		})
	}
}

// evictor writes one byte every stride bytes of buf, so that what was cached
// before (lines with stride 64, page translations with stride 4096) is pushed
// out by what neither path reads.
type evictor struct {
	buf    []byte
	stride int
}

func (e *evictor) evict() {
	if e == nil {
		return
	}
	for i := 0; i < len(e.buf); i += e.stride {
		e.buf[i]++
	}
}

// lockstepRoundTrips alternates round trips to hapticd and to a bare echo;
// a non-nil evict flushes caches or the TLB before each round trip.
func lockstepRoundTrips(b *testing.B, evict *evictor) {
	lp := startLockstepPair(b, 0)
	svc, ec, msg, frame := lp.svc, lp.echo, lp.msg, lp.frame
	svcNs := make([]int64, 0, b.N)
	echoNs := make([]int64, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		evict.evict()
		t0 := time.Now()
		roundTripBytes(b, svc, msg)
		t1 := time.Now()
		evict.evict()
		t2 := time.Now()
		roundTripBytes(b, ec, msg)
		t3 := time.Now()
		svcNs = append(svcNs, t1.Sub(t0).Nanoseconds())
		echoNs = append(echoNs, t3.Sub(t2).Nanoseconds())
	}
	b.StopTimer()
	sp50, sp99 := percentiles(svcNs)
	ep50, ep99 := percentiles(echoNs)
	b.ReportMetric(sp50/1e3, "hapticd-p50-µs")
	b.ReportMetric(sp99/1e3, "hapticd-p99-µs")
	b.ReportMetric(ep50/1e3, "echo-p50-µs")
	b.ReportMetric(ep99/1e3, "echo-p99-µs")
	b.ReportMetric(sp50/ep50, "ratio-p50")
	b.ReportMetric(sp99/ep99, "ratio-p99")
	b.ReportMetric(float64(len(frame)), "frame-bytes")
}

// lockstepPair is a one-arm service and a bare gorilla echo answering its
// frame, a client of each, the lock-step message and the frame.
type lockstepPair struct {
	ts         *testService
	svc, echo  *websocket.Conn
	msg, frame []byte
}

// startLockstepPair starts a lockstepPair whose loop runs at loopHz (0:
// the default 1 kHz); b closes it.
func startLockstepPair(b *testing.B, loopHz int) *lockstepPair {
	ts := startService(b, serviceConfig{arms: 1, loopHz: loopHz})
	id := ts.armIDs[0]
	sc := ts.dial(b, ts.wsURL())
	sc.expect()
	_ = sc.conn.SetReadDeadline(time.Time{}) // a long run outlasts the helper's read deadline
	msg := []byte(force(id, 0, 0, 0.1))
	frame := roundTripBytes(b, sc.conn, msg)

	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
			if err := c.WriteMessage(websocket.TextMessage, frame); err != nil {
				return
			}
		}
	}))
	b.Cleanup(srv.Close)
	ec, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ec.Close() })
	return &lockstepPair{ts: ts, svc: sc.conn, echo: ec, msg: msg, frame: frame}
}

func roundTripBytes(tb testing.TB, c *websocket.Conn, msg []byte) []byte {
	if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
		tb.Fatal(err)
	}
	_, b, err := c.ReadMessage()
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func percentiles(ns []int64) (p50, p99 float64) {
	if len(ns) == 0 {
		return 0, 0
	}
	s := append([]int64(nil), ns...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) float64 { return float64(s[int(q*float64(len(s)-1))]) }
	return at(0.5), at(0.99)
}

// BenchmarkSendAhead measures a client that sends maxInFlight messages before
// reading their frames, the most the reader accepts before it stops reading.
// One op is one message and its frame; B/op and allocs/op count both ends
// (they share the process), so they show whether message buffers are reused
// when a client runs ahead.
func BenchmarkSendAhead(b *testing.B) {
	ts := startService(b, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	svc := ts.dial(b, ts.wsURL())
	svc.expect()
	msg := []byte(force(id, 0, 0, 0.1))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(maxInFlight, b.N-done)
		for range n {
			if err := svc.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				b.Fatal(err)
			}
		}
		for range n {
			if _, _, err := svc.conn.NextReader(); err != nil {
				b.Fatal(err)
			}
		}
		done += n
	}
}
