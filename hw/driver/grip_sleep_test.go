package driver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/hw/sim"
)

// A client must be able to test its handling of a grip that goes quiet
// while its dongle stays plugged in (asleep, switched off, out of range):
// the emulated grip sends no status while Faults.GripAsleep is set, the
// driver says the grip is stale, and once it wakes its status flows again
// through the same driver. (A dongle pulled out is Unplug:
// TestGripThroughPTY.)
func TestEmulatedGripSleepsAndWakes(t *testing.T) {
	e, path := startEmulator(t, emulator.Options{Kind: hw.KindGrip, Index: 6, Motion: sim.MotionCircle})
	g := openGrip(t, path, driver.GripOptions{StaleAfter: 200 * time.Millisecond})
	var st hw.State
	exchangeUntil := func(what string, done func(error) bool) {
		t.Helper()
		hwtest.Eventually(t, 10*time.Second, what, func() bool {
			err := g.Exchange(nil, &st)
			if err != nil && !errors.Is(err, driver.ErrStale) {
				t.Fatalf("Exchange: %v, want nil or ErrStale", err)
			}
			return done(err)
		})
	}
	exchangeUntil("the awake grip's status", func(err error) bool { return err == nil && st.Status&hw.StatusConnected != 0 })
	e.SetFaults(emulator.Faults{GripAsleep: true})
	exchangeUntil("the sleeping grip to go stale", func(err error) bool { return errors.Is(err, driver.ErrStale) })
	asleep := st.Orientation
	e.SetFaults(emulator.Faults{})
	exchangeUntil("the woken grip's status", func(err error) bool { return err == nil && st.Orientation != asleep })
}

// A grip asleep at open sends no status, which tells nothing of its link:
// opened to be told from its stream, it fails with ErrNoGripStatus, which
// it was read as wireless, whatever it is; named wired it opens (and goes
// stale until it wakes, as any grip asleep). Awake, it opens as the wired
// grip it is.
func TestAsleepGripIsNotGuessedWireless(t *testing.T) {
	e, path := startEmulator(t, emulator.Options{Family: sim.FamilyVerseGrip, Index: 8, Faults: emulator.Faults{GripAsleep: true}})
	p, err := serial.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := driver.OpenGrip(p, driver.GripOptions{Path: path, DetectTimeout: 300 * time.Millisecond, InfoTimeout: testReplyTimeout})
	if err == nil {
		g.Close()
		t.Fatalf("OpenGrip of the asleep grip opened it as %v; want ErrNoGripStatus", g.Info().Link)
	}
	if !errors.Is(err, driver.ErrNoGripStatus) {
		t.Fatalf("OpenGrip of the asleep grip: %v, want ErrNoGripStatus", err)
	}
	named := openGrip(t, path, driver.GripOptions{Link: hw.LinkWired, InfoTimeout: testReplyTimeout})
	if got := named.Info().Link; got != hw.LinkWired {
		t.Errorf("named wired: Info().Link = %v", got)
	}
	named.Close()
	e.SetFaults(emulator.Faults{})
	if got := openGrip(t, path, driver.GripOptions{InfoTimeout: testReplyTimeout}).Info().Link; got != hw.LinkWired {
		t.Errorf("awake: Info().Link = %v, want wired", got)
	}
}
