package transport

import (
	"syscall"
	"unsafe"
)

// fionread is Winsock's FIONREAD: _IOR('f', 127, u_long).
const fionread = 0x4004667f

// socketQueued is how many received bytes the socket fd holds unread.
func socketQueued(fd uintptr) (int, error) {
	var n, returned uint32
	if err := syscall.WSAIoctl(syscall.Handle(fd), fionread, nil, 0, (*byte)(unsafe.Pointer(&n)), 4, &returned, nil, 0); err != nil {
		return 0, err
	}
	return int(n), nil
}
