//go:build unix

package serial

import "syscall"

var (
	errNoEnt  error = syscall.ENOENT
	errAccess error = syscall.EACCES
)
