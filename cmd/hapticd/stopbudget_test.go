package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/transport"
)

// TestStopWithAStalledEventsClient: a client of the events socket that
// stopped reading must not make the service's stop fail, nor keep the
// devices' shutdown waiting behind its writes (its queue is cut short; the
// stop's budget is the service's, 5 s, shorter than the socket's 10 s
// WriteTimeout).
func TestStopWithAStalledEventsClient(t *testing.T) {
	o, err := parseFlags([]string{"--port", "0", "--legacy-port", "-1", "--events-port", "0", "--sim-arms", "1", "--sim-grips", "0",
		"--state-dir", filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	sv, err := startService(context.Background(), o, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	// A client that stops reading. (Its buffers are the default ones: one
	// shrunk below loopback's segment size would not reopen its window
	// promptly when it reads again below.)
	c, _, err := websocket.DefaultDialer.Dial("ws://"+sv.srv.Addr(transport.ListenerEvents).String()+"/", nil)
	if err != nil {
		_ = sv.stop(nil)
		t.Fatal(err)
	}
	defer c.Close()
	// Megabytes of events, a batch at a time so that the socket's queue
	// keeps feeding its writer: far more than the socket buffers hold.
	payload := bytes.Repeat([]byte("p"), 256)
	for range 40 {
		for range 500 {
			sv.svc.Activity().Publish(event.InvalidIOChannel(payload))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := sv.stop(nil); err != nil {
		t.Fatalf("stop with a stalled events client: %v", err)
	}
	// The client did stall (else the test proved nothing): reading now,
	// it finds its buffer and then the connection cut, not the clean 1001
	// a client gets after the whole of its queue.
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("the client got its whole queue and a clean close (%v): it never stalled, so the stop was not tested with a stalled client", err)
		}
		break
	}
}
