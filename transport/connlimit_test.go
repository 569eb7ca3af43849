package transport

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol/event"
)

// limitWait bounds each wait for the service to see a connection come or go.
const limitWait = 10 * time.Second

// holdKeepAlive makes one request on a new connection and leaves it open
// and idle (HTTP keep-alive). It returns the connection and the status.
func holdKeepAlive(t *testing.T, hostport, path string) (net.Conn, int) {
	t.Helper()
	c, err := net.DialTimeout("tcp", hostport, limitWait)
	if err != nil {
		t.Fatalf("dial %s: %v", hostport, err)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+hostport+path, nil)
	_ = c.SetDeadline(time.Now().Add(limitWait))
	if err := req.Write(c); err != nil {
		c.Close()
		t.Fatalf("request on %s: %v", hostport, err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), req)
	if err != nil {
		c.Close()
		t.Fatalf("answer on %s: %v", hostport, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetDeadline(time.Time{})
	return c, resp.StatusCode
}

// holdOnlyPlace holds the one place of a listener limited to one
// connection with an idle keep-alive connection, once the connections
// before it are gone; the caller closes it.
func holdOnlyPlace(t *testing.T, hostport string) net.Conn {
	t.Helper()
	var held net.Conn
	hwtest.EventuallyNil(t, limitWait, "the one place held by a keep-alive connection", func() error {
		c, status := holdKeepAlive(t, hostport, "/version")
		if status != http.StatusOK {
			c.Close()
			return fmt.Errorf("status %d", status)
		}
		held = c
		return nil
	})
	return held
}

// dialServed opens a WebSocket, retrying while the listener still counts
// connections the test closed a moment ago.
func dialServed(t *testing.T, url string) *websocket.Conn {
	t.Helper()
	var conn *websocket.Conn
	hwtest.EventuallyNil(t, limitWait, "a WebSocket on "+url, func() error {
		c, resp, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			if resp != nil {
				return fmt.Errorf("%w (status %d)", err, resp.StatusCode)
			}
			return err
		}
		conn = c
		return nil
	})
	return conn
}

type probeAnswer struct {
	status     int
	retryAfter string
	closes     bool
	code       string
}

// probe makes one request on a connection of its own.
func probe(t *testing.T, url string) probeAnswer {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: limitWait}
	defer client.CloseIdleConnections()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	return answerOf(t, resp)
}

func answerOf(t *testing.T, resp *http.Response) probeAnswer {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	a := probeAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), closes: resp.Close}
	if resp.StatusCode == http.StatusServiceUnavailable {
		var env struct {
			OK    *bool  `json:"ok"`
			Error string `json:"error"`
			Code  string `json:"code"`
		}
		if err := json.Unmarshal(b, &env); err != nil || env.OK == nil || *env.OK || env.Error == "" || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("a 503 answered %q (%s), want the JSON error envelope", b, resp.Header.Get("Content-Type"))
		}
		a.code = env.Code
	}
	return a
}

// Each listener serves at most MaxConnections connections, WebSockets and
// idle keep-alive connections alike; past it a new connection gets 503
// with the JSON error and Retry-After, a WebSocket dial the same before any
// upgrade, while the connections open go on and the other listeners serve.
// Before the limit, a client opening sockets in a loop took a descriptor
// and goroutines per connection without bound.
func TestConnectionLimitPerListener(t *testing.T) {
	const limit = 3
	ts := startService(t, serviceConfig{arms: 1, maxConns: limit})
	// Load the schema the frames are checked against before the
	// listeners fill, then let the shared client's connection go.
	ts.do(http.MethodGet, ts.base+"/version", "")
	http.DefaultClient.CloseIdleConnections()

	host := func(base string) string { return strings.TrimSuffix(strings.TrimPrefix(base, "ws://"), "/") }
	listeners := []struct {
		name, ws, probe string
		// stillServes proves an open socket works while the listener is full.
		stillServes func(t *testing.T, c *websocket.Conn)
	}{
		{"http", ts.wsURL(), ts.base + "/version", sessionServes},
		{"legacy", ts.legacyWS(), ts.legacy + "/3.0/version", sessionServes},
		{"events", ts.eventsWS, "http://" + host(ts.eventsWS) + "/", func(t *testing.T, c *websocket.Conn) {
			ts.svc.Activity().Publish(event.InvalidIOChannel([]byte("still served")))
			_ = c.SetReadDeadline(time.Now().Add(limitWait))
			// Events of the subtests before (their sessions ending) may
			// come first: read until the one just published.
			for {
				_, msg, err := c.ReadMessage()
				if err != nil {
					t.Fatalf("the open events socket: %v; want the event just published", err)
				}
				if strings.Contains(string(msg), event.NameInvalidIOChannel) && strings.Contains(string(msg), "still served") {
					return
				}
			}
		}},
	}
	for i, l := range listeners {
		t.Run(l.name, func(t *testing.T) {
			// One idle keep-alive connection and limit-1 WebSockets.
			var ka net.Conn
			hwtest.EventuallyNil(t, limitWait, "an idle keep-alive connection", func() error {
				u, err := url.Parse(l.probe)
				if err != nil {
					t.Fatal(err)
				}
				c, status := holdKeepAlive(t, u.Host, u.Path)
				if status == http.StatusServiceUnavailable {
					c.Close()
					return errors.New("refused (503)")
				}
				ka = c
				return nil
			})
			defer ka.Close()
			var socks []*websocket.Conn
			defer func() {
				for _, c := range socks {
					c.Close()
				}
			}()
			for range limit - 1 {
				socks = append(socks, dialServed(t, l.ws))
			}

			if got := probe(t, l.probe); got.status != http.StatusServiceUnavailable || got.code != "unavailable" || got.retryAfter != "1" || !got.closes {
				t.Fatalf("a request past the limit: %+v; want 503 unavailable, Retry-After 1, and the connection closed", got)
			}
			c, resp, err := websocket.DefaultDialer.Dial(l.ws, nil)
			if err == nil {
				c.Close()
				t.Fatal("a WebSocket past the limit was upgraded")
			}
			if resp == nil {
				t.Fatalf("a WebSocket past the limit: %v, with no HTTP answer", err)
			}
			if got := answerOf(t, resp); got.status != http.StatusServiceUnavailable || got.code != "unavailable" || got.retryAfter != "1" {
				t.Fatalf("a WebSocket past the limit: %+v; want 503 unavailable, Retry-After 1", got)
			}
			l.stillServes(t, socks[0])
			other := listeners[(i+1)%len(listeners)]
			if got := probe(t, other.probe); got.status == http.StatusServiceUnavailable {
				t.Fatalf("the %s listener refused while only %s is full: %+v", other.name, l.name, got)
			}

			// A closed socket frees its place.
			socks[0].Close()
			hwtest.EventuallyNil(t, limitWait, "a request served once a socket closed", func() error {
				if got := probe(t, l.probe); got.status == http.StatusServiceUnavailable {
					return fmt.Errorf("still refused: %+v", got)
				}
				return nil
			})
		})
	}
	// Operators see the limit and the refusals (a request and a
	// WebSocket per listener), and this scrape's own connection.
	m := ts.scrape(t)
	for _, name := range []string{ListenerHTTP, ListenerLegacy, ListenerEvents} {
		if got := m.value("hapticd_connections_refused_total", "listener="+name); got < 2 {
			t.Errorf("hapticd_connections_refused_total{listener=%q} = %v, want 2 or more", name, got)
		}
		if got := m.value("hapticd_connections_limit", "listener="+name); got != limit {
			t.Errorf("hapticd_connections_limit{listener=%q} = %v, want %d", name, got, limit)
		}
	}
	if got := m.value("hapticd_connections", "listener="+ListenerHTTP); got < 1 {
		t.Errorf("hapticd_connections{listener=http} = %v with the scrape's connection open, want 1 or more", got)
	}
}

// sessionServes reads an open session's inventory, then the answer to a
// message.
func sessionServes(t *testing.T, c *websocket.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limitWait))
	if _, _, err := c.ReadMessage(); err != nil {
		t.Fatalf("the open session's inventory: %v", err)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{}`)); err != nil {
		t.Fatalf("the open session took no message: %v", err)
	}
	if _, _, err := c.ReadMessage(); err != nil {
		t.Fatalf("the open session answered nothing: %v", err)
	}
}

// acceptCounted is a connection a limit listener accepted, its peer and
// the listener; the test's cleanup closes them.
func acceptCounted(t *testing.T) (c, peer net.Conn, l *limitListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l = newLimitListener(ln, "test", 1, false)
	t.Cleanup(func() { l.Close() })
	peer, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	c, err = l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return c, peer, l
}

// TestCountedConnWritesVectors: a frame in parts leaves a counted
// connection whole and in order, through the session's vector path.
func TestCountedConnWritesVectors(t *testing.T) {
	c, peer, l := acceptCounted(t)
	vw, ok := c.(vectorWriter)
	if !ok {
		t.Fatalf("an accepted connection (%T) has no vector write", c)
	}
	parts := [][]byte{[]byte("head"), []byte("-shared-"), []byte("tail")}
	if n, err := vw.WriteVectors(parts); n != 16 || err != nil {
		t.Fatalf("WriteVectors wrote %d, %v; want 16", n, err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	_ = peer.SetReadDeadline(time.Now().Add(limitWait))
	got, err := io.ReadAll(peer)
	if err != nil || string(got) != "head-shared-tail" {
		t.Fatalf("the peer read %q, %v", got, err)
	}
	if n := l.open.Load(); n != 0 {
		t.Fatalf("%d connections counted after the only one closed", n)
	}
}

// A flood past the limit is not answered one by one: while 64 refused
// connections are still being answered (these send no request), a new
// one is closed at accept, unanswered; once they go, refusals are answered
// again.
func TestConnectionFloodPastTheLimitIsClosedAtAccept(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, maxConns: 1})
	hostport := strings.TrimSuffix(strings.TrimPrefix(ts.eventsWS, "ws://"), "/")
	ws := dialServed(t, ts.eventsWS)
	defer ws.Close()
	silent := make([]net.Conn, 0, refusingSlots)
	defer func() {
		for _, c := range silent {
			c.Close()
		}
	}()
	for range refusingSlots {
		c, err := net.DialTimeout("tcp", hostport, limitWait)
		if err != nil {
			t.Fatal(err)
		}
		silent = append(silent, c)
	}
	// Accepts are in order: the next connection finds every refusing
	// place taken once the last silent one has been accepted, which a
	// probe cannot see; so wait for one closed unanswered.
	hwtest.EventuallyNil(t, limitWait, "a connection closed at accept", func() error {
		c, err := net.DialTimeout("tcp", hostport, limitWait)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		n, err := c.Read(make([]byte, 1))
		if n == 0 && err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return nil // closed by the service without a byte
		}
		return fmt.Errorf("read %d bytes, %v", n, err)
	})
	for _, c := range silent {
		c.Close()
	}
	silent = silent[:0]
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: limitWait}
	defer client.CloseIdleConnections()
	hwtest.EventuallyNil(t, limitWait, "refusals answered again", func() error {
		resp, err := client.Get("http://" + hostport + "/")
		if err != nil {
			return err // closed at accept still: the silent ones are not all gone
		}
		defer resp.Body.Close()
		if got := answerOf(t, resp); got.status != http.StatusServiceUnavailable || got.code != "unavailable" {
			return fmt.Errorf("%+v, want 503 unavailable", got)
		}
		return nil
	})
}

// TestRefusedRequestWithABodyLeavesAtOnce: a request refused over the limit
// that announces a body it never sends is answered and closed at once, not
// held while net/http would read the body (up to ReadTimeout, 30 s): 64
// such clients would hold every refusal place and leave every other client
// over the limit closed unanswered.
func TestRefusedRequestWithABodyLeavesAtOnce(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, maxConns: 1})
	hostport := strings.TrimSuffix(strings.TrimPrefix(ts.eventsWS, "ws://"), "/")
	ws := dialServed(t, ts.eventsWS) // the one place
	defer ws.Close()
	c, err := net.DialTimeout("tcp", hostport, limitWait)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = c.SetReadDeadline(time.Now().Add(time.Minute))
	answer, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the refusal: %v (after %v)", err, time.Since(start))
	}
	if !strings.HasPrefix(string(answer), "HTTP/1.1 503") {
		t.Fatalf("answer %q, want a 503", answer)
	}
	// ReadHeaderTimeout (5 s) is the bound a refusal place is held by a
	// client; the body's read would take ReadTimeout (30 s).
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the refused connection was closed %v after its request: its refusal place was held while the body was waited for", took)
	}
}

// readFromSpy is a connection that notes a ReadFrom reaching it.
type readFromSpy struct {
	*net.TCPConn
	reached bool
}

func (s *readFromSpy) ReadFrom(r io.Reader) (int64, error) {
	s.reached = true
	return s.TCPConn.ReadFrom(r)
}

// TestCountedConnKeepsTheTCPConnsMethods: the counting wrapper hid
// ReadFrom and CloseWrite of the *net.TCPConn under it. net/http copies a
// body from a file with the connection's ReadFrom (sendfile), which the
// wrapper turned into a plain copy; and it half-closes (CloseWrite) before
// its last wait when it answers a request it did not read whole (a refusal
// over the limit, a 431), so that the client reads the answer and a FIN
// rather than a reset.
func TestCountedConnKeepsTheTCPConnsMethods(t *testing.T) {
	c, peer, _ := acceptCounted(t)
	defer c.Close()
	_ = peer.SetReadDeadline(time.Now().Add(limitWait))
	_ = c.SetReadDeadline(time.Now().Add(limitWait))

	// ReadFrom: a file's bytes reach the peer through the TCP
	// connection's own ReadFrom.
	rf, ok := c.(io.ReaderFrom)
	if !ok {
		t.Fatalf("an accepted connection (%T) has no ReadFrom: net/http copies a file into it without sendfile", c)
	}
	f, err := os.CreateTemp(t.TempDir(), "body")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("file body|"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if n, err := rf.ReadFrom(f); n != 10 || err != nil {
		t.Fatalf("ReadFrom copied %d, %v; want 10", n, err)
	}
	spy := &readFromSpy{TCPConn: c.(*countedConn).TCPConn()}
	if _, err := any(&countedConn{Conn: spy}).(io.ReaderFrom).ReadFrom(strings.NewReader("spied|")); err != nil || !spy.reached {
		t.Fatalf("ReadFrom (%v) did not reach the TCP connection's own", err)
	}

	// CloseWrite: the peer reads everything, then EOF, and the service
	// still reads what the peer sends.
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatalf("an accepted connection (%T) has no CloseWrite: net/http cannot half-close it", c)
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(peer) // ends at the FIN
	if err != nil || string(got) != "file body|spied|" {
		t.Fatalf("the peer read %q, %v; want what was written, then EOF", got, err)
	}
	if _, err := io.WriteString(peer, "more"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "more" {
		t.Fatalf("after CloseWrite the service read %q, %v; want what the peer sent", buf, err)
	}
}
