package store

import (
	"errors"

	"golang.org/x/sys/unix"
)

// checkFolder reports whether the service may make, replace and remove
// files in the folder dir, as the kernel decides for the process (its
// modes, its owner, ACLs, a read-only mount, an immutable folder,
// capabilities), without writing. A full disk it does not see:
// CheckWritable's block at the top does.
//
// access(2) checks the real ids and, for a user other than root, without
// capabilities: a service given CAP_DAC_OVERRIDE (ambient, or setcap on
// the binary) or set-user-ID would be told "refused" for folders it
// writes. faccessat2(2) with AT_EACCESS (Linux 5.8) checks the effective
// ids and capabilities. Only the kernel's own faccessat2 is taken:
// golang.org/x/sys's Faccessat falls back, where faccessat2 is missing or
// a seccomp filter refuses it (EPERM: older Docker), to a guess from the
// mode bits that is blind to ACLs, read-only mounts, immutable folders
// and dropped capabilities, and called a chattr +i folder writable
// (review59b). So access(2) answers unless it refuses for permissions
// (EACCES: not EPERM, which an immutable folder gives), which only the
// kernel's faccessat2 saying yes overrules; a set-user-ID service asks
// faccessat2 alone, and access(2) where the kernel has none.
func (s *Store) checkFolder(dir string) error {
	const mode = unix.W_OK | unix.X_OK
	if unix.Getuid() != unix.Geteuid() || unix.Getgid() != unix.Getegid() {
		// A filter's EPERM reads as refused here: a set-user-ID service in
		// such a container is told to fix what it may in fact write.
		if err := unix.Faccessat2(unix.AT_FDCWD, dir, mode, unix.AT_EACCESS); !errors.Is(err, unix.ENOSYS) {
			return err
		}
		return unix.Access(dir, mode)
	}
	err := unix.Access(dir, mode)
	if errors.Is(err, unix.EACCES) && unix.Faccessat2(unix.AT_FDCWD, dir, mode, unix.AT_EACCESS) == nil {
		return nil
	}
	return err
}
