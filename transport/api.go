package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/transport/events"
)

// BuildInfo describes the running binary for GET /version.
type BuildInfo struct {
	Version   string // hapticd's own version
	GitHash   string
	BuildTime string
}

// ReadBuildInfo fills what the Go toolchain stamped into the binary.
func ReadBuildInfo(version string) BuildInfo {
	b := BuildInfo{Version: version, GitHash: "unknown", BuildTime: "unknown"}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.GitHash = s.Value
			case "vcs.time":
				b.BuildTime = s.Value
			}
		}
	}
	return b
}

// api is one set of handlers, mounted for each API format: at the root of
// the 3.x port and under /3.0/ on the legacy port. Nothing in it depends
// on the format but the codec that encodes /devices.
type api struct {
	svc    *actors.Service
	codec  actors.Codec
	prefix string // "" or "/3.0"
	// lookup is the API's router's (newRouter): notFound's hint.
	lookup func(method, path string) (httprouter.Handle, httprouter.Params, bool)
	build  BuildInfo
	log    zerolog.Logger
	ws     *sessionHandler
	// rec holds the recordings (POST/GET/DELETE /recordings) and records
	// config changes made over HTTP.
	rec *recording.Recorder
	// legacyUse, when set, counts each route use for the migration report.
	legacyUse func(route, remote, profile string)
	// servesSchema: this format serves /schema and /openapi.json (3.x
	// only: the machine-readable schema covers 3.1 payloads and later).
	servesSchema bool
	schemas      *schemaDocs // set by newRouter when servesSchema
	// servesOperator: the listener serves operatorRoutes in front of this
	// API (Server.withOperatorRoutes, on the 3.x port), so GET / lists
	// them and the OpenAPI document describes them.
	servesOperator bool
}

// route is one HTTP route of the API. Both formats register the same list
// (the legacy one under /3.0), and the tests walk it.
type route struct {
	method, path string
	handle       httprouter.Handle
	doc          *routeDoc // for the OpenAPI document (describeRoutes)
	// deprecated: a route of the deprecation table, counted through its
	// http-route-deprecated event (the usage book files a 3.0 one under
	// the 3.0 routes too), so never noted as a 3.0 route besides.
	deprecated bool
}

// routes lists every route of one format, without the format's prefix.
func (a *api) routes() []route {
	var rs []route
	add := func(path string, h httprouter.Handle, methods ...string) {
		for _, m := range methods {
			rs = append(rs, route{method: m, path: path, handle: h})
		}
	}
	get := http.MethodGet
	add("/", a.root, get)
	add("/version", a.version, get)
	add("/devices", a.devices, get)
	add("/sessions", a.sessions, get)
	add("/sessions/closed", a.closedSessions, get)
	add("/stats", a.stats, get)
	recent := events.NewRecentHandler(a.svc.Activity())
	add("/events", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) { recent.ServeHTTP(w, r) }, get)
	add("/deprecations", a.deprecations, get)
	if a.prefix == "" { // 3.5 documents the vendor's Rust client reads; the 3.0 API had none
		add(pairingPath, a.pairing, get)
		add(expertStatusPath, a.expertStatus, get)
	}
	if a.prefix == "" { // a 3.x feature: the 3.0 API has no recordings
		add("/recordings", a.listRecordings, get)
		add("/recordings", a.startRecording, http.MethodPost)
		add("/recordings/:id", a.stopRecording, http.MethodDelete)
	}

	// Device-type names (every accepted one) are static path segments, so
	// httprouter never sees a wildcard beside /version or /settings. The
	// family selectors (*inverse, *verse_grip) cannot be: httprouter reads
	// a leading '*' as a catch-all; notFound serves them.
	types := a.svc.Types()
	for _, t := range types.Types() {
		for _, key := range types.Keys(t) {
			c, _ := types.ResolveName(key)
			for _, k := range protocol.Keys() {
				if k.AppliesTo(t) { // notFound explains the others (Key.NotOn)
					add("/"+key+"/:id/config/"+k.Path(), a.config(c, k), get, http.MethodPost, http.MethodDelete)
				}
			}
			if t == protocol.TypeArm {
				add("/"+key+"/:id/effects", a.effects(c), get) // effects.go
			}
		}
	}
	add("/settings", a.allSettings, get)
	for _, k := range protocol.SettingKeys() {
		add("/settings/"+k.Path(), a.setting(k), get, http.MethodPost, http.MethodDelete)
	}
	for _, d := range protocol.DeprecatedRoutes() {
		rs = append(rs, route{method: d.Method, path: d.Path, handle: a.deprecatedRoute(d), deprecated: true})
	}
	if a.servesSchema {
		add("/schema", a.schemaIndex, get)
		add("/schema/:name", a.schemaDoc, get)
		add(openAPIPath, a.openAPI, get)
	}
	a.describeRoutes(rs)
	return rs
}

// newRouter builds the HTTP routes of one format under its prefix, and the
// schema documents when the format serves them.
func newRouter(a *api) (*httprouter.Router, error) {
	r := httprouter.New()
	a.lookup = r.Lookup
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	rs := a.routes()
	if a.servesSchema {
		described := append(rs[:len(rs):len(rs)], a.familyRoutes()...)
		if a.servesOperator {
			described = append(described, operatorRoutes()...)
		}
		docs, err := buildSchemaDocs(a.svc.Types(), described)
		if err != nil {
			return nil, err
		}
		a.schemas = docs
	}
	for _, rt := range rs {
		h := rt.handle
		if a.legacyUse != nil && !rt.deprecated {
			h = a.noteLegacy(rt.method+" "+a.prefix+rt.path, h)
		}
		if (rt.method == http.MethodPost || rt.method == http.MethodDelete) && (strings.Contains(rt.path, "/config/") || strings.HasPrefix(rt.path, "/settings")) {
			h = a.recordChange(h)
		}
		r.Handle(rt.method, a.prefix+rt.path, h)
		if rt.method == http.MethodGet {
			// HEAD is GET without the body (RFC 9110 9.3.2; net/http
			// drops the body and keeps the headers): a probe or a client
			// checking a route gets the GET's status and length.
			r.Handle(http.MethodHead, a.prefix+rt.path, h)
		}
	}
	r.NotFound = http.HandlerFunc(a.notFound)
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		writeError(w, protocol.Errorf(protocol.CodeMethodNotAllowed, "", "%s is not supported on %s (allowed: %s)", req.Method, req.URL.Path, w.Header().Get("Allow")))
	})
	r.PanicHandler = func(w http.ResponseWriter, req *http.Request, v any) {
		a.log.Error().Interface("panic", v).Str("path", req.URL.Path).Bytes("stack", debug.Stack()).Msg("handler panic")
		writeError(w, protocol.Errorf(protocol.CodeInternal, "", "internal error"))
	}
	return r, nil
}

// noteLegacy counts a use of a 3.0 route for the migration report (support
// for the 3.0 format ends in 4.0). A HEAD is not counted: it is a probe (a
// load balancer's, a monitor's), not a client of the 3.0 API to migrate.
func (a *api) noteLegacy(name string, h httprouter.Handle) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		if r.Method != http.MethodHead {
			a.legacyUse(name, r.RemoteAddr, "")
		}
		h(w, r, ps)
	}
}

// root upgrades to the simulation WebSocket, or describes the service to a
// plain GET.
func (a *api) root(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if a.ws != nil && strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		a.ws.ServeHTTP(w, r)
		return
	}
	routes := []string{a.prefix + "/version", a.prefix + "/devices", a.prefix + "/sessions", a.prefix + "/sessions/closed", a.prefix + "/settings", a.prefix + "/events", a.prefix + "/deprecations", a.prefix + "/stats"}
	if a.prefix == "" { // as the router: the 3.0 API has no recordings
		routes = append(routes, "/recordings")
	}
	if a.servesSchema {
		routes = append(routes, a.prefix+"/schema", a.prefix+openAPIPath)
	}
	if a.servesOperator {
		for _, rt := range operatorRoutes() {
			if !strings.ContainsAny(rt.path, ":*") { // a template is no route to follow
				routes = append(routes, rt.path)
			}
		}
	}
	writeData(w, rootDoc{Service: "hapticd", API: a.codec.APIVersion(), WebSocket: "upgrade on this path", Routes: routes}, nil)
}

// servedUnderPrefix says whether r's path, under the API's prefix, is a
// route of this API or a device collection's: the hint of notFound names
// only a path that is there (the probes, for one, are the 3.x port's).
func (a *api) servedUnderPrefix(r *http.Request) bool {
	if a.lookup != nil {
		if h, _, _ := a.lookup(r.Method, a.prefix+r.URL.Path); h != nil {
			return true
		}
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	_, _, ok := a.collectionNamed(first)
	return ok
}

func (a *api) notFound(w http.ResponseWriter, r *http.Request) {
	if a.prefix != "" && r.URL.Path != a.prefix && !strings.HasPrefix(r.URL.Path, a.prefix+"/") && a.servedUnderPrefix(r) {
		// A 3.x path on the 3.0 port, whose routes are all under the
		// prefix. Read as one, the path's entry was "unknown" while the
		// list of known entries named it.
		writeError(w, protocol.Errorf(protocol.CodeUnknownRoute, "", "no route %s %s: this port serves the 3.0 API under %s (%s%s)", r.Method, r.URL.Path, a.prefix, a.prefix, r.URL.Path))
		return
	}
	path := strings.TrimPrefix(r.URL.Path, a.prefix)
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 4 && parts[2] == "config" && a.serveFamily(w, r, parts):
	case len(parts) == 3 && parts[2] == "effects":
		a.effectsNotRouted(w, r, parts)
	case len(parts) >= 3 && parts[2] == "config":
		c, _, ok := a.collectionNamed(parts[0])
		if !ok {
			writeError(w, a.unknownType(parts[0]))
			return
		}
		if k, known := protocol.KeyFromPath(strings.Join(parts[3:], "/")); known && !k.AppliesTo(c.Type) {
			writeError(w, k.NotOn(parts[0], c.Type))
			return
		}
		writeError(w, protocol.Errorf(protocol.CodeUnknownRoute, "", "unknown config entry %q (known: %s)", strings.Join(parts[3:], "/"), strings.Join(configPaths(), ", ")))
	case len(parts) >= 1 && parts[0] == "settings":
		writeError(w, protocol.Errorf(protocol.CodeUnknownSetting, "", "unknown setting %q (known: %s)", strings.Join(parts[1:], "/"), strings.Join(settingPaths(), ", ")))
	default:
		writeError(w, protocol.Errorf(protocol.CodeUnknownRoute, "", "no route %s %s", r.Method, r.URL.Path))
	}
}

// effectsNotRouted answers /{type}/{id}/effects where no route matched: it
// serves the arms' family selector (*inverse) as the config routes do, and
// otherwise says what is wrong with the type (unknown, or not an arm's).
func (a *api) effectsNotRouted(w http.ResponseWriter, r *http.Request, parts []string) {
	c, isFam, ok := a.collectionNamed(parts[0])
	switch {
	case !ok:
		writeError(w, a.unknownType(parts[0]))
	case c.Type != protocol.TypeArm:
		writeError(w, protocol.Errorf(protocol.CodeUnknownRoute, "", "%s has no effects: effects are an arm's (GET /%s/{id}/effects)", parts[0], protocol.FamilySelector(protocol.TypeArm)))
	case !isFam:
		// An arm's type name with its own route: the method was wrong
		// (httprouter answers that), or this format serves no effects.
		writeError(w, protocol.Errorf(protocol.CodeUnknownRoute, "", "no route %s %s", r.Method, r.URL.Path))
	case !isRead(r):
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, protocol.Errorf(protocol.CodeMethodNotAllowed, "", "%s is not supported on %s (allowed: GET, HEAD)", r.Method, r.URL.Path))
	default:
		h := a.effects(c)
		if a.legacyUse != nil {
			h = a.noteLegacy(r.Method+" "+a.prefix+"/"+c.Key+"/:id/effects", h)
		}
		h(w, r, httprouter.Params{{Key: "id", Value: parts[1]}})
	}
}

// collectionNamed resolves a path's type segment: a type name or alias, or
// a family selector (family true).
func (a *api) collectionNamed(name string) (c protocol.Collection, family, ok bool) {
	if fam, isFam := protocol.ParseFamilySelector(name); isFam {
		return fam, true, true
	}
	c, ok = a.svc.Types().ResolveName(name)
	return c, false, ok
}

// unknownType is the error for a path's type segment that names no type.
func (a *api) unknownType(name string) *protocol.Error {
	return protocol.Errorf(protocol.CodeUnknownDeviceType, "", "unknown device type %q (known: %s)", name, strings.Join(a.allTypeKeys(), ", "))
}

// serveFamily serves /{family}/{id}/config/{entry} for a family selector
// (*inverse, *verse_grip: every device of the family, whatever its name).
// It reports false when parts name no family or no entry.
func (a *api) serveFamily(w http.ResponseWriter, r *http.Request, parts []string) bool {
	fam, ok := protocol.ParseFamilySelector(parts[0])
	if !ok {
		return false
	}
	k, ok := protocol.KeyFromPath(strings.Join(parts[3:], "/"))
	if !ok || !k.AppliesTo(fam.Type) {
		return false // notFound explains
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, DELETE")
		writeError(w, protocol.Errorf(protocol.CodeMethodNotAllowed, "", "%s is not supported on %s (allowed: GET, HEAD, POST, DELETE)", r.Method, r.URL.Path))
		return true
	}
	h := a.config(fam, k)
	if a.legacyUse != nil {
		h = a.noteLegacy(r.Method+" "+a.prefix+"/"+fam.Key+"/:id/config/"+k.Path(), h)
	}
	if !isRead(r) {
		h = a.recordChange(h)
	}
	h(w, r, httprouter.Params{{Key: "id", Value: parts[1]}})
	return true
}

func (a *api) allTypeKeys() []string {
	var keys []string
	for _, t := range a.svc.Types().Types() {
		keys = append(keys, a.svc.Types().Keys(t)...)
	}
	for _, t := range a.svc.Types().Types() {
		keys = append(keys, protocol.FamilySelector(t))
	}
	return keys
}

func configPaths() []string {
	var out []string
	for _, k := range protocol.Keys() {
		out = append(out, k.Path())
	}
	return out
}

func settingPaths() []string {
	var out []string
	for _, k := range protocol.SettingKeys() {
		out = append(out, k.Path())
	}
	return out
}

func (a *api) version(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	doc := versionDoc{
		Service:        "hapticd",
		Version:        protocol.APIVersion,
		HapticdVersion: a.build.Version,
		APIVersions:    []string{"3.0", "3.x"},
		GitHash:        a.build.GitHash,
		BuildTime:      a.build.BuildTime,
	}
	envelope, perr := protocol.QueryEnvelope(r.URL.RawQuery)
	if perr != nil {
		writeError(w, perr)
		return
	}
	if envelope {
		writeData(w, doc, nil)
		return
	}
	writeJSON(w, http.StatusOK, doc)
}

// devices answers the inventory (PROTOCOL 2.1) in this format's shape,
// in a session's application space when ?session= names one.
func (a *api) devices(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var session uint64
	envelope, perr := protocol.QueryEnvelope(r.URL.RawQuery)
	if perr != nil {
		writeError(w, perr)
		return
	}
	sel, _, perr := sessionQuery(r)
	if perr != nil {
		writeError(w, perr)
		return
	}
	if sel != "" {
		ids, perr := a.matchSessions(sel, true)
		if perr != nil {
			writeError(w, perr)
			return
		}
		session = ids[0]
	}
	var f protocol.Frame
	a.svc.FillFrame(&f, session, true)
	doc := a.codec.AppendFrame(nil, &f, a.svc.Types())
	if envelope {
		writeData(w, json.RawMessage(doc), nil)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(append(doc, '\n'))
}

// sessionBase is what GET /sessions and GET /sessions/closed say of every
// session, live or ended.
type sessionBase struct {
	SessionID   uint64      `json:"session_id"`
	Profile     *profileDoc `json:"profile"`
	APIVersion  string      `json:"api_version"`
	Remote      string      `json:"remote"`
	ConnectedAt time.Time   `json:"connected_at"`
}

func newSessionBase(id uint64, profile, apiVersion, remote string, connectedAt time.Time) sessionBase {
	b := sessionBase{SessionID: id, APIVersion: apiVersion, Remote: remote, ConnectedAt: connectedAt.UTC()}
	if profile != "" {
		b.Profile = &profileDoc{Name: profile}
	}
	return b
}

type sessionDoc struct {
	sessionBase
	Controls []controlDoc `json:"controls"`
}

type profileDoc struct {
	Name string `json:"name"`
}

type controlDoc struct {
	DeviceType string `json:"device_type"`
	DeviceID   string `json:"device_id"`
}

func (a *api) sessions(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	list := a.svc.Sessions()
	docs := make([]sessionDoc, 0, len(list))
	for _, s := range list {
		d := sessionDoc{sessionBase: newSessionBase(s.ID, s.Profile(), s.APIVersion, s.Remote, s.ConnectedAt), Controls: []controlDoc{}}
		for _, dev := range s.Controls() {
			d.Controls = append(d.Controls, controlDoc{DeviceType: dev.Name, DeviceID: dev.ID})
		}
		docs = append(docs, d)
	}
	writeData(w, sessionsDoc{SessionCount: len(docs), Sessions: docs}, nil)
}

type closedDoc struct {
	sessionBase
	ClosedAt  time.Time            `json:"closed_at"`
	Reason    protocol.CloseReason `json:"reason"`
	CloseCode int                  `json:"close_code"`
}

// closedListDoc is the data of GET /sessions/closed.
type closedListDoc struct {
	ClosedCount int         `json:"closed_count"`
	Kept        int         `json:"kept"` // how many ends the ring keeps
	Closed      []closedDoc `json:"closed"`
}

// closedSessions lists the most recent session ends, newest last.
func (a *api) closedSessions(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	list := a.svc.ClosedSessions()
	docs := make([]closedDoc, 0, len(list))
	for _, c := range list {
		docs = append(docs, closedDoc{sessionBase: newSessionBase(c.ID, c.Profile, c.APIVersion, c.Remote, c.ConnectedAt),
			ClosedAt: c.ClosedAt.UTC(), Reason: c.Reason, CloseCode: c.Reason.CloseCode()})
	}
	writeData(w, closedListDoc{ClosedCount: len(docs), Kept: actors.ClosedRingSize, Closed: docs}, nil)
}

// sessionQuery is r's ?session= selector and whether it was given; given
// twice it is refused (which one would the client mean?).
func sessionQuery(r *http.Request) (sel string, given bool, perr *protocol.Error) {
	return protocol.QueryValue(r.URL.RawQuery, "session")
}

// matchSessions resolves a session= selector to live session ids; one
// requires exactly one match.
func (a *api) matchSessions(sel string, one bool) ([]uint64, *protocol.Error) {
	s, perr := protocol.ParseSessionSelector(sel)
	if perr != nil {
		return nil, perr
	}
	ids := s.Match(a.svc.SessionRefs())
	if len(ids) == 0 {
		return nil, protocol.Errorf(protocol.CodeUnknownSession, "", "no connected session matches %q (GET /sessions lists them)", sel)
	}
	if one && len(ids) > 1 {
		return nil, protocol.Errorf(protocol.CodeAmbiguousSelector, "", "session selector %q matches %d sessions; a GET needs exactly one (use #ID or NAME:I)", sel, len(ids))
	}
	return ids, nil
}

// matchDevices resolves an {id} segment under the type name c. An id
// matches any device of c's type (clients send one grip under several
// names); an index or * counts the devices that c's collection holds, so
// /wireless_verse_grip/0 is wireless_verse_grip[0] of GET /devices.
func (a *api) matchDevices(c protocol.Collection, sel string) ([]*actors.Device, *protocol.Error) {
	ds, perr := protocol.ParseDeviceSelector(sel)
	if perr != nil {
		return nil, perr
	}
	all := a.svc.Devices().OfType(c.Type)
	ids := make([]string, len(all))
	for i, d := range all {
		ids[i] = d.ID
	}
	if !ds.All {
		if idx := ds.MatchID(ids); len(idx) > 0 {
			return pickDevices(all, idx), nil
		}
	}
	var held []*actors.Device
	var heldIDs []string
	for _, d := range all {
		if c.Holds(d.Type, d.Link()) {
			held = append(held, d)
			heldIDs = append(heldIDs, d.ID)
		}
	}
	idx := ds.Match(heldIDs)
	if len(idx) == 0 {
		if len(heldIDs) == 0 {
			return nil, protocol.Errorf(protocol.CodeUnknownDevice, "", "no %s matches %q: none is connected", c.Key, sel)
		}
		return nil, protocol.Errorf(protocol.CodeUnknownDevice, "", "no %s matches %q (connected: %s)", c.Key, sel, strings.Join(heldIDs, ", "))
	}
	return pickDevices(held, idx), nil
}

func pickDevices(list []*actors.Device, idx []int) []*actors.Device {
	out := make([]*actors.Device, len(idx))
	for i, j := range idx {
		out[i] = list[j]
	}
	return out
}

// config serves GET, POST and DELETE of one config entry.
func (a *api) config(c protocol.Collection, k protocol.Key) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		devs, perr := a.matchDevices(c, ps.ByName("id"))
		if perr != nil {
			writeError(w, perr)
			return
		}
		sel, hasSel, perr := sessionQuery(r)
		if perr != nil {
			writeError(w, perr)
			return
		}
		if hasSel && !k.SessionScoped() {
			// A client asking for a session's value of a device-global
			// entry would otherwise read or change every session's.
			writeError(w, protocol.Errorf(protocol.CodeInvalidValue, "", "%s is device-global: one value for every session; leave ?session= out", k.Name()))
			return
		}
		if k.SessionScoped() && !hasSel && r.Method != http.MethodDelete {
			writeError(w, protocol.Errorf(protocol.CodeSessionRequired, "", "%s is session-scoped: add ?session=<id, :index or profile name> (GET /sessions lists them)", k.Name()))
			return
		}
		var sessions []uint64
		if k.SessionScoped() && hasSel {
			sessions, perr = a.matchSessions(sel, isRead(r))
			if perr != nil {
				writeError(w, perr)
				return
			}
		}
		switch {
		case isRead(r):
			if len(devs) != 1 {
				writeError(w, protocol.Errorf(protocol.CodeAmbiguousSelector, "", "%q matches %d devices; a GET needs exactly one", ps.ByName("id"), len(devs)))
				return
			}
			var sid uint64
			if len(sessions) == 1 {
				sid = sessions[0]
			}
			e, warnings, err := a.svc.EntryWarn(devs[0], sid, k)
			if err != nil {
				writeError(w, asError(err))
				return
			}
			var data any = e
			if nav, ok := e.(protocol.Navigation); ok {
				// GET answers navigation's config, state and status
				// together (MODULES 1.3). The state is null until the
				// device renders navigation and reports it.
				data = protocol.NavigationView{Config: nav, State: devs[0].NavigationState(sid)}
			}
			// warnings: a stored value of the entry that was not accepted.
			writeWarned(w, data, warnings)
		case r.Method == http.MethodPost:
			body, perr := readBody(w, r)
			if perr != nil {
				writeError(w, perr)
				return
			}
			e, warnings, perr := protocol.DecodeEntryWarn(k, body, "")
			if perr != nil {
				writeError(w, perr)
				return
			}
			a.apply(w, devs, sessions, k, warnings, func(d *actors.Device, sid uint64) (protocol.Entry, []uint64, error) {
				got, err := a.svc.SetEntry(d, sid, e)
				return got, []uint64{sid}, err
			})
		case r.Method == http.MethodDelete:
			a.apply(w, devs, sessions, k, nil, func(d *actors.Device, sid uint64) (protocol.Entry, []uint64, error) {
				switch {
				case !k.SessionScoped():
					got, err := a.svc.ResetEntry(d, nil, k)
					return got, []uint64{0}, err
				case sid == 0:
					// No session= on a session-scoped route: every
					// session of the device, each listed in applied_to.
					return a.svc.ResetEntryEverySession(d, k)
				}
				got, err := a.svc.ResetEntry(d, []uint64{sid}, k)
				return got, []uint64{sid}, err
			})
		}
	}
}

// apply runs op on every (device, session) a POST or DELETE selects and
// answers with the value now in force and the list of what it changed. op
// returns the sessions it changed: its sid, 0 for a device-global entry,
// or, for a session-scoped entry without session= (sid 0), those the
// device had.
// Targets are applied one by one, and the first failure stops the rest:
// with several targets, the error answer carries applied_to too, listing
// exactly the targets that took the change before it (empty: none did).
// Every target is validated before any is applied (the body by
// DecodeEntry, the devices and sessions by the selectors), so what can
// fail partway is the service itself (a store that cannot write, a device
// that left or stays busy past the deadline). A success answer carries
// warnings, the body's (an error answer is about the error).
func (a *api) apply(w http.ResponseWriter, devs []*actors.Device, sessions []uint64, k protocol.Key, warnings []protocol.Error, op func(*actors.Device, uint64) (protocol.Entry, []uint64, error)) {
	targets := sessions
	if !k.SessionScoped() || len(sessions) == 0 {
		targets = []uint64{0}
	}
	var last protocol.Entry
	applied := make([]appliedTo, 0, len(devs)*len(targets))
	for _, d := range devs {
		for _, sid := range targets {
			e, changed, err := op(d, sid)
			if err != nil {
				if len(devs)*len(targets) > 1 {
					writePartialError(w, asError(err), applied)
				} else {
					writeError(w, asError(err))
				}
				return
			}
			last = e
			for _, s := range changed {
				applied = append(applied, appliedTo{DeviceType: d.Name, DeviceID: d.ID, SessionID: s})
			}
		}
	}
	writeApplied(w, last, applied, warnings)
}

func (a *api) allSettings(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	writeData(w, a.svc.Settings(), nil)
}

func (a *api) setting(k protocol.SettingKey) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		switch {
		case isRead(r):
			s := a.svc.Settings()
			writeData(w, s.Get(k), nil)
		case r.Method == http.MethodPost:
			body, perr := readBody(w, r)
			if perr != nil {
				writeError(w, perr)
				return
			}
			v, warnings, perr := protocol.DecodeSettingWarn(k, body)
			if perr != nil {
				writeError(w, perr)
				return
			}
			now, err := a.svc.SetSetting(k, v)
			if err != nil {
				writeError(w, asError(err))
				return
			}
			writeWarned(w, now, warnings)
		case r.Method == http.MethodDelete:
			now, err := a.svc.ResetSetting(k)
			if err != nil {
				writeError(w, asError(err))
				return
			}
			writeData(w, now, nil)
		}
	}
}

// deprecatedRouteName names deprecated route d as served under prefix, as
// the migration report and /metrics count it ("POST /3.0/force_scale").
func deprecatedRouteName(d protocol.DeprecatedRoute, prefix string) string {
	return d.Method + " " + prefix + d.Path
}

// deprecatedRoute serves one route of the deprecation table: exactly what
// its replacement does, plus one http-route-deprecated event, also when the
// call fails (the route was used).
func (a *api) deprecatedRoute(d protocol.DeprecatedRoute) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		body, perr := readBody(w, r)
		var req protocol.LegacyRequest
		if perr == nil {
			req, perr = d.Translate(body)
		}
		replacement := d.ReplacementFor("", "")
		var dev *actors.Device
		if perr == nil && d.Key != 0 {
			dev = a.findAnyType(req.DeviceID)
			if dev == nil {
				perr = protocol.Errorf(protocol.CodeUnknownDevice, "device_id", "no device with id %q is connected", req.DeviceID)
			} else if d.Key.NotOn(dev.Name, dev.Type) == nil {
				// Filled in only where the replacement exists: a grip
				// has no handedness route to be pointed at.
				replacement = d.ReplacementFor(dev.Name, dev.ID)
			}
		}
		a.svc.Activity().Publish(event.HTTPRouteDeprecated(deprecatedRouteName(d, a.prefix), d.Method+" "+a.prefix+replacement, r.RemoteAddr))
		if perr != nil {
			writeError(w, perr)
			return
		}
		var err error
		switch {
		case d.Setting != 0:
			var v any
			if v, perr = protocol.DecodeSetting(d.Setting, req.Body); perr == nil {
				_, err = a.svc.SetSetting(d.Setting, v)
			}
		case d.Key != 0:
			var e protocol.Entry
			if e, perr = protocol.DecodeEntry(d.Key, req.Body, ""); perr == nil {
				_, err = a.svc.SetEntry(dev, 0, e)
			}
		default:
			err = fmt.Errorf("transport: deprecated route %s has no replacement target", d.Path)
		}
		if perr != nil {
			writeError(w, perr)
			return
		}
		if err != nil {
			writeError(w, asError(err))
			return
		}
		writeOK(w, req.Warnings)
	}
}

// findAnyType finds a device by id across types (legacy bodies name only
// the id); arms first, as the legacy routes are about arms. The id matches
// as the replacement's {id} segment does (matchDevices): exactly, or else
// regardless of case ("049d"), so a legacy call and its replacement take
// the same device. An index is a path's reading only: a body names an id.
func (a *api) findAnyType(id string) *actors.Device {
	sel := protocol.DeviceSelector{ID: id, Index: -1}
	var folded *actors.Device
	for _, t := range a.svc.Types().Types() {
		all := a.svc.Devices().OfType(t)
		ids := make([]string, len(all))
		for i, d := range all {
			ids[i] = d.ID
		}
		idx := sel.MatchID(ids)
		if len(idx) == 0 {
			continue
		}
		if all[idx[0]].ID == id {
			return all[idx[0]]
		}
		if folded == nil {
			folded = all[idx[0]]
		}
	}
	return folded
}

func (a *api) deprecations(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	u, err := a.svc.Activity().Usage()
	if err != nil {
		writeError(w, asError(err))
		return
	}
	writeData(w, u, nil)
}

// stats reports each device loop's own measurements and the process's, for
// load tests (hapticbench) and operators.
func (a *api) stats(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	var doc protocol.Stats
	v, given, perr := protocol.QueryValue(r.URL.RawQuery, "devices")
	if perr != nil {
		writeError(w, perr)
		return
	}
	if given && v == "" {
		// As format= of GET /devices: a value given is one of those the
		// route takes. devices= answered everything, as if absent.
		writeError(w, protocol.Errorf(protocol.CodeInvalidValue, "", "GET /stats: devices= is empty: want all (the default) or none, or leave devices out"))
		return
	}
	switch v {
	case "", "all":
		doc = a.svc.StatsDoc()
	case "none":
		doc = a.svc.ShardStatsDoc()
	default:
		writeError(w, protocol.Errorf(protocol.CodeInvalidValue, "", "GET /stats: devices=%q: want all (the default) or none", v))
		return
	}
	// The data envelope writeData writes, by protocol's writer: with
	// thousands of arms encoding/json took most of the answer's CPU.
	buf := make([]byte, 0, 64+300*len(doc.Devices))
	buf = protocol.AppendStats(append(buf, `{"ok":true,"data":`...), &doc)
	writeRaw(w, "application/json", append(buf, "}\n"...))
}
