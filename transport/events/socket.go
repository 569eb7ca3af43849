package events

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/transport/handshake"
	"github.com/hapticd/hapticd/transport/wsclose"
)

// Defaults of SocketOptions.
const (
	DefaultWriteTimeout = 10 * time.Second
	DefaultPingInterval = 30 * time.Second
	// DefaultInputReportsPerSecond bounds the invalid-io-channel events one
	// connection can cause, so a client spraying input cannot flood the
	// ring and push out what other clients came for.
	DefaultInputReportsPerSecond = 10
	// maxInputBytes is the largest message a client may send on the
	// read-only socket before it is closed with 1009 (message too big).
	maxInputBytes = 64 << 10
	// closeGrace is how long a closing writer waits for the client's
	// close frame before it drops the connection.
	closeGrace = time.Second
)

// SocketOptions tune the events socket. Zero values take the defaults.
type SocketOptions struct {
	// WriteTimeout bounds each frame write; a client that misses it is
	// closed as too slow.
	WriteTimeout time.Duration
	// PingInterval is how often the server pings; a client that answers
	// no ping (and sends nothing) for two intervals is closed.
	PingInterval time.Duration
	// InputReportsPerSecond bounds invalid-io-channel events per
	// connection; further input in that second is dropped silently.
	InputReportsPerSecond int
}

// Server serves the events WebSocket and closes its connections on
// shutdown. It is an http.Handler for "/" of the events port.
type Server struct {
	act      *activity.Activity
	log      zerolog.Logger
	opts     SocketOptions
	upgrader websocket.Upgrader
	// wg tracks every connection's goroutines (handler and reader).
	wg sync.WaitGroup

	// mu guards the following.
	mu      sync.Mutex
	closing bool
	// closingBy is when the last writes are due once closing (Shut).
	closingBy time.Time
	conns     map[*socketConn]struct{}
	// closed counts the connections that ended, by the reason their log
	// line names (GET /metrics).
	closed map[protocol.CloseReason]uint64
}

// ClosedByReason returns how many connections ended for each reason, as
// their log lines name it (protocol.CloseReason).
func (s *Server) ClosedByReason() map[protocol.CloseReason]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.closed)
}

// NewServer returns the events socket with default options.
func NewServer(a *activity.Activity, log zerolog.Logger) *Server {
	return NewServerWithOptions(a, log, SocketOptions{})
}

// NewServerWithOptions returns the events socket with o.
func NewServerWithOptions(a *activity.Activity, log zerolog.Logger, o SocketOptions) *Server {
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.PingInterval <= 0 {
		o.PingInterval = DefaultPingInterval
	}
	if o.InputReportsPerSecond <= 0 {
		o.InputReportsPerSecond = DefaultInputReportsPerSecond
	}
	return &Server{
		act:  a,
		log:  log,
		opts: o,
		upgrader: websocket.Upgrader{
			ReadBufferSize:  1024,
			WriteBufferSize: 4096,
			// The browser-safety guard (docs/operations.md, Browser safety) wraps this
			// handler and has already refused foreign origins before
			// the upgrade gets here; checking again would only disagree
			// with --allow-origin.
			CheckOrigin: func(*http.Request) bool { return true },
			// A refused handshake answers the JSON envelope, as the
			// other ports do, not gorilla's plain-text Bad Request.
			Error: handshakeError,
		},
		conns:  make(map[*socketConn]struct{}),
		closed: make(map[protocol.CloseReason]uint64),
	}
}

// ServeHTTP upgrades a request on "/" to the events socket. ?since=SEQ
// replays what the ring holds after SEQ, then goes live; without it the
// socket is live only.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		writeError(w, protocol.CodeUnknownRoute,
			fmt.Sprintf("events: no route %s on the events port; the events WebSocket is on /", r.URL.Path))
		return
	}
	if r.Method != http.MethodGet {
		// The method first, as on the session ports (docs/protocol.md,
		// Closes): a POST with a bad since= answered 400 invalid_value.
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, protocol.CodeMethodNotAllowed, "events: "+handshake.NotGET(r))
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		// bad_handshake, as the session ports answer a request that is no
		// upgrade (docs/protocol.md: each of the three ports).
		writeError(w, protocol.CodeBadHandshake,
			"events: "+handshake.Problem(r)+"; this port serves the events WebSocket: connect with a WebSocket client (or use GET /events on the HTTP port)")
		return
	}
	since, replay, perr := parseSince(r)
	if perr != "" {
		writeError(w, protocol.CodeInvalidValue, perr)
		return
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		writeError(w, protocol.CodeUnavailable, "events: hapticd is shutting down; reconnect after it restarts")
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	// Subscribe before the upgrade: every event from here on reaches this
	// client, and a stopped actor is a clean 503 rather than a dead socket.
	sub, err := s.act.Subscribe(since, replay)
	if err != nil {
		writeError(w, protocol.CodeUnavailable, fmt.Sprintf("events: %v", err))
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		// The upgrader has answered the client already.
		sub.Close()
		return
	}
	c := &socketConn{
		srv:        s,
		ws:         ws,
		sub:        sub,
		remote:     r.RemoteAddr,
		stop:       make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	s.mu.Lock()
	if s.closing {
		// Close ran during the upgrade and did not see this connection:
		// stop it here, and let writeLoop send what is already queued
		// before the close frame, as for every other connection.
		c.goAwayBy(s.closingBy)
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()

	go c.readLoop()
	c.writeLoop()

	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Close refuses new connections, sends every open socket a close frame
// (1001, going away) after the events already queued for it, and waits for
// every connection goroutine. A client that does not take what is queued
// for it within WriteTimeout of the Close (it stopped reading, or reads
// slowly) is dropped then, even in the middle of a write, and one that does
// not answer the close frame a second later, so Close returns within about
// WriteTimeout plus a second. Close is idempotent.
func (s *Server) Close() {
	s.Shut(time.Time{})
	s.wg.Wait()
}

// Shut is Close without the wait, with every socket's last writes due by
// by (WriteTimeout from now when by is zero or later than that): a
// service stopping within a budget passes what is left of it. A later Shut
// may bring the deadline closer, never push it back. Wait waits.
func (s *Server) Shut(by time.Time) {
	if limit := time.Now().Add(s.opts.WriteTimeout); by.IsZero() || by.After(limit) {
		by = limit
	}
	s.mu.Lock()
	if !s.closing || by.Before(s.closingBy) {
		s.closingBy = by
	}
	s.closing = true
	by = s.closingBy
	conns := make([]*socketConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.goAwayBy(by)
	}
}

// ShutFor is Shut with the last writes due early enough that the sockets'
// close handshakes (a close frame, then up to closeGrace for the client's
// answer) end before ctx's deadline; Shut(time.Time{}) without one.
func (s *Server) ShutFor(ctx context.Context) {
	by, ok := ctx.Deadline()
	if !ok {
		s.Shut(time.Time{})
		return
	}
	by = by.Add(-2 * closeGrace)
	if now := time.Now(); by.Before(now) {
		by = now
	}
	s.Shut(by)
}

// Wait waits for every connection goroutine Shut (or Close) ended, or for
// ctx.
func (s *Server) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("transport/events: sockets did not close: %w", ctx.Err())
	}
}

// socketConn is one events client: a reader goroutine and a writer (the
// handler's goroutine).
type socketConn struct {
	srv    *Server
	ws     *websocket.Conn
	sub    *activity.Subscription
	remote string

	stop     chan struct{} // closed by Server.Close and Shut
	stopOnce sync.Once
	// stopBy is when the socket's last writes are due once it is going
	// away (Unix nanoseconds; 0 until Shut): set before stop is closed,
	// lowered by a later Shut.
	stopBy atomic.Int64
	// backstop cuts the connection's writes at stopBy (goAwayBy).
	backstopMu   sync.Mutex
	backstop     *time.Timer
	backstopDone bool          // the connection ended: no new timer
	readerDone   chan struct{} // closed when the reader returns
	// readReason is why the reader returned; written before readerDone
	// is closed and read only after.
	readReason protocol.CloseReason
	// lastDeadline, once set (the socket is going away), bounds every
	// write left, so a client that reads slowly cannot stretch the final
	// flush frame by frame. Only the writer touches it.
	lastDeadline time.Time
}

// The events socket ends for the reasons a session does (protocol's
// CloseReason): the log line names one of the same values.

// writeLoop sends each event as one text frame, pings, and closes the
// socket. It owns every data write; only close and pong frames are written
// elsewhere (gorilla allows those concurrently).
func (c *socketConn) writeLoop() {
	reason := protocol.CloseShutdown
	defer func() {
		if p := recover(); p != nil {
			c.srv.log.Error().Interface("panic", p).Str("remote", c.remote).Msg("events socket writer panicked; connection closed")
		}
		c.sub.Close()
		_ = c.ws.Close()
		c.stopBackstop()
		<-c.readerDone
		c.srv.mu.Lock()
		c.srv.closed[reason]++
		c.srv.mu.Unlock()
		level := zerolog.DebugLevel
		if reason == protocol.CloseWriteTimeout || reason == protocol.CloseMessageTooBig {
			// The client misbehaved: worth an operator's eye.
			level = zerolog.WarnLevel
		}
		c.srv.log.WithLevel(level).Str("remote", c.remote).Str("reason", string(reason)).
			Uint64("dropped", c.sub.Dropped()).Msg("events client closed")
	}()
	buf := make([]byte, 0, 1024)
	ping := time.NewTicker(c.srv.opts.PingInterval)
	defer ping.Stop()
	for {
		if r, ok := c.flush(&buf); !ok {
			reason = r
			return
		}
		select {
		case <-c.sub.Ready():
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, c.writeDeadline()); err != nil {
				reason = protocol.CloseWriteTimeout
				return
			}
		case <-c.readerDone:
			reason = c.readReason
			return
		case <-c.stop:
			reason = c.goAway(&buf, protocol.CloseShutdown, "hapticd is shutting down")
			return
		case <-c.sub.Done():
			reason = c.goAway(&buf, protocol.CloseShutdown, "the activity channel stopped (hapticd is shutting down)")
			return
		}
	}
}

// goAway ends the socket for a server-side reason: queued events first,
// then the close frame (1001 with text), so a shutdown loses nothing
// already published. It returns why the connection ended: reason, or the
// write failure that cut the flush short.
func (c *socketConn) goAway(buf *[]byte, reason protocol.CloseReason, text string) protocol.CloseReason {
	if r, ok := c.flush(buf); !ok {
		return r
	}
	c.closeWith(websocket.CloseGoingAway, text)
	c.awaitReader(closeGrace)
	return reason
}

// flush writes every event queued now.
func (c *socketConn) flush(buf *[]byte) (protocol.CloseReason, bool) {
	for {
		e, ok := c.sub.TryNext()
		if !ok {
			return "", true
		}
		*buf = event.AppendJSON((*buf)[:0], &e)
		if err := c.ws.SetWriteDeadline(c.writeDeadline()); err != nil {
			return protocol.CloseWriteTimeout, false
		}
		if err := c.ws.WriteMessage(websocket.TextMessage, *buf); err != nil {
			if errors.Is(err, websocket.ErrCloseSent) {
				// The reader sent a close frame (answering the
				// client's, or 1009 while it reads away a message too
				// big): its reason is the connection's, and its
				// drain must finish before the socket is closed.
				if c.awaitReader(2 * closeGrace) {
					return c.readReason, false
				}
			}
			if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
				// The connection is likely wedged; try to say why,
				// briefly, and drop it either way.
				if !c.goingAway() {
					c.closeWith(websocket.ClosePolicyViolation, "write deadline missed: read events faster")
				} else {
					c.closeWith(websocket.CloseGoingAway, "hapticd is shutting down; the events still queued for this client were not sent in time")
				}
			}
			return protocol.CloseWriteTimeout, false
		}
	}
}

// writeDeadline is the deadline of the next frame: WriteTimeout from now,
// until the socket is going away. From then on one deadline bounds
// everything still queued: the one Shut gave (which keeps Close's promise),
// or, when the activity actor stopped, WriteTimeout after the first write
// that saw it.
func (c *socketConn) writeDeadline() time.Time {
	select {
	case <-c.stop:
		// stopBy was set before stop was closed, and only comes closer;
		// the activity actor's stop may have set an earlier one.
		by := time.Unix(0, c.stopBy.Load())
		if !c.lastDeadline.IsZero() && c.lastDeadline.Before(by) {
			return c.lastDeadline
		}
		return by
	default:
	}
	if !c.lastDeadline.IsZero() {
		return c.lastDeadline
	}
	d := time.Now().Add(c.srv.opts.WriteTimeout)
	select {
	case <-c.sub.Done():
		c.lastDeadline = d
	default:
	}
	return d
}

// goAwayBy tells the writer the socket is going away, its last writes due
// by by (or by an earlier deadline a Shut already gave). At that deadline
// the connection's write deadline is set in the past: a write blocked under
// a later one (its frame's, set by gorilla after the Shut, or from before
// it) ends then too.
func (c *socketConn) goAwayBy(by time.Time) {
	lowered := false
	for {
		old := c.stopBy.Load()
		if old != 0 && old <= by.UnixNano() {
			break
		}
		if c.stopBy.CompareAndSwap(old, by.UnixNano()) {
			lowered = true
			break
		}
	}
	c.stopOnce.Do(func() { close(c.stop) })
	if !lowered {
		return
	}
	c.backstopMu.Lock()
	defer c.backstopMu.Unlock()
	if c.backstopDone {
		return
	}
	cut := func() { _ = c.ws.NetConn().SetWriteDeadline(time.Unix(0, 1)) }
	if c.backstop == nil {
		c.backstop = time.AfterFunc(time.Until(by), cut)
	} else {
		c.backstop.Reset(time.Until(by))
	}
}

// stopBackstop stops goAwayBy's timer once the connection has ended.
func (c *socketConn) stopBackstop() {
	c.backstopMu.Lock()
	defer c.backstopMu.Unlock()
	c.backstopDone = true
	if c.backstop != nil {
		c.backstop.Stop()
	}
}

// goingAway says whether the socket is closing for a server-side reason
// (Shut, or the activity actor stopped).
func (c *socketConn) goingAway() bool {
	select {
	case <-c.stop:
		return true
	default:
		return !c.lastDeadline.IsZero()
	}
}

// closeWith sends a close frame; errors mean the peer is gone already.
func (c *socketConn) closeWith(code int, text string) {
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(closeGrace))
}

// awaitReader waits up to wait for the reader to return (the client's
// answer to a close frame) and reports whether it did.
func (c *socketConn) awaitReader(wait time.Duration) bool {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.readerDone:
		return true
	case <-t.C:
		return false
	}
}

// readLoop reads and drops everything the client sends, reporting it as
// invalid-io-channel events (first 256 bytes, rate-limited), and answers
// control frames. It returns when the client closes or the socket is
// closed.
func (c *socketConn) readLoop() {
	defer c.srv.wg.Done()
	defer close(c.readerDone)
	defer func() {
		if p := recover(); p != nil {
			c.srv.log.Error().Interface("panic", p).Str("remote", c.remote).Msg("events socket reader panicked; connection closed")
		}
	}()
	pongWait := 2 * c.srv.opts.PingInterval
	c.ws.SetReadLimit(maxInputBytes)
	_ = c.ws.SetReadDeadline(time.Now().Add(pongWait))
	c.ws.SetPongHandler(func(string) error {
		return c.ws.SetReadDeadline(time.Now().Add(pongWait))
	})
	var kept [event.MaxReceivedBytes]byte
	// A client that keeps writing is reported at most
	// InputReportsPerSecond times a second, not once per message.
	reports := rate.NewLimiter(rate.Limit(c.srv.opts.InputReportsPerSecond), c.srv.opts.InputReportsPerSecond)
	for {
		_, rd, err := c.ws.NextReader()
		if err != nil {
			c.readReason = wsclose.ReadReason(err)
			if errors.Is(err, websocket.ErrReadLimit) {
				// One frame over the limit: gorilla refuses it by its
				// header, before reading any of it.
				c.tooBig()
			}
			return
		}
		n, err := io.ReadFull(rd, kept[:])
		if err == nil {
			_, err = io.Copy(io.Discard, rd)
		} else if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = nil
		}
		if err != nil {
			// Over the read limit (gorilla has sent 1009) or the
			// connection broke mid-message.
			c.readReason = wsclose.ReadReason(err)
			if errors.Is(err, websocket.ErrReadLimit) {
				c.tooBig()
			}
			return
		}
		_ = c.ws.SetReadDeadline(time.Now().Add(pongWait))
		if reports.Allow() {
			c.srv.act.Publish(event.InvalidIOChannel(kept[:n]))
		}
	}
}

// tooBig ends a connection whose client sent a message over the limit:
// the close 1009 (gorilla sends it for a length up to 2^63 but not for one
// it cannot hold, which a client is told the same), then drain. A second
// close frame is refused by gorilla (ErrCloseSent) and sends nothing.
func (c *socketConn) tooBig() {
	c.closeWith(websocket.CloseMessageTooBig, "")
	c.drain()
}

// drain discards what the client is still sending, for up to closeGrace,
// after gorilla sent it a 1009 close: closing a socket with unread input
// resets the connection, and the reset would destroy the close frame before
// the client reads it.
func (c *socketConn) drain() {
	nc := c.ws.NetConn()
	_ = nc.SetReadDeadline(time.Now().Add(closeGrace))
	_, _ = io.Copy(io.Discard, nc)
}

// parseSince reads ?since=SEQ; replay is true when it is present.
func parseSince(r *http.Request) (since uint64, replay bool, problem string) {
	text, given, perr := protocol.QueryValue(r.URL.RawQuery, "since")
	switch {
	case perr != nil:
		return 0, false, "events: " + perr.Message
	case !given:
		return 0, false, ""
	}
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return 0, false, fmt.Sprintf("events: since %q is not a sequence number; give a non-negative integer (the seq of the last event you saw, or 0 for everything the ring holds)", text)
	}
	return v, true, ""
}

var _ http.Handler = (*Server)(nil)

// handshakeError answers an events upgrade that gorilla refused (a missing
// key, an unsupported version) with the JSON error envelope, in the
// service's words (handshake.Refusal), not the library's reason.
func handshakeError(w http.ResponseWriter, r *http.Request, status int, _ error) {
	if status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodGet)
	}
	e := handshake.Refusal(r, status)
	writeError(w, e.Code, "events: "+e.Message)
}
