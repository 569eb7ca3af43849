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

// compiledDocs is every served document a Validator of this test binary
// has compiled, by path and content. Compiling a schema takes seconds under
// -race on a loaded machine, and each test service has its own Validator:
// without it, a test whose timing window (a 1 s lease) held its first check
// of a kind failed on noise. Services built alike serve the same bytes, so
// all but the first Validator find their schemas compiled. It is the one
// package-level variable: a test helper's cache, guarded by its mutex, and
// an entry is never replaced once added.
var compiledDocs = struct {
	mu        sync.Mutex
	byContent map[[sha256.Size]byte]*compiledDoc
}{byContent: map[[sha256.Size]byte]*compiledDoc{}}

// compiledDoc is one served document and the schemas compiled from it.
type compiledDoc struct {
	// Immutable after sharedDoc.
	path string
	doc  any // decoded; read only

	warm sync.Once

	// mu guards the following.
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema // by fragment
	err      error                         // of registering the document
}

// sharedDoc is the compiled form of the document served at path as b,
// shared with every Validator that was served the same bytes there.
func sharedDoc(path string, b []byte) (*compiledDoc, error) {
	h := sha256.New()
	h.Write([]byte(path))
	h.Write([]byte{0})
	h.Write(b)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	compiledDocs.mu.Lock()
	defer compiledDocs.mu.Unlock()
	if d, ok := compiledDocs.byContent[key]; ok {
		return d, d.err
	}
	d := &compiledDoc{path: path, schemas: map[string]*jsonschema.Schema{}}
	d.doc, d.err = jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if d.err != nil {
		d.err = fmt.Errorf("schematest: %s is not JSON: %w", path, d.err)
	} else {
		d.compiler = jsonschema.NewCompiler()
		d.compiler.DefaultDraft(jsonschema.Draft2020)
		d.compiler.AssertFormat()
		if err := d.compiler.AddResource(resourceURL(path), d.doc); err != nil {
			d.err = fmt.Errorf("schematest: %s: %w", path, err)
		}
	}
	compiledDocs.byContent[key] = d
	return d, d.err
}

// resourceURL is where a served document is registered with its compiler.
func resourceURL(path string) string { return "http://hapticd.test" + path }

// schema compiles the schema at fragment ("" for the root) of the document.
func (d *compiledDoc) schema(fragment string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	if s, ok := d.schemas[fragment]; ok {
		return s, nil
	}
	loc := resourceURL(d.path) + "#" + fragment
	s, err := d.compiler.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("schematest: compile %s: %w", loc, err)
	}
	d.schemas[fragment] = s
	return s, nil
}

// compileAll compiles every schema of the document a check may ask for,
// once per content: the root of a /schema document, and each request body
// and answer of the OpenAPI document. A schema that does not compile is
// left for the check that needs it to report.
func (d *compiledDoc) compileAll() {
	d.warm.Do(func() {
		if d.path != openAPIPath {
			_, _ = d.schema("")
			return
		}
		doc, _ := d.doc.(map[string]any)
		for _, frag := range openAPISchemas(doc) {
			_, _ = d.schema(frag)
		}
	})
}

// openAPISchemas lists the fragments of every JSON request body and answer
// schema the OpenAPI document declares, as CheckAnswer and CheckRequest
// name them.
func openAPISchemas(doc map[string]any) []string {
	var out []string
	media := func(ptr string, content map[string]any) {
		for m, c := range content {
			if c, _ := c.(map[string]any); c["schema"] != nil {
				out = append(out, ptr+"/content/"+escape(m)+"/schema")
			}
		}
	}
	paths, _ := doc["paths"].(map[string]any)
	for tmpl, item := range paths {
		ops, _ := item.(map[string]any)
		for method, op := range ops {
			op, _ := op.(map[string]any)
			ptr := "/paths/" + escape(tmpl) + "/" + method
			rb, _ := op["requestBody"].(map[string]any)
			content, _ := rb["content"].(map[string]any)
			media(ptr+"/requestBody", content)
			responses, _ := op["responses"].(map[string]any)
			for status, resp := range responses {
				resp, _ := resp.(map[string]any)
				if _, isRef := resp["$ref"]; isRef {
					continue // compiled under components
				}
				content, _ := resp["content"].(map[string]any)
				media(ptr+"/responses/"+status, content)
			}
		}
	}
	components, _ := doc["components"].(map[string]any)
	responses, _ := components["responses"].(map[string]any)
	for name, resp := range responses {
		resp, _ := resp.(map[string]any)
		content, _ := resp["content"].(map[string]any)
		media("/components/responses/"+escape(name), content)
	}
	return out
}

// openAPIPath is where a 3.x listener serves its OpenAPI document.
const openAPIPath = "/openapi.json"

// Validator validates documents against the schema served at one 3.x base
// URL. It fetches each document once, when first needed, and takes its
// compiled schemas from those compiled for any Validator served the same
// document. It is safe for concurrent use.
type Validator struct {
	// Immutable after New or ForSet.
	base   string
	client *http.Client
	// fetch reads a served document by path ("/schema/event").
	fetch func(path string) ([]byte, error)

	// mu guards the following.
	mu   sync.Mutex
	docs map[string]*compiledDoc // by path
}

// New validates against the schema served by the 3.x listener at base
// ("http://127.0.0.1:10001"). It compiles, unless a Validator of an alike
// service did, every schema that service serves, so that no check of a test
// spends seconds compiling inside a timing window.
func New(base string) *Validator {
	v := &Validator{docs: map[string]*compiledDoc{}}
	v.base = strings.TrimSuffix(base, "/")
	// No keep-alive: a service under test with --max-connections counts an
	// idle connection of the validator's, and New's fetches would hold its
	// only place for the test's whole run.
	v.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	v.fetch = v.get
	v.compileServed()
	return v
}

// ForSet validates against the documents of set, as a service would serve
// them, for tests of a part that runs without the 3.x listener (the events
// socket alone). It serves schemas by name only: CheckAnswer needs New.
func ForSet(set *schema.Set) *Validator {
	v := &Validator{docs: map[string]*compiledDoc{}}
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
	for _, p := range set.Published() {
		if d, err := v.doc("/schema/" + p.Name); err == nil {
			d.compileAll()
		}
	}
	return v
}

// compileServed compiles the OpenAPI document and, the first time a service
// serves that one, every schema listed in its index. A later alike service
// is served the same OpenAPI document: its schemas are then fetched one by
// one as checks need them and found compiled. Errors are left for the
// checks to report.
func (v *Validator) compileServed() {
	api, err := v.doc(openAPIPath)
	if err != nil {
		return
	}
	first := false
	api.warm.Do(func() { first = true })
	if !first {
		return
	}
	doc, _ := api.doc.(map[string]any)
	for _, frag := range openAPISchemas(doc) {
		_, _ = api.schema(frag)
	}
	b, err := v.fetch("/schema")
	if err != nil {
		return
	}
	var index struct {
		Schemas map[string]string `json:"schemas"`
	}
	if json.Unmarshal(b, &index) != nil {
		return
	}
	for _, path := range index.Schemas {
		if d, err := v.doc(path); err == nil {
			d.compileAll()
		}
	}
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

// doc is the served document at path, fetched once per Validator.
func (v *Validator) doc(path string) (*compiledDoc, error) {
	v.mu.Lock()
	d, ok := v.docs[path]
	v.mu.Unlock()
	if ok {
		return d, nil
	}
	b, err := v.fetch(path)
	if err != nil {
		return nil, err
	}
	d, err = sharedDoc(path, b)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if prev, ok := v.docs[path]; ok {
		return prev, nil // a concurrent check fetched it first
	}
	v.docs[path] = d
	return d, nil
}

// Schema compiles the served schema called name.
func (v *Validator) Schema(name string) (*jsonschema.Schema, error) {
	d, err := v.doc("/schema/" + name)
	if err != nil {
		return nil, err
	}
	return d.schema("")
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

// OpenAPI is the served OpenAPI document, decoded. It is shared with other
// Validators: read it only.
func (v *Validator) OpenAPI() (map[string]any, error) {
	d, err := v.doc(openAPIPath)
	if err != nil {
		return nil, err
	}
	m, ok := d.doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schematest: %s is not an object", openAPIPath)
	}
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
	doc, err := v.OpenAPI()
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
	s, err := v.compileOpenAPI(ptr + "/content/" + escape(media) + "/schema")
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
	doc, err := v.OpenAPI()
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
	if required, _ := rb["required"].(bool); !required && len(bytes.TrimSpace(body)) == 0 {
		return nil // an optional body not sent
	}
	ptr := "/paths/" + escape(tmpl) + "/" + strings.ToLower(method) + "/requestBody/content/application~1json/schema"
	s, err := v.compileOpenAPI(ptr)
	if err != nil {
		return err
	}
	return validate(s, body, fmt.Sprintf("the OpenAPI request body of %s %s", method, tmpl))
}

// compileOpenAPI compiles the schema at fragment of the OpenAPI document.
func (v *Validator) compileOpenAPI(fragment string) (*jsonschema.Schema, error) {
	d, err := v.doc(openAPIPath)
	if err != nil {
		return nil, err
	}
	return d.schema(fragment)
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
