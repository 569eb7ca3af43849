package loop

import (
	"unsafe"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw/sim"
)

// BareEffects is what a loop written only to step simulated arms and
// render their effects keeps for each arm beside its sim.ArmCore: an
// effect.Renderer with room for two effects inline, side by side in one
// slice (separately allocated room costs such a loop 2 to 6 times more).
// The bare loops the service's capacity is measured against
// (BenchmarkEffectArmsTick's and `hapticd baseline-arms`) both keep it, so
// that they render from the same layout.
type BareEffects struct {
	Renderer effect.Renderer
	inline   effect.Inline
}

// Init gives the Renderer its inline room. Call it once, before the first
// Render.
func (b *BareEffects) Init() { b.Renderer.UseInline(&b.inline) }

// BarePrefetchAhead is how many arms ahead of the one it steps a bare loop
// asks for an arm's lines with PrefetchBareArm. In BenchmarkEffectArmsTick's
// bare loop (wall and damper, 5 alternated rounds), 4 ahead was as fast as
// 2 at 64 and 2,000 arms and 3 % faster at 10,000; 1 and 8 were slower.
const BarePrefetchAhead = 4

// PrefetchBareArm asks for the lines a bare loop's tick of one arm reads:
// the whole physics core and, if fx is not nil, the Renderer and the hot
// spans of its two inline effects (effect.InlineHotBytes), as the service's loop does for its controlled arms
// (prefetchArm). It never waits and never faults; on architectures
// without the instruction wired in it does nothing. A bare loop beyond the
// caches calls it for arm i+BarePrefetchAhead before stepping arm i, if
// the arms render effects: it is then as strict a floor as the service's
// loop, which prefetches its records the same way. (Arms without effects
// read only their cores, in order, which the core streams by itself:
// prefetching them made BenchmarkEffectArmsTick's bare loop 1 to 2 %
// slower.) (The arms' Sets are not read on such a tick: a
// Renderer compares the pointer with the Set it adopted last.)
func PrefetchBareArm(core *sim.ArmCore, fx *BareEffects) {
	prefetchBare(unsafe.Pointer(core), unsafe.Pointer(fx))
}

// Where PrefetchBareArm's probes go (prefetch_amd64.s;
// TestPrefetchCoversTheBareTick holds them to these spans).
const (
	bareCoreBytes = unsafe.Sizeof(sim.ArmCore{})
	bareInline    = unsafe.Offsetof((*BareEffects)(nil).inline)
	bareHeadBytes = bareInline + effect.InlineHotBytes
	bareSlot1     = bareInline + effect.InlineSlotBytes
)
