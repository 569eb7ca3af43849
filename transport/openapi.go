package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/schema"
)

// routeDoc is what the OpenAPI document says about a route. Schema names
// refer to the schema set (protocol/schema plus the documents published
// here).
type routeDoc struct {
	summary string
	query   []queryParam
	// body is the schema of a POST body; "" when the route reads none.
	body string
	// bodyOptional: an empty body is taken (as {}: POST /recordings
	// without -d records everything).
	bodyOptional bool
	// answer is the schema of a 200 answer: of its "data" unless plain.
	answer string
	plain  bool // answered as the bare document, not in the envelope
	// media, when set, is the media type of an answer that is not JSON
	// without parameters ("text/plain", "text/html"): the document declares
	// it without a schema.
	media string
	// unavailable, when set, is the schema of a 503 answer that is not the
	// error envelope (/readyz says which check failed).
	unavailable string
	// applied: POST and DELETE answers carry "applied_to".
	applied    bool
	deprecated bool
}

type queryParam struct {
	name, about string
	required    bool
}

var (
	querySession = queryParam{name: "session", about: "session selector: N or #N (id), :I (index in connection order, :-1 the newest), NAME (profile, * globs), NAME:I or :NAME:I (the vendor's spelling of NAME:I, as in :default:0)"}
	queryFormat  = queryParam{name: "format", about: "json: answer in the {\"ok\", \"data\"} envelope"}
)

// Schema names the transport publishes beside protocol's.
const (
	schemaVersion        = "version"
	schemaSessions       = "sessions"
	schemaDeprecations   = "deprecations"
	schemaRoot           = "root"
	schemaAppliedTo      = "applied-to"
	schemaEnvelope       = "envelope"
	schemaIndex          = "schema-index"
	schemaSessionsClosed = "sessions-closed"
	schemaHealth         = "health"
	schemaReadiness      = "readiness"
	schemaUIEntries      = "ui-entries"
	schemaUIFamilies     = "ui-families"
	schemaPorts          = "ports"
	schemaRecording      = "recording"
	schemaRecordings     = "recordings"
	schemaRecordingInput = "recording.input"
	// openAPIPath is where the OpenAPI document of the 3.x routes is.
	openAPIPath = "/openapi.json"
)

// versionDoc is GET /version's document.
type versionDoc struct {
	Service        string   `json:"service"`
	Version        string   `json:"version"`
	HapticdVersion string   `json:"hapticd_version"`
	APIVersions    []string `json:"api_versions"`
	GitHash        string   `json:"git_hash"`
	BuildTime      string   `json:"build_time"`
}

// rootDoc is what GET / answers a client that does not upgrade.
type rootDoc struct {
	Service   string   `json:"service"`
	API       string   `json:"api"`
	WebSocket string   `json:"websocket"`
	Routes    []string `json:"routes"`
}

// sessionsDoc is the data of GET /sessions.
type sessionsDoc struct {
	SessionCount int          `json:"session_count"`
	Sessions     []sessionDoc `json:"sessions"`
}

// schemaIndexDoc is what GET /schema answers.
type schemaIndexDoc struct {
	Dialect string            `json:"dialect"`
	OpenAPI string            `json:"openapi"`
	Schemas map[string]string `json:"schemas"` // name → URL
	About   map[string]string `json:"about"`   // name → one line
}

// schemaDocs is the machine-readable schema the 3.x listener serves, built
// once at start from the protocol tables and the route table, and never
// written after.
type schemaDocs struct {
	index   []byte
	docs    map[string][]byte // published name → JSON Schema document
	openAPI []byte
}

// newSchemaSet is protocol's schema set for the service's type table, with
// the documents only the transport writes.
func newSchemaSet(types *protocol.TypeTable) *schema.Set {
	s := schema.New(schema.Options{Types: types})
	s.Publish(schemaVersion, "GET /version: the service, its version and the API versions it speaks.", schema.FromType(reflect.TypeFor[versionDoc]()))
	s.Publish(schemaRoot, "GET / without a WebSocket upgrade: what this port serves.", schema.FromType(reflect.TypeFor[rootDoc]()))
	s.Publish(schemaSessions, "The data of GET /sessions.", schema.FromType(reflect.TypeFor[sessionsDoc]()))
	s.Publish(schemaDeprecations, "The data of GET /deprecations: the migration report.", schema.FromType(reflect.TypeFor[activity.Usage]()))
	s.Publish(schemaAppliedTo, "One (device, session) a POST or DELETE changed.", schema.FromType(reflect.TypeFor[appliedTo]()))
	s.Publish(schemaIndex, "GET /schema: every schema's name and URL.", schema.FromType(reflect.TypeFor[schemaIndexDoc]()))
	s.Publish(schemaSessionsClosed, "The data of GET /sessions/closed: the most recent session ends, each with its reason.", schema.FromType(reflect.TypeFor[closedListDoc]()))
	s.Publish(schemaHealth, "GET /healthz: the process serves HTTP.", schema.FromType(reflect.TypeFor[healthDoc]()))
	s.Publish(schemaPorts, "The data of GET /ports: every port the hardware scan saw, loaded, skipped or failed, with the reason, a fix hint and the next try.", schema.FromType(reflect.TypeFor[portsDoc]()))
	s.Publish(schemaReadiness, "GET /readyz (200 or 503): each readiness check and why it failed.", schema.FromType(reflect.TypeFor[readyDoc]()))
	s.Publish(schemaRecording, "One MCAP recording: POST /recordings and DELETE /recordings/{id} answer it.", schema.FromType(reflect.TypeFor[recording.Info]()))
	s.Publish(schemaRecordings, "The data of GET /recordings.", schema.FromType(reflect.TypeFor[[]recording.Info]()))
	s.Publish(schemaRecordingInput, "The body of POST /recordings: what to record (every device and session when empty).", recordingInputSchema())
	s.Publish(schemaPairing, "The data of GET /pairing: every grip with the ids of the arms it is paired with (always none: hapticd does not pair).", schema.FromType(reflect.TypeFor[pairingDoc]()))
	s.Publish(schemaExpertStatus, "The data of GET /expert/status: hapticd has no expert status (available is false) and names the routes that hold its figures.", schema.FromType(reflect.TypeFor[expertStatusDoc]()))
	s.Publish(schemaUIEntries, "The data of GET /ui/entries.json: the config entries the dashboard edits.", schema.FromType(reflect.TypeFor[[]uiEntry]()))
	s.Publish(schemaUIFamilies, "The data of GET /ui/families.json: the product name of each device type number, for the dashboard's card titles.", schema.FromType(reflect.TypeFor[[]uiFamily]()))
	s.Publish(schemaEnvelope, "The answer of config, settings and list routes: {\"ok\": true, \"data\": ...} (and \"applied_to\" after POST and DELETE of config routes, \"warnings\" after a POST whose body had members the service ignored, and after a GET of a config entry whose stored value was not accepted); errors use error-envelope.",
		schema.Envelope(schema.Schema{}, schema.Ref(schemaAppliedTo), schema.Ref("error")))
	return s
}

// buildSchemaDocs renders every published schema, the index and the
// OpenAPI document of routes, once.
func buildSchemaDocs(types *protocol.TypeTable, routes []route) (*schemaDocs, error) {
	set := newSchemaSet(types)
	out := &schemaDocs{docs: map[string][]byte{}}
	index := schemaIndexDoc{Dialect: schema.Dialect, OpenAPI: openAPIPath, Schemas: map[string]string{}, About: map[string]string{}}
	for _, p := range set.Published() {
		doc, err := set.Document(p.Name)
		if err != nil {
			return nil, fmt.Errorf("transport: schema %s: %w", p.Name, err)
		}
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("transport: schema %s: %w", p.Name, err)
		}
		out.docs[p.Name] = append(b, '\n')
		index.Schemas[p.Name] = "/schema/" + p.Name
		index.About[p.Name] = p.About
	}
	b, err := json.Marshal(index)
	if err != nil {
		return nil, fmt.Errorf("transport: schema index: %w", err)
	}
	out.index = append(b, '\n')
	doc, err := openAPIDocument(set, routes)
	if err != nil {
		return nil, err
	}
	if out.openAPI, err = json.Marshal(doc); err != nil {
		return nil, fmt.Errorf("transport: openapi: %w", err)
	}
	out.openAPI = append(out.openAPI, '\n')
	return out, nil
}

func writeRaw(w http.ResponseWriter, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(b) // the client is gone if this fails
}

func (a *api) schemaIndex(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	writeRaw(w, "application/json", a.schemas.index)
}

func (a *api) schemaDoc(w http.ResponseWriter, _ *http.Request, ps httprouter.Params) {
	b, ok := a.schemas.docs[ps.ByName("name")]
	if !ok {
		writeError(w, protocol.Errorf(protocol.CodeUnknownRoute, "", "no schema named %q: GET /schema lists them", ps.ByName("name")))
		return
	}
	writeRaw(w, "application/schema+json", b)
}

func (a *api) openAPI(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) {
	writeRaw(w, "application/json", a.schemas.openAPI)
}

// openAPIPathOf turns an httprouter path into an OpenAPI path template:
// /arm3/:id/config/preset → /arm3/{id}/config/preset.
func openAPIPathOf(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if isParam(parts, i) {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// isParam reports whether segment i of an httprouter path is a parameter:
// ":name", or "*name" as the last segment (a catch-all). A '*' elsewhere is
// literal (the family selectors *inverse and *verse_grip).
func isParam(parts []string, i int) bool {
	s := parts[i]
	return len(s) > 1 && (s[0] == ':' || (s[0] == '*' && i == len(parts)-1))
}

// openAPIDocument is the OpenAPI 3.1 document of routes, with every schema
// of set under components.schemas. A route without a routeDoc is listed
// with an undescribed answer (TestOpenAPIDescribesEveryRoute fails on it).
func openAPIDocument(set *schema.Set, routes []route) (schema.Schema, error) {
	const comp = "#/components/schemas/"
	defs, err := set.Definitions(comp)
	if err != nil {
		return nil, fmt.Errorf("transport: openapi: %w", err)
	}
	ref := func(name string) schema.Schema { return schema.Schema{"$ref": comp + name} }
	errorResponses := schema.Schema{}
	for _, st := range schema.ErrorStatuses() {
		errorResponses[fmt.Sprint("error-", st)] = schema.Schema{
			"description": http.StatusText(st),
			"content":     schema.Schema{"application/json": schema.Schema{"schema": ref(schema.ErrorEnvelopeName(st))}},
		}
	}
	paths := schema.Schema{}
	for _, rt := range routes {
		p := openAPIPathOf(rt.path)
		item, _ := paths[p].(schema.Schema)
		if item == nil {
			item = schema.Schema{}
			paths[p] = item
		}
		op := schema.Schema{}
		item[strings.ToLower(rt.method)] = op
		var params []schema.Schema
		segs := strings.Split(rt.path, "/")
		for i, s := range segs {
			if isParam(segs, i) {
				params = append(params, schema.Schema{"name": s[1:], "in": "path", "required": true, "schema": schema.Schema{"type": "string"}})
			}
		}
		responses := schema.Schema{}
		for _, st := range schema.ErrorStatuses() {
			responses[fmt.Sprint(st)] = schema.Schema{"$ref": fmt.Sprint("#/components/responses/error-", st)}
		}
		op["responses"] = responses
		d := rt.doc
		if d == nil {
			responses["200"] = schema.Schema{"description": "not described"}
			if len(params) > 0 {
				op["parameters"] = params
			}
			continue
		}
		op["summary"] = d.summary
		if d.deprecated {
			op["deprecated"] = true
		}
		for _, q := range d.query {
			params = append(params, schema.Schema{"name": q.name, "in": "query", "required": q.required, "description": q.about, "schema": schema.Schema{"type": "string"}})
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if d.body != "" && rt.method == http.MethodPost {
			op["requestBody"] = schema.Schema{"required": !d.bodyOptional, "content": schema.Schema{"application/json": schema.Schema{"schema": ref(d.body)}}}
		}
		if d.media != "" {
			content := schema.Schema{}
			for _, m := range strings.Split(d.media, ",") {
				content[m] = schema.Schema{}
			}
			responses["200"] = schema.Schema{"description": "OK", "content": content}
			continue
		}
		if d.unavailable != "" {
			responses["503"] = schema.Schema{"description": "Service Unavailable", "content": schema.Schema{"application/json": schema.Schema{"schema": ref(d.unavailable)}}}
		}
		var answer schema.Schema
		contentType := "application/json"
		switch {
		case d.answer == jsonSchemaAnswer:
			answer = schema.Schema{"$ref": schema.Dialect}
			contentType = "application/schema+json"
		case d.answer == openAPIAnswer:
			answer = schema.Schema{"type": "object", "required": []string{"openapi", "info", "paths"}, "properties": schema.Schema{"openapi": schema.Schema{"type": "string", "pattern": `^3\.1\.`}}}
		case d.plain:
			answer = ref(d.answer)
		default:
			var applied, warning schema.Schema
			if d.applied && rt.method != http.MethodGet {
				applied = ref(schemaAppliedTo)
			}
			if d.body != "" && rt.method == http.MethodPost && d.body != schemaRecordingInput {
				// What of the body the service ignored; a recording's
				// body is closed (an unknown member is a 400).
				warning = ref("error")
			}
			if d.applied && rt.method == http.MethodGet {
				// A config entry's stored value this build did not
				// accept (docs/protocol.md, bad stored files).
				warning = ref("error")
			}
			answer = schema.Envelope(ref(d.answer), applied, warning)
		}
		if d.plain && hasQuery(d, queryFormat.name) {
			// ?format=json wraps the same document in the envelope.
			answer = schema.Schema{"anyOf": []schema.Schema{answer, schema.Envelope(ref(d.answer), nil, nil)}}
		}
		responses["200"] = schema.Schema{"description": "OK", "content": schema.Schema{contentType: schema.Schema{"schema": answer}}}
	}
	return schema.Schema{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": schema.Dialect,
		"info": schema.Schema{
			"title":   "hapticd 3.x HTTP API",
			"version": protocol.APIVersion,
			"description": "The HTTP routes of the 3.x listener (the legacy 3.0 listener serves the same routes under /3.0/, without /schema and /openapi.json). " +
				"Error answers use the error envelope with the status of their code. The simulation WebSocket upgrades on / (frames: /schema/frame; messages: /schema/client-message); " +
				"the events socket has its own port (/schema/event).",
		},
		"paths":      paths,
		"components": schema.Schema{"schemas": defs, "responses": errorResponses},
	}, nil
}

// Answers that are not in the schema set.
const (
	jsonSchemaAnswer = "(json schema)"
	openAPIAnswer    = "(openapi)"
)

// operatorRoutes documents the operator's routes of the 3.x port, which
// Server.withOperatorRoutes serves in front of the API router: metrics,
// probes and the dashboard. They are only described (no handler).
func operatorRoutes() []route {
	get := http.MethodGet
	return []route{
		{method: get, path: "/metrics", doc: &routeDoc{summary: "Prometheus metrics (text exposition format)", media: "text/plain"}},
		{method: get, path: "/healthz", doc: &routeDoc{summary: "Liveness: the process serves HTTP", answer: schemaHealth, plain: true}},
		{method: get, path: "/readyz", doc: &routeDoc{summary: "Readiness: listeners up, device loops running, state directory writable (503 with the failed checks otherwise)", answer: schemaReadiness, plain: true, unavailable: schemaReadiness}},
		{method: get, path: "/ports", doc: &routeDoc{summary: "Hardware ports: each one the scan saw, loaded (with its device), skipped or failed, with the reason, a fix hint and the next try", answer: schemaPorts}},
		{method: get, path: "/ui/", doc: &routeDoc{summary: "The dashboard page", media: "text/html"}},
		{method: get, path: "/ui/entries.json", doc: &routeDoc{summary: "The config entries the dashboard edits", answer: schemaUIEntries}},
		{method: get, path: "/ui/families.json", doc: &routeDoc{summary: "The product name of each device type number, for the dashboard", answer: schemaUIFamilies}},
		{method: get, path: "/ui/*file", doc: &routeDoc{summary: "The dashboard's embedded files", media: "text/html,text/javascript,text/css,text/plain"}},
		{method: get, path: "/ui/vendor/uplot/*file", doc: &routeDoc{summary: "The dashboard's vendored uPlot: its script, style sheet, README and licence", media: "text/javascript,text/css,text/plain,text/markdown"}},
	}
}

// describe documents the routes of routes at path (every method).
func describe(routes []route, path string, d routeDoc) {
	for i := range routes {
		if routes[i].path == path {
			doc := d
			routes[i].doc = &doc
		}
	}
}

// describeMethod documents the route of routes at path with method only.
func describeMethod(routes []route, method, path string, d routeDoc) {
	for i := range routes {
		if routes[i].path == path && routes[i].method == method {
			doc := d
			routes[i].doc = &doc
		}
	}
}

// describeRoutes documents the route table for the OpenAPI document. It
// reads the same tables the routes were registered from.
func (a *api) describeRoutes(rs []route) {
	describe(rs, "/", routeDoc{summary: "What this port serves (a WebSocket upgrade here opens a simulation session)", answer: schemaRoot})
	describe(rs, "/version", routeDoc{summary: "Service and API versions", answer: schemaVersion, plain: true, query: []queryParam{queryFormat}})
	describe(rs, "/devices", routeDoc{summary: "Inventory: every device with config, state and status", answer: schema.Devices, plain: true, query: []queryParam{querySession, queryFormat}})
	describe(rs, "/sessions", routeDoc{summary: "Connected simulation sessions", answer: schemaSessions})
	describe(rs, "/recordings", routeDoc{summary: "The recordings to MCAP: those running and the last 64 stopped", answer: schemaRecordings})
	describeMethod(rs, http.MethodPost, "/recordings", routeDoc{summary: "Start a recording to MCAP", body: schemaRecordingInput, bodyOptional: true, answer: schemaRecording})
	describe(rs, "/recordings/:id", routeDoc{summary: "Stop a recording; the answer is its final state", answer: schemaRecording})
	describe(rs, "/sessions/closed", routeDoc{summary: "The most recent session ends, each with its typed reason", answer: schemaSessionsClosed})
	describe(rs, "/stats", routeDoc{summary: "Loop periods, overruns and process resource use", answer: "stats", query: []queryParam{
		{name: "devices", about: "all (the default): every device's entry; none: the simulation shards and the process only, a few kilobytes however many devices"}}})
	describe(rs, "/events", routeDoc{summary: "The recent-events ring", answer: "events-page", query: []queryParam{
		{name: "since", about: "return events with seq > since (default 0)"}, {name: "limit", about: "at most this many, 1..10000 (default 100)"}}})
	describe(rs, "/deprecations", routeDoc{summary: "The migration report: deprecated routes and commands in use", answer: schemaDeprecations})
	describe(rs, pairingPath, routeDoc{summary: "Grip pairing: every grip and the arms it is paired with (hapticd pairs none)", answer: schemaPairing})
	describe(rs, expertStatusPath, routeDoc{summary: "Expert status: hapticd has none, and says where its figures are", answer: schemaExpertStatus})
	types := a.svc.Types()
	for _, t := range types.Types() {
		for _, key := range types.Keys(t) {
			for _, k := range protocol.Keys() {
				if !k.AppliesTo(t) {
					continue
				}
				describe(rs, "/"+key+"/:id/config/"+k.Path(), configDoc(key, k))
				if g, ok := configGetDoc(key, k); ok {
					describeMethod(rs, http.MethodGet, "/"+key+"/:id/config/"+k.Path(), g)
				}
			}
			if t == protocol.TypeArm {
				describe(rs, "/"+key+"/:id/effects", effectsDoc(key))
			}
		}
	}
	describe(rs, "/settings", routeDoc{summary: "Every setting", answer: "settings"})
	for _, k := range protocol.SettingKeys() {
		describe(rs, "/settings/"+k.Path(), routeDoc{summary: "Setting " + k.Path(), body: schema.SettingName(k) + ".input", answer: schema.SettingName(k)})
	}
	for _, d := range protocol.DeprecatedRoutes() {
		describe(rs, d.Path, routeDoc{summary: "Deprecated (removal in 4.0): use " + d.Method + " " + d.Replacement, body: schema.DeprecatedBodyName(d), answer: schema.OKName, plain: true, deprecated: true})
	}
	describe(rs, "/schema", routeDoc{summary: "Index of the JSON Schema documents", answer: schemaIndex, plain: true})
	describe(rs, "/schema/:name", routeDoc{summary: "One JSON Schema 2020-12 document", answer: jsonSchemaAnswer, plain: true})
	describe(rs, openAPIPath, routeDoc{summary: "This OpenAPI 3.1 document", answer: openAPIAnswer, plain: true})
}

func hasQuery(d *routeDoc, name string) bool {
	for _, q := range d.query {
		if q.name == name {
			return true
		}
	}
	return false
}

// configDoc documents a config route of entry k under the type name (or
// family selector) name.
func configDoc(name string, k protocol.Key) routeDoc {
	d := routeDoc{summary: k.Name() + " of " + name + " {id} (device id, index or *)", body: schema.EntryName(k) + ".input", answer: schema.EntryName(k), applied: true}
	if k.SessionScoped() {
		q := querySession
		q.about += "; required for GET and POST, DELETE without it resets every session"
		d.query = []queryParam{q}
	}
	return d
}

// configGetDoc documents GET of an entry whose answer is not the entry
// itself: navigation answers its config, state and status together (POST
// and DELETE echo the entry as usual).
func configGetDoc(name string, k protocol.Key) (routeDoc, bool) {
	if k != protocol.KeyNavigation {
		return routeDoc{}, false
	}
	d := configDoc(name, k)
	d.answer = schema.NavigationView
	d.summary = "navigation of " + name + " {id}: config, state and status"
	return d, true
}

// effectsDoc documents GET of the effects an arm renders.
func effectsDoc(name string) routeDoc {
	return routeDoc{summary: "The effects " + name + " {id} renders: the declaring session's, as declared, with the time each has left", answer: schema.EffectsInForce}
}

// familyRoutes are the config routes under the family selectors (*inverse,
// *verse_grip), for the OpenAPI document only: httprouter cannot register
// them (a leading '*' is a catch-all), notFound serves them.
func (a *api) familyRoutes() []route {
	var rs []route
	for _, t := range a.svc.Types().Types() {
		for _, k := range protocol.Keys() {
			if !k.AppliesTo(t) {
				continue
			}
			d := configDoc(protocol.FamilySelector(t), k)
			for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
				doc := &d
				if g, ok := configGetDoc(protocol.FamilySelector(t), k); ok && m == http.MethodGet {
					doc = &g
				}
				rs = append(rs, route{method: m, path: "/" + protocol.FamilySelector(t) + "/:id/config/" + k.Path(), doc: doc})
			}
		}
		if t == protocol.TypeArm {
			d := effectsDoc(protocol.FamilySelector(t))
			rs = append(rs, route{method: http.MethodGet, path: "/" + protocol.FamilySelector(t) + "/:id/effects", doc: &d})
		}
	}
	return rs
}

// undescribed lists the routes without a routeDoc, as "METHOD path".
func undescribed(rs []route) []string {
	var out []string
	for _, rt := range rs {
		if rt.doc == nil {
			out = append(out, rt.method+" "+rt.path)
		}
	}
	sort.Strings(out)
	return out
}

// recordingInputSchema is the body of POST /recordings as the service
// takes it: recording.Options, each member also null (an absent member, as
// in every object of several members: docs/protocol.md, Input).
func recordingInputSchema() schema.Schema {
	s := schema.FromType(reflect.TypeFor[recording.Options]())
	props, _ := s["properties"].(schema.Schema)
	// What Options.Check refuses besides the types: ASCII names, so
	// maxLength's characters are its bytes.
	props["name"] = schema.Schema{"type": "string", "pattern": recording.NamePattern, "maxLength": recording.MaxNameLen}
	props["rate_hz"] = schema.Schema{"anyOf": []schema.Schema{{"const": 0}, {"type": "number", "minimum": recording.MinRateHz}}}
	for _, list := range []string{"devices", "sessions"} {
		if p, ok := props[list].(schema.Schema); ok {
			p["minItems"] = 1 // empty would record none (leave it out for every one)
		}
	}
	for name, p := range props {
		props[name] = schema.Schema{"anyOf": []schema.Schema{p.(schema.Schema), {"type": "null"}}}
	}
	return s
}
