//go:build linux || darwin || freebsd || openbsd

package serial

import (
	"errors"

	"golang.org/x/sys/unix"
)

// portLock is an exclusive flock on a port, held by a descriptor of its own.
type portLock struct{ fd int }

// lockPort takes an exclusive, non-blocking flock on the port at path, on
// a descriptor of its own, before go.bug.st/serial opens the port: its
// TIOCEXCL binds no one running as root, and a second opener it lets in
// changes the port's settings and, on Close, clears TIOCEXCL for the
// first. A port another process holds (with its own lock or TIOCEXCL)
// fails with ErrBusy; the open itself (O_NONBLOCK, no controlling tty)
// neither waits for carrier nor changes the port.
func lockPort(path string) (portLock, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EBUSY) {
			return portLock{}, ErrBusy
		}
		return portLock{}, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = unix.Close(fd)
		if errors.Is(err, unix.EWOULDBLOCK) {
			return portLock{}, ErrBusy
		}
		return portLock{}, err
	}
	return portLock{fd: fd}, nil
}

func (l portLock) release() error { return unix.Close(l.fd) }

// hungUp reports whether the port was hung up under the lock: its device
// was unplugged (or a pseudo-terminal's device side closed). A hung-up tty
// polls as ready with POLLHUP at once; a live one does not.
func (l portLock) hungUp() bool {
	fds := []unix.PollFd{{Fd: int32(l.fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLHUP|unix.POLLNVAL) != 0
}
