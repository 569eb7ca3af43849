//go:build !windows

package serial

import (
	"errors"

	bugst "go.bug.st/serial"
)

// portHandle reports that ports here have no handle with a write timeout:
// Unix ports wait for room on their descriptor (see portFD).
func portHandle(bugst.Port) (uintptr, bool) { return 0, false }

func setWriteTimeout(uintptr) error { return errors.ErrUnsupported }

func writeTimedOut(error) bool { return false }
