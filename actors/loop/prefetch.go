package loop

import (
	"unsafe"

	"github.com/hapticd/hapticd/actors/loop/effect"
)

// prefetchAhead is how many records ahead of the one it steps a block's
// first loop asks for a controlled arm's lines (armBlock.lines). With
// 10,000 arms, the fast path of a controlled arm with effects spent most
// of its tick waiting on the first load of each structure it reads: one
// arm's tick is too long for the core to reach the next arm's loads by
// itself, as the bare loop's shorter steps do, and loading them ahead
// with plain loads stalls the tick instead (tried: twice as slow).
// 1 and 2 ahead measured alike, 4 and 6 worse (BenchmarkEffectArmsTick).
const prefetchAhead = 2

// Where the lines a controlled arm's tick reads lie, as prefetchArm
// (prefetch_amd64.s) takes them: the whole record (the physics core and
// the tick's own fields: its last line alone was a fifth of controlStep's
// own time at 1,000 arms), the whole armControl, and of its effect
// stage the head (its flags, the Renderer) up to the end of its
// first effect's hot fields, and the second effect's hot fields (a
// settled spring, damper or wall reads no more; effect.InlineHotBytes). TestPrefetchCoversTheTick holds the
// assembly's probes to these spans.
const (
	recBytes    = unsafe.Sizeof(simArm{})
	ctlBytes    = unsafe.Sizeof(armControl{})
	fxInline    = unsafe.Offsetof((*effectStage)(nil).inline)
	fxHeadBytes = fxInline + effect.InlineHotBytes
	fxSlot1     = fxInline + effect.InlineSlotBytes
	fxHotBytes  = effect.InlineHotBytes
	// outputBytes and outputAt: a Device's output figures, which the
	// fast path of a controlled arm stores on one tick in 4 to 32
	// (simArm.controlStep prefetches them at the start of such a tick).
	outputBytes = unsafe.Sizeof(outputFigures{})
	outputAt    = unsafe.Offsetof((*Device)(nil).output)
	// blockArmsAt, blockCtlAt and fxStageBytes place a record, its
	// armControl and its effect stage for armBlock.lines.
	blockHeadAt  = unsafe.Offsetof((*armBlock)(nil).fx)
	blockArmsAt  = unsafe.Offsetof((*armBlock)(nil).arms)
	blockCtlAt   = unsafe.Offsetof((*armBlock)(nil).ctl)
	fxStageBytes = unsafe.Sizeof(effectStage{})
)

// lines is where record j's record, armControl and effect stage (0: fx
// is nil) lie, as &b.arms[j], &b.ctl[j] and &fx[j] without their nil
// checks (TestPrefetchCoversTheTick holds them equal).
//
// The pass asks for the lines the fast path of record j's controlled arm
// reads on its tick with prefetchArm(b.lines(j, fx)): the record, its
// armControl and, if the arm took its place in the block's effect stages
// (fx), that stage's hot part. It never waits and never faults. The pass
// does so for the records it stepped on that path on its last tick
// (armBlock.fast): testing the record's own flag cost more, its line
// being itself still on its way, and prefetching every record cost the
// arms nobody controls 3 % (BenchmarkMovingArmsTick). It calls the
// assembly itself, lines inlined: a Go method around the two (too large
// to inline) was one call more per arm, after which the pass reloaded
// its registers.
//
// The addresses are computed, not taken (&b.arms[j] nil-checks b by
// loading its first line: for the next block's records, the very miss
// the prefetch is for, a stall of its own). b is never nil and j is
// below armBlockLen.
func (b *armBlock) lines(j int, fx *[armBlockLen]effectStage) (rec, ctl, st uintptr) {
	if fx != nil {
		st = uintptr(unsafe.Add(unsafe.Pointer(fx), uintptr(j)*fxStageBytes))
	}
	p := unsafe.Pointer(b)
	return uintptr(unsafe.Add(p, blockArmsAt+uintptr(j)*recBytes)), uintptr(unsafe.Add(p, blockCtlAt+uintptr(j)*ctlBytes)), st
}
