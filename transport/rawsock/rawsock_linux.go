//go:build linux

package rawsock

import (
	"io"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// yieldAfter bounds how long a reading goroutine runs on without passing
// through the Go scheduler. A raw call that finds data or room returns
// without one (net's calls pass none either, but a call the client
// preempted used to lose its P to sysmon, and the P's next owner ran the
// scheduler); the scheduler is where expired timers fire, among them the
// simulated arms' tick (actors/loop's pacer). So a read that has not
// waited for yieldAfter yields first: with all Ps busy, the loop's tick is
// late by about this much at most, not until the client pauses.
const yieldAfter = 100 * time.Microsecond

// Conn is a TCP connection whose reads and writes are raw
// system calls on its non-blocking socket, made through the runtime's
// poller (syscall.RawConn) exactly where net's own reads and writes are:
// when the socket has nothing to read or no room to write, the goroutine
// parks on the poller as before, and deadlines and Close end the wait.
//
// What it leaves out is the runtime's syscall bookkeeping (entersyscall,
// exitsyscall), which a non-blocking call does not need: it never blocks,
// so the P has no reason to be handed off. That bookkeeping is what kept
// the runtime's sysmon thread awake in a lock-step session: the first
// system call after the process was idle wakes sysmon, which then polls
// every 20 µs, and a write the client preempts (its frame wakes it on the
// same CPU) looks to sysmon like a blocked call whose P it hands to another
// thread. With one client at its full rate on one CPU, sysmon's sleeps and
// wake-ups and those hand-offs were about a quarter of the service's
// context switches and a third of its CPU per message; see
// docs/investigations/message-cost.md ("Raw socket calls"). The price: a thread the kernel
// preempts inside a raw call keeps its P, where sysmon would have handed it
// to another thread, which shows when other processes load the service's
// CPU (the same document).
//
// A Conn is read by one goroutine and written by one goroutine at a time
// (as gorilla's connections are: a session's reader; writes under one
// lock), so the scratch of each direction needs no lock. Other methods, and writev
// (net.Buffers finds the embedded connection's), are the TCP connection's.
type Conn struct {
	*net.TCPConn
	rc syscall.RawConn
	// carrier, if set, is the connection Wrap was given; Close goes
	// through it.
	carrier Carrier

	// The read under way: the caller's buffer, and what the raw call
	// returned. Fields, with readFn made once, so a read allocates nothing.
	rb     []byte
	rn     int
	rerrno syscall.Errno
	readFn func(fd uintptr) bool

	// The write under way: the caller's buffer, how much of it is written,
	// and the error that ended it.
	wb      []byte
	wn      int
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool

	// The vector write under way (WriteVectors): the parts not yet written
	// whole, how much of wv[0] is, and the iovecs of one call.
	wv       [][]byte
	wvn      int
	wvTotal  int
	iov      [vectorParts]syscall.Iovec
	writevFn func(fd uintptr) bool

	// Receive times (RecordReceiveTimes). A read that may return data
	// older than stampAfterNs is a recvmsg call with room for the kernel's
	// SO_TIMESTAMPNS message, made from these fields so that it allocates
	// nothing. lastReceived (Unix ns, 0: unknown) is when the newest data
	// the last read returned arrived, or an instant before that;
	// queuedSince (Unix ns, 0: unknown) is an instant at or before which
	// nothing still queued in the socket arrived.
	stamped      bool
	rmsg         syscall.Msghdr
	riov         syscall.Iovec
	oob          [8]uint64 // 64 bytes, aligned as cmsghdrs must be
	lastReceived int64
	queuedSince  int64

	// waited is set by readRaw when the socket had nothing to read (the
	// goroutine then parks, and the scheduler runs); ranSince is when the
	// reader last passed through the scheduler (monotonic, time.Since's
	// zero: epoch).
	waited   bool
	ranSince time.Duration
	epoch    time.Time
}

// ReceiveTimes tells whether a wrapped connection can record when its data
// arrived (RecordReceiveTimes): on Linux, the kernel's stamps.
const ReceiveTimes = true

// Wrap returns c with raw reads and writes (a *Conn) when it is a TCP
// connection or a Carrier of one; any other kind of connection (TLS, a
// test's pipe) is returned as it is.
func Wrap(c net.Conn) net.Conn {
	tc, _ := c.(*net.TCPConn)
	carrier, carried := c.(Carrier)
	if carried {
		tc = carrier.TCPConn()
	}
	if tc == nil {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	r := &Conn{TCPConn: tc, rc: rc, epoch: time.Now()}
	if carried {
		r.carrier = carrier
	}
	r.readFn = r.readRaw
	r.writeFn = r.writeRaw
	r.writevFn = r.writevRaw
	return r
}

// Close closes the connection, through its carrier if it has one.
func (c *Conn) Close() error {
	if c.carrier != nil {
		return c.carrier.Close()
	}
	return c.TCPConn.Close()
}

// stampAfterNs: a read whose data can be no older than this takes no
// receive time from the kernel. A recvmsg with its control message costs
// more than a read; in a lock-step session at full rate the socket was
// empty microseconds before each message arrived, and that instant bounds
// its age as well (LastReceived).
const stampAfterNs = int64(time.Millisecond)

// RecordReceiveTimes makes every read tell when the newest data it
// returned arrived on this host (LastReceived): the kernel stamps each
// received segment with its arrival time (SO_TIMESTAMPNS, the system's
// real-time clock), and a read that may return data older than
// stampAfterNs is a recvmsg that takes the stamp. Call it before the
// first Read.
func (c *Conn) RecordReceiveTimes() error {
	var serr error
	if err := c.rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return c.opError("setsockopt", err)
	}
	if serr != nil {
		return c.opError("setsockopt", os.NewSyscallError("setsockopt SO_TIMESTAMPNS", serr))
	}
	c.stamped = true
	return nil
}

// LastReceived is when the newest data the last Read returned arrived on
// this host, in Unix nanoseconds of the system's real-time clock (compare
// it with time.Now().UnixNano()): the kernel's stamp, or, for data that
// cannot be older than stampAfterNs, the instant the socket was last seen
// empty (or its last stamp), which is at most that much earlier. So the
// data is never younger than it says. ok is false when receive times are
// not recorded or nothing bounds them (the kernel gave no stamp).
func (c *Conn) LastReceived() (unixNs int64, ok bool) {
	return c.lastReceived, c.lastReceived != 0
}

// readRaw is one attempt to read into rb: false sends the goroutine to the
// poller to wait until the socket is readable.
func (c *Conn) readRaw(fd uintptr) bool {
	for {
		var n uintptr
		var e syscall.Errno
		var at int64 // before the call: nothing it finds arrived later
		if c.stamped {
			at = time.Now().UnixNano()
		}
		switch {
		case !c.stamped:
			n, _, e = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rb[0])), uintptr(len(c.rb)))
		case c.queuedSince != 0 && at >= c.queuedSince && at-c.queuedSince < stampAfterNs:
			n, _, e = syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&c.rb[0])), uintptr(len(c.rb)))
			if e == 0 && n > 0 {
				c.lastReceived = c.queuedSince
			}
		default:
			n, e = c.recvStamped(fd)
			if e == 0 && n > 0 {
				c.queuedSince = c.lastReceived // what is left arrived after it
			}
		}
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			c.waited = true
			if c.stamped {
				c.queuedSince = at // empty then: what comes arrives later
			}
			return false
		}
		c.rn, c.rerrno = int(n), e
		return true
	}
}

// recvStamped reads into rb with recvmsg and keeps the receive time the
// kernel attached (lastReceived). The control message is parsed here, not
// with syscall.ParseSocketControlMessage, which allocates.
func (c *Conn) recvStamped(fd uintptr) (uintptr, syscall.Errno) {
	c.riov.Base = &c.rb[0]
	c.riov.SetLen(len(c.rb))
	c.rmsg.Iov, c.rmsg.Iovlen = &c.riov, 1
	c.rmsg.Control = (*byte)(unsafe.Pointer(&c.oob[0]))
	c.rmsg.SetControllen(len(c.oob) * 8)
	n, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&c.rmsg)), 0)
	c.riov.Base = nil // the caller's buffer is not kept reachable from here
	if e == 0 && n > 0 {
		c.lastReceived = receiveTime(unsafe.Slice((*byte)(unsafe.Pointer(&c.oob[0])), len(c.oob)*8)[:c.rmsg.Controllen])
	}
	return n, e
}

// receiveTime finds the SCM_TIMESTAMPNS message in oob, a recvmsg's
// control data, and returns its time in Unix nanoseconds (0: none).
func receiveTime(oob []byte) int64 {
	const align = int(unsafe.Sizeof(uintptr(0))) // CMSG_ALIGN
	hdr := (syscall.SizeofCmsghdr + align - 1) &^ (align - 1)
	for len(oob) >= syscall.SizeofCmsghdr {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		l := int(h.Len)
		if l < syscall.SizeofCmsghdr || l > len(oob) {
			return 0
		}
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS && l >= hdr+int(unsafe.Sizeof(syscall.Timespec{})) {
			ts := (*syscall.Timespec)(unsafe.Pointer(&oob[hdr]))
			return ts.Nano()
		}
		next := (l + align - 1) &^ (align - 1)
		if next >= len(oob) {
			return 0
		}
		oob = oob[next:]
	}
	return 0
}

// writeRaw writes what is left of wb: false waits until the socket has
// room again.
func (c *Conn) writeRaw(fd uintptr) bool {
	for c.wn < len(c.wb) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&c.wb[c.wn])), uintptr(len(c.wb)-c.wn))
		switch e {
		case 0:
			c.wn += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werrno = e
			return true
		}
	}
	return true
}

// vectorParts is how many parts one writev call carries: a frame is at
// most four (header, head, shared run, tail); more take further calls.
const vectorParts = 4

// writevRaw writes what is left of wv, up to vectorParts parts per call:
// false waits until the socket has room again.
func (c *Conn) writevRaw(fd uintptr) bool {
	for len(c.wv) > 0 {
		if len(c.wv[0]) == c.wvn { // written whole (or empty)
			c.wv, c.wvn = c.wv[1:], 0
			continue
		}
		n := 0
		for i, p := range c.wv {
			if n == len(c.iov) {
				break
			}
			if i == 0 {
				p = p[c.wvn:]
			}
			if len(p) == 0 {
				continue
			}
			c.iov[n].Base = &p[0]
			c.iov[n].SetLen(len(p))
			n++
		}
		w, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&c.iov[0])), uintptr(n))
		switch e {
		case 0:
			c.wvTotal += int(w)
			c.advanceVectors(int(w))
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werrno = e
			return true
		}
	}
	return true
}

// advanceVectors counts n more bytes of wv as written.
func (c *Conn) advanceVectors(n int) {
	for n > 0 && len(c.wv) > 0 {
		left := len(c.wv[0]) - c.wvn
		if n < left {
			c.wvn += n
			return
		}
		n -= left
		c.wv, c.wvn = c.wv[1:], 0
	}
}

// WriteVectors writes parts in order as one stream, with writev, as
// net.Buffers' WriteTo does on a TCP connection, but raw (see Conn):
// hapticd's session writes a frame in parts (every frame of one arm), and
// net.Buffers would find the embedded connection's writev and bring back
// the runtime's syscall bookkeeping that Write leaves out. It returns how many bytes went out; an error is a
// *net.OpError.
func (c *Conn) WriteVectors(parts [][]byte) (int, error) {
	c.wv, c.wvn, c.wvTotal, c.werrno = parts, 0, 0, 0
	err := c.rc.Write(c.writevFn)
	n, errno := c.wvTotal, c.werrno
	c.wv = nil
	clear(c.iov[:]) // no frame buffer stays reachable from here
	switch {
	case err != nil:
		return n, c.opError("writev", err)
	case errno != 0:
		return n, c.opError("writev", os.NewSyscallError("writev", errno))
	}
	return n, nil
}

// Read reads as net.Conn's Read does: io.EOF once the peer has closed,
// errors as *net.OpError.
func (c *Conn) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	c.rb, c.rn, c.rerrno, c.waited = b, 0, 0, false
	err := c.rc.Read(c.readFn)
	if now := time.Since(c.epoch); c.waited {
		c.ranSince = now
	} else if now-c.ranSince >= yieldAfter {
		runtime.Gosched()
		c.ranSince = now
	}
	n, errno := c.rn, c.rerrno
	c.rb = nil
	switch {
	case err != nil:
		return 0, c.opError("read", err)
	case errno != 0:
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of b, as net.Conn's Write does, or fails with a
// *net.OpError saying how much went out.
func (c *Conn) Write(b []byte) (int, error) {
	c.wb, c.wn, c.werrno = b, 0, 0
	err := c.rc.Write(c.writeFn)
	n, errno := c.wn, c.werrno
	c.wb = nil
	switch {
	case err != nil:
		return n, c.opError("write", err)
	case errno != 0:
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// opError wraps err as net's own calls do; the RawConn's errors (closed,
// deadline) come as an *net.OpError already and keep their inner error.
func (c *Conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
