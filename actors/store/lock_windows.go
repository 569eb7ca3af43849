package store

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/windows"
)

// lockExclusive locks one byte of f far past its content without waiting,
// so the pid written at its start stays readable to the process refused.
func lockExclusive(f *os.File) error {
	ol := &windows.Overlapped{OffsetHigh: 1}
	err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	switch {
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return errLocked
	case errors.Is(err, windows.ERROR_NOT_SUPPORTED), errors.Is(err, windows.ERROR_INVALID_FUNCTION):
		return fmt.Errorf("%w: %w", errLockUnsupported, err)
	}
	return err
}
