package transport

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestBrowserGuardDecisions(t *testing.T) {
	tests := []struct {
		name         string
		bind         string
		allowOrigins []string
		allowHosts   []string
		origin, host string
		fetchSite    string // Sec-Fetch-Site, as a browser sends it
		navigate     bool   // Sec-Fetch-Mode: navigate (a link followed)
		served       bool
	}{
		{"no origin", "127.0.0.1", nil, nil, "", "127.0.0.1:10001", "", false, true},
		{"localhost origin", "127.0.0.1", nil, nil, "http://localhost:5173", "127.0.0.1:10001", "", false, true},
		{"127/8 origin", "127.0.0.1", nil, nil, "http://127.4.5.6", "localhost:10001", "", false, true},
		{"ipv6 loopback origin", "127.0.0.1", nil, nil, "http://[::1]:8080", "[::1]:10001", "", false, true},
		{"foreign origin", "127.0.0.1", nil, nil, "https://evil.example", "127.0.0.1:10001", "", false, false},
		{"lookalike origin", "127.0.0.1", nil, nil, "http://localhost.evil.example", "127.0.0.1:10001", "", false, false},
		{"null origin", "127.0.0.1", nil, nil, "null", "127.0.0.1:10001", "", false, false},
		{"allowed host-only origin", "127.0.0.1", []string{"lab.example"}, nil, "https://lab.example:8443", "127.0.0.1:10001", "", false, true},
		{"allowed full origin", "127.0.0.1", []string{"https://lab.example"}, nil, "https://lab.example", "127.0.0.1:10001", "", false, true},
		{"full origin does not allow another scheme", "127.0.0.1", []string{"https://lab.example:8443"}, nil, "http://lab.example:9000", "127.0.0.1:10001", "", false, false},
		{"rebinding host", "127.0.0.1", nil, nil, "", "evil.example:10001", "", false, false},
		{"allowed host", "127.0.0.1", nil, []string{"rig.local"}, "", "rig.local:10001", "", false, true},
		{"host not checked off loopback", "0.0.0.0", nil, nil, "", "lab-pc:10001", "", false, true},
		{"origin still checked off loopback", "0.0.0.0", nil, nil, "https://evil.example", "lab-pc:10001", "", false, false},
		{"another site's image or no-cors GET", "127.0.0.1", nil, nil, "", "127.0.0.1:10001", "cross-site", false, false},
		{"a loopback page on another port", "127.0.0.1", nil, nil, "", "127.0.0.1:10001", "same-site", false, true},
		{"the dashboard itself", "127.0.0.1", nil, nil, "", "127.0.0.1:10001", "same-origin", false, true},
		{"typed in the address bar", "127.0.0.1", nil, nil, "", "127.0.0.1:10001", "none", false, true},
		{"an allowed site's CORS request", "0.0.0.0", []string{"lab.example"}, nil, "https://lab.example", "lab-pc:10001", "cross-site", false, true},
		{"a link from another site followed", "127.0.0.1", nil, nil, "", "127.0.0.1:10001", "cross-site", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reached := false
			g := NewBrowserGuard(tt.bind, tt.allowOrigins, tt.allowHosts, nil)
			h := g.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
			req := httptest.NewRequest("POST", "/arm3/0/config/handedness", nil)
			req.Host = tt.host
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			if tt.fetchSite != "" {
				req.Header.Set("Sec-Fetch-Site", tt.fetchSite)
			}
			if tt.navigate {
				req.Header.Set("Sec-Fetch-Mode", "navigate")
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if reached != tt.served {
				t.Fatalf("served=%v, want %v (status %d %s)", reached, tt.served, rec.Code, rec.Body)
			}
			if !tt.served && (rec.Code != 403 || rec.Header().Get("Content-Type") != "application/json") {
				t.Fatalf("refusal: %d %q, want 403 JSON", rec.Code, rec.Header().Get("Content-Type"))
			}
		})
	}
}
