//go:build linux || darwin || freebsd || openbsd

package serial

import (
	"errors"
	"reflect"
	"syscall"
	"time"

	bugst "go.bug.st/serial"
	"golang.org/x/sys/unix"
)

// errWouldBlock is what a non-blocking descriptor's call fails with when
// it would have to wait.
var errWouldBlock error = syscall.EAGAIN

// portFD returns the descriptor of a port go.bug.st/serial opened, which
// it does not export: the pinned version keeps it in its unixPort's
// handle field (TestWriteToADeviceThatTakesNothingEnds fails if that changes).
func portFD(p bugst.Port) (int, bool) {
	v := reflect.ValueOf(p)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return -1, false
	}
	h := v.Elem().FieldByName("handle")
	if !h.IsValid() || h.Kind() != reflect.Int {
		return -1, false
	}
	return int(h.Int()), true
}

func setNonblock(fd int) error { return unix.SetNonblock(fd, true) }

// waitWritable waits up to timeout for room to write on fd.
func waitWritable(fd int, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		// poll counts whole milliseconds: round up, so it never returns
		// early for want of resolution.
		n, err := unix.Poll(fds, int((left+time.Millisecond-1)/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return false, err
		}
		if n > 0 {
			// POLLOUT, or POLLERR/POLLHUP: the next write says which.
			return true, nil
		}
	}
}
