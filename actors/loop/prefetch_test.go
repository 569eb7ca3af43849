package loop

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/hapticd/hapticd/actors/loop/effect"
)

// blockSink keeps TestPrefetchCoversTheTick's blocks on the heap.
var blockSink *armBlock

// TestPrefetchCoversTheTick holds prefetch_amd64.s's straight-line probes
// to the spans they are for: each span's probes go from its first byte in
// steps of 64 up to a last stride, then its last byte, so they cover
// every line of the span whatever its alignment only if the span ends
// within 64 bytes past the last stride. A struct that grows past that
// would leave lines to be fetched by the tick itself: slower, not wrong.
func TestPrefetchCoversTheTick(t *testing.T) {
	var st effectStage
	var d Device
	consts := map[string]uintptr{
		"recBytes": recBytes, "ctlBytes": ctlBytes, "fxHeadBytes": fxHeadBytes,
		"fxSlot1": fxSlot1, "fxHotBytes": fxHotBytes,
		"outputBytes": outputBytes,
	}
	checkProbes(t, "prefetchArm", []probedObject{
		{"rec", recBytes, []span{{"shard record", 0, recBytes}}},
		{"ctl", ctlBytes, []span{{"armControl", 0, ctlBytes}}},
		{"stage", unsafe.Sizeof(st), []span{
			{"effect stage head and first effect", 0, fxHeadBytes},
			{"second effect", fxSlot1, fxHotBytes},
		}},
	}, consts)
	// prefetchOutput is handed a Device's output figures (outputAt).
	checkProbes(t, "prefetchOutput", []probedObject{
		{"p", unsafe.Sizeof(d) - outputAt, []span{{"a Device's output figures", 0, outputBytes}}},
	}, consts)
	// An armControl fills whole lines of its block: one more byte makes
	// a tick read a line more of it (armBlock.ctl).
	if ctlBytes%64 != 0 || blockCtlAt%64 != 0 {
		t.Errorf("armControl is %d bytes at %d in its block: not whole cache lines", ctlBytes, blockCtlAt)
	}
	// The block itself starts on a line (Go allocates an object this
	// large from its own pages): else every armControl straddles 7 lines.
	// So do its controlColds (allocated coldsPerAlloc blocks' at a time,
	// a large object too), else each straddles 3 lines. As a shard
	// allocates them (a new(armBlock) the compiler may keep on the stack).
	sh := new(shard)
	for range coldsPerAlloc + 2 {
		b := newHuge[armBlock]()
		if at := uintptr(unsafe.Pointer(b)); at%4096 != 0 {
			t.Errorf("an armBlock allocated at %#x, not on a page", at)
		}
		if at := uintptr(unsafe.Pointer(sh.colds(b))); at%4096 != 0 {
			t.Errorf("a block's controlColds allocated at %#x, not on a page", at)
		}
		blockSink = b
	}
	// The addresses prefetch computes are those of the fields.
	b, fx := new(armBlock), new([armBlockLen]effectStage)
	for _, j := range []int{0, 1, armBlockLen - 1} {
		rec, ctl, stage := b.lines(j, fx)
		if want := uintptr(unsafe.Pointer(&b.arms[j])); rec != want {
			t.Errorf("record %d at %#x, want %#x", j, rec, want)
		}
		if want := uintptr(unsafe.Pointer(&b.ctl[j])); ctl != want {
			t.Errorf("armControl %d at %#x, want %#x", j, ctl, want)
		}
		if want := uintptr(unsafe.Pointer(&fx[j])); stage != want {
			t.Errorf("effect stage %d at %#x, want %#x", j, stage, want)
		}
		if _, _, stage := b.lines(j, nil); stage != 0 {
			t.Errorf("effect stage %d of a block without stages at %#x, want 0", j, stage)
		}
	}
	// The spans are those of the fields a settled spring, damper or wall
	// reads: the Renderer before the inline room, and the hot fields of
	// two effects in it.
	if off := unsafe.Offsetof(st.r); off >= fxInline {
		t.Errorf("the Renderer at %d is not before the inline effects at %d", off, fxInline)
	}
	if got, want := unsafe.Sizeof(st.inline), 2*effect.InlineSlotBytes; got != want {
		t.Errorf("effect.Inline is %d bytes, two slots of effect.InlineSlotBytes are %d", got, want)
	}
}

// TestEffectStageLines: an effect stage is whole cache lines, and its lead
// pad puts the spans a controlled arm's tick reads on as few lines as any
// other pad would (the stages of a block sit side by side from a page).
func TestEffectStageLines(t *testing.T) {
	if fxStageBytes%64 != 0 {
		t.Errorf("an effectStage is %d bytes, not whole cache lines: set effectStageTail to %d", fxStageBytes, (effectStageTail+64-fxStageBytes%64)%64)
	}
	spans := [][2]uintptr{{effectStageLead, fxHeadBytes}, {fxSlot1, fxSlot1 + fxHotBytes}}
	lines := func(lead uintptr) int {
		seen := map[uintptr]bool{}
		for _, s := range spans {
			for b := s[0] - effectStageLead + lead; b < s[1]-effectStageLead+lead; b++ {
				seen[b/64] = true
			}
		}
		return len(seen)
	}
	have, best, bestLead := lines(effectStageLead), lines(effectStageLead), uintptr(effectStageLead)
	for lead := uintptr(0); lead < 64; lead += 8 {
		if n := lines(lead); n < best {
			best, bestLead = n, lead
		}
	}
	if best < have {
		t.Errorf("the tick reads %d lines of an effect stage with a lead of %d bytes, %d with %d: set effectStageLead to %d (and effectStageTail to keep whole lines)", have, effectStageLead, best, bestLead, bestLead)
	}
	// What the fused tick never reads stays after the inline effects
	// (effectStage): a field added to the head, or a Renderer 8 bytes
	// longer, makes it read a ninth line.
	if have > 8 {
		t.Errorf("the tick reads %d lines of an effect stage, want 8: move what it never reads after the inline effects", have)
	}
}

// TestPrefetchCoversTheBareTick holds prefetchBare's probes, as
// prefetch_amd64.s has them, to the spans a bare loop's tick reads: every
// probe lies inside a span (never past the ArmCore or the BareEffects it
// is for), and each span's probes start at its first byte, end at its last
// and are at most a line apart, so they touch every line of it whatever
// its alignment.
func TestPrefetchCoversTheBareTick(t *testing.T) {
	var b BareEffects
	objects := []probedObject{
		{"core", bareCoreBytes, []span{{"physics core", 0, bareCoreBytes}}},
		{"fx", unsafe.Sizeof(b), []span{
			{"Renderer and first effect", 0, bareHeadBytes},
			{"second effect", bareSlot1, fxHotBytes},
		}},
	}
	checkProbes(t, "prefetchBare", objects, map[string]uintptr{
		"bareCoreBytes": bareCoreBytes, "bareHeadBytes": bareHeadBytes,
		"bareSlot1": bareSlot1, "fxHotBytes": fxHotBytes,
	})
	if off := unsafe.Offsetof(b.Renderer); off != 0 || bareInline < unsafe.Sizeof(b.Renderer) {
		t.Errorf("the Renderer at %d, its inline room at %d: the probes expect the Renderer first", off, bareInline)
	}
	// Init gives the Renderer the inline room the probes cover.
	b.Init()
	if got := b.Renderer.Cap(); got != 2 {
		t.Errorf("an initialised BareEffects has room for %d effects, want 2 inline", got)
	}
}

// A probedObject is what one argument of a prefetch function points to:
// its size and the spans of it a tick reads.
type probedObject struct {
	arg   string // the assembly function's argument the probes are off
	size  uintptr
	spans []span
}

type span struct {
	name     string
	start, n uintptr
}

// checkProbes reads fn's probes from prefetch_amd64.s and holds them to
// objects: every probe inside a span a tick reads, each span probed at
// its first and last byte and never more than a line apart between.
func checkProbes(t *testing.T, fn string, objects []probedObject, consts map[string]uintptr) {
	t.Helper()
	probes := asmProbes(t, fn, consts)
	for arg := range probes {
		if !slices.ContainsFunc(objects, func(o probedObject) bool { return o.arg == arg }) {
			t.Errorf("%s probes off %s, an argument this test does not know", fn, arg)
		}
	}
	for _, o := range objects {
		offs := probes[o.arg]
		if len(offs) == 0 {
			t.Errorf("%s issues no probe off %s", fn, o.arg)
		}
		inSpan := make([][]uintptr, len(o.spans))
		for _, off := range offs {
			found := false
			for i, s := range o.spans {
				if off >= s.start && off < s.start+s.n {
					inSpan[i], found = append(inSpan[i], off), true
				}
			}
			if !found {
				t.Errorf("%s probes %s+%d, in none of the spans a tick reads (%d bytes)", fn, o.arg, off, o.size)
			}
		}
		for i, s := range o.spans {
			if s.start+s.n > o.size {
				t.Errorf("%s: [%d, %d) is past the %d bytes it lies in", s.name, s.start, s.start+s.n, o.size)
			}
			p := inSpan[i]
			slices.Sort(p)
			if len(p) == 0 || p[0] != s.start || p[len(p)-1] != s.start+s.n-1 {
				t.Errorf("%s: [%d, %d) probed at %v: want its first and last byte probed; fix prefetch_amd64.s", s.name, s.start, s.start+s.n, p)
				continue
			}
			for j := 1; j < len(p); j++ {
				if p[j]-p[j-1] > 64 {
					t.Errorf("%s: probes at %d and %d leave a line between them unfetched; add probes to prefetch_amd64.s", s.name, p[j-1], p[j])
				}
			}
		}
	}
}

// asmProbes reads the PREFETCHT0 probes of the function fn in
// prefetch_amd64.s: their offsets, keyed by the argument whose pointer the
// register held (the last MOVQ arg+N(FP) before them).
func asmProbes(t *testing.T, fn string, consts map[string]uintptr) map[string][]uintptr {
	t.Helper()
	src, err := os.ReadFile("prefetch_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	probes := map[string][]uintptr{}
	in, arg := false, ""
	for _, line := range strings.Split(string(src), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case f[0] == "TEXT":
			in = strings.HasPrefix(f[1], "·"+fn+"(")
		case !in:
		case f[0] == "MOVQ" && strings.HasSuffix(f[1], "(FP),"):
			arg, _, _ = strings.Cut(f[1], "+")
		case f[0] == "PREFETCHT0":
			off, ok := asmOffset(strings.TrimSuffix(f[1], "(AX)"), consts)
			if !ok {
				t.Fatalf("%s probes %s: cannot read it (a const_ name this test was not given?)", fn, f[1])
			}
			if arg == "" {
				t.Fatalf("%s probes %s before loading an argument", fn, f[1])
			}
			probes[arg] = append(probes[arg], off)
		}
	}
	if len(probes) == 0 {
		t.Fatalf("prefetch_amd64.s has no probes in %s", fn)
	}
	return probes
}

// asmOffset evaluates an assembly offset such as 64 or
// (const_bareSlot1+const_fxHotBytes-1): integers and the const_ names in
// consts, added and subtracted; false if it holds anything else or is
// negative.
func asmOffset(expr string, consts map[string]uintptr) (uintptr, bool) {
	expr = strings.TrimSuffix(strings.TrimPrefix(expr, "("), ")")
	var sum int64
	for expr != "" {
		sign := int64(1)
		if expr[0] == '-' {
			sign = -1
		}
		expr = strings.TrimLeft(expr, "+-")
		end := strings.IndexAny(expr, "+-")
		if end < 0 {
			end = len(expr)
		}
		term := expr[:end]
		expr = expr[end:]
		if c, ok := strings.CutPrefix(term, "const_"); ok {
			v, known := consts[c]
			if !known {
				return 0, false
			}
			sum += sign * int64(v)
			continue
		}
		n, err := strconv.ParseInt(term, 10, 64)
		if err != nil {
			return 0, false
		}
		sum += sign * n
	}
	return uintptr(sum), sum >= 0
}

// TestArmControlHoldsTheFusedTick pins the split of a controlled arm's
// state on a shard: the fused tick reads its armControl, 4 whole lines
// streamed by the pass, and the fields it never reads on a tick the
// passivity controller does not act (the command's own inputs, the
// session's observer, the controller's spells, the navigation's energy,
// the spells emitted) are in the block's ctlCold, two lines an arm, so
// the pass brings 128 bytes less an arm from memory than with a 384-byte
// armControl (streams22, bytes22, perf22d). A field added to forceStages
// or forceInputs grows armControl past 4 lines and fails here: put it in
// controlCold unless the fused tick reads it.
func TestArmControlHoldsTheFusedTick(t *testing.T) {
	var c armControl
	var b armBlock
	var cc [armBlockLen]controlCold
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"armControl's size", ctlBytes, 4 * 64},
		// The fast path's own word fills forceStages' last word: the
		// output figures' count leaves 6 bytes there, the period and the
		// two flags take them (a word of its own would be 8 bytes past 4 lines).
		{"forceStages' end", unsafe.Sizeof(c.fs), unsafe.Offsetof(c.fs.periodNs) + unsafe.Sizeof(c.fs.periodNs)},
		{"the shard word's start", unsafe.Offsetof(c.fs.gravity), unsafe.Offsetof(c.fs.outTicks) + 2},
		{"controlCold's size", unsafe.Sizeof(controlCold{}), 2 * 64},
		// The block's header and records keep their place in their pages,
		// 4 pages in (6 while the controlColds were in the block), the
		// records 48 bytes into theirs (40 before the ctlCold pointer).
		{"the block's header", blockHeadAt, 4 * 4096},
		{"the block's records", blockArmsAt, 4*4096 + 48},
		// What a block holds per record does not grow: streams22's block
		// was 72,744 bytes (armControl 384, no ctlCold, armCold 408 with
		// a pointer to the armControl, now computed from blk and idx);
		// with its controlColds, which only a control allocates, no more.
		{"a block's bytes per record with its controlColds, at most 1,137",
			min((unsafe.Sizeof(b)+unsafe.Sizeof(cc))/armBlockLen, 1137), (unsafe.Sizeof(b) + unsafe.Sizeof(cc)) / armBlockLen},
		// An idle arm's block holds no controlColds: 128 bytes less.
		{"a block's bytes per record without its controlColds, at most 1,009",
			min(unsafe.Sizeof(b)/armBlockLen, 1009), unsafe.Sizeof(b) / armBlockLen},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, tt.got, tt.want)
		}
	}
}
