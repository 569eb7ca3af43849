package driver_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/wire"
)

// Generous timeouts: these tests check behaviour, not speed, on shared and
// noisy machines (with -race). Only the stall tests wait for timeouts.
const testReplyTimeout = 500 * time.Millisecond

// startEmulator serves an emulated arm on a real pseudo-terminal.
func startEmulator(t *testing.T, o emulator.Options) (*emulator.Emulator, string) {
	t.Helper()
	e, path, err := emulator.StartPTY(o)
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatalf("StartPTY: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	return e, path
}

// openArm opens the real serial port at path and wakes the arm behind it.
func openArm(t *testing.T, path string, o driver.ArmOptions) *driver.Arm {
	t.Helper()
	p, err := serial.Open(path)
	if err != nil {
		t.Fatalf("serial.Open: %v", err)
	}
	o.Path = path
	// Generous timeouts: the emulator shares a loaded machine, and a late
	// reply here would fail the test, not the driver.
	if o.ReplyTimeout == 0 {
		o.ReplyTimeout = testReplyTimeout
	}
	if o.HaltTimeout == 0 {
		o.HaltTimeout = testReplyTimeout
	}
	a, err := driver.OpenArm(p, o)
	if err != nil {
		t.Fatalf("OpenArm: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

func TestArmWakeUp(t *testing.T) {
	tests := []struct {
		name       string
		flaky      int
		zeroStates int
		// garbled replies are preceded by noise; every reply when
		// negative. The wake-up reply has no header to find, so the
		// noise shifts the identity read from it.
		garbled  int
		attempts int
		wantErr  bool
	}{
		{"clean", 0, 0, 0, 5, false},
		{"flaky first wake-up", 1, 0, 0, 5, false},
		{"two flaky wake-ups", 2, 0, 0, 5, false},
		{"first state at exactly zero", 0, 1, 0, 5, false},
		{"flaky beyond the retry bound", 3, 0, 0, 3, true},
		{"noise before the first wake-up reply", 0, 0, 1, 5, false},
		{"noise before every reply", 0, 0, -1, 3, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			faults := emulator.Faults{FlakyWakeups: tc.flaky, ZeroStates: tc.zeroStates, GarbageReplies: tc.garbled, GarbageBytes: 8}
			if tc.garbled < 0 {
				faults.GarbageReplies, faults.GarbageProbability = 0, 1
			}
			e, path := startEmulator(t, emulator.Options{Index: i, Faults: faults})
			p, err := serial.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			a, err := driver.OpenArm(p, driver.ArmOptions{Path: path, WakeAttempts: tc.attempts, ReplyTimeout: testReplyTimeout})
			if tc.wantErr {
				if !errors.Is(err, driver.ErrWake) {
					t.Fatalf("OpenArm error = %v, want ErrWake", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenArm: %v", err)
			}
			defer a.Close()
			info := a.Info()
			wantID := hexID(e.ID())
			if info.ID != wantID || info.UUID != hw.FormatUUID(e.UUID()) || info.Port != path || info.Kind != hw.KindArm {
				t.Errorf("Info = %+v, want id %s uuid %s port %s", info, wantID, hw.FormatUUID(e.UUID()), path)
			}
			if info.HostGravityCompensation {
				t.Error("HostGravityCompensation = true; the firmware compensates gravity")
			}
			if got, want := e.Stats().Wakeups, tc.flaky+tc.zeroStates+tc.garbled+1; got != want {
				t.Errorf("emulator saw %d wake-ups, want %d", got, want)
			}
			var st hw.State
			if err := a.Exchange(&hw.Command{}, &st); err != nil || st.PositionM == (hw.Vec3{}) {
				t.Errorf("first Exchange = %v with position %v", err, st.PositionM)
			}
		})
	}
}

func hexID(id uint16) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[id>>12], digits[id>>8&15], digits[id>>4&15], digits[id&15]})
}

// exchangeN runs n ticks of cmd and returns the last state.
func exchangeN(t *testing.T, a hw.Driver, cmd hw.Command, n int) hw.State {
	t.Helper()
	var st hw.State
	for i := 0; i < n; i++ {
		if err := a.Exchange(&cmd, &st); err != nil {
			t.Fatalf("Exchange %d: %v", i, err)
		}
	}
	return st
}

func TestArmForceMovesEmulatedPhysics(t *testing.T) {
	tests := []struct {
		name   string
		forceN hw.Vec3
		rises  bool
	}{
		{"upward force raises z", hw.Vec3{Z: 2}, true},
		{"downward force lowers z", hw.Vec3{Z: -2}, false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, path := startEmulator(t, emulator.Options{Index: 10 + i})
			a := openArm(t, path, driver.ArmOptions{})
			start := exchangeN(t, a, hw.Command{Mode: hw.ModeIdle}, 1)
			end := exchangeN(t, a, hw.Command{Mode: hw.ModeForce, ForceN: tc.forceN}, 100)
			dz := end.PositionM.Z - start.PositionM.Z
			if tc.rises && dz < 1e-3 || !tc.rises && dz > -1e-3 {
				t.Errorf("z moved %.4f m over 100 ticks of %v", dz, tc.forceN)
			}
			if end.ForceN != tc.forceN {
				t.Errorf("State.ForceN = %v, want %v", end.ForceN, tc.forceN)
			}
		})
	}
}

func TestArmResynchronisesOnNoise(t *testing.T) {
	tests := []struct {
		name   string
		faults emulator.Faults
	}{
		{"garbage before every reply", emulator.Faults{GarbageProbability: 1, GarbageBytes: 11}},
		{"garbage and latency jitter", emulator.Faults{GarbageProbability: 0.5, Jitter: 200 * time.Microsecond}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, path := startEmulator(t, emulator.Options{Index: 20 + i})
			a := openArm(t, path, driver.ArmOptions{})
			e.SetFaults(tc.faults)
			start := exchangeN(t, a, hw.Command{Mode: hw.ModeIdle}, 1)
			end := exchangeN(t, a, hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 2}}, 100)
			if a.Skipped() == 0 {
				t.Error("no byte was skipped; the garbage fault did not reach the driver")
			}
			if end.PositionM.Z-start.PositionM.Z < 1e-3 {
				t.Errorf("z did not rise through the noise: %v → %v", start.PositionM, end.PositionM)
			}
		})
	}
}

func TestArmDroppedBytesAreMissesNotErrors(t *testing.T) {
	e, path := startEmulator(t, emulator.Options{Index: 30})
	a := openArm(t, path, driver.ArmOptions{ReplyTimeout: 20 * time.Millisecond, MaxMisses: 1000})
	// Only reply bytes drop: every command written reaches the emulator,
	// some after the driver gave up waiting for their reply.
	sent := e.Stats().Commands
	e.SetFaults(emulator.Faults{DropProbability: 0.05})
	exchangeN(t, a, hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}, 50)
	e.SetFaults(emulator.Faults{})
	exchangeN(t, a, hw.Command{Mode: hw.ModeIdle}, 5)
	sent += 55
	// Let the commands taken late land before counting, so only the next
	// 20 are counted.
	hwtest.Eventually(t, 10*time.Second, "the emulator to take every command written", func() bool { return e.Stats().Commands >= sent })
	before := e.Stats().Commands
	if before != sent {
		t.Fatalf("the emulator took %d commands, %d were written", before, sent)
	}
	st := exchangeN(t, a, hw.Command{Mode: hw.ModeIdle}, 20)
	hwtest.Eventually(t, 10*time.Second, "the emulator to take the 20 commands", func() bool { return e.Stats().Commands-before >= 20 })
	if e.Stats().Commands-before != 20 || st.ForceN != (hw.Vec3{}) {
		t.Errorf("after the faults stop the arm should follow every command: %d commands, force %v", e.Stats().Commands-before, st.ForceN)
	}
}

func TestArmStalledReplyFailsWithinMisses(t *testing.T) {
	e, path := startEmulator(t, emulator.Options{Index: 40})
	a := openArm(t, path, driver.ArmOptions{ReplyTimeout: 100 * time.Millisecond, MaxMisses: 3})
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
	// End on an answered exchange, so the stall starts the miss count.
	for i := 0; i < 100; i++ {
		before := a.Missed()
		exchangeN(t, a, cmd, 1)
		if a.Missed() == before {
			break
		}
	}
	e.Stall(1 << 30)
	var st hw.State
	var err error
	calls := 0
	for calls < 10 && err == nil {
		err = a.Exchange(&cmd, &st)
		calls++
	}
	if !errors.Is(err, driver.ErrNoReply) || calls != 3 {
		t.Fatalf("after %d stalled exchanges err = %v; want ErrNoReply at the 3rd", calls, err)
	}
	// The driver sent a zero force on the error, and the stalled firmware
	// still applied it: commands are sticky.
	// The zero force was written without waiting for a reply, so the
	// emulator may not have read it yet: poll, bounded.
	hwtest.Eventually(t, 10*time.Second, "the firmware to hold zero force after the error", func() bool { return e.Stats().LastForce == (hw.Vec3{}) })
	// The device answers again: the same driver recovers.
	e.Stall(0)
	if err := a.Halt(); err != nil {
		t.Fatalf("Halt: %v", err)
	}
	exchangeN(t, a, cmd, 5)
}

// A firmware that hung and recovers answers everything the host sent it
// meanwhile (the loop's forces, the reopen's wake-ups) before the wake-up
// that reopens it: the open waits that stream out instead of spending its
// attempts inside it.
func TestArmOpensAsAHungFirmwareAnswersItsBacklog(t *testing.T) {
	e, path := startEmulator(t, emulator.Options{Index: 45})
	// Each reply 2 ms apart: the backlog below streams for about 160 ms,
	// far longer than five attempts that each read one misaligned reply.
	e.SetFaults(emulator.Faults{Hung: true, Latency: 2 * time.Millisecond})
	p, err := serial.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var backlog []byte
	for i := range 80 {
		backlog = wire.AppendForce(backlog, hw.Vec3{Z: float64(i%3) / 10})
		if i%20 == 0 {
			backlog = wire.AppendWake(backlog)
		}
	}
	if _, err := p.Write(backlog); err != nil {
		t.Fatal(err)
	}
	e.SetFaults(emulator.Faults{Latency: 2 * time.Millisecond})
	a, err := driver.OpenArm(p, driver.ArmOptions{Path: path, ReplyTimeout: testReplyTimeout, HaltTimeout: testReplyTimeout})
	if err != nil {
		p.Close()
		t.Fatalf("OpenArm as the firmware answers its backlog: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	if info := a.Info(); info.ID != hexID(e.ID()) {
		t.Errorf("Info().ID = %s, want %s", info.ID, hexID(e.ID()))
	}
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
	exchangeN(t, a, cmd, 5)
}

// A missed reply repeats the arm's last state, but not its force: the
// state says the force just sent, which the firmware holds once it takes
// it (a loop's zero after a stall, not the 1 N of the last answered tick:
// tourhw2 read 1 N in frames for 500 ms while the arm held 0 N).
func TestArmMissedReplyShowsTheForceSent(t *testing.T) {
	e, path := startEmulator(t, emulator.Options{Index: 41})
	a := openArm(t, path, driver.ArmOptions{ReplyTimeout: 50 * time.Millisecond, MaxMisses: 100})
	push := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
	if st := exchangeN(t, a, push, 3); st.ForceN != push.ForceN {
		t.Fatalf("answered state's force %v, want %v", st.ForceN, push.ForceN)
	}
	e.Stall(1 << 30)
	for _, tc := range []struct {
		name string
		cmd  hw.Command
		want hw.Vec3
	}{
		{"idle after the stall", hw.Command{}, hw.Vec3{}},
		{"zero force", hw.Command{Mode: hw.ModeForce}, hw.Vec3{}},
		{"a force again", push, push.ForceN},
		{"position mode", hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{Y: 0.1}}, hw.Vec3{}},
	} {
		var st hw.State
		missed := a.Missed()
		if err := a.Exchange(&tc.cmd, &st); err != nil {
			t.Fatalf("%s: Exchange: %v", tc.name, err)
		}
		if a.Missed() == missed {
			t.Fatalf("%s: the stalled arm's reply was not missed", tc.name)
		}
		if st.ForceN != tc.want {
			t.Errorf("%s: missed reply's state has force %v, want %v (the force sent)", tc.name, st.ForceN, tc.want)
		}
	}
}

func TestArmUnplugMidStream(t *testing.T) {
	e, path := startEmulator(t, emulator.Options{Index: 50})
	a := openArm(t, path, driver.ArmOptions{ReplyTimeout: 50 * time.Millisecond})
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
	exchangeN(t, a, cmd, 10)
	if err := e.Unplug(); err != nil {
		t.Fatal(err)
	}
	var st hw.State
	var err error
	for calls := 0; calls < 10 && err == nil; calls++ {
		err = a.Exchange(&cmd, &st)
	}
	if err == nil {
		t.Fatal("Exchange kept succeeding after unplug")
	}
	// The port no longer writes, so Halt must say the zero force was not sent.
	if err := a.Halt(); err == nil {
		t.Error("Halt after unplug returned nil; it must report that no zero force was sent")
	}
	if err := a.Close(); err != nil && !errors.Is(err, driver.ErrClosed) {
		t.Logf("Close after unplug: %v", err)
	}
	if err := a.Exchange(&cmd, &st); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Exchange after Close = %v, want ErrClosed", err)
	}
}

func TestArmReplugKeepsIdentity(t *testing.T) {
	e1, path1 := startEmulator(t, emulator.Options{Index: 60})
	a1 := openArm(t, path1, driver.ArmOptions{})
	first := a1.Info()
	e1.Unplug()
	a1.Close()

	_, path2 := startEmulator(t, emulator.Options{Index: 60})
	a2 := openArm(t, path2, driver.ArmOptions{})
	again := a2.Info()
	if again.ID != first.ID || again.UUID != first.UUID {
		t.Errorf("replugged arm is %s/%s, was %s/%s", again.ID, again.UUID, first.ID, first.UUID)
	}
	if again.Port != path2 {
		t.Errorf("Port = %q, want %q", again.Port, path2)
	}
}

func TestArmCloseAndHaltSendZeroForce(t *testing.T) {
	tests := []struct {
		name string
		stop func(a *driver.Arm) error
	}{
		{"halt", (*driver.Arm).Halt},
		{"close", (*driver.Arm).Close},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, path := startEmulator(t, emulator.Options{Index: 70 + i})
			a := openArm(t, path, driver.ArmOptions{})
			exchangeN(t, a, hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 1, Z: 3}}, 3)
			if f := e.Stats().LastForce; f != (hw.Vec3{X: 1, Z: 3}) {
				t.Fatalf("firmware holds %v, want the commanded force", f)
			}
			if err := tc.stop(a); err != nil {
				t.Fatal(err)
			}
			hwtest.Eventually(t, 10*time.Second, "the firmware to hold zero force after "+tc.name, func() bool { return e.Stats().LastForce == (hw.Vec3{}) })
		})
	}
}

func TestArmConfigureReachesFirmware(t *testing.T) {
	e, path := startEmulator(t, emulator.Options{Index: 80})
	a := openArm(t, path, driver.ArmOptions{})
	want := hw.Settings{LeftHanded: true, TorqueScaling: false, GravityCompensation: true, GravityScale: 1.5}
	if err := a.Configure(want); err != nil {
		t.Fatal(err)
	}
	// The codes travel with the next exchanges, one per tick.
	exchangeN(t, a, hw.Command{Mode: hw.ModeIdle}, 3)
	if got := e.Stats().Settings; got != want {
		t.Errorf("firmware settings %+v, want %+v", got, want)
	}
	if pending, refused := a.ConfigState(); pending != 0 || refused != nil {
		t.Errorf("after three exchanges: %d codes pending, refused %v; want all acknowledged", pending, refused)
	}
}

// TestArmIgnoredConfigurationCostsNoTick: a firmware that acknowledges no
// configuration code still gets every force frame, one per exchange, and no
// reply is missed; the codes are retried with backoff (far fewer sends than
// ticks) and applied all the same. A normal arm is the reference.
func TestArmIgnoredConfigurationCostsNoTick(t *testing.T) {
	const ticks = 600
	run := func(t *testing.T, index int, f emulator.Faults) (emulator.Stats, *driver.Arm) {
		e, path := startEmulator(t, emulator.Options{Index: index, Faults: f})
		a := openArm(t, path, driver.ArmOptions{})
		before := e.Stats().ForceFrames // the wake-up's zero force
		push := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
		var st hw.State
		for i := 0; i < ticks; i++ {
			if i%100 == 0 {
				// New settings every 100 ticks, as a user clicking
				// through the config API would send them.
				s := hw.Settings{LeftHanded: i%200 == 0, TorqueScaling: true, GravityCompensation: true, GravityScale: 1 + float64(i)/1000}
				if err := a.Configure(s); err != nil {
					t.Fatalf("Configure at tick %d: %v", i, err)
				}
			}
			if err := a.Exchange(&push, &st); err != nil {
				t.Fatalf("Exchange %d: %v", i, err)
			}
		}
		got := e.Stats()
		got.ForceFrames -= before
		return got, a
	}
	normal, na := run(t, 110, emulator.Faults{})
	deaf, da := run(t, 111, emulator.Faults{DropConfigAcks: true})
	for _, c := range []struct {
		name string
		st   emulator.Stats
		arm  *driver.Arm
	}{{"normal", normal, na}, {"acks dropped", deaf, da}} {
		if c.st.ForceFrames != ticks || c.arm.Missed() != 0 {
			t.Errorf("%s: the arm got %d force frames for %d ticks and the host missed %d replies; want every tick, none missed", c.name, c.st.ForceFrames, ticks, c.arm.Missed())
		}
	}
	want := hw.Settings{LeftHanded: false, TorqueScaling: true, GravityCompensation: true, GravityScale: 1.5}
	if deaf.Settings != want || normal.Settings != want {
		t.Errorf("firmware settings: normal %+v, acks dropped %+v; want %+v on both", normal.Settings, deaf.Settings, want)
	}
	if deaf.AcksDropped == 0 || deaf.Configs >= ticks/4 {
		t.Errorf("acks dropped: %d codes sent (%d acks withheld) over %d ticks; want retries, with backoff", deaf.Configs, deaf.AcksDropped, ticks)
	}
	if pending, _ := da.ConfigState(); pending == 0 {
		t.Error("the deaf firmware acknowledged nothing, yet no code is pending")
	}
	if pending, _ := na.ConfigState(); pending != 0 {
		t.Errorf("the normal firmware acknowledged everything, yet %d codes are pending", pending)
	}
}

func TestArmJointModes(t *testing.T) {
	_, path := startEmulator(t, emulator.Options{Index: 90})
	a := openArm(t, path, driver.ArmOptions{})
	st := exchangeN(t, a, hw.Command{Mode: hw.ModeAngle, AnglesDeg: hw.Angles3{A0: 0, A1: 20, A2: 40}}, 5)
	if st.AnglesDeg == (hw.Angles3{}) {
		t.Errorf("angle mode reported no joint angles: %+v", st)
	}
}

// A real arm has its family's figures, which the wire does not carry:
// the device type number it reports at wake-up picks them, as it picks
// config.type (docs/protocol.md, "Device families"), so a Minverse is
// clamped to its 4 N and centred on its own workspace as a simulated one
// is, and an unknown number is an Inverse3. Figures the caller gives win.
func TestArmFiguresFollowItsFamily(t *testing.T) {
	inverse3 := hw.Vec3{X: 0, Y: 0.15, Z: 0.1}
	for _, tt := range []struct {
		name   string
		model  uint8
		opts   driver.ArmOptions
		force  float64
		centre hw.Vec3
	}{
		{"no model", 0, driver.ArmOptions{}, 10, inverse3},
		{"inverse3", 4, driver.ArmOptions{}, 10, inverse3},
		{"inverse3x", 5, driver.ArmOptions{}, 10, inverse3},
		{"minverse", 6, driver.ArmOptions{}, 4, hw.Vec3{X: 0, Y: 0.12, Z: 0.08}},
		{"unknown", 99, driver.ArmOptions{}, 10, inverse3},
		{"minverse, figures given", 6, driver.ArmOptions{MaxForceN: 3, WorkspaceCenterM: hw.Vec3{Y: 0.1}}, 3, hw.Vec3{Y: 0.1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := hwtest.NewArmPort(0x049D, [16]byte{1})
			p.Model = tt.model
			o := tt.opts
			o.Path = "mem"
			a, err := driver.OpenArm(p, o)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if info := a.Info(); info.Model != tt.model || info.MaxForceN != tt.force || info.WorkspaceCenterM != tt.centre {
				t.Fatalf("info: model %d, %g N around %v; want model %d, %g N around %v", info.Model, info.MaxForceN, info.WorkspaceCenterM, tt.model, tt.force, tt.centre)
			}
		})
	}
}

func TestArmExchangeDoesNotAllocate(t *testing.T) {
	p := hwtest.NewArmPort(0x049D, [16]byte{1})
	a, err := driver.OpenArm(p, driver.ArmOptions{Path: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	cmds := []hw.Command{
		{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}},
		{Mode: hw.ModePosition, PositionM: hw.Vec3{Z: 0.1}},
		{Mode: hw.ModeAngle},
		{Mode: hw.ModeIdle},
	}
	var st hw.State
	for _, cmd := range cmds {
		allocs := testing.AllocsPerRun(1000, func() {
			if err := a.Exchange(&cmd, &st); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("Exchange(%v) allocates %v times per tick, want 0", cmd.Mode, allocs)
		}
	}
	// Ticks that carry configuration codes (and their acks) allocate
	// nothing either: Configure before every run of three exchanges.
	allocs := testing.AllocsPerRun(300, func() {
		if err := a.Configure(hw.Settings{GravityCompensation: true, GravityScale: 1}); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := a.Exchange(&cmds[0], &st); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("Configure and the exchanges carrying its codes allocate %v times, want 0", allocs)
	}
	if pending, refused := a.ConfigState(); pending != 0 || refused != nil {
		t.Errorf("after the exchanges: %d codes pending, refused %v", pending, refused)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if p.LastForce != (hw.Vec3{}) {
		t.Errorf("Close left force %v in firmware", p.LastForce)
	}
}

// The whole tick path through a real pty (go.bug.st/serial on the driver
// side, the emulator and sim physics on the other) does not allocate.
// AllocsPerRun counts every goroutine, so this pins the emulator too.
func TestArmExchangeOverPTYDoesNotAllocate(t *testing.T) {
	_, path := startEmulator(t, emulator.Options{Index: 110})
	a := openArm(t, path, driver.ArmOptions{})
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 0.5}}
	var st hw.State
	allocs := testing.AllocsPerRun(200, func() {
		if err := a.Exchange(&cmd, &st); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Exchange over a pty allocates %v times per tick, want 0", allocs)
	}
}

func TestArmNeverSendsNonFiniteCommands(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		cmd  hw.Command
	}{
		{"NaN force", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: nan}}},
		{"infinite force", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: -inf}}},
		{"NaN position", hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{Y: nan}}},
		{"infinite angle", hw.Command{Mode: hw.ModeAngle, AnglesDeg: hw.Angles3{A1: inf}}},
		{"force beyond float32", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Y: 1e39}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := hwtest.NewArmPort(0x0101, [16]byte{2})
			a, err := driver.OpenArm(p, driver.ArmOptions{Path: "mem"})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			var st hw.State
			exchangeN(t, a, hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}, 1)
			if err := a.Exchange(&tc.cmd, &st); err != nil {
				t.Fatal(err)
			}
			if p.LastForce != (hw.Vec3{}) || st.ForceN != (hw.Vec3{}) {
				t.Errorf("firmware holds %v, state says %v; want a zero force instead", p.LastForce, st.ForceN)
			}
		})
	}
}

// TestArmTinyCommandValuesReachTheDevice: a command whose components are
// tiny but not zero (a rotated force's 1e-17 residue, a weak spring near
// its anchor) must reach the firmware and be answered; the codec reads
// values below 1e-9 as line noise, and such frames used to be dropped by
// the emulated firmware, so the arm missed every reply and failed.
func TestArmTinyCommandValuesReachTheDevice(t *testing.T) {
	tests := []struct {
		name string
		cmd  hw.Command
		want hw.Vec3 // the force the firmware holds after it
	}{
		{"force", hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 6e-17, Y: -1e-12, Z: 1}}, hw.Vec3{Z: 1}},
		{"position", hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{X: 1e-12, Y: 0.15, Z: 0.1}}, hw.Vec3{}},
		{"torques", hw.Command{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A0: 1e-15, A1: 5, A2: -1e-20}}, hw.Vec3{}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, path := startEmulator(t, emulator.Options{Index: 120 + i})
			// The default reply timeout: every reply must come, and
			// a starved emulator may take over 100 ms under load.
			a := openArm(t, path, driver.ArmOptions{MaxMisses: 3})
			exchangeN(t, a, hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 1}}, 1)
			exchangeN(t, a, tc.cmd, 10)
			if a.Missed() != 0 {
				t.Errorf("%d replies missed", a.Missed())
			}
			if f := e.Stats().LastForce; f != tc.want {
				t.Errorf("firmware holds %+v, want %+v", f, tc.want)
			}
		})
	}
}

// shortOncePort is a real serial port whose write number n takes only
// the first keep bytes, as a write a signal interrupts does.
type shortOncePort struct {
	serial.Port
	writes, n, keep int
}

func (p *shortOncePort) Write(b []byte) (int, error) {
	p.writes++
	if p.writes == p.n && len(b) > p.keep {
		return p.Port.Write(b[:p.keep])
	}
	return p.Port.Write(b)
}

// TestArmCompletesAShortWrite: a write that takes part of a frame is
// finished, not failed: failing it left the device the cut frame, which
// the zero force sent after the error completed (a firmware that reads
// fixed lengths applies the mix), and the loop disarmed the session's
// force over a tick the port had in fact carried.
func TestArmCompletesAShortWrite(t *testing.T) {
	for i, keep := range []int{1, 5, 12} {
		t.Run(strconv.Itoa(keep)+" bytes taken", func(t *testing.T) {
			e, path := startEmulator(t, emulator.Options{Index: 130 + i})
			p, err := serial.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			port := &shortOncePort{Port: p, keep: keep}
			a, err := driver.OpenArm(port, driver.ArmOptions{Path: path, ReplyTimeout: testReplyTimeout, HaltTimeout: testReplyTimeout})
			if err != nil {
				t.Fatalf("OpenArm: %v", err)
			}
			defer a.Close()
			port.n = port.writes + 2
			before := e.Stats().Commands
			cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{X: 1, Z: 3}}
			exchangeN(t, a, cmd, 3)
			if port.writes < port.n {
				t.Fatal("the short write did not happen")
			}
			hwtest.Eventually(t, 10*time.Second, "the firmware to take the 3 commands", func() bool { return e.Stats().Commands-before >= 3 })
			if got := e.Stats().Commands - before; got != 3 {
				t.Errorf("the firmware took %d commands, want 3", got)
			}
			if f := e.Stats().LastForce; f != cmd.ForceN {
				t.Errorf("firmware holds %+v, want %+v", f, cmd.ForceN)
			}
		})
	}
}

// stallingPort is an arm whose writes, once stalled, fail as hw/serial's
// do when the device takes no data for serial.WriteTimeout.
type stallingPort struct {
	*hwtest.ArmPort
	stalled bool
}

func (p *stallingPort) Write(b []byte) (int, error) {
	if p.stalled {
		return 0, fmt.Errorf("hw/serial: write: 0 of %d bytes written in %v: %w", len(b), serial.WriteTimeout, serial.ErrWriteStalled)
	}
	return p.ArmPort.Write(b)
}

// TestArmThatTakesNoDataIsGone: an arm whose firmware hung with its USB link
// up stops taking commands; once the port's output buffer is full each
// write fails after serial.WriteTimeout. That is no device the loop can
// drive again without reopening it: the error wraps hw.ErrGone, so the
// loop fails it at once and the scan reopens it, instead of 50 failed
// exchanges of several write timeouts each (seconds) with the arm listed.
func TestArmThatTakesNoDataIsGone(t *testing.T) {
	p := &stallingPort{ArmPort: hwtest.NewArmPort(0x049D, [16]byte{1})}
	a, err := driver.OpenArm(p, driver.ArmOptions{Path: "mem"})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}
	var st hw.State
	if err := a.Exchange(&cmd, &st); err != nil {
		t.Fatal(err)
	}
	p.stalled = true
	err = a.Exchange(&cmd, &st)
	if !errors.Is(err, hw.ErrGone) || !errors.Is(err, serial.ErrWriteStalled) {
		t.Errorf("exchange with an arm that takes no data: %v; want an error wrapping hw.ErrGone and serial.ErrWriteStalled", err)
	}
}

// TestOutOfRangeCommandsReachTheArm: a command beyond the range the wire's
// frames carry (a torque of 2e7 N·mm, a position 11 m away) went out as
// is; the emulated firmware, which checks plausibility as the frame table
// does, took it for noise, kept its previous (sticky) command and did not
// answer, so every such tick was a missed reply. The command now reaches
// the arm, saturated at the frame's bound, and gets its reply.
func TestOutOfRangeCommandsReachTheArm(t *testing.T) {
	tests := []struct {
		name string
		cmd  hw.Command
	}{
		{"torque", hw.Command{Mode: hw.ModeTorque, TorquesNmm: hw.Angles3{A0: 2e7}}},
		{"position", hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{X: 11, Y: 0.15, Z: 0.1}}},
		{"angles", hw.Command{Mode: hw.ModeAngle, AnglesDeg: hw.Angles3{A1: -2e5}}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, path := startEmulator(t, emulator.Options{Index: 70 + i})
			a := openArm(t, path, driver.ArmOptions{})
			commands := e.Stats().Commands
			exchangeN(t, a, tc.cmd, 3)
			if a.Missed() != 0 || e.Stats().Commands != commands+3 {
				t.Errorf("3 exchanges: %d replies missed, %d commands taken by the arm; want 0 and 3", a.Missed(), e.Stats().Commands-commands)
			}
		})
	}
}

// deadPort is a serial port whose every call fails, as one whose device
// was pulled while it opened.
type deadPort struct{ writes int }

func (p *deadPort) Read([]byte) (int, error)           { return 0, serial.ErrDisconnected }
func (p *deadPort) Write([]byte) (int, error)          { p.writes++; return 0, serial.ErrDisconnected }
func (p *deadPort) SetReadTimeout(time.Duration) error { return nil }
func (p *deadPort) ResetInputBuffer() error            { return nil }
func (p *deadPort) Close() error                       { return nil }

// TestArmWakeUpStopsOnAPortError: a port that fails stops the wake-up at
// once (retrying cannot help), and the error says how many attempts were
// made, not how many were allowed.
func TestArmWakeUpStopsOnAPortError(t *testing.T) {
	p := &deadPort{}
	_, err := driver.OpenArm(p, driver.ArmOptions{Path: "/dev/dead", WakeAttempts: 5, ReplyTimeout: testReplyTimeout})
	if !errors.Is(err, serial.ErrDisconnected) {
		t.Fatalf("OpenArm error = %v, want the port's", err)
	}
	if p.writes != 1 {
		t.Errorf("%d wake-ups written to a failing port, want 1", p.writes)
	}
	if !strings.Contains(err.Error(), "after 1 attempt:") {
		t.Errorf("OpenArm error %q does not say it made one attempt", err)
	}
}

// TestArmThatStopsReadingGetsNoStaleForce: an arm whose firmware stops
// taking commands but still sends state (its USB OUT side hung) fills the
// port's output buffer with forces until a write stalls and the driver
// fails. Those forces stayed queued, and the zero force the driver sends
// on failure found no room: when the arm took data again it received the
// old forces and kept the last one (commands are sticky). Now the stall
// drops them and the zero force goes in; the arm reads, of the forces
// from before the stall, only what the pseudo-terminal's master had
// already taken into its own line buffer (no flush reaches it; a real port
// has no such buffer), and the zero force last.
func TestArmThatStopsReadingGetsNoStaleForce(t *testing.T) {
	pty, err := emulator.OpenPTY()
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	defer pty.Close()
	p, err := serial.Open(pty.Path)
	if err != nil {
		t.Fatal(err)
	}
	// The device side, by hand: answer the wake-up and the first state,
	// then stop reading and stream state frames.
	state := wire.AppendEndEffectorState(nil, hw.ArmWorkspaceCenterM(), hw.Vec3{})
	var stop atomic.Bool
	streamed := make(chan error, 1)
	go func() {
		streamed <- func() error {
			if err := pty.Master.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
				return err
			}
			var b [wire.MaxFrameLen]byte
			if _, err := io.ReadFull(pty.Master, b[:1]); err != nil {
				return fmt.Errorf("wake-up: %w", err)
			}
			if _, err := pty.Master.Write(wire.AppendWakeReply(nil, wire.WakeReply{ID: 0x0AB1, UUID: [16]byte{7}})); err != nil {
				return err
			}
			if _, err := io.ReadFull(pty.Master, b[:13]); err != nil {
				return fmt.Errorf("first force: %w", err)
			}
			for !stop.Load() {
				if err := pty.Master.SetWriteDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
					return err
				}
				if _, err := pty.Master.Write(state); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
					return err
				}
			}
			return nil
		}()
	}()
	a, err := driver.OpenArm(p, driver.ArmOptions{Path: pty.Path, ReplyTimeout: testReplyTimeout, HaltTimeout: testReplyTimeout})
	if err != nil {
		t.Fatalf("OpenArm: %v", err)
	}
	defer a.Close()

	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 5}}
	var st hw.State
	exchanges := 0
	for {
		err := a.Exchange(&cmd, &st)
		if errors.Is(err, serial.ErrWriteStalled) {
			break
		}
		if err != nil {
			t.Fatalf("exchange %d: %v; want exchanges until a write stalls", exchanges, err)
		}
		if exchanges++; exchanges > 1<<17 {
			t.Fatal("1.7 MB of forces went into a port nobody reads without a stall")
		}
	}
	stop.Store(true)
	if err := <-streamed; err != nil {
		t.Fatalf("the device side: %v", err)
	}
	queued := exchanges * len(wire.AppendForce(nil, cmd.ForceN))

	// The arm takes data again: read up to the zero force.
	zero := wire.AppendForce(nil, hw.Vec3{})
	var got []byte
	buf := make([]byte, 64<<10)
	if err := pty.Master.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for !bytes.HasSuffix(got, zero) {
		n, err := pty.Master.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("the arm read %d bytes of the %d queued before the stall and no zero force after them: %v", len(got), queued, err)
		}
	}
	if stale := len(got) - len(zero); stale >= 4096 {
		t.Errorf("the arm read %d of the %d bytes of forces queued before the stall; want at most the pseudo-terminal master's line buffer (4095)", stale, queued)
	}
}
