package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// TestSessionEndReasons ends a session in each way a client can cause and
// checks what the client, the events socket and GET /sessions/closed (on
// both ports) report.
func TestSessionEndReasons(t *testing.T) {
	tests := []struct {
		reason protocol.CloseReason
		// end makes the session end; it returns the close code the client
		// read, or 0 when the client cannot read one (it left).
		end func(t *testing.T, ts *testService, c *wsClient) int
	}{
		{protocol.CloseClientClosed, func(t *testing.T, _ *testService, c *wsClient) int {
			if err := c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			return readCloseCode(t, c)
		}},
		{protocol.CloseReadError, func(t *testing.T, _ *testService, c *wsClient) int {
			_ = c.conn.UnderlyingConn().Close() // gone without a close frame
			return 0
		}},
		{protocol.CloseMessageTooBig, func(t *testing.T, _ *testService, c *wsClient) int {
			c.send(`{"pad":"` + strings.Repeat("x", protocol.MaxMessageBytes) + `"}`)
			return readCloseCode(t, c)
		}},
		{protocol.CloseProtocolViolation, func(t *testing.T, _ *testService, c *wsClient) int {
			// A text frame without the mask RFC 6455 requires of clients.
			if _, err := c.conn.UnderlyingConn().Write([]byte{0x81, 0x02, '{', '}'}); err != nil {
				t.Fatal(err)
			}
			return readCloseCode(t, c)
		}},
		{protocol.CloseShutdown, func(t *testing.T, ts *testService, c *wsClient) int {
			ts.srv.conns.closeAll(protocol.CloseShutdown) // CloseSockets would close the events socket too
			return readCloseCode(t, c)
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.reason), func(t *testing.T) {
			ts := startService(t, serviceConfig{arms: 1})
			ev := ts.dial(t, ts.eventsWS)
			c := ts.dial(t, ts.wsURL())
			sid := path(c.expect(), "session_id")
			if code := tt.end(t, ts, c); code != 0 && code != tt.reason.CloseCode() {
				t.Fatalf("client read close code %d, want %d", code, tt.reason.CloseCode())
			}
			e := waitEvent(t, ev, "session-ended", func(e map[string]any) bool { return path(e, "data", "session_id") == sid })
			if got := path(e, "data", "reason"); got != string(tt.reason) {
				t.Fatalf("session-ended reason %v, want %s: %v", got, tt.reason, e)
			}
			if got := num(path(e, "data", "close_code")); int(got) != tt.reason.CloseCode() {
				t.Fatalf("session-ended close_code %v, want %d", got, tt.reason.CloseCode())
			}
			for _, base := range []string{ts.base, ts.legacy + "/3.0"} {
				r := ts.do("GET", base+"/sessions/closed", "")
				closed, _ := path(r.env, "data", "closed").([]any)
				if r.status != 200 || len(closed) != 1 {
					t.Fatalf("GET %s/sessions/closed: %v", base, r)
				}
				if path(closed[0], "session_id") != sid || path(closed[0], "reason") != string(tt.reason) || path(closed[0], "closed_at") == nil {
					t.Fatalf("GET %s/sessions/closed: %v, want session %v ended by %s", base, closed[0], sid, tt.reason)
				}
			}
		})
	}
}

// TestWriteTimeoutEndsTheSession has a client that sends and never reads:
// once the socket buffers are full, a frame write outlasts the write
// timeout, the listeners' watchdog ends it, and the session ends with
// write_timeout.
func TestWriteTimeoutEndsTheSession(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1, writeTimeout: 200 * time.Millisecond})
	ev := ts.dial(t, ts.eventsWS)
	c := ts.dial(t, ts.wsURL())
	sid := path(c.expect(), "session_id")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // full-state frames are large: the buffers fill fast
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
			if c.conn.WriteMessage(websocket.TextMessage, []byte(`{"session":{"force_render_full_state":{}}}`)) != nil {
				return
			}
		}
	}()
	defer func() { close(stop); <-done }()
	var e map[string]any
	hwtest.EventuallyNil(t, 30*time.Second, "the session to end on its write timeout",
		nextEventMatches(t, ev, 30*time.Second, "session-ended", func(e map[string]any) bool { return path(e, "data", "session_id") == sid }, &e))
	if got := path(e, "data", "reason"); got != string(protocol.CloseWriteTimeout) {
		t.Fatalf("session-ended reason %v, want write_timeout", got)
	}
	closed, _ := path(ts.do("GET", ts.base+"/sessions/closed", "").env, "data", "closed").([]any)
	if len(closed) != 1 || path(closed[0], "reason") != string(protocol.CloseWriteTimeout) {
		t.Fatalf("GET /sessions/closed: %v", closed)
	}
}

// TestShutdownEndsAStalledFrameWrite: a client that stops reading leaves
// a frame write blocked when the service shuts down; the shutdown still
// completes within the write timeout, because the write watchdog runs
// until the last connection is gone.
func TestShutdownEndsAStalledFrameWrite(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1, writeTimeout: 2 * time.Second})
	c := ts.dial(t, ts.wsURL())
	c.expect()
	// Send without reading until a send blocks: the service has stopped
	// reading, its frame write stalled on the full socket buffers.
	hwtest.Eventually(t, 30*time.Second, "a send to block (the service kept reading a client that never reads)", func() bool {
		_ = c.conn.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
		return c.conn.WriteMessage(websocket.TextMessage, []byte(`{"session":{"force_render_full_state":{}}}`)) != nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ts.srv.CloseSockets()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a stalled frame write: %v", err)
	}
}

// A client stalled in the middle of a request body (its Content-Length
// not sent in full) does not fail the stop: the connection is cut at the
// stop's deadline and Shutdown answers nil soon after, so the process exits
// 0 with its stopped line. net/http's Shutdown waits for such a request
// and answered the deadline's error: the service exited 1 after 5 s.
func TestShutdownCutsAStalledUpload(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /settings/force_scale HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	// The request is in its handler, reading the body, when the stop comes.
	hwtest.EventuallyNil(t, 10*time.Second, "the stalled request counted among the open connections", func() error {
		if ts.srv.connCounts()[ListenerHTTP].open == 0 {
			return fmt.Errorf("no open connection yet")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	ts.srv.CloseSockets()
	start := time.Now()
	if err := ts.srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown with a stalled upload: %v", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond+forcedStopGrace {
		t.Errorf("shutdown took %v, want within its deadline and the grace", took)
	}
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadAll(conn); err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Error("the stalled upload's connection is still open after the stop")
		}
	}
	svcCtx, svcCancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer svcCancel()
	if err := ts.svc.Shutdown(svcCtx); err != nil {
		t.Errorf("service shutdown: %v", err)
	}
	ts.srv = nil // stopped here
}

// readCloseCode reads until the connection ends and returns the close code
// the server sent; it fails the test on anything but a close frame (a TCP
// reset, a timeout).
func readCloseCode(t *testing.T, c *wsClient) int {
	t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := c.conn.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !asCloseError(err, &ce) {
			t.Fatalf("want a close frame, got %v", err)
		}
		return ce.Code
	}
}

func asCloseError(err error, ce **websocket.CloseError) bool {
	e, ok := err.(*websocket.CloseError)
	*ce = e
	return ok
}

// TestOversizeAlwaysCloses1009 sends many single-frame messages over the
// limit, on both formats: every try must end with close 1009 read by the
// client, never a TCP reset (which a server closing with the rest of the
// message unread causes some of the time).
func TestOversizeAlwaysCloses1009(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	big := []byte(`{"pad":"` + strings.Repeat("x", protocol.MaxMessageBytes+protocol.MaxMessageBytes/2) + `"}`)
	for _, url := range []string{ts.wsURL(), ts.legacyWS()} {
		for i := 0; i < 20; i++ {
			c := ts.dial(t, url)
			c.expect()
			if err := c.conn.WriteMessage(websocket.TextMessage, big); err != nil {
				t.Fatalf("%s try %d: write: %v", url, i, err)
			}
			if code := readCloseCode(t, c); code != websocket.CloseMessageTooBig {
				t.Fatalf("%s try %d: close code %d, want 1009", url, i, code)
			}
			_ = c.conn.Close()
		}
	}
}

// TestHandshakeErrorsAnswerTheEnvelope sends upgrade requests gorilla
// refuses: the answer is the JSON error envelope on each of the three
// ports that take a WebSocket (3.x, legacy 3.0, events), never gorilla's
// plain-text Bad Request, and says what is wrong in the service's words:
// the legacy and events ports passed the library's text through
// ("websocket: not a websocket handshake: 'Sec-WebSocket-Key' header must
// be Base64 encoded value of 16-byte in length"), and the legacy port
// answered a POST upgrade "websocket: the client is not using the
// websocket protocol" where the 3.x port says "POST is not supported on
// /". The method is checked first: a POST answers 405 whatever its headers
// or since= (the events port answered a bad since= 400).
func TestHandshakeErrorsAnswerTheEnvelope(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	const key = "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	for _, port := range []struct{ name, addr string }{
		{"3.x", strings.TrimPrefix(ts.base, "http://")},
		{"legacy 3.0", strings.TrimPrefix(ts.legacy, "http://")},
		{"events", strings.TrimSuffix(strings.TrimPrefix(ts.eventsWS, "ws://"), "/")},
	} {
		t.Run(port.name, func(t *testing.T) {
			for _, tt := range []struct {
				method, target, headers string
				status                  int
				code, says              string
			}{
				{"GET", "/", "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n", 400, "bad_handshake", "no Sec-WebSocket-Key header"},
				{"GET", "/", "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: abc\r\n", 400, "bad_handshake", `Sec-WebSocket-Key "abc" is not the base64 of 16 bytes`},
				{"GET", "/", "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 8\r\n" + key, 400, "bad_handshake", `Sec-WebSocket-Version is "8"`},
				{"GET", "/", "Upgrade: websocket\r\nConnection: Upgrade\r\n" + key, 400, "bad_handshake", "no Sec-WebSocket-Version header"},
				{"GET", "/", "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" + key, 400, "bad_handshake", "no Connection: Upgrade header"},
				{"GET", "/", "Upgrade: websocket\r\nConnection: keep-alive\r\nSec-WebSocket-Version: 13\r\n" + key, 400, "bad_handshake", `Connection header is "keep-alive"`},
				{"POST", "/", "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n" + key, 405, "method_not_allowed", "POST is not supported on /"},
				{"POST", "/", "Upgrade: websocket\r\nContent-Length: 0\r\n", 405, "method_not_allowed", "POST is not supported on /"},
				{"POST", "/", "Content-Length: 0\r\n", 405, "method_not_allowed", "POST is not supported on /"}, // the legacy port answered its root document
				{"PUT", "/", "Content-Length: 0\r\n", 405, "method_not_allowed", "PUT is not supported on /"},
				{"POST", "/?since=abc", "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n" + key, 405, "method_not_allowed", "POST is not supported on /"},
			} {
				resp := rawRequest(t, port.addr, tt.method+" "+tt.target+" HTTP/1.1\r\nHost: "+port.addr+"\r\n"+tt.headers+"\r\n")
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" {
					t.Fatalf("%s %s %q: %d %s %s, want %d and the JSON envelope", tt.method, tt.target, tt.headers, resp.StatusCode, resp.Header.Get("Content-Type"), body, tt.status)
				}
				var env map[string]any
				if err := json.Unmarshal(body, &env); err != nil || env["ok"] != false || env["code"] != tt.code || env["error"] == "" {
					t.Fatalf("%s %s %q: body %s, want the envelope with code %s", tt.method, tt.target, tt.headers, body, tt.code)
				}
				msg, _ := env["error"].(string)
				if !strings.Contains(msg, tt.says) || strings.Contains(msg, "websocket:") {
					t.Errorf("%s %s %q: %q, want it to say %q in the service's words, not the library's", tt.method, tt.target, tt.headers, msg, tt.says)
				}
				if tt.status == 405 && !strings.Contains(resp.Header.Get("Allow"), "GET") {
					t.Errorf("%s %s %q: 405 with Allow %q, want GET in it", tt.method, tt.target, tt.headers, resp.Header.Get("Allow"))
				}
			}
		})
	}
}

// rawRequest sends req as written on a new connection: the Go client would
// fill in the headers these tests leave out.
func rawRequest(t *testing.T, addr, req string) *http.Response {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprint(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestManyWarningsSmallFrame sends a message of 60,000 unknown fields: the
// frame lists MaxWarnings of them and counts the rest, far under 64 KiB, and
// the session goes on.
func TestManyWarningsSmallFrame(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	var b strings.Builder
	fmt.Fprintf(&b, `{"arm3":[{"device_id":%q,"configure":{"force_gate":{"gain":0.5`, id)
	for i := 0; i < 60000; i++ {
		fmt.Fprintf(&b, `,"u%05d":1`, i)
	}
	b.WriteString(`}}}]}`)
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.send(b.String())
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, raw, err := c.conn.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) >= 64<<10 {
		t.Fatalf("a frame of %d bytes answers 60,000 unknown fields", len(raw))
	}
	var f map[string]any
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	w, _ := f["warnings"].([]any)
	if len(w) != protocol.MaxWarnings+1 || path(w[protocol.MaxWarnings], "code") != "warnings_dropped" ||
		!strings.HasPrefix(path(w[protocol.MaxWarnings], "message").(string), fmt.Sprint(60000-protocol.MaxWarnings)+" more") {
		t.Fatalf("%d warnings, last %v", len(w), w[len(w)-1])
	}
	// A message of 20,000 bad device entries: errors are capped alike.
	b.Reset()
	b.WriteString(`{"arm3":[`)
	for i := 0; i < 20000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"device_id":%q,"configure":{"damping":1}}`, id)
	}
	b.WriteString(`]}`)
	c.send(b.String())
	if _, raw, err = c.conn.ReadMessage(); err != nil || len(raw) >= 64<<10 {
		t.Fatalf("a frame of %d bytes (%v) answers 20,000 bad entries", len(raw), err)
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	if e, _ := f["errors"].([]any); len(e) != protocol.MaxErrors+1 || path(e[protocol.MaxErrors], "code") != "errors_dropped" {
		t.Fatalf("%d errors, last %v", len(e), e[len(e)-1])
	}
	// The known part applied, and the session goes on.
	f = c.roundTrip(`{"session":{"force_render_full_state":{}}}`)
	if num(path(f, "arm3", 0, "config", "filters", "force_gate", "gain")) != 0.5 {
		t.Fatalf("force_gate after the message: %v", path(f, "arm3", 0, "config", "filters"))
	}
}
