package loop

import (
	"runtime"
	"testing"

	"github.com/hapticd/hapticd/hw/sim"
)

// maxIdleArmBytes is the budget for one idle simulated arm: its driver and
// its loop state on a scheduler.
const maxIdleArmBytes = 4096

// idleArmBytes builds n idle simulated arms on a (stopped) scheduler, as
// the service does for --sim-arms, and returns the heap they hold per arm.
func idleArmBytes(n int) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := NewScheduler(SchedulerOptions{Shards: 2})
	devs := make([]*Device, n)
	for i := range devs {
		devs[i] = NewDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001}), DeviceOptions{})
		s.Add(devs[i])
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(devs)
	runtime.KeepAlive(s)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n)
}

// TestIdleSimulatedArmMemory: 10,000 idle simulated arms hold at most
// 4 KiB each, so a host can simulate them without paging.
func TestIdleSimulatedArmMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 10,000 arms")
	}
	if got := idleArmBytes(10_000); got > maxIdleArmBytes {
		t.Fatalf("an idle simulated arm holds %.0f bytes, want at most %d", got, maxIdleArmBytes)
	} else {
		t.Logf("%.0f bytes per idle simulated arm", got)
	}
}

// BenchmarkIdleArmMemory reports the heap per idle simulated arm with
// 10,000 arms (bytes/arm); one op builds them all.
func BenchmarkIdleArmMemory(b *testing.B) {
	var per float64
	for b.Loop() {
		per = idleArmBytes(10_000)
	}
	b.ReportMetric(per, "bytes/arm")
}
