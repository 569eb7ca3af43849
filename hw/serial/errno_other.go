//go:build !unix

package serial

import "os"

var (
	errNoEnt  = os.ErrNotExist
	errAccess = os.ErrPermission
)
