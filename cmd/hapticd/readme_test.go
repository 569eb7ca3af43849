package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The deprecation and event tables of the user documentation (README.md
// or a page of docs/) are generated from the one table of each in
// protocol; this fails when they drift.
func TestREADMEMatchesTables(t *testing.T) {
	var docs []byte
	for _, name := range []string{"../../README.md", "../../docs/protocol.md"} {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b...)
	}
	for _, section := range []string{protocolSection(), eventsMarkdown()} {
		if !strings.Contains(string(docs), section) {
			t.Errorf("neither README.md nor docs/protocol.md contains the generated section; run `go run ./cmd/hapticd docs` and paste:\n%s", section)
		}
	}
}

func protocolSection() string { return strings.Split(readmeSections(), "\n"+eventsMarkdown())[0] }

// readmeBlock returns the first ```sh block after heading in the README.
func readmeBlock(t *testing.T, readme, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q section", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatalf("README section %q has no sh block", heading)
	}
	return block
}

// shellCommands splits a block into commands, joining continued lines.
func shellCommands(block string) []string {
	var cmds []string
	cur := ""
	for _, line := range strings.Split(block, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		cmds = append(cmds, cur+line)
		cur = ""
	}
	return cmds
}

// TestREADMEExamplesRun runs the README's walk-through and its Python
// example, in order and as written, against the real binary; only the
// address changes to the test's free port. The walk-through must leave
// the stored config as it found it.
func TestREADMEExamplesRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found: the README's walk-through uses it")
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	// The README is what a newcomer runs: the default names, not the
	// reference names the other process tests use.
	d := startProcess(t, buildBinary(t), "--state-dir", t.TempDir(), "--type-names", "haply")
	host := d.addr["http"]
	local := func(s string) string {
		s = strings.ReplaceAll(s, "localhost:10001", host)
		return strings.ReplaceAll(s, "127.0.0.1:10001", host)
	}

	stored := []string{"/arm3/0/config/handedness", "/arm3/0/config/gravity_compensation", "/settings/devices/force_scale", "/settings"}
	before := map[string]any{}
	for _, p := range stored {
		_, env := httpDo(t, "GET", d.url(p), "")
		before[p] = env["data"]
	}

	for _, c := range shellCommands(readmeBlock(t, readme, "## A walk through the config API")) {
		if !strings.HasPrefix(c, "curl ") {
			t.Fatalf("walk-through line is not a curl command: %q", c)
		}
		out, err := exec.Command("sh", "-c", local(c)).Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c, err, out)
		}
		var doc map[string]any
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("%s: not one JSON document: %v\n%s", c, err, out)
		}
		// Enveloped answers must be ok; /version and /devices are bare.
		if ok, enveloped := doc["ok"]; enveloped && ok != true {
			t.Errorf("%s answered %s", c, out)
		}
	}
	for _, p := range stored {
		_, env := httpDo(t, "GET", d.url(p), "")
		if got, _ := json.Marshal(env["data"]); string(got) != mustJSON(before[p]) {
			t.Errorf("after the walk-through %s = %s, was %s: the README leaves it changed", p, got, mustJSON(before[p]))
		}
	}

	python := ""
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import websockets").Run() == nil {
			python = p
			break
		}
	}
	if python == "" {
		t.Skip("python3-websockets not installed: the README's Python example is not run")
	}
	script := local(readmeBlock(t, readme, "## The simulation channel (WebSocket)"))
	script = strings.Replace(script, "python3 - <<", python+" - <<", 1)
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the README's Python example: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "'x'") {
		t.Errorf("the Python example printed %q, want the cursor position", out)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
