package bench

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/gorilla/websocket"
)

var keyFullState = []byte(`"force_render_full_state"`)

// padTo appends spaces to the state frame until it is n bytes long, so the
// echo baseline moves as many bytes per frame as hapticd did on average.
func (f *capturedFrames) padTo(n int) {
	for len(f.state) < n {
		f.state = append(f.state, ' ')
	}
}

// echoServer is the echo baseline: a bare gorilla/websocket server that
// answers the lock-step protocol with pre-encoded frames and does nothing
// else, so the difference to hapticd is the service's own cost.
type echoServer struct {
	url       string
	ln        net.Listener
	srv       *http.Server
	inventory *websocket.PreparedMessage
	state     *websocket.PreparedMessage
	wg        sync.WaitGroup

	mu     sync.Mutex // guards the following
	conns  map[*websocket.Conn]struct{}
	closed bool
}

// startEcho serves frames on a free 127.0.0.1 port: the inventory on open,
// then one frame per message: the inventory again for a full-state request
// (it is the frame that carries config), else the captured state frame.
func startEcho(frames capturedFrames) (*echoServer, error) {
	if len(frames.inventory) == 0 || len(frames.state) == 0 {
		return nil, errors.New("bench: echo baseline needs a captured inventory and state frame; the hapticd run captured none")
	}
	e := &echoServer{conns: make(map[*websocket.Conn]struct{})}
	var err error
	if e.inventory, err = websocket.NewPreparedMessage(websocket.TextMessage, frames.inventory); err != nil {
		return nil, fmt.Errorf("bench: echo inventory frame: %w", err)
	}
	if e.state, err = websocket.NewPreparedMessage(websocket.TextMessage, frames.state); err != nil {
		return nil, fmt.Errorf("bench: echo state frame: %w", err)
	}
	e.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench: echo listen: %w", err)
	}
	e.url = "ws://" + e.ln.Addr().String() + "/"
	e.srv = &http.Server{Handler: http.HandlerFunc(e.serve)}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		_ = e.srv.Serve(e.ln)
	}()
	return e, nil
}

var echoUpgrader = websocket.Upgrader{ReadBufferSize: 4 << 10, WriteBufferSize: 16 << 10}

func (e *echoServer) serve(w http.ResponseWriter, r *http.Request) {
	conn, err := echoUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the request
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		conn.Close()
		return
	}
	e.conns[conn] = struct{}{}
	e.wg.Add(1)
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.conns, conn)
		e.mu.Unlock()
		conn.Close()
		e.wg.Done()
	}()
	if conn.WritePreparedMessage(e.inventory) != nil {
		return
	}
	buf := make([]byte, 0, 4<<10)
	for {
		_, rd, err := conn.NextReader()
		if err != nil {
			return
		}
		if buf, err = readAll(buf[:0], rd); err != nil {
			return
		}
		reply := e.state
		if bytes.Contains(buf, keyFullState) {
			reply = e.inventory
		}
		if conn.WritePreparedMessage(reply) != nil {
			return
		}
	}
}

// close stops accepting, closes every session and waits for them.
func (e *echoServer) close() {
	_ = e.srv.Close() // closes the listener; hijacked conns are ours to close
	e.mu.Lock()
	e.closed = true
	for c := range e.conns {
		c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}
