// Package loop is hapticd's data plane: the per-device real-time loop, the
// command register sessions write into, the state snapshots sessions read
// from, loop pacing, and the histograms that let every loop measure itself.
// It imports the standard library, hw and golang.org/x/sys only; actors sit
// above it and talk to it through Device, Register and events.
//
// # Data flow
//
// The controlling session claims a device's Register and writes commands
// into it (session id, sequence number, lease deadline, hw.Command, Params).
// Every tick, Device.Step reads the latest command, enforces the lease,
// shapes the output, exchanges it with the driver, and publishes a Snapshot
// that any number of sessions Load. Neither side waits for the other and
// nothing allocates per tick.
//
// # Output shaping
//
// For ModeForce: F = ForceN − Damping·v (v: the last reported velocity),
// then the force gate, then × Globals.ForceScale, then + the session's
// effects and the passivity controller (# Effects and passivity), then |F|
// is clamped to Info.MaxForceN (or Globals.ForceClampN), slew-limited,
// then × the ramp factor while ramping. ModeTorque torques
// are scaled by ForceScale and the ramp. ModePosition and ModeAngle pass
// through and stop at once (ModeIdle) when control ends. Non-finite values
// command nothing.
//
// # Effects and passivity
//
// A session may declare effects for an arm it controls (package effect:
// springs to a point, line and plane, dampers, friction, a plane wall and
// SDF shapes with a proxy, sphere and box limits, a local linear field,
// vibration). Device.SetEffects publishes the immutable effect.Set; the
// tick reads it through an atomic pointer and renders it from the cursor's
// last state, with no lock, no mailbox and no allocation. A Set is
// rendered only while its Session owns the register and its command is
// valid (a force command, or an idle one: then the force is the effects'
// alone; position, angle and torque commands render none). Its force is
// summed with the session's shaped force (both × ForceScale; the force
// gate acts on the session's force only), and the sum goes through the
// stages below, then the lease ramp: when the lease lapses, the session
// releases the arm or Halt runs, the effects' force ramps to zero with the
// command's (within ReleaseBoundNs), and their walls let go of their
// contacts; a new command renders the Set again, fading in from zero.
// Another session's Set is never rendered. Units, defaults and limits are
// package effect's (see also docs/effects.md).
//
// The passivity layer watches every commanded force (package passivity;
// energy is what the rendered environment absorbed from the arm, −Σ F·v·dt,
// negative when a source drove it): an observer per source (the session's
// force; each effect; the navigation, which rides on the command's
// Params) and a controller on the sum that, when
// Globals.Passivity.Enabled, adds just the damping that keeps the energy
// from going negative. Then the clamp (MaxForceN, or Globals.ForceClampN
// if lower) and the slew limit (Globals.ForceSlewNps; a new control starts
// from zero force). Device.Output reports the energies, the damping added
// and whether the controller has acted for over a second without a break
// (EventPassivitySustained, once per spell); Device.LoadEffects each
// effect's force, proxy point, fade and energy. The controller is on by
// default in passivity.ScopeRendered: it guards the sources the loop
// renders that are passive by design, not a client's stream of forces
// (ScopeOutput guards the whole output).
//
// # Navigation
//
// A session's bubble navigation travels with its commands
// (Params.Navigation: the bubble in the device frame, package effect's
// Bubble, and the session's NavigationTrack on the device), so the loop
// renders the navigation of the command it applies, under that command's
// lease, and never another session's. Every tick, in forceStages.force
// beside the effects (the full step and a shard's fast path alike),
// effect.Navigator.Step classifies the cursor (dead zone, velocity zone,
// wall, with hysteresis) and gives a force (dead-zone damping, the zone's
// spring, the wall) that is summed with the session's force
// before the passivity stage (its own observer: OutputReport's
// NavigationEnergyJ), and, while the command is in force (not while it
// ramps out), integrates the workspace offset by the velocity law. The
// track publishes a NavigationReport every rendered tick (a snapshot
// cell: readers never block the tick, nothing allocates) and once more,
// at rest, when control ends; the offset stays in the track. A driver
// whose arm another process's loop renders (RemoteNavigation, a lab
// gateway's proxy) is handed each force command's navigation instead, and
// its tracks hold that loop's reports (NavigationTrack.Mirror). Such a
// driver is also told, before each exchange, whose command in force the
// output applies (RemoteOutput): none while a control ramps out, so it
// never sends the ramp under the lease of the session that owns the arm
// next.
//
// # Gravity feed-forward
//
// A device whose Info says HostGravityCompensation (it has no firmware
// compensation: the simulated arm) gets m·g·GravityScale upwards on top of
// the shaped force when Settings.GravityCompensation is on, also while
// nobody controls it, so the arm floats as a firmware-compensated one does.
// It is not the client's force: ForceScale and the ramp do not scale it, the
// total is clamped to MaxForceN again, and Snapshot.State.ForceN and
// Snapshot.Mode report the client's side only. Position and angle servos
// carry the weight themselves and torque mode gets none (that would need a
// joint-space model). After Halt the device gets nothing until a new
// command arms it.
//
// # Force gate
//
// The gate attenuates force while the arm oscillates. It high-passes the
// velocity at 8 Hz (hand motion is slower, unstable contacts ring faster)
// with a second-order filter, so that a steady push, which ramps the
// velocity, does not read as ringing; it low-passes the square of the result
// into an energy e (30 ms), and multiplies force by
// 1 − gain·e/(e + (0.02 m/s)²). Gain 0 passes force unchanged; gain 1
// removes nearly all of it while the arm rings hard. Steady motion is never
// attenuated. The gate watches the arm only while someone controls it or
// its force ramps out; between controls it rests at zero, so a new owner's
// force is gated by how the arm answers that force (a hard ringing builds
// the attenuation within a few ticks), not by how a hand moved it before.
//
// # Safety
//
// safety.go holds this code, apart from the shards and the halt handshake,
// and safety_test.go its tests. A command is never applied after its deadline. When the owner's lease
// lapses the loop releases the register (EventLeaseExpired, once) and ramps
// the output linearly to zero over RampNs counted from the deadline (a tick
// that woke late shortens the ramp rather than delaying the zero), then
// sends ModeIdle (by default the zero goes out within ReleaseBoundNs, 20 ms,
// of the lapse); a release
// by the session does the same with EventReleased, counted from the
// release (or from the deadline, if that came first). Every change of owner
// starts a new ownership term and a command counts only in its own term, so
// a command written before a release is never applied again, even if the
// register still holds it: only a new Write re-arms the output. A driver
// error halts the driver and disarms the output (EventDriverError on the
// first of a run); MaxErrors in a row fail the device (EventFailed, once),
// which then stops exchanging. Halt zeroes the output at once. An owner that
// claimed the register but wrote nothing in its term is released after
// ClaimTimeoutNs, so a claim cannot hold a device without a lease.
//
// # Concurrency
//
// Register writers and Snapshot readers are lock-free and may be many
// goroutines. One goroutine steps a device at a time: a hardware device
// runs under RunLocked on its own OS thread; simulated devices share a
// Scheduler whose shards (one thread each) step all their devices per
// tick; a shard holds its simulated arms in records it steps in one pass
// (the README, # Many simulated arms) and holds its mutex for each tick.
// Halt may be called from anywhere and returns once the driver was
// halted. Events are delivered synchronously through DeviceOptions.OnEvent,
// which must not block.
//
// # Taps
//
// A recorder attaches a Tap to a device (Device.AddTap): each tick then
// copies its snapshot into the tap's bounded ring, at most once per the
// tap's everyNs (NewTap), and the recorder drains it with Tap.Next. A full ring
// drops the tick's snapshot and counts it (Tap.Dropped): the loop never
// waits on a recorder, and never allocates for one. A Halt between ticks
// (a stop's) queues the halted state too, its force zero: the last state
// a recording of the stop gets of the device.
//
// # Pacing
//
// Pacer sleeps with clock_nanosleep to an absolute CLOCK_MONOTONIC deadline
// minus a margin learned from observed wake-up latency, then spins to the
// deadline; time.Ticker and time.Sleep cannot hold more than about 1 kHz.
// A sleep-only pacer (simulated shards below SchedulerOptions.SpinFrom
// devices) sleeps on a timerfd in the runtime's poller instead, which frees
// its P at once: a thread that sleeps 1,000 times a second inside a syscall
// keeps sysmon waking every 20 µs to retake its P, which cost a lock-step
// client a third of its rate. Its read of the timerfd carries a read
// deadline at the same time: when sessions keep every P busy, the
// deadline's runtime timer puts the shard next on its P, where the poller
// would queue it behind the sessions it readied with it (100 sessions at 1
// kHz on 2 cores: period p99 about 10 ms -> 5 ms). Such a shard is not
// locked to a thread unless it runs with RealtimePriority: a locked
// goroutine that parks hands its P to another thread and back on every
// tick. A big shard pays sysmon's cost to keep its deadlines: one that
// slept on the timerfd woke too late to step thousands of arms in time.
// On Windows the clock is QueryPerformanceCounter (the runtime's monotonic
// clock there steps by a whole clock interrupt), the sleep is a
// high-resolution waitable timer armed with the relative time left, and
// loop threads run at THREAD_PRIORITY_HIGHEST (TIME_CRITICAL with
// RealtimePriority); timerwait.go holds that arithmetic, tested on every
// OS. Elsewhere (macOS) the sleep is time.Sleep and the spin does the rest.
// Each runner records its period in a protocol/histogram Histogram (the
// one the load generator reads its round trips with; buckets 1/8 of their
// value wide, percentiles reported at the bucket's upper edge), counts
// overruns, and emits EventRateWarning when the p99 period of a one-second
// window passed 1.5 × target: at most once a minute, with the count of late
// windows it held back (Event.Suppressed).
//
// The pacer is only as good as the thread's access to a CPU. Measured on
// a loaded 2-core VM (load average 6, a 1 kHz loop): normal scheduling gave
// a p99 period of about 5 ms; SCHED_FIFO (RealtimePriority) gave 1.00 ms.
// When the process's own goroutines keep every P busy, a loop waking from
// its sleep also waits for a P (up to a 10 ms time slice) whatever its OS
// priority: with four busy goroutines and GOMAXPROCS=2 the p99 was 55 ms
// even under SCHED_FIFO, and 1.05 ms with SCHED_FIFO and GOMAXPROCS=8. So
// a deployment that needs a steady rate runs loops with RealtimePriority
// and leaves GOMAXPROCS headroom (cores + loop threads).
package loop
