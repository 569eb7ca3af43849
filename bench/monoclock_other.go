//go:build !linux

package bench

import "errors"

// monotonicNs has no clock shared with the device stand-in here: the
// stand-in (a pseudo-terminal) is Linux-only too.
func monotonicNs() (int64, error) {
	return 0, errors.New("bench: a clock shared between processes (CLOCK_MONOTONIC) is read on Linux only")
}
