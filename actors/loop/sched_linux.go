//go:build linux

package loop

import "golang.org/x/sys/unix"

// threadRealtime reads back the calling thread's scheduling policy: true
// when it runs under a real-time policy (SCHED_FIFO or SCHED_RR), whether
// the loop asked for it or the process was started that way (chrt). A loop
// reports this, not what it asked for, in Stats.Realtime.
func threadRealtime() bool {
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return false
	}
	return attr.Policy == unix.SCHED_FIFO || attr.Policy == unix.SCHED_RR
}
