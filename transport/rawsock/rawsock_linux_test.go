//go:build linux

package rawsock

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// readError fails t unless err is one a reader of a net.Conn takes for the
// connection's end (transport's readReason does): a net.Error, io.EOF or
// net.ErrClosed.
func readError(t *testing.T, err error) {
	t.Helper()
	var ne net.Error
	if !errors.As(err, &ne) && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read error %v (%T) is not a net.Error, io.EOF or net.ErrClosed", err, err)
	}
}

// rawPair returns a loopback TCP connection with raw reads and writes and
// its peer, an ordinary connection; both close with the test.
func rawPair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	peer, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	raw, ok := Wrap(c).(*Conn)
	if !ok {
		t.Fatalf("Wrap(%T) did not wrap a TCP connection", c)
	}
	t.Cleanup(func() { _ = raw.Close(); _ = peer.Close() })
	return raw, peer
}

// TestConnBehavesAsNetConn pins what gorilla and the session's reader
// rely on from a connection: bytes in order both ways, however large the
// write, io.EOF when the peer closes, and deadline and close errors that
// a reader takes for the connection's end.
func TestConnBehavesAsNetConn(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB: many partial writes
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, c *Conn, peer net.Conn)
	}{
		{"read in order then EOF", func(t *testing.T, c *Conn, peer net.Conn) {
			go func() {
				_, _ = peer.Write([]byte("hello, "))
				_, _ = peer.Write([]byte("arm"))
				_ = peer.Close()
			}()
			got, err := io.ReadAll(c)
			if err != nil || string(got) != "hello, arm" {
				t.Fatalf("read %q, %v; want %q, nil (io.ReadAll stops at io.EOF)", got, err, "hello, arm")
			}
			if n, err := c.Read(make([]byte, 4)); n != 0 || err != io.EOF {
				t.Fatalf("read after EOF: %d, %v; want 0, io.EOF", n, err)
			}
		}},
		{"large write arrives whole", func(t *testing.T, c *Conn, peer net.Conn) {
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(peer)
				got <- b
			}()
			n, err := c.Write(big)
			if err != nil || n != len(big) {
				t.Fatalf("write: %d, %v; want %d, nil", n, err, len(big))
			}
			_ = c.CloseWrite()
			if b := <-got; !bytes.Equal(b, big) {
				t.Fatalf("peer read %d bytes, not the %d written in order", len(b), len(big))
			}
		}},
		{"vector write arrives whole and in order", func(t *testing.T, c *Conn, peer net.Conn) {
			// More parts than one writev carries, empty ones among them,
			// and 8 MiB in the middle: many partial writes, some ending
			// inside a part.
			parts := [][]byte{[]byte("head:"), nil, big[:3], big[3 : len(big)-5], {}, big[len(big)-5:], []byte(":tail")}
			var want []byte
			for _, p := range parts {
				want = append(want, p...)
			}
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(peer)
				got <- b
			}()
			n, err := c.WriteVectors(parts)
			if err != nil || n != len(want) {
				t.Fatalf("WriteVectors: %d, %v; want %d, nil", n, err, len(want))
			}
			_ = c.CloseWrite()
			if b := <-got; !bytes.Equal(b, want) {
				t.Fatalf("peer read %d bytes, not the %d written in order", len(b), len(want))
			}
		}},
		{"vector write deadline with a peer that does not read", func(t *testing.T, c *Conn, peer net.Conn) {
			_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			n, err := c.WriteVectors([][]byte{[]byte("hdr"), big})
			if !errors.Is(err, os.ErrDeadlineExceeded) || n >= len(big) {
				t.Fatalf("writev past its deadline: %d of %d bytes, %v; want fewer, a timeout", n, len(big)+3, err)
			}
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "writev" {
				t.Fatalf("writev error %v is not a writev *net.OpError", err)
			}
		}},
		{"vector write to a reset peer", func(t *testing.T, c *Conn, peer net.Conn) {
			_ = peer.(*net.TCPConn).SetLinger(0) // close with RST
			_ = peer.Close()
			var err error
			for i := 0; err == nil && i < 1000; i++ {
				_, err = c.WriteVectors([][]byte{[]byte("hdr"), []byte("body")})
			}
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "writev" {
				t.Fatalf("writev to a reset peer: %v; want a writev *net.OpError", err)
			}
		}},
		{"empty read and write", func(t *testing.T, c *Conn, peer net.Conn) {
			if n, err := c.Read(nil); n != 0 || err != nil {
				t.Fatalf("empty read: %d, %v", n, err)
			}
			if n, err := c.Write(nil); n != 0 || err != nil {
				t.Fatalf("empty write: %d, %v", n, err)
			}
		}},
		{"read deadline", func(t *testing.T, c *Conn, peer net.Conn) {
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			_, err := c.Read(make([]byte, 8))
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read past its deadline: %v; want a timeout net.Error", err)
			}
			readError(t, err)
		}},
		{"write deadline with a peer that does not read", func(t *testing.T, c *Conn, peer net.Conn) {
			_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
			n, err := c.Write(big)
			if !errors.Is(err, os.ErrDeadlineExceeded) || n >= len(big) {
				t.Fatalf("write past its deadline: %d of %d bytes, %v; want fewer, a timeout", n, len(big), err)
			}
			var oe *net.OpError
			if !errors.As(err, &oe) || oe.Op != "write" {
				t.Fatalf("write error %v is not a write *net.OpError", err)
			}
		}},
		{"close ends a waiting read", func(t *testing.T, c *Conn, peer net.Conn) {
			done := make(chan error, 1)
			go func() {
				_, err := c.Read(make([]byte, 8))
				done <- err
			}()
			time.AfterFunc(10*time.Millisecond, func() { _ = c.Close() })
			err := <-done
			if !errors.Is(err, net.ErrClosed) {
				t.Fatalf("read on a closed connection: %v; want net.ErrClosed", err)
			}
			readError(t, err)
		}},
		{"peer reset", func(t *testing.T, c *Conn, peer net.Conn) {
			_ = peer.(*net.TCPConn).SetLinger(0) // close with RST
			_, _ = peer.Write([]byte("x"))
			_ = peer.Close()
			var err error
			for err == nil {
				_, err = c.Read(make([]byte, 8))
			}
			var oe *net.OpError
			if err != io.EOF && (!errors.As(err, &oe) || oe.Op != "read") {
				t.Fatalf("read after a reset: %v; want io.EOF or a read *net.OpError", err)
			}
			readError(t, err)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := rawPair(t)
			tc.run(t, c, peer)
		})
	}
}

// TestWrapLeavesOtherConnectionsAlone: only a TCP connection has a socket
// of its own to read raw.
func TestWrapLeavesOtherConnectionsAlone(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := Wrap(a); got != a {
		t.Fatalf("Wrap(pipe) = %T, want the pipe itself", got)
	}
}

// TestConnAllocatesNothing: a read and a write of a lock-step message,
// whole or in parts, allocate nothing, as net's own do not.
func TestConnAllocatesNothing(t *testing.T) {
	c, peer := rawPair(t)
	msg := []byte(`{"arm3":[]}`)
	in := make([]byte, 64)
	back := make([]byte, 64)
	parts := [][]byte{msg[:3], msg[3:7], msg[7:]}
	vector := false
	allocs := testing.AllocsPerRun(100, func() {
		vector = !vector // a frame goes out whole, or in parts
		var err error
		if vector {
			_, err = c.WriteVectors(parts)
		} else {
			_, err = c.Write(msg)
		}
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.ReadAtLeast(peer, back, len(msg))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Write(back[:n]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAtLeast(c, in, len(msg)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per round trip, want 0", allocs)
	}
}

// TestReadTellsWhenItsDataArrived: with receive times recorded, a read
// says when the newest data it returned arrived on the host (the kernel's
// time, not the read's), and still allocates nothing; without them it says
// it does not know.
func TestReadTellsWhenItsDataArrived(t *testing.T) {
	c, peer := rawPair(t)
	in := make([]byte, 64)
	if _, err := peer.Write([]byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(in); err != nil {
		t.Fatal(err)
	}
	if at, ok := c.LastReceived(); ok {
		t.Fatalf("receive time %d told though none was asked for", at)
	}
	if err := c.RecordReceiveTimes(); err != nil {
		t.Fatal(err)
	}
	// The kernel turns stamping on for the whole host asynchronously the
	// first time a socket asks: data may come unstamped for a moment.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := peer.Write([]byte("w")); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(in); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.LastReceived(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no read told a receive time within 10 s of asking for them")
		}
		time.Sleep(time.Millisecond)
	}
	for _, parts := range [][]string{{"one"}, {"first ", "second"}} {
		var sentFrom, sentTo int64
		for i, p := range parts {
			if i == len(parts)-1 {
				sentFrom = time.Now().UnixNano()
			}
			if _, err := peer.Write([]byte(p)); err != nil {
				t.Fatal(err)
			}
			if i == len(parts)-1 {
				sentTo = time.Now().UnixNano() // loopback: received before write returns
			}
			time.Sleep(20 * time.Millisecond) // the data waits in the socket
		}
		want := len(strings.Join(parts, ""))
		readFrom := time.Now().UnixNano()
		if n, err := io.ReadAtLeast(c, in, want); err != nil || n != want {
			t.Fatalf("read %d bytes, %v; want %d", n, err, want)
		}
		at, ok := c.LastReceived()
		if !ok || at < sentFrom || at > sentTo {
			t.Fatalf("%q: receive time %d (told %v), want the last part's, between %d and %d (the read began %.1f ms later)",
				parts, at, ok, sentFrom, sentTo, float64(readFrom-sentTo)/1e6)
		}
	}
	// A lock-step client: each message arrives on an empty socket the
	// reader has just found empty. Whether the read asks the kernel or not,
	// the time it tells is never after the data arrived.
	msg := []byte("tick")
	for i := range 200 {
		if _, err := peer.Write(msg); err != nil {
			t.Fatal(err)
		}
		sentTo := time.Now().UnixNano()
		if _, err := io.ReadAtLeast(c, in, len(msg)); err != nil {
			t.Fatal(err)
		}
		if at, ok := c.LastReceived(); !ok || at > sentTo {
			t.Fatalf("message %d: receive time %d (told %v), after the write returned at %d", i, at, ok, sentTo)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := peer.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadAtLeast(c, in, len(msg)); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.LastReceived(); !ok {
			t.Fatal("no receive time")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per stamped read, want 0", allocs)
	}
}

// countingCarrier is a listener's counting wrapper of a TCP connection.
type countingCarrier struct {
	net.Conn
	closes int
}

func (c *countingCarrier) TCPConn() *net.TCPConn { tc, _ := c.Conn.(*net.TCPConn); return tc }
func (c *countingCarrier) Close() error          { c.closes++; return c.Conn.Close() }

// TestWrapReadsACarrierRawAndClosesThroughIt: a connection a listener
// counts (transport's connection limit) is still read raw, and its close
// reaches the carrier, which gives the listener its place back.
func TestWrapReadsACarrierRawAndClosesThroughIt(t *testing.T) {
	c, peer := rawPair(t)
	carrier := &countingCarrier{Conn: c.TCPConn}
	raw, ok := Wrap(carrier).(*Conn)
	if !ok {
		t.Fatalf("Wrap(carrier) = %T, want a *rawsock.Conn", Wrap(carrier))
	}
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := raw.Read(b); n != 1 || err != nil {
		t.Fatalf("read %d, %v through the carrier's raw socket", n, err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	if carrier.closes != 1 {
		t.Fatalf("the carrier saw %d closes, want 1", carrier.closes)
	}
}
