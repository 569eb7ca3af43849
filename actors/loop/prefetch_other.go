//go:build !amd64

package loop

// prefetchArm does nothing where the loop has no prefetch instruction
// wired in: the tick reads the same memory, only later.
func prefetchArm(ctl, stage uintptr) {}
