package driver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
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
