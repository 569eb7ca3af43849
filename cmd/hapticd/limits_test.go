package main

import (
	"strings"
	"testing"
)

// Limits against a mistyped or hostile command line are refused before
// anything starts, with the flag named: --event-ring 2000000000 asked the
// activity actor for a 240 GB ring, and 0 quietly meant 4096.
func TestResourceLimitFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--event-ring", "2000000000"}, "--event-ring"},
		{[]string{"--event-ring", "65537"}, "--event-ring"},
		{[]string{"--event-ring", "0"}, "--event-ring"},
		{[]string{"--event-ring", "-1"}, "--event-ring"},
		{[]string{"--event-ring", "65536"}, ""},
		{[]string{"--event-ring", "1"}, ""},
		{[]string{"--event-ring", "4096"}, ""},
	}
	for _, tt := range tests {
		_, err := parseFlags(tt.args)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want one naming %s", tt.args, err, tt.wantErr)
		}
	}
}
