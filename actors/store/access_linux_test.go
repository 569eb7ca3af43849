package store

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hapticd/hapticd/hw/hwtest"
)

const capsChildEnv = "HAPTICD_STORE_CAPS_CHILD"

// A service that is not root but holds CAP_DAC_OVERRIDE (ambient, or setcap
// on the binary) writes into a folder its user does not own; access(2)
// checks without capabilities and told it "refused" (review59). The check
// is the kernel's for the effective ids and capabilities: a user without
// the capability is refused, one with it is not, and each can do as told.
func TestCheckFolderHonoursCapabilities(t *testing.T) {
	if dir := os.Getenv(capsChildEnv); dir != "" {
		want := os.Getenv(capsChildEnv+"_WANT") == "writable"
		err := new(Store).checkFolder(dir)
		f, cerr := os.CreateTemp(dir, "probe")
		if cerr == nil {
			f.Close()
			os.Remove(f.Name())
		}
		if (err == nil) != want || (cerr == nil) != want {
			t.Fatalf("as uid %d: checkFolder = %v, a file made: %v; want writable: %v", os.Geteuid(), err, cerr, want)
		}
		if want && unix.Access(dir, unix.W_OK|unix.X_OK) == nil {
			t.Logf("access(2) says writable too: the capability is not what lets it")
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("starting a user with a capability needs root")
	}
	bin, base := hwtest.BinaryForNobody(t)
	rootOwned := filepath.Join(base, "root-owned")
	if err := os.Mkdir(rootOwned, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		caps []uintptr
		want string
	}{
		{"no capability", nil, "refused"},
		{"CAP_DAC_OVERRIDE", []uintptr{unix.CAP_DAC_OVERRIDE}, "writable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := hwtest.CommandAsNobody(bin, "TestCheckFolderHonoursCapabilities", capsChildEnv+"="+rootOwned, capsChildEnv+"_WANT="+tc.want, "TMPDIR="+base)
			cmd.SysProcAttr.AmbientCaps = tc.caps
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS") {
				t.Errorf("the run as nobody with %s: %v\n%s", tc.name, err, out)
			}
		})
	}
}

// An immutable folder (chattr +i) refuses every file, root's included:
// access(2) says EPERM, and golang.org/x/sys's Faccessat, falling back to
// the mode bits where the kernel's faccessat2 answers EPERM too, said
// writable, so a devices/ made immutable passed the start's check and
// /readyz while every Save there failed (review59b).
func TestCheckWritableRefusesAnImmutableFolder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chattr +i needs root")
	}
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	devices := filepath.Join(dir, "devices")
	if err := os.Mkdir(devices, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", devices).CombinedOutput(); err != nil {
		t.Skipf("chattr +i: %v %s (the file system may not have the attribute)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", devices).Run() })
	if f, err := os.CreateTemp(devices, "probe"); err == nil {
		f.Close()
		t.Skip("the immutable folder took a file: nothing to check")
	}
	if err := s.CheckWritable("devices"); err == nil || !strings.Contains(err.Error(), devices) {
		t.Errorf("CheckWritable of an immutable devices/: %v, want it refused, naming the folder", err)
	}
}
