package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// monotonicNs reads CLOCK_MONOTONIC, the clock every process shares.
func monotonicNs() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, fmt.Errorf("read CLOCK_MONOTONIC: %w", err)
	}
	return ts.Nano(), nil
}
