package loop

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hapticd/hapticd/actors/loop/effect"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
)

// Params are the controlling session's filters for one device. They are
// immutable once published: a change publishes a new *Params.
type Params struct {
	// Damping is a 3×3 matrix in the device frame, N·s/m: the loop applies
	// F -= Damping·v with v the end effector's last velocity.
	// A velocity over passivity.MaxSpeedMps (a bad frame) is damped as none.
	Damping [3][3]float64
	// ForceGateGain is how hard the force gate attenuates force while the
	// arm oscillates, 0..1: 0 passes force unchanged, 1 is the strongest
	// attenuation (see the package doc, # Force gate).
	ForceGateGain float64
	// Navigation is the session's bubble navigation on the device (nil:
	// none), rendered with its commands (navigation.go).
	Navigation *Navigation
}

// defaultParams is never written; DefaultParams hands out copies.
var defaultParams = Params{ForceGateGain: 0.3}

// DefaultParams returns zero damping and a force gate gain of 0.3.
func DefaultParams() *Params {
	p := defaultParams
	return &p
}

// Globals are device-wide values, immutable once published.
type Globals struct {
	// ForceScale scales commanded forces and torques, 0..1. It does not
	// scale the gravity feed-forward.
	ForceScale float64
	// Settings go to the driver (hw.Configurer) between two exchanges when
	// they change; GravityCompensation and GravityScale also drive the
	// loop's own feed-forward on devices with host gravity compensation.
	Settings hw.Settings
	// ForceClampN lowers the clamp on the commanded force (the session's
	// plus its effects') below the device's MaxForceN; 0 or more than
	// MaxForceN leaves MaxForceN.
	ForceClampN float64
	// ForceSlewNps limits how fast the commanded force may change, in N/s
	// (0: no limit). A new control starts from zero force.
	ForceSlewNps float64
	// Passivity configures the passivity controller on the commanded
	// force; its observer always runs (see the package doc, # Effects and
	// passivity). On by default, guarding the rendered sources
	// (passivity.ScopeRendered).
	Passivity passivity.Options
}

// DefaultGlobals returns full force scale, gravity compensation enabled at
// scale 1 and the passivity controller on in its default scope (the
// service's defaults).
func DefaultGlobals() *Globals {
	return &Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1},
		Passivity: passivity.Options{Enabled: true}}
}

// EventKind says what happened in a loop.
type EventKind uint8

const (
	// EventLeaseExpired: the owner's lease lapsed; the loop released the
	// register and ramps the output to zero. Session is the former owner.
	EventLeaseExpired EventKind = iota + 1
	// EventReleased: the owner released the device (or disconnected); the
	// loop ramps the output to zero. Session is the former owner.
	EventReleased
	// EventDriverError: the driver failed; the loop halted it. Emitted on
	// the first error of a run of consecutive errors.
	EventDriverError
	// EventFailed: MaxErrors errors in a row; the device stopped
	// exchanging. Emitted once.
	EventFailed
	// EventRateWarning: the loop period's p99 over the last window passed
	// its bound (1.5 × target).
	EventRateWarning
	// EventPassivitySustained: the passivity controller has been adding
	// damping for over a second without a break (see Output); once per
	// such spell. Session is the owner.
	EventPassivitySustained
)

func (k EventKind) String() string {
	switch k {
	case EventLeaseExpired:
		return "lease-expired"
	case EventReleased:
		return "released"
	case EventDriverError:
		return "driver-error"
	case EventFailed:
		return "failed"
	case EventRateWarning:
		return "rate-warning"
	case EventPassivitySustained:
		return "passivity-sustained"
	}
	return "unknown"
}

// Event is something a loop reports to its device actor.
type Event struct {
	Kind    EventKind
	Session uint64
	Err     error
	// PeriodP99Ns and TargetNs are set on EventRateWarning, and
	// Suppressed: the late windows not reported since the previous warning.
	PeriodP99Ns, TargetNs int64
	Suppressed            uint64
	// On EventLeaseExpired: LapsedNs is the lease's deadline (monotonic
	// ns) and Effects the Set the loop rendered for Session then (nil when
	// it had none), which the lapse drops: read at the tick that saw it,
	// before the session can withdraw it or another take the arm.
	LapsedNs int64
	Effects  *effect.Set
}

// DeviceOptions configure a Device. Zero fields take the defaults noted.
type DeviceOptions struct {
	// PeriodNs is the target loop period (default 1 ms, at most 1 s).
	PeriodNs int64
	// RampNs is how long the output takes to ramp to zero after a lease
	// lapse (counted from the deadline) or a release (from the tick that
	// saw it). The default keeps the documented promise, zero within
	// ReleaseBoundNs of the lapse: the zero goes out on the first tick
	// after the ramp's end, so the ramp is ReleaseBoundNs less two periods
	// and less releaseJitterNs for ticks that wake late, and at least one
	// period (16 ms at 1 kHz).
	RampNs int64
	// MaxErrors is how many driver errors in a row fail the device
	// (default 50); a failed device stops exchanging.
	MaxErrors int32
	// RealtimePriority, 1..99, runs RunLocked's thread SCHED_FIFO at that
	// priority (Linux, with CAP_SYS_NICE; best effort, see
	// Stats.Realtime). 0 keeps normal scheduling, which is at the mercy
	// of every other busy thread on the machine. It and MaxErrors are
	// int32, side by side: a Device holds its options and fills an
	// allocator size class (TestIdleSimulatedArmMemory).
	RealtimePriority int32
	// FailAfterNs is how long a run of driver errors must also last before
	// it fails the device (0: MaxErrors alone). Every failed exchange has
	// already halted the output, so a longer run costs nothing in safety,
	// and a device silent for a few tens of milliseconds (a USB hiccup, a
	// stalled firmware) stays listed. A driver that says the device is
	// gone (hw.ErrGone) fails it at once whatever this is.
	FailAfterNs int64
	// ClaimTimeoutNs releases an owner that claimed the register but wrote
	// no command in its term for this long (default 1 s), so a claim
	// without a lease cannot hold a device forever.
	ClaimTimeoutNs int64
	// OnEvent receives the loop's events. It is called on the goroutine
	// that runs the device's tick (or a Halt caller's, for a failing Halt)
	// while the tick holds the driver, so it must not block and must not
	// call Halt or Scheduler.Remove (they wait for the tick to end): hand
	// the event on (a mailbox send) and act there.
	OnEvent func(Event)
	// Clock is the time source (default SystemClock()).
	Clock Clock
}

// Stats are a loop's own measurements.
type Stats struct {
	TargetNs int64
	// Period is the time between successive ticks of the device's runner
	// (its RunLocked loop or scheduler shard); Overruns counts ticks that
	// started after their deadline had already passed.
	Period   Summary
	Overruns uint64
	// Busy is the time per tick the runner spent stepping: for a
	// scheduler shard, all of its devices. Busy near TargetNs means the
	// runner has no headroom left.
	Busy  Summary
	Ticks uint64
	// Exchange is the driver round trip (for simulated devices, the cost
	// of the simulation step). Devices on a Scheduler time one tick in
	// exchangeSampleEvery.
	Exchange Summary
	// Errors counts driver errors.
	Errors uint64
	// LeaseExpiries counts owners released because their lease (or claim)
	// lapsed; BusyRefusals counts claims refused because another session
	// controlled the device.
	LeaseExpiries, BusyRefusals uint64
	// Realtime is true when the runner's thread got the real-time
	// priority it asked for.
	Realtime bool
}

// regReadAttempts bounds how often a tick retries a register read that
// writers overwrote under it before it keeps the previous command.
const regReadAttempts = 4

// Device is the loop-side state of one device: its command register, its
// published snapshot, its filters and its safety logic. Step runs one tick.
//
// Exactly one goroutine calls the driver at a time: whoever holds the
// device's driver token, which Step takes for a tick and Halt takes when the
// device is between ticks. Step never waits for the token (it skips the tick
// instead); Halt waits at most one tick.
type Device struct {
	// Hot: an asleep device's tick reads this first cache line and the
	// register's header only, so a shard can hold thousands of idle arms.
	token          atomic.Bool // held while the driver is in use (Step, direct Halt)
	failed         atomic.Bool
	running        atomic.Bool // a runner (RunLocked, Scheduler) steps the device
	asleep         bool        // see sleepCheck
	armed          bool        // the output follows held
	ramping        bool
	halted         bool // Halt ran and no command armed the output since
	configuredOnce bool
	// publishPending: the last publish found no free buffer (readers held
	// them all), so the next tick publishes even if nothing changed.
	publishPending bool
	hostGravity    bool // info's HostGravityCompensation
	// generalTick keeps the device's fast path on the general stages
	// (never the fused tick): set by tests that compare the two.
	generalTick    bool
	haltReq        atomic.Uint64
	haltAck        atomic.Uint64
	ticks          atomic.Uint64
	globals        atomic.Pointer[Globals]
	configuredFrom *Globals // the Globals last acted on
	seenVersion    uint64   // the register version this tick's lease saw
	lastNowNs      int64
	reg            Register

	// Warm: what an awake tick touches, together.
	drv            hw.Driver
	lazy           lazyStateDriver // drv, when it leaves derived state to readers
	reporter       ModeReporter    // drv, when its device may run another's control
	remoteFx       RemoteEffects   // drv, when another process's loop renders its effects
	remoteNav      RemoteNavigation
	lastOwner      uint64
	unarmedOwner   uint64 // an owner seen with no command in its term...
	unarmedSinceNs int64  // ...since this time
	appliedSeq     uint64
	gravityN       float64 // the gravity feed-forward in out.ForceN.Z this tick
	stateGravityN  float64 // the feed-forward inside state.ForceN
	// errRun counts driver errors in a row, since the loop's clock read
	// errRunSinceMs (ms, wrapping: a run's span is the uint32 difference).
	// Four bytes each: the Device fills a size class of the allocator.
	errRun        int32
	errRunSinceMs uint32
	rampStartNs   int64
	maxForceN     float64 // info's, kept beside the state
	massKg        float64 // info's EffectiveMassKg
	out           hw.Command
	cmd           Command // the latest register contents
	tickDtNs      int64   // this tick's time since the last

	// The commanded force's stages (safety.go): the effects in force
	// (nil until SetEffects); the state of the force gate, the passivity
	// observer and controller and the slew limiter: allocated apart, or
	// while the device is on a shard in its block's armControl (then the
	// device holds none of its own: thousands of idle arms). The holder
	// of the driver reads fs.
	fx atomic.Pointer[effectStage]
	fs *forceStages
	// ft is the rest of their state, as fs, on a shard in its block's
	// controlColds (armBlock.ctlCold), which a block gets on its first
	// control: nil there until the device needs one (Device.tally).
	ft *forceTally

	// Atomics read by others.
	runner   atomic.Pointer[runnerStats] // the measurements of the last runner
	errors   atomic.Uint64
	expiries atomic.Uint64 // leases that lapsed
	output   outputFigures // the passivity figures Output reads
	taps     taps          // recorders' per-tick feeds (tap.go)
	// slot is the device's record on a scheduler shard (simulated arms),
	// which then holds its hot state and its published snapshot; nil
	// otherwise. joinTick is the shard's tick count when it got there.
	slot     atomic.Pointer[simArm]
	joinTick atomic.Uint64
	// cell is where a lazy driver's snapshots are published: a compact
	// cell of its own, or its shard record's. Other drivers publish to
	// snap.
	cell atomic.Pointer[armCell]
	// readMark is the address of the record whose read mark (simArm.want)
	// a reader set and the shard has not taken up yet: readers check it
	// here, beside slot and cell, instead of on the record's line, which
	// the shard writes every tick (a miss per arm and tick for a frame's
	// checks). An address, not a pointer, so that markRead inlines (no
	// write barrier); it is only compared with slot, and attach clears it.
	readMark atomic.Uintptr
	// hotPass is the number of the shard pass that last took up a read
	// mark of the device's record (armBlock.publishDue): that pass and the
	// publishHotTicks-1 after it publish every moving tick. 0 when none
	// (attach clears it). markSeen is the number of the pass that first
	// saw the pending mark readMark names (armBlock.pass's look for marks),
	// from which every pass publishes every moving tick while the mark
	// stays pending; 0 when none (the shard clears it as it takes a mark
	// up, before it clears readMark; attach clears it). Both are stored by
	// the shard alone, so no reader's late store can leave them stale.
	// LoadCurrent reads them.
	hotPass, markSeen atomic.Uint64

	// Immutable after NewDevice.
	cfg   hw.Configurer // nil when the driver takes no settings
	info  hw.Info
	opts  DeviceOptions
	clock Clock

	// The holder of token owns the following.
	held          Command // the last command applied: what a ramp winds down
	state         hw.State
	hwx           *hardwareExchange // nil for a lazy driver
	configured    hw.Settings
	configRetryNs int64
	pub           Snapshot
	snap          *SnapshotCell // nil for a lazy driver
	arm           *simArm       // slot, for the holder of the driver
}

// lazyStateDriver is a driver that leaves the state clients read but the
// loop does not (joint angles and speeds, body orientation) to be derived
// when a snapshot is loaded, and says when a step changed nothing, so an
// arm at rest costs a tick no copies and no publish: the simulated arm.
type lazyStateDriver interface {
	// ExchangeCore is Exchange filling only position, velocity, force and
	// status, and only when moved; !moved or an error leave st as the last
	// call did.
	ExchangeCore(cmd *hw.Command, st *hw.State) (moved bool, err error)
	// LeftHanded is the handedness DeriveState must use for st now.
	LeftHanded() bool
	// TimeInvariant is true when the physics does not depend on time (no
	// scripted hand): a step that changed nothing then changes nothing
	// again under the same command, so the loop may stop stepping it.
	TimeInvariant() bool
	// DeriveState completes st; it reads only its arguments, so any
	// goroutine may call it.
	DeriveState(st *hw.State, leftHanded bool)
}

// A ModeReporter is a driver whose device can run under a control this loop
// did not send: a gateway's proxy of a device that a session on its node
// controls. While ReportedMode says ok, the loop publishes that mode and
// target in place of its own output's (the snapshot's Mode and Target), so
// readers see what the device does. Such a driver is not lazy: the loop
// publishes its state every tick anyway.
type ModeReporter interface {
	ReportedMode() (mode hw.ControlMode, target [3]float64, ok bool)
}

// A StateAgeReporter is a driver whose Exchange may succeed with a state
// older than the exchange: hw/driver's Arm reports its last good state
// again after a missed reply; a lab gateway's proxy hands over the state a
// node last pushed, which was current some time before. StateAge tells,
// right after a successful Exchange, how old its state was: repeated when
// it is the state an earlier Exchange reported (as old as it was then,
// plus the ticks since), else ageNs, how long before Exchange returned it
// was current (0: read from the device in this exchange; a negative age
// counts as 0). The loop then publishes the state with the time it was
// current (Snapshot.CurrentAtNs), so LoadCurrent, a recording and the age
// a lab node reports do not count it as fresher than it is.
type StateAgeReporter interface {
	StateAge() (ageNs int64, repeated bool)
}

// An InitialStater is a driver that knows its device's state before the
// loop's first exchange (read at open, or pushed by a lab node): the
// device's first snapshot holds it, so a reader between the device's
// listing and its loop's first tick does not find it at the origin, not
// calibrated. Called once, by NewDevice, before any exchange.
type InitialStater interface {
	InitialState(st *hw.State)
}

// A RemoteOutput is a driver that passes each tick's output on to another
// process's loop, which applies it only under the lease of the session
// whose command it is (a lab gateway's proxy of an arm on a node): before
// each exchange the loop tells it the session whose command the output
// applies (CommandInForce). That is not always the owner: while the loop
// ramps a force or a torque out after a control ended (a let-go, a lapse,
// another session's claim), the output is the ramp of the ended control,
// which no lease holds, also once a session (another, or the same one
// after its lease lapsed) owns the arm again and its command waits for the
// ramp's end. Sent under that session's lease, the ramp would be applied
// as its new control. Such a driver is not lazy.
type RemoteOutput interface {
	// CommandInForce is called on the loop's goroutine right before each
	// Exchange with the session whose command in force the output
	// applies: the session that holds the arm armed, also when its
	// command is idle and the output is only the host's gravity
	// feed-forward. 0 when no command is in force (a ramp out, no output,
	// the gravity feed-forward of an arm nobody holds, a halt). It must
	// not block.
	CommandInForce(session uint64)
}

// commandInForce is the session whose command this tick's output applies
// (RemoteOutput): the command held last while it is in force, not while
// it ramps out; else 0.
func (d *Device) commandInForce() uint64 {
	if d.armed {
		return d.held.Session
	}
	return 0
}

// hardwareExchange is what a non-lazy driver's exchange needs besides the
// Device, kept apart so that simulated arms (the many, each in one small
// allocation) do not carry it.
type hardwareExchange struct {
	scratch hw.State         // the driver's exchange target
	ages    StateAgeReporter // drv, when it may report an old state
	remote  RemoteOutput     // drv, when another loop applies its output
	freshNs int64            // with ages: when the state was current (Clock)
	aged    bool             // freshNs is a reported state's, not the open's
}

// stateAge takes the driver's word on how old the state its exchange at
// nowNs filled is. Once a state was reported, the time never moves back (a
// coarser estimate of the same state, a reordered push) and never passes
// nowNs; the first reported state may be older than the device's open.
func (x *hardwareExchange) stateAge(nowNs int64) {
	ageNs, repeated := x.ages.StateAge()
	if repeated {
		return
	}
	t := nowNs - max(ageNs, 0)
	if x.aged {
		t = max(t, x.freshNs)
	}
	x.freshNs, x.aged = t, true
}

// NewDevice returns the loop state for drv (which must not be nil). Nothing
// runs until Step is called, directly or through RunLocked or a Scheduler.
func NewDevice(drv hw.Driver, o DeviceOptions) *Device {
	if o.PeriodNs <= 0 {
		o.PeriodNs = int64(time.Millisecond)
	}
	// The slowest loop is 1 Hz; the shard's record keeps the period in 32
	// bits (armControl).
	o.PeriodNs = min(o.PeriodNs, int64(time.Second))
	if o.RampNs <= 0 {
		o.RampNs = max(o.PeriodNs, ReleaseBoundNs-2*o.PeriodNs-releaseJitterNs)
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = 50
	}
	if o.ClaimTimeoutNs <= 0 {
		o.ClaimTimeoutNs = int64(time.Second)
	}
	if o.Clock == nil {
		o.Clock = SystemClock()
	}
	d := &Device{drv: drv, info: drv.Info(), opts: o, clock: o.Clock}
	d.reg.clock = &d.clock
	d.fs, d.ft = new(forceStages), new(forceTally)
	d.maxForceN, d.massKg, d.hostGravity = d.info.MaxForceN, d.info.EffectiveMassKg, d.info.HostGravityCompensation
	d.cfg, _ = drv.(hw.Configurer)
	d.lazy, _ = drv.(lazyStateDriver)
	if d.lazy == nil {
		d.hwx = new(hardwareExchange)
		d.reporter, _ = drv.(ModeReporter)
		d.remoteFx, _ = drv.(RemoteEffects)
		d.remoteNav, _ = drv.(RemoteNavigation)
		d.hwx.remote, _ = drv.(RemoteOutput)
		if d.hwx.ages, _ = drv.(StateAgeReporter); d.hwx.ages != nil {
			// The driver's state before the first tick is from its
			// open, which is no later than now.
			d.hwx.freshNs = d.clock.Now()
		}
	}
	g := DefaultGlobals()
	d.globals.Store(g)
	d.configuredFrom = g // the driver keeps its own settings until SetGlobals
	if d.lazy != nil {
		c := new(armCell)
		c.publishSnap(&d.pub)
		d.cell.Store(c)
	} else {
		if is, ok := drv.(InitialStater); ok {
			is.InitialState(&d.pub.State)
		}
		d.snap = new(SnapshotCell)
		d.snap.Publish(&d.pub)
	}
	return d
}

// Driver returns the device's driver (for Info; only the loop exchanges).
func (d *Device) Driver() hw.Driver { return d.drv }

// Register returns the device's command register.
func (d *Device) Register() *Register { return &d.reg }

// Load fills dst with the latest snapshot. It never blocks and never
// allocates; any number of goroutines may call it. A moving simulated arm
// on a Scheduler that nobody read lately publishes only one tick in 128
// (publishIdleEvery): the first Load after a quiet spell may get a state
// up to 127 ticks old (under 128 ms at 1 kHz; Tick and TimeNs say which), and
// the arm publishes every tick from the shard's next one on, for as long
// as someone reads it (and publishHotTicks after). LoadCurrent also says
// as of when the state is current.
func (d *Device) Load(dst *Snapshot) { d.load(dst, true) }

// LoadPhysical is Load without what a lazy driver derives from the pose on
// read (joint angles, their rates, the body's orientation: left as the
// snapshot holds them, not current), for a reader that reports none of
// them; a frame of positions and velocities then costs no inverse
// kinematics.
func (d *Device) LoadPhysical(dst *Snapshot) { d.load(dst, false) }

// load is Load; for a lazy driver it returns the cell it copied dst from
// (LoadCurrent checks that one, not the device's cell after the copy).
func (d *Device) load(dst *Snapshot, derive bool) (from *armCell) {
	if d.lazy == nil {
		d.snap.Load(dst)
		return nil
	}
	var c *armCell
	for {
		c = d.cell.Load()
		d.markRead()
		c.load(dst)
		// A shard record the device left meanwhile may hold another
		// device's state by now: read again from where the device is.
		if d.cell.Load() == c {
			break
		}
	}
	if derive && dst.derive != deriveNone && d.lazy != nil {
		d.lazy.DeriveState(&dst.State, dst.derive == deriveLeft)
	}
	dst.derive = deriveNone
	return c
}

// PublishSeq counts the snapshots published so far (SnapshotCell.Seq):
// read it before Load, and whatever was derived from a snapshot under the
// same PublishSeq is still current. It never blocks.
func (d *Device) PublishSeq() uint64 {
	if d.lazy != nil {
		d.markRead() // a reader that caches by PublishSeq reads too
		return d.cell.Load().count()
	}
	return d.snap.Seq()
}

// markRead tells a shard's fast path that someone reads the device's
// state, so it publishes every tick for a while (see publishIdleEvery). It
// stores only when no mark of the device's record is pending (readMark): a
// steady reader costs the record's line a store per half a hot spell, and
// the device's line, not the record's, a load per read.
//
// readMark is set before the record's mark and cleared by the shard after
// it clears that mark (armBlock.publishDue), so readMark never names the
// record while its mark is clear with no reader left to set it again; and
// attach clears it, as the record's mark, for a device coming back to a
// record it marked before.
func (d *Device) markRead() {
	if r := d.slot.Load(); r != nil && d.readMark.Load() != uintptr(unsafe.Pointer(r)) {
		d.readMark.Store(uintptr(unsafe.Pointer(r)))
		r.want.Store(1)
		r.blk.want.Store(1) // after the record's mark, which the pass looks for then
	}
}

// SetGlobals publishes device-wide values (nil: DefaultGlobals). The loop
// picks them up on its next tick and passes changed Settings to the driver
// between two exchanges. g is copied.
func (d *Device) SetGlobals(g *Globals) {
	if g == nil {
		g = DefaultGlobals()
	} else {
		c := *g
		g = &c
	}
	d.globals.Store(g)
	d.poke()
}

// poke tells a shard's fast path that the device needs its full step.
func (d *Device) poke() {
	if r := d.slot.Load(); r != nil {
		r.poke.Store(1)
	}
}

// Stats returns the loop's measurements.
func (d *Device) Stats() Stats {
	s := Stats{
		TargetNs: d.opts.PeriodNs,
		Ticks:    d.ticks.Load(),
		Errors:   d.errors.Load(),

		LeaseExpiries: d.expiries.Load(),
		BusyRefusals:  d.reg.Refused(),
	}
	if r := d.runner.Load(); r != nil {
		if d.slot.Load() != nil {
			// On a shard the device's ticks are the shard's since it
			// joined; the count before that is in d.ticks.
			s.Ticks += r.ticks.Load() - d.joinTick.Load()
		}
		sums := r.summaries()
		s.TargetNs = r.targetNs
		s.Period = sums.period
		s.Overruns = r.overruns.Load()
		s.Busy = sums.busy
		s.Exchange = sums.exchange
		s.Realtime = r.realtime.Load()
	}
	return s
}

// Failed reports whether the device stopped exchanging after MaxErrors
// driver errors in a row.
func (d *Device) Failed() bool { return d.failed.Load() }

// Halt zeroes the output and halts the driver, and returns once that is
// done: on the loop's goroutine if a tick is under way, or directly if the
// device is between ticks or not running at all. Commands written before
// Halt are never applied; a new Write re-arms the output. Halt is idempotent
// and safe from any goroutine. A failing driver Halt is counted in
// Stats.Errors and reported as EventDriverError.
func (d *Device) Halt() {
	gen := d.haltReq.Add(1)
	d.poke()
	for spins := 0; ; spins++ {
		if d.haltAck.Load() >= gen {
			return
		}
		if d.token.CompareAndSwap(false, true) {
			if d.haltAck.Load() < gen {
				d.haltLocked()
				d.publishPending = !d.publish()
				d.tapHalt(d.ticks.Load())
			}
			d.token.Store(false)
			return
		}
		if d.haltOnShard(gen) {
			return
		}
		// A tick holds the driver; it does the halt or finishes soon.
		if spins < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// haltOnShard halts a device on a scheduler shard (whose token the shard
// holds) between two of the shard's ticks, and reports whether it did.
func (d *Device) haltOnShard(gen uint64) bool {
	r := d.slot.Load()
	if r == nil || !r.sh.mu.TryLock() {
		return false
	}
	defer r.sh.mu.Unlock()
	if d.slot.Load() != r {
		return false // it left the shard: its token is free again
	}
	if d.haltAck.Load() < gen {
		d.pull(r)
		d.haltLocked()
		d.publishPending = !d.publish()
		d.tapHalt(r.ticks)
		d.push(r)
	}
	return true
}

// publish publishes d.pub where readers look for it.
func (d *Device) publish() bool {
	switch {
	case d.arm != nil:
		return d.arm.publishSnap(&d.pub)
	case d.lazy != nil:
		return d.cell.Load().publishSnap(&d.pub)
	}
	return d.snap.Publish(&d.pub)
}

// Step runs one tick at nowNs (Clock time): read the register, apply lease
// and ramp, compute the output, exchange with the driver and publish the
// snapshot. It does not allocate. Only one goroutine may step a device at a
// time (a concurrent Step or a Halt in progress makes it skip the tick, and
// so does a Scheduler holding a simulated arm: its shard steps it).
func (d *Device) Step(nowNs int64) { d.stepAt(nowNs, true) }

// stepAt is Step; timed says whether to time the exchange. A scheduler
// shard times a sample of its devices' exchanges, since a clock read can
// cost a fair part of a simulated step.
func (d *Device) stepAt(nowNs int64, timed bool) {
	if !d.token.CompareAndSwap(false, true) {
		return
	}
	defer d.endTick(nowNs) // feeds the taps, then releases the token
	d.stepLocked(nowNs, timed)
}

// stepLocked is a tick; the caller holds the driver (the token, or for a
// device on a shard the shard's lock).
func (d *Device) stepLocked(nowNs int64, timed bool) {
	var tick uint64
	if d.arm != nil {
		d.arm.ticks++
		tick = d.arm.ticks
	} else {
		tick = d.ticks.Add(1)
	}
	if d.asleep {
		if d.haltReq.Load() == d.haltAck.Load() && d.globals.Load() == d.configuredFrom &&
			d.reg.latest.Load() == d.seenVersion && d.reg.owner.Load() == 0 {
			d.lastNowNs = nowNs
			return
		}
		d.asleep = false
	}
	halting := d.haltReq.Load() != d.haltAck.Load()
	if halting {
		d.haltLocked()
	}
	dtNs := nowNs - d.lastNowNs
	if d.lastNowNs == 0 || dtNs <= 0 {
		dtNs = d.opts.PeriodNs
	}
	d.lastNowNs = nowNs
	d.tickDtNs = dtNs

	// The force gate watches the arm only while a force may be commanded
	// or is still ramping out (read before lease, which may end both this
	// tick): it shapes nothing else. Between controls it rests at zero and
	// primes on the first watching tick, so a new owner's force is gated
	// by what the arm does under that force, not by how a hand moved the
	// idle arm, and an idle simulated arm's fast path skips it.
	gateWatching := d.armed || d.ramping || d.lastOwner != 0 || d.reg.owner.Load() != 0
	owner := d.lease(nowNs)
	mode := hw.ModeIdle
	changed := d.lazy == nil || halting || d.publishPending // other drivers publish every tick
	if d.failed.Load() {
		d.out = hw.Command{}
		d.gravityN = 0
	} else {
		// One Globals for the whole tick: the settings passed to the
		// driver, the force scale and the gravity feed-forward agree.
		g := d.globals.Load()
		if gateWatching {
			d.fs.gate.update(d.state.VelocityMps, dtNs)
		}
		d.configure(nowNs, g)
		d.compute(nowNs, owner, g)
		if !d.armed && !d.ramping && owner == 0 {
			d.fs.gate = forceGate{} // at rest until the next control
		}
		mode = d.out.Mode
		d.addGravity(g)
		var startNs int64
		if timed {
			startNs = d.clock.Now()
		}
		moved, err := d.exchange()
		if timed {
			if r := d.runner.Load(); r != nil {
				r.exchange.Record(d.clock.Now() - startNs)
			}
		}
		if err == nil && d.hwx != nil && d.hwx.ages != nil {
			d.hwx.stateAge(nowNs)
		}
		if err != nil {
			d.driverError(err, owner)
		} else {
			d.errRun = 0
			changed = changed || moved || d.stateGravityN != d.gravityN
			d.stateGravityN = d.gravityN
		}
	}

	d.publishTick(nowNs, tick, owner, mode, changed)
}

// publishTick ends a tick: it publishes the state, unless nothing a reader
// sees changed, and then checks whether the device may sleep.
func (d *Device) publishTick(nowNs int64, tick, owner uint64, mode hw.ControlMode, changed bool) {
	p := &d.pub
	failed := d.failed.Load()
	derive := deriveNone
	if d.lazy != nil {
		derive = deriveRight
		if d.lazy.LeftHanded() {
			derive = deriveLeft
		}
	}
	if !changed && p.derive == derive && p.Mode == mode && p.Owner == owner && p.AppliedSeq == d.appliedSeq && p.Failed == failed {
		// Nothing a reader sees changed (an arm at rest, nobody in
		// control): the published snapshot still holds, and readers'
		// PublishSeq-keyed caches stay valid.
		d.asleep = d.sleepCheck(owner)
		return
	}
	if d.lazy != nil {
		copyCoreState(&p.State, &d.state)
	} else {
		p.State = d.state
	}
	p.State.ForceN.Z -= d.stateGravityN
	p.derive = derive
	p.Mode = mode
	p.Target = [3]float64{}
	if mode != hw.ModeIdle {
		p.Target = d.held.Cmd.Target()
	}
	if d.reporter != nil {
		if m, t, ok := d.reporter.ReportedMode(); ok {
			p.Mode, p.Target = m, t
		}
	}
	p.Owner = owner
	p.Tick = tick
	p.TimeNs = nowNs
	p.CurrentAtNs = 0
	if d.hwx != nil && d.hwx.ages != nil && d.hwx.freshNs != nowNs {
		p.CurrentAtNs = d.hwx.freshNs
	}
	p.AppliedSeq = d.appliedSeq
	p.Failed = failed
	d.publishPending = !d.publish()
}

// copyCoreState copies what a lazy driver's ExchangeCore fills.
func copyCoreState(dst, src *hw.State) {
	dst.PositionM, dst.VelocityMps, dst.ForceN, dst.Status = src.PositionM, src.VelocityMps, src.ForceN, src.Status
}

// sleepCheck says whether the device may sleep after a tick that changed
// nothing: a time-invariant lazy driver at rest, nobody in control, no ramp,
// its settings applied (the force gate, nobody in control, rests). An
// asleep device's tick only checks what could wake it (a register write or
// claim, new Globals, a Halt) and otherwise does nothing: stepping it would
// change nothing either.
func (d *Device) sleepCheck(owner uint64) bool {
	return d.lazy != nil && owner == 0 && d.lastOwner == 0 && !d.armed && !d.ramping && d.errRun == 0 &&
		d.configuredFrom == d.globals.Load() && d.state.VelocityMps == (hw.Vec3{}) && d.lazy.TimeInvariant()
}

// exchange is one driver exchange of d.out; d.state takes the state only
// when it succeeds. moved false means a lazy driver's state did not change.
func (d *Device) exchange() (moved bool, err error) {
	if d.lazy != nil {
		// A lazy driver writes st only on success, and only when moved.
		return d.lazy.ExchangeCore(&d.out, &d.state)
	}
	if r := d.hwx.remote; r != nil {
		r.CommandInForce(d.commandInForce())
	}
	if err := d.drv.Exchange(&d.out, &d.hwx.scratch); err != nil {
		return false, err
	}
	d.state = d.hwx.scratch
	return true, nil
}

// configure passes changed Settings to the driver between two exchanges. A
// failing Configure is retried once a second.
func (d *Device) configure(nowNs int64, g *Globals) {
	if g == d.configuredFrom {
		return
	}
	if d.cfg == nil || (d.configuredOnce && g.Settings == d.configured) {
		d.configuredFrom = g
		return
	}
	if nowNs < d.configRetryNs {
		return
	}
	if err := d.cfg.Configure(g.Settings); err != nil {
		d.errors.Add(1)
		d.configRetryNs = nowNs + int64(time.Second)
		d.emit(Event{Kind: EventDriverError, Session: d.lastOwner,
			Err: fmt.Errorf("actors/loop: configure %s: %w; the loop retries every second", d.info.ID, err)})
		return
	}
	d.configuredFrom, d.configured, d.configuredOnce = g, g.Settings, true
}

func (d *Device) emit(e Event) {
	if d.opts.OnEvent != nil {
		d.opts.OnEvent(e)
	}
}
