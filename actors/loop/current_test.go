package loop

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// TestLoadCurrentSaysAsOfWhenTheStateIsCurrent: a simulated arm on a shard,
// beside a twin stepped directly (which publishes every change), read on
// several schedules. Every read's currentNs is a tick at which the twin was
// where the read's snapshot says (never fresher than the truth); a moving
// arm nobody read lately is reported as old as its last sparse publish; an
// arm at rest whose old snapshot is still its state is reported current
// from the read after a mark on, and within publishIdleEvery ticks on the
// first read after a quiet spell.
func TestLoadCurrentSaysAsOfWhenTheStateIsCurrent(t *testing.T) {
	type read struct {
		tick        int
		snap        Snapshot
		currentNs   int64
		nowNs       int64
		twinTick    uint64
		twinTimeNs  int64
		twinMovedNs int64 // when the twin's state last changed
	}
	tests := []struct {
		name   string
		motion sim.Motion
		// reads says whether to read at tick i (of ticks).
		reads func(i int, rng *rand.Rand) bool
		ticks int
		check func(t *testing.T, rs []read)
	}{{
		name: "moving, read after quiet spells", motion: sim.MotionCircle, ticks: 12000,
		reads: func(i int, _ *rand.Rand) bool { return i%3000 == 2999 || i%3000 == 0 },
		check: func(t *testing.T, rs []read) {
			for _, r := range rs {
				if r.tick%3000 == 2999 {
					// The first read after a quiet spell: the snapshot is
					// behind and says so.
					if r.snap.Tick >= r.twinTick || r.currentNs != r.snap.TimeNs {
						t.Errorf("tick %d, first read after a quiet spell: snapshot of tick %d (the arm is at %d), current as of %d, want its own time %d",
							r.tick, r.snap.Tick, r.twinTick, r.currentNs, r.snap.TimeNs)
					}
				} else if r.currentNs != r.nowNs {
					t.Errorf("tick %d, the pass after a read: current as of %d, want the pass's %d", r.tick, r.currentNs, r.nowNs)
				}
			}
		},
	}, {
		// Sparse reads land anywhere between two sparse publishes.
		name: "moving, read at random", motion: sim.MotionCircle, ticks: 40000,
		reads: func(_ int, rng *rand.Rand) bool { return rng.IntN(300) == 0 },
	}, {
		name: "at rest, read every tick", motion: sim.MotionNone, ticks: 6000,
		reads: func(i int, _ *rand.Rand) bool { return i >= 4000 },
		check: func(t *testing.T, rs []read) {
			for _, r := range rs[1:] {
				if r.currentNs != r.nowNs {
					t.Errorf("tick %d, at rest since %d and read every tick: current as of %d, want the pass's %d", r.tick, r.twinMovedNs, r.currentNs, r.nowNs)
				}
			}
		},
	}, {
		name: "at rest, read after quiet spells", motion: sim.MotionNone, ticks: 12000,
		reads: func(i int, _ *rand.Rand) bool { return i >= 4000 && (i%2500 == 0 || i%2500 == 1) },
		check: func(t *testing.T, rs []read) {
			for _, r := range rs {
				age := r.nowNs - r.currentNs
				if r.snap.TimeNs > r.nowNs-int64(publishIdleEvery)*ms {
					t.Fatalf("tick %d: the arm published at %d, not at rest for long: the test needs a longer rest", r.tick, r.snap.TimeNs)
				}
				switch {
				case age < 0 || age >= int64(publishIdleEvery)*ms:
					t.Errorf("tick %d, at rest since %d: current as of %d, %d ms before the read, want under %d", r.tick, r.twinMovedNs, r.currentNs, age/ms, publishIdleEvery)
				case r.tick%2500 == 1 && age != 0:
					t.Errorf("tick %d, at rest, read again a pass after a read: current as of %d, want the pass's %d", r.tick, r.currentNs, r.nowNs)
				}
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := looptest.NewClock(1000 * ms)
			newArm := func() *sim.Arm { return sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: tc.motion}) }
			opts := DeviceOptions{PeriodNs: ms, Clock: clock}
			onShard, twin := NewDevice(newArm(), opts), NewDevice(newArm(), opts)
			s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
			s.Add(onShard)
			defer s.Stop()
			sh := s.shards[0]
			// The twin's position by tick time: the truth a read is judged by.
			at := map[int64]hw.Vec3{}
			var tw Snapshot
			var movedNs int64
			rng := rand.New(rand.NewPCG(1, 2))
			var rs []read
			for i := range tc.ticks {
				now := clock.Advance(ms)
				twin.Step(now)
				sh.passLocked(now, clock)
				twin.Load(&tw)
				if prev, ok := at[now-ms]; !ok || prev != tw.State.PositionM {
					movedNs = now
				}
				at[now] = tw.State.PositionM
				if !tc.reads(i, rng) {
					continue
				}
				r := read{tick: i, nowNs: now, twinTick: tw.Tick, twinTimeNs: tw.TimeNs, twinMovedNs: movedNs}
				r.currentNs = onShard.LoadCurrent(&r.snap)
				if r.currentNs < r.snap.TimeNs || r.currentNs > now {
					t.Fatalf("tick %d: current as of %d, outside the snapshot's time %d and now %d", i, r.currentNs, r.snap.TimeNs, now)
				}
				if want, ok := at[r.currentNs]; !ok || want != r.snap.State.PositionM {
					t.Fatalf("tick %d: current as of %d (%d ms ago) at %+v, but the arm was at %+v then: a stale state presented as fresher than it is",
						i, r.currentNs, (now-r.currentNs)/ms, r.snap.State.PositionM, want)
				}
				rs = append(rs, r)
			}
			if len(rs) == 0 {
				t.Fatal("no reads")
			}
			if tc.check != nil {
				tc.check(t, rs)
			}
			t.Logf("%d reads", len(rs))
		})
	}
}

// BenchmarkLoadCurrent: what LoadCurrent costs a reader beside Load (a lab
// node's push reads every arm with it), on a moving arm on a shard that a
// pass steps between reads; the ratio to Load's in the same run is the
// figure.
func BenchmarkLoadCurrent(b *testing.B) {
	for _, name := range []string{"Load", "LoadCurrent"} {
		b.Run(name, func(b *testing.B) {
			clock := looptest.NewClock(1000 * ms)
			d := NewDevice(sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: sim.MotionCircle}), DeviceOptions{PeriodNs: ms, Clock: clock})
			s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
			s.Add(d)
			defer s.Stop()
			sh := s.shards[0]
			var snap Snapshot
			var sink int64
			b.ResetTimer()
			for i := range b.N {
				if i%64 == 0 {
					b.StopTimer()
					sh.passLocked(clock.Advance(ms), clock)
					b.StartTimer()
				}
				if name == "Load" {
					d.Load(&snap)
					sink += snap.TimeNs
				} else {
					sink += d.LoadCurrent(&snap)
				}
			}
			if sink == 0 {
				b.Fatal("nothing read")
			}
		})
	}
}

// TestLoadCurrentUnderConcurrentReaders: the shard's passes on one
// goroutine (a manual clock, a twin stepped directly for the truth), three
// readers marking, loading and asking LoadCurrent in bursts with quiet
// spells between, so that marks, take-ups, hot spells, sparse publishes and
// publishes that find the spare buffer held interleave as they fall. No
// read may say its state is current as of a pass at which the arm was
// elsewhere (a reader's late store, a failed publish: review6's F1, F2).
func TestLoadCurrentUnderConcurrentReaders(t *testing.T) {
	passes := 200000
	if testing.Short() {
		passes = 40000
	}
	d, sh, clock, tick, at := twinOnShard(t)
	base := clock.Now()
	var done atomic.Int64
	type obs struct {
		cur int64
		pos hw.Vec3
	}
	const readers = 3
	results := make([][]obs, readers)
	var wg sync.WaitGroup
	for g := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var snap Snapshot
			for done.Load() < int64(passes) {
				p := sh.stats.ticks.Load()
				if (p/1500)%2 == 1 {
					runtime.Gosched()
					continue
				}
				switch rng.IntN(4) {
				case 0:
					d.PublishSeq()
				case 1:
					d.Load(&snap)
				default:
					c := d.LoadCurrent(&snap)
					results[g] = append(results[g], obs{c, snap.State.PositionM})
				}
				for range rng.IntN(50) {
					runtime.Gosched()
				}
			}
		}()
	}
	for i := 1; i <= passes; i++ {
		tick()
		done.Store(int64(i))
	}
	wg.Wait()
	bad, n := 0, 0
	for _, rs := range results {
		for _, o := range rs {
			n++
			if o.cur <= base || at[o.cur] == o.pos {
				continue
			}
			if bad < 5 {
				j := o.cur
				for j > base && at[j] != o.pos {
					j -= ms
				}
				t.Errorf("current as of pass %d but the position is pass %d's: presented %d ms fresher than it is",
					(o.cur-base)/ms, (j-base)/ms, (o.cur-j)/ms)
			}
			bad++
		}
	}
	if n == 0 {
		t.Fatal("no LoadCurrent read ran")
	}
	t.Logf("%d LoadCurrent reads, %d presented fresher than the truth", n, bad)
}

// TestLoadCurrentAfterAFailedPublish: a sparse publish that finds its
// spare buffer held by a reader leaves the state unpublished until the
// block's next one; meanwhile LoadCurrent must not say the older snapshot
// is current as of the failed pass.
func TestLoadCurrentAfterAFailedPublish(t *testing.T) {
	d, sh, clock, tick, at := twinOnShard(t)
	for range 2000 { // past the first hot spell, unread
		tick()
	}
	r := d.slot.Load()
	for (sh.passDone.Load()+1+uint64(r.blk.phase))%publishIdleEvery != 0 {
		tick()
	}
	// A reader preempted in its copy holds the spare buffer over the due pass.
	c := &r.pub
	held := &c.bufs[(c.seq.Load()+1)&1]
	held.readers.Add(1)
	tick()
	held.readers.Add(-1)
	for range 40 {
		tick()
	}
	var snap Snapshot
	cur := d.LoadCurrent(&snap)
	now := clock.Now()
	if want, ok := at[cur]; !ok || want != snap.State.PositionM {
		t.Fatalf("current as of %d (%d ms ago), snapshot of %d: presented %d ms fresher than it is",
			cur, (now-cur)/ms, snap.TimeNs, (cur-snap.TimeNs)/ms)
	}
}

// TestLoadCurrentAtTheHotSpellsEnd: the hot spell's last pass
// (hotPass+publishHotTicks-1) is the last LoadCurrent may call current for
// an arm nobody read since; from the pass after it the arm publishes
// sparsely again (review7).
func TestLoadCurrentAtTheHotSpellsEnd(t *testing.T) {
	d, sh, _, tick, at := twinOnShard(t)
	for range 3000 {
		tick()
	}
	r := d.slot.Load()
	for (sh.passDone.Load()+1+uint64(r.blk.phase))%publishIdleEvery != 5 {
		tick()
	}
	d.PublishSeq() // a mark, taken up by the next pass
	tick()
	hp := d.hotPass.Load()
	if hp != sh.passDone.Load() {
		t.Fatalf("hotPass %d, pass %d", hp, sh.passDone.Load())
	}
	for sh.passDone.Load() < hp+publishHotTicks {
		tick()
	}
	var snap Snapshot
	cur := d.LoadCurrent(&snap)
	if want, ok := at[cur]; !ok || want != snap.State.PositionM {
		t.Fatalf("current as of %d, snapshot of %d: presented %d ms fresher than it is",
			cur, snap.TimeNs, (cur-snap.TimeNs)/ms)
	}
}

// twinOnShard puts a moving simulated arm d on a one-shard scheduler with a
// manual clock, beside a twin stepped directly; tick runs one pass and
// records where the twin was at its time (at), the truth a LoadCurrent
// answer is checked against.
func twinOnShard(t *testing.T) (d *Device, sh *shard, clock *looptest.Clock, tick func(), at map[int64]hw.Vec3) {
	clock = looptest.NewClock(1000 * ms)
	newArm := func() *sim.Arm {
		return sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: sim.MotionCircle})
	}
	opts := DeviceOptions{PeriodNs: ms, Clock: clock}
	d, twin := NewDevice(newArm(), opts), NewDevice(newArm(), opts)
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	s.Add(d)
	t.Cleanup(s.Stop)
	sh = s.shards[0]
	at = map[int64]hw.Vec3{}
	var tw Snapshot
	tick = func() {
		now := clock.Advance(ms)
		twin.Step(now)
		sh.passLocked(now, clock)
		twin.Load(&tw)
		at[now] = tw.State.PositionM
	}
	return d, sh, clock, tick, at
}

// TestLoadCurrentWhileTheArmMovesBetweenRecords: a reader calls LoadCurrent
// in a loop while the arm leaves its shard, is stepped directly for a few
// ticks, joins the other scheduler's shard, and so on, many times (a twin
// stepped directly every tick is the truth). Every load must be one
// published state, not a mix of two records' buffers: the position is the
// one the twin had at the snapshot's own time. And its as-of time claims
// no more freshness than the state has: it is not before the snapshot's
// time, not after the last tick begun when the load returned, and the twin
// was at the loaded position then.
func TestLoadCurrentWhileTheArmMovesBetweenRecords(t *testing.T) {
	moves := 3000
	if testing.Short() {
		moves = 500
	}
	clock := looptest.NewClock(1000 * ms)
	newArm := func() *sim.Arm {
		return sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: sim.MotionCircle})
	}
	opts := DeviceOptions{PeriodNs: ms, Clock: clock}
	d, twin := NewDevice(newArm(), opts), NewDevice(newArm(), opts)
	scheds := [2]*Scheduler{
		NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock}),
		NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock}),
	}
	for _, s := range scheds {
		t.Cleanup(s.Stop)
	}
	// The truth by tick time, shared with the reader: written before the
	// tick's time is published (lastTick), so a reader only looks up times
	// already in it.
	var atMu sync.Mutex
	at := map[int64]hw.Vec3{}
	var lastTick, done atomic.Int64
	var tw Snapshot
	on := -1 // the scheduler d is on, or -1: stepped directly
	tick := func() {
		now := clock.Now() + ms
		twin.Step(now)
		twin.Load(&tw)
		atMu.Lock()
		at[now] = tw.State.PositionM
		atMu.Unlock()
		lastTick.Store(now)
		clock.Advance(ms)
		if on < 0 {
			d.Step(now)
		}
		for _, s := range scheds {
			s.shards[0].passLocked(now, clock)
		}
	}
	tick()

	type fault struct {
		cur, snapNs, bound int64
		pos, atCur, atSnap hw.Vec3
		okCur, okSnap      bool
	}
	var faults []fault
	var reads atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		var snap Snapshot
		for done.Load() == 0 {
			cur := d.LoadCurrent(&snap)
			bound := lastTick.Load()
			n := reads.Add(1)
			atMu.Lock()
			atCur, okCur := at[cur]
			atSnap, okSnap := at[snap.TimeNs]
			atMu.Unlock()
			pos := snap.State.PositionM
			if cur < snap.TimeNs || cur > bound || !okCur || atCur != pos || !okSnap || atSnap != pos {
				faults = append(faults, fault{cur, snap.TimeNs, bound, pos, atCur, atSnap, okCur, okSnap})
			}
			if n%4 == 0 {
				runtime.Gosched()
			}
		}
	})
	// readOnce lets the reader read at least once before the moves go on:
	// on a starved machine (one CPU, other processes) the reader ran 520
	// times over 3000 moves, so most moves were made unread. Where in the
	// move it waits is drawn: on the shard or off it.
	readOnce := func() {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for n := reads.Load(); reads.Load() == n; runtime.Gosched() {
			if time.Now().After(deadline) {
				done.Store(1)
				wg.Wait()
				t.Fatalf("the reader made no LoadCurrent in a minute (%d reads before)", n)
			}
		}
	}
	rng, where := rand.New(rand.NewPCG(3, 4)), rand.New(rand.NewPCG(5, 6))
	for m := range moves {
		onShard := where.IntN(2) == 0
		// On a shard for a spell of passes (mostly short, so moves are
		// many; one in eight past a sparse publish), then off it for a
		// few direct steps.
		to := m % 2
		scheds[to].Add(d)
		on = to
		spell := 1 + rng.IntN(4)
		if m%8 == 0 {
			spell = 1 + rng.IntN(3*publishIdleEvery)
		}
		for range spell {
			tick()
		}
		if onShard {
			readOnce()
		}
		scheds[to].Remove(d)
		on = -1
		for range rng.IntN(4) {
			tick()
		}
		if !onShard {
			readOnce()
		}
	}
	done.Store(1)
	wg.Wait()
	for i, f := range faults {
		if i == 5 {
			break
		}
		t.Errorf("current as of %d, snapshot of %d, last tick %d: position %+v; the twin was at %+v (%v) then and %+v (%v) at the snapshot's time",
			f.cur, f.snapNs, f.bound, f.pos, f.atCur, f.okCur, f.atSnap, f.okSnap)
	}
	t.Logf("%d reads over %d moves, %d faults", reads.Load(), moves, len(faults))
}

// TestLoadCurrentOfAnArmThatSleepsAndWakes: a simulated arm on a shard
// (and a twin stepped directly, the truth) pushed, released, come to rest
// and asleep: it publishes nothing, yet its state is exactly current, so a
// read after a quiet spell must not call it older than one sparse period
// (publishIdleEvery ticks) and the read a pass later calls it current as
// of that pass; read often, its age must not grow while it sleeps. Then a
// push wakes it: the first read after the wake, with no read in between,
// must be true (the twin was at the loaded position at the as-of time) and
// no older than one sparse period, and the next pass's read is that pass's
// moving state.
func TestLoadCurrentOfAnArmThatSleepsAndWakes(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	opts := DeviceOptions{PeriodNs: ms, Clock: clock}
	newArm := func() *sim.Arm { return sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: sim.MotionNone}) }
	d, twin := NewDevice(newArm(), opts), NewDevice(newArm(), opts)
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	s.Add(d)
	defer s.Stop()
	sh := s.shards[0]
	at := map[int64]hw.Vec3{}
	var tw Snapshot
	tick := func() int64 {
		now := clock.Advance(ms)
		twin.Step(now)
		sh.passLocked(now, clock)
		twin.Load(&tw)
		at[now] = tw.State.PositionM
		return now
	}
	push := func(owner uint64, c hw.Command) {
		for _, dev := range []*Device{d, twin} {
			dev.Register().Claim(owner)
			dev.Register().Write(owner, 1, clock.Now()+time64(500), &c, nil)
		}
	}
	release := func(owner uint64) {
		for _, dev := range []*Device{d, twin} {
			dev.Register().Release(owner)
		}
	}
	// read asks LoadCurrent and checks the answer is true: the twin was
	// where the snapshot says at the as-of time, which is not after now.
	read := func(what string, now int64) (age int64, snap Snapshot) {
		t.Helper()
		cur := d.LoadCurrent(&snap)
		if want, ok := at[cur]; !ok || cur > now || cur < snap.TimeNs || want != snap.State.PositionM {
			t.Fatalf("%s: current as of %d (%d ms before now), snapshot of %d at %+v, but the arm was at %+v then",
				what, cur, (now-cur)/ms, snap.TimeNs, snap.State.PositionM, want)
		}
		return now - cur, snap
	}
	for range 20 {
		tick()
	}
	push(4, force(2, -1, 0.5))
	for range 30 {
		tick()
	}
	release(4)
	for range 5000 {
		tick()
		if r := d.slot.Load(); r != nil && r.asleep && twin.asleep {
			break
		}
	}
	if r := d.slot.Load(); r == nil || !r.asleep {
		t.Fatal("the arm did not come to rest and sleep")
	}
	restPos := tw.State.PositionM

	// Asleep, read after quiet spells of several sparse periods each.
	for spell := range 4 {
		var now int64
		for range 3*publishIdleEvery + 17*spell {
			now = tick()
		}
		age, snap := read(fmt.Sprintf("asleep, spell %d, first read", spell), now)
		if snap.State.PositionM != restPos {
			t.Fatalf("asleep, spell %d: loaded %+v, the arm rests at %+v", spell, snap.State.PositionM, restPos)
		}
		if age >= int64(publishIdleEvery)*ms {
			t.Errorf("asleep, spell %d: the first read calls the state %d ms old, want under %d: an exact state reported as growing old", spell, age/ms, publishIdleEvery)
		}
		now = tick()
		if age, _ := read(fmt.Sprintf("asleep, spell %d, the pass after", spell), now); age != 0 {
			t.Errorf("asleep, spell %d, read the pass after a read: %d ms old, want current", spell, age/ms)
		}
	}
	// Asleep and read every pass: the age stays zero.
	for i := range 2 * publishIdleEvery {
		now := tick()
		if age, _ := read("asleep, read every pass", now); age != 0 {
			t.Fatalf("asleep, read every pass, pass %d: %d ms old, want current", i, age/ms)
		}
	}
	if r := d.slot.Load(); r == nil || !r.asleep {
		t.Fatal("reading every pass woke the arm: the test no longer reads an asleep arm")
	}

	// Unread for a spell, then a push wakes it; the first read after.
	for range 3 * publishIdleEvery {
		tick()
	}
	push(5, force(-1, 1, 0))
	var now int64
	for range 5 {
		now = tick()
	}
	if tw.State.PositionM == restPos {
		t.Fatal("the push did not move the twin")
	}
	age, _ := read("woken, first read", now)
	if age >= int64(publishIdleEvery)*ms {
		t.Errorf("woken, first read: %d ms old, want under %d", age/ms, publishIdleEvery)
	}
	now = tick()
	age, snap := read("woken, the pass after", now)
	if age != 0 || snap.State.PositionM != tw.State.PositionM {
		t.Errorf("woken, read the pass after a read: %d ms old at %+v, want current at %+v", age/ms, snap.State.PositionM, tw.State.PositionM)
	}
	release(5)
}

// deriveGate is a simulated arm whose DeriveState, once armed, stops the
// reader that calls it until released: a reader preempted after its copy
// and before LoadCurrent's checks, at a chosen moment.
type deriveGate struct {
	*sim.Arm
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *deriveGate) DeriveState(st *hw.State, leftHanded bool) {
	if g.armed.CompareAndSwap(true, false) {
		g.entered <- struct{}{}
		<-g.release
	}
	g.Arm.DeriveState(st, leftHanded)
}

// TestLoadCurrentOfAStateLoadedBeforeTheArmJoinedItsRecord: attach stores
// the device's shard record (slot) before its cell, so a reader may load
// the state from the device's own cell, where the last direct step's
// publish may have failed (a reader held the spare buffer) and left an
// older state than the one attach hands to the record. If the cell is the
// record's by the time LoadCurrent checks, the state it copied is still
// not the record's: it must not be called current as of the shard's pass
// (review39: current as of 46440 ms, the position of 46439 ms, once in
// 932,507 reads of TestLoadCurrentWhileTheArmMovesBetweenRecords). The
// window is made deterministic: the device's cell is set back to its own
// (as attach leaves it between the two stores) and the reader is stopped
// after its copy while the cell is made the record's again.
func TestLoadCurrentOfAStateLoadedBeforeTheArmJoinedItsRecord(t *testing.T) {
	clock := looptest.NewClock(1000 * ms)
	opts := DeviceOptions{PeriodNs: ms, Clock: clock}
	newArm := func() *sim.Arm {
		return sim.NewArm(sim.ArmOptions{Index: 2, PeriodS: 0.001, Motion: sim.MotionCircle})
	}
	gate := &deriveGate{Arm: newArm(), entered: make(chan struct{}), release: make(chan struct{})}
	d, twin := NewDevice(gate, opts), NewDevice(newArm(), opts)
	s := NewScheduler(SchedulerOptions{PeriodNs: ms, Shards: 1, Clock: clock})
	t.Cleanup(s.Stop)
	sh := s.shards[0]
	at := map[int64]hw.Vec3{}
	var tw Snapshot
	onShard := false
	tick := func() {
		now := clock.Advance(ms)
		twin.Step(now)
		twin.Load(&tw)
		at[now] = tw.State.PositionM
		if !onShard {
			d.Step(now)
		}
		sh.passLocked(now, clock)
	}
	for range 3 {
		tick()
	}
	own := d.cell.Load() // the state of the last direct step
	s.Add(d)
	onShard = true
	r := d.slot.Load()
	if r == nil {
		t.Fatal("the arm did not join a shard record")
	}
	// The arm moves on, and the last pass is its block's sparse publish
	// (a pass LoadCurrent may call the state current as of).
	for range 3 {
		tick()
	}
	for (sh.passDone.Load()+uint64(r.blk.phase))%publishIdleEvery != 0 {
		tick()
	}

	d.cell.Store(own)
	gate.armed.Store(true)
	type result struct {
		cur  int64
		snap Snapshot
	}
	got := make(chan result, 1)
	go func() {
		var res result
		res.cur = d.LoadCurrent(&res.snap)
		got <- res
	}()
	select {
	case <-gate.entered:
	case <-time.After(time.Minute):
		t.Fatal("the reader did not copy a state in a minute")
	}
	d.cell.Store(&r.pub)
	close(gate.release)
	res := <-got
	if pos, ok := at[res.cur]; !ok || res.cur < res.snap.TimeNs || pos != res.snap.State.PositionM {
		t.Errorf("current as of %d ms, snapshot of %d ms at %+v; the arm was at %+v (%v) then",
			res.cur/ms, res.snap.TimeNs/ms, res.snap.State.PositionM, pos, ok)
	}
}
