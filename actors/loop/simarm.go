package loop

import (
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// A scheduler shard keeps its simulated arms in blocks of simArm records:
// each record holds everything a tick of an arm nobody controls reads and
// writes (the physics core, the output; the published
// state in the block's cold half), so the shard steps them in one linear
// pass over compact memory, with a locked instruction only for the arms it
// publishes (see publishIdleEvery). The Device keeps the rest (register,
// stats, configuration, identity): the tick reads it only when something
// may have changed (a register write or claim, new Globals, a Halt: all of
// them poke the record) or while a session controls the arm.

// armBlockLen is how many records a block holds: blocks never move, so a
// record's address is stable while the shard's block list is copied on
// write.
const armBlockLen = 64

// armBlock keeps the records' hot parts side by side and their cold parts
// (the published snapshot buffers, read by others and written at most once
// a tick) in an array of their own, so the shard's pass streams only what
// every tick touches: 760 B a record stepped each tick before the split.
type armBlock struct {
	// ctl is the force stages of the records' devices (Device.fs points
	// here while a device is on the shard) and what the fast path of a
	// controlled arm reads (armControl): apart from arms, so the pass over
	// arms nobody controls streams none of it. First, so that each
	// armControl (256 bytes) fills 4 whole cache lines of the block
	// (allocated page-aligned): at 392 bytes from wherever it fell, one
	// tick read 7 lines of it.
	ctl [armBlockLen]armControl

	// Then the header, 4 pages from the block's start, in the page and
	// line of the first record: the pass of the block before this one
	// reads fast and fx to prefetch this block's first records, and asks
	// for their lines anyway (at the end of the struct, the header was a
	// page of its own to walk to, a stall of 5 ns an arm at 1,000 arms).

	// fx is room for the records' devices' effect stages (claimStage),
	// allocated on the first SetEffects of one of them; fxUsed has a bit
	// set for each place a device took (for good: see placeEffectStage).
	fx     atomic.Pointer[[armBlockLen]effectStage]
	fxUsed atomic.Uint64
	// ctlCold is the rest of each record's control (controlCold: Device.ft
	// points to its tally while the device on the shard has one): what
	// the fused tick never reads, apart from ctl so that the pass does not
	// stream it (forceStages). Allocated when the first of the block's
	// devices needs its own (Device.claimTally: a force command, a
	// control the fast path takes, a device that joins with a tally that
	// is not at rest) and kept for the block's life (shard.colds); nil
	// while none did, so an idle arm carries none of it
	// (TestIdleSimulatedArmMemory). The fast path for controlled arms
	// reads it only through the record (simArm.controlCold): the pass's
	// own code is as when it was an array of the block.
	ctlCold atomic.Pointer[[armBlockLen]controlCold]
	// hot has a bit set for each record whose readers keep it publishing
	// every tick (simArm.hotLeft > 0), so a tick visits only those
	// between two sparse publishes.
	hot uint64
	// fast has a bit set for each record the last pass stepped on the
	// fast path for controlled arms: this pass prefetches their lines
	// (prefetchArm), and no others'.
	fast uint64
	// phase staggers the blocks' publishes without readers over
	// publishIdleEvery ticks, so no tick carries them all.
	phase uint16
	// want is set by a reader that marked one of the block's records
	// (simArm.want): the next pass looks for the marks.
	want atomic.Uint32

	arms [armBlockLen]simArm
	cold [armBlockLen]armCold
}

// coreMover is a driver whose physics state can live in a shard's record:
// the simulated arm.
type coreMover interface {
	lazyStateDriver
	MoveCore(dst *sim.ArmCore)
}

// simArm is one simulated arm's record on a shard: its hot part, what a
// tick of an arm nobody controls reads and writes. The shard's goroutine,
// while it holds the shard's lock, owns every field but the atomics.
type simArm struct {
	// dev is the device stepped from this record, nil while it is free.
	dev atomic.Pointer[Device]
	// taps is the device's tap list (Device.taps), mirrored here under
	// its lock so the pass does not read the Device of every arm (a cache
	// miss each at thousands of arms).
	taps atomic.Pointer[[]*Tap]
	// poke is set by whatever may change the tick's work: a register
	// write, claim or release, SetGlobals, Halt. The next tick then runs
	// the device's full step.
	poke atomic.Uint32
	// want is set by readers of the device's state (Device.markRead) and
	// taken up by publishDue.
	want atomic.Uint32
	// slow: the last full step found the device controlled, ramping,
	// failing or otherwise needing the full step every tick.
	slow bool
	// controlled: the last full step found a session in control of a
	// force under a valid lease, and nothing that the fast path for such
	// an arm leaves to the full step (see Device.controlQuiet).
	controlled bool
	asleep     bool // at rest and time-invariant: nothing to step (see sleepCheck)
	// pending: the record's state is newer than its last publish (a
	// reader held the spare buffer, or nobody read it lately: see
	// publishDue), so the next tick that may publishes even at rest.
	pending bool
	outMode hw.ControlMode
	// hotLeft is how many more moving ticks publish every tick: a reader
	// asked for the state within the last publishHotTicks.
	hotLeft uint32
	// outWant is set by a new reader of the output figures (Device.Output)
	// and taken up by the fast path for controlled arms
	// (forceStages.takeOutputMark), in the record's first line, which that
	// path reads anyway: the Device's own read flag is a line of the Device
	// the fast path would otherwise touch on ticks that only look. (In the
	// padding before outForce: the record stays 344 bytes.)
	outWant atomic.Uint32
	// The output of an arm nobody controls (the gravity feed-forward),
	// and that feed-forward, which the published force leaves out.
	outForce  hw.Vec3
	gravityN  float64
	lastNowNs int64
	ticks     uint64
	core      sim.ArmCore
	*armCold  // immutable: the record's cold part, in the same block
}

// armCold is the cold part of a record.
type armCold struct {
	meta    armMeta
	metaVer uint64 // counts changes of meta, so a publish copies it only then
	pub     armCell
	sh      *shard    // immutable: the shard whose block holds the record
	blk     *armBlock // immutable: that block
	idx     uint8     // immutable: the record's index in that block
}

// control is the record's armControl (the full step's and the general
// path's way to it: the pass takes it from the block).
func (c *armCold) control() *armControl { return &c.blk.ctl[c.idx] }

// controlCold is the rest of the record's control (armBlock.ctlCold).
// Only for a record whose device holds a tally there (Device.claimTally:
// a controlled arm's did before the full step that put it on the fast
// path): the block's are nil before the first claim.
func (c *armCold) controlCold() *controlCold { return &c.blk.ctlCold.Load()[c.idx] }

// coldsPerAlloc is how many blocks' controlColds a shard allocates at
// once (shard.colds): 4 of 8 KiB, 32 KiB, which Go allocates as a large
// object, on its own pages (one block's, a small object with pointers over
// 512 B, starts 8 bytes into its slot behind its malloc header, where no
// controlCold would start a line).
const coldsPerAlloc = 4

// colds returns block b's controlColds, allocating them if it has none
// yet: the shard's next spare block's, or coldsPerAlloc blocks' more, the
// rest kept for the shard's next blocks that need them. Whoever allocates
// publishes them with the block's pointer (the shard's goroutine in a full
// step, under the shard's lock; attach, under the Scheduler's, on a free
// record beside the pass); a record's place in them belongs to its
// device's holder.
func (sh *shard) colds(b *armBlock) *[armBlockLen]controlCold {
	if c := b.ctlCold.Load(); c != nil {
		return c
	}
	sh.coldMu.Lock()
	defer sh.coldMu.Unlock()
	if c := b.ctlCold.Load(); c != nil {
		return c
	}
	if len(sh.spareCold) == 0 {
		chunk := newHuge[[coldsPerAlloc][armBlockLen]controlCold]()
		for i := coldsPerAlloc - 1; i >= 0; i-- {
			sh.spareCold = append(sh.spareCold, &chunk[i])
		}
	}
	n := len(sh.spareCold) - 1
	c := sh.spareCold[n]
	sh.spareCold[n] = nil
	sh.spareCold = sh.spareCold[:n]
	b.ctlCold.Store(c)
	return c
}

// claimStage takes the effect stage at place i of the block, allocating
// the block's stages if it has none yet, and readies it; nil if a device
// took that place before.
func (b *armBlock) claimStage(i uint8) *effectStage {
	fx := b.fx.Load()
	if fx == nil {
		b.fx.CompareAndSwap(nil, newHuge[[armBlockLen]effectStage]())
		fx = b.fx.Load()
	}
	for {
		used := b.fxUsed.Load()
		if used&(1<<i) != 0 {
			return nil
		}
		if b.fxUsed.CompareAndSwap(used, used|1<<i) {
			break
		}
	}
	st := &fx[i]
	st.init()
	return st
}

// armControl is a record's force stages and, while the record is on the
// fast path for a controlled arm, what that path's tick reads besides
// them: the command's inputs as the last full step found them (see
// Device.fillControl). What the fused tick never reads is in the block's
// ctlCold (controlCold, allocated on the block's first control), so that
// this is 256 bytes, 4 whole lines (TestArmControlHoldsTheFusedTick); the device's period and whether it
// gets the gravity feed-forward and may take the fused tick are in fs's
// last word (forceStages).
type armControl struct {
	fs         forceStages
	in         forceInputs
	deadlineNs int64 // the command's lease: past it, the full step
	// The gravity feed-forward (Device.addGravity), when fs.gravity says
	// the device gets one.
	ffN       float64
	maxForceN float64
	// fxSet is the Set the fused tick renders (effectStage.seenBy): the
	// stage's seen is the general path's, and its Session the command's.
	fxSet *effect.Set
}

// Publishing an arm costs a fair part of its tick (a locked instruction
// and a snapshot buffer pulled into the cache), and with thousands of arms
// nobody reads most of them. So a moving arm on a shard's fast path (for
// arms nobody controls or for controlled ones) publishes every tick only while someone reads it
// (Load or PublishSeq within the last publishHotTicks ticks), and
// otherwise every publishIdleEvery ticks and whenever it comes to rest:
// the first read after a quiet spell sees a state at most that many ticks
// old (its Tick and TimeNs say which), and the reads after it every tick's.
// A full step, taps and Halt publish every tick.
//
// publishIdleEvery is 128, the bound the effects report and the output
// figures of an unread arm had already (unreadEvery): at 8, an unread
// arm's publishes were 4 to 5 ns of its tick at 2,000 to 10,000 arms
// (BenchmarkEffectArmsTick; docs/investigations/capacity-effects.md, "What an arm
// nobody reads pays to publish"), at 128 a sixteenth of that.
const (
	publishIdleEvery = 128
	publishHotTicks  = 1024
)

// armMeta is the part of a snapshot that changes only on a full step.
type armMeta struct {
	mode       hw.ControlMode
	failed     bool
	derive     uint8
	status     hw.Status
	owner      uint64
	appliedSeq uint64
	target     [3]float64
}

// armSnap is one published state of an arm: a compact Snapshot.
type armSnap struct {
	// readers counts readers copying this buffer (see armCell).
	readers atomic.Int32
	meta    armMeta
	metaVer uint64 // the record's metaVer meta came with (0: always copy)
	tick    uint64
	timeNs  int64
	pos     hw.Vec3
	vel     hw.Vec3
	force   hw.Vec3
}

// armCell is SnapshotCell's algorithm on two compact buffers with one
// atomic for both "which is latest" and the publish count, so a publish
// costs one locked instruction: the writer fills the buffer that is not
// the latest and has no readers, then bumps seq; bufs[seq&1] is the
// latest. A reader announces itself on the latest buffer and copies it if
// it is still the latest.
type armCell struct {
	seq atomic.Uint64
	// base plus seq is PublishSeq: a device moving into or out of a shard
	// record keeps its count growing, without moving seq (which says
	// which buffer is the latest).
	base atomic.Uint64
	// held is set while the latest state is older than the record's: a
	// publish found the spare buffer held by a reader, and none succeeded
	// since (LoadCurrent then trusts only the snapshot's own time).
	held atomic.Uint32
	bufs [2]armSnap
}

// count is the device's PublishSeq while it publishes here.
func (c *armCell) count() uint64 { return c.base.Load() + c.seq.Load() }

// publish stores a state; false means a reader still held the other
// buffer, so the previous state stays the latest (the caller retries on its
// next tick).
func (c *armCell) publish(m *armMeta, metaVer, tick uint64, timeNs int64, pos, vel, force hw.Vec3) bool {
	s := c.seq.Load()
	b := &c.bufs[(s+1)&1]
	if b.readers.Load() != 0 {
		if c.held.Load() == 0 {
			c.held.Store(1)
		}
		return false
	}
	if metaVer == 0 || b.metaVer != metaVer {
		b.meta, b.metaVer = *m, metaVer
	}
	b.tick, b.timeNs = tick, timeNs
	b.pos, b.vel, b.force = pos, vel, force
	c.seq.Store(s + 1)
	if c.held.Load() != 0 { // after seq: the state it stood for is out
		c.held.Store(0)
	}
	return true
}

// latest is the writer's view of the last published state (only the
// writer may call it: it reads without announcing).
func (c *armCell) latest() *armSnap { return &c.bufs[c.seq.Load()&1] }

// load fills dst with the latest state, as Snapshot fields.
func (c *armCell) load(dst *Snapshot) {
	for {
		s := c.seq.Load()
		b := &c.bufs[s&1]
		b.readers.Add(1)
		if c.seq.Load() == s {
			m := &b.meta
			dst.Mode, dst.Failed, dst.derive = m.mode, m.failed, m.derive
			dst.Owner, dst.AppliedSeq, dst.Target = m.owner, m.appliedSeq, m.target
			dst.Tick, dst.TimeNs = b.tick, b.timeNs
			dst.CurrentAtNs = 0 // a lazy driver's state is always its tick's
			dst.State = hw.State{PositionM: b.pos, VelocityMps: b.vel, ForceN: b.force, Status: m.status}
			b.readers.Add(-1)
			return
		}
		b.readers.Add(-1) // the writer moved on meanwhile; b may be refilled
	}
}

// metaOf is the armMeta of a Snapshot.
func metaOf(p *Snapshot) armMeta {
	return armMeta{mode: p.Mode, failed: p.Failed, derive: p.derive, status: p.State.Status,
		owner: p.Owner, appliedSeq: p.AppliedSeq, target: p.Target}
}

// publishSnap publishes a full step's snapshot into the record, whose
// fast path publishes the same metadata until the next full step.
func (r *simArm) publishSnap(p *Snapshot) bool {
	if m := metaOf(p); m != r.meta || r.metaVer == 0 {
		r.meta = m
		r.metaVer++
	}
	return r.pub.publish(&r.meta, r.metaVer, p.Tick, p.TimeNs, p.State.PositionM, p.State.VelocityMps, p.State.ForceN)
}

// publishSnap publishes a snapshot of a lazy device.
func (c *armCell) publishSnap(p *Snapshot) bool {
	m := metaOf(p)
	return c.publish(&m, 0, p.Tick, p.TimeNs, p.State.PositionM, p.State.VelocityMps, p.State.ForceN)
}

// pass is one tick of the block's records, in two loops. The first steps
// the physics of the arms on the fast path and nothing else, so one arm's
// step overlaps the next one's in the core as in a bare loop over the
// physics (stepping and publishing each arm in turn cost 28 % more than
// that loop, this 10 to 15 %: BenchmarkMovingArmsTick). The second does the
// rest, for the records that need it: the publishes due this tick, the
// records the first loop left out (controlled, poked, tapped, the timed
// one) and the arms it found at rest or failing.
//
// next is the shard's block after b (nil: none), whose first records'
// lines the end of b's first loop asks for, as it does for b's own
// records ahead: unasked, the first load of each block's first record
// and its armControl were half of the pass's own samples at 1,000 arms.
func (b *armBlock) pass(ps *passScratch, cur **Device, next *armBlock) {
	now, cmd := ps.now, &ps.cmd
	// Bits by record: left to the second loop; stepped by the first; of
	// those, at rest after the step, and failed.
	// They stay in memory (a struct of more than four fields): the loop's
	// calls would otherwise have it reload them all after each.
	var k passBits
	k.timed = -1
	fx := b.fx.Load()
	var nextFast uint64
	var nextFx *[armBlockLen]effectStage
	if next != nil {
		// next's header (its fast bits and effect stages), read at the
		// end of this loop: a miss (and a page to walk to) that stalled
		// the pass there when not asked for. By address, as &next.fast
		// would load next's first line to nil-check it.
		prefetchLine(uintptr(unsafe.Add(unsafe.Pointer(next), blockHeadAt)))
	}
	for i := range b.arms {
		switch j := i + prefetchAhead; {
		case j < armBlockLen:
			if b.fast&(1<<j) != 0 {
				prefetchArm(b.lines(j, fx))
			}
		case next == nil:
		case j == armBlockLen:
			// next's header, read here, a block's work after b's.
			nextFast, nextFx = next.fast, next.fx.Load()
			fallthrough
		default:
			if nextFast&(1<<(j-armBlockLen)) != 0 {
				prefetchArm(next.lines(j-armBlockLen, nextFx))
			}
		}
		r := &b.arms[i]
		d := r.dev.Load()
		if d == nil {
			continue
		}
		ps.k++
		if r.slow || r.poke.Load() != 0 || r.taps.Load() != nil || ps.k == ps.sample {
			if ps.k == ps.sample {
				k.timed = i
			}
			k.left |= 1 << i
			continue
		}
		var moved bool
		var err error
		if r.controlled {
			c := &b.ctl[i]
			if now > c.deadlineNs {
				// The lease lapsed: the full step releases and ramps.
				r.slow, r.controlled = true, false
				k.left |= 1 << i
				continue
			}
			*cur = d
			k.fast |= 1 << i
			if c.fs.fused {
				moved, err = r.controlStepFx(c, d, ps, false)
			} else {
				moved, err = r.controlStep(c, d, ps, false)
			}
			if err != nil {
				continue // handled by the full step's code, this tick
			}
		} else {
			// As Device.stepLocked: an arm asleep only counts the tick.
			r.lastNowNs = now
			r.ticks++
			if r.asleep {
				continue
			}
			*cur = d
			// The pass's command, whose other fields stay zero: building
			// a whole hw.Command per arm cost the physics step about 7 %
			// more.
			cmd.Mode, cmd.ForceN = r.outMode, r.outForce
			moved, err = r.core.Step(cmd)
		}
		k.stepped |= 1 << i
		switch {
		case err != nil:
			k.failed |= 1 << i
		case moved:
			r.pending = true // until a publish takes this state
		default:
			k.still |= 1 << i
		}
	}
	b.fast = k.fast
	if b.want.Load() != 0 {
		// Readers marked records since the last look: they publish
		// every tick from this one (publishDue takes the marks up).
		b.want.Store(0)
		for i := range b.arms {
			// The device before the mark: attach (which may run beside
			// this pass on a free record) clears the mark before it
			// stores the device, so a mark seen after d is d's own.
			r := &b.arms[i]
			if d := r.dev.Load(); r.want.Load() != 0 {
				b.hot |= 1 << i
				// From this pass on the arm publishes every moving tick
				// while the mark stays pending (Device.LoadCurrent).
				if d != nil && d.markSeen.Load() == 0 {
					d.markSeen.Store(ps.tick)
				}
			}
		}
	}
	// The shard's tick, not the arms' own counts (which start wherever
	// their devices' did): a block's records publish on the same ticks.
	ps.due = (ps.tick+uint64(b.phase))%publishIdleEvery == 0
	moving := k.stepped &^ (k.still | k.failed)
	if !ps.due {
		moving &= b.hot
	}
	for m := moving; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		if r := &b.arms[i]; b.publishDue(r, i, ps.due) {
			r.pending = !r.publishState(now)
		}
	}
	for m := k.still; m != 0; m &= m - 1 {
		b.arms[bits.TrailingZeros64(m)].settle(now)
	}
	for m := k.failed; m != 0; m &= m - 1 {
		// The full step handles the driver's error, and counts the
		// tick: the first loop's count is taken back, so the state
		// left unpublished (pending) keeps the tick it was stepped on
		// and the tick is not counted twice.
		i := bits.TrailingZeros64(m)
		r := &b.arms[i]
		r.slow = true
		r.ticks--
		d := r.dev.Load()
		*cur = d
		r.slowTick(d, now, ps.slowTimed(i))
	}
	for m := k.left; m != 0; m &= m - 1 {
		i := bits.TrailingZeros64(m)
		r := &b.arms[i]
		d := r.dev.Load()
		*cur = d
		l := r.taps.Load()
		// The device's full step when something poked it or a session
		// controls it, else the fast path (which may hand over to it).
		switch {
		case r.slow || r.poke.Load() != 0:
			r.slowTick(d, now, ps.slowTimed(i))
		case r.controlled:
			r.controlTick(ps, b, i, d, i == k.timed, l != nil)
		case r.asleep:
			r.restTick(now)
		case !r.fastTick(ps, b, i, i == k.timed, l != nil):
			r.slowTick(d, now, ps.slowTimed(i))
		}
		if l != nil {
			d.feedTaps(*l, now, r.ticks)
		}
	}
}

// passBits are a block pass's record bits: left to the second loop,
// stepped by the first, of those at rest after the step and failed, and
// stepped on the fast path for controlled arms; timed is the record whose
// step is timed (-1: none).
type passBits struct {
	left, stepped, still, failed, fast uint64
	timed                              int
}

// settle is the end of a tick whose step left the arm where it was: a
// moving arm's last state is published as it comes to rest, and an arm at
// rest and time-invariant sleeps (see sleepCheck).
func (r *simArm) settle(nowNs int64) {
	if r.pending {
		r.pending = !r.publishState(nowNs)
	} else if !r.controlled && r.core.TimeInvariant() && r.core.Velocity() == (hw.Vec3{}) {
		r.asleep = true
	}
}

// publishState publishes the record's state under its metadata.
func (r *simArm) publishState(nowNs int64) bool {
	f := r.core.Force()
	f.Z -= r.gravityN
	return r.pub.publish(&r.meta, r.metaVer, r.ticks, nowNs, r.core.Position(), r.core.Velocity(), f)
}

// fastTick is one tick of an arm nobody controls, whose full step would
// only step the physics under a constant output and publish the state:
// what Device.stepLocked does in that case, on the record alone. The
// block's pass runs it for the arms its first loop leaves out (a tapped
// one, which publishes every tick; the one whose step is timed). It
// reports false when the device needs its full step after all (a driver
// error: the full step handles it on the next tick).
func (r *simArm) fastTick(ps *passScratch, b *armBlock, i int, timed, tapped bool) bool {
	r.lastNowNs = ps.now
	r.ticks++
	cmd := &ps.cmd
	cmd.Mode, cmd.ForceN = r.outMode, r.outForce
	var startNs int64
	if timed {
		startNs = ps.clock.Now()
	}
	moved, err := r.core.Step(cmd)
	if timed {
		ps.rs.exchange.Record(ps.clock.Now() - startNs)
	}
	if err != nil {
		r.slow = true
		r.ticks-- // the full step counts the tick (as in pass's failed loop)
		return false
	}
	switch {
	case !moved:
		r.settle(ps.now)
	case b.publishDue(r, i, ps.due) || tapped:
		r.pending = !r.publishState(ps.now)
	default:
		r.pending = true
	}
	return true
}

// controlTick is controlStep for an arm the block's first loop leaves out
// (a tapped one, the one whose step is timed), with its publish.
func (r *simArm) controlTick(ps *passScratch, b *armBlock, i int, d *Device, timed, tapped bool) {
	c := &b.ctl[i]
	if ps.now > c.deadlineNs {
		r.slow, r.controlled = true, false
		r.slowTick(d, ps.now, ps.slowTimed(i))
		return
	}
	var moved bool
	var err error
	if c.fs.fused {
		moved, err = r.controlStepFx(c, d, ps, timed)
	} else {
		moved, err = r.controlStep(c, d, ps, timed)
	}
	switch {
	case err != nil:
	case !moved:
		r.settle(ps.now)
	case b.publishDue(r, i, ps.due) || tapped:
		r.pending = !r.publishState(ps.now)
	default:
		r.pending = true
	}
}

// tickAt counts a controlled tick at now and returns it with the time
// since the last one (one period for the first, or when the clock did not
// advance). controlStep and controlStepFx both start with it.
func (r *simArm) tickAt(now int64, periodNs int32) (int64, int64) {
	dt := now - r.lastNowNs
	if r.lastNowNs == 0 || dt <= 0 {
		dt = int64(periodNs)
	}
	r.lastNowNs = now
	r.ticks++
	return now, dt
}

// controlStep is the tick of a controlled arm on the fast path (the
// caller checked its lease): what Device.stepLocked does for it while
// nothing pokes the record, on the record and its block's armControl,
// with the same functions: the force gate, the command's force stages
// (forceStages.force: damping, gate, scale, effects, passivity, clamp,
// slew), the output figures, the gravity feed-forward and the physics
// step. The register, the Globals, the Halt handshake and the lease's
// owner are the Device's and unchanged since the full step that put the
// arm on this path, since any change to them pokes the record. A driver
// error is handled at once by the full step's code (Device.controlError),
// which takes the arm off this path. The caller publishes.
func (r *simArm) controlStep(c *armControl, d *Device, ps *passScratch, timed bool) (moved bool, err error) {
	now, dt := r.tickAt(ps.now, c.fs.periodNs)
	fs := &c.fs
	// The command's inputs and the tallies, which the fused tick leaves
	// out of armControl (forceStages): this path reads them every tick.
	cc := r.controlCold()
	fs.takeOutputMark(r)
	if fs.outputDueNextOnShard() {
		// The store below touches d's output figures, a line no other
		// tick brings into the cache: asked for now, it arrives while
		// the force stages run. (Pointer arithmetic: &d.output would
		// load from d to nil-check it, the very wait this avoids.)
		prefetchOutput(uintptr(unsafe.Add(unsafe.Pointer(d), outputAt)))
	}
	pos, v := r.core.Position(), r.core.Velocity()
	fs.gate.updateWith(v, ps.gate.forDt(dt))
	f, sustained := fs.force(&c.in, &cc.cmd, &cc.tally, pos, v, 1, false, now, dt)
	// A command of no force whose observer still held one (the command's
	// before it): the fused tick from the tick its observer holds +0. The
	// Device's line only then (generalTick is the tests').
	if !fs.fused && fusable(&cc.cmd) && !cc.tally.sessionObs.Holds() {
		fs.fused = takesFusedTick(&cc.cmd, &cc.tally, d.generalTick)
		c.fxSet = c.in.fx.seenBy(cc.cmd.session)
	}
	if sustained {
		// The figures first: the event's reader takes its duration from them.
		d.output.store(fs, &cc.tally, c.in.fx, true)
		d.emit(Event{Kind: EventPassivitySustained, Session: cc.cmd.session})
	}
	// outputFigures.store, with the count first: d's lines are touched
	// only on the ticks that store. The figures' address by arithmetic
	// (d is never nil here): &d.output nil-checks d by loading its first
	// line, a miss of its own beside the prefetched figures' (a fifth of
	// controlStep's own samples at 1,000 arms).
	if fs.outputDueOnShard() {
		(*outputFigures)(unsafe.Add(unsafe.Pointer(d), outputAt)).storeDue(fs, &cc.tally, c.in.fx, false)
	}
	if c.fs.gravity {
		f = withGravity(f, c.ffN, c.maxForceN)
	}
	cmd := &ps.cmd
	cmd.Mode, cmd.ForceN = hw.ModeForce, f
	var startNs int64
	if timed {
		startNs = ps.clock.Now()
	}
	moved, err = r.core.Step(cmd)
	if timed {
		ps.rs.exchange.Record(ps.clock.Now() - startNs)
	}
	if err != nil {
		d.controlError(r, err, f)
	}
	return moved, err
}

// controlError handles a driver error on the fast path for a controlled
// arm as Device.stepLocked does (driverError: halt, disarm, fail after
// MaxErrors), and takes the arm off that path.
func (d *Device) controlError(r *simArm, err error, out hw.Vec3) {
	d.pull(r)
	d.out = hw.Command{Mode: hw.ModeForce, ForceN: out}
	owner := d.lastOwner
	d.driverError(err, owner)
	d.publishTick(r.lastNowNs, r.ticks, owner, hw.ModeForce, d.publishPending)
	d.push(r)
}

// passScratch is what a shard's pass shares across its blocks and arms:
// the command, the tick, and what the one timed step a tick needs.
type passScratch struct {
	cmd    hw.Command // only Mode and ForceN are ever set
	tick   uint64     // the shard's pass count
	now    int64
	k      uint64     // the devices counted so far in this pass's records
	sample uint64     // the k of the arm whose fast step is timed
	first  uint64     // the index of the block's first record on the shard
	due    bool       // the block's records publish this tick without readers
	gate   gateCoeffs // the force gate's, for the pass's tick length
	clock  Clock
	rs     *runnerStats
}

// slowTimed says whether the full step of record i of the block times its
// exchange: one tick in exchangeSampleEvery, staggered across records.
func (ps *passScratch) slowTimed(i int) bool {
	return (ps.tick+ps.first+uint64(i))%exchangeSampleEvery == 0
}

// publishDue says whether a moving tick of record i on the fast path
// publishes (see publishIdleEvery): every tick while someone reads, else
// when the block's sparse publish is due. A reader's mark is taken up on
// the next tick, and cleared at most once per half a hot spell, so a
// steady reader's marks cost the record's line little.
func (b *armBlock) publishDue(r *simArm, i int, due bool) bool {
	if r.hotLeft < publishHotTicks/2 && r.want.Load() != 0 {
		r.want.Store(0)
		r.hotLeft = publishHotTicks
		if d := r.dev.Load(); d != nil {
			// This pass (the shard's started count, under its lock) and
			// the publishHotTicks-1 after it publish every moving tick;
			// the mark is no longer pending (Device.LoadCurrent): before
			// readMark is cleared.
			d.markSeen.Store(0)
			d.hotPass.Store(r.sh.stats.ticks.Load())
			d.readMark.CompareAndSwap(uintptr(unsafe.Pointer(r)), 0) // after the mark: see Device.markRead
		}
	}
	if r.hotLeft > 0 {
		r.hotLeft--
		b.hot |= 1 << i
		return true
	}
	b.hot &^= 1 << i
	return due
}

// restTick is the tick of an arm asleep on the fast path, as
// Device.stepLocked's asleep path: count the tick, nothing else.
func (r *simArm) restTick(nowNs int64) {
	r.ticks++
	r.lastNowNs = nowNs
}

// slowTick runs the device's full step from the record.
func (r *simArm) slowTick(d *Device, nowNs int64, timed bool) {
	if r.poke.Load() != 0 {
		// Cleared before the step reads what the pokes announce, so a
		// poke during the step is seen on the next tick.
		r.poke.Store(0)
	}
	d.pull(r)
	d.stepLocked(nowNs, timed)
	d.push(r)
}

// pull brings the record's state into the device before a full step (or a
// Halt) on a scheduled arm.
func (d *Device) pull(r *simArm) {
	d.lastNowNs, d.publishPending = r.lastNowNs, r.pending
	d.asleep = false
	r.core.Fill(&d.state)
	p := &d.pub
	if r.pending {
		// The record's state is newer than its last publish: what the
		// fast path would publish now.
		p.Tick, p.TimeNs = r.ticks, r.lastNowNs
		p.State.PositionM, p.State.VelocityMps, p.State.ForceN = r.core.Position(), r.core.Velocity(), r.core.Force()
		p.State.ForceN.Z -= r.gravityN
		return
	}
	l := r.pub.latest()
	p.Tick, p.TimeNs = l.tick, l.timeNs
	p.State.PositionM, p.State.VelocityMps, p.State.ForceN = l.pos, l.vel, l.force
}

// push hands the device's state back to the record after a full step, and
// says whether the next ticks may take the fast path.
func (d *Device) push(r *simArm) {
	r.lastNowNs, r.pending = d.lastNowNs, d.publishPending
	r.asleep, d.asleep = d.asleep, false
	r.outMode, r.outForce, r.gravityN = d.out.Mode, d.out.ForceN, d.stateGravityN
	r.slow = !d.quiet()
	r.controlled = false
	if r.slow && d.controlQuiet() {
		// The force command's stages claimed the tally (finishForce);
		// claimed here anyway before the fast path reads it.
		d.tally()
		d.fillControl(r.control(), &r.controlCold().cmd)
		r.slow, r.controlled = false, true
	}
}

// controlQuiet says whether the device's tick, until something pokes it
// or its lease lapses, is the fast path's for a controlled arm
// (simArm.controlStep): a session controls it with a force command it
// applied (armed, in the owner's term, the register's latest), no ramp,
// no error, settings applied, no Halt pending, the gravity feed-forward
// in the state as in the output. An idle command whose session has
// effects takes the full step: when its effects have faded out, its
// output changes mode without a poke.
func (d *Device) controlQuiet() bool {
	owner := d.lastOwner
	return owner != 0 && d.armed && !d.ramping && !d.halted && d.errRun == 0 && !d.failed.Load() &&
		d.reg.owner.Load() == owner && d.cmd.Session == owner && d.cmd.term == d.reg.term.Load() &&
		d.reg.latest.Load() == d.cmd.version && d.held.version == d.cmd.version &&
		d.reg.live(&d.cmd) && d.unarmedOwner == 0 &&
		d.held.Cmd.Mode == hw.ModeForce && d.out.Mode == hw.ModeForce &&
		d.configuredFrom == d.globals.Load() && d.haltReq.Load() == d.haltAck.Load() &&
		d.gravityN == d.stateGravityN && d.reporter == nil
}

// fillControl sets c up for the fast path of the controlled arm d (see
// controlQuiet): the held command's inputs under the Globals in force, in
// c and cmd (its record's controlCold).
func (d *Device) fillControl(c *armControl, cmd *commandInputs) {
	g := d.configuredFrom
	d.forceInputs(&c.in, cmd, &d.held, g)
	c.deadlineNs = d.held.DeadlineNs
	c.fs.periodNs = int32(d.opts.PeriodNs)
	c.fs.gravity = !d.halted && d.hostGravity && g.Settings.GravityCompensation
	c.ffN, c.maxForceN = d.gravityN, d.maxForceN
	c.fs.fused = takesFusedTick(cmd, d.ft, d.generalTick)
	c.fxSet = c.in.fx.seenBy(cmd.session)
}

// quiet says whether the device's tick, until something pokes it, is the
// fast path's: nobody in control, no ramp, no error, settings applied, no
// Halt or register write pending, and an output that is a plain force.
func (d *Device) quiet() bool {
	return d.lastOwner == 0 && d.reg.owner.Load() == 0 && !d.armed && !d.ramping && d.errRun == 0 &&
		!d.failed.Load() && d.configuredFrom == d.globals.Load() && d.haltReq.Load() == d.haltAck.Load() &&
		d.reg.latest.Load() == d.cmd.version && d.unarmedOwner == 0 &&
		(d.out.Mode == hw.ModeIdle || d.out.Mode == hw.ModeForce) && d.gravityN == d.stateGravityN
}

// attach moves the device's loop state into r (a free record of a shard).
// The caller holds d's token, which stays held while the device is on the
// shard (the shard's lock guards the driver instead), and the Scheduler's
// lock.
func (d *Device) attach(r *simArm, m coreMover) {
	// Field by field: the record's atomics and buffers are read by the
	// shard and by readers of a device that left it.
	r.poke.Store(0)
	r.slow, r.asleep, r.pending = true, false, false
	r.outMode, r.outForce, r.gravityN = hw.ModeIdle, hw.Vec3{}, 0
	r.lastNowNs, r.ticks = d.lastNowNs, d.ticks.Load()
	m.MoveCore(&r.core)
	r.controlled = false
	c := r.control()
	c.fs = *d.fs
	d.fs = &c.fs
	// The tally goes to the block's controlColds if it has them, or if it
	// is not at rest; at rest, in a block without them, the device holds
	// none until a control claims one (claimTally), which starts it at
	// rest as here.
	if r.blk.ctlCold.Load() != nil || *d.ft != (forceTally{}) {
		cc := &r.sh.colds(r.blk)[r.idx]
		cc.tally = *d.ft
		d.ft = &cc.tally
	} else {
		d.ft = nil
	}
	// The record's publishes continue the cell's count, so PublishSeq
	// only grows (modular arithmetic: base may wrap).
	r.pub.base.Store(d.cell.Load().count() - r.pub.seq.Load())
	// Until this publish the record's latest is its last device's state;
	// a reader of that device may hold the spare buffer for a moment.
	for !r.publishSnap(&d.pub) {
		runtime.Gosched()
	}
	d.arm = r
	r.hotLeft = 0
	r.want.Store(0)
	// A mark left for the record's last device.
	r.outWant.Store(0)
	d.taps.mu.Lock() // the mirror and the slot change together (AddTap)
	r.taps.Store(d.taps.list.Load())
	// Before the slot: a LoadCurrent that sees r must not read a pass
	// number of the device's last shard against r's shard's passes.
	d.hotPass.Store(0)
	d.markSeen.Store(0)
	d.slot.Store(r)
	d.readMark.Store(0) // after the slot: a reader that loads r marks it again
	// A reader of the output figures whose mark went to the record the
	// device left (Device.Output loaded the slot before this store, so its
	// read flag is set by now): its figures start at the next store.
	if d.output.read.Load() {
		c.fs.readSeen = true
	}
	d.taps.mu.Unlock()
	d.cell.Store(&r.pub)
	d.reg.wake.Store(&r.poke)
	r.dev.Store(d)
}

// tally returns d.ft, after claimTally if the device has none (an arm on
// a shard that has had no control since it joined a block without
// controlColds). The holder of the driver calls it where a control needs
// the tally.
func (d *Device) tally() *forceTally {
	if d.ft == nil {
		d.claimTally()
	}
	return d.ft
}

// claimTally gives an arm on a shard that holds no tally its place in its
// block's controlColds, allocating them on the block's first claim, at
// rest (as attach would have left it). The caller holds the driver (the
// shard's lock): the record's place is the device's, and the block's
// pointer publishes the controlColds to the pass, which reads them for
// the records it finds controlled, and to an attach beside it.
func (d *Device) claimTally() {
	r := d.arm
	cc := &r.sh.colds(r.blk)[r.idx]
	cc.tally = forceTally{}
	d.ft = &cc.tally
}

// detach moves the device's loop state back out of r; the shard no longer
// steps it (the caller cleared r.dev and holds the shard's lock). It
// releases d's token.
func (d *Device) detach(r *simArm) {
	d.reg.wake.Store(nil)
	d.pull(r)
	d.asleep = false
	own, ownTally := new(forceStages), new(forceTally)
	*own = *d.fs
	if d.ft != nil {
		*ownTally = *d.ft
	}
	d.fs, d.ft = own, ownTally
	d.arm = nil
	if m, ok := d.drv.(coreMover); ok {
		m.MoveCore(nil)
	}
	d.ticks.Store(r.ticks)
	c := new(armCell)
	c.base.Store(r.pub.count())
	c.publishSnap(&d.pub)
	d.cell.Store(c)
	d.taps.mu.Lock()
	d.slot.Store(nil)
	r.taps.Store(nil)
	d.taps.mu.Unlock()
	d.token.Store(false)
}
