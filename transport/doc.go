// Package transport serves hapticd over HTTP and WebSocket: the 3.x API at
// the root of one port, the legacy 3.0 API under /3.0/ of another, and the
// events socket (transport/events) on a third.
//
// # One set of handlers
//
// Both API formats register the same route list (api.routes) and run the
// same session actor; only the codec differs (protocol.Codec, v30.Codec). Every
// listener goes through BrowserGuard before a body is read or a connection
// upgraded (the README's Browser safety section).
//
// # Operator's routes
//
// The 3.x port also serves /metrics (metrics.go: a Prometheus collector
// that reads, at scrape time, what loops, sessions, the store and the
// activity actor already count), /healthz and /readyz (health.go), /ports
// (ports.go: the hardware scan's outcome per port, which cmd/hapticd hands
// over as Config.Ports), and the dashboard under /ui/ (transport/ui,
// embedded files), behind the same guard.
//
// # Schema
//
// The 3.x listener serves the machine-readable schema built once at start:
// GET /schema (an index), GET /schema/{name} (protocol/schema's documents
// plus the few this package writes) and GET /openapi.json, generated from
// the route table. Each route is described beside its registration
// (describeRoutes); a route without a description fails
// TestOpenAPIDescribesEveryRoute. The 3.0 listener serves none of them.
//
// # Connections
//
// A WebSocket connection's reader goroutine hands each message to the
// session, which handles it inline on that goroutine when it is idle (see
// actors.Session.Deliver) and writes the answering frame there. A
// lock-step client's frame answers the message just read, so a separate
// writer goroutine would only add a hand-off per tick. The reader counts
// each message in flight and stops reading at 64 until frames answer them,
// so a client that sends faster than it reads is pushed back by TCP. A
// client that stops reading is closed by the listeners' write watchdog,
// which ends any frame write older than the write timeout (a deadline per
// write would move a runtime timer on every frame). No lock is held across
// I/O but the connection's own write lock.
//
// Frames and pongs are written past gorilla, as whole unmasked WebSocket
// frames with one write on the connection (wsConn.writeData): a frame of
// every arm is the session's own bytes around a run of every arm's element
// that all sessions share (actors.SplicingSink), and gorilla writes a
// message from one buffer, which cost a 63 KB copy per frame. The header
// goes into room kept before the frame buffer. A frame in parts goes out
// with writev; one of at most contiguousFrameMax bytes is copied whole and
// written with write, which walks fewer pages cold. gorilla writes only close
// frames, after which no frame is written; every write is on the one
// goroutine, so none interleave. The bytes are gorilla's
// (TestFramesAreGorillasBytes).
//
// # Memory per connection
//
// The reader runs on its own goroutine and the HTTP handler returns, so an
// idle connection keeps neither the HTTP server's request state nor a grown
// handler stack. gorilla's write buffer is 2 KiB, held (a pool costs an
// allocation per message gorilla writes); frames do not use it.
// Frame buffers come from a pool per listener, and message buffers
// over 64 KiB are neither kept nor read more than four at a time per
// listener. An idle session holds about 12 KiB (TestIdleSessionMemory).
//
// # Closes
//
// Every session ends with one protocol.CloseReason, the first cause
// recorded: the close frame carries its code and text, and the session-ended
// event and GET /sessions/closed carry the reason. A message over 1 MiB is
// answered with close 1009, then read and discarded to the client's close
// frame, so the connection ends with FIN rather than a reset that would
// destroy the close frame.
//
// # Shutdown
//
// Server.CloseSockets sends every WebSocket a close frame (http.Server's
// Shutdown does not see hijacked connections), then Shutdown stops the
// listeners and waits for their goroutines and every connection's reader.
// The events sockets flush their queues first, within what the stop's
// context leaves (events.Server.ShutFor): a client that stopped reading is
// cut off rather than let hold the stop.
package transport
