// Package transport serves hapticd over HTTP and WebSocket: the 3.x API at
// the root of one port, the legacy 3.0 API under /3.0/ of another, and the
// events socket (transport/events) on a third.
//
// # One set of handlers
//
// Both API formats register the same route list (api.routes) and run the
// same session actor; only the codec differs (protocol.Codec, v30.Codec). Every
// listener goes through BrowserGuard before a body is read or a connection
// upgraded (PROTOCOL.md 3.4).
//
// # Connections
//
// A WebSocket connection has one reader goroutine and one writer goroutine.
// The reader hands each message to the session actor; the writer writes
// frames with a deadline and returns a token that lets the reader read the
// next message, so a client that stops reading is pushed back by TCP and a
// client that stops answering is closed. No lock is held across I/O.
//
// # Shutdown
//
// Server.CloseSockets sends every WebSocket a close frame (http.Server's
// Shutdown does not see hijacked connections), then Shutdown stops the
// listeners and waits for their goroutines.
package transport
