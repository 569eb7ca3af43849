package transport

import (
	"bufio"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/hapticd/hapticd/actors/awake"
	"github.com/hapticd/hapticd/transport/rawsock"
)

// Where the kernel does not stamp received data (rawsock records receive
// times on Linux only), a control lease could not tell a command that
// waited in the socket while the service stood still (the process stopped,
// a VM paused, a starved host) from a fresh one: after the stall every
// queued command renewed the lease and put the force back on after its
// client had gone quiet. The awake clock and stallBoundConn bound that
// wait from outside the kernel, and only across a stall: on a healthy host
// they claim nothing, so a client's commands are never refused there.

const (
	// awakeInterval is how often the awake clock notes that the process
	// runs.
	awakeInterval = 5 * time.Millisecond
	// resumeWindow bounds how long after a stall's end a reader that waited
	// in its read across the stall gets the data queued during it (the
	// poller sees it ready at once): data it gets later came after.
	resumeWindow = 50 * time.Millisecond
	// awakeSlack is the gap between two notes taken as a stall. A goroutine
	// kept waiting for the CPU is no different from a stalled process here,
	// and data read meanwhile counts as waiting since the last note: on a
	// saturated Windows host (Wine, 1000 arms) notes late by 150 ms refused
	// a lock-step client's fresh commands with a 25 ms slack. So only gaps
	// longer than the default lease (100 ms) by a margin count: the stalls
	// this guards against (a VM pause, a stopped or suspended process) last
	// seconds; a shorter one is not seen.
	awakeSlack = 250 * time.Millisecond
)

// stallBoundConn is a session's connection on a system whose kernel does
// not stamp received data: a receiveClock whose LastReceived is known only
// after a stall. Data a read returns once a stall has ended, until the
// socket is seen drained, may have waited there since the stall began, and
// LastReceived says it arrived then (earlier than it may have: it errs
// towards refusing, and only across a stall). Otherwise LastReceived
// claims nothing and the wait counts as 0, as it did before.
//
// Reads are on the connection's one reader goroutine (gorilla's), and
// LastReceived is asked on it too, so the fields after clock are the
// reader's own.
type stallBoundConn struct {
	net.Conn
	clock *awake.Clock
	// queued is how many bytes the socket holds unread (FIONREAD).
	queued func() (int, error)

	// checkedTo is when the last read returned (clock time).
	checkedTo int64
	// since (clock time, 0: none) is the start of the stall from which
	// what the socket holds may have waited, until it is seen drained.
	since int64
	// lastReceived (Unix ns, 0: not known) is LastReceived's answer.
	lastReceived int64

	out net.Buffers // WriteVectors' parts, kept so that a write allocates nothing
}

// boundArrivals wraps c for a session when it has no receive times of its
// own and its socket tells how much it holds; otherwise c is returned as it
// is.
func boundArrivals(c net.Conn, clock *awake.Clock) net.Conn {
	if clock == nil {
		return c
	}
	if _, ok := c.(receiveClock); ok {
		return c
	}
	sc, _ := c.(syscall.Conn) // a *net.TCPConn, or nil
	if carrier, ok := c.(rawsock.Carrier); ok && carrier.TCPConn() != nil {
		sc = carrier.TCPConn()
	}
	if sc == nil {
		return c
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	b := &stallBoundConn{Conn: c, clock: clock}
	var n int
	var qerr error
	count := func(fd uintptr) { n, qerr = socketQueued(fd) }
	b.queued = func() (int, error) {
		if err := raw.Control(count); err != nil {
			return 0, err
		}
		return n, qerr
	}
	if _, err := b.queued(); err != nil {
		return c // this system cannot tell: the wait counts as 0, as before
	}
	b.checkedTo = clock.Now()
	return b
}

func (c *stallBoundConn) Read(p []byte) (int, error) {
	began := c.clock.Now()
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.bound(began, time.Now())
	}
	return n, err
}

// bound sets lastReceived for the data a read that began at began (clock
// time) and returned at t got. A stall since the last read taints it,
// unless the read waited across the stall's end and returned well after
// it: then its data came after the stall (an idle client's next message).
func (c *stallBoundConn) bound(began int64, t time.Time) {
	now := c.clock.At(t)
	if start, end, ok := c.clock.StallSince(c.checkedTo, now); ok {
		cameAfter := end != 0 && began < end && now-end > int64(resumeWindow)
		if !cameAfter && (c.since == 0 || start < c.since) {
			c.since = start
		}
	}
	c.checkedTo = now
	if c.since == 0 {
		c.lastReceived = 0
		return
	}
	c.lastReceived = t.UnixNano() - (now - c.since)
	if q, err := c.queued(); err == nil && q == 0 {
		c.since = 0 // drained: what comes next arrives from now on
	}
}

// RecordReceiveTimes is a no-op: bounds are kept from the first read.
func (c *stallBoundConn) RecordReceiveTimes() error { return nil }

// LastReceived is an instant at or before which the newest data the last
// read returned arrived (Unix ns of the real-time clock), known only after
// a stall (see stallBoundConn).
func (c *stallBoundConn) LastReceived() (unixNs int64, ok bool) {
	return c.lastReceived, c.lastReceived != 0
}

// WriteVectors writes parts with one vector write where the system has one
// (net.Buffers on the connection under it).
func (c *stallBoundConn) WriteVectors(parts [][]byte) (int, error) {
	if vw, ok := c.Conn.(vectorWriter); ok {
		return vw.WriteVectors(parts)
	}
	return writeBuffers(&c.out, c.Conn, parts)
}

// boundingArrivals returns w with a Hijack that bounds the arrivals of the
// hijacked connection (boundArrivals) when clock is set; w as it is
// otherwise.
func boundingArrivals(w http.ResponseWriter, clock *awake.Clock) http.ResponseWriter {
	hj, ok := w.(http.Hijacker)
	if clock == nil || !ok {
		return w
	}
	return arrivalHijacker{ResponseWriter: w, hj: hj, clock: clock}
}

type arrivalHijacker struct {
	http.ResponseWriter
	hj    http.Hijacker
	clock *awake.Clock
}

func (w arrivalHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := w.hj.Hijack()
	if err != nil {
		return c, rw, err
	}
	return boundArrivals(c, w.clock), rw, nil
}
