//go:build unix

package serial

import "syscall"

var (
	errNoEnt  error = syscall.ENOENT
	errAccess error = syscall.EACCES
)

// goneErrnos are what a read or write of a tty whose device was unplugged
// fails with (the driver's hangup, a removed USB device).
var goneErrnos = []error{syscall.EIO, syscall.ENXIO, syscall.ENODEV}
