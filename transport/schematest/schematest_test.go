package schematest

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// serving is a 3.x listener stand-in that serves doc as /schema/frame.
func serving(t *testing.T, doc string) *Validator {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/schema/frame" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(srv.Close)
	v := New(srv.URL)
	t.Cleanup(v.Close)
	return v
}

// Services that serve the same document share one compile of it (a
// compile inside a test's lease window made its first check flake), and
// one that serves another document, at the same path, is checked against
// its own.
func TestValidatorsShareCompilesOfTheSameDocumentOnly(t *testing.T) {
	const numbers = `{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}`
	const strings = `{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`
	a, b, other := serving(t, numbers), serving(t, numbers), serving(t, strings)
	sa, err := a.Schema("frame")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Schema("frame")
	if err != nil {
		t.Fatal(err)
	}
	if sa != sb {
		t.Errorf("two services serving the same document got two compiles of it")
	}
	for _, c := range []struct {
		name    string
		v       *Validator
		doc     string
		invalid bool
	}{
		{"numbers, a number", a, `{"x":1}`, false},
		{"numbers, a string", a, `{"x":"1"}`, true},
		{"the same document elsewhere, a string", b, `{"x":"1"}`, true},
		{"strings, a string", other, `{"x":"1"}`, false},
		{"strings, a number", other, `{"x":1}`, true},
	} {
		err := c.v.Check("frame", []byte(c.doc))
		if (err != nil) != c.invalid {
			t.Errorf("%s: Check = %v, want invalid %v", c.name, err, c.invalid)
		}
	}
}
