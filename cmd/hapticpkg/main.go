// Command hapticpkg builds hapticd's Linux packages (.deb and .rpm) with
// nFPM as a library, so a release needs no downloaded tool:
//
//	hapticpkg --bin dist/hapticd_linux_amd64/hapticd --arch amd64 --version 0.1.0 --out dist
//
// A package holds the binary (/usr/bin/hapticd), the systemd unit and the
// udev rules of packaging/, and maintainer scripts (packaging/linux) that
// create the hapticd system user and group with access to the devices and
// the state directory /var/lib/hapticd. It prints each package's path.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "hapticpkg:", err)
		os.Exit(1)
	}
}

type options struct {
	bin, arch, version, out, root string
	formats                       []string
}

func run(args []string, stdout io.Writer) error {
	var o options
	var formats string
	fs := flag.NewFlagSet("hapticpkg", flag.ContinueOnError)
	fs.StringVar(&o.bin, "bin", "", "the linux hapticd binary to package (required)")
	fs.StringVar(&o.arch, "arch", "amd64", "Go architecture of the binary: amd64 or arm64")
	fs.StringVar(&o.version, "version", "", "package version, e.g. 0.1.0 (required)")
	fs.StringVar(&o.out, "out", "dist", "directory the packages are written to")
	fs.StringVar(&o.root, "root", ".", "repository root (where packaging/ is)")
	fs.StringVar(&formats, "formats", defaultFormats, "comma-separated package formats: deb, and rpm in a build with -tags rpm")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.bin == "" || o.version == "" {
		return errors.New("--bin and --version are required (hapticpkg -h)")
	}
	if o.arch != "amd64" && o.arch != "arm64" {
		return fmt.Errorf("--arch %q: use amd64 or arm64", o.arch)
	}
	o.formats = strings.Split(formats, ",")
	paths, err := build(o)
	for _, p := range paths {
		fmt.Fprintln(stdout, p)
	}
	return err
}

// build writes one package per format and returns their paths.
func build(o options) ([]string, error) {
	if _, err := os.Stat(o.bin); err != nil {
		return nil, fmt.Errorf("--bin: %w", err)
	}
	tmp, err := os.MkdirTemp("", "hapticpkg")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	unit, err := os.ReadFile(filepath.Join(o.root, "packaging", "systemd", "hapticd.service"))
	if err != nil {
		return nil, err
	}
	packaged, err := packagedUnit(string(unit))
	if err != nil {
		return nil, err
	}
	unitPath := filepath.Join(tmp, "hapticd.service")
	if err := os.WriteFile(unitPath, []byte(packaged), 0o644); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	var paths []string
	for _, format := range o.formats {
		p, err := writePackage(o, format, unitPath)
		if err != nil {
			return paths, fmt.Errorf("%s: %w", format, err)
		}
		paths = append(paths, p)
	}
	return paths, nil
}

func writePackage(o options, format, unitPath string) (string, error) {
	packager, err := nfpm.Get(format)
	if err != nil {
		if format == "rpm" {
			return "", fmt.Errorf("%w: build hapticpkg with -tags rpm (rpm.go)", err)
		}
		return "", err
	}
	glibc, err := glibcNeeded(o.bin)
	if err != nil {
		return "", err
	}
	info := packageInfo(o, unitPath, format, glibc)
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return "", err
	}
	path := filepath.Join(o.out, packager.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	if err := packager.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", err
	}
	return path, f.Close()
}

// packageInfo is the package's description: files, owners, scripts and
// dependencies; glibc is the C library version the binary needs ("": none).
func packageInfo(o options, unitPath, format, glibc string) *nfpm.Info {
	pkg := func(p ...string) string { return filepath.Join(append([]string{o.root, "packaging"}, p...)...) }
	mode := func(m os.FileMode) *files.ContentFileInfo { return &files.ContentFileInfo{Mode: m} }
	info := &nfpm.Info{
		Name:        "hapticd",
		Arch:        o.arch,
		Platform:    "linux",
		Version:     o.version,
		Release:     "1",
		Section:     "misc",
		Priority:    "optional",
		Maintainer:  "hapticd maintainers <hapticd@users.noreply.github.com>",
		Description: "Local control service for haptic arms and grips.\nServes the 3.x HTTP and WebSocket protocol on loopback and runs each device on a real-time loop.",
		Vendor:      "hapticd",
		Homepage:    "https://github.com/hapticd/hapticd",
		License:     "see /usr/share/doc/hapticd",
		Overridables: nfpm.Overridables{
			Contents: files.Contents{
				{Source: o.bin, Destination: "/usr/bin/hapticd", FileInfo: mode(0o755)},
				{Source: unitPath, Destination: "/usr/lib/systemd/system/hapticd.service", FileInfo: mode(0o644)},
				{Source: pkg("udev", "70-hapticd.rules"), Destination: "/usr/lib/udev/rules.d/70-hapticd.rules", FileInfo: mode(0o644)},
				{Source: filepath.Join(o.root, "README.md"), Destination: "/usr/share/doc/hapticd/README.md", FileInfo: mode(0o644)},
				// The README links into docs/: beside it, those links work.
				{Source: filepath.Join(o.root, "docs"), Destination: "/usr/share/doc/hapticd/docs", Type: files.TypeTree, FileInfo: mode(0o644)},
				// Owned by the package; the postinstall script gives it to
				// the hapticd user, which it creates first.
				{Destination: "/var/lib/hapticd", Type: files.TypeDir, FileInfo: mode(0o750)},
			},
			Scripts: nfpm.Scripts{
				PostInstall: pkg("linux", "postinstall.sh"),
				PreRemove:   pkg("linux", "preremove.sh"),
				PostRemove:  pkg("linux", "postremove.sh"),
			},
			Deb: nfpm.Deb{Compression: "gzip"},
			RPM: nfpm.RPM{Summary: "Local control service for haptic arms and grips", Group: "System Environment/Daemons"},
		},
	}
	// The maintainer scripts need useradd, groupadd and usermod; systemd
	// and udev are what the unit and rules are for, but the binary runs
	// without them (containers).
	if format == "rpm" {
		info.Depends = []string{"shadow-utils"}
		if glibc != "" {
			info.Depends = append(info.Depends, "glibc >= "+glibc)
		}
	} else {
		info.Depends = []string{"passwd"}
		if glibc != "" {
			info.Depends = append(info.Depends, "libc6 (>= "+glibc+")")
		}
	}
	info.Recommends = []string{"systemd", "udev"}
	return nfpm.WithDefaults(info)
}

// packagedUnit turns packaging/systemd/hapticd.service, written for a
// binary copied by hand to /usr/local/bin and a throw-away user, into the
// packaged one: /usr/bin/hapticd run as the hapticd user the package
// creates, so the state directory keeps one owner across upgrades. It
// fails when the unit no longer has the lines it rewrites.
func packagedUnit(unit string) (string, error) {
	rewrites := []struct{ old, new string }{
		{"ExecStart=/usr/local/bin/hapticd ", "ExecStart=/usr/bin/hapticd "},
		{"\nDynamicUser=yes\n", "\nUser=hapticd\nGroup=hapticd\n"},
	}
	for _, r := range rewrites {
		if strings.Count(unit, r.old) != 1 {
			return "", fmt.Errorf("packaging/systemd/hapticd.service: expected exactly one %q to rewrite for the package", strings.TrimSpace(r.old))
		}
		unit = strings.Replace(unit, r.old, r.new, 1)
	}
	return "# Installed by the hapticd package (see packaging/systemd in the source).\n" + unit, nil
}
