package loop

import (
	"context"
	"errors"
	"sync"
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

// setupAttempts bounds how often runWithForce opens a device afresh.
const setupAttempts = 3

// openedDevice is a device runWithForce may run: its driver, whether the
// session's force has reached the device, and how to close it once its
// loop has stopped.
type openedDevice struct {
	drv     hw.Driver
	reached func() bool
	close   func()
}

// runWithForce opens a device with open and runs it on its own locked
// thread at 1 kHz with a session streaming 2 N along z, until reached says
// the force reached the device (named where). It returns the device, its
// event log and when it failed; the session streams on until the test ends.
//
// The session streams as a client does, rather than writing once: a
// driver error halts the device and disarms the command in force (only a
// new Write re-arms it, see the package doc), and on a loaded machine the
// device under test, served in this process, answers late now and then.
// If its answers stay late until the loop fails it, before the force ever
// got there, the device is closed and another opened: the tests using
// this need a device holding a force when they silence it.
func runWithForce(t *testing.T, where string, open func(t *testing.T) openedDevice) (*Device, *eventLog, *failClock) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		dev := open(t)
		d, log, failed, stop := startWithForce(dev.drv)
		var once sync.Once
		closeAll := func() { once.Do(func() { stop(); dev.close() }) }
		t.Cleanup(closeAll)
		hwtest.Eventually(t, 10*time.Second, "the session's force to reach "+where+", or the loop to fail the device",
			func() bool { return dev.reached() || d.Failed() })
		if dev.reached() || !d.Failed() {
			return d, log, failed
		}
		closeAll()
		if attempt == setupAttempts {
			t.Fatalf("the loop failed the device before the session's force reached %s, %d times in a row; last: %v",
				where, setupAttempts, log.first(EventFailed).Err)
		}
		t.Logf("attempt %d: the loop failed the device before the session's force reached %s (its replies came late: a loaded machine?): %v; opening it again",
			attempt, where, log.first(EventFailed).Err)
	}
}

// startWithForce runs drv's device under RunLocked with a session writing
// its force every millisecond; stop ends both and waits for the loop.
func startWithForce(drv hw.Driver) (*Device, *eventLog, *failClock, func()) {
	log := &eventLog{}
	failed := &failClock{}
	// Failed as the service fails its devices (after half a second of
	// failed exchanges, actors' silentDeviceFailAfter), not after the 50
	// exchanges alone: on a loaded machine the emulator, in this process,
	// misses 50 ms of replies before the force is first written.
	onEvent := func(e Event) { failed.note(e); log.add(e) }
	d := NewDevice(drv, DeviceOptions{PeriodNs: int64(time.Millisecond), FailAfterNs: int64(500 * time.Millisecond), OnEvent: onEvent})
	ctx, cancel := context.WithCancel(context.Background())
	loopDone := make(chan error, 1)
	go func() { loopDone <- RunLocked(ctx, d) }()
	reg := d.Register()
	reg.Claim(1)
	quit, sessionDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sessionDone)
		c := force(0, 0, 2)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for seq := uint64(1); ; seq++ {
			reg.Write(1, seq, SystemClock().Now()+int64(time.Minute), &c, nil)
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	stop := func() {
		close(quit)
		<-sessionDone
		cancel()
		<-loopDone
	}
	return d, log, failed, stop
}

// TestSerialArmThatGoesSilentFails runs the real serial driver against the
// firmware emulator on a real pseudo-terminal under a running loop, with a
// session's force applied, and then silences the device: the loop must fail
// it within silentDeviceFailBound, and a device still listening (a stall)
// must be left holding zero force, though its session still commands it.
//
// Before the silence the emulator leaves more replies unanswered than the
// miss budget allows, as it does now and then on a loaded machine: the
// driver error that follows halts the firmware and disarms the session's
// command, and the session's next command must put the force back (a
// session that wrote once lost its force there for good, and the test
// waited for it in vain).
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
			var e *emulator.Emulator
			d, log, failed := runWithForce(t, "the firmware after a hiccup", func(t *testing.T) openedDevice {
				hiccup := &hiccupWatch{}
				em, path, err := emulator.StartPTY(emulator.Options{Index: 300 + i, OnForce: hiccup.note})
				if err != nil {
					hwtest.SkipIfUnsupported(t, err)
					t.Fatal(err)
				}
				p, err := serial.Open(path)
				if err != nil {
					em.Close()
					t.Fatal(err)
				}
				arm, err := driver.OpenArm(p, driver.ArmOptions{Path: path, PeriodS: 0.001})
				if err != nil {
					em.Close()
					t.Fatalf("OpenArm: %v", err)
				}
				e = em
				// Reached once the force is back after a hiccup, as
				// a loaded host or a USB link has: the force on the
				// firmware, then more replies missed than the budget
				// allows, so the loop halts the firmware and disarms
				// the command in force; the session's next command
				// must put the force back.
				reached := func() bool {
					if hiccup.phase.Load() == hiccupOff {
						if em.Stats().LastForce.Z > 1.9 {
							hiccup.start()
							_, misses := hw.ReplyBudget(0.001)
							em.Stall(misses + 5)
						}
						return false
					}
					return hiccup.over()
				}
				return openedDevice{drv: arm, reached: reached, close: func() { arm.Close(); em.Close() }}
			})

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

// hiccupWatch follows the force frames the firmware receives (an
// emulator's OnForce) through a hiccup: once started, it waits for a zero
// force (the driver or the loop halting the firmware) and then for the
// session's force again.
type hiccupWatch struct{ phase atomic.Int32 }

const (
	hiccupOff    = iota // not started
	hiccupHalted        // started: waiting for a zero force
	hiccupZeroed        // zeroed: waiting for the session's force
	hiccupOver          // the force is back
)

func (h *hiccupWatch) start() { h.phase.Store(hiccupHalted) }

func (h *hiccupWatch) over() bool { return h.phase.Load() == hiccupOver }

func (h *hiccupWatch) note(_ time.Time, f hw.Vec3) {
	switch {
	case f == (hw.Vec3{}):
		h.phase.CompareAndSwap(hiccupHalted, hiccupZeroed)
	case f.Z > 1.9:
		h.phase.CompareAndSwap(hiccupZeroed, hiccupOver)
	}
}

// TestRawHIDBoardThatGoesSilentFails is the same for a RawHID board (the
// in-memory board of hw/hid: HID has no pseudo-terminal): its Halt waited
// its 250 ms identification timeout after every failed exchange, so a
// silent board stayed listed for 12 s.
func TestRawHIDBoardThatGoesSilentFails(t *testing.T) {
	var board *hid.Fake
	_, log, failed := runWithForce(t, "the board", func(t *testing.T) openedDevice {
		b := hid.NewFake(hid.Info{ID: 0xB0A3, Model: 1, UUID: [16]byte{0xde, 0xad, 15: 3}})
		drv, err := hid.NewDriver(b, hid.Options{Path: "hid:test", PeriodS: 0.001})
		if err != nil {
			t.Fatal(err)
		}
		board = b
		return openedDevice{drv: drv, reached: func() bool { return b.ForceN().Z > 1.9 }, close: func() { drv.Close() }}
	})

	start := time.Now()
	board.Stall(1 << 30)
	hwtest.Eventually(t, 60*time.Second, "the loop to fail the silent board", func() bool { return log.count(EventFailed) > 0 })
	if took := failed.since(start); took > silentDeviceFailBound {
		t.Errorf("the loop failed the silent board after %v, want within %v", took, silentDeviceFailBound)
	}
	hwtest.Eventually(t, 10*time.Second, "the stalled board to hold zero force", func() bool { return board.ForceN() == (hw.Vec3{}) })
}
