package loop

import (
	"math"
	"sync/atomic"

	"github.com/hapticd/hapticd/hw"
)

// Command is one control command as the register holds it.
type Command struct {
	// Session is the session that wrote the command.
	Session uint64
	// Seq is the session's own sequence number for the command; the loop
	// reports the last one it acted on in Snapshot.AppliedSeq.
	Seq uint64
	// DeadlineNs is when the command's lease lapses (Clock time). The loop
	// never applies the command after it.
	DeadlineNs int64
	// Cmd is the output asked of the device, in the device frame.
	Cmd hw.Command
	// Params are the writing session's filters (nil: DefaultParams).
	Params *Params

	// term is the ownership term the command was written in, version the
	// register write that produced it. The loop applies a command only in
	// its own term, so a command written before a release never comes back.
	term    uint64
	version uint64
}

// regSlots is how many commands the register keeps. A reader reads the
// latest complete slot, so it never waits for a writer that is mid-write; a
// read retries only when writers lap the ring during it.
const regSlots = 4

// regWords is the number of 64-bit words that encode a Command (without
// Params, which travels as a pointer): session, seq, deadline, term, mode
// and 12 floats.
const regWords = 17

type regSlot struct {
	// version is the register write this slot holds, with regBusy set while
	// a writer fills it. Versions only grow, so a reader that sees the same
	// version before and after reading the words saw one whole write.
	version atomic.Uint64
	words   [regWords]atomic.Uint64
	params  atomic.Pointer[Params]
}

const regBusy = 1 << 63

// idleCommand is what a nil command means; it is never written.
var idleCommand hw.Command

// Register is a device's command register: a single logical slot written by
// the controlling session (up to several kHz) and read by the real-time loop
// every tick. It is lock-free: writers never wait for each other or for the
// loop, and the loop never waits for a writer. Write and Read do not
// allocate. The zero value is an empty, unowned register.
//
// Ownership: Claim takes an unowned register, Release gives it back, and the
// loop takes it back when the owner's lease lapses. Every change of owner
// starts a new term; a command counts only in the term it was written in.
// The loop's halt and a driver error disarm every command written so far
// (disarm): only a new Write re-arms the output.
type Register struct {
	owner  atomic.Uint64
	term   atomic.Uint64
	next   atomic.Uint64 // last version handed to a writer
	latest atomic.Uint64 // highest fully written version
	// disarmed is the loop's: writes up to this version are never applied
	// (a halt, a driver error). Here, not in the Device, so that Reparam
	// and Renew, which rewrite a command, never bring a disarmed one back.
	disarmed atomic.Uint64
	// refused counts Claims turned down because another session owns the
	// register (busy refusals, for metrics).
	refused atomic.Uint64
	// wake is poked on every change of owner and every write, so a loop
	// that skips reading the register while nothing pokes it (a shard's
	// fast path) notices them.
	wake  atomic.Pointer[atomic.Uint32]
	slots [regSlots]regSlot
	// clock stamps a release (releasedNs), so that the loop ramps a
	// let-go's force out from the let-go, not from the tick before it,
	// which may be a long gap earlier on a busy CPU (endControl). Set once
	// by NewDevice to its Device's clock (a pointer: 8 bytes, where a
	// Device's every byte counts at 10,000 arms); nil in a bare Register,
	// which stamps nothing. releasedNs keeps the FIRST release since the
	// loop cleared it when it took the control in force (0: none since):
	// that release is the one that ended that control; a later claim and
	// let-go in the same tick gap (a one-shot client) must not move the
	// ramp's start past it (review34: zero 28 ms after the let-go).
	clock      *Clock
	releasedNs atomic.Int64
}

func (r *Register) poke() {
	if w := r.wake.Load(); w != nil {
		w.Store(1)
	}
}

// Claim makes session the owner if the register has none, and returns the
// owner after the call: session on success (or if it already owned it), the
// other owner otherwise. Session 0 means "nobody" and is never an owner.
func (r *Register) Claim(session uint64) (owner uint64) {
	if session == 0 {
		return r.owner.Load()
	}
	// The owner claims every tick: a load answers it without the CAS's
	// exclusive cache-line access (the loop reads owner every tick too).
	if r.owner.Load() == session {
		return session
	}
	for {
		if r.owner.CompareAndSwap(0, session) {
			r.term.Add(1)
			r.poke()
			return session
		}
		// Another owner, unless it let go between the two reads: then try
		// again rather than report "owned by nobody".
		if o := r.owner.Load(); o != 0 {
			r.refused.Add(1)
			return o
		}
	}
}

// Refused counts the Claims refused because another session owned the
// register.
func (r *Register) Refused() uint64 { return r.refused.Load() }

// Owner returns the controlling session, or 0 if nobody controls the device.
func (r *Register) Owner() uint64 { return r.owner.Load() }

// Term counts the register's changes of owner: one for each Claim that
// takes it and each release (Release, a lapsed lease, a claim timed out),
// none otherwise. A session that finds it grew by more than its own
// changes knows another session held the register in between, even one
// that claimed and released it between two of its looks.
func (r *Register) Term() uint64 { return r.term.Load() }

// Release gives up control if session owns the register, and reports whether
// it did. The loop then ramps the output to zero and stops applying the
// session's last command.
func (r *Register) Release(session uint64) bool {
	return session != 0 && r.releaseFrom(session)
}

func (r *Register) releaseFrom(session uint64) bool {
	if r.owner.CompareAndSwap(session, 0) {
		if r.clock != nil {
			// Before the new term: a loop that sees the term sees this
			// stamp or an earlier release's.
			r.releasedNs.CompareAndSwap(0, (*r.clock).Now())
		}
		r.term.Add(1)
		r.poke()
		return true
	}
	return false
}

// Write stores a command from session, valid until deadlineNs (Clock time),
// and reports false without storing it when session is not the owner. cmd is
// copied (nil means ModeIdle); p is kept (Params are immutable once
// published; nil means DefaultParams). Write does not allocate.
func (r *Register) Write(session, seq uint64, deadlineNs int64, cmd *hw.Command, p *Params) bool {
	if session == 0 || r.owner.Load() != session {
		return false
	}
	if cmd == nil {
		cmd = &idleCommand // nothing asked: an inert output
	}
	term := r.term.Load()
	for {
		v := r.next.Add(1)
		s := &r.slots[v%regSlots]
		old := s.version.Load()
		if old&regBusy != 0 || old >= v || !s.version.CompareAndSwap(old, v|regBusy) {
			// Another writer holds this slot (writers lapped the ring);
			// take the next version instead of waiting for it.
			continue
		}
		s.fill(session, seq, deadlineNs, term, cmd, p)
		s.version.Store(v)
		r.publish(v)
		return true
	}
}

// fill stores a command in s, which the caller holds (regBusy).
func (s *regSlot) fill(session, seq uint64, deadlineNs int64, term uint64, cmd *hw.Command, p *Params) {
	w := &s.words
	storeWord(&w[0], session)
	storeWord(&w[1], seq)
	storeWord(&w[2], uint64(deadlineNs))
	storeWord(&w[3], term)
	storeWord(&w[4], uint64(cmd.Mode))
	storeVec(w[5:8], cmd.ForceN)
	storeVec(w[8:11], cmd.PositionM)
	storeAngles(w[11:14], cmd.TorquesNmm)
	storeAngles(w[14:17], cmd.AnglesDeg)
	if s.params.Load() != p {
		s.params.Store(p)
	}
}

// publish makes version v, filled, the latest unless a later one is.
func (r *Register) publish(v uint64) {
	for {
		l := r.latest.Load()
		if l >= v || r.latest.CompareAndSwap(l, v) {
			break
		}
	}
	r.poke()
}

// reparamAttempts bounds Reparam's retries while writers race it. A
// session's own writer checks its view after each Write and reparams
// itself, so giving up under such a race loses nothing.
const reparamAttempts = 4

// Reparam gives session's latest command Params p (a view the session's
// device published: navigation turned off, new damping or force gate),
// keeping the rest (sequence, lease deadline, the output asked), so that
// the change is in force from the loop's next tick rather than from the
// session's next command. It reports whether the register now holds p for
// session: false when the session does not own the register, its latest
// command is not its own, is of an earlier term or was disarmed (Reparam
// never brings a command back), or writers kept racing it (see
// reparamAttempts).
//
// The rewrite is published only if no other write took a version since
// the command it rewrites, so a newer command of the session is never
// replaced by the older one with new Params.
func (r *Register) Reparam(session uint64, p *Params) bool {
	if session == 0 {
		return false
	}
	var c Command
	for range reparamAttempts {
		if !r.read(&c) {
			continue
		}
		if r.owner.Load() != session || c.Session != session || c.term != r.term.Load() || c.version <= r.disarmed.Load() {
			return false
		}
		if c.Params == p {
			return true
		}
		if r.writeAfter(c.version, &c, p) {
			return true
		}
	}
	return false
}

// writeAfter writes c with Params p as the version right after prev, and
// publishes it only if prev is still the latest: it fails, publishing
// nothing, when another writer took a version or published meanwhile.
func (r *Register) writeAfter(prev uint64, c *Command, p *Params) bool {
	v := prev + 1
	if !r.next.CompareAndSwap(prev, v) {
		return false // a writer took a version after prev
	}
	s := &r.slots[v%regSlots]
	old := s.version.Load()
	if old&regBusy != 0 || old >= v || !s.version.CompareAndSwap(old, v|regBusy) {
		return false
	}
	s.fill(c.Session, c.Seq, c.DeadlineNs, c.term, &c.Cmd, p)
	s.version.Store(v)
	if !r.latest.CompareAndSwap(prev, v) {
		return false // a writer that took a later version published first: it is newer
	}
	r.poke()
	return true
}

// disarm makes every command written so far count no more (the loop's
// halt, a driver error): the disarmed floor takes a version of its own,
// raised before the version is taken, so a rewrite that read a command
// before it (Reparam, Renew) either fails to take the version right after
// the one it read (writeAfter), or, taking a fresh one (writeAnew), finds
// the floor already raised; a write in flight then is disarmed too. It
// returns the floor.
func (r *Register) disarm() uint64 {
	for {
		n := r.next.Load()
		v := n + 1
		for {
			d := r.disarmed.Load()
			if d >= v || r.disarmed.CompareAndSwap(d, v) {
				break
			}
		}
		if r.next.CompareAndSwap(n, v) {
			return r.disarmed.Load()
		}
	}
}

// live says whether c, read from r, may still be applied: not disarmed.
func (r *Register) live(c *Command) bool { return c.version > r.disarmed.Load() }

// Renew gives session's latest command the sequence number seq, the lease
// deadline deadlineNs and Params p, keeping the output it asks (an effects
// keepalive renews the session's control). It reports false, writing
// nothing, when that command is not the session's live command in its
// term (released, another's, disarmed by a halt or a driver error): the
// caller then writes an idle command. Writers racing it make it write the
// command anew at a fresh version, still only while it is live.
func (r *Register) Renew(session, seq uint64, deadlineNs int64, p *Params) bool {
	if session == 0 {
		return false
	}
	var c Command
	for range reparamAttempts {
		if !r.read(&c) {
			continue
		}
		if r.owner.Load() != session || c.Session != session || c.term != r.term.Load() || !r.live(&c) {
			return false
		}
		c.Seq, c.DeadlineNs = seq, deadlineNs
		if r.writeAfter(c.version, &c, p) {
			return true
		}
	}
	r.Read(&c)
	if c.Session != session {
		return false
	}
	c.Seq, c.DeadlineNs = seq, deadlineNs
	return r.writeAnew(&c, p)
}

// writeAnew writes c with Params p at a fresh version, as Write does, if c
// is still live in its term once that version is taken: a disarm raises
// its floor before it takes its own version, so a version taken after it
// sees the floor, and one taken before is under it.
func (r *Register) writeAnew(c *Command, p *Params) bool {
	for {
		v := r.next.Add(1)
		if r.owner.Load() != c.Session || c.term != r.term.Load() || !r.live(c) {
			return false
		}
		s := &r.slots[v%regSlots]
		old := s.version.Load()
		if old&regBusy != 0 || old >= v || !s.version.CompareAndSwap(old, v|regBusy) {
			continue
		}
		s.fill(c.Session, c.Seq, c.DeadlineNs, c.term, &c.Cmd, p)
		s.version.Store(v)
		r.publish(v)
		return true
	}
}

// Read fills dst with the latest command (a zero Command if none was ever
// written). It does not allocate.
func (r *Register) Read(dst *Command) {
	for !r.read(dst) {
	}
}

// read makes one attempt; it fails only when writers overwrote the slot
// during the read.
func (r *Register) read(dst *Command) bool {
	v := r.latest.Load()
	if v == 0 {
		*dst = Command{}
		return true
	}
	s := &r.slots[v%regSlots]
	if s.version.Load() != v {
		return false
	}
	w := &s.words
	dst.Session = w[0].Load()
	dst.Seq = w[1].Load()
	dst.DeadlineNs = int64(w[2].Load())
	dst.term = w[3].Load()
	dst.Cmd.Mode = hw.ControlMode(w[4].Load())
	dst.Cmd.ForceN = loadVec(w[5:8])
	dst.Cmd.PositionM = loadVec(w[8:11])
	dst.Cmd.TorquesNmm = loadAngles(w[11:14])
	dst.Cmd.AnglesDeg = loadAngles(w[14:17])
	dst.Params = s.params.Load()
	dst.version = v
	return s.version.Load() == v
}

// storeWord stores x in w unless w holds it already. An atomic store is a
// full fence on amd64 (XCHG), a load a plain move: a slot usually gets back
// most of what it held a few writes before (the same session, mode and
// zeros of the unused fields), and 20 stores were 7.5x a mutex-guarded
// copy of the command (BenchmarkRegisterWrite). Readers are unaffected: the
// slot is marked busy while it is written, and a word left alone already
// holds the value it would have been given.
func storeWord(w *atomic.Uint64, x uint64) {
	if w.Load() != x {
		w.Store(x)
	}
}

func storeVec(w []atomic.Uint64, v hw.Vec3) {
	storeWord(&w[0], math.Float64bits(v.X))
	storeWord(&w[1], math.Float64bits(v.Y))
	storeWord(&w[2], math.Float64bits(v.Z))
}

func loadVec(w []atomic.Uint64) hw.Vec3 {
	return hw.Vec3{
		X: math.Float64frombits(w[0].Load()),
		Y: math.Float64frombits(w[1].Load()),
		Z: math.Float64frombits(w[2].Load()),
	}
}

func storeAngles(w []atomic.Uint64, a hw.Angles3) {
	storeWord(&w[0], math.Float64bits(a.A0))
	storeWord(&w[1], math.Float64bits(a.A1))
	storeWord(&w[2], math.Float64bits(a.A2))
}

func loadAngles(w []atomic.Uint64) hw.Angles3 {
	return hw.Angles3{
		A0: math.Float64frombits(w[0].Load()),
		A1: math.Float64frombits(w[1].Load()),
		A2: math.Float64frombits(w[2].Load()),
	}
}
