package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Limits against a mistyped or hostile command line are refused before
// anything starts, with the flag named: --event-ring 2000000000 asked the
// activity actor for a 240 GB ring, and 0 quietly meant 4096.
func TestResourceLimitFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--event-ring", "2000000000"}, "--event-ring"},
		{[]string{"--event-ring", "65537"}, "--event-ring"},
		{[]string{"--event-ring", "0"}, "--event-ring"},
		{[]string{"--event-ring", "-1"}, "--event-ring"},
		{[]string{"--event-ring", "65536"}, ""},
		{[]string{"--event-ring", "1"}, ""},
		{[]string{"--event-ring", "4096"}, ""},
		{[]string{"--max-connections", "0"}, "--max-connections"},
		{[]string{"--max-connections", "-5"}, "--max-connections"},
		{[]string{"--max-connections", "1"}, ""},
		{[]string{"--max-connections", "100000"}, ""},
		{[]string{"--write-timeout", "0"}, "--write-timeout"},
		{[]string{"--write-timeout", "-1s"}, "--write-timeout"},
		{[]string{"--write-timeout", "99ms"}, "--write-timeout"},
		{[]string{"--write-timeout", "61s"}, "--write-timeout"},
		{[]string{"--write-timeout", "100ms"}, ""},
		{[]string{"--write-timeout", "1m"}, ""},
		{[]string{"--write-timeout", "5s"}, ""},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want one naming %s", tt.args, err, tt.wantErr)
		}
	}
}

// --max-connections reaches every listener of the real binary: with 1,
// an open events socket fills the events port, and the next request there
// is answered 503 while the HTTP port still serves.
func TestMaxConnectionsFlag(t *testing.T) {
	d := startProcess(t, buildBinary(t), "--max-connections", "1", "--sim-arms", "0", "--sim-grips", "0", "--state-dir", t.TempDir())
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+d.addr["events"]+"/", nil)
	if err != nil {
		t.Fatalf("the first events socket: %v", err)
	}
	defer ws.Close()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get("http://" + d.addr["events"] + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a second connection to the events port: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	resp, err = client.Get(d.url("/version"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /version on the HTTP port: %d, want 200 (its limit is its own)", resp.StatusCode)
	}
}
