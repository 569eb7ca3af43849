//go:build unix

package hwtest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Nobody is the uid and gid of the user a test runs a part of itself as
// when it needs one other than root: root reads and writes any file
// whatever its mode, so only another user meets a file or folder it may
// not read or write.
const Nobody = 65534

// BinaryForNobody copies the running test binary into a folder of its
// own (base, made for t) where Nobody may run it: t.TempDir and its parent,
// private to root, are opened to others for it.
func BinaryForNobody(t testing.TB) (bin, base string) {
	t.Helper()
	base = t.TempDir()
	for _, p := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin = filepath.Join(base, filepath.Base(exe))
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return bin, base
}

// CommandAsNobody is the command that runs the test named test (matched
// exactly, verbose) of bin as Nobody, with env added to this process's
// environment.
func CommandAsNobody(bin, test string, env ...string) *exec.Cmd {
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	return cmd
}
