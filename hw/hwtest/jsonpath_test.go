package hwtest_test

import (
	"encoding/json"
	"testing"

	"github.com/hapticd/hapticd/hw/hwtest"
)

func TestJSONPath(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"arm3":[{"state":{"x":1.5}}],"n":2}`), &v); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		keys []any
		want any
	}{
		{"nested member", []any{"arm3", 0, "state", "x"}, 1.5},
		{"top member", []any{"n"}, 2.0},
		{"missing member", []any{"grip"}, nil},
		{"index past the end", []any{"arm3", 1}, nil},
		{"negative index", []any{"arm3", -1}, nil},
		{"index into an object", []any{"arm3", 0, 0}, nil},
		{"key into an array", []any{"arm3", "state"}, nil},
		{"key of another type", []any{1.0}, nil},
	}
	for _, tc := range tests {
		if got := hwtest.JSONPath(v, tc.keys...); got != tc.want {
			t.Errorf("%s: JSONPath(%v) = %v, want %v", tc.name, tc.keys, got, tc.want)
		}
	}
}
