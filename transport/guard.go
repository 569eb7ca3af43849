package transport

import (
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/hapticd/hapticd/protocol"
)

// BrowserGuard keeps web pages in the user's browser away from the devices
// (PROTOCOL.md 3.4). A page can reach 127.0.0.1, so every listener, HTTP and
// WebSocket alike, serves a request only when
//   - it carries no Origin (native clients, curl), or an Origin whose host is
//     loopback or explicitly allowed; without an Origin, a browser's word
//     that a page of another site sent it (Sec-Fetch-Site: cross-site),
//     other than a link the user followed, refuses it too, and
//   - while bound to loopback, its Host is loopback or explicitly allowed
//     (a DNS-rebinding page sends its own host name).
//
// The checks run before the body is read or the connection upgraded, so a
// refused request has no effect at all.
type BrowserGuard struct {
	// Immutable after NewBrowserGuard.
	allowOrigins map[string]bool // lower-case hosts and full origins
	allowHosts   map[string]bool // lower-case hosts
	checkHost    bool            // only while bound to loopback
	onRefused    func(r *http.Request, code protocol.Code, reason string)
}

// NewBrowserGuard builds the guard for a listener bound to bindHost.
// allowOrigins holds hosts ("lab.example") or full origins
// ("http://lab.example:8080"); allowHosts holds host names.
// onRefused, if not nil, is told of each refusal (for logs and events).
func NewBrowserGuard(bindHost string, allowOrigins, allowHosts []string, onRefused func(r *http.Request, code protocol.Code, reason string)) *BrowserGuard {
	g := &BrowserGuard{
		allowOrigins: make(map[string]bool),
		allowHosts:   make(map[string]bool),
		checkHost:    isLoopbackHost(bindHost),
		onRefused:    onRefused,
	}
	for _, o := range allowOrigins {
		if o = strings.ToLower(strings.TrimSpace(o)); o != "" {
			g.allowOrigins[strings.TrimSuffix(o, "/")] = true
		}
	}
	for _, h := range allowHosts {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
			g.allowHosts[h] = true
		}
	}
	return g
}

// Wrap returns h behind the guard.
func (g *BrowserGuard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if code, reason, ok := g.check(r); !ok {
			if g.onRefused != nil {
				g.onRefused(r, code, reason)
			}
			// Tell the client not to keep the connection: a refused page
			// should not get a warm socket to try again on.
			w.Header().Set("Connection", "close")
			writeError(w, &protocol.Error{Code: code, Message: reason})
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (g *BrowserGuard) check(r *http.Request) (code protocol.Code, reason string, ok bool) {
	if origins, present := r.Header["Origin"]; present {
		for _, origin := range origins {
			if !g.originAllowed(origin) {
				return protocol.CodeForbiddenOrigin, "origin " + quoteShort(origin) + " may not use this service; a web page must not reach a device (start hapticd with --allow-origin to allow it)", false
			}
		}
	} else if r.Header.Get("Sec-Fetch-Site") == "cross-site" && r.Header.Get("Sec-Fetch-Mode") != "navigate" {
		// A browser's GET without an Origin (an <img>, a no-cors fetch)
		// that a page of another site made, which the browser says in
		// headers no page can set: the page cannot read the answer, but
		// it was served, and counted (a foreign page padded the migration
		// report with 3.0 uses: tourweb). A link the user follows (a
		// navigation: the dashboard from a wiki) is the user's own.
		return protocol.CodeForbiddenOrigin, "a page of another site (Sec-Fetch-Site: cross-site) may not use this service; a web page must not reach a device", false
	}
	if g.checkHost && r.Host != "" {
		host := hostOnly(r.Host)
		if !isLoopbackHost(host) && !g.allowHosts[strings.ToLower(host)] {
			return protocol.CodeForbiddenHost, "host " + quoteShort(r.Host) + " is not this loopback service (DNS rebinding?); start hapticd with --allow-host to allow it", false
		}
	}
	return "", "", true
}

func (g *BrowserGuard) originAllowed(origin string) bool {
	origin = strings.ToLower(strings.TrimSpace(origin))
	if g.allowOrigins[strings.TrimSuffix(origin, "/")] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // "null" (sandboxed frames, file://) and garbage are foreign
	}
	host := u.Hostname()
	return isLoopbackHost(host) || g.allowOrigins[host]
}

// hostOnly strips the port from a Host header value.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// isLoopbackHost reports whether host names this machine's loopback: the
// name localhost, 127.0.0.0/8 or ::1.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func quoteShort(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return "\"" + s + "\""
}
