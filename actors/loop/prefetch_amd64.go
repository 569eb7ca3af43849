package loop

import "unsafe"

// prefetchArm issues PREFETCHT0 for the lines of the shard record at rec,
// of the armControl at ctl and of the hot spans of the effect stage at
// stage (0: none), and returns at once; see armBlock.lines.
//
//go:noescape
func prefetchArm(rec, ctl, stage uintptr)

// prefetchOutput issues PREFETCHT0 for the lines of the output figures at
// p, and returns at once; see simArm.controlStep.
//
//go:noescape
func prefetchOutput(p uintptr)

// prefetchLine issues PREFETCHT0 for the line at p, and returns at once.
//
//go:noescape
func prefetchLine(p uintptr)

// prefetchBare issues PREFETCHT0 for the lines of the sim.ArmCore at core
// and of the hot spans of the BareEffects at fx (nil: none); see
// PrefetchBareArm.
//
//go:noescape
func prefetchBare(core, fx unsafe.Pointer)
