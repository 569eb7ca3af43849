//go:build linux

package bench

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MonotonicNs reads CLOCK_MONOTONIC, the clock every process on the
// machine shares (the device stand-in stamps arrivals on it, and hapticd's
// device-bench reads it too, so both sides of a measurement use one
// clock).
func MonotonicNs() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("bench: read CLOCK_MONOTONIC: %w", err)
	}
	return ts.Nano(), nil
}
