// Package events serves the activity channel to clients: the events
// WebSocket on "/" of --events-port ([Server]) and GET /events on the HTTP
// port ([NewRecentHandler]).
//
// # The socket
//
// Each event is sent once, as it happens, as one text frame holding the
// event object of docs/events.md. With ?since=SEQ the socket first
// replays what the ring still holds after SEQ, then goes live, with no gap
// and no duplicate (the subscription is made before the upgrade, inside the
// activity actor). Without since it is live only. A since an earlier run of
// hapticd handed out replays this run's events from the first, behind a
// service-restarted event (see package activity).
//
// The socket takes no input: whatever a client sends is dropped and
// reported as an invalid-io-channel event with its first 256 bytes, at most
// SocketOptions.InputReportsPerSecond per connection. Pings and close
// frames are answered as RFC 6455 says; messages over 64 KiB close the
// socket with 1009.
//
// # Concurrency and backpressure
//
// Each connection has one reader goroutine and one writer (the handler's
// goroutine). The writer waits on the subscription, writes with a deadline
// and pings every 30 s. A slow client loses events in its own queue and is
// told so by an events-dropped event (see package activity); a client that
// stops reading altogether misses a write deadline and is disconnected, and
// the reason is logged. No lock is held across I/O.
//
// # Browser safety
//
// The handler does not check Origin itself: the caller wraps it in the
// browser-safety guard (docs/operations.md, Browser safety), which refuses foreign origins and
// hosts before the upgrade.
//
// # Shutdown
//
// [Server.Close] refuses new connections, flushes what each socket has
// queued (within one WriteTimeout in all, however slowly its client
// reads), sends a close frame (1001) and waits for every goroutine; sockets
// also close with 1001 when the activity actor stops.
package events
