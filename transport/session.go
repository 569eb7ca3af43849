package transport

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/awake"
	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/transport/handshake"
	"github.com/hapticd/hapticd/transport/rawsock"
	"github.com/hapticd/hapticd/transport/wsclose"
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
	maxInFlight = 64
	// defaultWriteTimeout is how long a frame write may take before the
	// client is closed with write_timeout (Config.WriteTimeout).
	defaultWriteTimeout = 5 * time.Second
	// poolSize message buffers are kept per connection. A message is
	// processed on the reader's goroutine, which also writes its frame, so
	// one buffer circulates even when a client sends maxInFlight messages
	// ahead.
	poolSize = 8
	// maxKeptMessageBytes is the largest message buffer kept for reuse. A
	// client's message may be up to maxMessageBytes; keeping the buffer
	// it grew would pin that much per connection for its lifetime.
	maxKeptMessageBytes = 64 << 10
	// maxKeptFrameBytes is the largest frame buffer put back in the
	// listener's pool: a frame of 1,000 arms (660 KB with the 3.5 state
	// fields, in a buffer that grew to about 800 KB). Warnings are capped
	// (protocol.MaxWarnings), so only a larger fleet passes it. At 512 KB
	// a session framing 1,000 arms grew a new buffer for every frame: 2 MB
	// of garbage a message, 40 MB/s at 20 Hz, whose collections held its
	// messages past their lease on a loaded machine.
	maxKeptFrameBytes = 1 << 20
	// bigMessageSlots bounds how many messages over maxKeptMessageBytes a
	// listener reads at once. The rest wait (TCP pushes back on their
	// clients), so 40 clients sending 1 MiB at once cost 4 MiB of buffers,
	// not 40, and the heap the GC sizes itself by stays small.
	bigMessageSlots = 4
	// readBufferBytes is gorilla's read buffer per connection, held for
	// the connection's lifetime: a lock-step message fits, a larger one is
	// read straight into the message buffer.
	readBufferBytes = 512
	// writeBufferBytes is the size of gorilla's write buffer, taken from
	// its pool only for a message written through gorilla. None is:
	// gorilla writes only close frames, from buffers of their own, and
	// wsConn.writeData writes the rest.
	writeBufferBytes = 2 << 10
	// frameHeadroom is the room a frame buffer keeps before the frame for
	// its WebSocket header (2 to 10 bytes for a server's unmasked frame),
	// so that a frame goes out in one write with no copy.
	frameHeadroom = 10
)

// sessionHandler upgrades connections on "/" to simulation sessions.
type sessionHandler struct {
	svc      *actors.Service
	codec    actors.Codec
	log      zerolog.Logger
	upgrader websocket.Upgrader
	conns    *connSet
	// frames are shared by the listener's connections: an idle connection
	// holds no frame buffer, and the GC may empty the pool.
	frames framePool
	// big holds a token per message being read past maxKeptMessageBytes,
	// and bigBuffers the buffers such messages were read into (*[]byte),
	// for the next one: at most bigMessageSlots are in use at once, and the
	// GC may empty the pool. Dropped, each message of a client commanding
	// 1,000 arms (about 100 KB) grew a buffer of its own, 128 KB of garbage
	// a message.
	big        chan struct{}
	bigBuffers sync.Pool
	// rec taps messages and frames for recordings (nil: none).
	rec *recording.Recorder
}

func newSessionHandler(svc *actors.Service, codec actors.Codec, conns *connSet, log zerolog.Logger) *sessionHandler {
	return &sessionHandler{
		svc:    svc,
		codec:  codec,
		log:    log,
		conns:  conns,
		frames: framePool{newCap: 4096, keepCap: maxKeptFrameBytes},
		big:    make(chan struct{}, bigMessageSlots),
		upgrader: websocket.Upgrader{
			ReadBufferSize: readBufferBytes,
			// With a pool, gorilla holds no write buffer per connection
			// (2 KiB of each idle session's 13.8 KB, and 4 MB of RSS
			// at 2,000). It would allocate a 24-byte entry per message
			// written through the pool, but frames and pongs do not go
			// through gorilla (writeData).
			WriteBufferSize: writeBufferBytes,
			WriteBufferPool: &sync.Pool{},
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

// handshakeError answers a WebSocket upgrade that gorilla refused, in the
// service's words (handshake.Refusal), not the library's reason.
func handshakeError(w http.ResponseWriter, r *http.Request, status int, _ error) {
	if status == http.StatusMethodNotAllowed {
		w.Header().Set("Allow", http.MethodGet)
	}
	writeError(w, handshake.Refusal(r, status))
}

func (h *sessionHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		// The method first (docs/protocol.md, Closes): gorilla checks the
		// Connection and Upgrade headers before it, and answered a POST
		// without them 400.
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, protocol.Errorf(protocol.CodeMethodNotAllowed, "", "%s", handshake.NotGET(r)))
		return
	}
	// Gorilla gets the hijacked connection with raw reads and writes.
	ws, err := h.upgrader.Upgrade(boundingArrivals(rawsock.Hijacking(w), h.conns.awake), r, nil)
	if err != nil {
		return // the upgrader already answered with an HTTP error
	}
	// No gorilla read limit: past it gorilla closes without reading the
	// rest of the message (see drainBytes); readInto enforces the limit.
	c := &wsConn{
		ws:       ws,
		raw:      ws.UnderlyingConn(),
		h:        h,
		messages: newBufPool(poolSize, 1024, maxKeptMessageBytes),
		inflight: newInflightGate(maxInFlight),
		done:     make(chan struct{}),
	}
	if rc, ok := c.raw.(receiveClock); ok && rc.RecordReceiveTimes() == nil {
		c.received = rc
	}
	c.takeControlWrites()
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
	c.sessionID = sess.ID
	// The reader runs on its own goroutine (tracked by conns) and this
	// handler returns: the HTTP server's per-request state (its buffers,
	// the request, this goroutine's grown stack) is not kept for the
	// lifetime of every idle session.
	go c.serve(sess)
}

// serve reads the connection until it ends, then ends the session.
func (c *wsConn) serve(sess *actors.Session) {
	defer c.h.conns.remove(c)
	// The first cause recorded wins: a Close from the session, a write or
	// shutdown came before the read error it caused.
	c.Close(c.readLoop(sess))
	// Release the devices first: a force never outlives its client.
	sess.Close(c.closeReason)
	c.sendClose()
	_ = c.ws.Close()
	// A stopped session drops the messages still in its mailbox without
	// recycling them: give back the big-message tokens they hold, or a few
	// such ends would stop the listener reading big messages at all.
	c.releaseBig()
}

// wsConn is one connection and the session's FrameSink (a SplicingSink).
// Its reader is its own goroutine (serve, started by the HTTP handler,
// which returns). There
// is no writer goroutine, unlike the events socket: a client's message is
// processed on the reader's goroutine (actors.Session.Deliver) and its frame
// written there too (the listeners' watchdog bounds the write); only the
// inventory is written before, by the HTTP handler, before the reader
// starts. A lock-step client's frame answers the message just read, so a
// writer goroutine would only add a goroutine hand-off per tick (measured:
// p50 54 → 29-47 µs round trip between two processes without it). So
// frames and the close frame are written by one goroutine at a time (the
// handler, then the reader); wmu, uncontended, keeps the write state
// consistent should that change. No other lock is held across I/O.
//
// Frames and pongs are written on raw, the connection under gorilla, as
// whole WebSocket frames (writeData): gorilla writes a message from one
// buffer, so a frame of every arm would be copied whole to sit after its
// session's own bytes, where one writev sends the parts where they lie.
// gorilla itself writes only close frames, after which no frame is
// written, and every write is on the one goroutine, so no frame of ours
// and of gorilla's interleave.
type wsConn struct {
	ws  *websocket.Conn
	raw net.Conn // ws's connection, for writeData
	// received, if set, is raw recording receive times (waited).
	received  receiveClock
	h         *sessionHandler
	messages  bufPool       // message buffers, reused once processed
	inflight  *inflightGate // messages whose frame is not written yet
	done      chan struct{} // closed by Close
	sessionID uint64        // set before the reader starts
	// frame is the buffer Buffer handed out, until Send puts it back; the
	// session actor calls them in pairs, one message at a time.
	frame *frameBuf

	bigMu sync.Mutex // guards the following
	// bigHeld counts the big-message tokens this connection's buffers hold.
	bigHeld int
	// bigReleased is set once the connection ended and gave them back.
	bigReleased bool

	closeOnce   sync.Once
	closeReason protocol.CloseReason // written once, inside closeOnce

	// writeStarted is when the frame write in progress started (the
	// connSet's writeClock), 0 between writes; writeExpired is set by the
	// connSet's watchdog once a write took longer than the write timeout.
	writeStarted atomic.Int64
	writeExpired atomic.Bool

	wmu sync.Mutex // guards the following and every data write
	// framesWritten counts frames; the first (the inventory) answers no
	// message and so returns no token.
	framesWritten uint64
	writeFailed   bool
	closeSent     bool
	// head holds a frame's WebSocket header when its buffer has no room
	// for it; parts and out are the iovecs of one write, kept here so that
	// a write allocates nothing.
	head  [frameHeadroom]byte
	parts [4][]byte
	out   net.Buffers
	// joined is a spliced frame joined whole for a recording, or a small
	// frame's parts joined for one write (writeData).
	joined []byte
}

// readLoop reads messages until the connection ends and returns why it
// ended, as the reader sees it (Close may have recorded a cause before).
func (c *wsConn) readLoop(sess *actors.Session) protocol.CloseReason {
	for {
		if !c.inflight.enter(c.done) {
			return protocol.CloseShutdown // Close recorded the real cause first
		}
		_, r, err := c.ws.NextReader()
		if err != nil {
			return wsclose.ReadReason(err)
		}
		buf, err := c.read(r)
		if errors.Is(err, errTooBig) {
			c.Recycle(buf)
			c.tooBig(r)
			return protocol.CloseMessageTooBig
		}
		if err != nil {
			c.Recycle(buf)
			return wsclose.ReadReason(err)
		}
		c.h.rec.Session(recording.KindClient, c.sessionID, buf)
		sess.Deliver(buf, c.waited())
	}
}

// receiveClock is a connection that tells when the data its last read
// returned arrived on this host (rawsock.Conn, Linux; stallBoundConn,
// elsewhere, after a stall).
type receiveClock interface {
	RecordReceiveTimes() error
	LastReceived() (unixNs int64, ok bool)
}

// waited is how long the message just read waited on this host before it
// was read, from rawsock's LastReceived: the kernel's receive time of the
// newest data the last read returned (this message's arrival or later), or,
// for a read within 1 ms of the socket seen empty, that instant (earlier,
// by that much plus any time the reader lost between its clock reading and
// the read: it errs towards refusing). Elsewhere (Windows, macOS) the
// connection is a stallBoundConn, which tells only after a stall. 0 where
// the connection does not tell: those systems outside a stall, a test's
// pipe.
func (c *wsConn) waited() int64 {
	if c.received == nil {
		return 0
	}
	at, ok := c.received.LastReceived()
	if !ok {
		return 0
	}
	return max(time.Now().UnixNano()-at, 0)
}

// read reads one message: into a buffer of at most maxKeptMessageBytes
// freely, into a larger one only with one of the listener's big-message
// tokens. So a buffer holds a token exactly when its capacity is over
// maxKeptMessageBytes, and Recycle returns it.
func (c *wsConn) read(r io.Reader) ([]byte, error) {
	buf, err := readInto(c.messages.get(), r, maxKeptMessageBytes)
	if !errors.Is(err, errFull) {
		return buf, err
	}
	select {
	case c.h.big <- struct{}{}:
	case <-c.done:
		return buf[:0], net.ErrClosed // shutting down: the cause is recorded
	}
	c.bigMu.Lock()
	c.bigHeld++
	c.bigMu.Unlock()
	if kept, ok := c.h.bigBuffers.Get().(*[]byte); ok && cap(*kept) > len(buf) {
		// The rest goes into a buffer an earlier big message left, and the
		// full one back to the connection's list, as the first stage of
		// the next.
		next := append((*kept)[:0], buf...)
		c.messages.put(buf)
		buf = next
	}
	buf, err = readInto(buf, r, maxMessageBytes+1)
	if errors.Is(err, errFull) {
		err = errTooBig
	}
	return buf, err
}

// tooBig ends a connection whose message r is over the limit: close 1009
// at once, then read and discard (bounded in bytes and time) the rest of
// the message and what follows, until the client's close frame, so that
// the connection ends with FIN rather than a reset.
func (c *wsConn) tooBig(r io.Reader) {
	c.Close(protocol.CloseMessageTooBig)
	c.sendClose()
	c.h.log.Info().Uint64("session_id", c.sessionID).Msg("message over 1 MiB; closed with 1009")
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

// Buffer implements actors.FrameSink: an empty buffer with room for the
// WebSocket header before it (frameHeadroom).
func (c *wsConn) Buffer() []byte {
	c.frame = c.h.frames.get()
	return c.frame.b[frameHeadroom:frameHeadroom]
}

// Recycle implements actors.FrameSink: the session is done with a message.
// A buffer grown past maxKeptMessageBytes held a big-message token.
func (c *wsConn) Recycle(inbound []byte) {
	if cap(inbound) > maxKeptMessageBytes {
		c.bigMu.Lock()
		if !c.bigReleased && c.bigHeld > 0 {
			c.bigHeld--
			<-c.h.big
		}
		c.bigMu.Unlock()
		// Not kept by the connection (see maxKeptMessageBytes): by the
		// listener, for its next big message.
		kept := inbound[:0]
		c.h.bigBuffers.Put(&kept)
		return
	}
	c.messages.put(inbound)
}

// releaseBig gives back every big-message token the connection holds; a
// Recycle afterwards gives back none.
func (c *wsConn) releaseBig() {
	c.bigMu.Lock()
	defer c.bigMu.Unlock()
	c.bigReleased = true
	for ; c.bigHeld > 0; c.bigHeld-- {
		<-c.h.big
	}
}

// inflightGate bounds the messages read whose frame is not written yet.
// It is a counter, not a channel of tokens: a lock-step client keeps one
// message in flight, and two channel operations per message were 1.6 % of
// the service's CPU at 100 clients at 1 kHz. Only the reader that finds
// the bound reached waits, on room.
type inflightGate struct {
	pending atomic.Int32
	limit   int32
	// room gets one signal for each time the reader passed the limit: at
	// most one is outstanding, since the reader then waits for it.
	room chan struct{}
}

func newInflightGate(limit int) *inflightGate {
	return &inflightGate{limit: int32(limit), room: make(chan struct{}, 1)}
}

// enter counts a message about to be read; past the limit it waits for a
// leave. It returns false when done closes first.
func (g *inflightGate) enter(done <-chan struct{}) bool {
	if g.pending.Add(1) <= g.limit {
		return true
	}
	select {
	case <-g.room:
		return true
	case <-done:
		return false
	}
}

// leave counts a message answered, and lets a waiting reader on. A frame
// that answers no message (the last frames of a Stop) finds nothing to
// count and changes nothing.
func (g *inflightGate) leave() {
	for {
		n := g.pending.Load()
		if n <= 0 {
			return
		}
		if g.pending.CompareAndSwap(n, n-1) {
			if n > g.limit {
				select {
				case g.room <- struct{}{}:
				default:
				}
			}
			return
		}
	}
}

// frameBuf carries a frame buffer through the pool: a pointer, so that
// putting it back does not allocate. b's first frameHeadroom bytes are
// room for the frame's header; Buffer hands out what follows.
type frameBuf struct{ b []byte }

// headroom returns the room before buf for its header when buf is the
// frame f's buffer, as Buffer handed it out (nil when buf grew into
// another array, or is not f's).
func (f *frameBuf) headroom(buf []byte) []byte {
	if f == nil || cap(f.b) <= frameHeadroom || cap(buf) == 0 || &f.b[:frameHeadroom+1][frameHeadroom] != &buf[:1][0] {
		return nil
	}
	return f.b[:frameHeadroom]
}

// framePool is a listener's pool of frame buffers.
type framePool struct {
	pool    sync.Pool
	newCap  int // capacity of a buffer made when the pool is empty
	keepCap int // put drops a buffer that grew past this
}

func (p *framePool) get() *frameBuf {
	if f, ok := p.pool.Get().(*frameBuf); ok {
		return f
	}
	return &frameBuf{b: make([]byte, 0, p.newCap)}
}

// put keeps f's buffer for reuse; b is the frame written from it, which
// may have grown into a larger array (kept instead, unless past keepCap).
func (p *framePool) put(f *frameBuf, b []byte) {
	switch {
	case f.headroom(b) != nil:
		// Still f.b's array.
	case cap(b) > p.keepCap || cap(b) <= frameHeadroom:
		f.b = make([]byte, 0, p.newCap)
	default:
		f.b = b[:0] // grown: a new array, b at its start
	}
	p.pool.Put(f)
}

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

var (
	// errFull is readInto's answer when buf reached its limit before the
	// end of the message.
	errFull = errors.New("transport: message buffer full")
	// errTooBig is read's answer to a message over maxMessageBytes.
	errTooBig = errors.New("transport: message over the limit")
	// errWriteStalled is a frame write the watchdog expired.
	errWriteStalled = errors.New("transport: frame write took longer than the write timeout")
)

// readInto appends r to buf until EOF, growing buf as needed but never past
// a capacity of limit bytes. It fails with errFull when buf holds limit
// bytes and r has not said EOF yet (what it read so far is in buf; the rest
// is not read).
func readInto(buf []byte, r io.Reader, limit int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= limit {
				return buf, errFull
			}
			grown := make([]byte, len(buf), min(limit, max(2*cap(buf), 1024)))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// Send implements actors.FrameSink: it writes the frame now and counts the
// message it answers out of the in-flight gate. A client that does not read for the write
// timeout is closed: the connSet's watchdog ends a write that takes longer
// (connSet.expireStalledWrites).
func (c *wsConn) Send(buf []byte) { c.SendSpliced(buf, len(buf), nil) }

// SendSpliced implements actors.SplicingSink: Send of the frame buf[:at],
// shared, buf[at:], written as one WebSocket frame in one system call.
func (c *wsConn) SendSpliced(buf []byte, at int, shared []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.writeFailed {
		c.putFrame(buf)
		return
	}
	if c.h.rec.Active() {
		frame := buf
		if len(shared) > 0 {
			c.joined = append(append(append(c.joined[:0], buf[:at]...), shared...), buf[at:]...)
			frame = c.joined
		}
		c.h.rec.Session(recording.KindFrame, c.sessionID, frame)
	}
	err := c.writeData(websocket.TextMessage, c.frame.headroom(buf), buf[:at], shared, buf[at:])
	c.framesWritten++
	if c.framesWritten > 1 {
		c.inflight.leave()
	}
	c.putFrame(buf)
	if err != nil {
		c.failWrite(err)
	}
}

// putFrame gives the frame buffer Buffer handed out back to the pool.
func (c *wsConn) putFrame(buf []byte) {
	f := c.frame
	if c.frame = nil; f == nil {
		f = new(frameBuf) // a Send without Buffer: not the session's way
	}
	c.h.frames.put(f, buf)
}

// failWrite closes a connection whose write failed (c.wmu held).
func (c *wsConn) failWrite(err error) {
	c.writeFailed = true
	c.h.log.Info().Uint64("session_id", c.sessionID).Err(err).Msg("write failed; closing the session")
	c.Close(protocol.CloseWriteTimeout)
	_ = c.ws.Close() // unblocks the reader
}

// writeData writes one unfragmented, unmasked WebSocket frame of the given
// opcode whose payload is head, shared and tail in that order, with one
// write or writev (c.wmu held). room, when not nil, is the room just before head
// in its array: the header goes there and head goes out with it as one
// iovec. The write is bounded by the watchdog, not by a deadline (see
// connSet.expireStalledWrites).
func (c *wsConn) writeData(op int, room, head, shared, tail []byte) error {
	hdr := appendFrameHeader(c.head[:0], op, len(head)+len(shared)+len(tail))
	parts := c.parts[:0]
	if room != nil {
		start := len(room) - len(hdr)
		copy(room[start:], hdr)
		head = room[start : len(room)+len(head)] // head follows room in its array
	} else {
		parts = append(parts, hdr)
	}
	for _, p := range [...][]byte{head, shared, tail} {
		if len(p) > 0 {
			parts = append(parts, p)
		}
	}
	c.writeStarted.Store(c.h.conns.writeClock())
	var err error
	if len(parts) == 1 {
		_, err = c.raw.Write(parts[0])
	} else if n := len(head) + len(shared) + len(tail) + len(hdr); n <= contiguousFrameMax {
		// A small frame copied whole costs fewer pages walked than the
		// kernel's reading of its parts where they lie (msg27).
		c.joined = c.joined[:0]
		for _, p := range parts {
			c.joined = append(c.joined, p...)
		}
		_, err = c.raw.Write(c.joined)
	} else if vw, ok := c.raw.(vectorWriter); ok {
		_, err = vw.WriteVectors(parts) // raw: see rawsock.Conn
	} else {
		c.out = parts
		_, err = c.out.WriteTo(c.raw)
	}
	c.writeStarted.Store(0)
	clear(c.parts[:]) // no frame buffer or run stays reachable from here
	c.out = nil
	if err == nil && c.writeExpired.Load() {
		err = errWriteStalled // written in the end, but after the timeout
	}
	return err
}

// contiguousFrameMax is the largest frame writeData copies into one buffer
// rather than writing its parts with writev.
const contiguousFrameMax = 4096

// vectorWriter is a connection that writes parts as one stream without
// net.Buffers (rawsock.Conn).
type vectorWriter interface {
	WriteVectors(parts [][]byte) (int, error)
}

// appendFrameHeader appends the header of a server's frame (FIN set, no
// mask) of opcode op carrying n bytes, its length in the fewest bytes as
// RFC 6455 5.2 asks and gorilla writes it.
func appendFrameHeader(dst []byte, op, n int) []byte {
	const finalBit = 0x80
	dst = append(dst, finalBit|byte(op))
	switch {
	case n <= 125:
		return append(dst, byte(n))
	case n <= 0xffff:
		return append(dst, 126, byte(n>>8), byte(n))
	default:
		dst = append(dst, 127)
		for shift := 56; shift >= 0; shift -= 8 {
			dst = append(dst, byte(uint64(n)>>shift))
		}
		return dst
	}
}

// takeControlWrites routes the pongs gorilla would write through
// writeData, like frames: gorilla's ping handler writes with its own
// deadline, which it would leave on the connection for the frames after,
// and holds its own lock, not c.wmu. A close frame the client sends is
// answered by gorilla (its default handler) on the reader; no frame
// follows it.
func (c *wsConn) takeControlWrites() {
	c.ws.SetPingHandler(func(data string) error {
		c.wmu.Lock()
		defer c.wmu.Unlock()
		if c.writeFailed {
			return nil // closing: a pong would follow the close frame
		}
		if err := c.writeData(websocket.PongMessage, nil, []byte(data), nil, nil); err != nil {
			c.failWrite(err)
			return err
		}
		return nil
	})
	closeReply := c.ws.CloseHandler()
	c.ws.SetCloseHandler(func(code int, text string) error {
		c.wmu.Lock()
		c.writeFailed = true // no frame after the close frame
		c.wmu.Unlock()
		return closeReply(code, text)
	})
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
// with a close frame (http.Server.Shutdown ignores hijacked connections),
// and ends their frame writes that stall.
type connSet struct {
	wg     sync.WaitGroup // one per connection added and not yet removed
	mu     sync.Mutex
	closed bool
	conns  map[*wsConn]struct{}
	// writeTimeout bounds a frame write; epoch is writeClock's zero.
	writeTimeout time.Duration
	epoch        time.Time
	// awake bounds the wait of commands on connections without receive
	// times (stallBoundConn); nil where every session's socket has them.
	awake *awake.Clock
}

func newConnSet(writeTimeout time.Duration) *connSet {
	if writeTimeout <= 0 {
		writeTimeout = defaultWriteTimeout
	}
	return &connSet{conns: make(map[*wsConn]struct{}), writeTimeout: writeTimeout, epoch: time.Now()}
}

// writeClock is the monotonic time since the set was made, in ns; never 0.
func (s *connSet) writeClock() int64 { return int64(time.Since(s.epoch)) + 1 }

// watchInterval is how often expireStalledWrites looks: a stalled write
// fails between one and one and a quarter write timeouts after it began.
func (s *connSet) watchInterval() time.Duration { return max(s.writeTimeout/4, time.Millisecond) }

// expireStalledWrites ends, every watchInterval until stop closes, each
// frame write in progress for longer than the write timeout: it moves the
// connection's write deadline to now, so the blocked write fails and the
// session closes with write_timeout.
//
// A deadline set on each write would do the same, but a deadline is a
// runtime timer moved on every frame: with gorilla setting it before each
// write, about 2 % of the service's CPU at 100 clients at 1 kHz. The
// watchdog costs each write two atomic stores.
func (s *connSet) expireStalledWrites(stop <-chan struct{}) {
	t := time.NewTicker(s.watchInterval())
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		now := s.writeClock()
		s.mu.Lock()
		for c := range s.conns {
			if start := c.writeStarted.Load(); start > 0 && now-start >= int64(s.writeTimeout) {
				// Again at every look while the write lasts: it is
				// cheap, and the write may have started after the last.
				c.writeExpired.Store(true)
				_ = c.ws.UnderlyingConn().SetWriteDeadline(time.Now())
			}
		}
		s.mu.Unlock()
	}
}

func (s *connSet) add(c *wsConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *connSet) remove(c *wsConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
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
