// Package echoserver is hapticbench's echo baseline: a bare
// gorilla/websocket server that answers the lock-step protocol with
// pre-encoded frames and does nothing else, so the difference to hapticd is
// the service's own cost.
//
// It is a package of its own, importing nothing of hapticd but the
// sessions' socket layer (transport/rawsock: raw reads and writes, so the
// echo pays what a session pays for its I/O and stays the floor), because
// two processes run it: `hapticbench echo-serve`, the echo baseline, and
// `hapticd baseline-arms --inventory --state`, the bare arm loop inside an
// echo's process, the floor the service's loop under load is compared with
// (a loop in an idle process of its own is woken by the kernel; the
// service's, by its own busy runtime).
package echoserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/transport/rawsock"
)

// keyFullState marks a full-state request, answered with the inventory
// frame (the frame that carries config).
var keyFullState = []byte(`"force_render_full_state"`)

// Server serves frames on a 127.0.0.1 port: the inventory on open, then one
// frame per message: the inventory again for a full-state request, else the
// state frame.
type Server struct {
	// URL is where clients connect: ws://127.0.0.1:PORT/.
	URL string

	ln        net.Listener
	srv       *http.Server
	inventory *websocket.PreparedMessage
	state     *websocket.PreparedMessage
	wg        sync.WaitGroup

	mu     sync.Mutex // guards the following
	conns  map[*websocket.Conn]struct{}
	closed bool
}

// Start serves inventory and state on a free 127.0.0.1 port.
func Start(inventory, state []byte) (*Server, error) {
	if len(inventory) == 0 || len(state) == 0 {
		return nil, errors.New("echoserver: needs an inventory and a state frame")
	}
	s := &Server{conns: make(map[*websocket.Conn]struct{})}
	var err error
	if s.inventory, err = websocket.NewPreparedMessage(websocket.TextMessage, inventory); err != nil {
		return nil, fmt.Errorf("echoserver: inventory frame: %w", err)
	}
	if s.state, err = websocket.NewPreparedMessage(websocket.TextMessage, state); err != nil {
		return nil, fmt.Errorf("echoserver: state frame: %w", err)
	}
	s.ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("echoserver: listen: %w", err)
	}
	s.URL = "ws://" + s.ln.Addr().String() + "/"
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.Serve(s.ln)
	}()
	return s, nil
}

// StartFiles is Start with the frames read from two files, and prints the
// URL as a line on out: the child side of a parent that reads it.
func StartFiles(inventoryFile, stateFile string, out io.Writer) (*Server, error) {
	inv, err := os.ReadFile(inventoryFile)
	if err != nil {
		return nil, fmt.Errorf("echoserver: inventory: %w", err)
	}
	state, err := os.ReadFile(stateFile)
	if err != nil {
		return nil, fmt.Errorf("echoserver: state frame: %w", err)
	}
	s, err := Start(inv, state)
	if err != nil {
		return nil, err
	}
	if _, err := fmt.Fprintln(out, s.URL); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

var upgrader = websocket.Upgrader{ReadBufferSize: 4 << 10, WriteBufferSize: 16 << 10}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(rawsock.Hijacking(w), r, nil)
	if err != nil {
		return // Upgrade has answered the request
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return
	}
	s.conns[conn] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		conn.Close()
		s.wg.Done()
	}()
	if conn.WritePreparedMessage(s.inventory) != nil {
		return
	}
	var msg bytes.Buffer // reused: a steady message size allocates nothing
	for {
		_, rd, err := conn.NextReader()
		if err != nil {
			return
		}
		msg.Reset()
		if _, err := msg.ReadFrom(rd); err != nil {
			return
		}
		reply := s.state
		if bytes.Contains(msg.Bytes(), keyFullState) {
			reply = s.inventory
		}
		if conn.WritePreparedMessage(reply) != nil {
			return
		}
	}
}

// Close stops accepting, closes every session and waits for them.
func (s *Server) Close() {
	_ = s.srv.Close() // closes the listener; hijacked conns are ours to close
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
