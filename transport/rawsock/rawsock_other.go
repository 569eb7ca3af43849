//go:build !linux

package rawsock

import "net"

// Wrap returns c as it is: raw reads and writes (rawsock_linux.go) are
// Linux's.
func Wrap(c net.Conn) net.Conn { return c }
