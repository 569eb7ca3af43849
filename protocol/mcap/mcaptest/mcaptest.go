// Package mcaptest reads MCAP files with the reference TypeScript reader,
// @mcap/core under node, so tests can prove hapticd's files against the
// field's own reader. Only tests import it.
package mcaptest

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Channel is one channel as @mcap/core's indexed reader saw it.
type Channel struct {
	Topic           string `json:"topic"`
	SchemaID        int    `json:"schemaId"`
	MessageEncoding string `json:"messageEncoding"`
	Count           int    `json:"count"`
	Bytes           int    `json:"bytes"`
}

// Schema is one schema as @mcap/core saw it.
type Schema struct {
	Name     string `json:"name"`
	Encoding string `json:"encoding"`
	Data     string `json:"data"`
}

// Result is what @mcap/core found: through the summary (Indexed) and by
// streaming the file from its start (Streamed, message counts per channel).
type Result struct {
	Indexed struct {
		Channels map[string]Channel `json:"channels"`
		Schemas  map[string]Schema  `json:"schemas"`
	} `json:"indexed"`
	Streamed struct {
		Channels map[string]int `json:"channels"`
		Done     bool           `json:"done"`
	} `json:"streamed"`
	Statistics struct {
		MessageCount int `json:"messageCount"`
		ChunkCount   int `json:"chunkCount"`
	} `json:"statistics"`
}

// Read reads path with @mcap/core, installing it with npm into the
// package's testdata/mcapjs on first use. It skips the test when node or
// npm is missing (.ci/run installs them) and fails it when the reader
// refuses the file.
func Read(t testing.TB, path string) Result {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(self), "..", "testdata", "mcapjs")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the @mcap/core cross-check needs it (.ci/run installs it)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@mcap", "core")); err != nil {
		cmd := exec.Command("npm", "install", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("npm install @mcap/core: %v\n%s", err, out)
		}
	}
	out, err := exec.Command("node", filepath.Join(dir, "read.mjs"), path).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("@mcap/core could not read %s: %v\n%s", path, err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("decode @mcap/core's answer: %v\n%s", err, out)
	}
	return r
}
