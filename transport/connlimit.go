package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// DefaultMaxConnections is each listener's limit of open connections when
// Config.MaxConnections is 0. The project's own runs hold 1,000 sessions
// (and its memory tests 2,000 idle ones) on one listener, and must never
// be refused; a client opening sockets in a loop must not take every file
// descriptor. Three listeners at the limit hold about 12,000, far below the
// hard limit Go raises the soft one to on Linux (524,288 under systemd).
const DefaultMaxConnections = 4096

// refusingSlots bounds the connections over the limit that are kept open
// just long enough to read their request and answer 503 (each at most
// ReadHeaderTimeout); past them a new connection is closed at accept,
// unanswered, so a flood cannot grow the refusals instead.
const refusingSlots = 64

// retryAfterSeconds is the Retry-After of a refusal: sessions come and go
// within seconds, so a short wait is worth a retry.
const retryAfterSeconds = "1"

// limitListener counts the connections it accepted until each is closed
// (a hijacked WebSocket included, until the socket closes). Over max, a
// connection is still accepted, marked, and answered 503 with the JSON
// error envelope by refuseOverLimit, then closed; open connections are not
// affected. A listener that serves probes answers them there instead.
type limitListener struct {
	net.Listener
	name string
	max  int64
	// servesProbes: a probe (isProbe) is served over the limit, so that
	// a liveness or readiness check, or a scrape, does not take a busy
	// service for a dead one.
	servesProbes bool
	// open counts the connections being served, refusing those over the
	// limit being answered; refused counts the connections over the
	// limit that were not served a probe.
	open, refusing atomic.Int64
	refused        atomic.Uint64
}

func newLimitListener(l net.Listener, name string, max int, servesProbes bool) *limitListener {
	return &limitListener{Listener: l, name: name, max: int64(max), servesProbes: servesProbes}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &countedConn{Conn: c, slot: &l.open}, nil
		}
		l.open.Add(-1)
		if l.refusing.Add(1) > refusingSlots {
			l.refusing.Add(-1)
			l.refused.Add(1)
			_ = c.Close()
			continue
		}
		return &countedConn{Conn: c, slot: &l.refusing, overLimit: &overLimit{refused: &l.refused}}, nil
	}
}

// refusalWriteWithin bounds the write of an answer over the limit: a place
// over it is held no longer than a request head may take to arrive
// (ReadHeaderTimeout, 5 s).
const refusalWriteWithin = 5 * time.Second

// overLimit is what became of a connection accepted over the limit:
// answered (503, or a probe served), or, still pending at its close,
// closed before its request came.
type overLimit struct {
	answered atomic.Bool
	// refused is the listener's count, which every such connection joins
	// but one served a probe: at its 503, or at its close unanswered.
	refused *atomic.Uint64
}

// overLimitKey holds, in a request's context, the *overLimit of a
// connection accepted over the listener's limit.
type overLimitKey struct{}

// connContext is the http.Server's ConnContext: it marks the requests of
// a connection over the limit.
func (l *limitListener) connContext(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*countedConn); ok && cc.overLimit != nil {
		return context.WithValue(ctx, overLimitKey{}, cc.overLimit)
	}
	return ctx
}

// refuseOverLimit answers the request of a connection over the limit with
// 503, or serves it if it is a probe the listener serves, and closes the
// connection; other requests go to next.
func (l *limitListener) refuseOverLimit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		over, _ := r.Context().Value(overLimitKey{}).(*overLimit)
		if over == nil {
			next.ServeHTTP(w, r)
			return
		}
		if l.servesProbes && isProbe(r) {
			// One request, then the place over the limit is given back;
			// a prober that does not read its answer holds the place no
			// longer than a request head may take (ReadHeaderTimeout),
			// not the 30 s WriteTimeout.
			over.answered.Store(true)
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(refusalWriteWithin))
			w.Header().Set("Connection", "close")
			next.ServeHTTP(w, r)
			return
		}
		// The body is not read: without this net/http would read up to
		// 256 KiB of it after the answer, bounded by ReadTimeout (30 s),
		// and a client announcing a body it never sends would hold one of
		// the refusal places that long.
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		over.answered.Store(true)
		over.refused.Add(1)
		w.Header().Set("Retry-After", retryAfterSeconds)
		w.Header().Set("Connection", "close")
		writeError(w, protocol.Errorf(protocol.CodeUnavailable, "",
			"the %s listener has %d connections open, its limit (--max-connections); retry after %s s, or close idle connections and sockets", l.name, l.max, retryAfterSeconds))
	})
}

// countedConn gives its slot back once, on its first Close.
type countedConn struct {
	net.Conn
	slot *atomic.Int64
	// overLimit is set on a connection accepted over the limit.
	overLimit *overLimit
	once      sync.Once
	// out is WriteVectors' scratch (one writer at a time, as a session's).
	out net.Buffers
}

// The answers net/http writes itself on the connection, each whole in one
// Write, to a request it refuses before any handler runs (net/http's
// server.go: conn.serve, response.sendExpectationFailed). countedConn.Write
// answers the JSON error envelope every other refusal answers in their
// place.
const (
	netHTTPPlainHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

	netHTTPHeadersTooLarge = "HTTP/1.1 431 Request Header Fields Too Large" + netHTTPPlainHeaders + "431 Request Header Fields Too Large"
	netHTTPBadTransfer     = "HTTP/1.1 501 Not Implemented" + netHTTPPlainHeaders + "Unsupported transfer encoding"
	netHTTPBadVersion      = "HTTP/1.1 505 HTTP Version Not Supported: unsupported protocol version" + netHTTPPlainHeaders + "505 HTTP Version Not Supported: unsupported protocol version"
	netHTTPNoHost          = "HTTP/1.1 400 Bad Request: missing required Host header" + netHTTPPlainHeaders + "400 Bad Request: missing required Host header"
	netHTTPBadHost         = "HTTP/1.1 400 Bad Request: malformed Host header" + netHTTPPlainHeaders + "400 Bad Request: malformed Host header"
	netHTTPBadHeaderName   = "HTTP/1.1 400 Bad Request: invalid header name" + netHTTPPlainHeaders + "400 Bad Request: invalid header name"
	netHTTPBadHeaderValue  = "HTTP/1.1 400 Bad Request: invalid header value" + netHTTPPlainHeaders + "400 Bad Request: invalid header value"
	// A malformed request line, header line or Content-Length, among others.
	netHTTPBadRequest = "HTTP/1.1 400 Bad Request" + netHTTPPlainHeaders + "400 Bad Request"

	// The 417 to an Expect other than 100-continue goes through the
	// response writer: its status line has the request's version, and a
	// Date between the two parts (http.TimeFormat, 29 bytes). A HEAD's has
	// no Content-Length, and stays as it is (an answer to a HEAD has no
	// body).
	netHTTPExpectationFailed = " 417 Expectation Failed\r\nConnection: close\r\nDate: "
	netHTTPExpectationTail   = "\r\nContent-Length: 0\r\n\r\n"
	netHTTPExpectationLen    = len("HTTP/1.1") + len(netHTTPExpectationFailed) + len(http.TimeFormat) + len(netHTTPExpectationTail)

	netHTTPRefusalMaxLen = max(len(netHTTPHeadersTooLarge), len(netHTTPBadTransfer), len(netHTTPBadVersion),
		len(netHTTPNoHost), len(netHTTPBadHost), len(netHTTPBadHeaderName), len(netHTTPBadHeaderValue),
		len(netHTTPBadRequest), netHTTPExpectationLen)
)

// netHTTPRefusal is the error to answer in place of p, when p is one of
// net/http's own refusals, or nil.
func netHTTPRefusal(p []byte) *protocol.Error {
	// Every other write (an answer, a frame) costs these two compares.
	if len(p) > netHTTPRefusalMaxLen || !bytes.HasPrefix(p, []byte("HTTP/1.")) {
		return nil
	}
	switch string(p) {
	case netHTTPHeadersTooLarge:
		return protocol.Errorf(protocol.CodeHeadersTooLarge, "", "the request line and headers are over %d KiB: send fewer or shorter headers", maxHeaderBytes>>10)
	case netHTTPBadTransfer:
		return protocol.Errorf(protocol.CodeUnsupportedTransferEncoding, "", "the Transfer-Encoding is not supported: send the body with a Content-Length, or chunked")
	case netHTTPBadVersion:
		return protocol.Errorf(protocol.CodeUnsupportedHTTPVersion, "", "the HTTP version is not supported: send HTTP/1.1 (or HTTP/1.0)")
	case netHTTPNoHost:
		return protocol.Errorf(protocol.CodeMalformedRequest, "", "the request has no Host header, which HTTP/1.1 requires: send Host: host:port")
	case netHTTPBadHost:
		return protocol.Errorf(protocol.CodeMalformedRequest, "", "the Host header is malformed: send Host: host:port")
	case netHTTPBadHeaderName:
		return protocol.Errorf(protocol.CodeMalformedRequest, "", "a header name is malformed: send Name: value, the name without spaces or separators")
	case netHTTPBadHeaderValue:
		return protocol.Errorf(protocol.CodeMalformedRequest, "", "a header value holds a control character: send printable values")
	case netHTTPBadRequest:
		return protocol.Errorf(protocol.CodeMalformedRequest, "", "the request line, a header line or the Content-Length is malformed: send METHOD /path HTTP/1.1, Name: value header lines and at most one Content-Length")
	}
	if len(p) == netHTTPExpectationLen && (p[7] == '0' || p[7] == '1') &&
		string(p[8:8+len(netHTTPExpectationFailed)]) == netHTTPExpectationFailed &&
		bytes.HasSuffix(p, []byte(netHTTPExpectationTail)) {
		return protocol.Errorf(protocol.CodeExpectationFailed, "", "the Expect header can only be 100-continue: drop it")
	}
	return nil
}

// Write is the connection's, but for net/http's own plain-text refusals,
// which become the JSON error envelope every other refusal answers, with
// Connection: close as theirs (net/http closes the connection after them).
func (c *countedConn) Write(p []byte) (int, error) {
	e := netHTTPRefusal(p)
	if e == nil {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(refusalAnswer(e)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// refusalAnswer is the whole HTTP answer, envelope and all, to a request
// net/http refused.
func refusalAnswer(e *protocol.Error) []byte {
	body := protocol.AppendErrorEnvelope(nil, e)
	status := e.Code.HTTPStatus()
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// WriteVectors writes a frame's parts in one writev where rawsock does not
// take the connection over (outside Linux): net.Buffers finds writev only
// on the TCP connection itself, and would write this wrapper part by part.
func (c *countedConn) WriteVectors(parts [][]byte) (int, error) {
	return writeBuffers(&c.out, c.Conn, parts)
}

// writeBuffers writes parts to w through out, a connection's own
// net.Buffers (so that a write allocates nothing): writev when w is the
// TCP connection itself.
func writeBuffers(out *net.Buffers, w io.Writer, parts [][]byte) (int, error) {
	*out = parts
	n, err := out.WriteTo(w)
	*out = nil
	return int(n), err
}

// ReadFrom is the TCP connection's own (sendfile, splice): net/http
// copies a response body from a file with its connection's ReadFrom, and
// would find only a plain copy on this wrapper.
func (c *countedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite half-closes the TCP connection: net/http sends its FIN this
// way before it closes a connection whose request it did not read whole
// (a refusal over the limit, a 431), so that the client reads the answer
// and an end rather than a reset.
func (c *countedConn) CloseWrite() error {
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok {
		return fmt.Errorf("transport: half-closing a %T: %w", c.Conn, errors.ErrUnsupported)
	}
	return cw.CloseWrite()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.slot.Add(-1)
		if c.overLimit != nil && !c.overLimit.answered.Load() {
			c.overLimit.refused.Add(1)
		}
	})
	return err // net's *OpError names the connection already
}

// TCPConn lets rawsock read and write the TCP connection raw while the
// close still comes through here (rawsock.Carrier).
func (c *countedConn) TCPConn() *net.TCPConn {
	tc, _ := c.Conn.(*net.TCPConn)
	return tc
}

// connCounts is one listener's line of /metrics.
type connCounts struct {
	open, limit int64
	refused     uint64
}

// connCounts reads every listener's counts (GET /metrics).
func (s *Server) connCounts() map[string]connCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]connCounts, len(s.limits))
	for name, l := range s.limits {
		out[name] = connCounts{open: l.open.Load(), limit: l.max, refused: l.refused.Load()}
	}
	return out
}
