package transport

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/hapticd/hapticd/hw/hwtest"
)

const (
	idleClientsEnv = "HAPTICD_IDLE_CLIENTS" // "url count": run as the client side
	idleSessions   = 2000
	// idleSessionBytes is what one idle session may hold: heap it keeps
	// live plus its reader's stack.
	idleSessionBytes = 12 << 10
)

// liveBytes is the heap found live by a full GC plus every goroutine stack.
func liveBytes() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64() + s[1].Value.Uint64()
}

// TestIdleSessionMemory opens 2,000 sessions that say nothing after their
// inventory and measures what the service holds for them: at most 12 KiB
// each, 24 MiB in all. The clients run in a child process, so that only the
// service's side is counted.
func TestIdleSessionMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 2,000 sessions")
	}
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	// One session first, closed again: the sessions measured are not the
	// first (one-off state such as the encoded-state cache is counted in
	// the baseline).
	c := ts.dial(t, ts.wsURL())
	c.expect()
	_ = c.conn.Close()
	hwtest.EventuallyNil(t, 5*time.Second, "the closed session to leave the list", func() error {
		if n := len(ts.svc.Sessions()); n != 0 {
			return fmt.Errorf("%d sessions", n)
		}
		return nil
	})
	before := liveBytes()

	clients := hwtest.StartTestProcess(t, "TestIdleClientsChild", idleClientsEnv+"="+ts.wsURL()+" "+strconv.Itoa(idleSessions))
	clients.Expect(t, "ready", 60*time.Second)
	hwtest.EventuallyNil(t, 10*time.Second, "the idle sessions to be listed", func() error {
		if n := len(ts.svc.Sessions()); n != idleSessions {
			return fmt.Errorf("%d sessions listed", n)
		}
		return nil
	})
	held := int64(liveBytes()) - int64(before)
	perSession := held / idleSessions
	t.Logf("%d idle sessions hold %d KiB: %d bytes each", idleSessions, held>>10, perSession)
	if perSession > idleSessionBytes {
		t.Fatalf("an idle session holds %d bytes, over %d", perSession, idleSessionBytes)
	}
}

// TestIdleClientsChild is the client side of TestIdleSessionMemory: it
// opens the sessions, reads each inventory, says "ready" and holds them
// until its stdin closes.
func TestIdleClientsChild(t *testing.T) {
	spec := os.Getenv(idleClientsEnv)
	if spec == "" {
		t.Skip("run by TestIdleSessionMemory")
	}
	url, count, _ := strings.Cut(spec, " ")
	n, err := strconv.Atoi(count)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*websocket.Conn, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var failed sync.Once
	for i := range conns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c, _, err := websocket.DefaultDialer.Dial(url, nil)
			if err == nil {
				_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
				_, _, err = c.ReadMessage()
			}
			if err != nil {
				failed.Do(func() { fmt.Println("dial:", err) })
				return
			}
			conns[i] = c
		}()
	}
	wg.Wait()
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		if c != nil {
			_ = c.Close()
		}
	}
}
