//go:build !linux

package bench

import "errors"

// MonotonicNs has no clock shared with the device stand-in here: the
// stand-in (a pseudo-terminal) is Linux-only too.
func MonotonicNs() (int64, error) {
	return 0, errors.New("bench: a clock shared between processes (CLOCK_MONOTONIC) is read on Linux only")
}
