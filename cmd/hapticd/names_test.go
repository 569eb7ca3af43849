package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/transport"
)

// hapticd writes the product names unless told --type-names reference, and
// refuses a naming it does not know.
func TestTypeNamesFlag(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		arm, grip string
		notListed string
	}{
		{nil, "inverse3", "wireless_verse_grip", "arm3"},
		{[]string{"--type-names", "reference"}, "arm3", "grip", "inverse3"},
	} {
		args := append([]string{"--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--hw-scan-period", "0",
			"--state-dir", filepath.Join(t.TempDir(), "state")}, tt.args...)
		sv := startInProcess(t, args...)
		status, doc := httpDo(t, "GET", "http://"+sv.srv.Addr(transport.ListenerHTTP).String()+"/devices", "")
		arms, _ := doc[tt.arm].([]any)
		grips, _ := doc[tt.grip].([]any)
		if _, listed := doc[tt.notListed]; status != 200 || len(arms) != 1 || len(grips) != 1 || listed {
			t.Fatalf("%v: GET /devices %d %v", tt.args, status, doc)
		}
	}
	o, err := parseFlags([]string{"--type-names", "vendor"})
	if err != nil {
		t.Fatal(err)
	}
	if sv, err := startService(context.Background(), o, zerolog.Nop()); err == nil || !strings.Contains(err.Error(), "--type-names") {
		if sv != nil {
			_ = sv.stop(nil)
		}
		t.Fatalf("--type-names vendor: %v", err)
	}
}
