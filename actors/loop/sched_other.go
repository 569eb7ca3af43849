//go:build !linux

package loop

// threadRealtime is false where the loop cannot ask for a real-time policy
// (see tuneThread): a loop reports only what it can read back.
func threadRealtime() bool { return false }
