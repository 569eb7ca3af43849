package loop

import (
	"sync/atomic"

	"github.com/hapticd/hapticd/hw"
)

// Snapshot is what the loop publishes after every tick.
type Snapshot struct {
	// Mode is the control mode the loop sent this tick (ModeIdle when
	// nobody controls the device, after a ramp, or after Halt).
	Mode hw.ControlMode
	// Target is the command the loop acts on, as the session wrote it
	// (before filters, limits and the ramp), in the device frame: what
	// frames report as current_cursor_position and its kin. Mode says which
	// it is: the force (N, x y z) in ModeForce, the position (m) in
	// ModePosition, the torques (N·mm, a0 a1 a2) in ModeTorque, the angles
	// (deg) in ModeAngle; zero in ModeIdle. (One vector, not an
	// hw.Command: every snapshot buffer of every idle arm carries it.)
	Target [3]float64
	// Failed is true once the device stopped exchanging after MaxErrors
	// driver errors in a row.
	Failed bool
	// derive says State's derived fields are left for Device.Load to
	// compute, and with which handedness.
	derive uint8
	// Owner is the controlling session, 0 if none.
	Owner uint64
	// Tick counts the device's ticks; TimeNs is the Clock time of the tick.
	// A device whose driver reports a step that changed nothing (a
	// simulated arm at rest, nobody in control) publishes nothing, so
	// these are the tick of the last change (or of the last publish: see
	// Device.Load for simulated arms nobody reads).
	Tick   uint64
	TimeNs int64
	// AppliedSeq is the Seq of the last command the loop acted on.
	AppliedSeq uint64
	// State is what the device reported at the last successful exchange.
	// (Last, so the fields above and State's per-tick core share the
	// first two cache lines.)
	State hw.State
	// CurrentAtNs is not 0 when State is older than the tick that
	// published it (see StateAgeReporter): the driver missed the device's
	// reply and reported an earlier state again, or handed over a state
	// read elsewhere (a lab node's push). It is the Clock time at which
	// State was current; LoadCurrent and recordings take it as the
	// state's time. (After State: it is not on the per-tick path of most
	// devices.)
	CurrentAtNs int64
}

const (
	deriveNone uint8 = iota
	deriveRight
	deriveLeft
)

// snapBufs is how many snapshot buffers a SnapshotCell rotates through.
// The writer fills a buffer nobody is reading and that is not the latest,
// so it needs more buffers than readers can hold at once; readers hold one
// only for the few nanoseconds of a copy.
const snapBufs = 4

type snapBuf[T any] struct {
	// readers counts readers copying this buffer (or about to check
	// whether they may). The writer never fills a buffer with readers.
	readers atomic.Int32
	snap    T
}

// SnapshotCell publishes the latest Snapshot from one writer to any number of
// readers without locks or allocation. A reader announces itself on the
// latest buffer, checks that it is still the latest, and copies it; the
// writer only fills buffers that are neither the latest nor announced, so a
// copy never overlaps a write and readers never see a torn snapshot. Neither
// side waits for the other. The zero value holds a zero Snapshot.
type SnapshotCell struct{ cell[Snapshot] }

// cell is SnapshotCell's algorithm for any value: the device's effects
// report uses it too.
type cell[T any] struct {
	latest atomic.Pointer[snapBuf[T]]
	seq    atomic.Uint64 // Publishes that stored a snapshot; see Seq
	next   int           // the writer's next candidate buffer
	bufs   [snapBufs]snapBuf[T]
}

// Publish stores src as the latest snapshot. Only one goroutine may publish
// at a time (the device's loop). In the unlikely case that readers hold every
// other buffer, the previous snapshot stays the latest and Publish reports
// false; the next Publish catches up.
func (c *cell[T]) Publish(src *T) bool {
	b, i := c.spare()
	if b == nil {
		return false
	}
	b.snap = *src
	c.commit(b, i)
	return true
}

// spare returns the buffer the next publish fills, and its place, or nil
// when readers hold every other buffer. The writer may fill it in place
// (it holds an older snapshot, which nobody reads) and then commit it:
// Publish less the copy, for a writer that changes a small part of a
// large value.
func (c *cell[T]) spare() (*snapBuf[T], int) {
	cur := c.latest.Load()
	for i := 0; i < snapBufs; i++ {
		b := &c.bufs[(c.next+i)%snapBufs]
		if b == cur || b.readers.Load() != 0 {
			continue
		}
		return b, i
	}
	return nil, 0
}

// commit makes b, filled since spare returned it with i, the latest.
func (c *cell[T]) commit(b *snapBuf[T], i int) {
	c.latest.Store(b)
	c.seq.Add(1) // after the pointer: see Seq
	c.next = (c.next + i + 1) % snapBufs
}

// Seq counts the Publishes that stored a snapshot. Unlike Snapshot.Tick it
// changes with every publish, including a Halt's republish of the same
// tick, so it is the key for anything derived from a snapshot. It is
// stored after the snapshot: a reader that reads Seq and then Loads gets
// the snapshot of that publish or a newer one, never an older one.
func (c *cell[T]) Seq() uint64 { return c.seq.Load() }

// Load fills dst with the latest snapshot.
func (c *cell[T]) Load(dst *T) {
	for {
		b := c.latest.Load()
		if b == nil {
			var zero T
			*dst = zero
			return
		}
		b.readers.Add(1)
		if c.latest.Load() == b {
			// The writer fills only buffers that are not the latest and
			// have no readers, so b stays intact while we copy it.
			*dst = b.snap
			b.readers.Add(-1)
			return
		}
		b.readers.Add(-1) // b was replaced meanwhile; it may be refilled
	}
}
