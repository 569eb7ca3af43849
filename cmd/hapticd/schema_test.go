package main

import (
	"slices"
	"testing"
)

// The schema the binary serves follows its flags: frame schemas name the
// collections --type-names writes, and the inventory it sends validates
// against them (httpDo checks every answer against /openapi.json).
func TestServedSchemaFollowsTypeNames(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--type-names", "haply"}, []string{"inverse3", "verse_grip", "wireless_verse_grip"}},
		{[]string{"--type-names", "reference"}, []string{"arm3", "grip"}},
	}
	for _, tt := range tests {
		d := startProcess(t, bin, append([]string{"--state-dir", t.TempDir()}, tt.args...)...)
		status, doc := httpDo(t, "GET", d.url("/schema/inventory-frame"), "")
		props, _ := doc["properties"].(map[string]any)
		if status != 200 || props == nil {
			t.Fatalf("%v: GET /schema/inventory-frame: %d %v", tt.args, status, doc)
		}
		var got []string
		for k := range props {
			if k != "session_id" && k != "session" {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%v: the inventory schema has collections %v, want %v", tt.args, got, tt.want)
		}
		if status, inv := httpDo(t, "GET", d.url("/devices"), ""); status != 200 || inv[tt.want[0]] == nil {
			t.Errorf("%v: GET /devices: %d %v", tt.args, status, inv)
		}
	}
}
