package actors

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// fullDisk is a small tmpfs mounted for one test: a real file system that
// can be filled. It skips where mounting is not permitted.
type fullDisk struct {
	t   *testing.T
	mnt string
}

func mountSmall(t *testing.T) *fullDisk {
	t.Helper()
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=256k"); err != nil {
		t.Skipf("a full disk needs a tmpfs mount, not permitted here: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	return &fullDisk{t: t, mnt: mnt}
}

// fill writes a file until the disk has no block left.
func (d *fullDisk) fill() {
	d.t.Helper()
	f, err := os.Create(filepath.Join(d.mnt, "filler"))
	if err != nil {
		d.t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				d.t.Fatalf("fill %s: %v", d.mnt, err)
			}
			return
		}
	}
}

func (d *fullDisk) free() {
	d.t.Helper()
	if err := os.Remove(filepath.Join(d.mnt, "filler")); err != nil {
		d.t.Fatal(err)
	}
}

// A full disk refuses every durable write (a POST answers internal), so
// the readiness check must say the state directory does not take writes;
// creating an empty probe file still works there, which is not a write.
func TestFullStateDirIsNotReady(t *testing.T) {
	disk := mountSmall(t)
	svc := startWith(t, Options{StateDir: filepath.Join(disk.mnt, "state")})
	arm := addArm(t, svc, simArm(0))
	if err := svc.CheckStateDir(); err != nil {
		t.Fatalf("an empty disk: %v", err)
	}

	disk.fill()
	if _, err := svc.SetEntry(arm, 0, protocol.Handedness("left")); errCode(err) != protocol.CodeInternal {
		t.Fatalf("a POST on a full disk answered %v, want internal", err)
	}
	if err := svc.CheckStateDir(); err == nil {
		t.Error("the readiness check passed on a full disk that refuses every POST")
	}

	disk.free()
	if err := svc.CheckStateDir(); err != nil {
		t.Errorf("the readiness check once there is room again: %v", err)
	}
	if _, err := svc.SetEntry(arm, 0, protocol.Handedness("left")); err != nil {
		t.Errorf("a POST once there is room again: %v", err)
	}
}

// A service whose state directory's disk is full when it starts serves its
// devices, refuses config writes and is not ready, as when the disk fills
// later; it takes writes once there is room. It refused to start at all
// (tourcfg: after a reboot with a full disk the arms had no service).
func TestStartOnAFullStateDirServesNotReady(t *testing.T) {
	disk := mountSmall(t)
	dir := filepath.Join(disk.mnt, "state")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	disk.fill()
	svc := startWith(t, Options{StateDir: dir})
	arm := addArm(t, svc, simArm(0))
	if err := svc.CheckStateDir(); err == nil {
		t.Error("the readiness check passed on a full disk")
	}
	if _, err := svc.SetEntry(arm, 0, protocol.Handedness("left")); errCode(err) != protocol.CodeInternal {
		t.Fatalf("a POST on a full disk answered %v, want internal", err)
	}
	disk.free()
	if _, err := svc.SetEntry(arm, 0, protocol.Handedness("left")); err != nil {
		t.Fatalf("a POST once the disk has room: %v", err)
	}
	if err := svc.CheckStateDir(); err != nil {
		t.Errorf("not ready once the disk has room: %v", err)
	}
}
