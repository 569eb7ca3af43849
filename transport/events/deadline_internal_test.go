package events

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestGoAwayDeadlineHoldsAgainstALaterFrameDeadline: Shut may land between
// the writer taking its frame's deadline (WriteTimeout from now) and gorilla
// setting it on the connection, which would undo the earlier deadline Shut
// set. The socket's writes must still end by Shut's deadline.
func TestGoAwayDeadlineHoldsAgainstALaterFrameDeadline(t *testing.T) {
	conns := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		conns <- ws
	}))
	defer srv.Close()
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close() // never read
	ws := <-conns
	defer ws.Close()
	c := &socketConn{ws: ws, stop: make(chan struct{})}
	defer c.stopBackstop()
	// The interleaving the race makes: the frame's deadline taken first,
	// Shut's earlier one, then gorilla setting the frame's on the
	// connection.
	frame := time.Now().Add(time.Minute)
	start := time.Now()
	c.goAwayBy(start.Add(200 * time.Millisecond))
	payload := bytes.Repeat([]byte("p"), 60<<10)
	for {
		if err := ws.SetWriteDeadline(frame); err != nil {
			t.Fatal(err)
		}
		if err := ws.WriteMessage(websocket.TextMessage, payload); err != nil {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("writes to a client that never reads went on for 30 s")
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the writes ended %v after Shut's deadline of 200 ms: a frame's later deadline undid it", took)
	}
}
