package transport

import (
	"net/http"
	"testing"
)

// GET / is where a newcomer looks for the routes: it lists each GET route
// of its API (the 3.x one's /recordings too) and, on the 3.x port, the
// operator's (metrics, probes, dashboard), and each one it lists answers.
// The legacy port serves no operator route, so it lists none.
func TestRootListsTheRoutes(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	for _, tt := range []struct {
		base string
		want []string
	}{
		{ts.base, []string{"/version", "/devices", "/sessions", "/settings", "/events", "/recordings", "/schema", "/metrics", "/healthz", "/readyz", "/ui/"}},
		{ts.legacy, []string{"/3.0/version", "/3.0/devices", "/3.0/sessions", "/3.0/settings"}},
	} {
		r := ts.do(http.MethodGet, tt.base+"/", "")
		doc, _ := r.data().(map[string]any)
		listed := map[string]bool{}
		routes, _ := doc["routes"].([]any)
		for _, route := range routes {
			p, _ := route.(string)
			listed[p] = true
			if got := ts.do(http.MethodGet, tt.base+p, ""); got.status != http.StatusOK {
				t.Errorf("GET %s lists %s, which answers %d", tt.base+"/", p, got.status)
			}
		}
		for _, p := range tt.want {
			if !listed[p] {
				t.Errorf("GET %s/ lists %v, not %s", tt.base, routes, p)
			}
		}
		if tt.base == ts.legacy {
			for _, p := range []string{"/metrics", "/healthz", "/readyz", "/ui/"} {
				if listed[p] {
					t.Errorf("GET %s/ lists %s, which the legacy port does not serve", tt.base, p)
				}
			}
		}
	}
}
