//go:build unix && !linux

package store

import (
	"errors"

	"golang.org/x/sys/unix"
)

// checkFolder reports whether the service may make, replace and remove
// files in the folder dir, as the kernel decides for the process (its
// modes, its owner, ACLs, a read-only mount, capabilities), without
// writing. A full disk it does not see: CheckWritable's block at the top
// does.
//
// access(2) checks the real ids and, for a user other than root, without
// capabilities: a service given CAP_DAC_OVERRIDE (ambient, or setcap on
// the binary) or set-user-ID would be told "refused" for folders it
// writes. faccessat(2) with AT_EACCESS checks the effective ids (the
// system's own call here; Linux's is access_linux.go). So, when the real
// and effective ids are the same (no set-user-ID), access(2) is asked
// first and kept unless it refuses for permissions alone, which only then
// faccessat may overrule; else faccessat alone answers for the effective
// ids.
func (s *Store) checkFolder(dir string) error {
	const mode = unix.W_OK | unix.X_OK
	if unix.Getuid() != unix.Geteuid() || unix.Getgid() != unix.Getegid() {
		return unix.Faccessat(unix.AT_FDCWD, dir, mode, unix.AT_EACCESS)
	}
	err := unix.Access(dir, mode)
	if !errors.Is(err, unix.EACCES) {
		return err // EPERM: an immutable folder (chflags), not to overrule
	}
	if unix.Faccessat(unix.AT_FDCWD, dir, mode, unix.AT_EACCESS) == nil {
		return nil
	}
	return err
}
