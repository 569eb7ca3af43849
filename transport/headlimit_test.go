package transport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/schema"
)

// TestRequestHeadOverTheLimitAnswersJSON: a request head over 64 KiB got
// net/http's own plain-text 431, written before any handler runs, where
// every other refusal of every listener answers the JSON error envelope.
// And the limit is the documented 64 KiB: net/http reads 4 KiB past its
// MaxHeaderBytes, so a 66 KiB head was served.
func TestRequestHeadOverTheLimitAnswersJSON(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	for _, listener := range []string{ListenerHTTP, ListenerLegacy, ListenerEvents} {
		for _, tc := range []struct {
			padKiB int
			over   bool
		}{{63, false}, {65, true}, {70, true}} {
			t.Run(fmt.Sprintf("%s/%dKiB", listener, tc.padKiB), func(t *testing.T) {
				addr := ts.srv.Addr(listener).String()
				c, err := net.DialTimeout("tcp", addr, limitWait)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(limitWait))
				head := fmt.Sprintf("GET /version HTTP/1.1\r\nHost: %s\r\nX-Padding: %s\r\n\r\n", addr, strings.Repeat("a", tc.padKiB<<10))
				wrote := make(chan error, 1)
				// The service answers before it has read the whole head.
				go func() { _, err := io.WriteString(c, head); wrote <- err }()
				resp, err := http.ReadResponse(bufio.NewReader(c), nil)
				if err != nil {
					t.Fatalf("reading the answer to a %d-byte head: %v", len(head), err)
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatalf("reading the answer's body: %v", err)
				}
				if !tc.over {
					if resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
						t.Fatalf("a %d-byte head, under 64 KiB: 431 (%q)", len(head), body)
					}
					<-wrote
					return
				}
				if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
					t.Fatalf("a %d-byte head, over 64 KiB: status %d, want 431; body %q", len(head), resp.StatusCode, body)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want application/json; body %q", ct, body)
				}
				var env struct {
					OK    *bool  `json:"ok"`
					Error string `json:"error"`
					Code  string `json:"code"`
				}
				if err := json.Unmarshal(body, &env); err != nil || env.OK == nil || *env.OK || env.Error == "" {
					t.Fatalf("body %q (%v), want the JSON error envelope", body, err)
				}
				if env.Code != string(protocol.CodeHeadersTooLarge) {
					t.Fatalf("code %q, want %q", env.Code, protocol.CodeHeadersTooLarge)
				}
				if !resp.Close {
					t.Errorf("the answer does not say Connection: close")
				}
				<-wrote // a reset of the write is fine: the head was refused
			})
		}
	}
}

// TestMalformedRequestsAnswerJSON: a request net/http refuses before any
// handler runs (a malformed request line, header or Host, an unsupported
// Transfer-Encoding or HTTP version, an Expect other than 100-continue)
// got net/http's own plain-text answer (417 with no body at all), where
// every other refusal answers the JSON error envelope with a code. Each is
// the envelope now, with Connection: close, and the connection closed; a
// POST refused so applies nothing.
func TestMalformedRequestsAnswerJSON(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	handedness := "/arm3/" + ts.armIDs[0] + "/config/handedness"
	// post is a POST of handedness "left" (the default is "right") with
	// extra header lines, framed by them.
	post := func(path, proto, headers string) string {
		return "POST " + path + " " + proto + "\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + headers + "\r\n"
	}
	tests := []struct {
		name, request string // the request, %s the POST's path
		status        int
		code          protocol.Code
	}{
		{"no Host", "GET /version HTTP/1.1\r\n\r\n", 400, protocol.CodeMalformedRequest},
		{"malformed Host", "GET /version HTTP/1.1\r\nHost: a b\r\n\r\n", 400, protocol.CodeMalformedRequest},
		{"invalid header name", "GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name: 1\r\n\r\n", 400, protocol.CodeMalformedRequest},
		{"control character in a header", "GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: a\x01b\r\n\r\n", 400, protocol.CodeMalformedRequest},
		{"malformed request line", "GARBAGE\r\n\r\n", 400, protocol.CodeMalformedRequest},
		{"two Content-Lengths", post("%s", "HTTP/1.1", "Content-Length: 6\r\nContent-Length: 7\r\n") + `"left"`, 400, protocol.CodeMalformedRequest},
		{"bad Content-Length", post("%s", "HTTP/1.1", "Content-Length: six\r\n") + `"left"`, 400, protocol.CodeMalformedRequest},
		{"unsupported Transfer-Encoding", post("%s", "HTTP/1.1", "Transfer-Encoding: gzip\r\n") + `"left"`, 501, protocol.CodeUnsupportedTransferEncoding},
		{"HTTP/2.1", "GET /version HTTP/2.1\r\nHost: 127.0.0.1\r\n\r\n", 505, protocol.CodeUnsupportedHTTPVersion},
		{"HTTP/0.9", "GET /version HTTP/0.9\r\nHost: 127.0.0.1\r\n\r\n", 505, protocol.CodeUnsupportedHTTPVersion},
		{"Expect other than 100-continue", post("%s", "HTTP/1.1", "Content-Length: 6\r\nExpect: 200-ok\r\n") + `"left"`, 417, protocol.CodeExpectationFailed},
		{"Expect over HTTP/1.0", post("%s", "HTTP/1.0", "Content-Length: 6\r\nExpect: 200-ok\r\n") + `"left"`, 417, protocol.CodeExpectationFailed},
	}
	for _, listener := range []string{ListenerHTTP, ListenerLegacy, ListenerEvents} {
		prefix := ""
		if listener == ListenerLegacy {
			prefix = protocol.LegacyRoutePrefix
		}
		for _, tc := range tests {
			t.Run(listener+"/"+tc.name, func(t *testing.T) {
				addr := ts.srv.Addr(listener).String()
				c, err := net.DialTimeout("tcp", addr, limitWait)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(limitWait))
				request := strings.Replace(tc.request, "%s", prefix+handedness, 1)
				if _, err := io.WriteString(c, request); err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(c)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("reading the answer to %q: %v", request, err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatalf("reading the answer's body: %v", err)
				}
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tc.status, body)
				}
				if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q, want application/json; body %q", ct, body)
				}
				var env struct {
					OK    *bool  `json:"ok"`
					Error string `json:"error"`
					Code  string `json:"code"`
				}
				if err := json.Unmarshal(body, &env); err != nil || env.OK == nil || *env.OK || env.Error == "" {
					t.Fatalf("body %q (%v), want the JSON error envelope", body, err)
				}
				if env.Code != string(tc.code) {
					t.Fatalf("code %q, want %q; body %q", env.Code, tc.code, body)
				}
				if err := ts.schema.Check(schema.ErrorEnvelopeName(0), body); err != nil {
					t.Errorf("body %q: %v", body, err)
				}
				if !resp.Close {
					t.Errorf("the answer does not say Connection: close")
				}
				// The connection ends after the answer: nothing more comes.
				if n, err := br.Read(make([]byte, 1)); err == nil {
					t.Errorf("%d more bytes after the answer, want the connection closed", n)
				} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Errorf("the connection stays open after the answer")
				}
			})
		}
	}
	// None of the refused POSTs applied its handedness.
	for _, base := range []string{ts.base, ts.legacy + protocol.LegacyRoutePrefix} {
		if r := ts.do("GET", base+handedness, ""); !jsonEqual(t, r.data(), `"right"`) {
			t.Errorf("GET %s: %s, want the default \"right\": a refused POST applied", base+handedness, r)
		}
	}
}
