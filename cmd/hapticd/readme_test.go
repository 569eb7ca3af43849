package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
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
	// It names every subcommand, as `hapticd help` lists them.
	for _, c := range commandTable() {
		if !strings.Contains(readme, "`"+c.name+"`") {
			t.Errorf("README.md does not name the subcommand `%s` (hapticd help lists it)", c.name)
		}
	}
	ci := readPage(t, ".ci/run")
	if !strings.Contains(ci, "go test -race -count=1 -timeout 40m ./...") {
		t.Errorf(".ci/run no longer runs the README's test command (go test -race -timeout 40m ./..., uncached)")
	}
}

// Every relative link of the README and the docs leads to a file.
func TestDocLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	var pages []string
	for _, pattern := range []string{"README.md", "docs/*.md", "docs/investigations/*.md", "bench/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, filepath.FromSlash(pattern)))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	// The package READMEs carry the design notes other pages point into.
	err := filepath.WalkDir(filepath.Join(root, "actors"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "README.md" {
			pages = append(pages, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) (map[string]bool, error) {
		if a, ok := anchors[page]; ok {
			return a, nil
		}
		b, err := os.ReadFile(page)
		if err != nil {
			return nil, err
		}
		a := headingAnchors(string(b))
		anchors[page] = a
		return a, nil
	}
	link := regexp.MustCompile(`\]\(([^)#\s]*)(#[^)\s]*)?\)`)
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, m := range link.FindAllStringSubmatch(outsideFences(string(b)), -1) {
			if strings.Contains(m[1], ":") {
				continue // another site or a mail address
			}
			target := page
			if m[1] != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(m[1]))
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s links to %s: %v", name, m[1], err)
				continue
			}
			if m[2] == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				t.Fatal(err)
			}
			if !a[strings.TrimPrefix(m[2], "#")] {
				t.Errorf("%s links to %s%s: no such heading there", name, m[1], m[2])
			}
		}
	}
}

// outsideFences drops fenced code blocks: a link or a heading inside one is text.
func outsideFences(page string) string {
	var out strings.Builder
	fenced := false
	for _, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out.WriteString(line)
			out.WriteString("\n")
		}
	}
	return out.String()
}

// headingAnchors gives the anchors GitHub makes for a page's headings.
func headingAnchors(page string) map[string]bool {
	heading := regexp.MustCompile(`^#{1,6} +(.*?)#*\s*$`)
	linkText := regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	seen := map[string]int{}
	anchors := map[string]bool{}
	for _, line := range strings.Split(outsideFences(page), "\n") {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := githubAnchor(linkText.ReplaceAllString(m[1], "$1"))
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// githubAnchor is GitHub's rule: lowercase, keep letters, digits, spaces,
// hyphens and underscores, spaces to hyphens.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestGithubAnchors(t *testing.T) {
	page := "# Performance\n## Capacity with effects (issue 22)\n```sh\n# not a heading\n```\n" +
		"### The pass's bookkeeping (2026-11-26, branch `pass22`)\n## Notes\n## Notes\n## A [linked](x.md) word\n"
	a := headingAnchors(page)
	for _, tc := range []struct {
		anchor string
		want   bool
	}{
		{"performance", true},
		{"capacity-with-effects-issue-22", true},
		{"the-passs-bookkeeping-2026-11-26-branch-pass22", true},
		{"notes", true},
		{"notes-1", true},
		{"notes-2", false},
		{"a-linked-word", true},
		{"not-a-heading", false},
	} {
		if a[tc.anchor] != tc.want {
			t.Errorf("anchor %q: got %v, want %v (anchors %v)", tc.anchor, a[tc.anchor], tc.want, a)
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
