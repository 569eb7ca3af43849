package hwtest

import (
	"bytes"
	"encoding/json"
	"testing"
)

// JSONPath walks a value decoded from JSON into any by object keys
// (string) and array indices (int): JSONPath(frame, "arm3", 0, "state").
// It is nil where anything on the way is missing or of another kind, so a
// test can compare the result without checking each step.
func JSONPath(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k < 0 || k >= len(l) {
				return nil
			}
			v = l[k]
		default:
			return nil
		}
	}
	return v
}

// JSONKeys are the names of the members of the JSON object raw, in the
// order raw has them (a map decoded from it has none); it fails t when raw
// is not an object.
func JSONKeys(t testing.TB, raw []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s is not a JSON object", raw)
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}
