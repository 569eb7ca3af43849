//go:build linux || darwin || freebsd || openbsd

package serial

import (
	"errors"

	"golang.org/x/sys/unix"
)

// lockPort takes an exclusive, non-blocking flock on the port at path and
// returns the descriptor that holds it, before go.bug.st/serial opens the
// port: its TIOCEXCL binds no one running as root, and a second opener it
// lets in changes the port's settings and, on Close, clears TIOCEXCL for
// the first. A port another process holds (with its own lock or TIOCEXCL)
// fails with an error wrapping ErrBusy; the open itself (O_NONBLOCK, no
// controlling tty) neither waits for carrier nor changes the port.
func lockPort(path string) (release func() error, err error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			return nil, ErrBusy
		}
		return nil, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrBusy
		}
		return nil, err
	}
	return func() error { return unix.Close(fd) }, nil
}
