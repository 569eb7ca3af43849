package loop

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
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
	if r.dev.fs.gate != (forceGate{}) {
		t.Fatalf("gate after the ramp ended = %+v, want at rest", r.dev.fs.gate)
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

// TestPeriodBounds: a period the shard's 32-bit record cannot hold is
// clamped to the slowest loop (1 Hz), and a missing one is the 1 kHz default.
func TestPeriodBounds(t *testing.T) {
	for _, tt := range []struct {
		name   string
		give   int64
		wantNs int64
	}{
		{"default", 0, int64(time.Millisecond)},
		{"8 kHz", 125_000, 125_000},
		{"1 Hz", int64(time.Second), int64(time.Second)},
		{"slower than 1 Hz", 3 * int64(time.Second), int64(time.Second)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDevice(sim.NewArm(sim.ArmOptions{}), DeviceOptions{PeriodNs: tt.give})
			if d.opts.PeriodNs != tt.wantNs {
				t.Fatalf("PeriodNs %d: got %d, want %d", tt.give, d.opts.PeriodNs, tt.wantNs)
			}
			var c armControl
			var cmd commandInputs
			d.fillControl(&c, &cmd)
			if int64(c.fs.periodNs) != tt.wantNs {
				t.Fatalf("shard record period %d, want %d", c.fs.periodNs, tt.wantNs)
			}
		})
	}
}

// knownStateDriver is a driver that knows its state before the first
// exchange (loop.InitialStater), as an arm read at wake-up or a lab
// gateway's proxy with its node's first push.
type knownStateDriver struct {
	*looptest.Driver
	at hw.Vec3
}

func (k knownStateDriver) InitialState(st *hw.State) { st.PositionM = k.at }

// A device whose driver knows its state has it in its first snapshot,
// before any tick: a reader between the device's listing and its loop's
// first tick found it at the origin (a lab gateway's first listing of a
// node's arm, in CI).
func TestFirstSnapshotHoldsTheDriversInitialState(t *testing.T) {
	at := hw.Vec3{X: 0.01, Y: 0.12, Z: 0.08}
	d := NewDevice(knownStateDriver{looptest.NewArm(), at}, DeviceOptions{})
	var snap Snapshot
	d.Load(&snap)
	if snap.State.PositionM != at || snap.Tick != 0 {
		t.Fatalf("before any tick: position %v at tick %d, want %v at 0", snap.State.PositionM, snap.Tick, at)
	}
}
