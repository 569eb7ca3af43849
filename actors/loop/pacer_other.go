//go:build !linux

package loop

import "time"

// sleepUntil sleeps until the monotonic time deadlineNs. This portable
// fallback uses time.Sleep, which is coarser than clock_nanosleep; the spin
// after it keeps ticks on their deadlines at a higher CPU cost.
func sleepUntil(deadlineNs int64) {
	if d := deadlineNs - monoNow(); d > 0 {
		time.Sleep(time.Duration(d))
	}
}

// tuneThread has nothing to tune off Linux.
func tuneThread(int) (realtime bool, restore func()) { return false, func() {} }
