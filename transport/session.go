package transport

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/protocol"
)

const (
	// maxMessageBytes is the largest client message; a larger one closes
	// the socket with 1009 (PROTOCOL.md 2.4).
	maxMessageBytes = protocol.MaxMessageBytes
	// After an over-size message the reader reads and discards up to
	// drainBytes more, for at most drainTimeout, until the client's close
	// frame: closing with unread data queued makes the kernel answer with a
	// TCP reset, which can destroy the close frame before the client reads
	// it.
	drainBytes   = 4 * maxMessageBytes
	drainTimeout = 2 * time.Second
	// maxInFlight bounds the messages a client may send ahead of its
	// frames. Past it the reader stops reading, so TCP pushes back on the
	// client instead of the service buffering without limit.
	maxInFlight  = 64
	writeTimeout = 5 * time.Second
	// poolSize frame buffers and as many message buffers are kept per
	// connection. A message is processed on the reader's goroutine, which
	// also writes its frame, so one buffer of each kind circulates even
	// when a client sends maxInFlight messages ahead (BenchmarkSendAhead:
	// about 134 B/op in all, less than one message buffer); the spare
	// slots cover a Stop processed on another goroutine.
	poolSize = 8
	// maxKeptMessageBytes is the largest message buffer kept for reuse. A
	// client's message may be up to maxMessageBytes; keeping the buffer
	// it grew would pin that much per connection for its lifetime.
	maxKeptMessageBytes = 64 << 10
)

// sessionHandler upgrades connections on "/" to simulation sessions.
type sessionHandler struct {
	svc      *actors.Service
	codec    actors.Codec
	log      zerolog.Logger
	upgrader websocket.Upgrader
	conns    *connSet
}

func newSessionHandler(svc *actors.Service, codec actors.Codec, conns *connSet, log zerolog.Logger) *sessionHandler {
	return &sessionHandler{
		svc:   svc,
		codec: codec,
		log:   log,
		conns: conns,
		upgrader: websocket.Upgrader{
			ReadBufferSize: 4096,
			// A frame with a hundred arms is about 45 KiB: a buffer that
			// holds a whole frame writes it with one syscall, not three.
			WriteBufferSize: 64 << 10,
			// The BrowserGuard has already refused foreign origins before
			// this handler runs (PROTOCOL.md 3.4); gorilla's own check
			// would also refuse allowed non-loopback origins.
			CheckOrigin: func(*http.Request) bool { return true },
			// A refused handshake answers the JSON envelope, like every
			// other error of the HTTP listeners.
			Error: handshakeError,
		},
	}
}

// handshakeError answers a WebSocket upgrade that gorilla refused.
func handshakeError(w http.ResponseWriter, _ *http.Request, status int, reason error) {
	code := protocol.CodeBadHandshake
	switch status {
	case http.StatusMethodNotAllowed:
		code = protocol.CodeMethodNotAllowed
	case http.StatusForbidden:
		code = protocol.CodeForbiddenOrigin
	case http.StatusInternalServerError:
		code = protocol.CodeInternal
	}
	writeError(w, protocol.Errorf(code, "", "%v; %s", reason, code.DefaultMessage()))
}

func (h *sessionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws, err := h.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader already answered with an HTTP error
	}
	// No gorilla read limit: past it gorilla closes without reading the
	// rest of the message (see drainBytes); readInto enforces the limit.
	// Frame buffers of any size are kept: frames are the service's own,
	// sized by the number of arms, and a cap would allocate every tick
	// once a large fleet's frames passed it.
	c := &wsConn{
		ws:       ws,
		frames:   newBufPool(poolSize, 4096, 0),
		messages: newBufPool(poolSize, 1024, maxKeptMessageBytes),
		inflight: make(chan struct{}, maxInFlight),
		done:     make(chan struct{}),
		log:      h.log,
	}
	if !h.conns.add(c) {
		r := protocol.CloseShutdown
		_ = ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(r.CloseCode(), r.CloseText()), time.Now().Add(time.Second))
		_ = ws.Close()
		return
	}
	sess, err := h.svc.OpenSession(actors.SessionOptions{Remote: r.RemoteAddr, Codec: h.codec, Sink: c})
	if err != nil {
		h.log.Error().Err(err).Msg("open session")
		c.Close(protocol.CloseInternalError)
		c.sendClose()
		h.conns.remove(c)
		_ = ws.Close()
		return
	}
	c.log = h.log.With().Uint64("session_id", sess.ID).Logger()
	// The first cause recorded wins: a Close from the session, a write or
	// shutdown came before the read error it caused.
	c.Close(c.readLoop(sess))
	// Release the devices first: a force never outlives its client.
	sess.Close(c.closeReason)
	c.sendClose()
	_ = ws.Close()
	h.conns.remove(c)
}

// wsConn is one connection and the session's FrameSink. Its reader is the
// HTTP handler's goroutine (readLoop). There is no writer goroutine, unlike
// the events socket: session actors run on the synchronized dispatcher, so
// a client's message is processed on the reader's goroutine and its frame
// written there too, with a deadline. A lock-step client's frame answers
// the message just read, so a writer goroutine would only add a goroutine
// hand-off per tick (measured: p50 54 → 29-47 µs round trip between two
// processes without it). Writes are serialised by wmu (a Stop processed on
// another goroutine may write the last frames); no other lock is held
// across I/O.
type wsConn struct {
	ws       *websocket.Conn
	frames   bufPool       // frame buffers, reused once written
	messages bufPool       // message buffers, reused once processed
	inflight chan struct{} // one token per message whose frame is not written yet
	done     chan struct{} // closed by Close
	log      zerolog.Logger

	closeOnce   sync.Once
	closeReason protocol.CloseReason // written once, inside closeOnce

	wmu sync.Mutex // guards the following and every data write
	// framesWritten counts frames; the first (the inventory) answers no
	// message and so returns no token.
	framesWritten uint64
	writeFailed   bool
	closeSent     bool
}

// readLoop reads messages until the connection ends and returns why it
// ended, as the reader sees it (Close may have recorded a cause before).
func (c *wsConn) readLoop(sess *actors.Session) protocol.CloseReason {
	for {
		select {
		case c.inflight <- struct{}{}:
		case <-c.done:
			return protocol.CloseShutdown // Close recorded the real cause first
		}
		_, r, err := c.ws.NextReader()
		if err != nil {
			return readReason(err)
		}
		buf, err := readInto(c.messages.get(), r, maxMessageBytes)
		if errors.Is(err, errTooBig) {
			c.messages.put(buf)
			c.tooBig(r)
			return protocol.CloseMessageTooBig
		}
		if err != nil {
			c.messages.put(buf)
			return readReason(err)
		}
		sess.Deliver(buf)
	}
}

// readReason names why a read failed. gorilla reports a close frame as a
// CloseError and a broken connection as a net or io error; any other error
// is a frame that breaks RFC 6455 (gorilla has sent close 1002).
func readReason(err error) protocol.CloseReason {
	var ce *websocket.CloseError
	var ne net.Error
	switch {
	case errors.As(err, &ce) && ce.Code == websocket.CloseAbnormalClosure:
		return protocol.CloseReadError // gorilla's name for EOF without a close frame
	case errors.As(err, &ce):
		return protocol.CloseClientClosed
	case errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		return protocol.CloseReadError
	default:
		return protocol.CloseProtocolViolation
	}
}

// tooBig ends a connection whose message r is over the limit: close 1009
// at once, then read and discard (bounded in bytes and time) the rest of
// the message and what follows, until the client's close frame, so that
// the connection ends with FIN rather than a reset.
func (c *wsConn) tooBig(r io.Reader) {
	c.Close(protocol.CloseMessageTooBig)
	c.sendClose()
	c.log.Info().Msg("message over 1 MiB; closed with 1009")
	_ = c.ws.SetReadDeadline(time.Now().Add(drainTimeout))
	left := int64(drainBytes)
	n, err := io.CopyN(io.Discard, r, left)
	left -= n
	for err == nil || err == io.EOF {
		if left <= 0 {
			return
		}
		if _, r, err = c.ws.NextReader(); err != nil {
			return // the client's close frame, or the deadline
		}
		n, err = io.CopyN(io.Discard, r, left)
		left -= n
	}
}

// sendClose writes the close frame of the reason Close recorded, once the
// session cannot write any more frames. Only the first call writes.
func (c *wsConn) sendClose() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.writeFailed = true // no frame after the close frame
	if c.closeSent {
		return
	}
	c.closeSent = true
	r := c.closeReason
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(r.CloseCode(), r.CloseText()), time.Now().Add(time.Second))
}

// Buffer implements actors.FrameSink.
func (c *wsConn) Buffer() []byte { return c.frames.get() }

// Recycle implements actors.FrameSink: the session is done with a message.
func (c *wsConn) Recycle(inbound []byte) { c.messages.put(inbound) }

// bufPool is a bounded free list of byte buffers.
type bufPool struct {
	free    chan []byte
	newCap  int // capacity of a buffer made when the list is empty
	keepCap int // put drops a buffer that grew past this; 0 keeps any
}

func newBufPool(n, newCap, keepCap int) bufPool {
	return bufPool{free: make(chan []byte, n), newCap: newCap, keepCap: keepCap}
}

// get returns an empty buffer, reused if one is free.
func (p bufPool) get() []byte {
	select {
	case b := <-p.free:
		return b
	default:
		return make([]byte, 0, p.newCap)
	}
}

// put keeps b for reuse unless the list is full or b is over keepCap.
func (p bufPool) put(b []byte) {
	if p.keepCap > 0 && cap(b) > p.keepCap {
		return
	}
	select {
	case p.free <- b[:0]:
	default:
	}
}

// errTooBig is readInto's answer to a message over its limit.
var errTooBig = errors.New("transport: message over the limit")

// readInto appends all of r to buf, growing it as needed, and fails with
// errTooBig once it holds more than limit bytes (what it read of r so far
// is in buf; the rest is not read).
func readInto(buf []byte, r io.Reader, limit int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), limit+1)])
		buf = buf[:len(buf)+n]
		if len(buf) > limit {
			return buf, errTooBig
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// Send implements actors.FrameSink: it writes the frame now, with a
// deadline, and returns the message's in-flight token. A client that does
// not read for writeTimeout is closed.
func (c *wsConn) Send(buf []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writeFailed {
		return
	}
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeTimeout))
	err := c.ws.WriteMessage(websocket.TextMessage, buf)
	c.framesWritten++
	if c.framesWritten > 1 {
		select {
		case <-c.inflight:
		default:
		}
	}
	c.frames.put(buf)
	if err != nil {
		c.writeFailed = true
		c.log.Info().Err(err).Msg("write failed; closing the session")
		c.Close(protocol.CloseWriteTimeout)
		_ = c.ws.Close() // unblocks the reader
	}
}

// Close implements actors.FrameSink: it records the reason (the first call
// wins) and wakes the reader, which sends the close frame once the session
// has ended.
func (c *wsConn) Close(reason protocol.CloseReason) {
	c.closeOnce.Do(func() {
		c.closeReason = reason
		close(c.done)
		_ = c.ws.SetReadDeadline(time.Now())
	})
}

// connSet tracks live WebSocket connections so shutdown can close them
// with a close frame (http.Server.Shutdown ignores hijacked connections).
type connSet struct {
	mu     sync.Mutex
	closed bool
	conns  map[*wsConn]struct{}
}

func newConnSet() *connSet { return &connSet{conns: make(map[*wsConn]struct{})} }

func (s *connSet) add(c *wsConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *connSet) remove(c *wsConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// closeAll sends every connection a close frame and refuses new ones.
func (s *connSet) closeAll(reason protocol.CloseReason) {
	s.mu.Lock()
	s.closed = true
	list := make([]*wsConn, 0, len(s.conns))
	for c := range s.conns {
		list = append(list, c)
	}
	s.mu.Unlock()
	for _, c := range list {
		c.Close(reason) // wakes the reader, which sends the close frame
	}
}
