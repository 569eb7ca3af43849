package transport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// rawClient is a WebSocket client that reads the server's frames as bytes
// on the wire: what any client library parses.
type rawClient struct {
	conn net.Conn
	r    *bufio.Reader
}

// dialRaw opens a WebSocket to url's host by hand (RFC 6455 4.1).
func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", addr)
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("handshake: %s", resp.Status)
	}
	return &rawClient{conn: conn, r: r}
}

// frame reads one frame and returns its bytes as sent, header included,
// and its payload.
func (c *rawClient) frame(t *testing.T) (raw, payload []byte) {
	t.Helper()
	head := make([]byte, 2, 14)
	if _, err := io.ReadFull(c.r, head); err != nil {
		t.Fatalf("read a frame header: %v", err)
	}
	n := uint64(head[1] & 0x7f)
	switch n {
	case 126:
		ext := make([]byte, 2)
		if _, err := io.ReadFull(c.r, ext); err != nil {
			t.Fatal(err)
		}
		head = append(head, ext...)
		n = uint64(binary.BigEndian.Uint16(ext))
	case 127:
		ext := make([]byte, 8)
		if _, err := io.ReadFull(c.r, ext); err != nil {
			t.Fatal(err)
		}
		head = append(head, ext...)
		n = binary.BigEndian.Uint64(ext)
	}
	if head[1]&0x80 != 0 {
		t.Fatalf("a server frame is masked (header % x)", head)
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(c.r, payload); err != nil {
		t.Fatalf("read a %d-byte payload: %v", n, err)
	}
	return append(head, payload...), payload
}

// send writes one masked client frame of opcode op.
func (c *rawClient) send(t *testing.T, op byte, payload []byte) {
	t.Helper()
	b := []byte{0x80 | op, 0x80 | byte(len(payload)), 1, 2, 3, 4}
	if len(payload) > 125 {
		t.Fatal("rawClient.send: short payloads only")
	}
	for i, v := range payload {
		b = append(b, v^b[2+i%4])
	}
	if _, err := c.conn.Write(b); err != nil {
		t.Fatal(err)
	}
}

// upgradedPair is a gorilla server connection on a loopback socket and a
// raw client of it.
func upgradedPair(t *testing.T) (*websocket.Conn, *rawClient) {
	t.Helper()
	conns := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := websocket.Upgrader{ReadBufferSize: readBufferBytes, WriteBufferSize: writeBufferBytes}
		ws, err := u.Upgrade(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		conns <- ws
	}))
	t.Cleanup(srv.Close)
	c := dialRaw(t, strings.TrimPrefix(srv.URL, "http://"))
	ws := <-conns
	t.Cleanup(func() { _ = ws.Close() })
	return ws, c
}

// gorillaFrame is the bytes gorilla's WriteMessage puts on the wire for a
// server's message of kind op: what frames were before writeData.
func gorillaFrame(t *testing.T, op int, payload []byte) []byte {
	t.Helper()
	ws, c := upgradedPair(t)
	var err error
	if op == websocket.PongMessage {
		err = ws.WriteControl(op, payload, time.Now().Add(10*time.Second))
	} else {
		err = ws.WriteMessage(op, payload)
	}
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := c.frame(t)
	return raw
}

// testConn is a wsConn on a gorilla server connection whose reader runs,
// as serve's does, so that control frames are handled.
func testConn(t *testing.T) (*wsConn, *rawClient) {
	t.Helper()
	ws, c := upgradedPair(t)
	h := &sessionHandler{frames: framePool{newCap: 4096, keepCap: maxKeptFrameBytes}, conns: newConnSet(10 * time.Second), log: zerolog.Nop()}
	wc := &wsConn{ws: ws, raw: ws.UnderlyingConn(), h: h, inflight: newInflightGate(maxInFlight), done: make(chan struct{})}
	wc.takeControlWrites()
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			if _, _, err := ws.NextReader(); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { _ = c.conn.Close(); <-read })
	return wc, c
}

// TestFramesAreGorillasBytes: a frame written in parts (the session's own
// bytes around a shared run, one writev) is, byte for byte, the frame
// gorilla's WriteMessage writes for the joined message, at every header
// length (7, 16 and 64 bits), wherever the run sits, from a pool buffer
// with room for the header, one that grew past it, or any other.
func TestFramesAreGorillasBytes(t *testing.T) {
	pattern := func(n int, seed byte) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + (seed+byte(i))%26
		}
		return b
	}
	cases := []struct {
		name            string
		head, run, tail int
		buffer          string // "pool", "grown" or "foreign"
	}{
		{"7-bit length, no run", 20, 0, 10, "pool"},
		{"125 bytes", 100, 0, 25, "pool"},
		{"126 bytes", 100, 0, 26, "pool"},
		{"16-bit length with a run", 300, 600, 40, "pool"},
		{"65535 bytes", 35, 65000, 500, "pool"},
		{"64-bit length, the run of 100 arms", 60, 63000, 2600, "pool"},
		{"run first", 0, 700, 30, "pool"},
		{"run last", 30, 700, 0, "pool"},
		{"grown buffer", 5000, 63000, 30, "grown"},
		{"foreign buffer", 40, 63000, 30, "foreign"},
		{"foreign, no run", 40, 0, 30, "foreign"},
	}
	wc, c := testConn(t)
	for _, tc := range cases {
		head, run, tail := pattern(tc.head, 1), pattern(tc.run, 2), pattern(tc.tail, 3)
		var buf []byte
		switch tc.buffer {
		case "pool":
			buf = wc.Buffer()
		case "grown":
			buf = wc.Buffer()
			buf = append(buf, make([]byte, cap(buf)+1)...)[:0] // past the pool buffer: another array
		case "foreign":
			wc.frame = nil
		}
		buf = append(append(buf, head...), tail...)
		wc.SendSpliced(buf, len(head), run)
		got, payload := c.frame(t)
		joined := append(append(append([]byte(nil), head...), run...), tail...)
		if !bytes.Equal(payload, joined) {
			t.Fatalf("%s: the payload is not the joined frame", tc.name)
		}
		if want := gorillaFrame(t, websocket.TextMessage, joined); !bytes.Equal(got, want) {
			t.Fatalf("%s: frame header % x, gorilla writes % x", tc.name, got[:min(len(got), 10)], want[:min(len(want), 10)])
		}
	}
	// A ping between frames is answered in line, as gorilla answers it.
	c.send(t, 0x9, []byte("are you there"))
	got, _ := c.frame(t)
	if want := gorillaFrame(t, websocket.PongMessage, []byte("are you there")); !bytes.Equal(got, want) {
		t.Fatalf("pong % x, gorilla writes % x", got, want)
	}
	wc.Send(append(wc.Buffer(), `{"after":"pong"}`...))
	if _, payload := c.frame(t); string(payload) != `{"after":"pong"}` {
		t.Fatalf("the frame after the pong: %q", payload)
	}
}

// TestNoFrameAfterTheClientsClose: once the client's close frame is read
// (and answered, by gorilla), frames are dropped: the close frame is the
// last thing on the wire.
func TestNoFrameAfterTheClientsClose(t *testing.T) {
	wc, c := testConn(t)
	c.send(t, 0x8, []byte{0x03, 0xe8}) // 1000
	raw, _ := c.frame(t)
	if raw[0] != 0x88 {
		t.Fatalf("the answer to a close frame: % x, want a close frame", raw)
	}
	// The handler marked the connection before gorilla answered: no wait.
	wc.Send(append(wc.Buffer(), `{"late":true}`...))
	_ = wc.ws.Close()
	if rest, err := io.ReadAll(c.r); len(rest) != 0 {
		t.Fatalf("after the close frame the client read % x (%v)", rest, err)
	}
}
