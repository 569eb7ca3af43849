package transport

import (
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/awake"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// tcpPair is a real loopback TCP connection: the server's end (plain, not
// taken over by rawsock) and the client's.
func tcpPair(t *testing.T) (server *net.TCPConn, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); client.Close() })
	return c.(*net.TCPConn), client
}

// queuedAtLeast waits until the server's socket holds n unread bytes.
func queuedAtLeast(t *testing.T, b *stallBoundConn, n int) {
	t.Helper()
	hwtest.EventuallyNil(t, 5*time.Second, "the client's bytes in the server's socket", func() error {
		if q, err := b.queued(); err != nil || q < n {
			return fmt.Errorf("%d bytes queued (%v), want %d", q, err, n)
		}
		return nil
	})
}

// A connection without the kernel's receive times says nothing of its
// data's wait on a healthy host, and after a stall (the process stood
// still: no read, no note of the awake clock) says the data read until
// the socket is drained may have waited since the stall began, whether
// the clock noted the stall's end before the read or not.
func TestReadAfterAStallSaysItsDataMayHaveWaitedSinceTheStall(t *testing.T) {
	stall := awakeSlack + 100*time.Millisecond
	for _, tc := range []struct {
		name string
		// notedFirst: the clock notes the stall's end before the read.
		notedFirst bool
	}{
		{"read before the clock's next note", false},
		{"read after the clock's next note", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, client := tcpPair(t)
			clock := awake.New(awakeInterval, awakeSlack)
			b, ok := boundArrivals(srv, clock).(*stallBoundConn)
			if !ok {
				t.Fatalf("a plain TCP connection is not bounded on %T", boundArrivals(srv, clock))
			}
			buf := make([]byte, 10)
			read := func(want string) {
				t.Helper()
				if _, err := io.ReadFull(b, buf[:len(want)]); err != nil || string(buf[:len(want)]) != want {
					t.Fatalf("read %q, %v; want %q", buf[:len(want)], err, want)
				}
			}

			// Healthy: the clock notes, the data is read as it comes.
			clock.Note(clock.Now())
			client.Write([]byte("fresh"))
			read("fresh")
			if at, ok := b.LastReceived(); ok {
				t.Fatalf("a healthy read claims its data arrived %v ago", time.Duration(time.Now().UnixNano()-at))
			}

			// The stall: no note, no read, while the client sends 30 bytes.
			clock.Note(clock.Now())
			stallStart := time.Now()
			client.Write([]byte("aaaaaaaaaabbbbbbbbbbcccccccccc"))
			queuedAtLeast(t, b, 30)
			time.Sleep(stall) // the stall is the scenario: the process stands still this long
			if tc.notedFirst {
				clock.Note(clock.Now())
			}
			for i, want := range []string{"aaaaaaaaaa", "bbbbbbbbbb", "cccccccccc"} {
				read(want)
				at, ok := b.LastReceived()
				now := time.Now()
				// Less 1 ms: Windows reads wall and monotonic time from two
				// clocks, which drift apart by microseconds between readings.
				if waited := time.Duration(now.UnixNano() - at); !ok || waited < now.Sub(stallStart)-time.Millisecond {
					t.Fatalf("read %d after the stall: LastReceived says %v ago (ok %v); want at least the %v since the stall began", i+1, waited, ok, now.Sub(stallStart))
				}
				clock.Note(clock.Now()) // the process runs again
			}

			// Drained: what comes now arrived now.
			client.Write([]byte("later"))
			read("later")
			if at, ok := b.LastReceived(); ok {
				t.Fatalf("a read after the socket was drained claims its data arrived %v ago", time.Duration(time.Now().UnixNano()-at))
			}

			// Idle across a stall: the reader waits in its read while the
			// process stalls and resumes, and the client's next message
			// comes well after: it is fresh, not the stall's.
			got := make(chan error, 1)
			go func() {
				_, err := io.ReadFull(b, buf[:4])
				got <- err
			}()
			clock.Note(clock.Now())
			time.Sleep(stall) // the stall, while the reader waits in its read
			clock.Note(clock.Now())
			stop, running := make(chan struct{}), make(chan struct{})
			go func() { defer close(running); clock.Run(stop) }() // the process runs on
			time.Sleep(2 * resumeWindow)                          // the client idle after the stall: the scenario
			client.Write([]byte("idle"))
			err := <-got
			close(stop)
			<-running
			if err != nil {
				t.Fatal(err)
			}
			if at, ok := b.LastReceived(); ok {
				t.Fatalf("an idle client's message after a stall claims it arrived %v ago", time.Duration(time.Now().UnixNano()-at))
			}
		})
	}
}

// gatedListener's connections are plain (rawsock leaves them alone, as on
// a system without receive times), and hand no data to their reader while
// the gate is shut: the reader stands still as a stopped process's would,
// while the kernel queues what the client sends.
type gatedListener struct {
	net.Listener
	mu   sync.Mutex
	shut chan struct{} // nil: open
}

type gatedConn struct {
	*net.TCPConn
	l *gatedListener
}

func (l *gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return gatedConn{c.(*net.TCPConn), l}, nil
}

func (l *gatedListener) close() {
	l.mu.Lock()
	l.shut = make(chan struct{})
	l.mu.Unlock()
}

func (l *gatedListener) open() {
	l.mu.Lock()
	close(l.shut)
	l.shut = nil
	l.mu.Unlock()
}

func (c gatedConn) Read(p []byte) (int, error) {
	n, err := c.TCPConn.Read(p)
	c.l.mu.Lock()
	shut := c.l.shut
	c.l.mu.Unlock()
	if shut != nil {
		<-shut
	}
	return n, err
}

// Where the kernel gives no receive times (Windows, macOS), commands a
// client sent while the service stood still are answered stale_command
// and take no control, as on Linux; the client's next command takes the
// arm again, and a healthy client with an idle spell is never refused.
func TestCommandsQueuedDuringAStallWithoutReceiveTimesTakeNoControl(t *testing.T) {
	for _, notedFirst := range []bool{false, true} {
		name := map[bool]string{false: "read before the clock's next note", true: "read after the clock's next note"}[notedFirst]
		t.Run(name, func(t *testing.T) {
			ts := startService(t, serviceConfig{arms: 1})
			id := ts.armIDs[0]
			conns := newConnSet(10 * time.Second)
			conns.awake = awake.New(awakeInterval, awakeSlack)
			h := newSessionHandler(ts.svc, protocol.Codec{}, conns, zerolog.Nop())
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			gl := &gatedListener{Listener: ln}
			hs := httptest.NewUnstartedServer(h)
			hs.Listener = gl
			hs.Start()
			t.Cleanup(hs.Close)
			watch := make(chan struct{})
			watching := make(chan struct{})
			go func() { defer close(watching); conns.awake.Run(watch) }()
			defer func() { close(watch); <-watching }()

			conn, _, err := websocket.DefaultDialer.Dial("ws://"+ln.Addr().String()+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			frame := func() map[string]any {
				t.Helper()
				_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
				var f map[string]any
				if err := conn.ReadJSON(&f); err != nil {
					t.Fatal(err)
				}
				return f
			}
			send := func(msg string) {
				t.Helper()
				if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
					t.Fatal(err)
				}
			}
			codes := func(f map[string]any) []string {
				var out []string
				warnings, _ := f["warnings"].([]any)
				errs, _ := f["errors"].([]any)
				for _, w := range append(warnings, errs...) {
					c, _ := path(w, "code").(string)
					out = append(out, c)
				}
				return out
			}
			frame() // the inventory
			// A lease longer than a loaded host's timer lateness (the awake
			// clock's notes), shorter than the stall.
			send(`{"session":{"configure":{"lease":{"ms":200}}}}`)
			frame()
			command := `{"arm3":[{"device_id":"` + id + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1}}}}]}`

			// Healthy, with an idle spell longer than the lease: never refused,
			// unless the process itself stood still past the clock's slack
			// (a loaded machine starves it so): the clock then noted a
			// stall, and stale_command is the promised answer to a command
			// read after it.
			for i := range 30 {
				if i == 15 {
					time.Sleep(400 * time.Millisecond) // the idle spell is the scenario
				}
				from := conns.awake.Now()
				send(command)
				c := codes(frame())
				if len(c) == 1 && c[0] == string(protocol.CodeStaleCommand) {
					if start, end, stalled := conns.awake.StallSince(from, conns.awake.Now()); stalled {
						if end == 0 {
							end = conns.awake.Now()
						}
						t.Logf("healthy command %d answered stale_command after the process stood still %v (a loaded machine)", i+1, time.Duration(end-start))
						continue
					}
				}
				if len(c) > 0 {
					t.Fatalf("healthy command %d answered %v (no stall of the process noted)", i+1, c)
				}
			}

			// The stall: the reader and the clock stand still while the
			// client sends 20 commands, 10 ms apart, then goes quiet.
			close(watch)
			<-watching
			gl.close()
			send(command) // the reader takes this one and stands still with it
			for range 19 {
				time.Sleep(10 * time.Millisecond)
				send(command)
			}
			time.Sleep(awakeSlack + 100*time.Millisecond) // longer than the lease and the slack: the stall is the scenario
			watch, watching = make(chan struct{}), make(chan struct{})
			if notedFirst {
				conns.awake.Note(conns.awake.Now())
			}
			gl.open()
			go func() { defer close(watching); conns.awake.Run(watch) }()
			for i := range 20 {
				if c := codes(frame()); len(c) != 1 || c[0] != string(protocol.CodeStaleCommand) {
					t.Errorf("command %d of 20 sent during the stall answered %v; want stale_command alone", i+1, c)
				}
			}

			// The client's next command takes the arm again.
			hwtest.EventuallyNil(t, 10*time.Second, "a fresh command to take the arm", func() error {
				send(command)
				f := frame()
				if c := codes(f); len(c) > 0 {
					return fmt.Errorf("answered %v", c)
				}
				arms, _ := f["arm3"].([]any)
				for _, a := range arms {
					if mode, _ := path(a, "state", "control_mode").(string); mode != "force" {
						return fmt.Errorf("control mode %q", mode)
					}
				}
				return nil
			})
		})
	}
}
