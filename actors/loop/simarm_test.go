package loop

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
)

// TestShardRecordStepsAsTheDevice: a simulated arm on a scheduler shard,
// stepped from the shard's record (the fast path while nobody controls it),
// publishes exactly what the same arm stepped by Device.Step publishes, tick
// by tick, through a scripted hand, a claim, commands, a lapsed lease and
// its ramp, new Globals, a Halt, a release and rest; and its tick count
// agrees. Eight copies share the shard, so each is stepped by the block's
// first loop on most ticks and by fastTick when its step is timed.
func TestShardRecordStepsAsTheDevice(t *testing.T) {
	for _, m := range []sim.Motion{sim.MotionNone, sim.MotionCircle, sim.MotionRandom} {
		t.Run(m.String(), func(t *testing.T) {
			clock := looptest.NewClock(1000 * ms)
			newArm := func() *sim.Arm { return sim.NewArm(sim.ArmOptions{Index: 5, PeriodS: 0.001, Motion: m, Seed: 9}) }
			opts := DeviceOptions{PeriodNs: ms, Clock: clock}
			direct := NewDevice(newArm(), opts)
			onShard := make([]*Device, 8)
			s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
			for i := range onShard {
				onShard[i] = NewDevice(newArm(), opts)
				s.Add(onShard[i]) // not started: the test runs the shard's passes
			}
			defer s.Stop()
			sh := s.shards[0]
			all := func(f func(d *Device)) {
				f(direct)
				for _, d := range onShard {
					f(d)
				}
			}
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
			var a, b Snapshot
			for tick := 0; tick < 2500; tick++ {
				now := clock.Advance(ms)
				if f := script[tick]; f != nil {
					all(func(d *Device) { f(d, now) })
				}
				seqA := direct.PublishSeq()
				seqB := make([]uint64, len(onShard))
				for i, d := range onShard {
					seqB[i] = d.PublishSeq()
				}
				direct.Step(now)
				sh.passLocked(now, clock)
				direct.Load(&a)
				for i, d := range onShard {
					d.Load(&b)
					if a != b {
						t.Fatalf("tick %d: shard arm %d published\n%+v\nDevice.Step published\n%+v", tick, i, b, a)
					}
					if (direct.PublishSeq() != seqA) != (d.PublishSeq() != seqB[i]) {
						t.Fatalf("tick %d: one of them published, the other did not (seq %d→%d, shard arm %d %d→%d)",
							tick, seqA, direct.PublishSeq(), i, seqB[i], d.PublishSeq())
					}
				}
			}
			for i, d := range onShard {
				if got, want := d.Stats().Ticks, direct.Stats().Ticks; got != want {
					t.Fatalf("ticks of shard arm %d %d, stepped directly %d", i, got, want)
				}
			}
			// Off the shard the devices carry on where the records left them.
			for _, d := range onShard {
				s.Remove(d)
			}
			for range 50 {
				all(func(d *Device) { d.Step(clock.Now()) })
				clock.Advance(ms)
			}
			direct.Load(&a)
			for i, d := range onShard {
				d.Load(&b)
				if a != b {
					t.Fatalf("after Remove, arm %d: %+v, want %+v", i, b, a)
				}
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
	tick := func() {
		sh.passLocked(clock.Advance(ms), clock)
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
	churning := func() { stop.Store(true); wg.Wait() }
	defer churning() // again, harmless, if the wait below fails
	hwtest.Eventually(t, 30*time.Second, "arm 0 to tick 300 times while the set churns", func() bool { return devs[0].Stats().Ticks > 300 })
	churning()
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

// TestShardPublishesAtTheRateItIsRead: a moving arm on a shard's fast path
// that nobody reads publishes one tick in publishIdleEvery, never a state
// older than that; from the tick after a read it publishes every tick's
// state, as Device.Step does; a tap gets every tick's state without
// reading; and an arm that comes to rest or is halted between two of its
// sparse publishes publishes its current state.
func TestShardPublishesAtTheRateItIsRead(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	newArm := func(m sim.Motion) *sim.Arm { return sim.NewArm(sim.ArmOptions{Index: 3, PeriodS: 0.001, Motion: m}) }
	opts := DeviceOptions{PeriodNs: ms, Clock: clock}
	direct, onShard := NewDevice(newArm(sim.MotionCircle), opts), NewDevice(newArm(sim.MotionCircle), opts)
	tapped, tappedDirect := NewDevice(newArm(sim.MotionCircle), opts), NewDevice(newArm(sim.MotionCircle), opts)
	resting, restingDirect := NewDevice(newArm(sim.MotionNone), opts), NewDevice(newArm(sim.MotionNone), opts)
	halted, haltedDirect := NewDevice(newArm(sim.MotionCircle), opts), NewDevice(newArm(sim.MotionCircle), opts)
	tap := NewTap(4096, 0)
	if err := tapped.AddTap(tap); err != nil {
		t.Fatal(err)
	}
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	for _, d := range []*Device{onShard, tapped, resting, halted} {
		s.Add(d)
	}
	defer s.Stop()
	sh := s.shards[0]
	tick := func() int64 {
		now := clock.Advance(ms)
		for _, d := range []*Device{direct, tappedDirect, restingDirect, haltedDirect} {
			d.Step(now)
		}
		sh.passLocked(now, clock)
		return now
	}
	// The cell's count and contents, read as the test's own white box:
	// Load and PublishSeq count as reads.
	published := func(d *Device) (uint64, Snapshot) {
		var p Snapshot
		c := d.cell.Load()
		c.load(&p)
		return c.count(), p
	}
	same := func(what string, got, want *Snapshot) {
		t.Helper()
		if got.Tick != want.Tick || got.State.PositionM != want.State.PositionM || got.State.VelocityMps != want.State.VelocityMps || got.State.ForceN != want.State.ForceN {
			t.Fatalf("%s: tick %d at %+v, want tick %d at %+v", what, got.Tick, got.State, want.Tick, want.State)
		}
	}
	for range 20 {
		tick()
	}
	// Unread: sparse publishes, none older than publishIdleEvery ticks.
	seq0, _ := published(onShard)
	var d Snapshot
	const quiet = 20 * publishIdleEvery
	for range quiet {
		tick()
		direct.Load(&d)
		_, p := published(onShard)
		if d.Tick-p.Tick >= publishIdleEvery {
			t.Fatalf("unread, the published state is of tick %d at tick %d: more than %d ticks old", p.Tick, d.Tick, publishIdleEvery-1)
		}
	}
	if seq, _ := published(onShard); seq-seq0 > quiet/publishIdleEvery+1 {
		t.Fatalf("unread, the arm published %d times in %d ticks, want at most %d", seq-seq0, quiet, quiet/publishIdleEvery+1)
	}
	// Read: every tick from the next one on, as Device.Step publishes.
	var got Snapshot
	onShard.Load(&got)
	for i := range 50 {
		tick()
		direct.Load(&d)
		onShard.Load(&got)
		same(fmt.Sprintf("read, tick %d", i), &got, &d)
	}
	// The tap took every tick's state, though nobody read the arm.
	var want, fromTap Snapshot
	tappedDirect.Load(&want)
	n := 0
	for tap.Next(&fromTap) {
		n++
	}
	if _, p := published(tapped); n < 200 || fromTap.Tick != want.Tick || p.Tick != want.Tick {
		t.Fatalf("the tap took %d states, the last of tick %d (published %d), want one a tick up to tick %d", n, fromTap.Tick, p.Tick, want.Tick)
	}
	tapped.Load(&got)
	same("tapped", &got, &want)
	// A halt between two sparse publishes publishes the current state.
	for i := 0; ; i++ {
		tick()
		haltedDirect.Load(&d)
		if _, p := published(halted); p.Tick != d.Tick {
			break // the published state is behind
		}
		if i > publishIdleEvery {
			t.Fatalf("an arm nobody reads published every tick")
		}
	}
	haltedDirect.Halt()
	halted.Halt()
	haltedDirect.Load(&d)
	_, p := published(halted)
	same("halted", &p, &d)
	// An arm with no scripted hand comes to rest; its last moves are
	// published, though nobody read it.
	for range 3000 {
		tick()
	}
	restingDirect.Load(&want)
	_, p = published(resting)
	same("at rest", &p, &want)
	if r := resting.slot.Load(); r == nil || !r.asleep {
		t.Fatalf("the arm with no scripted hand did not come to rest")
	}
}

// TestShardUnreadArmsPublishTheirRest: arms nobody reads, pushed and
// released, coast on the shard's fast path (publishing one tick in
// publishIdleEvery) and come to rest between two of those publishes: the
// state they rest in is published as Device.Step publishes it, and they
// sleep. Then their drivers fail, and the shard's records report it as
// Device.Step does.
func TestShardUnreadArmsPublishTheirRest(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	opts := DeviceOptions{PeriodNs: ms, Clock: clock, MaxErrors: 5}
	newArm := func() *sim.Arm { return sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: sim.MotionNone}) }
	direct := NewDevice(newArm(), opts)
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	defer s.Stop()
	onShard := make([]*Device, 8)
	for i := range onShard {
		onShard[i] = NewDevice(newArm(), opts)
		s.Add(onShard[i])
	}
	sh := s.shards[0]
	all := func(f func(d *Device)) {
		f(direct)
		for _, d := range onShard {
			f(d)
		}
	}
	tick := func() {
		now := clock.Advance(ms)
		direct.Step(now)
		sh.passLocked(now, clock)
	}
	// The cell's contents, read as the test's own white box: Load would
	// count as a read and make the arm publish every tick.
	published := func(d *Device) Snapshot {
		var p Snapshot
		d.cell.Load().load(&p)
		return p
	}
	// The same state; an arm that published its rest on the tick it found
	// itself at rest labels it with that tick, one after Device.Step's
	// (which publishes every tick, the last one on the last move). A closed
	// sim arm zeroes its force, which a record reads back and Device.Step
	// does not: once closed, only the motion and the failure must agree.
	closed := false
	match := func(what string) {
		t.Helper()
		var want Snapshot
		direct.LoadPhysical(&want)
		for i, d := range onShard {
			got := published(d)
			if closed {
				got.State.ForceN = want.State.ForceN
			}
			if got.State != want.State || got.Mode != want.Mode || got.Failed != want.Failed || got.Tick < want.Tick || got.Tick > want.Tick+1 {
				t.Fatalf("%s: shard arm %d published\n%+v\nDevice.Step published\n%+v", what, i, got, want)
			}
		}
	}
	for range 20 {
		tick()
	}
	all(func(d *Device) {
		d.Register().Claim(4)
		c := force(2, -1, 0.5)
		d.Register().Write(4, 1, clock.Now()+time64(500), &c, nil)
	})
	for range 30 {
		tick()
	}
	all(func(d *Device) { d.Register().Release(4) })
	coasting := 0
	for range 5000 {
		tick()
		if direct.asleep {
			break
		}
		if published(onShard[0]).Tick != direct.Stats().Ticks {
			coasting++ // a tick whose state the arm kept to itself
		}
	}
	if !direct.asleep || coasting == 0 {
		t.Fatalf("the arms did not coast unread and come to rest (asleep %v; %d ticks with unpublished moves)", direct.asleep, coasting)
	}
	match("at rest")
	for range 5 {
		tick()
	}
	for i, d := range onShard {
		if r := d.slot.Load(); r == nil || !r.asleep {
			t.Fatalf("shard arm %d came to rest but does not sleep", i)
		}
	}
	// Wake them with a push, then fail their drivers mid-move.
	all(func(d *Device) {
		d.Register().Claim(5)
		c := force(-1, 1, 0)
		d.Register().Write(5, 1, clock.Now()+time64(500), &c, nil)
	})
	for range 20 {
		tick()
	}
	all(func(d *Device) { d.Register().Release(5) })
	for range 50 {
		tick()
	}
	for i, d := range onShard {
		if r := d.slot.Load(); r == nil || r.slow || r.asleep {
			t.Fatalf("shard arm %d is not coasting on the fast path after its release", i)
		}
	}
	all(func(d *Device) { _ = d.drv.(*sim.Arm).Close() })
	closed = true
	for i := range 20 {
		tick()
		match(fmt.Sprintf("driver closed, tick %d", i))
	}
	if p := published(onShard[0]); !p.Failed {
		t.Fatalf("a closed driver's arm does not report failure: %+v", p)
	}
}

// TestShardStatsStayCurrent: the devices of a shard share its summaries,
// computed once a tick however many devices are asked; each read still
// sees the ticks and exchanges since the last one, whether the shard runs
// or its passes are driven by hand.
func TestShardStatsStayCurrent(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	a := NewDevice(sim.NewArm(sim.ArmOptions{Index: 1, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
	b := NewDevice(sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	s.Add(a)
	s.Add(b)
	defer s.Stop()
	sh := s.shards[0]
	prev := uint64(0)
	for round := range 5 {
		for range 64 {
			sh.passLocked(clock.Advance(ms), clock)
		}
		sa, sb := a.Stats(), b.Stats()
		if sa.Exchange != sb.Exchange {
			t.Fatalf("round %d: two devices of one shard report different exchanges: %+v and %+v", round, sa.Exchange, sb.Exchange)
		}
		if sa.Exchange.Count <= prev {
			t.Fatalf("round %d: %d exchanges timed after 64 more passes, %d before", round, sa.Exchange.Count, prev)
		}
		prev = sa.Exchange.Count
	}

	// Running: the period's count grows between reads.
	run := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1})
	c := NewDevice(sim.NewArm(sim.ArmOptions{Index: 3, PeriodS: 0.001}), DeviceOptions{PeriodNs: ms})
	run.Add(c)
	run.Start()
	defer run.Stop()
	first := c.Stats().Period.Count
	hwtest.Eventually(t, 10*time.Second, "the period's count to grow by 20", func() bool { return c.Stats().Period.Count >= first+20 })
}

// TestShardPassAllocatesNothing: a shard's tick over moving arms, read and
// unread, tapped and not, allocates nothing.
func TestShardPassAllocatesNothing(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	defer s.Stop()
	devs := make([]*Device, 3*armBlockLen)
	for i := range devs {
		devs[i] = NewDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
		s.Add(devs[i])
	}
	tap := NewTap(16, 0)
	if err := devs[1].AddTap(tap); err != nil {
		t.Fatal(err)
	}
	sh := s.shards[0]
	var snap Snapshot
	allocs := testing.AllocsPerRun(1000, func() {
		sh.passLocked(clock.Advance(ms), clock)
		devs[0].Load(&snap)
		tap.Next(&snap)
	})
	if allocs != 0 {
		t.Fatalf("a shard's pass over %d moving arms allocates %.1f times per tick, want 0", len(devs), allocs)
	}
}

// TestShardBlockPublishesTogether: the unread moving arms of one block
// publish on the same ticks (the block's phase on the shard's tick), also
// when one of them joined the shard later, its own tick count elsewhere.
func TestShardBlockPublishesTogether(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	opts := DeviceOptions{PeriodNs: ms, Clock: clock}
	early := NewDevice(sim.NewArm(sim.ArmOptions{Index: 1, PeriodS: 0.001, Motion: sim.MotionCircle}), opts)
	late := NewDevice(sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: sim.MotionCircle}), opts)
	for range 3 {
		late.Step(clock.Advance(ms)) // ticks of its own before it joins
	}
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	defer s.Stop()
	sh := s.shards[0]
	pass := func() {
		sh.passLocked(clock.Advance(ms), clock)
	}
	s.Add(early)
	for range 5 {
		pass()
	}
	s.Add(late)
	if early.slot.Load() == nil || late.slot.Load() == nil {
		t.Fatal("the arms are not on the shard's records")
	}
	count := func(d *Device) uint64 { return d.cell.Load().count() } // not a read: Load and PublishSeq are
	for range 4 {
		pass() // both on the fast path
	}
	publishes := 0
	for i := range 4 * publishIdleEvery {
		e, l := count(early), count(late)
		pass()
		de, dl := count(early) != e, count(late) != l
		if de != dl {
			t.Fatalf("pass %d: early arm published %v, late arm %v: one block, different ticks", i, de, dl)
		}
		if de {
			publishes++
		}
	}
	if publishes == 0 || publishes > 4 {
		t.Fatalf("%d publishes in %d passes, want one in %d", publishes, 4*publishIdleEvery, publishIdleEvery)
	}
}

// passLocked runs one pass by hand, under the shard's lock as its goroutine
// does.
func (sh *shard) passLocked(now int64, clock Clock) {
	var cur *Device
	sh.mu.Lock()
	defer sh.mu.Unlock()
	sh.pass(now, clock, &cur)
}

// TestShardSteadyReaderKeepsTheArmPublishing: a reader that checks a
// moving arm's PublishSeq every tick, as a frame of every arm does, keeps
// it publishing every tick for hot spell after hot spell (the shard takes
// each mark up and the reader marks again), and again after the device
// leaves its shard record and comes back to the same one (a mark the
// reader set on that record before must not count).
func TestShardSteadyReaderKeepsTheArmPublishing(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	d := NewDevice(sim.NewArm(sim.ArmOptions{Index: 3, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	s.Add(d)
	defer s.Stop()
	sh := s.shards[0]
	tick := func() { sh.passLocked(clock.Advance(ms), clock) }
	readEveryTick := func(phase string, ticks int) {
		t.Helper()
		d.PublishSeq() // the first read marks; its tick may be sparse
		tick()
		last := d.PublishSeq()
		for i := range ticks {
			tick()
			seq := d.PublishSeq()
			if seq != last+1 {
				t.Fatalf("%s, tick %d of %d: the arm published %d times since the last read, want 1 (read every tick)", phase, i+1, ticks, seq-last)
			}
			last = seq
		}
	}
	for range 50 { // moving, unread: sparse publishes
		tick()
	}
	spells := 3 * publishHotTicks
	readEveryTick("read", spells)
	r := d.slot.Load()
	s.Remove(d)
	s.Add(d)
	if d.slot.Load() != r {
		t.Fatalf("the device came back to another shard record: this test needs the one it left")
	}
	for range 50 { // back, unread for a while
		tick()
	}
	readEveryTick("back on its record", spells)
}

// BenchmarkFrameChecksAfterTick: what a frame of every arm reads of 100
// moving arms on a shard after a tick, PublishSeq of each (the run's check,
// actors.armRunFor), with the caches cleared in between by 32 MB of other
// traffic, as the frames and the clients' reads of a 100-client load clear
// them between two of a session's frames. Only the checks are timed.
func BenchmarkFrameChecksAfterTick(b *testing.B) {
	clock := looptest.NewClock(1000 * ms)
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	defer s.Stop()
	devs := make([]*Device, 100)
	for i := range devs {
		devs[i] = NewDevice(sim.NewArm(sim.ArmOptions{Index: i, PeriodS: 0.001, Motion: sim.MotionCircle, Seed: int64(i)}), DeviceOptions{PeriodNs: ms, Clock: clock})
		s.Add(devs[i])
	}
	sh := s.shards[0]
	traffic := make([]byte, 32<<20)
	var sum uint64
	read := func() {
		for _, d := range devs {
			sum += d.PublishSeq()
		}
	}
	for range 100 { // read, so every arm publishes every tick
		sh.passLocked(clock.Advance(ms), clock)
		read()
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		sh.passLocked(clock.Advance(ms), clock)
		for j := 0; j < len(traffic); j += 64 {
			traffic[j] = byte(i)
		}
		b.StartTimer()
		read()
	}
	if sum == 0 {
		b.Fatal("no arm published")
	}
}

// TestShardFirstReadAfterAQuietSpell: an arm nobody read for a while, on
// its own or controlled with effects on the fused tick, gives its first
// reader a state at most publishIdleEvery-1 ticks older than the arm's
// tick (and effects at most unreadEvery ticks old), wherever in the
// sparse cycle the read falls; a reader that keeps reading then gets
// every tick's state (and an effects report at most reportEvery ticks
// old).
func TestShardFirstReadAfterAQuietSpell(t *testing.T) {
	offsets := []int{0, 1, publishIdleEvery / 2, publishIdleEvery - 1}
	for _, tc := range []struct {
		name    string
		effects bool // controlled by a session, with a wall and a damper
	}{
		{"nobody controls it", false},
		{"controlled with effects", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := looptest.NewClock(1000 * ms)
			s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
			defer s.Stop()
			var d *Device
			if tc.effects {
				d, _ = effectArm(t, s, 0, true)
			} else {
				d = NewDevice(newSimArm(0), DeviceOptions{PeriodNs: ms, Clock: clock})
				s.Add(d)
			}
			sh := s.shards[0]
			tick := func() { sh.passLocked(clock.Advance(ms), clock) }
			for range 20 {
				tick()
			}
			r := d.slot.Load()
			if tc.effects && !(r.controlled && r.control().fs.fused) {
				t.Fatalf("the controlled arm is not on the fused tick (controlled %v, fused %v)", r.controlled, r.control().fs.fused)
			}
			var got Snapshot
			var rep EffectsReport
			stale := 0 // first reads that got an older tick than the arm's
			for _, off := range offsets {
				// Unread for longer than a hot spell and then some, so
				// that the record has stopped publishing every tick.
				for range publishHotTicks + 3*publishIdleEvery + off {
					tick()
				}
				d.Load(&got)
				if age := r.ticks - got.Tick; age >= publishIdleEvery {
					t.Fatalf("offset %d: the first read got tick %d at tick %d: %d ticks old, the bound is %d", off, got.Tick, r.ticks, age, publishIdleEvery-1)
				}
				if got.Tick != r.ticks {
					stale++
				}
				if tc.effects {
					if !d.LoadEffects(&rep) {
						t.Fatal("no effects report")
					}
					if age := clock.Now() - rep.TimeNs; age >= unreadEvery*ms {
						t.Fatalf("offset %d: the first effects report is %d ms old, the bound is %d", off, age/ms, unreadEvery-1)
					}
				}
				for i := range 3 * reportEvery {
					tick()
					d.Load(&got)
					if got.Tick != r.ticks {
						t.Fatalf("offset %d, read %d: a steady reader got tick %d at tick %d", off, i, got.Tick, r.ticks)
					}
					if tc.effects && i >= reportEvery {
						d.LoadEffects(&rep)
						if age := clock.Now() - rep.TimeNs; age >= reportEvery*ms {
							t.Fatalf("offset %d, read %d: a steady reader's effects report is %d ms old, want under %d", off, i, age/ms, reportEvery)
						}
					}
				}
			}
			if stale == 0 {
				t.Fatalf("every first read after a quiet spell got the current tick: the unread arm published every tick")
			}
		})
	}
}
