//go:build !unix

package serial

import "os"

var (
	errNoEnt  = os.ErrNotExist
	errAccess = os.ErrPermission
)

// goneErrnos: on Windows an unplugged port's calls fail with errors this
// package does not tell apart yet; the driver's run of misses fails it.
var goneErrnos []error
