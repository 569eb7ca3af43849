package loop

import (
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
)

const ms = int64(time.Millisecond)

// rig is a device on a fake arm and a manual clock, stepped by hand.
type rig struct {
	t     *testing.T
	dev   *Device
	drv   *looptest.Driver
	clock *looptest.Clock

	mu     sync.Mutex
	events []Event
}

func newRig(t *testing.T, info hw.Info, o DeviceOptions) *rig {
	t.Helper()
	r := &rig{t: t, drv: looptest.NewDriver(info), clock: looptest.NewClock(1000 * ms)}
	o.Clock = r.clock
	if o.PeriodNs == 0 {
		o.PeriodNs = ms
	}
	o.OnEvent = func(e Event) {
		r.mu.Lock()
		r.events = append(r.events, e)
		r.mu.Unlock()
	}
	r.dev = NewDevice(r.drv, o)
	// No gravity feed-forward unless a test asks: it would hide the
	// commanded force.
	r.dev.SetGlobals(&Globals{ForceScale: 1})
	return r
}

// step advances the clock by dt and runs one tick; it returns the command the
// driver received.
func (r *rig) step(dtNs int64) hw.Command {
	now := r.clock.Advance(dtNs)
	r.dev.Step(now)
	return r.drv.Last()
}

func (r *rig) snapshot() Snapshot {
	var s Snapshot
	r.dev.Load(&s)
	return s
}

func (r *rig) eventsOf(k EventKind) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, e := range r.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// command claims the register for session and writes a force command valid
// for leaseNs from now.
func (r *rig) command(session, seq uint64, leaseNs int64, cmd hw.Command, p *Params) {
	r.t.Helper()
	reg := r.dev.Register()
	if owner := reg.Claim(session); owner != session {
		r.t.Fatalf("Claim(%d) = %d, want the session to own the register", session, owner)
	}
	if !reg.Write(session, seq, r.clock.Now()+leaseNs, &cmd, p) {
		r.t.Fatalf("Write by owner %d refused", session)
	}
}

func force(x, y, z float64) hw.Command {
	return hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: x, Y: y, Z: z}}
}

func mag(v hw.Vec3) float64 { return math.Sqrt(v.X*v.X + v.Y*v.Y + v.Z*v.Z) }

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

func TestLeaseExpiryReleasesRampsAndEndsIdle(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{RampNs: 20 * ms})
	r.command(7, 1, 100*ms, force(4, 0, 0), nil)
	for i := 0; i < 100; i++ {
		if c := r.step(ms); c.Mode != hw.ModeForce || !near(c.ForceN.X, 4, 1e-9) {
			t.Fatalf("tick %d inside the lease: driver got %+v, want 4 N along X", i, c)
		}
	}
	if s := r.snapshot(); s.Owner != 7 || s.AppliedSeq != 1 || s.Mode != hw.ModeForce {
		t.Fatalf("snapshot inside the lease = owner %d seq %d mode %v", s.Owner, s.AppliedSeq, s.Mode)
	}
	// Past the deadline: the loop takes the register back and ramps down.
	prev := 4.0
	idleAt := int64(-1)
	for i := int64(1); i <= 40; i++ {
		c := r.step(ms)
		if c.Mode == hw.ModeIdle {
			if idleAt < 0 {
				idleAt = i
			}
			continue
		}
		if idleAt >= 0 {
			t.Fatalf("output came back (%+v) %d ms after it went idle", c, i-idleAt)
		}
		if c.ForceN.X > prev+1e-9 {
			t.Fatalf("ramp went up: %.3f N after %.3f N", c.ForceN.X, prev)
		}
		prev = c.ForceN.X
	}
	if idleAt < 0 || idleAt > 21 {
		t.Fatalf("output went idle %d ms after the lease lapsed, want within the 20 ms ramp", idleAt)
	}
	if got := r.eventsOf(EventLeaseExpired); len(got) != 1 || got[0].Session != 7 {
		t.Fatalf("lease-expired events = %+v, want one for session 7", got)
	}
	if got := r.eventsOf(EventReleased); len(got) != 0 {
		t.Fatalf("an expiry also reported a release: %+v", got)
	}
	if o := r.dev.Register().Owner(); o != 0 {
		t.Fatalf("owner after expiry = %d, want 0", o)
	}
	if s := r.snapshot(); s.Owner != 0 || s.Mode != hw.ModeIdle {
		t.Fatalf("snapshot after expiry = owner %d mode %v, want 0, idle", s.Owner, s.Mode)
	}
}

func TestReleaseRampsToIdle(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{RampNs: 20 * ms})
	r.command(3, 1, 500*ms, force(0, 0, 2), nil)
	r.step(ms)
	if !r.dev.Register().Release(3) {
		t.Fatal("Release by the owner failed")
	}
	c := r.step(ms)
	if c.Mode != hw.ModeForce || c.ForceN.Z <= 0 || c.ForceN.Z > 2 {
		t.Fatalf("first tick after release = %+v, want the start of a ramp", c)
	}
	for i := 0; i < 20; i++ {
		c = r.step(ms)
	}
	if c.Mode != hw.ModeIdle {
		t.Fatalf("21 ms after release the driver got %+v, want idle", c)
	}
	if got := r.eventsOf(EventReleased); len(got) != 1 || got[0].Session != 3 {
		t.Fatalf("released events = %+v, want one for session 3", got)
	}
	if got := r.eventsOf(EventLeaseExpired); len(got) != 0 {
		t.Fatalf("a release also reported an expiry: %+v", got)
	}
}

func TestPositionCommandStopsAtOnceWhenControlEnds(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.command(3, 1, 500*ms, hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{Y: 0.1}}, nil)
	if c := r.step(ms); c.Mode != hw.ModePosition || c.PositionM.Y != 0.1 {
		t.Fatalf("position command reached the driver as %+v", c)
	}
	r.dev.Register().Release(3)
	if c := r.step(ms); c.Mode != hw.ModeIdle {
		t.Fatalf("after release a position command became %+v, want idle at once", c)
	}
}

func TestStaleCommandNeverReapplied(t *testing.T) {
	tests := []struct {
		name string
		end  func(r *rig) // ends the session's control; the register keeps its command
	}{
		{"after expiry", func(r *rig) { r.clock.Advance(60 * ms) }},
		{"after release", func(r *rig) { r.dev.Register().Release(5) }},
		{"after halt", func(r *rig) { r.dev.Halt() }},
		{"after driver error", func(r *rig) { r.drv.FailNext(1, nil); r.step(ms) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, looptest.ArmInfo(), DeviceOptions{RampNs: 10 * ms})
			r.command(5, 1, 50*ms, force(1, 1, 0), nil)
			r.step(ms)
			tt.end(r)
			for i := 0; i < 30; i++ {
				r.step(ms)
			}
			// The same session claims again (or still owns the device)
			// but writes nothing new: the old command stays dead.
			r.dev.Register().Claim(5)
			for i := 0; i < 30; i++ {
				if c := r.step(ms); c.Mode != hw.ModeIdle {
					t.Fatalf("tick %d: stale command re-applied: %+v", i, c)
				}
			}
			// A new write re-arms.
			r.command(5, 2, 50*ms, force(0, 2, 0), nil)
			if c := r.step(ms); c.Mode != hw.ModeForce || !near(c.ForceN.Y, 2, 1e-9) {
				t.Fatalf("a new write did not re-arm: %+v", c)
			}
			if s := r.snapshot(); s.AppliedSeq != 2 {
				t.Fatalf("AppliedSeq = %d, want 2", s.AppliedSeq)
			}
		})
	}
}

func TestOtherSessionsCommandIsNotApplied(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.command(1, 1, 50*ms, force(1, 0, 0), nil)
	reg := r.dev.Register()
	if owner := reg.Claim(2); owner != 1 {
		t.Fatalf("Claim by a second session returned %d, want the owner 1", owner)
	}
	c := force(9, 0, 0)
	if reg.Write(2, 1, r.clock.Now()+50*ms, &c, nil) {
		t.Fatal("a non-owner's Write was accepted")
	}
	if got := r.step(ms); !near(got.ForceN.X, 1, 1e-9) {
		t.Fatalf("driver got %+v, want the owner's 1 N", got)
	}
}

func TestClaimWithoutCommandTimesOut(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{ClaimTimeoutNs: 100 * ms})
	r.dev.Register().Claim(9)
	for i := 0; i < 150; i++ {
		r.step(ms)
	}
	if o := r.dev.Register().Owner(); o != 0 {
		t.Fatalf("owner = %d 150 ms after a claim with no command, want released", o)
	}
	if got := r.eventsOf(EventLeaseExpired); len(got) != 1 || got[0].Session != 9 {
		t.Fatalf("events = %+v, want one lease expiry for 9", got)
	}
}

func TestForceShaping(t *testing.T) {
	arm := looptest.ArmInfo()
	firmwareArm := arm
	firmwareArm.HostGravityCompensation = false
	grip := hw.Info{Kind: hw.KindGrip, ID: "61548"}
	mg := arm.EffectiveMassKg * hw.GravityMps2
	diag := func(d float64) [3][3]float64 { return [3][3]float64{{d, 0, 0}, {0, d, 0}, {0, 0, d}} }
	tests := []struct {
		name     string
		info     hw.Info
		globals  Globals
		params   *Params
		velocity hw.Vec3
		cmd      hw.Vec3
		want     hw.Vec3
	}{
		{"passes force", arm, Globals{ForceScale: 1}, nil, hw.Vec3{}, hw.Vec3{X: 1, Y: -2, Z: 3}, hw.Vec3{X: 1, Y: -2, Z: 3}},
		{"damping opposes velocity", arm, Globals{ForceScale: 1}, &Params{Damping: diag(5)}, hw.Vec3{X: 0.1, Y: -0.2}, hw.Vec3{}, hw.Vec3{X: -0.5, Y: 1}},
		{"anisotropic damping", arm, Globals{ForceScale: 1}, &Params{Damping: [3][3]float64{{0, 2, 0}, {0, 0, 0}, {0, 0, 0}}}, hw.Vec3{Y: 0.5}, hw.Vec3{X: 1}, hw.Vec3{X: 0}},
		{"force scale", arm, Globals{ForceScale: 0.5}, nil, hw.Vec3{}, hw.Vec3{X: 4, Z: -2}, hw.Vec3{X: 2, Z: -1}},
		{"force scale above 1 is 1", arm, Globals{ForceScale: 3}, nil, hw.Vec3{}, hw.Vec3{X: 4}, hw.Vec3{X: 4}},
		{"gravity feed-forward", arm, Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1}}, nil, hw.Vec3{}, hw.Vec3{X: 1}, hw.Vec3{X: 1, Z: mg}},
		{"gravity is not force-scaled", arm, Globals{ForceScale: 0.5, Settings: hw.Settings{GravityCompensation: true, GravityScale: 2}}, nil, hw.Vec3{}, hw.Vec3{X: 2}, hw.Vec3{X: 1, Z: 2 * mg}},
		{"gravity off", arm, Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: false, GravityScale: 1}}, nil, hw.Vec3{}, hw.Vec3{X: 1}, hw.Vec3{X: 1}},
		{"firmware compensates gravity", firmwareArm, Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1}}, nil, hw.Vec3{}, hw.Vec3{X: 1}, hw.Vec3{X: 1}},
		{"clamp keeps direction", arm, Globals{ForceScale: 1}, nil, hw.Vec3{}, hw.Vec3{X: 30, Y: 40}, hw.Vec3{X: 6, Y: 8}},
		{"clamp after gravity", arm, Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1}}, nil, hw.Vec3{}, hw.Vec3{Z: 20}, hw.Vec3{Z: 10}},
		{"no force output", grip, Globals{ForceScale: 1}, nil, hw.Vec3{}, hw.Vec3{X: 1}, hw.Vec3{}},
		{"non-finite force commands nothing", arm, Globals{ForceScale: 1}, nil, hw.Vec3{}, hw.Vec3{X: math.NaN(), Y: 1}, hw.Vec3{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.info, DeviceOptions{})
			r.dev.SetGlobals(&tt.globals)
			r.drv.SetState(hw.State{VelocityMps: tt.velocity})
			r.step(ms) // the loop learns the velocity from an exchange
			r.command(1, 1, 100*ms, hw.Command{Mode: hw.ModeForce, ForceN: tt.cmd}, tt.params)
			got := r.step(ms).ForceN
			if !near(got.X, tt.want.X, 1e-6) || !near(got.Y, tt.want.Y, 1e-6) || !near(got.Z, tt.want.Z, 1e-6) {
				t.Fatalf("driver got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestTorquesAreScaledAndRamped(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{RampNs: 10 * ms})
	r.dev.SetGlobals(&Globals{ForceScale: 0.5})
	r.command(1, 1, 100*ms, hw.Command{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A0: 100, A1: -50, A2: 10}}, nil)
	if c := r.step(ms); c.Mode != hw.ModeTorque || c.TorquesNmm != (hw.Angles3{A0: 50, A1: -25, A2: 5}) {
		t.Fatalf("driver got %+v, want torques halved", c)
	}
	r.dev.Register().Release(1)
	r.step(ms)
	if c := r.step(5 * ms); c.Mode != hw.ModeTorque || !near(c.TorquesNmm.A0, 25, 1e-9) {
		t.Fatalf("half way through the ramp the driver got %+v, want 25 N·mm", c)
	}
	if c := r.step(5 * ms); c.Mode != hw.ModeIdle {
		t.Fatalf("after the ramp the driver got %+v, want idle", c)
	}
}

// oscillate makes the fake arm report a velocity ringing at hz with the
// given amplitude on top of a steady drift, one sample per 1 ms exchange.
func oscillate(hz, ampMps, driftMps float64) looptest.StateFunc {
	return func(n uint64, _ *hw.Command, st *hw.State) {
		ts := float64(n) * 1e-3
		st.VelocityMps = hw.Vec3{X: driftMps + ampMps*math.Sin(2*math.Pi*hz*ts)}
	}
}

func accelerate(mps2 float64) looptest.StateFunc {
	return func(n uint64, _ *hw.Command, st *hw.State) {
		st.VelocityMps = hw.Vec3{Y: mps2 * float64(n) * 1e-3}
	}
}

func TestForceGate(t *testing.T) {
	tests := []struct {
		name       string
		gain       float64
		motion     looptest.StateFunc
		minF, maxF float64 // of a commanded 5 N, after 300 ms
	}{
		{"gain 0 passes an oscillation", 0, oscillate(20, 0.1, 0), 5 - 1e-9, 5 + 1e-9},
		{"gain 1 attenuates an oscillation", 1, oscillate(20, 0.1, 0), 0, 1},
		{"gain 0.3 attenuates partly", 0.3, oscillate(20, 0.1, 0), 3.4, 4.0},
		{"steady motion is not attenuated", 1, oscillate(0, 0, 0.2), 4.9, 5 + 1e-9},
		{"slow hand motion is barely attenuated", 1, oscillate(1, 0.05, 0), 4.5, 5 + 1e-9},
		// A steady push accelerates the arm: velocity ramps, which is not
		// ringing (a first-order high-pass would see it as such).
		{"steady acceleration is not attenuated", 1, accelerate(2), 4.9, 5 + 1e-9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
			r.drv.SetStateFunc(tt.motion)
			p := &Params{ForceGateGain: tt.gain}
			var got hw.Command
			for i := 0; i < 300; i++ {
				r.command(1, uint64(i+1), 100*ms, force(0, 5, 0), p)
				got = r.step(ms)
			}
			if f := got.ForceN.Y; f < tt.minF || f > tt.maxF {
				t.Fatalf("gated force = %.3f N, want %.2f..%.2f", f, tt.minF, tt.maxF)
			}
		})
	}
}

// The gate watches an arm while someone controls it and while its force
// ramps out, and rests between controls: ringing before a claim does not
// attenuate the new owner's first force, ringing under control keeps
// attenuating the ramp after a lapse, and the ramp's end leaves it at rest.
func TestForceGateWatchesControlAndRampOnly(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{RampNs: 20 * ms})
	r.drv.SetStateFunc(oscillate(20, 0.1, 0))
	for range 300 {
		r.step(ms) // ringing, nobody in control
	}
	p := &Params{ForceGateGain: 1}
	r.command(1, 1, 100*ms, force(0, 5, 0), p)
	if f := r.step(ms).ForceN.Y; !near(f, 5, 1e-9) {
		t.Fatalf("first force after a claim on a ringing idle arm = %.3f N, want 5 (the gate rests between controls)", f)
	}
	for i := range 300 {
		r.command(1, uint64(i+2), 100*ms, force(0, 5, 0), p)
		r.step(ms)
	}
	if f := r.step(ms).ForceN.Y; f > 1 {
		t.Fatalf("force under control on the ringing arm = %.3f N, want under 1 (gated)", f)
	}
	// No more commands: the lease lapses 100 ms after the last one, and
	// the ramp starts from the gated force, not from the commanded 5 N.
	var ramp []float64
	for range 150 {
		c := r.step(ms)
		if c.Mode == hw.ModeForce && r.dev.Register().Owner() == 0 {
			ramp = append(ramp, c.ForceN.Y)
		}
	}
	if len(ramp) == 0 {
		t.Fatal("no ramp after the lease lapsed")
	}
	for i, f := range ramp {
		if f > 1 {
			t.Fatalf("ramp tick %d after the lapse: %.3f N, want under 1 (the gate still watches the ramp): %.3f", i, f, ramp)
		}
	}
	if r.dev.gate != (forceGate{}) {
		t.Fatalf("gate after the ramp ended = %+v, want at rest", r.dev.gate)
	}
}

func TestDriverErrorsHaltAndFail(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{MaxErrors: 5})
	r.command(1, 1, 1000*ms, force(1, 0, 0), nil)
	r.step(ms)
	r.drv.FailNext(3, nil)
	halts := r.drv.Halts()
	for i := 0; i < 3; i++ {
		r.step(ms)
	}
	if got := r.drv.Halts() - halts; got != 3 {
		t.Fatalf("driver halted %d times for 3 errors, want 3", got)
	}
	evs := r.eventsOf(EventDriverError)
	if len(evs) != 1 || !errors.Is(evs[0].Err, looptest.ErrInjected) || evs[0].Session != 1 {
		t.Fatalf("driver-error events = %+v, want one wrapping the driver's error", evs)
	}
	// The output stays off until the session writes again.
	if c := r.step(ms); c.Mode != hw.ModeIdle {
		t.Fatalf("after errors the old command came back: %+v", c)
	}
	r.command(1, 2, 1000*ms, force(1, 0, 0), nil)
	if c := r.step(ms); c.Mode != hw.ModeForce {
		t.Fatalf("a new write after errors did not re-arm: %+v", c)
	}
	// A new run of errors reports again; MaxErrors in a row fail the device.
	r.drv.FailNext(100, nil)
	for i := 0; i < 5; i++ {
		r.step(ms)
	}
	if n := len(r.eventsOf(EventDriverError)); n != 2 {
		t.Fatalf("driver-error events = %d, want 2 (one per run)", n)
	}
	failed := r.eventsOf(EventFailed)
	if len(failed) != 1 || !errors.Is(failed[0].Err, looptest.ErrInjected) {
		t.Fatalf("failed events = %+v, want one", failed)
	}
	exchanges := r.drv.Exchanges()
	for i := 0; i < 10; i++ {
		r.step(ms)
	}
	if r.drv.Exchanges() != exchanges {
		t.Fatal("a failed device kept exchanging")
	}
	if n := len(r.eventsOf(EventFailed)); n != 1 {
		t.Fatalf("failed events = %d, want exactly 1", n)
	}
	if s := r.snapshot(); !s.Failed || s.Mode != hw.ModeIdle {
		t.Fatalf("snapshot of a failed device = %+v", s)
	}
	if st := r.dev.Stats(); st.Errors != 8 {
		t.Fatalf("Stats.Errors = %d, want 8", st.Errors)
	}
}

func TestSettingsReachTheDriverOnChange(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.step(ms)
	n := r.drv.Configures()
	s := hw.Settings{LeftHanded: true, GravityCompensation: true, GravityScale: 1.5}
	r.dev.SetGlobals(&Globals{ForceScale: 1, Settings: s})
	r.step(ms)
	r.step(ms)
	if got := r.drv.Configures() - n; got != 1 {
		t.Fatalf("Configure called %d times for one change, want 1", got)
	}
	if got := r.drv.Settings(); got != s {
		t.Fatalf("driver settings = %+v, want %+v", got, s)
	}
	r.dev.SetGlobals(&Globals{ForceScale: 0.5, Settings: s}) // same settings
	r.step(ms)
	if got := r.drv.Configures() - n; got != 1 {
		t.Fatalf("Configure called again for unchanged settings (%d calls)", got)
	}
}

func TestHaltZeroesOutputAtOnce(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.command(1, 1, 1000*ms, force(3, 0, 0), nil)
	r.step(ms)
	r.dev.Halt()
	r.dev.Halt() // idempotent
	if r.drv.Halts() != 2 {
		t.Fatalf("driver halts = %d, want 2", r.drv.Halts())
	}
	if c := r.step(ms); c.Mode != hw.ModeIdle {
		t.Fatalf("after Halt the driver got %+v, want idle (no ramp)", c)
	}
	if s := r.snapshot(); s.Mode != hw.ModeIdle {
		t.Fatalf("snapshot mode after Halt = %v", s.Mode)
	}
}

func TestSnapshotReportsState(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	st := hw.State{PositionM: hw.Vec3{X: 0.01, Y: 0.15, Z: 0.1}, VelocityMps: hw.Vec3{Z: -0.2},
		Status: hw.StatusReady | hw.StatusCalibrated, BodyOrientation: hw.Quat{W: 1}}
	r.drv.SetState(st)
	r.step(ms)
	r.step(ms)
	s := r.snapshot()
	if s.State != st || s.Tick != 2 || s.TimeNs != r.clock.Now() || s.Owner != 0 || s.Failed {
		t.Fatalf("snapshot = %+v, want state %+v at tick 2", s, st)
	}
}

func TestStepDoesNotAllocate(t *testing.T) {
	r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
	r.dev.SetGlobals(&Globals{ForceScale: 1, Settings: hw.Settings{GravityCompensation: true, GravityScale: 1}})
	reg := r.dev.Register()
	reg.Claim(1)
	cmd := force(1, 2, 3)
	p := &Params{Damping: [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, ForceGateGain: 0.5}
	var seq uint64
	allocs := testing.AllocsPerRun(1000, func() {
		seq++
		now := r.clock.Advance(ms)
		reg.Write(1, seq, now+100*ms, &cmd, p)
		r.dev.Step(now)
	})
	if allocs != 0 {
		t.Fatalf("Step + Write allocate %.1f times per tick, want 0", allocs)
	}
	// And through a ramp.
	reg.Release(1)
	allocs = testing.AllocsPerRun(100, func() { r.dev.Step(r.clock.Advance(ms / 10)) })
	if allocs != 0 {
		t.Fatalf("Step while ramping allocates %.1f times per tick, want 0", allocs)
	}
}

// TestDefaultRampEndsWithinTheReleaseBound: with the default ramp, the zero
// goes out within ReleaseBoundNs (20 ms) of the lease's deadline wherever in
// its period the deadline falls, at several loop rates; the ramp before it
// only goes down.
func TestDefaultRampEndsWithinTheReleaseBound(t *testing.T) {
	for _, periodNs := range []int64{ms, ms / 4, ms / 8, 5 * ms} {
		for _, phase := range []int64{0, 1, periodNs / 3, periodNs / 2, periodNs - 1} {
			r := newRig(t, looptest.ArmInfo(), DeviceOptions{PeriodNs: periodNs})
			lease := 50*ms + phase
			deadline := r.clock.Now() + lease
			r.command(7, 1, lease, force(4, 0, 0), nil)
			prev, zeroAt := 4.0, int64(-1)
			for r.clock.Now() < deadline+2*ReleaseBoundNs {
				c := r.step(periodNs)
				if c.Mode == hw.ModeIdle || mag(c.ForceN) == 0 {
					if zeroAt < 0 && r.clock.Now() > deadline {
						zeroAt = r.clock.Now()
					}
					continue
				}
				if zeroAt >= 0 {
					t.Fatalf("period %d ns, phase %d ns: force came back after the zero", periodNs, phase)
				}
				if c.ForceN.X > prev+1e-9 {
					t.Fatalf("period %d ns, phase %d ns: the ramp went up", periodNs, phase)
				}
				prev = c.ForceN.X
			}
			if zeroAt < 0 || zeroAt-deadline > ReleaseBoundNs {
				t.Fatalf("period %d ns, phase %d ns: zero %d ns after the deadline, want within %d", periodNs, phase, zeroAt-deadline, ReleaseBoundNs)
			}
		}
	}
}

// TestLateTickAfterLapseStillReleasesWithinTheBound: a loop that wakes late
// just after a lease lapses (another process had the CPU) ramps from the
// deadline, not from the late tick, so the zero still goes out within
// ReleaseBoundNs of the deadline; a tick later than the whole ramp drops
// the force at once.
func TestLateTickAfterLapseStillReleasesWithinTheBound(t *testing.T) {
	for _, lateNs := range []int64{0, 3 * ms, 8 * ms, 15 * ms, 19 * ms, 40 * ms} {
		r := newRig(t, looptest.ArmInfo(), DeviceOptions{})
		r.command(7, 1, 50*ms, force(4, 0, 0), nil)
		deadline := r.clock.Now() + 50*ms
		for r.clock.Now() < deadline {
			r.step(ms)
		}
		// The first tick after the deadline comes lateNs late.
		c := r.step(ms + lateNs)
		zeroAt := int64(-1)
		prev := mag(c.ForceN)
		if c.Mode == hw.ModeIdle || prev == 0 {
			zeroAt = r.clock.Now()
		}
		for zeroAt < 0 && r.clock.Now() < deadline+3*ReleaseBoundNs {
			c = r.step(ms)
			f := mag(c.ForceN)
			if c.Mode == hw.ModeIdle || f == 0 {
				zeroAt = r.clock.Now()
				break
			}
			if f > prev+1e-9 {
				t.Fatalf("late %d ms: the ramp went up (%.3f N after %.3f N)", lateNs/ms, f, prev)
			}
			prev = f
		}
		if zeroAt < 0 {
			t.Fatalf("late %d ms: the force never reached zero", lateNs/ms)
		}
		// The late tick itself can only be as early as it came.
		bound := max(ReleaseBoundNs, ms+lateNs)
		if got := zeroAt - deadline; got > bound {
			t.Fatalf("late %d ms: zero %.1f ms after the deadline, want within %.1f ms", lateNs/ms, float64(got)/1e6, float64(bound)/1e6)
		}
	}
}
