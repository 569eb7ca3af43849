#include "go_asm.h"
#include "textflag.h"

// func prefetchArm(rec, ctl, stage uintptr)
//
// Straight-line PREFETCHT0s (a loop over spans cost the tick more than it
// saved): each span's first byte, every 64 bytes on, and its last byte,
// so it is covered whatever its alignment. The spans' lengths are
// prefetch.go's constants; TestPrefetchCoversTheTick checks that these
// probes reach each span's end. A prefetch never faults.
TEXT ·prefetchArm(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ rec+0(FP), AX
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 (const_recBytes-1)(AX)
	MOVQ ctl+8(FP), AX
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 (const_ctlBytes-1)(AX)
	MOVQ stage+16(FP), AX
	TESTQ AX, AX
	JZ   done
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 (const_fxHeadBytes-1)(AX)
	PREFETCHT0 const_fxSlot1(AX)
	PREFETCHT0 (const_fxSlot1+64)(AX)
	PREFETCHT0 (const_fxSlot1+128)(AX)
	PREFETCHT0 (const_fxSlot1+const_fxHotBytes-1)(AX)
done:
	RET

// func prefetchOutput(p uintptr)
//
// The first and the last byte of a span of at most 65 bytes: the output
// figures of a Device (outputBytes).
TEXT ·prefetchOutput(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 0(AX)
	PREFETCHT0 (const_outputBytes-1)(AX)
	RET

// func prefetchLine(p uintptr)
TEXT ·prefetchLine(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ p+0(FP), AX
	PREFETCHT0 0(AX)
	RET

// func prefetchBare(core, fx unsafe.Pointer)
//
// As prefetchArm, for a bare loop's arm: its sim.ArmCore, and its
// BareEffects' Renderer with the first effect's hot span, and the second
// effect's hot span.
TEXT ·prefetchBare(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ core+0(FP), AX
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 (const_bareCoreBytes-1)(AX)
	MOVQ fx+8(FP), AX
	TESTQ AX, AX
	JZ   bdone
	PREFETCHT0 0(AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 (const_bareHeadBytes-1)(AX)
	PREFETCHT0 const_bareSlot1(AX)
	PREFETCHT0 (const_bareSlot1+64)(AX)
	PREFETCHT0 (const_bareSlot1+128)(AX)
	PREFETCHT0 (const_bareSlot1+const_fxHotBytes-1)(AX)
bdone:
	RET
