package effect

import (
	"testing"
	"unsafe"
)

// TestInlineSpansCoverAWallsTick: the loops that step thousands of arms
// prefetch an inline effect's first InlineHotBytes because the constant
// promises that a settled spring, damper or wall touches nothing else. Every field a
// wall's tick reads or writes (state.wall, render's fade and sum) must lie
// in it: a field outside is a miss on a line nobody asked for, on
// every arm whose state puts it there (the bare loop's wall depth, written
// on every tick, was one after the contact rule; bench/results.md,
// 2026-11-27 18:35).
func TestInlineSpansCoverAWallsTick(t *testing.T) {
	var s state
	fields := []struct {
		name      string
		off, size uintptr
	}{
		{"kind", unsafe.Offsetof(s.kind), unsafe.Sizeof(s.kind)},
		{"contact", unsafe.Offsetof(s.contact), unsafe.Sizeof(s.contact)},
		{"trapped", unsafe.Offsetof(s.trapped), unsafe.Sizeof(s.trapped)},
		{"weight", unsafe.Offsetof(s.weight), unsafe.Sizeof(s.weight)},
		{"forceN", unsafe.Offsetof(s.forceN), unsafe.Sizeof(s.forceN)},
		{"energyJ", unsafe.Offsetof(s.energyJ), unsafe.Sizeof(s.energyJ)},
		{"cur.StiffnessNPerM", unsafe.Offsetof(s.cur) + unsafe.Offsetof(s.cur.StiffnessNPerM), 8},
		{"cur.DampingNsPerM", unsafe.Offsetof(s.cur) + unsafe.Offsetof(s.cur.DampingNsPerM), 8},
		{"cur.PointM", unsafe.Offsetof(s.cur) + unsafe.Offsetof(s.cur.PointM), unsafe.Sizeof(s.cur.PointM)},
		{"cur.AxisUnit", unsafe.Offsetof(s.cur) + unsafe.Offsetof(s.cur.AxisUnit), unsafe.Sizeof(s.cur.AxisUnit)},
		{"proxyM", unsafe.Offsetof(s.proxyM), unsafe.Sizeof(s.proxyM)},
		{"kindWord (a wall's contact depth)", unsafe.Offsetof(s.kindWord), unsafe.Sizeof(s.kindWord)},
	}
	in := func(off, size, from, n uintptr) bool { return off >= from && off+size <= from+n }
	for _, f := range fields {
		if !in(f.off, f.size, 0, InlineHotBytes) {
			t.Errorf("state.%s at %d (+%d bytes) lies outside the span a loop prefetches, [0, %d)",
				f.name, f.off, f.size, InlineHotBytes)
		}
	}
}
