package activity

import (
	"encoding/json"
	"maps"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hapticd/hapticd/protocol/event"
)

// Usage is the migration report: what an integrator still uses that 4.0
// removes, since the service started. It is a copy, safe to keep and encode
// (GET /deprecations, `hapticd deprecations`).
type Usage struct {
	// Since is when counting began (the actor's start).
	Since time.Time `json:"since"`
	// Routes are the deprecated HTTP routes called, by route (method and
	// path, "/3.0" prefix included when called on the legacy port).
	Routes []DeprecatedUse `json:"routes"`
	// Commands are the deprecated session commands received.
	Commands []DeprecatedUse `json:"commands"`
	// Legacy is the use of the 3.0 API format, whose support ends in 4.0.
	Legacy LegacyUse `json:"legacy_api"`
}

// Tally counts uses of one thing. Remotes are counted by host (the port of
// a client changes with every connection); a profile-less session counts
// under NoProfile. Each map holds at most MaxTallyKeys keys, OtherKey
// included: uses past that count under OtherKey.
type Tally struct {
	Count     uint64            `json:"count"`
	FirstSeen time.Time         `json:"first_seen,omitzero"`
	LastSeen  time.Time         `json:"last_seen,omitzero"`
	ByRemote  map[string]uint64 `json:"by_remote,omitempty"`
	ByProfile map[string]uint64 `json:"by_profile,omitempty"`
}

// DeprecatedUse is one deprecated route or command in use.
type DeprecatedUse struct {
	// Name is the route ("POST /force_scale") or command
	// ("session.set_basis").
	Name string `json:"name"`
	// Replacement is what to use instead, as last reported (routes with
	// {type}/{id} filled in when the call named a device);
	// Replacements counts every replacement reported.
	Replacement  string            `json:"replacement"`
	Replacements map[string]uint64 `json:"replacements"`
	// ByAPIFormat counts a command's uses by the API format of the
	// session that sent it ("3.x", "3.0"; UnknownRemote when its
	// session-started was not seen); empty for routes, whose name says
	// their format.
	ByAPIFormat map[string]uint64 `json:"by_api_format,omitempty"`
	Tally
}

// LegacyUse is the use of the 3.0 API format.
type LegacyUse struct {
	// Sessions counts 3.0-format sessions (session-started with
	// api_version "3.0"): by remote at start, by profile at their end.
	Sessions Tally `json:"sessions"`
	// OpenSessions are the 3.0 sessions connected now.
	OpenSessions int `json:"open_sessions"`
	// Routes are the 3.0 HTTP routes called (deprecated ones included).
	Routes []RouteUse `json:"routes"`
}

// RouteUse is one 3.0 route in use.
type RouteUse struct {
	Route string `json:"route"`
	Tally
}

// Report keys for things that have no name of their own.
const (
	NoProfile     = "(none)"
	UnknownRemote = "(unknown)"
	OtherKey      = "(other)"
	// MaxTallyKeys bounds each by_remote and by_profile map and the
	// number of routes and commands, so a flood of distinct clients or
	// made-up routes cannot grow the report without end.
	MaxTallyKeys = 256
	// LegacyAPIVersion is the api_version of 3.0-format sessions.
	LegacyAPIVersion = "3.0"
	// legacyPrefix marks a route of the 3.0 HTTP API.
	legacyPrefix = "/3.0/"
)

// usageBook aggregates the report inside the actor.
type usageBook struct {
	since    time.Time
	routes   map[string]*DeprecatedUse
	commands map[string]*DeprecatedUse
	legacy   Tally
	// legacyRoutes counts 3.0 routes by route.
	legacyRoutes map[string]*RouteUse
	// open maps each connected session to what its later events lack.
	open map[uint64]openSession
}

type openSession struct {
	remote     string
	apiVersion string
}

func newUsageBook(since time.Time) usageBook {
	return usageBook{
		since:        since,
		routes:       make(map[string]*DeprecatedUse),
		commands:     make(map[string]*DeprecatedUse),
		legacyRoutes: make(map[string]*RouteUse),
		open:         make(map[uint64]openSession),
	}
}

// record counts one published event. Its data was built by the event
// package's constructors; a malformed one is counted with what it has.
func (b *usageBook) record(e *event.Event) {
	switch e.Name {
	case event.NameHTTPRouteDeprecated:
		var d struct{ Route, Replacement, Remote string }
		_ = json.Unmarshal(e.Data, &d)
		u := use(b.routes, d.Route)
		u.note(d.Replacement)
		u.add(e.Time, hostOf(d.Remote), "")
		if strings.Contains(d.Route, legacyPrefix) {
			b.legacyRoute(d.Route, d.Remote, "", e.Time)
		}
	case event.NameCommandDeprecated:
		var d struct {
			Command     string
			Replacement string
			SessionID   uint64 `json:"session_id"`
			Profile     string
		}
		_ = json.Unmarshal(e.Data, &d)
		remote, format := UnknownRemote, UnknownRemote
		if s, ok := b.open[d.SessionID]; ok {
			remote, format = s.remote, s.apiVersion
		}
		u := use(b.commands, d.Command)
		u.note(d.Replacement)
		u.ByAPIFormat = bump(u.ByAPIFormat, format)
		u.add(e.Time, remote, profileKey(d.Profile))
	case event.NameSessionStarted, event.NameSessionEnded:
		var d struct {
			SessionID  uint64 `json:"session_id"`
			Profile    string
			Remote     string
			APIVersion string `json:"api_version"`
		}
		_ = json.Unmarshal(e.Data, &d)
		if e.Name == event.NameSessionStarted {
			b.open[d.SessionID] = openSession{remote: hostOf(d.Remote), apiVersion: d.APIVersion}
			if d.APIVersion == LegacyAPIVersion {
				// The profile comes later (session.configure) and is
				// counted at the end.
				b.legacy.add(e.Time, hostOf(d.Remote), "")
			}
			return
		}
		delete(b.open, d.SessionID)
		if d.APIVersion == LegacyAPIVersion {
			b.legacy.ByProfile = bump(b.legacy.ByProfile, profileKey(d.Profile))
		}
	}
}

func (b *usageBook) legacyRoute(route, remote, profile string, at time.Time) {
	u := cappedEntry(b.legacyRoutes, route, func(route string) *RouteUse { return &RouteUse{Route: route} })
	u.add(at, hostOf(remote), profile)
}

// report copies the book into a Usage, sorted by name.
func (b *usageBook) report() Usage {
	u := Usage{
		Since:    b.since,
		Routes:   copyUses(b.routes),
		Commands: copyUses(b.commands),
		Legacy: LegacyUse{
			Sessions: b.legacy.clone(),
			Routes:   []RouteUse{},
		},
	}
	for _, s := range b.open {
		if s.apiVersion == LegacyAPIVersion {
			u.Legacy.OpenSessions++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(b.legacyRoutes)) {
		r := b.legacyRoutes[name]
		u.Legacy.Routes = append(u.Legacy.Routes, RouteUse{Route: r.Route, Tally: r.clone()})
	}
	return u
}

func copyUses(m map[string]*DeprecatedUse) []DeprecatedUse {
	out := make([]DeprecatedUse, 0, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		d := m[name]
		out = append(out, DeprecatedUse{
			Name:         d.Name,
			Replacement:  d.Replacement,
			Replacements: maps.Clone(d.Replacements),
			ByAPIFormat:  maps.Clone(d.ByAPIFormat),
			Tally:        d.clone(),
		})
	}
	return out
}

func use(m map[string]*DeprecatedUse, name string) *DeprecatedUse {
	return cappedEntry(m, name, func(name string) *DeprecatedUse { return &DeprecatedUse{Name: name} })
}

// cappedEntry returns m[name], creating it with newEntry. Once m holds
// MaxTallyKeys-1 names, a new name counts under OtherKey instead, so the
// map never holds more than MaxTallyKeys.
func cappedEntry[T any](m map[string]*T, name string, newEntry func(name string) *T) *T {
	if u := m[name]; u != nil {
		return u
	}
	if len(m) >= MaxTallyKeys-1 {
		name = OtherKey
		if u := m[name]; u != nil {
			return u
		}
	}
	u := newEntry(name)
	m[name] = u
	return u
}

func (d *DeprecatedUse) note(replacement string) {
	if replacement == "" {
		return
	}
	d.Replacement = replacement
	d.Replacements = bump(d.Replacements, replacement)
}

// add counts one use at time at; an empty remote or profile is not
// counted in that map.
func (t *Tally) add(at time.Time, remote, profile string) {
	if t.Count == 0 {
		t.FirstSeen = at
	}
	t.Count++
	t.LastSeen = at
	if remote != "" {
		t.ByRemote = bump(t.ByRemote, remote)
	}
	if profile != "" {
		t.ByProfile = bump(t.ByProfile, profile)
	}
}

func (t *Tally) clone() Tally {
	c := *t
	c.ByRemote = maps.Clone(t.ByRemote)
	c.ByProfile = maps.Clone(t.ByProfile)
	return c
}

// bump adds one to m[key], creating m, and folds new keys past
// MaxTallyKeys into OtherKey.
func bump(m map[string]uint64, key string) map[string]uint64 {
	if m == nil {
		m = make(map[string]uint64)
	}
	if _, ok := m[key]; !ok && len(m) >= MaxTallyKeys-1 {
		key = OtherKey
	}
	m[key]++
	return m
}

func profileKey(p string) string {
	if p == "" {
		return NoProfile
	}
	return p
}

// hostOf strips the port of a remote address: a client's port changes
// with every connection, its host does not.
func hostOf(remote string) string {
	if remote == "" {
		return UnknownRemote
	}
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}
