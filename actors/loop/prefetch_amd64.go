package loop

// prefetchArm issues PREFETCHT0 for the lines of the armControl at ctl
// and of the hot spans of the effect stage at stage (0: none), and
// returns at once; see armBlock.prefetch.
//
//go:noescape
func prefetchArm(ctl, stage uintptr)
