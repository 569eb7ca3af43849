package schema

import (
	"fmt"
	"sort"
	"strings"
)

// Dialect is the JSON Schema dialect of every document: 2020-12.
const Dialect = "https://json-schema.org/draft/2020-12/schema"

// Schema is one JSON Schema object. Values in it are Schema, []Schema,
// []any, []string, string, bool and numbers, so that it marshals with
// encoding/json and the set can walk it.
type Schema = map[string]any

// defsPrefix is how a schema of a Set names another: a reference into the
// document's $defs.
const defsPrefix = "#/$defs/"

// Ref refers to the definition name of the same Set.
func Ref(name string) Schema { return Schema{"$ref": defsPrefix + name} }

// Published is one schema the service serves by name.
type Published struct {
	Name  string
	About string
}

// Set is a family of named schemas that refer to each other with Ref. Some
// are published (served at /schema/{name}); the rest are shared
// definitions. A Set is built once at start and only read after that, so it
// is safe for concurrent readers.
type Set struct {
	defs      map[string]Schema
	published []Published
}

// Define adds a shared definition. A name defined twice keeps the last
// schema: the builders define each name once.
func (s *Set) Define(name string, sch Schema) {
	if s.defs == nil {
		s.defs = map[string]Schema{}
	}
	s.defs[name] = sch
}

// Publish defines name and lists it in the index, with a one-line about.
func (s *Set) Publish(name, about string, sch Schema) {
	for _, p := range s.published {
		if p.Name == name {
			s.Define(name, sch)
			return
		}
	}
	s.Define(name, sch)
	s.published = append(s.published, Published{Name: name, About: about})
}

// Published lists the published names in the order they were published (a
// copy).
func (s *Set) Published() []Published { return append([]Published(nil), s.published...) }

// Has reports whether name is defined.
func (s *Set) Has(name string) bool {
	_, ok := s.defs[name]
	return ok
}

// Names lists every definition, sorted.
func (s *Set) Names() []string {
	out := make([]string, 0, len(s.defs))
	for n := range s.defs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Document is the self-contained JSON Schema document of name: its schema
// with "$schema" and, in "$defs", every definition it reaches.
func (s *Set) Document(name string) (Schema, error) {
	root, ok := s.defs[name]
	if !ok {
		return nil, fmt.Errorf("schema: no schema named %q", name)
	}
	reach, err := s.reachable(name)
	if err != nil {
		return nil, err
	}
	doc := copyRewriting(root, defsPrefix).(Schema)
	doc["$schema"] = Dialect
	if len(reach) > 0 {
		defs := Schema{}
		for _, n := range reach {
			defs[n] = copyRewriting(s.defs[n], defsPrefix)
		}
		doc["$defs"] = defs
	}
	return doc, nil
}

// Definitions is every definition with its references rewritten to
// prefix+name, e.g. "#/components/schemas/" for an OpenAPI document. It
// fails when a reference names nothing.
func (s *Set) Definitions(prefix string) (Schema, error) {
	out := Schema{}
	for _, n := range s.Names() {
		if _, err := s.reachable(n); err != nil {
			return nil, err
		}
		out[n] = copyRewriting(s.defs[n], prefix)
	}
	return out, nil
}

// reachable lists the definitions name refers to, transitively, sorted;
// name itself only when it refers to itself.
func (s *Set) reachable(name string) ([]string, error) {
	seen := map[string]bool{}
	var visit func(from string, v any) error
	visit = func(from string, v any) error {
		switch v := v.(type) {
		case Schema:
			for k, x := range v {
				if k == "$ref" {
					ref, _ := x.(string)
					n, ok := strings.CutPrefix(ref, defsPrefix)
					if !ok {
						continue // an outside reference: not the set's business
					}
					if _, def := s.defs[n]; !def {
						return fmt.Errorf("schema: %s refers to %q, which is not defined", from, n)
					}
					if !seen[n] {
						seen[n] = true
						if err := visit(n, s.defs[n]); err != nil {
							return err
						}
					}
					continue
				}
				if err := visit(from, x); err != nil {
					return err
				}
			}
		case []Schema:
			for _, x := range v {
				if err := visit(from, x); err != nil {
					return err
				}
			}
		case []any:
			for _, x := range v {
				if err := visit(from, x); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(name, s.defs[name]); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out, nil
}

// copyRewriting deep-copies v, rewriting "#/$defs/NAME" references to
// prefix+NAME, so that documents handed out never share maps with the Set.
func copyRewriting(v any, prefix string) any {
	switch v := v.(type) {
	case Schema:
		out := make(Schema, len(v))
		for k, x := range v {
			if k == "$ref" {
				if ref, ok := x.(string); ok {
					if n, ok := strings.CutPrefix(ref, defsPrefix); ok {
						out[k] = prefix + n
						continue
					}
				}
			}
			out[k] = copyRewriting(x, prefix)
		}
		return out
	case []Schema:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = copyRewriting(x, prefix)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = copyRewriting(x, prefix)
		}
		return out
	case []string:
		out := make([]string, len(v)) // never nil: an empty list stays [], not null
		copy(out, v)
		return out
	}
	return v
}
