//go:build !linux

package rawsock

import "net"

// ReceiveTimes tells whether a wrapped connection can record when its data
// arrived (RecordReceiveTimes): not here.
const ReceiveTimes = false

// Wrap returns c as it is: raw reads and writes (rawsock_linux.go) are
// Linux's.
func Wrap(c net.Conn) net.Conn { return c }
