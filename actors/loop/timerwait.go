package loop

import "time"

// This file holds the arithmetic of the Windows pacer (pacer_windows.go) in
// portable code, so that it is tested on every OS with a fake clock.

// maxRearm bounds how often one sleep re-arms a timer that fired early, so
// a timer that never waits cannot turn a sleep into a spin.
const maxRearm = 4

// relDue100ns converts the time left before a deadline into a waitable
// timer's due time: relative (negative, in Windows' convention) in 100 ns
// units, rounded toward zero so that the timer never fires after the
// deadline; the pacer's spin covers the rest. ok is false when less than
// one unit is left: no sleep is worth arming.
func relDue100ns(remainingNs int64) (due int64, ok bool) {
	units := remainingNs / 100
	if units <= 0 {
		return 0, false
	}
	return -units, true
}

// sleepRelative sleeps until deadlineNs on now's clock with a one-shot
// relative timer: wait arms it with a due time from relDue100ns and blocks
// until it fires. A timer that fires early is re-armed for what is left (at
// most maxRearm waits in all). It returns wait's error at once, so the
// caller can fall back to another way of sleeping.
func sleepRelative(deadlineNs int64, now func() int64, wait func(due100ns int64) error) error {
	for range maxRearm {
		due, ok := relDue100ns(deadlineNs - now())
		if !ok {
			return nil
		}
		if err := wait(due); err != nil {
			return err
		}
	}
	return nil
}

// sleepRuntime sleeps until the monotonic time deadlineNs with time.Sleep:
// the portable way, and Windows' fallback when it has no high-resolution
// timer (before Windows 10 1803).
func sleepRuntime(deadlineNs int64) {
	if d := deadlineNs - monoNow(); d > 0 {
		time.Sleep(time.Duration(d))
	}
}

// Windows thread priorities (winbase.h), named here so that the mapping is
// tested everywhere.
const (
	threadPriorityNormal       = 0
	threadPriorityHighest      = 2
	threadPriorityTimeCritical = 15
)

// windowsThreadPriority maps --realtime-priority onto a Windows thread
// priority. A loop thread always runs above the process's other threads
// (HIGHEST needs no privilege); asking for a real-time priority (1..99)
// makes it TIME_CRITICAL, the top of the process's priority class.
func windowsThreadPriority(rtPriority int) int {
	if rtPriority > 0 {
		return threadPriorityTimeCritical
	}
	return threadPriorityHighest
}

// qpcToNs converts a QueryPerformanceCounter reading at hz counts per
// second into nanoseconds without overflowing for centuries of uptime.
func qpcToNs(count, hz int64) int64 {
	return count/hz*1e9 + count%hz*1e9/hz
}
