//go:build linux

package transport

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/transport/rawsock"
	"github.com/hapticd/hapticd/transport/wsclose"
)

// rawPair returns the server side of an upgraded WebSocket's TCP
// connection with raw reads and writes (as a session's), and the client's
// side; both close with the test.
func rawPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ws, c := upgradedPair(t)
	raw := rawsock.Wrap(ws.UnderlyingConn())
	if _, ok := raw.(*rawsock.Conn); !ok {
		t.Fatalf("rawsock.Wrap(%T) did not wrap a TCP connection", ws.UnderlyingConn())
	}
	return raw, c.conn
}

// TestRawSocketErrorsAreReadErrors: a session whose raw socket times out,
// is closed under its reader or is reset by the client ends as a read
// error (close reason read_error), as it did on net's own calls.
func TestRawSocketErrorsAreReadErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		read func(c, peer net.Conn) error
	}{
		{"read deadline", func(c, peer net.Conn) error {
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			_, err := c.Read(make([]byte, 8))
			return err
		}},
		{"closed under its reader", func(c, peer net.Conn) error {
			time.AfterFunc(10*time.Millisecond, func() { _ = c.Close() })
			_, err := c.Read(make([]byte, 8))
			return err
		}},
		{"peer reset", func(c, peer net.Conn) error {
			_ = peer.(*net.TCPConn).SetLinger(0) // close with RST
			_, _ = peer.Write([]byte("x"))
			_ = peer.Close()
			var err error
			for err == nil {
				_, err = c.Read(make([]byte, 8))
			}
			return err
		}},
		{"peer closed", func(c, peer net.Conn) error {
			_ = peer.Close()
			_, err := io.ReadAll(c)
			if err == nil {
				_, err = c.Read(make([]byte, 8))
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, peer := rawPair(t)
			err := tc.read(c, peer)
			if r := wsclose.ReadReason(err); r != protocol.CloseReadError {
				t.Fatalf("ReadReason(%v) = %v, want %v", err, r, protocol.CloseReadError)
			}
		})
	}
}

// TestFramesInPartsOnARawSocket: a session's frame written in parts on its
// raw socket (WriteVectors: header, head, the shared run, tail) is the
// frame gorilla writes for the joined message, small and large.
func TestFramesInPartsOnARawSocket(t *testing.T) {
	wc, c := testConn(t)
	wc.raw = rawsock.Wrap(wc.raw)
	if _, ok := wc.raw.(vectorWriter); !ok {
		t.Fatalf("rawsock.Wrap(%T) cannot write a frame in parts raw", wc.raw)
	}
	for _, tc := range []struct {
		name            string
		head, run, tail int
	}{
		{"one arm", 60, 600, 40},
		{"100 arms, 64-bit length", 60, 63000, 2600},
		{"run last", 30, 700, 0},
	} {
		head := bytes.Repeat([]byte("h"), tc.head)
		run := bytes.Repeat([]byte("r"), tc.run)
		tail := bytes.Repeat([]byte("t"), tc.tail)
		buf := append(append(wc.Buffer(), head...), tail...)
		wc.SendSpliced(buf, len(head), run)
		got, _ := c.frame(t)
		joined := append(append(append([]byte(nil), head...), run...), tail...)
		if want := gorillaFrame(t, websocket.TextMessage, joined); !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes on the wire, not gorilla's %d-byte frame of the joined message", tc.name, len(got), len(want))
		}
	}
}
