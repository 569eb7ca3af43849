package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/schema"
	"github.com/hapticd/hapticd/transport/schematest"
)

// testService is a real service on 127.0.0.1 ports picked by the kernel,
// with a real state directory. Logs are off unless HAPTICD_TEST_LOG is set.
type testService struct {
	t        testing.TB
	svc      *actors.Service
	srv      *Server
	dir      string
	base     string // http://127.0.0.1:port of the 3.x listener
	legacy   string // http://127.0.0.1:port of the legacy listener
	eventsWS string // ws://127.0.0.1:port/ of the events listener
	armIDs   []string
	gripIDs  []string
	wiredIDs []string // wired grips (serviceConfig.wiredGrips)
	// otherArms are the arms of serviceConfig.armFamilies, by family.
	otherArms map[sim.Family][]string
	// schema validates every frame, event and HTTP answer the helpers
	// read against the schema this same service serves.
	schema *schematest.Validator
}

type serviceConfig struct {
	arms, grips  int
	dir          string
	aliases      string
	haplyNames   bool      // write the default (product) names instead of the reference's
	wiredGrips   int       // simulated grips on a cable, after the wireless ones
	armFamilies  sim.Fleet // arms of other families (minverse, inverse3x), after the Inverse3s
	allowOrigin  []string
	maxProfiles  int
	writeTimeout time.Duration
	motion       sim.Motion // the scripted hand on simulated devices
	// Failure injection (zero: none).
	wrapStore      func(actors.Store) actors.Store
	deviceHook     func(*actors.Device)
	sessionHook    func(*actors.Session)
	requestTimeout time.Duration
	wrapCodec      func(actors.Codec) actors.Codec
	recordDir      string // where POST /recordings writes
	recordTapTicks int    // each recorded device's ring (0: the default)
	maxConns       int    // each listener's connection limit (0: the default)
	port           int    // the HTTP port (0: a free one), for a service restarted where a client knows it
	eventRing      int    // recent events kept (0: the default)
	loopHz         int    // the loops' rate (0: 1000)
	simShards      int    // simulation scheduler shards (0: one, the tests' default; the binary runs one per CPU)
	ports          func() HardwarePorts
}

func testLogger() zerolog.Logger {
	if os.Getenv("HAPTICD_TEST_LOG") != "" {
		return zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).With().Timestamp().Logger()
	}
	return zerolog.Nop()
}

func startService(t testing.TB, cfg serviceConfig) *testService {
	t.Helper()
	if cfg.dir == "" {
		cfg.dir = t.TempDir()
	}
	aliases, err := protocol.ParseTypeAliases(cfg.aliases)
	if err != nil {
		t.Fatal(err)
	}
	// Today's tests speak the reference's names; the drop-in tests start
	// the service with the default naming (serviceConfig.naming).
	naming := protocol.NamingReference
	if cfg.haplyNames {
		naming = protocol.NamingHaply
	}
	types, err := protocol.NewNamedTypeTable(naming, aliases)
	if err != nil {
		t.Fatal(err)
	}
	goroutinesBefore := runtime.NumGoroutine()
	if cfg.loopHz == 0 {
		cfg.loopHz = 1000
	}
	if cfg.simShards == 0 {
		cfg.simShards = 1
	}
	svc, err := actors.Start(actors.Options{StateDir: cfg.dir, LoopHz: cfg.loopHz, Types: types, Log: testLogger(), SimShards: cfg.simShards, MaxStoredProfiles: cfg.maxProfiles,
		WrapStore: cfg.wrapStore, DeviceHook: cfg.deviceHook, SessionHook: cfg.sessionHook, RequestTimeout: cfg.requestTimeout, EventRingSize: cfg.eventRing})
	if err != nil {
		t.Fatal(err)
	}
	ts := &testService{t: t, svc: svc, dir: cfg.dir}
	for i := 0; i < cfg.arms; i++ {
		d, err := svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 1 / float64(cfg.loopHz), Motion: cfg.motion}), false)
		if err != nil {
			t.Fatal(err)
		}
		ts.armIDs = append(ts.armIDs, d.ID)
	}
	for i := 0; i < cfg.grips; i++ {
		d, err := svc.AddDevice(sim.NewGrip(sim.GripOptions{Index: i, PeriodS: 0.001, Motion: cfg.motion}), false)
		if err != nil {
			t.Fatal(err)
		}
		ts.gripIDs = append(ts.gripIDs, d.ID)
	}
	for _, e := range cfg.armFamilies {
		for i := 0; i < e.Count; i++ {
			d, err := svc.AddDevice(sim.NewDevice(e.Family, i, sim.ArmOptions{PeriodS: 0.001, Motion: cfg.motion}), false)
			if err != nil {
				t.Fatal(err)
			}
			if ts.otherArms == nil {
				ts.otherArms = map[sim.Family][]string{}
			}
			ts.otherArms[e.Family] = append(ts.otherArms[e.Family], d.ID)
		}
	}
	for i := 0; i < cfg.wiredGrips; i++ {
		d, err := svc.AddDevice(sim.NewGrip(sim.GripOptions{Index: i, PeriodS: 0.001, Family: sim.FamilyVerseGrip, Motion: cfg.motion}), false)
		if err != nil {
			t.Fatal(err)
		}
		ts.wiredIDs = append(ts.wiredIDs, d.ID)
	}
	srv, err := Start(Config{Service: svc, Log: testLogger(), Port: cfg.port, LegacyPort: 0, EventsPort: 0, AllowOrigins: cfg.allowOrigin, Build: BuildInfo{Version: "test"}, WriteTimeout: cfg.writeTimeout, WrapCodec: cfg.wrapCodec, RecordDir: cfg.recordDir, RecordTapTicks: cfg.recordTapTicks, MaxConnections: cfg.maxConns, Ports: cfg.ports})
	if err != nil {
		t.Fatal(err)
	}
	ts.srv = srv
	ts.base = "http://" + srv.Addr(ListenerHTTP).String()
	ts.legacy = "http://" + srv.Addr(ListenerLegacy).String()
	ts.eventsWS = "ws://" + srv.Addr(ListenerEvents).String() + "/"
	ts.schema = schematest.New(ts.base)
	t.Cleanup(func() {
		ts.schema.Close()
		ts.stop()
		// Every goroutine the service started must be gone (the HTTP client's
		// idle connections are closed first).
		http.DefaultClient.CloseIdleConnections()
		hwtest.EventuallyNil(t, 5*time.Second, "the service's goroutines to end", func() error {
			if n := runtime.NumGoroutine(); n > goroutinesBefore+2 {
				return fmt.Errorf("%d goroutines still running (%d before the service)", n, goroutinesBefore)
			}
			return nil
		})
	})
	return ts
}

func (ts *testService) stop() {
	if ts.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ts.srv.CloseSockets()
	if err := ts.svc.Shutdown(ctx); err != nil {
		ts.t.Errorf("service shutdown: %v", err)
	}
	if err := ts.srv.Shutdown(ctx); err != nil {
		ts.t.Errorf("server shutdown: %v", err)
	}
	ts.srv = nil
}

// reply is a decoded HTTP answer.
type reply struct {
	status int
	body   []byte
	env    map[string]any
}

func (r reply) data() any { return r.env["data"] }

func (r reply) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// do sends one request and fails the test when no answer comes. Only the
// test's goroutine may call it (t.Fatal); others use tryDo.
func (ts *testService) do(method, url, body string, headers ...string) reply {
	ts.t.Helper()
	r, err := ts.tryDo(method, url, body, headers...)
	if err != nil {
		ts.t.Fatal(err)
	}
	return r
}

// tryDo is do for any goroutine: it returns the error instead of ending the
// test, which only the test's goroutine may do (elsewhere t.Fatal ends the
// calling goroutine alone, and a test waiting on it hangs). Answers are
// still checked against the OpenAPI document, with t.Errorf.
func (ts *testService) tryDo(method, url, body string, headers ...string) (reply, error) {
	ts.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if strings.EqualFold(headers[i], "Host") {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, body: b}
	_ = json.Unmarshal(b, &r.env)
	ts.checkAnswer(req, resp, b)
	if method == http.MethodPost && resp.StatusCode == http.StatusOK {
		ts.checkRequest(req, body)
	}
	return r, nil
}

// checkedPath is the path of req in the terms of the 3.x OpenAPI document,
// and whether the answer is the service's to check: the legacy listener's
// routes are their 3.x twins under /3.0 (outside /3.0 it serves only the
// upgrade path and errors).
func (ts *testService) checkedPath(req *http.Request) (string, bool) {
	switch "http://" + req.URL.Host {
	case ts.base:
		return req.URL.Path, true
	case ts.legacy:
		p, _ := strings.CutPrefix(req.URL.Path, "/3.0")
		return p, true
	}
	return "", false
}

// checkRequest validates the body of a POST the service accepted against
// the request body the OpenAPI document declares.
func (ts *testService) checkRequest(req *http.Request, body string) {
	ts.t.Helper()
	if p, ok := ts.checkedPath(req); ok {
		if err := ts.schema.CheckRequest(req.Method, p, []byte(body)); err != nil {
			ts.t.Errorf("POST %s: accepted, but %v", req.URL, err)
		}
	}
}

// checkAnswer validates an HTTP answer against the OpenAPI document the
// service serves. Answers of the legacy listener are checked against their
// 3.x twins (the routes and bodies are the same) except GET /3.0/devices,
// whose inventory is in the 3.0 format the schema does not cover.
func (ts *testService) checkAnswer(req *http.Request, resp *http.Response, body []byte) {
	ts.t.Helper()
	p, ok := ts.checkedPath(req)
	legacyInventory := "http://"+req.URL.Host == ts.legacy && p == "/devices" && resp.StatusCode == http.StatusOK
	if !ok || req.Method == http.MethodHead || legacyInventory {
		return
	}
	if err := ts.schema.CheckAnswer(req.Method, p, resp.StatusCode, resp.Header.Get("Content-Type"), body); err != nil {
		ts.t.Errorf("%s %s: %v", req.Method, req.URL, err)
	}
}

// armIDInLowerCase is arm i's id and that id in lower case, for tests of
// ids named regardless of case; an id with no letter fails the test, which
// would not test anything.
func (ts *testService) armIDInLowerCase(i int) (id, lower string) {
	ts.t.Helper()
	id = ts.armIDs[i]
	lower = strings.ToLower(id)
	if lower == id {
		ts.t.Fatalf("arm id %q has no letter to lower", id)
	}
	return id, lower
}

// jsonEqual compares a decoded JSON value with a JSON literal.
func jsonEqual(t testing.TB, got any, want string) bool {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want literal %s: %v", want, err)
	}
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	return bytes.Equal(gb, wb)
}

// wsClient is a real WebSocket client with send/expect helpers. Every frame
// or event it reads is validated against the schema the service serves.
type wsClient struct {
	t    testing.TB
	conn *websocket.Conn
	kind socketKind
	// schema is the service's validator; frames counts what was read, so
	// that the first 3.x frame is checked as the inventory.
	schema *schematest.Validator
	frames int
	// stateSubset says the session subscribed to some arm state fields:
	// its state frames are checked as schema.StateFrameSubset.
	stateSubset bool
}

// socketKind is which of the service's sockets a client is on.
type socketKind int

const (
	socket3x socketKind = iota
	socketLegacy
	socketEvents
)

func (ts *testService) dial(t testing.TB, url string, headers ...string) *wsClient {
	t.Helper()
	h := http.Header{}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	conn, resp, err := websocket.DefaultDialer.Dial(url, h)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial %s: %v (status %d)", url, err, status)
	}
	c := &wsClient{t: t, conn: conn, schema: ts.schema}
	switch {
	case strings.HasPrefix(url, ts.eventsWS):
		c.kind = socketEvents
	case strings.HasPrefix(url, ts.legacyWS()):
		c.kind = socketLegacy
	}
	t.Cleanup(func() { _ = conn.Close() })
	return c
}

func (ts *testService) wsURL() string    { return "ws" + strings.TrimPrefix(ts.base, "http") + "/" }
func (ts *testService) legacyWS() string { return "ws" + strings.TrimPrefix(ts.legacy, "http") + "/" }

func (c *wsClient) send(msg string) {
	c.t.Helper()
	if err := c.conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// next reads the next frame or event by deadline, validates it against the
// served schema and decodes it.
func (c *wsClient) next(deadline time.Time) (map[string]any, error) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(deadline)
	_, b, err := c.conn.ReadMessage()
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		c.t.Fatalf("frame is not a JSON object: %v: %s", err, b)
	}
	c.frames++
	c.check(m, b)
	return m, nil
}

// check validates frame b (decoded: m) against the schema it must match.
func (c *wsClient) check(m map[string]any, b []byte) {
	c.t.Helper()
	if name := c.schemaName(m); name != "" {
		if err := c.schema.Check(name, b); err != nil {
			c.t.Errorf("frame %d: %v", c.frames, err)
		}
	}
}

// schemaName is the schema a frame read from this socket must match: the
// first 3.x frame read is the inventory (when the test did not read that
// one itself: an inventory carries the session's own view); a later frame
// with that view answers force_render_full_state. 3.0 frames are not
// covered.
func (c *wsClient) schemaName(m map[string]any) string {
	switch {
	case c.kind == socketEvents:
		return "event"
	case c.kind == socketLegacy:
		return ""
	case m["session"] == nil && c.stateSubset:
		return schema.StateFrameSubset
	case m["session"] == nil:
		return schema.StateFrame
	case c.frames == 1:
		return schema.InventoryFrame
	}
	return schema.FullStateFrame
}

// expect reads the next frame as JSON.
func (c *wsClient) expect() map[string]any {
	c.t.Helper()
	m, err := c.next(time.Now().Add(5 * time.Second))
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	return m
}

// roundTrip sends msg and returns its frame. A message the service accepted
// without errors must validate against the client-message schema: the
// schema must not refuse what the service takes.
func (c *wsClient) roundTrip(msg string) map[string]any {
	c.t.Helper()
	c.send(msg)
	f := c.expect()
	if c.kind == socket3x && f["errors"] == nil {
		if err := c.schema.Check("client-message", []byte(msg)); err != nil {
			c.t.Errorf("a message the service accepted: %v", err)
		}
	}
	return f
}

// path digs into decoded JSON: path("arm3", 0, "state", "cursor_position").
func path(v any, keys ...any) any { return hwtest.JSONPath(v, keys...) }

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}
