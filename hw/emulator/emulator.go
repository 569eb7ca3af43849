package emulator

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/hw/wire"
)

// Faults are the misbehaviours an emulated device shows. The zero value is a
// perfect device.
type Faults struct {
	// Latency delays every reply; Jitter adds a uniform 0..Jitter on top.
	Latency, Jitter time.Duration
	// DropProbability is the chance that each reply byte is lost (0..1).
	DropProbability float64
	// GarbageProbability is the chance that a reply is preceded by
	// GarbageBytes random bytes (default 8).
	GarbageProbability float64
	GarbageBytes       int
	// GarbageReplies is how many of the next replies are preceded by
	// GarbageBytes random bytes whatever GarbageProbability says: one
	// garbled reply at a known moment (a wake-up, say).
	GarbageReplies int
	// StallReplies is how many of the next commands get no reply at all.
	StallReplies int
	// Hung stops the firmware reading the line, as a hung firmware does:
	// what the host sends meanwhile waits in the line's buffer, and
	// clearing Hung answers all of it in order, each reply after Latency
	// (a firmware that recovers and works through its backlog). Unlike
	// StallReplies, nothing sent is lost.
	Hung bool
	// FlakyWakeups is how many of the next wake-ups get a reply with id 0
	// and a zero UUID, as a freshly plugged arm sometimes sends.
	FlakyWakeups int
	// ZeroStates is how many of the next state replies report position and
	// velocity exactly zero, as a half-awake arm does.
	ZeroStates int
	// DropConfigAcks applies every configuration code but acknowledges
	// none, as a firmware that does not know a code (or loses its ack)
	// does.
	DropConfigAcks bool
	// GripAsleep stops a grip's status frames, as a grip asleep, switched
	// off or out of the dongle's range sends none while the dongle stays
	// plugged in; clearing it wakes the grip. (Unplug is the dongle
	// pulled out.)
	GripAsleep bool
}

// Options describe an emulated device. Zero values take the defaults.
type Options struct {
	// Kind is hw.KindArm or hw.KindGrip; zero is the family's kind (an
	// arm when no family is given either).
	Kind hw.Kind
	// Family is the product emulated (hw/sim's table): the model and
	// versions it reports, the physics it steps (the simulated device of
	// the family: its rest position, workspace and force limit) and its
	// identity. Zero is the family of Kind whose device type number is
	// Model (sim.FamilyOf): an Inverse3 or a wireless grip when Model is
	// 0 too.
	Family sim.Family
	// Index names the device among emulated ones of its family: its
	// default id and UUID derive from it, so the same index is the same
	// device after a replug or a restart.
	Index int
	// ID and UUID override the identity derived from Index (0 = derive).
	ID   uint16
	UUID [16]byte
	// Model and versions are reported at wake-up (0: the family's).
	Model, HardwareVersion, FirmwareVersion uint8
	// PeriodS is the physics step per command (default hw.DefaultPeriodS).
	PeriodS float64
	// Seed makes the physics' motion and the faults' randomness repeatable.
	Seed int64
	// Physics steps the device: an arm once per command, a grip once per
	// status frame. Default a hw/sim arm or grip moved by Motion. It is
	// driven from one emulator goroutine only.
	Physics hw.Driver
	Motion  sim.Motion
	// GripStatusPeriod is how often a grip streams status (default 1 ms).
	GripStatusPeriod time.Duration
	// Faults are the initial faults (see SetFaults).
	Faults Faults
	// OnForce, if set, is called with the arrival time of every force
	// frame and the force it carried (as received: before the firmware's
	// gravity compensation), on the serving goroutine (it must not block):
	// a stand-in arm timing the host's loop, and the commands it carries,
	// from the device side records them.
	OnForce func(at time.Time, forceN hw.Vec3)
}

// Stats count what an emulator saw and did.
type Stats struct {
	Wakeups   int
	Commands  int // force, position, torque and angle commands
	Replies   int
	Stalled   int
	Configs   int
	LastForce hw.Vec3 // the force the firmware now holds (sticky)
	Settings  hw.Settings
	// ForceFrames counts force commands as they arrive, each timestamped:
	// FirstForceAt and LastForceAt are the first and latest, MaxForceGap
	// the longest time between two in a row. The host's tick rate, seen
	// from the device.
	ForceFrames               int
	FirstForceAt, LastForceAt time.Time
	MaxForceGap               time.Duration
	// AcksDropped counts configuration acknowledgements withheld
	// (Faults.DropConfigAcks).
	AcksDropped int
}

// Emulator is one emulated device.
type Emulator struct {
	opts    Options
	physics hw.Driver
	weightN float64 // the physics' end effector's weight, which the firmware compensates
	// gripLayout is the layout a grip streams its status in: its family's
	// link's (a wired grip's shorter status).
	gripLayout wire.Layout

	// Owned by the serving goroutine: fixed buffers, so that serving does
	// not allocate (allocation tests of drivers count every goroutine).
	replyBuf [wire.MaxFrameLen]byte
	outBuf   [2*wire.MaxFrameLen + 64]byte
	applied  hw.Command
	physSt   hw.State
	// status is the grip's status frame being sent (streamGrip's).
	status wire.Message

	// wmu is held across a write, mu never is; lock order: see the
	// package doc.
	wmu sync.Mutex // guards out
	out io.Writer

	mu      sync.Mutex // guards the following
	faults  Faults
	stats   Stats
	rng     *rand.Rand
	closeFn func() error
	done    chan struct{}
	serving bool
	// unplugged ends a hang (waitWhileHung): the port is gone.
	unplugged bool
}

// New returns an emulator for o; serve it with Serve or use StartPTY.
func New(o Options) (*Emulator, error) {
	if o.Kind != 0 && o.Kind != hw.KindArm && o.Kind != hw.KindGrip {
		return nil, fmt.Errorf("hw/emulator: kind %v is not emulated; use hw.KindArm or hw.KindGrip", o.Kind)
	}
	if o.Family == 0 {
		kind := o.Kind
		if kind == 0 {
			kind = hw.KindArm
		}
		o.Family = sim.FamilyOf(kind, o.Model)
	}
	if !o.Family.Known() {
		return nil, fmt.Errorf("hw/emulator: unknown device family %v; use one of hw/sim's families", o.Family)
	}
	spec := o.Family.Spec()
	if o.Kind == 0 {
		o.Kind = spec.Kind
	}
	if o.Kind != spec.Kind {
		return nil, fmt.Errorf("hw/emulator: a %s is a %v, not a %v; leave Kind zero or give the family's", spec.Name, spec.Kind, o.Kind)
	}
	if o.Model == 0 {
		o.Model = spec.Model
	}
	if o.FirmwareVersion == 0 && o.HardwareVersion == 0 {
		o.FirmwareVersion, o.HardwareVersion = spec.FirmwareVersion, spec.HardwareVersion
	}
	if o.PeriodS <= 0 {
		o.PeriodS = hw.DefaultPeriodS
	}
	if o.GripStatusPeriod <= 0 {
		o.GripStatusPeriod = time.Millisecond
	}
	if o.Faults.GarbageBytes <= 0 {
		o.Faults.GarbageBytes = 8
	}
	id, uuid := Identity(o.Family, o.Index)
	if o.ID == 0 {
		o.ID = id
	}
	if o.UUID == ([16]byte{}) {
		// Ending in the id, a given one too, as a real arm's does.
		o.UUID = uuid
		o.UUID[14], o.UUID[15] = byte(o.ID>>8), byte(o.ID)
	}
	e := &Emulator{
		opts:   o,
		faults: o.Faults,
		rng:    rand.New(rand.NewPCG(uint64(o.Seed), uint64(o.Index)+0x9e3779b97f4a7c15)),
		// Firmware defaults, as the simulated arm's.
		stats: Stats{Settings: hw.Settings{TorqueScaling: true, GravityCompensation: true, GravityScale: 1}},
		done:  make(chan struct{}),
		// A grip's; an arm's spec has no link, and streams no status.
		gripLayout: wire.GripLayout(spec.Link),
	}
	e.physics = o.Physics
	if e.physics == nil {
		e.physics = defaultPhysics(o)
	}
	e.weightN = gravityN(e.physics)
	return e, nil
}

// Identity returns the id and UUID the index-th emulated device of family f
// reports by default. The UUID has a real one's form: its low 16 bits are
// the id, as an Inverse3's device_id is the low 16 bits of its uuid. They
// differ from simulated devices' so both can run at once under their own
// ids (the service gives a second device of a type with an id already
// connected one derived from its UUID): the id is hw/sim's for an index in
// the quarter of the id space no simulated family uses (sim.OtherIndexBase
// on), in the family's share of it (EmulatedIndexSpan indices), so it is
// never a simulated device's, nor another emulated family's, while index is
// below EmulatedIndexSpan; never 0. An Inverse3 and a wireless grip keep
// the ids they had before families were emulated (the share from the
// quarter's start).
func Identity(f sim.Family, index int) (uint16, [16]byte) { return sim.EmulatedIdentity(f, index) }

// EmulatedIndexSpan is how many emulated devices of one family get ids of
// their own.
const EmulatedIndexSpan = sim.EmulatedIndexSpan

// ID returns the device's 16-bit id.
func (e *Emulator) ID() uint16 { return e.opts.ID }

// UUID returns the device's UUID.
func (e *Emulator) UUID() [16]byte { return e.opts.UUID }

// SetFaults replaces the faults; it takes effect at the next command.
func (e *Emulator) SetFaults(f Faults) {
	if f.GarbageBytes <= 0 {
		f.GarbageBytes = 8
	}
	e.mu.Lock()
	e.faults = f
	e.mu.Unlock()
}

// Stall makes the next n commands go unanswered.
func (e *Emulator) Stall(n int) {
	e.mu.Lock()
	e.faults.StallReplies = n
	e.mu.Unlock()
}

// Stats returns a copy of the counters.
func (e *Emulator) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Serve speaks the device protocol on rw until reading fails (the host
// side closed, or Unplug). It returns nil when the host closed its side
// (io.EOF) and the read error otherwise.
func (e *Emulator) Serve(rw io.ReadWriter) error {
	e.wmu.Lock()
	e.out = rw
	e.wmu.Unlock()
	var stop chan struct{}
	if e.opts.Kind == hw.KindGrip {
		stop = make(chan struct{})
		defer close(stop)
		go e.streamGrip(stop)
	}
	scan := wire.NewScanner(wire.ToDevice)
	var m wire.Message
	for {
		n, err := rw.Read(scan.Space())
		if n > 0 {
			e.waitWhileHung()
		}
		scan.Fill(n)
		for _, ok := scan.Next(&m); ok; _, ok = scan.Next(&m) {
			e.handle(&m)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// hungPoll is how often a hung emulator looks whether Hung was cleared.
const hungPoll = time.Millisecond

// waitWhileHung holds what was just read, unanswered, while Faults.Hung is
// set and the port is plugged in; what the host sends meanwhile stays in
// the line's buffer.
func (e *Emulator) waitWhileHung() {
	for {
		e.mu.Lock()
		hung := e.faults.Hung && !e.unplugged
		e.mu.Unlock()
		if !hung {
			return
		}
		time.Sleep(hungPoll)
	}
}

func (e *Emulator) handle(m *wire.Message) {
	reply := &e.replyBuf
	var out []byte
	switch m.Header {
	case wire.HeaderWake:
		out = e.wake(reply[:0])
	case wire.HeaderForce, wire.HeaderPosition, wire.HeaderTorques, wire.HeaderAngles:
		out = e.command(reply[:0], m)
	case wire.HeaderConfig:
		out = e.configure(reply[:0], &m.Config)
	case wire.HeaderGripInfo:
		if e.opts.Kind == hw.KindGrip {
			out = wire.AppendGripInfo(reply[:0], wire.GripInfo{ID: e.opts.ID, Model: e.opts.Model,
				HardwareVersion: e.opts.HardwareVersion, FirmwareVersion: e.opts.FirmwareVersion})
		}
	}
	if out != nil {
		e.reply(out)
	}
}

func (e *Emulator) wake(dst []byte) []byte {
	if e.opts.Kind != hw.KindArm {
		return nil
	}
	e.mu.Lock()
	e.stats.Wakeups++
	flaky := e.faults.FlakyWakeups > 0
	if flaky {
		e.faults.FlakyWakeups--
	}
	e.mu.Unlock()
	w := wire.WakeReply{ID: e.opts.ID, UUID: e.opts.UUID, Model: e.opts.Model,
		HardwareVersion: e.opts.HardwareVersion, FirmwareVersion: e.opts.FirmwareVersion}
	if flaky {
		w.ID, w.UUID = 0, [16]byte{}
	}
	return wire.AppendWakeReply(dst, w)
}

func (e *Emulator) command(dst []byte, m *wire.Message) []byte {
	if e.opts.Kind != hw.KindArm {
		return nil
	}
	var at time.Time // a force frame's arrival, before any work on it
	if m.Header == wire.HeaderForce {
		at = time.Now()
	}
	var cmd hw.Command
	joint := false
	switch m.Header {
	case wire.HeaderForce:
		cmd = hw.Command{Mode: hw.ModeForce, ForceN: m.A}
	case wire.HeaderPosition:
		cmd = hw.Command{Mode: hw.ModePosition, PositionM: m.A}
	case wire.HeaderTorques:
		cmd = hw.Command{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A0: m.A.X, A1: m.A.Y, A2: m.A.Z}}
		joint = true
	case wire.HeaderAngles:
		cmd = hw.Command{Mode: hw.ModeAngle, AnglesDeg: hw.Angles3{A0: m.A.X, A1: m.A.Y, A2: m.A.Z}}
		joint = true
	}
	e.mu.Lock()
	s := e.stats.Settings
	e.mu.Unlock()
	e.applied = cmd
	if cmd.Mode == hw.ModeForce && s.GravityCompensation {
		e.applied.ForceN.Z += e.weightN * s.GravityScale
	}
	st := &e.physSt
	// Physics runs on this goroutine only, outside the lock.
	physErr := e.physics.Exchange(&e.applied, st)
	e.mu.Lock()
	e.stats.Commands++
	if !at.IsZero() {
		e.countForce(at)
	}
	if cmd.Mode == hw.ModeForce {
		e.stats.LastForce = cmd.ForceN
	} else {
		e.stats.LastForce = hw.Vec3{}
	}
	stall := e.faults.StallReplies > 0
	if stall {
		e.faults.StallReplies--
		e.stats.Stalled++
	}
	zero := !stall && e.faults.ZeroStates > 0
	if zero {
		e.faults.ZeroStates--
	}
	e.mu.Unlock()
	if !at.IsZero() && e.opts.OnForce != nil {
		e.opts.OnForce(at, cmd.ForceN)
	}
	if stall || physErr != nil {
		return nil
	}
	if zero {
		*st = hw.State{}
	}
	if joint {
		return wire.AppendJointState(dst, st.AnglesDeg, st.AngularVelocityDps)
	}
	return wire.AppendEndEffectorState(dst, st.PositionM, st.VelocityMps)
}

// countForce timestamps a force frame; the caller holds mu.
func (e *Emulator) countForce(now time.Time) {
	st := &e.stats
	if st.ForceFrames == 0 {
		st.FirstForceAt = now
	} else if gap := now.Sub(st.LastForceAt); gap > st.MaxForceGap {
		st.MaxForceGap = gap
	}
	st.LastForceAt = now
	st.ForceFrames++
}

func (e *Emulator) configure(dst []byte, c *wire.Config) []byte {
	if e.opts.Kind != hw.KindArm {
		return nil
	}
	e.mu.Lock()
	e.stats.Configs++
	drop := e.faults.DropConfigAcks
	if drop {
		e.stats.AcksDropped++
	}
	switch c.Sub {
	case wire.ConfigHandedness:
		e.stats.Settings.LeftHanded = !c.Flag
	case wire.ConfigTorqueScaling:
		e.stats.Settings.TorqueScaling = c.Flag
	case wire.ConfigGravity:
		e.stats.Settings.GravityCompensation = c.Flag
		e.stats.Settings.GravityScale = c.Value
	}
	s := e.stats.Settings
	e.mu.Unlock()
	status := byte(0)
	if cfg, ok := e.physics.(hw.Configurer); ok && c.Sub != wire.ConfigSave {
		if err := cfg.Configure(s); err != nil {
			status = 1
		}
	}
	if drop {
		return nil
	}
	return wire.AppendConfigAck(dst, c.Sub, status)
}

// reply writes b to the host with the current faults applied.
func (e *Emulator) reply(b []byte) {
	e.mu.Lock()
	f := e.faults
	delay := f.Latency
	if f.Jitter > 0 {
		delay += time.Duration(e.rng.Int64N(int64(f.Jitter) + 1))
	}
	out := e.outBuf[:0]
	garbage := e.faults.GarbageReplies > 0
	if garbage {
		e.faults.GarbageReplies--
	}
	if garbage || f.GarbageProbability > 0 && e.rng.Float64() < f.GarbageProbability {
		for range min(f.GarbageBytes, 64) {
			out = append(out, byte(e.rng.UintN(256)))
		}
	}
	for _, c := range b {
		if f.DropProbability > 0 && e.rng.Float64() < f.DropProbability {
			continue
		}
		out = append(out, c)
	}
	e.mu.Unlock()
	if delay > 0 {
		// Test support: a real device's latency is a wait, too.
		time.Sleep(delay)
	}
	e.write(out, true)
}

// write sends b. A reply is counted before it is written, so a host that
// has read it always finds it counted; a failed write takes it back.
func (e *Emulator) write(b []byte, countReply bool) {
	if countReply {
		e.mu.Lock()
		e.stats.Replies++
		e.mu.Unlock()
	}
	e.wmu.Lock()
	err := io.ErrClosedPipe
	if e.out != nil {
		_, err = e.out.Write(b)
	}
	e.wmu.Unlock()
	if err != nil && countReply {
		e.mu.Lock()
		e.stats.Replies--
		e.mu.Unlock()
	}
}

// streamGrip sends status frames every GripStatusPeriod until stop closes,
// as a wireless grip does through its dongle, in its family's layout (a
// wired grip's shorter status).
func (e *Emulator) streamGrip(stop <-chan struct{}) {
	t := time.NewTicker(e.opts.GripStatusPeriod)
	defer t.Stop()
	var buf [wire.MaxFrameLen]byte
	var cmd hw.Command
	var st hw.State
	for {
		select {
		case <-stop:
			return
		case <-e.done:
			return
		case <-t.C:
			e.mu.Lock()
			asleep := e.faults.GripAsleep
			e.mu.Unlock()
			if asleep {
				continue
			}
			if err := e.physics.Exchange(&cmd, &st); err != nil {
				continue // a closed model sends nothing, as a grip asleep
			}
			s := wire.GripStatus{
				ID:          e.opts.ID,
				Orientation: st.Orientation,
				Hall:        uint8(math.Round(255 * min(max(st.Hall, 0), 1))),
				Buttons:     uint8(st.Buttons),
				Battery:     st.Battery,
			}
			if st.Status&hw.StatusReady == 0 {
				s.Error = 1
			}
			e.status.Header, e.status.GripStatus = wire.HeaderGripStatus, s
			e.write(wire.AppendIn(e.gripLayout, buf[:0], wire.ToHost, &e.status), false)
		}
	}
}
