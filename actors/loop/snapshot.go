package loop

import (
	"math"
	"sync/atomic"

	"github.com/hapticd/hapticd/hw"
)

// Snapshot is what the loop publishes after every tick.
type Snapshot struct {
	// State is what the device reported at the last successful exchange.
	State hw.State
	// Mode is the control mode the loop sent this tick (ModeIdle when
	// nobody controls the device, after a ramp, or after Halt).
	Mode hw.ControlMode
	// Owner is the controlling session, 0 if none.
	Owner uint64
	// Tick counts the device's ticks; TimeNs is the Clock time of the tick.
	Tick   uint64
	TimeNs int64
	// AppliedSeq is the Seq of the last command the loop acted on.
	AppliedSeq uint64
	// Failed is true once the device stopped exchanging after MaxErrors
	// driver errors in a row.
	Failed bool
}

// snapSlots is how many snapshots a SnapshotCell keeps: readers read the
// latest complete one while the loop fills the next, so a reader retries only
// when it is delayed for several ticks in the middle of a read.
const snapSlots = 4

// snapWords is the number of 64-bit words that encode a Snapshot.
const snapWords = 30

type snapSlot struct {
	version atomic.Uint64 // 0 while being written, else the tick version
	words   [snapWords]atomic.Uint64
}

// SnapshotCell publishes the latest Snapshot from one writer to any number of
// readers without locks or allocation. Readers never see a torn snapshot and
// never wait for the writer. The zero value holds a zero Snapshot.
type SnapshotCell struct {
	latest atomic.Uint64
	slots  [snapSlots]snapSlot
}

// Publish stores src as the latest snapshot. Only one goroutine may publish
// at a time (the device's loop).
func (c *SnapshotCell) Publish(src *Snapshot) {
	v := c.latest.Load() + 1
	s := &c.slots[v%snapSlots]
	s.version.Store(0)
	w := &s.words
	st := &src.State
	storeVec(w[0:3], st.PositionM)
	storeVec(w[3:6], st.VelocityMps)
	storeAngles(w[6:9], st.AnglesDeg)
	storeAngles(w[9:12], st.AngularVelocityDps)
	storeQuat(w[12:16], st.BodyOrientation)
	storeVec(w[16:19], st.ForceN)
	storeQuat(w[19:23], st.Orientation)
	w[23].Store(uint64(st.Buttons) | uint64(st.Status)<<8 | uint64(src.Mode)<<16 | boolBit(src.Failed)<<24)
	w[24].Store(math.Float64bits(st.Hall))
	w[25].Store(math.Float64bits(st.Battery))
	w[26].Store(src.Owner)
	w[27].Store(src.Tick)
	w[28].Store(uint64(src.TimeNs))
	w[29].Store(src.AppliedSeq)
	s.version.Store(v)
	c.latest.Store(v)
}

// Load fills dst with the latest snapshot.
func (c *SnapshotCell) Load(dst *Snapshot) {
	for {
		v := c.latest.Load()
		if v == 0 {
			*dst = Snapshot{}
			return
		}
		s := &c.slots[v%snapSlots]
		if s.version.Load() != v {
			continue // the writer lapped this reader; read the newer one
		}
		w := &s.words
		st := &dst.State
		st.PositionM = loadVec(w[0:3])
		st.VelocityMps = loadVec(w[3:6])
		st.AnglesDeg = loadAngles(w[6:9])
		st.AngularVelocityDps = loadAngles(w[9:12])
		st.BodyOrientation = loadQuat(w[12:16])
		st.ForceN = loadVec(w[16:19])
		st.Orientation = loadQuat(w[19:23])
		packed := w[23].Load()
		st.Buttons = hw.Buttons(packed)
		st.Status = hw.Status(packed >> 8)
		dst.Mode = hw.ControlMode(packed >> 16)
		dst.Failed = packed>>24&1 != 0
		st.Hall = math.Float64frombits(w[24].Load())
		st.Battery = math.Float64frombits(w[25].Load())
		dst.Owner = w[26].Load()
		dst.Tick = w[27].Load()
		dst.TimeNs = int64(w[28].Load())
		dst.AppliedSeq = w[29].Load()
		if s.version.Load() == v {
			return
		}
	}
}

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func storeQuat(w []atomic.Uint64, q hw.Quat) {
	w[0].Store(math.Float64bits(q.W))
	w[1].Store(math.Float64bits(q.X))
	w[2].Store(math.Float64bits(q.Y))
	w[3].Store(math.Float64bits(q.Z))
}

func loadQuat(w []atomic.Uint64) hw.Quat {
	return hw.Quat{
		W: math.Float64frombits(w[0].Load()),
		X: math.Float64frombits(w[1].Load()),
		Y: math.Float64frombits(w[2].Load()),
		Z: math.Float64frombits(w[3].Load()),
	}
}
