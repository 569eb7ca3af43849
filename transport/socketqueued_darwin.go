package transport

import (
	"syscall"
	"unsafe"
)

// fionread is FIONREAD on Darwin: _IOR('f', 127, int).
const fionread = 0x4004667f

// socketQueued is how many received bytes the socket fd holds unread.
func socketQueued(fd uintptr) (int, error) {
	var n int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, fionread, uintptr(unsafe.Pointer(&n))); e != 0 {
		return 0, e
	}
	return int(n), nil
}
