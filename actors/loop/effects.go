package loop

import (
	"math"
	"sync/atomic"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
)

// reportEvery is how many ticks apart the effects report and the output
// figures are published: readers (frames' extension fields, /metrics, a
// proxy drawn by an engine at 60 to 200 Hz) need no more, and a report of
// 16 effects is a kilobyte and a half to copy. A report nobody read for
// unreadTicks is published only every unreadEvery ticks: ten thousand
// arms' reports cost 3.5 MB of copies a tick otherwise.
const (
	reportEvery = 4
	unreadTicks = 1000
	unreadEvery = 128
)

// effectStage is a device's effects: the Set in force, which a session
// publishes (SetEffects), the Renderer the tick owns with room for two
// effects beside it, and the report readers load (kept apart: it is
// kilobytes the tick writes only every few ticks). A device gets one on its
// first SetEffects, so the thousands of arms that never render an effect
// carry a nil pointer.
//
// Its size is a whole number of cache lines (stages sit side by side in
// a shard block's array, which starts on a page), and lead places its
// fields so that the spans a controlled arm's tick reads (prefetch.go)
// touch as few lines as any other place would: 10 rather than 11.25 on
// average at its old 2,008 bytes, which made BenchmarkEffectArmsTick's
// capacity-ratio-min 4 to 10 % higher at 10,000 arms (no change at 64
// to 2,000, where prefetching hides the lines).
// TestEffectStageLines fails, with the lead that fits, when a field moves.
// What the fused tick never reads (SetEffects' fields, the general path's
// seen) is after the inline effects, so that the head it reads is 296
// bytes and the stage's spans 8 lines, not 9 (perf22d).
type effectStage struct {
	lead      [effectStageLead]byte
	rendering bool // rendered on the last tick (else paused)
	ticks     uint8
	unread    uint16 // ticks since read was set (see read)
	// read is set by LoadEffects and cleared by the tick once unread
	// for unreadTicks.
	read   atomic.Bool
	r      effect.Renderer
	inline effect.Inline
	rep    *effectsReport
	set    atomic.Pointer[effect.Set]
	// grow is room for more effects, allocated by SetEffects for the tick
	// to move its Renderer into (the tick allocates nothing).
	grow     atomic.Pointer[effect.Slots]
	capacity atomic.Int64 // r.Cap(), for SetEffects
	// seen is the Set render loaded last and seenSession its Session.
	// The fused tick renders the one armControl.fxSet holds (seenBy).
	seen        *effect.Set
	seenSession uint64
	_           [effectStageTail]byte
}

// effectStageLead and effectStageTail pad an effectStage (see there).
const (
	effectStageLead = 0
	effectStageTail = 40
)

// seenBy is the Set render loaded last if session declared it, else nil
// (another session's effects are not this owner's to feel; render decides
// so every tick): what the fused tick renders while nothing pokes the
// record, since only render changes seen (armControl.fxSet).
func (st *effectStage) seenBy(session uint64) *effect.Set {
	if st == nil || st.seen == nil || st.seenSession != session {
		return nil
	}
	return st.seen
}

type effectsReport struct {
	cell cell[EffectsReport]
}

func newEffectStage() *effectStage {
	st := new(effectStage)
	st.init()
	return st
}

// init readies a zero stage in place.
func (st *effectStage) init() {
	st.rep = new(effectsReport)
	st.r.UseInline(&st.inline)
	st.capacity.Store(int64(st.r.Cap()))
}

// placeEffectStage returns a new effect stage for d: in its shard block's
// stages, side by side with those of the block's other arms, when d is on
// a shard and its record's place there is free, else on its own. With
// 10,000 arms rendering, stages allocated one by one made the same effects
// cost a bare loop 3 times more (BenchmarkEffectArmsTick rendered through
// such stages: 1.5 to 2 µs an arm against 0.5). A stage stays where it was
// placed for the device's life, also if the device leaves the shard.
func (d *Device) placeEffectStage() *effectStage {
	if r := d.slot.Load(); r != nil {
		if st := r.blk.claimStage(r.idx); st != nil {
			return st
		}
	}
	return newEffectStage()
}

// EffectsReport is what the loop rendered of a device's effects, as of
// TimeNs: each effect's force, proxy point, fade and energy.
type EffectsReport struct {
	TimeNs int64
	// Session owns the Set in force (0: none).
	Session uint64
	// Rendering is false while no lease holds the effects (they push
	// nothing).
	Rendering bool
	// N effects are in Effects: those in force first, then those fading
	// out; a report holds at most effect.MaxEffects.
	N       int
	Effects [effect.MaxEffects]effect.Rendered
}

// A RemoteEffects is a driver whose device's effects are rendered by
// another process's loop: a lab gateway's proxy of an arm on a node, where
// a gateway loop rendering them would send a new force every tick across
// the network. This loop keeps the Set a session publishes (Effects, and
// the session's command counts as a force while it has effects, so the
// driver keeps its hold), renders none of it, hands every Set in force to
// ForwardEffects, and reads the effects report and the output figures from
// the driver. Such a driver is not lazy.
type RemoteEffects interface {
	// ForwardEffects is called with the Set now in force (nil: none) on
	// each SetEffects and each DropEffects that withdrew one, from the
	// caller's goroutine, which may be any: it must not block, and calls
	// may overlap.
	ForwardEffects(s *effect.Set)
	// LoadEffects and Output are LoadEffects and Output as the rendering
	// loop last reported them; they must not block.
	LoadEffects(dst *EffectsReport) bool
	Output() OutputReport
}

// SetEffects publishes the Set of effects the loop renders on this device
// from its next tick (nil: none), or from the next lease when the output is
// ramping out (render). The loop renders a Set only while its
// Session controls the device under a valid lease, summed with that
// session's command; when control ends they ramp out with it. Calls may
// overlap (a session whose control just ended, and the new owner); a
// session's own declarations go through SetEffectsOf. It allocates when the device needs more room for effects than it
// had (its first call, a larger Set); the tick reads the Set through an
// atomic pointer and never waits for it.
func (d *Device) SetEffects(s *effect.Set) { d.setEffects(s, nil) }

// SetEffectsOf is SetEffects for a session's own declaration (s nil: it
// declares none): it publishes s only while session controls the device,
// and reports whether it did. A session whose lease lapsed while its
// message was handled, and whose arm another session took meanwhile, so
// never replaces the new owner's effects with its own (or with none).
func (d *Device) SetEffectsOf(session uint64, s *effect.Set) bool {
	return session != 0 && d.setEffects(s, func(holder uint64) bool { return holder == session })
}

// SetEffectsIf is SetEffects for a Set that takes no control (a lab
// gateway's, written by its node before the commands that claim the arm):
// it publishes s only if mayReplace, given the register's holder at the
// moment of the publish (0: nobody), allows it, and reports whether it
// did. The check and the publish are one step: a holder that claims the
// device and publishes its own Set meanwhile keeps it. mayReplace may be
// called more than once and must not block.
func (d *Device) SetEffectsIf(s *effect.Set, mayReplace func(holder uint64) bool) bool {
	return d.setEffects(s, mayReplace)
}

// ReplaceEffects publishes s in place of old, only while old is the Set in
// force and its session controls the device, and reports whether it did:
// a Set converted again from old (the device actor's, for a session whose
// view changed) never overwrites a declaration published meanwhile.
func (d *Device) ReplaceEffects(old, s *effect.Set) bool {
	st := d.fx.Load()
	if old == nil || st == nil {
		return false
	}
	// setEffects swaps against the Set it loaded before asking: old still
	// in force when asked, the swap succeeds only if it still is.
	return d.setEffects(s, func(holder uint64) bool { return holder == old.Session && st.set.Load() == old })
}

// setEffects publishes s; with mayReplace, only while it allows the
// register's holder. The holder is read before the Set is swapped in, and
// the swap fails if any Set was published meanwhile, so a new owner's Set,
// stored after its claim, is never replaced by a Set checked against the
// holder before it.
func (d *Device) setEffects(s *effect.Set, mayReplace func(holder uint64) bool) bool {
	allowed := func() bool { return mayReplace == nil || mayReplace(d.reg.Owner()) }
	st := d.fx.Load()
	if st == nil {
		if s == nil {
			return allowed()
		}
		d.fx.CompareAndSwap(nil, d.placeEffectStage())
		st = d.fx.Load()
	}
	for {
		old := st.set.Load()
		if !allowed() {
			return false
		}
		// Room for the new Set beside the effects the renderer holds
		// (the old Set's, and earlier ones' still fading out: a client
		// that renames its effects every frame has several generations
		// fading, and one dropped for room stops at once), which fade out
		// while the new ones fade in; up to maxEffectRoom, past which the
		// renderer drops the faintest fading one. Published before the
		// Set: a tick that sees the Set sees the room.
		// Never replaced by a smaller one: a caller whose control just
		// ended may overlap the new owner's.
		need := min(s.Len()+max(old.Len(), st.r.Held()), max(maxEffectRoom, s.Len()+old.Len()))
		for {
			g := st.grow.Load()
			if int64(need) <= max(st.capacity.Load(), int64(capOf(g))) || st.grow.CompareAndSwap(g, effect.NewSlots(need)) {
				break
			}
		}
		if st.set.CompareAndSwap(old, s) {
			break
		}
	}
	if d.remoteFx != nil {
		d.remoteFx.ForwardEffects(s)
	}
	d.poke()
	return true
}

// maxEffectRoom bounds the effects an arm's renderer holds, those fading
// out included: with the default 50 ms fade a client renaming 16 effects
// at 60 Hz keeps about 64 alive; a longer fade (up to effect.MaxFadeNs)
// renamed as often would otherwise grow the room, and every tick's work,
// without bound.
const maxEffectRoom = 8 * effect.MaxEffects

func capOf(s *effect.Slots) int {
	if s == nil {
		return 0
	}
	return s.Cap()
}

// Effects returns the Set published last (nil: none).
func (d *Device) Effects() *effect.Set {
	if st := d.fx.Load(); st != nil {
		return st.set.Load()
	}
	return nil
}

// LoadEffects fills dst with the latest effects report and reports false
// (dst zeroed) when the device never had effects. It never blocks. A
// device whose report nobody loaded for a second publishes it only every
// unreadEvery ticks, so the first Load after a quiet spell may be that old
// (TimeNs says); the loop publishes every reportEvery ticks from then on.
func (d *Device) LoadEffects(dst *EffectsReport) bool {
	if d.remoteFx != nil {
		return d.remoteFx.LoadEffects(dst)
	}
	st := d.fx.Load()
	if st == nil {
		*dst = EffectsReport{}
		return false
	}
	if !st.read.Load() {
		st.read.Store(true)
	}
	st.rep.cell.Load(dst)
	return true
}

// render is the effects' force for the tick under session's control
// (gain: the force scale), from the arm's last position and velocity.
// activeN is its part from effects that drive the arm by intent
// (effect.Renderer.ActiveForceN). While rampingOut (the lease lapsed or
// control ended) a newly published Set with effects waits for the next
// lease: the renderer keeps the one it has, so a declaration that raced
// the lapse (a stiffer spring, a new effect) cannot raise the force under
// the ramp; a withdrawal or a clear (nil, or no effects) is taken at once,
// its effects fading out. (A removal that leaves some is held with the
// rest, at most the ramp's 20 ms, while the whole force falls.)
func (st *effectStage) render(session uint64, pos, vel hw.Vec3, nowNs, dtNs int64, gain float64, rampingOut bool) (f, activeN hw.Vec3) {
	set := st.set.Load()
	if set != st.r.Set() {
		if rampingOut && set.Len() > 0 {
			set = st.r.Set()
		} else {
			st.useGrown() // after loading the Set: see SetEffects
		}
	}
	if set != st.seen {
		// A Set is immutable: its session is read once, not every tick
		// (a cache miss an arm with thousands of arms rendering).
		st.seen, st.seenSession = set, 0
		if set != nil {
			st.seenSession = set.Session
		}
	}
	if set != nil && st.seenSession != session {
		set = nil // another session's effects: not this owner's to feel
	}
	if set == nil && st.r.Len() == 0 && !st.rendering {
		return hw.Vec3{}, hw.Vec3{}
	}
	if !pos.Finite() || !vel.Finite() {
		st.r.Pause()
		st.rendering = false
		return hw.Vec3{}, hw.Vec3{}
	}
	// Field by field: a composite literal is built in a temporary and
	// copied with 16-byte moves over 8-byte stores, a store-forwarding
	// stall the profile put at a tenth of the render at 1,000 arms.
	var in effect.Input
	in.NowNs, in.DtNs = nowNs, dtNs
	in.PositionM, in.VelocityMps = pos, vel
	f = st.r.Render(set, &in, gain)
	started := !st.rendering
	st.rendering = true
	st.ticks++
	if started || (st.ticks >= reportEvery && (st.ticks >= unreadEvery || st.read.Load())) {
		st.publish(nowNs, set)
	}
	return f, st.r.ActiveForceN()
}

// useGrown moves the Renderer into the room SetEffects allocated, if it did.
func (st *effectStage) useGrown() {
	if g := st.grow.Load(); g != nil {
		st.r.UseSlots(g)
		st.capacity.Store(int64(st.r.Cap()))
		st.grow.CompareAndSwap(g, nil)
	}
}

// idleRenders says whether c, a command with no output of its own
// (ModeIdle: a session that only renews its lease), yields a force: that of
// its session's effects or navigation. A session that navigates without
// commanding forces gets its bubble as one with effects gets them.
func (d *Device) idleRenders(c *Command) bool {
	return (c.Params != nil && c.Params.Navigation != nil) || d.effectsActive(c.Session)
}

// effectsActive says whether a command of session's yields a force from
// effects: its Set has some, or some still fade out.
func (d *Device) effectsActive(session uint64) bool {
	st := d.fx.Load()
	if st == nil {
		return false
	}
	if s := st.set.Load(); s != nil && s.Session == session && s.Len() > 0 {
		return true
	}
	return st.r.Len() > 0 && st.rendering
}

// pauseEffects stops rendering (no lease holds the effects): walls let go
// of their contacts and fades start again from zero.
func (d *Device) pauseEffects(nowNs int64) {
	st := d.fx.Load()
	if st == nil || !st.rendering {
		return
	}
	st.r.Pause()
	st.rendering = false
	st.publish(nowNs, st.set.Load())
}

func (st *effectStage) publish(nowNs int64, set *effect.Set) {
	if st.read.Load() {
		st.unread += uint16(st.ticks)
		if st.unread >= unreadTicks {
			st.read.Store(false)
			st.unread = 0
		}
	}
	st.ticks = 0
	// Filled in the cell's spare buffer: a report is a kilobyte and a
	// half of which a tick changes a few lines (its effects; the ones
	// past them are cleared only if an older report left some), and a
	// copy of it cost each publish as much as the rest of the tick.
	sb, place := st.rep.cell.spare()
	if sb == nil {
		return // readers hold every other buffer: the next publish catches up
	}
	b := &sb.snap
	b.TimeNs, b.Rendering = nowNs, st.rendering
	b.Session = 0
	if set != nil {
		b.Session = set.Session
	}
	// The effects in force first, then the ones fading out while room is
	// left: a Set that replaces a full one renders twice the report's
	// room for a fade, and the report (GET's rendered_force, the frames'
	// proxies) is for the effects in force.
	n := 0
	for _, removing := range [2]bool{false, true} {
		for i := 0; i < st.r.Len() && n < len(b.Effects); i++ {
			if st.r.Removing(i) == removing {
				st.r.Rendered(i, &b.Effects[n])
				n++
			}
		}
	}
	b.N = n
	for i := b.N; i < len(b.Effects) && b.Effects[i].ID != ""; i++ {
		b.Effects[i] = effect.Rendered{}
	}
	st.rep.cell.commit(sb, place)
}

// OutputReport is the energy the passivity layer observed on a device's
// commanded force and what its controller did (package passivity's sign
// convention: energy absorbed from the arm, negative when a source drove
// it). Energies count from the start of the current control and are zero
// between controls.
type OutputReport struct {
	// SessionEnergyJ is the session's own force's, EffectsEnergyJ its
	// effects', NavigationEnergyJ the navigation module's effects'.
	SessionEnergyJ, EffectsEnergyJ, NavigationEnergyJ float64
	// EnergyJ is the controller's account of what its scope guards (the
	// rendered sources passive by design by default, the summed output
	// in passivity.ScopeOutput), its own dissipation included.
	EnergyJ float64
	// AddedDampingNsPerM is the damping the controller added last.
	AddedDampingNsPerM float64
	// ActiveNs is how long the controller has been acting without a
	// break; Sustained is true past a second (EventPassivitySustained),
	// and SustainedSpells counts such spells since the device started.
	ActiveNs        int64
	Sustained       bool
	SustainedSpells uint64
}

// outputFigures are OutputReport's fields as atomics: a reader gets each
// figure whole, not all of them from the same tick. They are stored every
// reportEvery ticks while read (an Output call within unreadTicks), every
// unreadEvery ticks otherwise, and when a control ends.
type outputFigures struct {
	sessionJ, effectsJ, navigationJ, energyJ, dampingNsPerM atomic.Uint64
	activeNs                                                atomic.Int64
	spells                                                  atomic.Uint64
	read                                                    atomic.Bool
	unread                                                  uint16 // the tick's: ticks since read was set
}

// Output returns the passivity figures of the device's output, as of a
// recent tick: every few ticks while someone calls Output, and up to
// unreadEvery ticks old on the first call after a quiet second. It never
// blocks.
func (d *Device) Output() OutputReport {
	if d.remoteFx != nil {
		return d.remoteFx.Output()
	}
	o := &d.output
	if !o.read.Load() {
		o.read.Store(true)
		// The fast path of a controlled arm on a shard looks for a
		// reader here, not at o.read (forceStages.takeOutputMark).
		if r := d.slot.Load(); r != nil {
			r.outWant.Store(1)
		}
	}
	r := OutputReport{
		SessionEnergyJ:     math.Float64frombits(o.sessionJ.Load()),
		EffectsEnergyJ:     math.Float64frombits(o.effectsJ.Load()),
		NavigationEnergyJ:  math.Float64frombits(o.navigationJ.Load()),
		EnergyJ:            math.Float64frombits(o.energyJ.Load()),
		AddedDampingNsPerM: math.Float64frombits(o.dampingNsPerM.Load()),
		ActiveNs:           o.activeNs.Load(),
		SustainedSpells:    o.spells.Load(),
	}
	r.Sustained = r.ActiveNs > 0 && r.ActiveNs > passivity.SustainedNs
	return r
}

// store stores the output figures of fs and fx's effects (nil: none),
// every reportEvery ticks while someone reads them, every unreadEvery
// otherwise, or when forced (control ended). A device nobody read at its
// last store looks for a reader every reportEvery ticks (its read flag,
// beside the figures); on a shard's fast path for a controlled arm it
// looks in the record instead (takeOutputMark), so that path touches the
// Device only on the ticks that store.
func (o *outputFigures) store(fs *forceStages, ft *forceTally, fx *effectStage, force bool) {
	if fs.outputDue(o) || force {
		o.storeDue(fs, ft, fx, force)
	}
}

// outputDue counts a tick and says whether store may store on it.
func (fs *forceStages) outputDue(o *outputFigures) bool {
	fs.outTicks++
	t := fs.outTicks
	return t%reportEvery == 0 && (t >= unreadEvery || fs.readSeen || o.read.Load())
}

// Two ways to the same decision: on a shard's fast path for a controlled
// arm the Device's read flag is a line that tick reads nowhere else (a miss,
// at thousands of arms a page walk too), so that path takes a new reader's
// mark from the record, on the line its pass reads first; the full step,
// which touches the Device anyway, reads the flag. Both store on the same
// ticks (TestControlledFastPathStepsAsTheDevice).

// takeOutputMark takes up a new reader's mark (simArm.outWant, set by
// Device.Output): the figures are stored from the next tick in
// reportEvery, where storeDue reads the Device's flag itself (a stale
// mark stores nothing).
func (fs *forceStages) takeOutputMark(r *simArm) {
	if r.outWant.Load() != 0 {
		r.outWant.Store(0)
		fs.readSeen = true
	}
}

// outputDueOnShard is outputDue on a shard's fast path for a controlled
// arm: no look at the Device between stores (see takeOutputMark).
func (fs *forceStages) outputDueOnShard() bool {
	fs.outTicks++
	return fs.dueOnShardAt(fs.outTicks)
}

// outputDueNextOnShard says whether outputDueOnShard will say yes on the
// next tick (if no store resets the count before).
func (fs *forceStages) outputDueNextOnShard() bool { return fs.dueOnShardAt(fs.outTicks + 1) }

func (fs *forceStages) dueOnShardAt(t uint8) bool {
	return t%reportEvery == 0 && (t >= unreadEvery || fs.readSeen)
}

// storeDue is store on a tick that may store.
func (o *outputFigures) storeDue(fs *forceStages, ft *forceTally, fx *effectStage, force bool) {
	fs.readSeen = o.read.Load()
	if !force && fs.outTicks < unreadEvery && !fs.readSeen {
		return
	}
	if o.read.Load() {
		o.unread += uint16(fs.outTicks)
		if o.unread >= unreadTicks {
			o.read.Store(false)
			o.unread = 0
		}
	}
	fs.outTicks = 0
	var fxJ, navJ float64
	if fx != nil {
		fxJ, navJ = fx.r.Energy()
	}
	navJ += ft.navJ
	o.sessionJ.Store(math.Float64bits(ft.sessionObs.EnergyJ))
	o.effectsJ.Store(math.Float64bits(fxJ))
	o.navigationJ.Store(math.Float64bits(navJ))
	o.energyJ.Store(math.Float64bits(fs.pc.EnergyJ))
	o.dampingNsPerM.Store(math.Float64bits(fs.pc.DampingNsPerM))
	o.activeNs.Store(fs.pc.ActiveNs)
	o.spells.Store(ft.spell.Spells)
}

// DropEffects withdraws the Set in force if session declared it, and
// reports whether it did. Unlike SetEffects it may be called from any
// goroutine, at any time: a session that ends withdraws its effects while
// the device may already have a new controller, whose Set it leaves alone.
// The withdrawn effects fade out like removed ones (under the ramp that
// ends their control).
func (d *Device) DropEffects(session uint64) bool {
	st := d.fx.Load()
	if st == nil {
		return false
	}
	for {
		s := st.set.Load()
		if s == nil || s.Session != session {
			return false
		}
		if st.set.CompareAndSwap(s, nil) {
			if d.remoteFx != nil {
				d.remoteFx.ForwardEffects(nil)
			}
			d.poke()
			return true
		}
	}
}
