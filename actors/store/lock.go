package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// lockFile is the state directory's lock: hidden, not a document, and not
// a temp file that Open would remove.
const lockFile = ".hapticd.lock"

// errLocked is what lockExclusive returns when another process holds the
// lock.
var errLocked = errors.New("locked by another process")

// ErrLockUnsupported is wrapped by Lock's error when the state directory's
// file system takes no lock (some network and FUSE mounts): Lock then
// still returns a DirLock, holding nothing, and the caller runs on
// unguarded and says so, as hapticd did before it locked the directory.
var ErrLockUnsupported = errors.New("the file system of the state directory takes no lock")

// errLockUnsupported is what lockExclusive wraps around the system's answer
// when the file system takes no lock.
var errLockUnsupported = errors.New("flock not supported")

// DirLock holds a state directory for this process (see Lock).
type DirLock struct{ f *os.File }

// Lock makes dir (creating it if missing) this process's state directory:
// a second process that tries while this one holds it gets an error naming
// the directory and the holder's pid, rather than running on, each
// process writing its own view of the shared documents over the other's.
// The operating system drops the lock when the process ends, however it
// ends, so a SIGKILL never leaves a stale one. Open takes no lock (a test
// may open a directory's Store twice): the process's main takes this one.
func Lock(dir string) (*DirLock, error) { return lockDir(dir, lockExclusive) }

// lockDir is Lock with the system's lock call given (tests give one that
// fails as a file system without locks does).
func lockDir(dir string, lockExclusive func(*os.File) error) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: create state directory %s: %w; check the parent's permissions or pass another --state-dir", dir, err)
	}
	p := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open the lock of state directory %s: %w; check its permissions", dir, err)
	}
	if err := lockExclusive(f); err != nil {
		holder := "another process"
		if b, rerr := os.ReadFile(p); rerr == nil && len(bytes.TrimSpace(b)) > 0 {
			holder = "process " + string(bytes.TrimSpace(b))
		}
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, fmt.Errorf("store: state directory %s is in use by %s (one process per state directory): stop it, or pass this one another --state-dir", dir, holder)
		}
		if errors.Is(err, errLockUnsupported) {
			return &DirLock{}, fmt.Errorf("store: state directory %s: %w (%w): nothing stops a second process from using it", dir, ErrLockUnsupported, err)
		}
		return nil, fmt.Errorf("store: lock state directory %s: %w", dir, err)
	}
	// The pid is only for the message above; the lock is the OS's.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &DirLock{f: f}, nil
}

// Release gives the directory up; the process's end does too. It is
// idempotent.
func (l *DirLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing drops the lock
	l.f = nil
	if err != nil {
		return fmt.Errorf("store: release the state directory lock: %w", err)
	}
	return nil
}
