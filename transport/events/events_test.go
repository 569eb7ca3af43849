package events_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/protocol/schema"
	"github.com/hapticd/hapticd/transport/events"
	"github.com/hapticd/hapticd/transport/schematest"
)

// waitLimit bounds every wait: a failure deadline, not a speed goal.
const waitLimit = 30 * time.Second

// testLog is silent unless HAPTICD_TEST_LOG is set.
func testLog(extra io.Writer) zerolog.Logger {
	var ws []io.Writer
	if os.Getenv("HAPTICD_TEST_LOG") != "" {
		ws = append(ws, zerolog.ConsoleWriter{Out: os.Stderr})
	}
	if extra != nil {
		ws = append(ws, extra)
	}
	if len(ws) == 0 {
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.MultiLevelWriter(ws...)).With().Timestamp().Logger()
}

type fixture struct {
	act  *activity.Activity
	srv  *events.Server
	http *httptest.Server
	url  string
}

type fixtureOptions struct {
	activity activity.Options
	socket   events.SocketOptions
	log      io.Writer
	// listener wraps the test server's listener.
	listener func(net.Listener) net.Listener
	// serviceSeqs numbers the events as the service does, from the start
	// time; by default they run from 1 (unless activity.FirstSeq says
	// otherwise), so that the tables read easily.
	serviceSeqs bool
}

func newFixture(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	t.Cleanup(sys.Shutdown)
	o.activity.Log = testLog(nil)
	if o.activity.FirstSeq == 0 && !o.serviceSeqs {
		o.activity.FirstSeq = 1
	}
	act, err := activity.Start(sys, o.activity)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(act.Stop)
	srv := events.NewServerWithOptions(act, testLog(o.log), o.socket)
	mux := http.NewServeMux()
	mux.Handle("/events", events.NewRecentHandler(act))
	mux.Handle("/", srv)
	hs := httptest.NewUnstartedServer(mux)
	if o.listener != nil {
		hs.Listener = o.listener(hs.Listener)
	}
	hs.Start()
	t.Cleanup(hs.Close)
	t.Cleanup(srv.Close)
	return &fixture{act: act, srv: srv, http: hs, url: "ws" + strings.TrimPrefix(hs.URL, "http") + "/"}
}

func (f *fixture) dial(t *testing.T, query string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial(f.url+query, nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", query, err, status)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// wireEvent is an event as a client decodes it.
type wireEvent struct {
	Seq      uint64          `json:"seq"`
	Time     string          `json:"time"`
	Name     string          `json:"name"`
	Category string          `json:"category"`
	Level    string          `json:"level"`
	Data     json.RawMessage `json:"data"`
	Message  string          `json:"message"`
}

func read(t *testing.T, c *websocket.Conn) wireEvent {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(waitLimit))
	mt, msg, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if mt != websocket.TextMessage {
		t.Fatalf("frame type %d, want text", mt)
	}
	var e wireEvent
	if err := json.Unmarshal(msg, &e); err != nil {
		t.Fatalf("frame %s: %v", msg, err)
	}
	if err := eventSchema().Check("event", msg); err != nil {
		t.Error(err)
	}
	return e
}

// eventSchema validates what the socket sends against the served event
// schema, as built for a service with the reference's type names (which
// the events these tests publish carry).
var eventSchema = sync.OnceValue(func() *schematest.Validator {
	types, _ := protocol.NewNamedTypeTable(protocol.NamingReference, nil) // fails only on bad aliases
	return schematest.ForSet(schema.New(schema.Options{Types: types}))
})

func publishN(a *activity.Activity, from, n int) {
	for i := from; i < from+n; i++ {
		a.Publish(event.DeviceBusy("arm3", "049D", uint64(i), 0))
	}
}

// settle returns once the actor handled everything published before.
func settle(t *testing.T, a *activity.Activity) {
	t.Helper()
	if _, err := a.Recent(0, 1); err != nil {
		t.Fatal(err)
	}
}

func TestFrameShape(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c := f.dial(t, "")
	f.act.Publish(event.HTTPRouteDeprecated("POST /force_scale", "POST /settings/devices/force_scale", "127.0.0.1:1"))
	_ = c.SetReadDeadline(time.Now().Add(waitLimit))
	_, msg, err := c.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(msg, &obj); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"category", "data", "level", "message", "name", "seq", "time"}; !slices.Equal(keys, want) {
		t.Fatalf("frame keys %v, want %v", keys, want)
	}
	var e wireEvent
	_ = json.Unmarshal(msg, &e)
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", e.Time); err != nil || e.Seq != 1 || e.Name != "http-route-deprecated" {
		t.Fatalf("event %+v (time: %v)", e, err)
	}
}

// TestReplayWhileProducing connects with ?since= while a producer runs: the
// client gets every later event exactly once, in order.
func TestReplayWhileProducing(t *testing.T) {
	const before, during = 200, 3000
	f := newFixture(t, fixtureOptions{activity: activity.Options{RingSize: 8192, QueueSize: 8192}})
	publishN(f.act, 1, before)
	settle(t, f.act)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		publishN(f.act, before+1, during)
	}()
	c := f.dial(t, "?since=100")
	for want := uint64(101); want <= before+during; want++ {
		if e := read(t, c); e.Seq != want {
			t.Fatalf("got seq %d, want %d: a gap or a duplicate", e.Seq, want)
		}
	}
	wg.Wait()
}

// TestResumeAcrossARestart: a tool saw a run's events up to some seq, then
// hapticd restarted (the events server rebuilt, as a new process builds it)
// and its new run published events of its own; the tool resumes with the
// seq it last saw, on the socket and over GET /events. It must be told of
// the restart and get the new run's events from its first (its
// device-connected ones), whichever run published more; those the new run's
// ring no longer holds are counted, as for any resume.
func TestResumeAcrossARestart(t *testing.T) {
	tests := []struct {
		name       string
		ring       int
		published  int // by the new run before the tool resumes
		wantMissed uint64
	}{
		{"the new run published fewer", 0, 3, 0},
		{"as many", 0, 5, 0},
		{"more", 0, 8, 0},
		{"more than its ring holds", 4, 9, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := newFixture(t, fixtureOptions{serviceSeqs: true})
			publishN(before.act, 1, 5)
			settle(t, before.act)
			seen := recentPage(t, before, "?since=0")
			last := seen.Events[len(seen.Events)-1].Seq
			before.http.Close()
			before.act.Stop()

			after := newFixture(t, fixtureOptions{serviceSeqs: true, activity: activity.Options{RingSize: tt.ring}})
			for range tt.published {
				after.act.Publish(event.DeviceConnected("inverse", "arm3", "049D"))
			}
			settle(t, after.act)
			kept := tt.published - int(tt.wantMissed)

			page := recentPage(t, after, fmt.Sprintf("?since=%d", last))
			if !page.Restarted || page.Missed != tt.wantMissed || len(page.Events) != kept {
				t.Fatalf("GET /events?since=%d: restarted %v, missed %d, %d events; want restarted, missed %d, %d events", last, page.Restarted, page.Missed, len(page.Events), tt.wantMissed, kept)
			}
			for i, e := range page.Events {
				if e.Name != event.NameDeviceConnected || (i > 0 && e.Seq != page.Events[i-1].Seq+1) {
					t.Fatalf("GET /events: event %d is %s seq %d, want the new run's device-connected in seq order", i, e.Name, e.Seq)
				}
			}
			if newest := page.Events[len(page.Events)-1].Seq; page.NextSeq != newest+1 {
				t.Fatalf("next_seq %d, want %d", page.NextSeq, newest+1)
			}

			c := after.dial(t, fmt.Sprintf("?since=%d", last))
			first := page.Events[0].Seq - tt.wantMissed // the new run's first
			if e := read(t, c); e.Name != event.NameServiceRestarted || e.Seq != first-1 {
				t.Fatalf("socket: first frame %s seq %d, want service-restarted seq %d (the new run's first is %d)", e.Name, e.Seq, first-1, first)
			}
			if tt.wantMissed > 0 {
				e := read(t, c)
				var d struct{ Missed uint64 }
				_ = json.Unmarshal(e.Data, &d)
				if e.Name != event.NameEventsDropped || d.Missed != tt.wantMissed || e.Seq != first-1 {
					t.Fatalf("socket: %s %s seq %d, want events-dropped {missed:%d} seq %d", e.Name, e.Data, e.Seq, tt.wantMissed, first-1)
				}
			}
			for _, want := range page.Events {
				if e := read(t, c); e.Seq != want.Seq || e.Name != event.NameDeviceConnected {
					t.Fatalf("socket: got %s seq %d, want device-connected seq %d", e.Name, e.Seq, want.Seq)
				}
			}
			// Then live, with no gap.
			after.act.Publish(event.DeviceDisconnected("inverse", "arm3", "049D"))
			if e := read(t, c); e.Seq != page.NextSeq || e.Name != event.NameDeviceDisconnected {
				t.Fatalf("socket: live %s seq %d, want device-disconnected seq %d", e.Name, e.Seq, page.NextSeq)
			}
		})
	}
}

// eventsPage is the data of a GET /events answer.
type eventsPage struct {
	Events    []wireEvent `json:"events"`
	NextSeq   uint64      `json:"next_seq"`
	Missed    uint64      `json:"missed"`
	Restarted bool        `json:"restarted"`
}

func recentPage(t *testing.T, f *fixture, query string) eventsPage {
	t.Helper()
	resp, err := http.Get(f.http.URL + "/events" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		OK   bool       `json:"ok"`
		Data eventsPage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil || resp.StatusCode != http.StatusOK || !env.OK {
		t.Fatalf("GET /events%s: status %d, %+v, %v", query, resp.StatusCode, env, err)
	}
	return env.Data
}

func TestLiveOnlyWithoutSince(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	publishN(f.act, 1, 5)
	settle(t, f.act)
	c := f.dial(t, "")
	publishN(f.act, 6, 1)
	if e := read(t, c); e.Seq != 6 {
		t.Fatalf("live-only socket got seq %d first, want 6", e.Seq)
	}
}

func TestInputIsReportedAndTruncated(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	listener := f.dial(t, "")
	sender := f.dial(t, "")
	tests := []struct {
		name  string
		kind  int
		input []byte
		want  string
	}{
		{"text", websocket.TextMessage, []byte(`{"arm3":[]}`), `{"arm3":[]}`},
		{"long text is cut", websocket.TextMessage, bytes.Repeat([]byte("y"), 1000), strings.Repeat("y", 256)},
		{"binary", websocket.BinaryMessage, []byte("bin"), "bin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := sender.WriteMessage(tt.kind, tt.input); err != nil {
				t.Fatal(err)
			}
			e := read(t, listener)
			if e.Name != event.NameInvalidIOChannel || e.Category != "input" || e.Level != "warning" {
				t.Fatalf("got %+v, want invalid-io-channel", e)
			}
			var d struct {
				Received string `json:"received_data"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil || d.Received != tt.want {
				t.Fatalf("received_data %q (%v), want %q", d.Received, err, tt.want)
			}
		})
	}
}

func TestOversizedInputClosesWith1009(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c := f.dial(t, "")
	if err := c.WriteMessage(websocket.TextMessage, bytes.Repeat([]byte("z"), 70<<10)); err != nil {
		t.Fatal(err)
	}
	readUntil1009(t, c)
}

// TestOversizedInputEndsWithoutReset: a message over 64 KiB ends the
// socket with 1009 and then a clean end of stream, never a TCP reset (a
// reset can destroy the close frame before the client reads it, and does
// on Windows). The server must read away what the client still sends
// before it closes, whether the message came in one frame or several.
func TestOversizedInputEndsWithoutReset(t *testing.T) {
	tests := []struct {
		name      string
		fragments int
	}{
		{"one frame", 1},
		{"fragmented", 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			// gorilla sends a frame per write buffer: one as large as the
			// message sends it whole, as browsers do.
			payload := bytes.Repeat([]byte("z"), 200<<10)
			d := websocket.Dialer{WriteBufferSize: len(payload)/tt.fragments + 64}
			c, _, err := d.Dial(f.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			// No close frame back: writing to a reset socket would use up
			// the reset's error, and the read below would see EOF anyway.
			c.SetCloseHandler(func(int, string) error { return nil })
			if err := c.WriteMessage(websocket.TextMessage, payload); err != nil {
				t.Fatal(err)
			}
			readUntil1009(t, c)
			// After the close frame the server ends the TCP stream: with a
			// FIN (EOF here), not a reset.
			nc := c.NetConn()
			_ = nc.SetReadDeadline(time.Now().Add(waitLimit))
			var rest [512]byte
			for {
				_, err := nc.Read(rest[:])
				if err == nil {
					continue
				}
				if !errors.Is(err, io.EOF) {
					t.Fatalf("the connection ended with %v, want a clean end of stream (EOF)", err)
				}
				return
			}
		})
	}
}

// TestTooBigIsLoggedWhileEventsFlow: an event published while the server
// reads away an oversized message after its 1009 must not turn the
// reason (logged, and counted in GET /metrics) into write_timeout (the writer meets the close frame the
// reader sent, not a slow client).
func TestTooBigIsLoggedWhileEventsFlow(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	payload := bytes.Repeat([]byte("z"), 200<<10)
	d := websocket.Dialer{WriteBufferSize: len(payload) + 64}
	c, _, err := d.Dial(f.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.SetCloseHandler(func(int, string) error { return nil }) // the server reads on, for a second
	if err := c.WriteMessage(websocket.TextMessage, payload); err != nil {
		t.Fatal(err)
	}
	readUntil1009(t, c)
	publishN(f.act, 1, 1)
	if got := closedReason(t, f); got != protocol.CloseMessageTooBig {
		t.Fatalf("the connection ended as %s, want %s", got, protocol.CloseMessageTooBig)
	}
}

// closedReason waits until f's server has seen one connection end and
// returns the reason it counted (GET /metrics shows the counts).
func closedReason(t *testing.T, f *fixture) protocol.CloseReason {
	t.Helper()
	var got map[protocol.CloseReason]uint64
	hwtest.Eventually(t, waitLimit, "the client's end counted", func() bool {
		got = f.srv.ClosedByReason()
		return len(got) > 0
	})
	if len(got) != 1 {
		t.Fatalf("ends counted %v, want one", got)
	}
	for reason, n := range got {
		if n != 1 {
			t.Fatalf("ends counted %v, want one", got)
		}
		return reason
	}
	return ""
}

// TestCloseReasonIsLogged: a closed events client's reason (its log line's,
// counted in GET /metrics) is the one a session's end would name (protocol.CloseReason): a client that
// drops its connection without a close frame is read_error, not
// client_closed, and a frame that breaks RFC 6455 is protocol_violation.
func TestCloseReasonIsLogged(t *testing.T) {
	tests := []struct {
		name string
		end  func(t *testing.T, c *websocket.Conn)
		want protocol.CloseReason
	}{
		{"close frame", func(t *testing.T, c *websocket.Conn) {
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(waitLimit))
		}, protocol.CloseClientClosed},
		{"dropped connection", func(t *testing.T, c *websocket.Conn) {
			_ = c.NetConn().Close()
		}, protocol.CloseReadError},
		{"unmasked frame", func(t *testing.T, c *websocket.Conn) {
			// A text frame "hi" without the mask every client frame needs.
			if _, err := c.NetConn().Write([]byte{0x81, 0x02, 'h', 'i'}); err != nil {
				t.Fatal(err)
			}
		}, protocol.CloseProtocolViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			c := f.dial(t, "")
			tt.end(t, c)
			if got := closedReason(t, f); got != tt.want {
				t.Fatalf("the connection ended as %s, want %s", got, tt.want)
			}
		})
	}
}

func TestServerPings(t *testing.T) {
	f := newFixture(t, fixtureOptions{socket: events.SocketOptions{PingInterval: 250 * time.Millisecond}})
	c := f.dial(t, "")
	var mu sync.Mutex
	pings := 0
	c.SetPingHandler(func(data string) error {
		mu.Lock()
		pings++
		mu.Unlock()
		return c.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	frames := make(chan []byte, 16)
	go func() {
		defer close(frames)
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			frames <- msg
		}
	}()
	hwtest.Eventually(t, waitLimit, "two pings", func() bool { mu.Lock(); defer mu.Unlock(); return pings >= 2 })
	// A client that answers pings stays connected and keeps receiving.
	publishN(f.act, 1, 1)
	select {
	case msg, ok := <-frames:
		if !ok || !strings.Contains(string(msg), `"seq":1`) {
			t.Fatalf("after the pings got %q (open %v), want seq 1", msg, ok)
		}
	case <-time.After(waitLimit):
		t.Fatal("no event after the pings")
	}
	_ = c.Close()
	for range frames {
	}
}

// TestStalledClientIsClosedOthersUnaffected: a client that stops reading
// misses its write deadline and is closed; a live client beside it
// receives everything.
func TestStalledClientIsClosedOthersUnaffected(t *testing.T) {
	const total = 3000
	var logs hwtest.LogBuffer
	f := newFixture(t, fixtureOptions{
		activity: activity.Options{QueueSize: 1024},
		// Long enough that the live client's writer, descheduled between
		// setting its deadline and writing on a loaded machine, does not
		// miss it (200 ms did, under -race on 2 busy cores).
		socket: events.SocketOptions{WriteTimeout: time.Second},
		log:    &logs,
		// Small socket buffers, so a stalled reader backs up the
		// server's writes after a few kilobytes, not megabytes.
		listener: func(l net.Listener) net.Listener { return smallBufferListener{l} },
	})
	stalled := smallBufferDial(t, f.url)
	live := f.dial(t, "")
	payload := bytes.Repeat([]byte("p"), 256)
	for i := 1; i <= total; i++ {
		f.act.Publish(event.InvalidIOChannel(payload))
		if e := read(t, live); e.Seq != uint64(i) {
			t.Fatalf("live client got seq %d, want %d", e.Seq, i)
		}
	}
	// The stalled client, reading again, finds what was buffered and then
	// the end of its connection: the server closed it. Had the server kept
	// it open, the read would time out instead.
	_ = stalled.SetReadDeadline(time.Now().Add(waitLimit))
	got := 0
	var err error
	for err == nil {
		if _, _, err = stalled.ReadMessage(); err == nil {
			got++
		}
	}
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the stalled client was not closed within %v (it read %d events)", waitLimit, got)
	}
	if got >= total {
		t.Fatalf("the stalled client read all %d events: it was never backed up", got)
	}
}

func TestCloseSendsCloseFrameAndRefusesNewSockets(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	a, b := f.dial(t, ""), f.dial(t, "?since=0")
	publishN(f.act, 1, 3)
	if e := read(t, a); e.Seq != 1 {
		t.Fatalf("seq %d", e.Seq)
	}
	settle(t, f.act) // all three are in both queues
	f.srv.Close()
	for name, c := range map[string]*websocket.Conn{"a": a, "b": b} {
		_ = c.SetReadDeadline(time.Now().Add(waitLimit))
		var err error
		n := 0
		for err == nil {
			_, _, err = c.ReadMessage()
			n++
		}
		if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
			t.Fatalf("client %s: %v, want a 1001 close frame", name, err)
		}
		// Events queued before the close are still delivered.
		if want := map[string]int{"a": 2, "b": 3}[name]; n-1 != want {
			t.Fatalf("client %s got %d events before the close, want %d", name, n-1, want)
		}
	}
	_, resp, err := websocket.DefaultDialer.Dial(f.url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after Close: %v, want 503", err)
	}
	f.srv.Close() // idempotent
}

// TestCloseIsBoundedWithASlowReader: Close returns within about
// WriteTimeout plus a second, as its doc says, even while a client still
// reads, only slowly: each frame making its own deadline must not let the
// flush of a full queue hold the shutdown for as long as the client takes.
func TestCloseIsBoundedWithASlowReader(t *testing.T) {
	const writeTimeout = 2 * time.Second
	f := newFixture(t, fixtureOptions{
		activity: activity.Options{QueueSize: 4096},
		socket:   events.SocketOptions{WriteTimeout: writeTimeout},
		listener: func(l net.Listener) net.Listener { return smallBufferListener{l} },
	})
	c := f.dial(t, "")
	// The client reads about 40 KB a second in steady reads (so TCP's
	// window keeps opening): every frame goes out well within its
	// deadline, the whole queue takes many seconds.
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		nc := c.NetConn()
		var b [2048]byte
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			_ = nc.SetReadDeadline(time.Now().Add(waitLimit))
			if _, err := io.ReadFull(nc, b[:]); err != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-readerDone }()
	payload := bytes.Repeat([]byte("p"), 256)
	for range 2000 {
		f.act.Publish(event.InvalidIOChannel(payload))
	}
	settle(t, f.act)
	start := time.Now()
	f.srv.Close()
	// A second for the close frame's answer, and slack for a busy machine.
	if took, bound := time.Since(start), writeTimeout+time.Second+3*time.Second; took > bound {
		t.Fatalf("Close took %v with a slow reader, want under %v (WriteTimeout %v plus a second, and slack)", took, bound, writeTimeout)
	}
}

func TestActivityStopClosesSockets(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c := f.dial(t, "")
	f.act.Stop()
	_ = c.SetReadDeadline(time.Now().Add(waitLimit))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			if !websocket.IsCloseError(err, websocket.CloseGoingAway) {
				t.Fatalf("%v, want a 1001 close frame", err)
			}
			break
		}
	}
	_, resp, err := websocket.DefaultDialer.Dial(f.url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after the actor stopped: %v, want 503", err)
	}
}

func TestSocketRefusals(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	tests := []struct {
		name       string
		path       string
		upgrade    bool
		wantStatus int
		wantCode   string
	}{
		{"plain GET", "/", false, http.StatusBadRequest, "bad_handshake"},
		{"other path", "/nope", true, http.StatusNotFound, "unknown_route"},
		{"bad since", "/?since=abc", true, http.StatusBadRequest, "invalid_value"},
		{"negative since", "/?since=-1", true, http.StatusBadRequest, "invalid_value"},
		{"since twice", "/?since=1&since=2", true, http.StatusBadRequest, "invalid_value"},
		{"since that cannot be decoded", "/?since=3%", true, http.StatusBadRequest, "invalid_value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp *http.Response
			var err error
			if tt.upgrade {
				var c *websocket.Conn
				c, resp, err = websocket.DefaultDialer.Dial(strings.TrimSuffix(f.url, "/")+tt.path, nil)
				if err == nil {
					_ = c.Close()
					t.Fatal("upgrade succeeded")
				}
			} else {
				resp, err = http.Get(f.http.URL + tt.path)
				if err != nil {
					t.Fatal(err)
				}
			}
			defer resp.Body.Close()
			checkError(t, resp, tt.wantStatus, tt.wantCode)
		})
	}
}

func checkError(t *testing.T, resp *http.Response, status int, code string) {
	t.Helper()
	var env struct {
		OK    *bool  `json:"ok"`
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatalf("status %d, body not the JSON envelope: %v", resp.StatusCode, err)
	}
	if resp.StatusCode != status || env.OK == nil || *env.OK || env.Code != code || !strings.HasPrefix(env.Error, "events: ") {
		t.Fatalf("status %d %+v, want %d with code %s", resp.StatusCode, env, status, code)
	}
}

func TestRecentHandler(t *testing.T) {
	f := newFixture(t, fixtureOptions{activity: activity.Options{RingSize: 50}})
	publishN(f.act, 1, 60) // the ring holds 11..60
	settle(t, f.act)
	tests := []struct {
		query         string
		wantFirst     uint64
		wantCount     int
		wantNext      uint64
		wantMissed    uint64
		wantRestarted bool
	}{
		{"", 11, 50, 61, 0, false},
		{"?since=55", 56, 5, 61, 0, false},
		{"?since=20&limit=3", 21, 3, 24, 0, false},
		{"?limit=1", 11, 1, 12, 0, false},
		{"?since=60", 0, 0, 61, 0, false},
		// Past the newest event: a resume point of an earlier run (whose
		// clock ran ahead of this one's; TestResumeAcrossARestart has the
		// usual case). This run's events are all news to that client;
		// 1..10 fell off the ring.
		{"?since=100", 11, 50, 61, 10, true},
		{"?since=18446744073709551615&limit=5", 11, 5, 16, 10, true},
		// Older than the ring: 4..10 are gone, and the answer says so
		// (as the socket's events-dropped does), not only by its first seq.
		{"?since=3", 11, 50, 61, 7, false},
		{"?since=3&limit=2", 11, 2, 13, 7, false},
		{"?since=10", 11, 50, 61, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			resp, err := http.Get(f.http.URL + "/events" + tt.query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			var env struct {
				OK   bool `json:"ok"`
				Data struct {
					Events    *[]wireEvent `json:"events"`
					NextSeq   uint64       `json:"next_seq"`
					Missed    *uint64      `json:"missed"`
					Restarted *bool        `json:"restarted"`
				} `json:"data"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
				t.Fatal(err)
			}
			if !env.OK || env.Data.Events == nil {
				t.Fatalf("envelope %+v: want ok and an events array", env)
			}
			evs := *env.Data.Events
			if len(evs) != tt.wantCount || env.Data.NextSeq != tt.wantNext {
				t.Fatalf("%d events, next %d; want %d, next %d", len(evs), env.Data.NextSeq, tt.wantCount, tt.wantNext)
			}
			if env.Data.Missed == nil || *env.Data.Missed != tt.wantMissed {
				t.Fatalf("missed %v, want %d (events after since the ring no longer holds)", env.Data.Missed, tt.wantMissed)
			}
			if env.Data.Restarted == nil || *env.Data.Restarted != tt.wantRestarted {
				t.Fatalf("restarted %v, want %v", env.Data.Restarted, tt.wantRestarted)
			}
			for i, e := range evs {
				if e.Seq != tt.wantFirst+uint64(i) || e.Name != event.NameDeviceBusy {
					t.Fatalf("event %d is %s seq %d, want seq %d", i, e.Name, e.Seq, tt.wantFirst+uint64(i))
				}
			}
		})
	}
}

func TestRecentHandlerRefusals(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	tests := []struct {
		method, query string
		status        int
		code          string
	}{
		{"GET", "?since=abc", 400, "invalid_value"},
		{"GET", "?since=-3", 400, "invalid_value"},
		{"GET", "?since=1.5", 400, "invalid_value"},
		{"GET", "?limit=0", 400, "invalid_value"},
		{"GET", "?limit=10001", 400, "invalid_value"},
		{"GET", "?limit=ten", 400, "invalid_value"},
		{"GET", "?limit=%2B5", 400, "invalid_value"}, // +5: digits only, as since takes
		{"GET", "?since=%2B5", 400, "invalid_value"},
		{"GET", "?since=5&since=0", 400, "invalid_value"},
		{"GET", "?limit=5&limit=500", 400, "invalid_value"},
		{"GET", "?since=3%", 400, "invalid_value"}, // undecodable: not read as no since
		{"GET", "?limit=2%zz", 400, "invalid_value"},
		{"GET", "?since=3;limit=2", 400, "invalid_value"},
		{"POST", "", 405, "method_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.query, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, f.http.URL+"/events"+tt.query, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			checkError(t, resp, tt.status, tt.code)
		})
	}
	f.act.Stop()
	resp, err := http.Get(f.http.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	checkError(t, resp, http.StatusServiceUnavailable, "unavailable")
}

// A limit= that is no number is called so: "abc" was "out of range".
func TestRecentHandlerLimitSaysWhatIsWrong(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for _, tt := range []struct{ query, says string }{
		{"abc", `limit "abc" is not a number`},
		{"ten", `limit "ten" is not a number`},
		{"", `limit "" is not a number`},
		{"1.5", `limit "1.5" is not a count of events`},
		{"-5", `limit "-5" is not a count of events`},
		{"%2B5", `limit "+5" is not a count of events`},
		{"0", "limit 0 is out of range"},
		{"10001", "limit 10001 is out of range"},
		{"99999999999999999999999", "limit 99999999999999999999999 is out of range"},
	} {
		resp, err := http.Get(f.http.URL + "/events?limit=" + tt.query)
		if err != nil {
			t.Fatal(err)
		}
		var env struct{ Error, Code string }
		_ = json.NewDecoder(resp.Body).Decode(&env)
		_ = resp.Body.Close()
		if resp.StatusCode != 400 || env.Code != "invalid_value" || !strings.Contains(env.Error, tt.says) {
			t.Errorf("GET /events?limit=%s: %d %+v, want 400 invalid_value saying %q", tt.query, resp.StatusCode, env, tt.says)
		}
	}
}

// TestGoroutinesGoneAfterClose: every connection goroutine ends when the
// server closes.
func TestGoroutinesGoneAfterClose(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	defer sys.Shutdown()
	act, err := activity.Start(sys, activity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer act.Stop()
	http.DefaultClient.CloseIdleConnections()
	baseline := runtime.NumGoroutine()

	srv := events.NewServer(act, zerolog.Nop())
	hs := httptest.NewServer(srv)
	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/"
	var conns []*websocket.Conn
	for range 5 {
		c, _, err := websocket.DefaultDialer.Dial(url+"?since=0", nil)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	publishN(act, 1, 10)
	for _, c := range conns {
		for range 10 {
			read(t, c)
		}
	}
	srv.Close()
	for _, c := range conns {
		_ = c.Close()
	}
	hs.Close()
	hwtest.Eventually(t, waitLimit, "goroutines to return to the baseline", func() bool { return runtime.NumGoroutine() <= baseline })
}

// smallBufferListener shrinks the send buffer of every accepted connection.
type smallBufferListener struct{ net.Listener }

func (l smallBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// smallBufferDial connects a client with a small receive buffer, which it
// then never reads.
func smallBufferDial(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{
		NetDial: func(network, addr string) (net.Conn, error) {
			c, err := net.Dial(network, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4096)
			}
			return c, err
		},
	}
	c, _, err := d.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// readUntil1009 reads c until the server closes it, which must be with
// 1009 (message too big).
func readUntil1009(t *testing.T, c *websocket.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(waitLimit))
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
				t.Fatalf("closed with %v, want 1009", err)
			}
			return
		}
	}
}

// TestCloseBoundHoldsForAWriteInFlight: Close's bound runs from the Close,
// also for a write already blocked when it comes. A client that stops
// taking frames just before the Close, then takes them again, slowly,
// before that write's own deadline, must not get a second WriteTimeout
// for the rest of its queue. (The connection's writes are held in Go, by
// writeGate, not by TCP: a real window reopening after seconds at zero
// waits on the sender's persist timer, which would blur the timing.)
func TestCloseBoundHoldsForAWriteInFlight(t *testing.T) {
	const writeTimeout = 8 * time.Second
	gate := newWriteGate()
	f := newFixture(t, fixtureOptions{
		activity: activity.Options{QueueSize: 4096},
		socket:   events.SocketOptions{WriteTimeout: writeTimeout},
		listener: func(l net.Listener) net.Listener { return gatedListener{l, gate} },
	})
	c := f.dial(t, "")
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	payload := bytes.Repeat([]byte("p"), 256)
	gate.hold()
	for range 2000 {
		f.act.Publish(event.InvalidIOChannel(payload))
	}
	gate.waitHeld(t) // a write is blocked, its deadline WriteTimeout from its start
	start := time.Now()
	closed := make(chan time.Duration, 1)
	go func() { f.srv.Close(); closed <- time.Since(start) }()
	// The client takes frames again before the blocked write's deadline,
	// one every 20 ms: the queue would take 40 s.
	time.Sleep(writeTimeout - 3*time.Second)
	gate.releaseSlowly(20 * time.Millisecond)
	// A second for the close frame's answer, and slack for a busy machine:
	// a WriteTimeout from the first write after the Close would end about
	// 2×WriteTimeout−3 s after it.
	took := <-closed
	if bound := writeTimeout + 3*time.Second; took > bound {
		t.Fatalf("Close took %v, want under %v: WriteTimeout (%v) from the Close plus a second, and slack", took, bound, writeTimeout)
	}
}

// writeGate holds the writes of the connections a gatedListener accepted:
// while held, a write waits until released or until the connection's write
// deadline passes (read again as it waits, as the network poller does).
type writeGate struct {
	held     atomic.Bool
	slowNs   atomic.Int64 // once released: a pause before each write
	blocked  chan struct{}
	blockOne sync.Once
}

func newWriteGate() *writeGate { return &writeGate{blocked: make(chan struct{})} }

func (g *writeGate) hold() { g.held.Store(true) }

func (g *writeGate) releaseSlowly(pause time.Duration) {
	g.slowNs.Store(int64(pause))
	g.held.Store(false)
}

func (g *writeGate) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-g.blocked:
	case <-time.After(waitLimit):
		t.Fatal("no write was held")
	}
}

type gatedListener struct {
	net.Listener
	g *writeGate
}

func (l gatedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &gatedConn{Conn: c, g: l.g}, nil
}

type gatedConn struct {
	net.Conn
	g        *writeGate
	deadline atomic.Int64 // Unix ns; 0: none
}

func (c *gatedConn) SetWriteDeadline(t time.Time) error {
	c.setDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *gatedConn) SetDeadline(t time.Time) error {
	c.setDeadline(t)
	return c.Conn.SetDeadline(t)
}

func (c *gatedConn) setDeadline(t time.Time) {
	if t.IsZero() {
		c.deadline.Store(0)
		return
	}
	c.deadline.Store(t.UnixNano())
}

func (c *gatedConn) past() bool {
	d := c.deadline.Load()
	return d != 0 && time.Now().UnixNano() >= d
}

func (c *gatedConn) Write(b []byte) (int, error) {
	for c.g.held.Load() {
		c.g.blockOne.Do(func() { close(c.g.blocked) })
		if c.past() {
			return 0, os.ErrDeadlineExceeded
		}
		time.Sleep(5 * time.Millisecond)
	}
	if pause := time.Duration(c.g.slowNs.Load()); pause > 0 {
		for end := time.Now().Add(pause); time.Now().Before(end); time.Sleep(time.Millisecond) {
			if c.past() {
				return 0, os.ErrDeadlineExceeded
			}
		}
	}
	return c.Conn.Write(b)
}

// TestShutForEndsWithinTheContext: a service that stops within a budget
// shorter than WriteTimeout passes it to ShutFor, and the sockets are gone
// by its deadline even with a client that never reads; the client loses
// the rest of its queue, the stop is not late.
func TestShutForEndsWithinTheContext(t *testing.T) {
	f := newFixture(t, fixtureOptions{
		activity: activity.Options{QueueSize: 4096},
		socket:   events.SocketOptions{WriteTimeout: time.Minute},
		listener: func(l net.Listener) net.Listener { return smallBufferListener{l} },
	})
	smallBufferDial(t, f.url) // never read
	payload := bytes.Repeat([]byte("p"), 256)
	for range 2000 {
		f.act.Publish(event.InvalidIOChannel(payload))
	}
	settle(t, f.act)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	f.srv.ShutFor(ctx)
	if err := f.srv.Wait(ctx); err != nil {
		t.Fatalf("the sockets outlived the stop's budget: %v", err)
	}
	if n := f.srv.ClosedByReason()[protocol.CloseWriteTimeout]; n != 1 {
		t.Fatalf("closes by reason %v: want the stalled client counted as cut short (write_timeout)", f.srv.ClosedByReason())
	}
}

// TestHugeLengthGets1009: a frame announcing a length gorilla cannot hold
// (2^63 and more) is over the 64 KiB limit like any other: the client is
// told with 1009, not a bare end of the connection.
func TestHugeLengthGets1009(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c := f.dial(t, "")
	// A masked text frame, 64-bit length 2^63, then four bytes of mask.
	hdr := []byte{0x81, 0xFF, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}
	binary.BigEndian.PutUint64(hdr[2:10], 1<<63)
	if _, err := c.NetConn().Write(hdr); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(waitLimit))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		if !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
			t.Fatalf("closed with %v, want 1009", err)
		}
		return
	}
}
