package loop

import (
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/actors/loop/passivity"
	"github.com/hapticd/hapticd/hw"
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

// TestIdleArmsHoldNoControlColds: the rest of the control of arms on a
// shard (controlCold: the command's inputs and the force's tally) lives in
// their block's controlColds, which the block gets when one of its arms
// first needs a tally (a force command), not before: arms that are read,
// poked with new Globals, halted and claimed but never commanded leave
// their blocks without them. A device that joins a shard with a tally
// that is not at rest (it left another mid-control) brings it into its
// block's controlColds.
func TestIdleArmsHoldNoControlColds(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	defer s.Stop()
	devs := make([]*Device, 2*armBlockLen+1)
	for i := range devs {
		devs[i] = NewDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
		s.Add(devs[i])
	}
	sh := s.shards[0]
	blocks := func() []*armBlock { return *sh.blocks.Load() }
	if n := len(blocks()); n != 3 {
		t.Fatalf("%d blocks for %d arms, want 3", n, len(devs))
	}
	colds := func() [3]*[armBlockLen]controlCold {
		b := blocks()
		return [3]*[armBlockLen]controlCold{b[0].ctlCold.Load(), b[1].ctlCold.Load(), b[2].ctlCold.Load()}
	}
	var snap Snapshot
	for tick := range 300 {
		for i, d := range devs {
			switch {
			case tick%50 == i%50:
				d.SetGlobals(&Globals{ForceScale: 0.5, Passivity: DefaultGlobals().Passivity})
			case tick == 100 && i%3 == 0:
				d.Halt()
			case tick == 200 && i%5 == 1:
				d.Register().Claim(uint64(100 + i)) // a claim alone: no force
			case tick%7 == 0:
				d.Load(&snap)
				_ = d.Output()
			}
		}
		sh.passLocked(clock.Advance(ms), clock)
	}
	if c := colds(); c != [3]*[armBlockLen]controlCold{} {
		t.Fatalf("blocks of arms nobody commanded hold controlColds: %v", c)
	}
	for i, d := range devs {
		if d.ft != nil {
			t.Fatalf("idle arm %d holds a tally", i)
		}
	}

	// A command on an arm of the second block: that block's controlColds
	// and no other's.
	c := force(0, 0, 0.5)
	d := devs[armBlockLen+1]
	d.Register().Claim(7)
	d.Register().Write(7, 1, clock.Now()+int64(1e12), &c, nil)
	for range 10 {
		sh.passLocked(clock.Advance(ms), clock)
	}
	r := d.slot.Load()
	if !r.controlled {
		t.Fatal("the commanded arm is not on the fast path for controlled arms")
	}
	got := colds()
	if got[1] == nil || got[0] != nil || got[2] != nil {
		t.Fatalf("controlColds by block after a command in block 1: %v, want only block 1's", got)
	}
	if d.ft != &got[1][r.idx].tally {
		t.Fatal("the commanded arm's tally is not its place in its block's controlColds")
	}
	if d.ft.sessionObs == (passivity.Observer{}) {
		t.Fatal("the commanded arm's tally saw no force")
	}
	if n := len(sh.spareCold); n != coldsPerAlloc-1 {
		t.Fatalf("%d spare controlColds, want %d: they are allocated %d blocks' at a time", n, coldsPerAlloc-1, coldsPerAlloc)
	}

	// A command on an arm of the first block: its controlColds are the
	// next of the same allocation.
	e := devs[2]
	e.Register().Claim(8)
	e.Register().Write(8, 1, clock.Now()+int64(1e12), &c, nil)
	sh.passLocked(clock.Advance(ms), clock)
	if c0 := colds()[0]; uintptr(unsafe.Pointer(c0)) != uintptr(unsafe.Pointer(got[1]))+unsafe.Sizeof(*c0) {
		t.Fatalf("block 0's controlColds at %p after a command, want the spare after block 1's (%p)", c0, got[1])
	}
	if e.ft == nil {
		t.Fatal("a commanded arm holds no tally")
	}

	// The commanded arm leaves mid-control and joins another scheduler,
	// whose block then holds its tally as it was; an idle one brings none.
	s.Remove(d)
	ft := *d.ft
	s2 := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	defer s2.Stop()
	idle := devs[armBlockLen+2]
	s.Remove(idle)
	s2.Add(idle)
	if b2 := (*s2.shards[0].blocks.Load())[0]; b2.ctlCold.Load() != nil || idle.ft != nil {
		t.Fatal("an idle device that moved brought a tally into its new block")
	}
	s2.Add(d)
	b2 := (*s2.shards[0].blocks.Load())[0]
	if b2.ctlCold.Load() == nil || d.ft != &b2.ctlCold.Load()[d.slot.Load().idx].tally {
		t.Fatal("a device that joined with a tally not at rest holds no place in its block's controlColds")
	}
	if *d.ft != ft {
		t.Fatalf("the tally changed as the device moved:\n%+v\n%+v", ft, *d.ft)
	}
}

// TestControlColdsClaimedBesideTheRunningPass: a running shard's full
// steps claim their blocks' controlColds while devices that carry a
// control's tally join the same blocks (attach claims them too) and
// readers read: run with -race, the controlColds are published to the pass
// and to attach through the block's pointer (and the shard's spares under
// its coldMu) alone.
func TestControlColdsClaimedBesideTheRunningPass(t *testing.T) {
	s := NewScheduler(SchedulerOptions{PeriodNs: int64(200 * time.Microsecond), Shards: 1})
	s.Start()
	defer s.Stop()
	c := force(0, 0, 0.5)
	var wg sync.WaitGroup
	// Devices controlled off any shard first (their own tally holds a
	// force's), then added to the running one.
	moving := make([]*Device, 3*armBlockLen/2)
	for i := range moving {
		d := NewDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{})
		d.Register().Claim(uint64(i + 1))
		d.Register().Write(uint64(i+1), 1, SystemClock().Now()+int64(time.Hour), &c, nil)
		for range 3 {
			d.Step(SystemClock().Now())
		}
		if *d.ft == (forceTally{}) {
			t.Fatalf("device %d's tally saw no force", i)
		}
		moving[i] = d
	}
	idle := make([]*Device, 3*armBlockLen/2)
	for i := range idle {
		idle[i] = NewDevice(sim.NewArm(sim.ArmOptions{Index: 1000 + i, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{})
		s.Add(idle[i])
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		for _, d := range moving {
			s.Add(d)
		}
	}()
	go func() {
		defer wg.Done()
		for i, d := range idle {
			session := uint64(1000 + i)
			d.Register().Claim(session)
			d.Register().Write(session, 1, SystemClock().Now()+int64(time.Hour), &c, nil)
			_ = d.Output()
			time.Sleep(50 * time.Microsecond)
		}
	}()
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, d := range append(idle, moving...) {
		for {
			var snap Snapshot
			d.Load(&snap)
			if snap.Mode == hw.ModeForce {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("a controlled arm never applied its force (mode %v)", snap.Mode)
			}
			time.Sleep(time.Millisecond)
		}
	}
	for _, b := range *s.shards[0].blocks.Load() {
		if b.ctlCold.Load() == nil {
			t.Fatal("a block of controlled arms holds no controlColds")
		}
	}
}
