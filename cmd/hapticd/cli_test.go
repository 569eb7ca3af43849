package main

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// userPages are the pages a newcomer follows about hapticd itself; the
// other pages also name the flags of hapticbench, systemctl or perf.
var userPages = []string{"README.md", "docs/walkthrough.md", "docs/install.md", "docs/operations.md", "docs/clients.md", "docs/events.md", "docs/recording.md"}

// helpFlag is a flag line of a flag set's -h ("  -sim-arms int").
var helpFlag = regexp.MustCompile(`(?m)^  (-[a-z][-a-z0-9]*)`)

// docFlag is a flag named in a page's text or code ("--sim-arms N").
var docFlag = regexp.MustCompile("(?:^|[\\s(`])(--[a-z][-a-z0-9]*[a-z0-9])\\b")

// docFlags lists the flags a page names, each once.
func docFlags(page string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range docFlag.FindAllStringSubmatch(page, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}

// TestCommandLine runs the real binary as a user would to find their way.
func TestCommandLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	run := func(args ...string) (string, error) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		return string(out), err
	}

	// -h and help list every subcommand, one line each, with what it does;
	// help's own -h too, as every subcommand has one.
	for _, args := range [][]string{{"-h"}, {"help"}, {"--help"}, {"help", "-h"}, {"help", "--help"}} {
		out, err := run(args...)
		if err != nil {
			t.Fatalf("hapticd %v: %v\n%s", args, err, out)
		}
		for _, c := range commandTable() {
			if !strings.Contains(out, "\n  "+c.name+" ") || !strings.Contains(out, c.summary) {
				t.Errorf("hapticd %v does not list %q with its summary:\n%s", args, c.name, out)
			}
		}
	}

	// version and --version: the version and the revision the binary
	// carries (go version -m is the toolchain's own reading of it).
	meta, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	revision := "unknown"
	for _, l := range strings.Split(string(meta), "\n") {
		if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[1], "vcs.revision=") {
			revision = strings.TrimPrefix(f[1], "vcs.revision=")
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := run(args...)
		if err != nil {
			t.Fatalf("hapticd %v: %v\n%s", args, err, out)
		}
		if !strings.HasPrefix(out, "hapticd "+version+"\n") || !strings.Contains(out, "revision "+revision) {
			t.Errorf("hapticd %v:\n%s\nwant version %s and revision %s", args, out, version, revision)
		}
	}

	// Each subcommand has its own -h, exiting 0 and saying what it does.
	for _, c := range commandTable() {
		if c.name == "help" {
			continue
		}
		out, err := run(c.name, "-h")
		if err != nil {
			t.Errorf("hapticd %s -h: %v\n%s", c.name, err, out)
		}
		if !strings.Contains(out, "usage: hapticd "+c.name) {
			t.Errorf("hapticd %s -h:\n%s", c.name, out)
		}
	}
	if out, err := run("serve", "-h"); err != nil || !strings.Contains(out, "-sim-arms") {
		t.Errorf("hapticd serve -h lists no service flags: %v\n%s", err, out)
	}

	// Every flag the user's pages name is a flag of some subcommand.
	flags := map[string]bool{"--version": true, "--help": true}
	for _, c := range commandTable() {
		out, _ := run(c.name, "-h")
		for _, m := range helpFlag.FindAllStringSubmatch(out, -1) {
			flags["-"+m[1]] = true
		}
	}
	for _, page := range userPages {
		for _, f := range docFlags(readPage(t, page)) {
			if !flags[f] {
				t.Errorf("%s names %s, which no hapticd subcommand's -h lists", page, f)
			}
		}
	}

	// A word a subcommand takes no place for is an error, not ignored:
	// flag parsing stops at it, so the flags after it would be dropped too
	// (hapticd deprecations json --target URL asked the default address).
	for _, name := range []string{"serve", "version", "docs", "deprecations", "zwidth", "baseline-arms", "baseline-device", "device-standin"} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := exec.CommandContext(ctx, bin, name, "extra", "--port", "0").CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), `unexpected argument "extra"`) {
			t.Errorf("hapticd %s extra --port 0: %v, want an unexpected-argument error:\n%s", name, err, out)
		}
	}

	// A bad flag or flag value is one error line on stderr that names the
	// program once ("hapticd: zwidth: ...", not "hapticd: hapticd: ...").
	for _, args := range [][]string{
		{"serve", "--no-such-flag"},
		{"version", "--no-such-flag"},
		{"docs", "--no-such-flag"},
		{"deprecations", "--no-such-flag"},
		{"zwidth", "--no-such-flag"},
		{"zwidth", "--hand", "sideways"},
		{"baseline-arms", "--no-such-flag"},
		{"baseline-arms", "--arms", "0"},
		{"baseline-arms", "--inventory", "x.json"},
		{"baseline-device", "--no-such-flag"},
		{"baseline-device", "--loop-hz", "0"},
		{"device-standin", "--no-such-flag"},
		{"device-standin", "--loop-hz", "0"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		cancel()
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		last := lines[len(lines)-1]
		if err == nil || !strings.HasPrefix(last, "hapticd: ") || strings.Count(last, "hapticd:") != 1 {
			t.Errorf("hapticd %s: %v, its error line names the program once:\n%s", strings.Join(args, " "), err, stderr.String())
		}
	}

	if out, err := run("help", "version", "extra"); err == nil || !strings.Contains(out, `unexpected argument "extra"`) {
		t.Errorf("hapticd help version extra: %v, want an unexpected-argument error:\n%s", err, out)
	}

	// A typo is an error that points at help, not a service started.
	if out, err := run("deprecatons"); err == nil || !strings.Contains(out, "hapticd help") {
		t.Errorf("hapticd deprecatons: %v\n%s", err, out)
	}
}

// --type-alias is repeatable, as its help says: every alias given is
// accepted, and a name given twice across the flags is refused at start as
// within one. A second flag replaced the first, silently, before.
func TestTypeAliasFlagRepeats(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	d := startProcess(t, bin, "--type-alias", "haptic=arm3", "--type-alias", "stylus=grip", "--sim-arms", "1", "--sim-grips", "1", "--state-dir", t.TempDir())
	// A grip's basis is a session's: session_required says the type
	// resolved; an unknown one is unknown_device_type.
	for _, p := range []string{"/haptic/0/config/handedness", "/arm3/0/config/handedness", "/stylus/0/config/basis", "/grip/0/config/basis"} {
		if status, env := httpDo(t, "GET", d.url(p), ""); status != 200 && env["code"] != "session_required" {
			t.Errorf("GET %s: %d %v", p, status, env)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--port", "0", "--legacy-port", "-1", "--events-port", "-1", "--state-dir", t.TempDir(),
		"--type-alias", "haptic=arm3", "--type-alias", "haptic=grip").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "haptic") || !strings.Contains(string(out), "--type-alias") {
		t.Errorf("a name given in two --type-alias flags: %v\n%s", err, out)
	}
}
