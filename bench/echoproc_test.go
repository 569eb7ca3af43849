package bench

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// ServeEcho, the echo baseline's own process, serves the captured frames
// and stops when its stdin closes.
func TestServeEcho(t *testing.T) {
	dir := t.TempDir()
	inv, state := filepath.Join(dir, "inv"), filepath.Join(dir, "state")
	os.WriteFile(inv, []byte(`{"session_id":1,"arm3":[]}`), 0o600)
	os.WriteFile(state, []byte(`{"session_id":1,"arm3":[]}  `), 0o600)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ServeEcho(inv, state, inR, outW) }()
	url, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := websocket.DefaultDialer.Dial(strings.TrimSpace(url), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, b, err := c.ReadMessage(); err != nil || string(b) != `{"session_id":1,"arm3":[]}` {
		t.Fatalf("inventory %q %v", b, err)
	}
	c.WriteMessage(websocket.TextMessage, []byte(`{}`))
	if _, b, err := c.ReadMessage(); err != nil || len(b) != 28 {
		t.Fatalf("state frame %q %v", b, err)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeEcho did not stop when stdin closed")
	}
}
