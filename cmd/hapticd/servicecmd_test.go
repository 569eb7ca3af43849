package main

import (
	"path/filepath"
	"slices"
	"testing"
)

// The service's command line keeps the user's flags and puts the state
// under ProgramData unless the user chose a directory.
func TestServiceRunArgs(t *testing.T) {
	pd := filepath.Join("C:", "ProgramData")
	tests := []struct {
		name  string
		flags []string
		want  []string
	}{
		{"no flags", nil, []string{"service", "run", "--log-format", "json", "--state-dir", filepath.Join(pd, "hapticd")}},
		{"flags kept", []string{"--sim-arms", "0", "--hw-port", "COM12"},
			[]string{"service", "run", "--sim-arms", "0", "--hw-port", "COM12", "--log-format", "json", "--state-dir", filepath.Join(pd, "hapticd")}},
		{"state dir and log format given", []string{"--state-dir", `D:\lab`, "--log-format=console"},
			[]string{"service", "run", "--state-dir", `D:\lab`, "--log-format=console"}},
		{"state dir given with =", []string{"-state-dir=D:\\lab"}, []string{"service", "run", "-state-dir=D:\\lab", "--log-format", "json"}},
		{"a value is not a flag", []string{"--type-alias", "state-dir"},
			[]string{"service", "run", "--type-alias", "state-dir", "--log-format", "json", "--state-dir", filepath.Join(pd, "hapticd")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := serviceRunArgs(tc.flags, pd); !slices.Equal(got, tc.want) {
				t.Errorf("serviceRunArgs(%q) = %q, want %q", tc.flags, got, tc.want)
			}
		})
	}
}
