//go:build !linux

package transport

import "net"

// rawIO returns c as it is: raw reads and writes (rawconn_linux.go) are
// Linux's.
func rawIO(c net.Conn) net.Conn { return c }
