//go:build !amd64

package loop

import "unsafe"

// prefetchArm and prefetchOutput do nothing where the loop has no
// prefetch instruction wired in: the tick reads the same memory, only
// later.
func prefetchArm(rec, ctl, stage uintptr) {}

func prefetchOutput(p uintptr) {}

func prefetchLine(p uintptr) {}

func prefetchBare(core, fx unsafe.Pointer) {}
