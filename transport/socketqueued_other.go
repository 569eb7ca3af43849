//go:build !linux && !darwin && !windows

package transport

import (
	"errors"
	"fmt"
)

// socketQueued is not known here: connections keep a wait of 0.
func socketQueued(uintptr) (int, error) {
	return 0, fmt.Errorf("transport: counting a socket's unread bytes: %w", errors.ErrUnsupported)
}
