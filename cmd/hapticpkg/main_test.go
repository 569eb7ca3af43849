package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The packaged unit runs the packaged binary as the user the package
// creates; the rest of the unit (hardening, devices) is the source's.
func TestPackagedUnit(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "packaging", "systemd", "hapticd.service"))
	if err != nil {
		t.Fatal(err)
	}
	unit, err := packagedUnit(string(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nExecStart=/usr/bin/hapticd ", "\nUser=hapticd\n", "\nGroup=hapticd\n", "\nStateDirectory=hapticd\n", "\nDeviceAllow=char-ttyACM rw\n"} {
		if !strings.Contains(unit, want) {
			t.Errorf("packaged unit lacks %q", strings.TrimSpace(want))
		}
	}
	for _, gone := range []string{"/usr/local/bin", "DynamicUser"} {
		if strings.Contains(unit, gone) {
			t.Errorf("packaged unit still has %q", gone)
		}
	}
	if _, err := packagedUnit("[Service]\nExecStart=/opt/hapticd\n"); err == nil {
		t.Error("a unit without the lines to rewrite was accepted; the package would ship a unit for the wrong path or user")
	}
}

// hapticpkg writes a Debian package (an ar archive) from the repository's
// packaging files and prints its path.
func TestBuildsADeb(t *testing.T) {
	dir := t.TempDir()
	// Any ELF binary packs: the test's own.
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = run([]string{"--bin", bin, "--arch", "arm64", "--version", "1.2.3", "--out", filepath.Join(dir, "dist"), "--root", filepath.Join("..", ".."), "--formats", "deb"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimSpace(out.String())
	if filepath.Base(path) != "hapticd_1.2.3-1_arm64.deb" {
		t.Fatalf("printed %q, want the path of hapticd_1.2.3-1_arm64.deb", path)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, 21)
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(head, []byte("!<arch>\ndebian-binary")) {
		t.Fatalf("%s does not start as a Debian package: %q", path, head)
	}
	// Every page the packaged README links to is packaged beside it (it
	// shipped alone: /usr/share/doc/hapticd/docs/... were dead links).
	packaged := debFiles(t, path)
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	links := regexp.MustCompile(`\]\((docs/[^)#]+)`).FindAllStringSubmatch(string(readme), -1)
	if len(links) == 0 {
		t.Fatal("the README links to no page under docs/: the test reads it wrongly")
	}
	for _, l := range links {
		if want := "./usr/share/doc/hapticd/" + l[1]; !packaged[want] {
			t.Errorf("the README links to %s, which the package does not hold (%s)", l[1], want)
		}
	}
}

// debFiles lists the paths in a Debian package's data archive.
func debFiles(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// ar: an 8-byte magic, then members, each a 60-byte header (name in
	// 16 bytes, size in 10 at offset 48) and its data, padded to even.
	b = b[8:]
	for len(b) >= 60 {
		name := strings.TrimRight(string(b[:16]), " /")
		size, err := strconv.Atoi(strings.TrimSpace(string(b[48:58])))
		if err != nil {
			t.Fatalf("ar header %q: %v", b[:60], err)
		}
		data := b[60 : 60+size]
		b = b[60+size+size%2:]
		if name != "data.tar.gz" {
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]bool{}
		tr := tar.NewReader(zr)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				return files
			}
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = true
		}
	}
	t.Fatalf("%s holds no data.tar.gz", path)
	return nil
}

func TestRejectsBadArguments(t *testing.T) {
	tests := [][]string{
		{"--version", "1.0.0"}, // no binary
		{"--bin", "x"},         // no version
		{"--bin", "x", "--version", "1", "--arch", "386"},   // unsupported arch
		{"--bin", "/nonexistent/hapticd", "--version", "1"}, // missing binary
	}
	for _, args := range tests {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("hapticpkg %q succeeded", args)
		}
	}
}
