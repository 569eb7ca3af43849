// Package schematest checks what a running hapticd writes against the
// machine-readable schema that same service serves (GET /schema/{name} and
// GET /openapi.json), with a real JSON Schema validator. Test helpers call
// it on every frame, event and HTTP answer they read, so the whole test
// suite is the check that the schema and the code agree.
//
// It is imported by tests only (the service itself never validates its own
// output); it lives in a package of its own so that the transport and
// command tests share one implementation.
package schematest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/hapticd/hapticd/protocol/schema"
)

// Validator validates documents against the schema served at one 3.x base
// URL. It fetches and compiles lazily, once per schema, and is safe for
// concurrent use.
type Validator struct {
	// Immutable after New or ForSet.
	base   string
	client *http.Client
	// fetch reads a served document by path ("/schema/event").
	fetch func(path string) ([]byte, error)

	// mu guards the following.
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema // by location
	openAPI  map[string]any
	docs     map[string]*servedDoc // fetched documents by path
}

// servedDoc is one document a service served, compiled from in the shared
// compilers (compiledDocs) by its content.
type servedDoc struct {
	digest [sha256.Size]byte
	body   []byte
}

// compiledDocs compiles each distinct served document once per test
// process, whichever Validator asks first: every test service of a run
// serves the same documents, and a compile takes tens to hundreds of
// milliseconds on a loaded machine, which inside a test's lease window made
// the first check of a kind flake (a 1 s lease lapsing meanwhile). It is
// the package's only state shared between Validators; a schema is
// compiled from the document's bytes alone (documents refer only within
// themselves), so sharing changes no answer.
var compiledDocs = docCompilers{byDigest: map[[sha256.Size]byte]*docCompiler{}}

type docCompilers struct {
	mu       sync.Mutex
	byDigest map[[sha256.Size]byte]*docCompiler
}

// docCompiler compiles schemas of one document; jsonschema's Compiler is
// not safe for concurrent use, so each has its own lock.
type docCompiler struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler // nil until the document is added
	compiled map[string]*jsonschema.Schema
}

// compile is the schema at fragment of doc, served at path.
func (cs *docCompilers) compile(path string, doc *servedDoc, fragment string) (*jsonschema.Schema, error) {
	cs.mu.Lock()
	dc := cs.byDigest[doc.digest]
	if dc == nil {
		dc = &docCompiler{compiled: map[string]*jsonschema.Schema{}}
		cs.byDigest[doc.digest] = dc
	}
	cs.mu.Unlock()

	dc.mu.Lock()
	defer dc.mu.Unlock()
	if s, ok := dc.compiled[fragment]; ok {
		return s, nil
	}
	url := resourceURL(path)
	if dc.compiler == nil {
		parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc.body))
		if err != nil {
			return nil, fmt.Errorf("schematest: %s is not JSON: %w", path, err)
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		c.AssertFormat()
		if err := c.AddResource(url, parsed); err != nil {
			return nil, fmt.Errorf("schematest: %s: %w", path, err)
		}
		dc.compiler = c
	}
	s, err := dc.compiler.Compile(url + "#" + fragment)
	if err != nil {
		return nil, fmt.Errorf("schematest: compile %s#%s: %w", path, fragment, err)
	}
	dc.compiled[fragment] = s
	return s, nil
}

// New validates against the schema served by the 3.x listener at base
// ("http://127.0.0.1:10001").
func New(base string) *Validator {
	v := newValidator()
	v.base = strings.TrimSuffix(base, "/")
	v.client = &http.Client{}
	v.fetch = v.get
	return v
}

// ForSet validates against the documents of set, as a service would serve
// them, for tests of a part that runs without the 3.x listener (the events
// socket alone). It serves schemas by name only: CheckAnswer needs New.
func ForSet(set *schema.Set) *Validator {
	v := newValidator()
	v.fetch = func(path string) ([]byte, error) {
		name, ok := strings.CutPrefix(path, "/schema/")
		if !ok {
			return nil, fmt.Errorf("schematest: %s is not served without a listener", path)
		}
		doc, err := set.Document(name)
		if err != nil {
			return nil, err
		}
		return json.Marshal(doc)
	}
	return v
}

func newValidator() *Validator {
	return &Validator{compiled: map[string]*jsonschema.Schema{}, docs: map[string]*servedDoc{}}
}

// Close releases the validator's idle connections.
func (v *Validator) Close() {
	if v.client != nil {
		v.client.CloseIdleConnections()
	}
}

func (v *Validator) get(path string) ([]byte, error) {
	resp, err := v.client.Get(v.base + path)
	if err != nil {
		return nil, fmt.Errorf("schematest: GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("schematest: GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("schematest: GET %s: %d %s", path, resp.StatusCode, b)
	}
	return b, nil
}

// resourceURL is where a served document is registered with a compiler.
func resourceURL(path string) string { return "http://hapticd.test" + path }

// docLocked is the served document at path, fetched once.
func (v *Validator) docLocked(path string) (*servedDoc, error) {
	if d, ok := v.docs[path]; ok {
		return d, nil
	}
	b, err := v.fetch(path)
	if err != nil {
		return nil, err
	}
	d := &servedDoc{digest: sha256.Sum256(b), body: b}
	v.docs[path] = d
	return d, nil
}

func (v *Validator) compileLocked(path, fragment string) (*jsonschema.Schema, error) {
	loc := path + "#" + fragment
	if s, ok := v.compiled[loc]; ok {
		return s, nil
	}
	doc, err := v.docLocked(path)
	if err != nil {
		return nil, err
	}
	s, err := compiledDocs.compile(path, doc, fragment)
	if err != nil {
		return nil, err
	}
	v.compiled[loc] = s
	return s, nil
}

// Schema compiles the served schema called name.
func (v *Validator) Schema(name string) (*jsonschema.Schema, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.compileLocked("/schema/"+name, "")
}

// Check validates doc (JSON) against the served schema called name.
func (v *Validator) Check(name string, doc []byte) error {
	s, err := v.Schema(name)
	if err != nil {
		return err
	}
	return validate(s, doc, "schema "+name)
}

func validate(s *jsonschema.Schema, doc []byte, what string) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("schematest: not JSON (%v): %.300s", err, doc)
	}
	if err := s.Validate(inst); err != nil {
		return fmt.Errorf("schematest: %.2000s\ndoes not validate against %s: %w", doc, what, err)
	}
	return nil
}

// OpenAPI is the served OpenAPI document, decoded.
func (v *Validator) OpenAPI() (map[string]any, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.openAPILocked()
}

func (v *Validator) openAPILocked() (map[string]any, error) {
	if v.openAPI != nil {
		return v.openAPI, nil
	}
	d, err := v.docLocked("/openapi.json")
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(d.body))
	if err != nil {
		return nil, fmt.Errorf("schematest: /openapi.json is not JSON: %w", err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schematest: /openapi.json is not an object")
	}
	v.openAPI = m
	return m, nil
}

// Operation finds the OpenAPI path template and operation that serve
// method and path (without query): a literal segment wins over a template
// one.
func Operation(doc map[string]any, method, path string) (template string, op map[string]any, ok bool) {
	paths, _ := doc["paths"].(map[string]any)
	want := strings.Split(path, "/")
	best := -1
	for tmpl, item := range paths {
		parts := strings.Split(tmpl, "/")
		if len(parts) != len(want) {
			continue
		}
		literal := 0
		match := true
		for i, p := range parts {
			switch {
			case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
			case p == want[i]:
				literal++
			default:
				match = false
			}
		}
		if !match || literal <= best {
			continue
		}
		o, found := item.(map[string]any)[strings.ToLower(method)].(map[string]any)
		if !found {
			continue
		}
		best, template, op, ok = literal, tmpl, o, true
	}
	return template, op, ok
}

// CheckAnswer validates an HTTP answer of the 3.x listener (path without
// query) against the response the OpenAPI document declares for its route,
// method and status. An answer the document has no route, status or media
// type for is an error too.
func (v *Validator) CheckAnswer(method, path string, status int, contentType string, body []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	doc, err := v.openAPILocked()
	if err != nil {
		return err
	}
	var resp map[string]any
	var ptr string
	tmpl, op, ok := Operation(doc, method, path)
	if ok {
		responses, _ := op["responses"].(map[string]any)
		resp, ok = responses[strconv.Itoa(status)].(map[string]any)
		if !ok {
			return fmt.Errorf("schematest: %s %s (%s) answered %d, which the OpenAPI document does not declare: %.300s", method, path, tmpl, status, body)
		}
		ptr = "/paths/" + escape(tmpl) + "/" + strings.ToLower(method) + "/responses/" + strconv.Itoa(status)
	} else {
		// No such route (or not with this method): the answer must be one
		// of the declared error answers.
		tmpl = "(no route)"
		if status < 400 {
			return fmt.Errorf("schematest: %s %s answered %d but the OpenAPI document has no such route", method, path, status)
		}
		resp = map[string]any{"$ref": "#/components/responses/error-" + strconv.Itoa(status)}
	}
	if ref, isRef := resp["$ref"].(string); isRef {
		ptr, _ = strings.CutPrefix(ref, "#")
		if resp, ok = lookup(doc, ptr); !ok {
			return fmt.Errorf("schematest: %s %s answered %d: response %s is not in the OpenAPI document", method, path, status, ref)
		}
	}
	content, _ := resp["content"].(map[string]any)
	media := contentType
	if i := strings.IndexByte(media, ';'); i >= 0 {
		media = media[:i]
	}
	declared, ok := content[media].(map[string]any)
	if !ok {
		return fmt.Errorf("schematest: %s %s (%s) answered %d with %q, which the OpenAPI document does not declare (it has %v)", method, path, tmpl, status, contentType, keys(content))
	}
	if declared["schema"] == nil {
		return nil // a declared answer that is not JSON (a page, a metrics exposition)
	}
	s, err := v.compileLocked("/openapi.json", ptr+"/content/"+escape(media)+"/schema")
	if err != nil {
		return err
	}
	return validate(s, body, fmt.Sprintf("the OpenAPI answer of %s %s %d", method, tmpl, status))
}

// CheckRequest validates the body of a request the service accepted
// against the request body the OpenAPI document declares for its route: the
// schema must not refuse what the service takes. A route that declares no
// body passes.
func (v *Validator) CheckRequest(method, path string, body []byte) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	doc, err := v.openAPILocked()
	if err != nil {
		return err
	}
	tmpl, op, ok := Operation(doc, method, path)
	if !ok {
		return fmt.Errorf("schematest: %s %s was accepted but the OpenAPI document has no such route", method, path)
	}
	rb, _ := op["requestBody"].(map[string]any)
	content, _ := rb["content"].(map[string]any)
	if _, ok := content["application/json"]; !ok {
		return nil
	}
	ptr := "/paths/" + escape(tmpl) + "/" + strings.ToLower(method) + "/requestBody/content/application~1json/schema"
	s, err := v.compileLocked("/openapi.json", ptr)
	if err != nil {
		return err
	}
	return validate(s, body, fmt.Sprintf("the OpenAPI request body of %s %s", method, tmpl))
}

// escape is a JSON pointer token, URL-encoded for a fragment.
func escape(tok string) string {
	tok = strings.ReplaceAll(tok, "~", "~0")
	tok = strings.ReplaceAll(tok, "/", "~1")
	return url.PathEscape(tok)
}

// lookup resolves a JSON pointer fragment ("/components/responses/x").
func lookup(doc map[string]any, frag string) (map[string]any, bool) {
	var cur any = doc
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur = m[tok]
	}
	m, ok := cur.(map[string]any)
	return m, ok
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
