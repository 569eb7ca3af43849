package discovery_test

import (
	"os"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// openFDs counts this process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count descriptors here: %v", err)
	}
	return len(ents)
}

// TestHotPlugCyclesLeakNoDescriptors: an arm plugged in, driven, unplugged
// mid-stream and plugged back in 20 times leaves the process holding no
// more descriptors than before (goroutines: TestMain's check). A lab arm
// on a loose cable must not exhaust the service's descriptors.
func TestHotPlugCyclesLeakNoDescriptors(t *testing.T) {
	clock := newClock()
	var current string
	w := replugWatcher(clock, &current)
	rec := &recorder{}
	defer rec.closeAll()

	cycle := func(i int) {
		e, path, err := emulator.StartPTY(emulator.Options{Index: 4})
		if err != nil {
			hwtest.SkipIfUnsupported(t, err)
			t.Fatal(err)
		}
		defer e.Close()
		current = path
		clock.Add(time.Hour) // past any backoff
		w.Scan(rec)
		if len(rec.found) != i+1 {
			t.Fatalf("cycle %d: %d devices found in all, want %d", i, len(rec.found), i+1)
		}
		d := rec.found[i]
		var st hw.State
		for range 10 {
			if err := d.Exchange(&hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}, &st); err != nil {
				t.Fatalf("cycle %d: exchange before the unplug: %v", i, err)
			}
		}
		e.Unplug()
		hwtest.Eventually(t, 10*time.Second, "the unplug seen by the driver", func() bool {
			return d.Exchange(&hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 1}}, &st) != nil
		})
		w.Lost("arm0")
	}

	cycle(0) // warm up: the runtime's own descriptors (poller, pipes) open once
	before := openFDs(t)
	for i := 1; i <= 20; i++ {
		cycle(i)
	}
	if after := openFDs(t); after > before {
		t.Errorf("%d descriptors open after 20 hot-plug cycles, %d before: %d leaked", after, before, after-before)
	}
}
