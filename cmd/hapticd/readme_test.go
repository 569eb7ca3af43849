package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The deprecation and event tables of the docs are generated from the one
// table of each in protocol; this fails when they drift.
func TestDocsMatchTables(t *testing.T) {
	for _, tt := range []struct{ page, section string }{
		{"docs/clients.md", protocolSection()},
		{"docs/events.md", eventsMarkdown()},
	} {
		if !strings.Contains(readPage(t, tt.page), tt.section) {
			t.Errorf("%s does not contain the generated section; run `go run ./cmd/hapticd docs` and paste:\n%s", tt.page, tt.section)
		}
	}
}

// readPage reads a page of the repository's documentation (README.md,
// docs/*.md).
func readPage(t *testing.T, page string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The README is a front page: short, with the two commands as the
// project promises them, and links that lead somewhere.
func TestREADMEFrontPage(t *testing.T) {
	readme := readPage(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines; the front page keeps to 250 (details go to docs/)", n)
	}
	for _, command := range []string{"go run ./cmd/hapticd", "go test -race -timeout 40m ./..."} {
		if !strings.Contains(readme, "```sh\n"+command+"\n```") {
			t.Errorf("README.md does not give %q as a command of its own", command)
		}
	}
	ci := readPage(t, ".ci/run")
	if !strings.Contains(ci, "go test -race -count=1 -timeout 40m ./...") {
		t.Errorf(".ci/run no longer runs the README's test command (go test -race -timeout 40m ./..., uncached)")
	}
}

// Every relative link of the README and the docs leads to a file.
func TestDocLinks(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join("..", "..", "README.md"))
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			if strings.Contains(m[1], "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), filepath.FromSlash(m[1]))); err != nil {
				t.Errorf("%s links to %s: %v", filepath.Base(page), m[1], err)
			}
		}
	}
}

func protocolSection() string { return strings.Split(readmeSections(), "\n"+eventsMarkdown())[0] }

// readmeBlock returns the first ```sh block after heading in page, the
// text of the README or of a page in docs/.
func readmeBlock(t *testing.T, page, heading string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, "\n"+heading+"\n")
	if !ok {
		t.Fatalf("the page has no %q section", heading)
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	block, _, ok2 := strings.Cut(rest, "```\n")
	if !ok || !ok2 {
		t.Fatalf("section %q has no sh block", heading)
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

// TestWalkthroughRuns runs docs/walkthrough.md's curl walk-through and its
// Python example, in order and as written, against the real binary; only
// the address changes to the test's free port. The walk-through must leave
// the stored config as it found it.
func TestWalkthroughRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not found: the walk-through uses it")
	}
	walkthrough := readPage(t, "docs/walkthrough.md")
	// The walk-through is what a newcomer runs: the default names, not the
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

	for _, c := range shellCommands(readmeBlock(t, walkthrough, "## A walk through the config API")) {
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
			t.Errorf("after the walk-through %s = %s, was %s: the walk-through leaves it changed", p, got, mustJSON(before[p]))
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
		t.Skip("python3-websockets not installed: the walk-through's Python example is not run")
	}
	script := local(readmeBlock(t, walkthrough, "## The simulation channel (WebSocket)"))
	script = strings.Replace(script, "python3 - <<", python+" - <<", 1)
	out, err := exec.Command("sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the walk-through's Python example: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "'x'") {
		t.Errorf("the Python example printed %q, want the cursor position", out)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
