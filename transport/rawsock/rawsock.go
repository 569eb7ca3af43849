// Package rawsock reads and writes a WebSocket's TCP connection with raw
// system calls (Linux; elsewhere the connection is left as it is): the
// socket layer of hapticd's sessions, and of the echo baseline
// (bench/echoserver), so that both pay the same for their I/O and the
// echo stays the floor of the service's round trip. It imports nothing of
// hapticd.
package rawsock

import (
	"bufio"
	"net"
	"net/http"
)

// Carrier is a connection that wraps a TCP connection to account for it (a
// listener that counts its open connections): Wrap reads and writes the
// TCP connection raw and closes it through the carrier, so the carrier
// sees the close.
type Carrier interface {
	net.Conn
	TCPConn() *net.TCPConn
}

// Hijacking returns w with a Hijack that wraps the hijacked connection
// (Wrap): a WebSocket upgrader given it reads and writes the socket raw.
// A w that cannot be hijacked is returned as it is.
func Hijacking(w http.ResponseWriter) http.ResponseWriter {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return w
	}
	return hijacker{ResponseWriter: w, hj: hj}
}

type hijacker struct {
	http.ResponseWriter
	hj http.Hijacker
}

func (w hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := w.hj.Hijack()
	if err != nil {
		return c, rw, err
	}
	return Wrap(c), rw, nil
}
