package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// buildProgram builds src as a main package with cgo on or off.
func buildProgram(t *testing.T, src string, cgo bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module probe\n\ngo 1.21\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if cgo {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build (cgo %v): %v\n%s", cgo, err, out)
	}
	return bin
}

// A cgo build needs the glibc it was built against, and its package says
// so; a static one needs none (the amd64 .deb, built with cgo, installed on
// a glibc 2.31 release whose service then never started: tourinst).
func TestPackageDependsOnTheGlibcItsBinaryNeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc for a cgo build")
	}
	static := buildProgram(t, "package main\nfunc main() {}\n", false)
	dynamic := buildProgram(t, "package main\n/*\n#include <stdlib.h>\n*/\nimport \"C\"\nfunc main() { C.free(nil) }\n", true)
	unit := filepath.Join(t.TempDir(), "hapticd.service")
	if err := os.WriteFile(unit, []byte("[Unit]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		bin  string
		libc bool
	}{
		{"static", static, false},
		{"cgo", dynamic, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			glibc, err := glibcNeeded(tc.bin)
			if err != nil {
				t.Fatal(err)
			}
			if got := glibc != ""; got != tc.libc {
				t.Fatalf("glibcNeeded = %q; want a version: %v", glibc, tc.libc)
			}
			if tc.libc && !regexp.MustCompile(`^2\.\d+$`).MatchString(glibc) {
				t.Fatalf("glibcNeeded = %q, want 2.N", glibc)
			}
			for _, format := range []string{"deb", "rpm"} {
				deps := packageInfo(options{bin: tc.bin, arch: "amd64", version: "1.0.0", root: filepath.Join("..", "..")}, unit, format, glibc).Depends
				want := map[string]string{"deb": "libc6 (>= " + glibc + ")", "rpm": "glibc >= " + glibc}[format]
				if has := slices.Contains(deps, want); has != tc.libc {
					t.Errorf("%s Depends %q; want %q listed: %v", format, deps, want, tc.libc)
				}
			}
		})
	}
	if _, err := glibcNeeded(unit); err == nil {
		t.Error("glibcNeeded of a file that is no ELF binary: no error")
	}
}
