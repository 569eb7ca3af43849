package loop

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// TestShardRecordStepsAsTheDevice: a simulated arm on a scheduler shard,
// stepped from the shard's record (the fast path while nobody controls it),
// publishes exactly what the same arm stepped by Device.Step publishes, tick
// by tick, through a scripted hand, a claim, commands, a lapsed lease and
// its ramp, new Globals, a Halt, a release and rest; and its tick count
// agrees.
func TestShardRecordStepsAsTheDevice(t *testing.T) {
	for _, m := range []sim.Motion{sim.MotionNone, sim.MotionCircle, sim.MotionRandom} {
		t.Run(m.String(), func(t *testing.T) {
			clock := looptest.NewClock(1000 * ms)
			newArm := func() *sim.Arm { return sim.NewArm(sim.ArmOptions{Index: 5, PeriodS: 0.001, Motion: m, Seed: 9}) }
			opts := DeviceOptions{PeriodNs: ms, Clock: clock}
			direct := NewDevice(newArm(), opts)
			onShard := NewDevice(newArm(), opts)
			s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
			s.Add(onShard) // not started: the test runs the shard's passes
			defer s.Stop()
			sh := s.shards[0]
			both := func(f func(d *Device)) { f(direct); f(onShard) }
			p := &Params{Damping: [3][3]float64{{3, 0, 0}, {0, 3, 0}, {0, 0, 3}}, ForceGateGain: 0.5}
			script := map[int]func(d *Device, now int64){
				300: func(d *Device, now int64) {
					d.Register().Claim(7)
					c := force(1, -0.5, 0.2)
					d.Register().Write(7, 1, now+100*ms, &c, p)
				},
				350: func(d *Device, now int64) {
					c := force(-2, 0, 0.5)
					d.Register().Write(7, 2, now+40*ms, &c, p) // lapses at 390, then the ramp
				},
				500: func(d *Device, _ int64) {
					d.SetGlobals(&Globals{ForceScale: 0.5, Settings: hw.Settings{LeftHanded: true, GravityCompensation: true, GravityScale: 0.5}})
				},
				600: func(d *Device, now int64) {
					d.Register().Claim(8)
					c := hw.Command{Mode: hw.ModePosition, PositionM: hw.Vec3{Y: 0.15, Z: 0.12}}
					d.Register().Write(8, 1, now+time64(200), &c, nil)
				},
				650: func(d *Device, _ int64) { d.Halt() },
				700: func(d *Device, _ int64) { d.Register().Release(8) },
				800: func(d *Device, _ int64) { d.SetGlobals(nil) },
			}
			var cur *Device
			var a, b Snapshot
			for tick := 0; tick < 2500; tick++ {
				now := clock.Advance(ms)
				if f := script[tick]; f != nil {
					both(func(d *Device) { f(d, now) })
				}
				seqA, seqB := direct.PublishSeq(), onShard.PublishSeq()
				direct.Step(now)
				sh.mu.Lock()
				sh.pass(now, ms, clock, &cur)
				sh.mu.Unlock()
				direct.Load(&a)
				onShard.Load(&b)
				if a != b {
					t.Fatalf("tick %d: the shard's record published\n%+v\nDevice.Step published\n%+v", tick, b, a)
				}
				if (direct.PublishSeq() != seqA) != (onShard.PublishSeq() != seqB) {
					t.Fatalf("tick %d: one of them published, the other did not (seq %d→%d, on the shard %d→%d)",
						tick, seqA, direct.PublishSeq(), seqB, onShard.PublishSeq())
				}
			}
			if got, want := onShard.Stats().Ticks, direct.Stats().Ticks; got != want {
				t.Fatalf("ticks on the shard %d, stepped directly %d", got, want)
			}
			// Off the shard the device carries on where the record left it.
			s.Remove(onShard)
			for range 50 {
				now := clock.Advance(ms)
				direct.Step(now)
				onShard.Step(now)
			}
			direct.Load(&a)
			onShard.Load(&b)
			if a != b {
				t.Fatalf("after Remove: %+v, want %+v", b, a)
			}
		})
	}
}

func time64(msecs int) int64 { return int64(msecs) * ms }

// TestShardFastPathSeesEveryPoke: an arm the shard steps on its fast path
// notices a claim, a write, new Globals and a Halt on its next tick.
func TestShardFastPathSeesEveryPoke(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	d := NewDevice(sim.NewArm(sim.ArmOptions{PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	s.Add(d)
	defer s.Stop()
	sh := s.shards[0]
	var cur *Device
	tick := func() {
		sh.mu.Lock()
		sh.pass(clock.Advance(ms), ms, clock, &cur)
		sh.mu.Unlock()
	}
	for range 10 {
		tick()
	}
	r := d.slot.Load()
	if r == nil || r.slow {
		t.Fatalf("an arm nobody controls is not on the fast path (record %v)", r)
	}
	var snap Snapshot
	steps := []struct {
		name  string
		do    func()
		check func() error
	}{
		{"claim", func() { d.Register().Claim(3) }, func() error {
			if d.Load(&snap); snap.Owner != 3 {
				return fmt.Errorf("owner %d, want 3", snap.Owner)
			}
			return nil
		}},
		{"write", func() {
			c := force(0, 0, 1)
			d.Register().Write(3, 4, clock.Now()+time64(500), &c, nil)
		}, func() error {
			if d.Load(&snap); snap.AppliedSeq != 4 || snap.Mode != hw.ModeForce {
				return fmt.Errorf("applied seq %d mode %v, want 4 and force", snap.AppliedSeq, snap.Mode)
			}
			return nil
		}},
		{"halt", func() { d.Halt() }, func() error {
			if d.Load(&snap); snap.Mode != hw.ModeIdle {
				return fmt.Errorf("mode %v after Halt, want idle", snap.Mode)
			}
			return nil
		}},
		{"release", func() { d.Register().Release(3) }, func() error {
			if d.Load(&snap); snap.Owner != 0 {
				return fmt.Errorf("owner %d after release", snap.Owner)
			}
			return nil
		}},
		{"globals", func() {
			d.SetGlobals(&Globals{ForceScale: 1, Settings: hw.Settings{LeftHanded: true}})
		}, func() error {
			if d.Load(&snap); snap.derive != deriveNone || snap.State.AnglesDeg == (hw.Angles3{}) {
				return fmt.Errorf("snapshot not derived: %+v", snap)
			}
			if left := d.Driver().(*sim.Arm).Settings().LeftHanded; !left {
				return fmt.Errorf("the new settings did not reach the arm")
			}
			return nil
		}},
	}
	for _, st := range steps {
		for range 5 {
			tick() // back on the fast path where it can be
		}
		st.do()
		tick()
		if err := st.check(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
	}
}

// TestArmCellReadersNeverTear: readers of a record's snapshot cell see
// whole publishes only, and never an older one than they saw before, while
// the shard publishes as fast as it can.
func TestArmCellReadersNeverTear(t *testing.T) {
	var cell armCell
	// The metadata changes every third publish, with its version: the
	// cell copies metadata only then, so both paths are exercised.
	pattern := func(k uint64, s *Snapshot) {
		v := k / 3
		g, f := float64(v), float64(k)
		p := hw.Vec3{X: f, Y: f, Z: f}
		*s = Snapshot{Mode: hw.ControlMode(v % 5), Failed: v%2 == 1, derive: uint8(v % 3), Owner: v, AppliedSeq: v,
			Target: [3]float64{g, g, g}, Tick: k, TimeNs: int64(k),
			State: hw.State{PositionM: p, VelocityMps: p, ForceN: p, Status: hw.Status(v % 64)}}
	}
	var s Snapshot
	hammerCell(t, func(k uint64) bool {
		pattern(k, &s)
		m := metaOf(&s)
		return cell.publish(&m, k/3+1, k, s.TimeNs, s.State.PositionM, s.State.VelocityMps, s.State.ForceN)
	}, cell.load, pattern)
}

// TestShardArmsUnderConcurrentUse runs a started scheduler of moving arms
// while sessions claim, command and release them, others Halt them, and
// arms are added and removed; readers never see a snapshot go back in time.
// With -race it checks the records' concurrency.
func TestShardArmsUnderConcurrentUse(t *testing.T) {
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 2, ShardFill: 40})
	s.Start()
	defer s.Stop()
	const n = 100
	devs := make([]*Device, n)
	for i := range devs {
		devs[i] = NewDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms})
		s.Add(devs[i])
	}
	var stop atomic.Bool
	var backwards atomic.Uint64
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := make([]uint64, n)
			var snap Snapshot
			for !stop.Load() {
				for i := r; i < n; i += 2 {
					devs[i].Load(&snap)
					if snap.Tick < last[i] {
						backwards.Add(1)
					}
					last[i] = snap.Tick
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // sessions
		defer wg.Done()
		clock := SystemClock()
		for k := uint64(1); !stop.Load(); k++ {
			d := devs[int(k)%n]
			reg := d.Register()
			reg.Claim(k)
			c := force(0.3, 0, 0.1)
			reg.Write(k, k, clock.Now()+int64(50*time.Millisecond), &c, nil)
			if k%3 == 0 {
				d.Halt()
			}
			if k%2 == 0 {
				reg.Release(k)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}()
	wg.Add(1)
	go func() { // hot-plug
		defer wg.Done()
		for k := 0; !stop.Load(); k++ {
			d := devs[k%n]
			s.Remove(d)
			s.Add(d)
			time.Sleep(200 * time.Microsecond)
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		ticks := devs[0].Stats().Ticks
		if ticks > 300 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if got := devs[0].Stats().Ticks; got == 0 {
		t.Fatal("the scheduler never ticked arm 0")
	}
	if backwards.Load() != 0 {
		t.Fatalf("%d snapshot loads went back in time", backwards.Load())
	}
	if got := s.Len(); got != n {
		t.Fatalf("Len = %d after the hot-plugging, want %d", got, n)
	}
}
