package transport

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/transport/ui"
)

// withOperatorRoutes mounts the operator's routes beside the 3.x API on the
// HTTP port: /metrics, /healthz, /readyz, /ports and the dashboard under
// /ui/.
// They sit behind the same browser guard as the API (the caller wraps the
// result). listeners names the listeners /readyz waits for.
func (s *Server) withOperatorRoutes(cfg Config, listeners []string, api http.Handler) http.Handler {
	metrics := newMetricsHandler(cfg.Service, cfg.Build, newStartLabels(cfg), func() map[protocol.CloseReason]uint64 {
		if s.eventsSrv == nil {
			return nil
		}
		return s.eventsSrv.ClosedByReason()
	}, s.connCounts)
	dashboard := ui.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, protocol.Errorf(protocol.CodeUnknownRoute, "", "no dashboard file %s (the dashboard is at /ui/)", r.URL.Path))
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var h http.Handler
		switch p := r.URL.Path; {
		case p == "/metrics":
			h = metrics
		case p == "/healthz":
			h = http.HandlerFunc(healthz)
		case p == "/readyz":
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.readyz(w, cfg.Service, listeners, cfg.Lab) })
		case p == "/ports":
			h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.ports(w, cfg.Ports) })
		case p == "/ui/entries.json":
			h = http.HandlerFunc(configEntries)
		case p == "/ui/families.json":
			h = http.HandlerFunc(deviceFamilies)
		case p == "/ui" || strings.HasPrefix(p, "/ui/"):
			h = dashboard
		default:
			api.ServeHTTP(w, r)
			return
		}
		if !isRead(r) {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, protocol.Errorf(protocol.CodeMethodNotAllowed, "", "%s is not supported on %s (allowed: GET, HEAD)", r.Method, r.URL.Path))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// isProbe says whether r is a probe of the service (liveness, readiness,
// a scrape), which the HTTP listener serves over its connection limit: a
// GET or HEAD of /healthz, /readyz or /metrics, without a body.
func isProbe(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics":
	default:
		return false
	}
	return isRead(r) && r.ContentLength == 0
}

// healthz answers while the process serves HTTP at all (a liveness probe).
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, healthDoc{Status: "alive"})
}

// healthDoc is the answer of /healthz.
type healthDoc struct {
	Status string `json:"status"` // "alive"
}

// readyDoc is the answer of /readyz, 200 or 503 alike.
type readyDoc struct {
	Status string       `json:"status"` // "ready" or "not ready"
	Checks []readyCheck `json:"checks"`
}

// readyCheck is one condition of /readyz.
type readyCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// readyz answers 200 when every listener is bound, every device's loop is
// running, the state directory takes writes and, in a lab, the lab is ready
// (lab, nil in standalone); else 503. Either way the body lists each check
// and why it failed.
func (s *Server) readyz(w http.ResponseWriter, svc *actors.Service, listeners []string, lab func() (bool, string)) {
	var checks []readyCheck
	var missing []string
	for _, name := range listeners {
		if s.Addr(name) == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		checks = append(checks, readyCheck{"listeners", false, "not yet listening: " + strings.Join(missing, ", ")})
	} else {
		checks = append(checks, readyCheck{"listeners", true, strings.Join(listeners, ", ") + " listening"})
	}

	devs := svc.Devices().All()
	var idle []string
	for _, d := range devs {
		if d.PeriodHistogram() == nil || d.Stats().Ticks == 0 {
			idle = append(idle, d.Name+" "+d.ID)
		}
	}
	if len(idle) > 0 {
		checks = append(checks, readyCheck{"devices", false, "loop not running yet: " + strings.Join(idle, ", ")})
	} else {
		checks = append(checks, readyCheck{"devices", true, fmt.Sprintf("%d devices loaded, every loop running", len(devs))})
	}

	if err := svc.CheckStateDir(); err != nil {
		checks = append(checks, readyCheck{"state_dir", false, err.Error()})
	} else {
		checks = append(checks, readyCheck{"state_dir", true, "writable"})
	}

	if lab != nil {
		ok, detail := lab()
		checks = append(checks, readyCheck{"lab", ok, detail})
	}

	status, code := "ready", http.StatusOK
	for _, c := range checks {
		if !c.OK {
			status, code = "not ready", http.StatusServiceUnavailable
		}
	}
	writeJSON(w, code, readyDoc{Status: status, Checks: checks})
}

// enabledListeners names the listeners cfg turns on.
func enabledListeners(cfg Config) []string {
	var out []string
	for _, l := range []struct {
		name string
		port int
	}{{ListenerHTTP, cfg.Port}, {ListenerLegacy, cfg.LegacyPort}, {ListenerEvents, cfg.EventsPort}} {
		if l.port >= 0 {
			out = append(out, l.name)
		}
	}
	return out
}

// uiEntry is one config entry as the dashboard lists it.
type uiEntry struct {
	Path          string `json:"path"`
	SessionScoped bool   `json:"session_scoped"`
	Grip          bool   `json:"grip"` // a grip has it too (every entry is an arm's)
}

// configEntries tells the dashboard which config entries exist, from the
// one table in protocol, so the page never keeps a list of its own.
func configEntries(w http.ResponseWriter, _ *http.Request) {
	var out []uiEntry
	for _, k := range protocol.Keys() {
		out = append(out, uiEntry{k.Path(), k.SessionScoped(), k.AppliesTo(protocol.TypeGrip)})
	}
	writeData(w, out, nil)
}

// uiFamily is one device family as the dashboard names it.
type uiFamily struct {
	// DeviceType is config.device_info.device_type, which names the
	// family under either naming (--type-names).
	DeviceType int    `json:"device_type"`
	Name       string `json:"name"`    // config.type under the product names
	Product    string `json:"product"` // what a person calls it: "Minverse"
}

// deviceFamilies tells the dashboard the product name of each device type
// number, from the one table in protocol: a Minverse's card reads
// "Minverse", not its array's "inverse3".
func deviceFamilies(w http.ResponseWriter, _ *http.Request) {
	var out []uiFamily
	for _, f := range protocol.Families() {
		out = append(out, uiFamily{f.DeviceType, f.Name, f.Product})
	}
	writeData(w, out, nil)
}

// isRead says whether r is a GET or a HEAD: the same answer, without its
// body for a HEAD (net/http drops it and keeps the headers).
func isRead(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Method == http.MethodHead
}
