package loop

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hid"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
)

// silentDeviceFailBound is how soon after a serial arm falls silent its
// loop must fail it: the driver gives up after 20 ms of missed replies
// (hw.ReplyBudget), and the loop fails the device once its failed
// exchanges have lasted FailAfterNs (500 ms, as the service runs it). The
// bound is generous for a loaded machine; a Halt that waited its full
// timeout after every failed exchange took 2.7 s.
const silentDeviceFailBound = 1500 * time.Millisecond

// failClock notes when the loop emitted its first EventFailed, on the
// loop's own thread: the test goroutine that waits for the event may be
// scheduled late on a loaded machine, and its late look is not the loop's.
type failClock struct{ atNs atomic.Int64 }

func (c *failClock) note(e Event) {
	if e.Kind == EventFailed {
		c.atNs.CompareAndSwap(0, time.Now().UnixNano())
	}
}

// since returns how long after start the loop failed the device.
func (c *failClock) since(start time.Time) time.Duration {
	return time.Unix(0, c.atNs.Load()).Sub(start)
}

// runWithForce runs drv's device on its own locked thread at 1 kHz with a
// session's 2 N along z, until reached says the force reached the device
// (named where), and returns the device, its event log and when it failed.
func runWithForce(t *testing.T, drv hw.Driver, where string, reached func() bool) (*Device, *eventLog, *failClock) {
	t.Helper()
	log := &eventLog{}
	failed := &failClock{}
	// Failed as the service fails its devices (after half a second of
	// failed exchanges, actors' silentDeviceFailAfter), not after the 50
	// exchanges alone: on a loaded machine the emulator, in this process,
	// misses 50 ms of replies before the force is first written.
	onEvent := func(e Event) { failed.note(e); log.add(e) }
	d := NewDevice(drv, DeviceOptions{PeriodNs: int64(time.Millisecond), FailAfterNs: int64(500 * time.Millisecond), OnEvent: onEvent})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- RunLocked(ctx, d) }()
	t.Cleanup(func() { cancel(); <-done })
	reg := d.Register()
	reg.Claim(1)
	c := force(0, 0, 2)
	reg.Write(1, 1, SystemClock().Now()+int64(time.Minute), &c, nil)
	hwtest.Eventually(t, 10*time.Second, "the session's force to reach "+where, reached)
	return d, log, failed
}

// TestSerialArmThatGoesSilentFails runs the real serial driver against the
// firmware emulator on a real pseudo-terminal under a running loop, with a
// session's force applied, and then silences the device: the loop must fail
// it within silentDeviceFailBound, and a device still listening (a stall)
// must be left holding zero force.
func TestSerialArmThatGoesSilentFails(t *testing.T) {
	tests := []struct {
		name    string
		silence func(e *emulator.Emulator)
		// listening is true when the device still takes commands, so
		// it must end holding zero force.
		listening bool
		// gone is true when the port says the device went away: the
		// failure wraps hw.ErrGone, and no run of misses precedes it.
		gone bool
	}{
		{"replies stall", func(e *emulator.Emulator) { e.Stall(1 << 30) }, true, false},
		{"unplugged", func(e *emulator.Emulator) { _ = e.Unplug() }, false, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, path, err := emulator.StartPTY(emulator.Options{Index: 300 + i})
			if err != nil {
				hwtest.SkipIfUnsupported(t, err)
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			p, err := serial.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			arm, err := driver.OpenArm(p, driver.ArmOptions{Path: path, PeriodS: 0.001})
			if err != nil {
				t.Fatalf("OpenArm: %v", err)
			}
			t.Cleanup(func() { arm.Close() })
			d, log, failed := runWithForce(t, arm, "the firmware", func() bool { return e.Stats().LastForce.Z > 1.9 })

			start := time.Now()
			tc.silence(e)
			// The failure event is emitted just after Failed turns true:
			// wait for the event, which is what the service acts on.
			hwtest.Eventually(t, 30*time.Second, "the loop to fail the silent arm", func() bool { return log.count(EventFailed) > 0 })
			if took := failed.since(start); took > silentDeviceFailBound {
				t.Errorf("the loop failed the silent arm after %v, want within %v", took, silentDeviceFailBound)
			}
			if !d.Failed() {
				t.Error("a failure event came but the device does not report Failed")
			}
			if failed := log.first(EventFailed); errors.Is(failed.Err, hw.ErrGone) != tc.gone {
				t.Errorf("failure %v: wraps hw.ErrGone %v, want %v", failed.Err, !tc.gone, tc.gone)
			}
			if tc.listening {
				hwtest.Eventually(t, 10*time.Second, "the stalled firmware to hold zero force", func() bool { return e.Stats().LastForce == (hw.Vec3{}) })
			}
		})
	}
}

// TestRawHIDBoardThatGoesSilentFails is the same for a RawHID board (the
// in-memory board of hw/hid: HID has no pseudo-terminal): its Halt waited
// its 250 ms identification timeout after every failed exchange, so a
// silent board stayed listed for 12 s.
func TestRawHIDBoardThatGoesSilentFails(t *testing.T) {
	board := hid.NewFake(hid.Info{ID: 0xB0A3, Model: 1, UUID: [16]byte{0xde, 0xad, 15: 3}})
	drv, err := hid.NewDriver(board, hid.Options{Path: "hid:test", PeriodS: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drv.Close() })
	_, log, failed := runWithForce(t, drv, "the board", func() bool { return board.ForceN().Z > 1.9 })

	start := time.Now()
	board.Stall(1 << 30)
	hwtest.Eventually(t, 60*time.Second, "the loop to fail the silent board", func() bool { return log.count(EventFailed) > 0 })
	if took := failed.since(start); took > silentDeviceFailBound {
		t.Errorf("the loop failed the silent board after %v, want within %v", took, silentDeviceFailBound)
	}
	hwtest.Eventually(t, 10*time.Second, "the stalled board to hold zero force", func() bool { return board.ForceN() == (hw.Vec3{}) })
}
