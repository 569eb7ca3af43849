package bench

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"
)

// fakeService behaves like hapticd's simulation socket as PROTOCOL.md 2.1
// describes (inventory on open, then one frame per message, config only in
// full-state frames) and serves a /stats route, with knobs to break the
// contract the way a faulty service would.
type fakeService struct {
	arms []string
	fakeFaults

	nextSession atomic.Int64
	messages    atomic.Int64
	ticks       atomic.Uint64
	srv         *httptest.Server
	wg          sync.WaitGroup
}

// fakeFaults say how a fakeService breaks the contract.
type fakeFaults struct {
	// dropEvery drops the frame of every n-th control message of each
	// session (0: never), which stalls a lock-step client.
	dropEvery int
	// extraEvery sends a second frame for every n-th control message.
	extraEvery int
	// errorEvery adds an errors array to every n-th frame.
	errorEvery int
	// foreignEvery gives every n-th frame another session's id.
	foreignEvery int
}

func newFakeService(t *testing.T, faults fakeFaults) *fakeService {
	t.Helper()
	f := &fakeService{arms: []string{"049D", "1A2B"}, fakeFaults: faults}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", f.stats)
	mux.HandleFunc("/", f.socket)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		f.srv.CloseClientConnections()
		f.srv.Close()
		f.wg.Wait()
	})
	return f
}

func (f *fakeService) wsURL() string { return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/" }

func (f *fakeService) frame(session int64, withConfig, withErrors bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"session_id":%d,"arm3":[`, session)
	for i, id := range f.arms {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"device_id":%q,`, id)
		if withConfig {
			fmt.Fprintf(&b, `"config":{"type":"arm3","preset":"defaults"},`)
		}
		b.WriteString(`"state":{"cursor_position":{"x":0,"y":0.15,"z":0.1},"control_mode":"force"},"status":{"ready":true}}`)
	}
	b.WriteString(`],"grip":[]`)
	if withErrors {
		b.WriteString(`,"errors":[{"code":"invalid","message":"bad","path":"arm3[0]"}]`)
	}
	b.WriteString("}")
	return b.Bytes()
}

var fakeUpgrader = websocket.Upgrader{}

func (f *fakeService) socket(w http.ResponseWriter, r *http.Request) {
	conn, err := fakeUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.wg.Add(1)
	defer f.wg.Done()
	defer conn.Close()
	session := f.nextSession.Add(1)
	if conn.WriteMessage(websocket.TextMessage, f.frame(session, true, false)) != nil {
		return
	}
	var n int
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		f.messages.Add(1)
		f.ticks.Add(1)
		full := bytes.Contains(msg, []byte("force_render_full_state"))
		control := bytes.Contains(msg, []byte("arm3"))
		if control {
			n++
		}
		if control && f.dropEvery > 0 && n%f.dropEvery == 0 {
			continue
		}
		id := session
		if control && f.foreignEvery > 0 && n%f.foreignEvery == 0 {
			id = session + 1000
		}
		withErrors := control && f.errorEvery > 0 && n%f.errorEvery == 0
		if conn.WriteMessage(websocket.TextMessage, f.frame(id, full, withErrors)) != nil {
			return
		}
		if control && f.extraEvery > 0 && n%f.extraEvery == 0 {
			if conn.WriteMessage(websocket.TextMessage, f.frame(id, false, false)) != nil {
				return
			}
		}
	}
}

func (f *fakeService) stats(w http.ResponseWriter, r *http.Request) {
	ticks := f.ticks.Load()
	fmt.Fprintf(w, `{"ok":true,"data":{"devices":[`)
	for i, id := range f.arms {
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		fmt.Fprintf(w, `{"device_type":"arm3","device_id":%q,"loop":{"target_us":1000,"period_us_p50":1000,"period_us_p99":%d,"period_us_max":1500,"overruns":%d,"ticks":%d},"exchange":{"p50_us":1,"p99_us":2,"max_us":3}}`,
			id, 1010+10*i, ticks/100*uint64(i), ticks)
	}
	fmt.Fprintf(w, `],"process":{"cpu_seconds":%d,"rss_bytes":10485760,"goroutines":12,"sessions":3,"gc_pause_total_ns":%d,"gc_count":%d,"heap_bytes":4194304}}}`,
		ticks, ticks*1000, ticks)
}
