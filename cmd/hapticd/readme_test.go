package main

import (
	"os"
	"strings"
	"testing"
)

// The README's deprecation and event tables are generated from the one
// table of each in protocol; this fails when they drift.
func TestREADMEMatchesTables(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, section := range []string{protocolSection(), eventsMarkdown()} {
		if !strings.Contains(string(readme), section) {
			t.Errorf("README.md does not contain the generated section; run `go run ./cmd/hapticd docs` and paste:\n%s", section)
		}
	}
}

func protocolSection() string { return strings.Split(readmeSections(), "\n"+eventsMarkdown())[0] }
