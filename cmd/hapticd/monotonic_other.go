//go:build !linux

package main

import "errors"

// monotonicNs has no shared clock to read here: the stand-in arm it serves
// (a pseudo-terminal) is Linux-only too.
func monotonicNs() (int64, error) {
	return 0, errors.New("a clock shared between processes (CLOCK_MONOTONIC) is read on Linux only")
}
