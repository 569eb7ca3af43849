package actors

// The encoded-frame cache: one device's element (id, state and status),
// encoded once per publish of its loop and view, so that the sessions
// framing the same publish copy bytes instead of encoding again. It sits beside frame
// encoding (session.go's fillDevices), not in the device actor: the actor
// never reads or writes it. Every method is safe for concurrent use by any
// number of sessions and never blocks.

import (
	"math"
	"sync/atomic"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/protocol"
)

// Cache slots, one per wire format.
const (
	slot3x = iota
	slot30
	numCacheSlots
)

// cacheSlot is the cache slot of a codec's format, or -1 for none.
func cacheSlot(c Codec) int {
	if c == nil {
		return -1
	}
	switch c.APIVersion() {
	case "3.x":
		return slot3x
	case "3.0":
		return slot30
	}
	return -1
}

// frameCache holds, per wire format, the latest encoding stored for one
// device. The zero value is an empty cache.
type frameCache struct {
	bodies [numCacheSlots]atomic.Pointer[encodedBody]
	// lastMiss is, per cache slot, the publish and session of the last
	// frame that encoded the state without storing it (missKey).
	lastMiss [numCacheSlots]atomic.Uint64
}

// encodedBody is one device's element (id, state and status) as a format
// encodes it for one published snapshot seen through one view. It is keyed
// by the loop's publish sequence, not the tick: a Halt republishes the same
// tick with another mode. It is immutable once published, but for reused.
type encodedBody struct {
	seq  uint64
	view *View
	body []byte
	// reused is set by the first frame that reuses it: none means no
	// frame needed that publish again (say, one session subscribed to the
	// device at the loop's rate), so storing encodings only costs
	// allocations. It is set once, not counted: every session framing the
	// device writing one shared word was a cache line bouncing between
	// the cores at every hit.
	reused atomic.Bool
}

// markReused sets e.reused, writing only the first time.
func (e *encodedBody) markReused() {
	if !e.reused.Load() {
		e.reused.Store(true)
	}
}

// cached returns the encoded element of publish seq seen through v in a
// format's slot, or nil when the cache holds another publish or view.
func (fc *frameCache) cached(slot int, seq uint64, v *View) []byte {
	if e := fc.bodies[slot].Load(); e != nil && e.seq == seq && e.view == v {
		e.markReused()
		return e.body
	}
	return nil
}

// missKey packs a publish sequence (its low 40 bits: 35 years at 1 kHz),
// a session ID (its low 22 bits) and a count of that session's frames of
// that publish less one (2 bits, 0 here) into one word, so that one atomic
// operation records and compares them. A collision only misjudges one
// decision of worthStoring, never what a frame carries.
func missKey(seq, session uint64) uint64 {
	return seq<<24 | (session&(1<<22-1))<<2
}

// worthStoring says whether a frame of session that missed the cache
// should store its encoding (store) or encode the state inline with no
// allocation. It stores while stored encodings are reused, and starts
// again when a publish encoded inline is framed again: a third time by the
// same session (a client faster than the loop), which stores it now for
// its next frames, or by another session, which marks the cache reused so
// that the next miss (of this publish or the next) stores.
//
// Measured with 100 sessions each subscribed to its own of 100 moving arms
// at the loop's rate: storing cost 1.1 KB of garbage per frame and the
// cache seldom hit; a rule that stored one publish in 16 to probe for
// readers still made 6.5 MB/s of garbage, and one that stored a publish
// framed twice by a session 10 MB/s (a client's tick and the loop's drift
// apart: one frame in ten lands twice in one publish).
func (fc *frameCache) worthStoring(slot int, seq, session uint64) bool {
	e := fc.bodies[slot].Load()
	if e == nil || e.reused.Load() {
		return true
	}
	key := missKey(seq, session)
	last := &fc.lastMiss[slot]
	for {
		prev := last.Load()
		next := key
		if prev&^3 == key {
			if prev&3 >= 1 {
				return true // the third frame of this publish: store it
			}
			next = prev + 1
		}
		if !last.CompareAndSwap(prev, next) {
			continue // another session's frame of this device came between
		}
		if prev>>24 == key>>24 && prev&^3 != key {
			e.markReused() // another session's: the stale entry takes the hit, the next miss stores
		}
		return false
	}
}

// store publishes a fresh encoding for the frames of the same publish that
// come next, and returns it. The frame that found the cache stale pays one
// small allocation; the others copy.
func (fc *frameCache) store(slot int, seq uint64, v *View, body []byte) []byte {
	fc.bodies[slot].Store(&encodedBody{seq: seq, view: v, body: body})
	return body
}

// buffer is an empty buffer for an encoding store will keep: room for the
// last stored encoding and a little more, so that encoding into it does
// not grow it (a fixed 512 bytes made two allocations per arm).
func (fc *frameCache) buffer(slot int, fresh int) []byte {
	if e := fc.bodies[slot].Load(); e != nil {
		return make([]byte, 0, len(e.body)+64)
	}
	return make([]byte, 0, fresh)
}

// Arm runs: the elements of every arm of a DeviceSet, encoded through the
// arms' default views and joined with commas, as one frame writes them.
// Sessions that see every arm alike (their default views, no effects on
// any arm, every state field) copy one run instead of checking each arm's
// view, effects and cached element: in a 100-arm frame those checks,
// each a cache miss on a line of its own, cost about a third of what the
// frame's encoding cost besides the copy. A run is valid while no arm has
// published since (each arm's publish sequence, the one check per arm left)
// and while the service counts no change to any view or effects
// (Device.framesEpoch), which the session's own views are checked against
// once per change, not per frame (runMemo). A run built after some arms
// published copies the others' elements from the run it replaces and
// encodes only the arms that changed.

// armRuns holds a DeviceSet's latest run per wire format.
type armRuns struct {
	runs [numCacheSlots]atomic.Pointer[armRun]
	// unreused counts, per slot, the stale runs not rebuilt because the
	// last one built was never reused (runRebuildEvery).
	unreused [numCacheSlots]atomic.Uint32
	// spare holds replaced runs whose buffers a build may take once no
	// frame reads them: a 100-arm run is 63 KB, built up to a few times
	// per loop tick, and allocating each was the collector's main work.
	spare [numCacheSlots][2]atomic.Pointer[armRun]
}

// armRun is one run. It is immutable once stored, but for reused and
// readers.
type armRun struct {
	epoch   uint64   // framesEpoch when the run was begun
	builder uint64   // the session that built it
	seqs    []uint64 // each arm's publish sequence, read before its snapshot
	views   []*View  // each arm's default view its element was encoded through
	ends    []int    // where each arm's element ends in body (a comma follows but for the last)
	// contents are what each arm's element was encoded from: an arm that
	// published again with the same content keeps its element.
	contents []armContent
	body     []byte
	// reused is set once, by the first frame that copies the run after
	// the one that built it (see frameCache's encodedBody.reused).
	reused atomic.Bool
	// readers counts the frames holding the run (acquire to release):
	// its buffers go to another run only at zero. One add and one
	// subtract per frame, not per arm.
	readers atomic.Int32
}

// acquire returns the slot's run held for reading (release it), or nil.
// A run that is replaced between the load and the count is let go: a
// build may be reusing its buffers already.
func (rs *armRuns) acquire(slot int) *armRun {
	for {
		r := rs.runs[slot].Load()
		if r == nil {
			return nil
		}
		r.readers.Add(1)
		if rs.runs[slot].Load() == r {
			return r
		}
		r.readers.Add(-1)
	}
}

// retire offers r, replaced, to later builds of the slot. When every
// spare is taken, r takes the place of one a frame still reads: a frame
// spliced into a write the client stalls holds its run until the write
// ends (seconds, up to the write timeout), and spares kept so would leave
// every later build to allocate (63 KB a build at 100 arms, several a
// tick). The run given up goes to the collector once its frame lets go.
// With no spare read, r goes to the collector.
func (rs *armRuns) retire(slot int, r *armRun) {
	for i := range rs.spare[slot] {
		if rs.spare[slot][i].CompareAndSwap(nil, r) {
			return
		}
	}
	for i := range rs.spare[slot] {
		old := rs.spare[slot][i].Load()
		if old != nil && old.readers.Load() != 0 && rs.spare[slot][i].CompareAndSwap(old, r) {
			return
		}
	}
}

// fresh is an empty run for n arms: a retired run nobody reads any more
// when there is one, else a new one. A retired run is reused whole, not
// only its buffers, so that a build allocates nothing: a frame that loaded
// it from the slot before it was retired and counts itself a reader only
// now finds it no longer (or, once stored again, rightly) the slot's
// (acquire), and its count comes back down. readers is left as it is for
// that reason; it is zero here but for such a passing count.
func (rs *armRuns) fresh(slot, n, size int) *armRun {
	for i := range rs.spare[slot] {
		old := rs.spare[slot][i].Load()
		if old == nil || old.readers.Load() != 0 || !rs.spare[slot][i].CompareAndSwap(old, nil) {
			continue
		}
		if cap(old.seqs) >= n && cap(old.body) >= size {
			old.seqs, old.views, old.ends, old.contents, old.body = old.seqs[:n], old.views[:n], old.ends[:n], old.contents[:n], old.body[:0]
			old.reused.Store(false)
			return old
		}
	}
	r := &armRun{}
	r.seqs, r.views, r.ends, r.contents, r.body = make([]uint64, n), make([]*View, n), make([]int, n), make([]armContent, n), make([]byte, 0, size)
	return r
}

// armContent is what an arm's element in a run is encoded from, besides
// its id and the format: the state and status fillArm gives through the
// arm's default view (no extensions: a run holds no arm with effects).
type armContent struct {
	state  protocol.ArmState
	status protocol.ArmStatus
}

// sameContent reports whether a, filled as buildArmRun fills it, encodes
// to the bytes c was encoded to. A loop publishes every tick while the
// arm is read, and an arm at rest or pushed against a limit publishes
// the same content again but for the last bits of a number: its force
// settles on the command in steps of 1e-8 N and less, which the frame's
// measured numbers (written as float32, protocol's appendNumber) do not
// show. Comparing costs a fraction of encoding the element again.
func (c *armContent) sameContent(a *protocol.ArmFrame) bool {
	x, y := &c.state, &a.State
	return c.status == a.Status && x.Ext == nil && y.Ext == nil &&
		x.ControlMode == y.ControlMode && x.ControlDomain == y.ControlDomain && x.CalibrationState == y.CalibrationState &&
		sameVec3(x.CursorPosition, y.CursorPosition) && sameVec3(x.CursorVelocity, y.CursorVelocity) &&
		sameAngles3(x.AngularPosition, y.AngularPosition) && sameAngles3(x.AngularVelocity, y.AngularVelocity) &&
		sameQuat(x.BodyOrientation, y.BodyOrientation) && sameVec3(x.CurrentCursorForce, y.CurrentCursorForce) &&
		sameVec3(x.CurrentCursorPosition, y.CurrentCursorPosition) &&
		sameAngles3(x.CurrentAngularPosition, y.CurrentAngularPosition) && sameAngles3(x.CurrentAngularTorques, y.CurrentAngularTorques) &&
		sameTransform(x.Transform, y.Transform)
}

// sameMeasured reports whether two numbers the frame writes as measured
// values are written alike: the same to the bit, or both finite, in
// float32's range and the same float32. appendNumber writes such a number
// from its float32 alone: an integer under a million as AppendInt (which
// a float32 holds exactly, and whose shortest float32 form is the same
// digits), anything else as AppendFloat's shortest form for 32 bits,
// which rounds to float32 first; -0 and a negative number rounding to
// float32's -0 are both "-0". The rest (NaN, infinities, numbers past
// float32's range) only match to the bit.
func sameMeasured(a, b float64) bool {
	if math.Float64bits(a) == math.Float64bits(b) {
		return true
	}
	if math.IsNaN(a) || math.IsNaN(b) || math.Abs(a) > math.MaxFloat32 || math.Abs(b) > math.MaxFloat32 {
		return false // Abs of ±Inf is over the range too
	}
	return math.Float32bits(float32(a)) == math.Float32bits(float32(b))
}

// sameTransform compares transforms, written exactly: to the bit (0 and
// -0 are written differently).
func sameTransform(a, b protocol.Transform) bool {
	x := [...]float64{a.Position.X, a.Position.Y, a.Position.Z, a.Rotation.W, a.Rotation.X, a.Rotation.Y, a.Rotation.Z, a.Scale.X, a.Scale.Y, a.Scale.Z}
	y := [...]float64{b.Position.X, b.Position.Y, b.Position.Z, b.Rotation.W, b.Rotation.X, b.Rotation.Y, b.Rotation.Z, b.Scale.X, b.Scale.Y, b.Scale.Z}
	for i := range x {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			return false
		}
	}
	return true
}

func sameVec3(a, b protocol.Vec3) bool {
	return sameMeasured(a.X, b.X) && sameMeasured(a.Y, b.Y) && sameMeasured(a.Z, b.Z)
}

func sameAngles3(a, b protocol.Angles3) bool {
	return sameMeasured(a.A0, b.A0) && sameMeasured(a.A1, b.A1) && sameMeasured(a.A2, b.A2)
}

func sameQuat(a, b protocol.Quat) bool {
	return sameMeasured(a.W, b.W) && sameMeasured(a.X, b.X) && sameMeasured(a.Y, b.Y) && sameMeasured(a.Z, b.Z)
}

// runMemo is one session's side of arm runs: whether every arm of set was
// seen through its default view when the service's count of changes was
// epoch, and scratch for the arms' publish sequences and for encoding an
// arm.
type runMemo struct {
	set       *DeviceSet
	epoch     uint64
	allShared bool
	seqs      []uint64
	arm       protocol.ArmFrame
	// held is the run the session's frame copies, until release.
	held *armRun
}

// release lets go of the run the last frame held (its bytes are copied
// into the frame by now).
func (rm *runMemo) release() {
	if rm.held != nil {
		rm.held.readers.Add(-1)
		rm.held = nil
	}
}

// runRebuildEvery is how many frames in a row may find their run stale
// without building one, when the last run built was never reused and
// their session built it (one session alone, slower than the loops: a
// run per frame would be a 100-arm encoding per frame that nobody
// copies). The frames between encode per arm, through frameCache.
const runRebuildEvery = 8

// armRunFor returns the run of arms (every arm of devs) that this frame
// copies, building it when the stored run is stale, or nil when the
// frame must encode per arm: a session with a view of its own of some
// arm, an arm with effects, devices made outside a Service, or a stale run
// not worth building again yet.
func armRunFor(devs *DeviceSet, arms []*Device, slot int, session uint64, m *viewMemo, snap *loop.Snapshot, codec Codec) *armRun {
	if m != nil {
		m.run.release() // a frame that was not emitted
	}
	if devs.runs == nil || m == nil || len(arms) == 0 || arms[0].framesEpoch == nil {
		return nil
	}
	// The count before anything it guards is read: a change that lands
	// meanwhile counts past it, and the run is not used again.
	epoch := arms[0].framesEpoch.Load()
	rm := &m.run
	if rm.set != devs || rm.epoch != epoch {
		rm.set, rm.epoch, rm.allShared = devs, epoch, true
		for i, d := range arms {
			if d.framesEpoch != arms[0].framesEpoch || m.viewFor(i, d, session) != d.defaultView.Load() {
				rm.allShared = false
				break
			}
		}
	}
	if !rm.allShared {
		return nil
	}
	rs := devs.runs
	r := rs.acquire(slot)
	if cap(rm.seqs) < len(arms) {
		rm.seqs = make([]uint64, len(arms))
	}
	seqs := rm.seqs[:len(arms)]
	same := r != nil && r.epoch == epoch
	for i, d := range arms {
		seqs[i] = d.publishSeq()
		if same && seqs[i] != r.seqs[i] {
			same = false
		}
	}
	if same {
		if !r.reused.Load() {
			r.reused.Store(true)
		}
		rm.held = r
		return r
	}
	if r != nil && !r.reused.Load() && r.builder == session {
		if n := rs.unreused[slot].Add(1); n%runRebuildEvery != 0 {
			r.readers.Add(-1)
			return nil
		}
	}
	// A run of another count still holds the elements of the arms whose
	// publish and default view are the same: another session's own view
	// changing (a workspace moved every tick) re-encodes nothing.
	next := buildArmRun(rs, slot, session, arms, seqs, epoch, r, snap, codec, &rm.arm)
	if next != nil {
		next.readers.Add(1) // this frame's, before others can see it
		if rs.runs[slot].CompareAndSwap(r, next) {
			if r != nil {
				rs.retire(slot, r)
			}
		}
		// Else another frame stored a run meanwhile: this frame copies
		// its own, which nobody else sees, and the collector takes it.
		rm.held = next
	}
	if r != nil {
		r.readers.Add(-1)
	}
	return next
}

// buildArmRun encodes a run of arms at seqs (read before each snapshot),
// copying from prev (nil: none) the elements of the arms whose default
// view is the same and that have not published since, or published the
// same content again (armContent). It returns nil when an arm has effects: its element
// carries them, and who sees them depends on who controls it, not on the
// views.
func buildArmRun(rs *armRuns, slot int, session uint64, arms []*Device, seqs []uint64, epoch uint64, prev *armRun, snap *loop.Snapshot, codec Codec, scratch *protocol.ArmFrame) *armRun {
	for _, d := range arms {
		if set := d.rt.Effects(); set != nil && set.Len() > 0 {
			return nil
		}
	}
	size := 700 * len(arms)
	if prev != nil {
		size = len(prev.body) + 64*len(arms)
	}
	r := rs.fresh(slot, len(arms), size)
	r.epoch, r.builder = epoch, session
	copy(r.seqs, seqs)
	for i, d := range arms {
		if i > 0 {
			r.body = append(r.body, ',')
		}
		v := d.defaultView.Load()
		r.views[i] = v
		// The same default view is the same arm too: each arm has its own.
		inPrev := prev != nil && len(prev.seqs) == len(arms) && prev.views[i] == v
		keep := inPrev && prev.seqs[i] == seqs[i]
		if keep {
			r.contents[i] = prev.contents[i]
		} else {
			d.Load(snap)
			*scratch = protocol.ArmFrame{DeviceID: d.ID}
			fillArm(scratch, snap, v)
			keep = inPrev && prev.contents[i].sameContent(scratch)
			r.contents[i] = armContent{state: scratch.State, status: scratch.Status}
		}
		if keep {
			start := 0
			if i > 0 {
				start = prev.ends[i-1] + 1 // past the comma
			}
			r.body = append(r.body, prev.body[start:prev.ends[i]]...)
		} else {
			r.body = codec.AppendArmElement(r.body, scratch)
		}
		r.ends[i] = len(r.body)
	}
	return r
}
