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
