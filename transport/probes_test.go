package transport

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestProbesAnsweredAtTheConnectionLimit: /healthz, /readyz and /metrics
// answered 503 while the HTTP listener held --max-connections, so a
// liveness probe restarted, and Prometheus lost, a service that was only
// busy. They are answered on a connection over the limit, which is then
// closed; every other route there is still refused, and a probe served is
// not counted among the refusals.
func TestProbesAnsweredAtTheConnectionLimit(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, maxConns: 1})
	host := strings.TrimPrefix(ts.base, "http://")
	held := holdOnlyPlace(t, host)
	defer held.Close()
	refusedBefore := ts.srv.connCounts()[ListenerHTTP].refused

	// A client that would keep the connection: the service closes it.
	get := func(method, path string) (int, bool, string) {
		t.Helper()
		client := &http.Client{Transport: &http.Transport{}, Timeout: limitWait}
		defer client.CloseIdleConnections()
		req, err := http.NewRequest(method, ts.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s with the listener full: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Close, string(b)
	}
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/healthz", http.StatusOK},
		{http.MethodHead, "/healthz", http.StatusOK},
		{http.MethodGet, "/readyz", http.StatusOK},
		{http.MethodGet, "/metrics", http.StatusOK},
		{http.MethodGet, "/version", http.StatusServiceUnavailable},
		{http.MethodGet, "/healthz/", http.StatusServiceUnavailable},
		{http.MethodPost, "/healthz", http.StatusServiceUnavailable},
	} {
		status, closes, body := get(tt.method, tt.path)
		if status != tt.want || !closes {
			t.Errorf("%s %s with the listener full: %d (connection closed: %v) %.200s; want %d and the connection closed",
				tt.method, tt.path, status, closes, body, tt.want)
		}
	}
	refused := ts.srv.connCounts()[ListenerHTTP].refused - refusedBefore
	if refused != 3 {
		t.Errorf("%d connections counted refused, want 3: the probes served are not refusals", refused)
	}
}
