//go:build linux

package loop

import (
	"time"

	"golang.org/x/sys/unix"
)

func newMonoOrigin() monoBase {
	var ts unix.Timespec
	t := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		// CLOCK_MONOTONIC always exists on Linux; fall back to an
		// arbitrary origin rather than fail, pacing then sleeps relative.
		return monoBase{t: t}
	}
	return monoBase{t: t, ns: ts.Nano()}
}
