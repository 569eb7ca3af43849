//go:build !(linux || darwin || freebsd || openbsd || windows)

package serial

import (
	"errors"
	"time"

	bugst "go.bug.st/serial"
)

// errWouldBlock never matches: ports here keep blocking writes.
var errWouldBlock = errors.New("hw/serial: would block")

// portFD reports that this platform's ports have no descriptor to wait on:
// their writes block as go.bug.st/serial makes them.
func portFD(bugst.Port) (int, bool) { return -1, false }

func setNonblock(int) error { return errors.ErrUnsupported }

func waitWritable(int, time.Duration) (bool, error) { return true, nil }
