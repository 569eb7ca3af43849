package transport

import (
	"syscall"
	"unsafe"
)

// socketQueued is how many received bytes the socket fd holds unread
// (FIONREAD: TIOCINQ, SIOCINQ on Linux).
func socketQueued(fd uintptr) (int, error) {
	var n int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); e != 0 {
		return 0, e
	}
	return int(n), nil
}
