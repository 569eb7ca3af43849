package loop

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// exchangeSampleEvery: a shard times each device's exchange on one tick in
// this many (staggered across devices), which keeps the Exchange histogram
// representative while saving most of the clock reads.
const exchangeSampleEvery = 8

// SchedulerOptions configure a Scheduler. Zero fields take the defaults
// noted.
type SchedulerOptions struct {
	// PeriodNs is the tick period of every shard (default 1 ms).
	PeriodNs int64
	// Shards is the number of shard threads (default GOMAXPROCS).
	Shards int
	// Clock is the time source (default SystemClock()).
	Clock Clock
	// OnRateWarning receives a shard's EventRateWarning (on the shard's
	// goroutine; it must not block).
	OnRateWarning func(Event)
	// RealtimePriority, 1..99, runs the shard threads SCHED_FIFO at that
	// priority (Linux, with CAP_SYS_NICE; best effort, see
	// Stats.Realtime). 0 keeps normal scheduling. A shard that cannot keep
	// up never sleeps, so an RT shard can starve the rest of the process
	// on a small machine: use it where ticks have headroom.
	RealtimePriority int
	// ShardFill is how many devices a shard takes before the next one is
	// used (default 256); past that, devices go to the least loaded shard.
	ShardFill int
	// SpinFrom: a shard holding at least this many devices spins the last
	// stretch before each deadline, as a hardware loop's pacer does
	// (default 1024; negative: never). Fewer devices need no sub-50 µs
	// precision and the shard sleeps to each deadline; a busy shard that
	// slept missed deadlines waking up (on a loaded 2-core host, 1 % of
	// ticks from about 2,000 arms, against about 7,400 spinning: see
	// bench/results.md), and its spin, a few percent of a core, is small
	// beside its stepping.
	SpinFrom int
	// Procs, when set, lets a spinning shard sleep holding its P
	// (Pacer.KeepP) and lends the process a P for it meanwhile. Nil: a
	// spinning shard's sleep is a system call the runtime may take its P
	// from, as before.
	Procs *Procs
}

// DefaultSpinFrom is SchedulerOptions.SpinFrom's default. The bare loop
// of the benchmarks (hapticd baseline-arms) paces a thread of that many
// arms or more as a shard does.
const DefaultSpinFrom = 1024

// Scheduler steps many simulated devices from a few threads: each shard is
// one goroutine paced by a Pacer (locked to an OS thread where run says
// why), and each tick it steps every device it holds. A device's Stats
// report its shard's period and overruns.
//
// Simulated arms live in the shard's records (simarm.go): their physics
// and hot loop state side by side in blocks, stepped in one linear pass;
// other devices are stepped through a list of pointers. Device lists and
// block lists are copy-on-write: Add and Remove publish a new list that the
// shard picks up on its next tick, so a tick never waits for them.
type Scheduler struct {
	opts   SchedulerOptions
	shards []*shard

	mu      sync.Mutex // guards the following; Add, Remove, Start and Stop only
	started bool
	stopped bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

type shard struct {
	// mu is held by the shard while it steps its devices, so Remove can
	// wait out a tick that may still step the removed device and Halt can
	// act on a device in a record between two ticks.
	mu      sync.Mutex
	devices atomic.Pointer[[]*Device]
	blocks  atomic.Pointer[[]*armBlock]
	n       atomic.Int64 // devices held, in the list and in records
	arms    atomic.Int64 // of which in records
	running atomic.Bool
	stats   *runnerStats
	wake    chan struct{} // Add's signal to a shard that sleeps with no devices
	free    []*simArm     // records to reuse; the Scheduler's mu guards it
	// spareCold is the controlColds the shard allocated for blocks that
	// have not needed them yet (colds), which coldMu guards.
	coldMu    sync.Mutex
	spareCold []*[armBlockLen]controlCold
	// passNs are the Clock times of the latest passes, by pass number
	// modulo publishIdleEvery, and passDone is the number of the last pass
	// completed: Device.LoadCurrent reads them to say as of when a state
	// its records published is current (current.go). Two stores a pass.
	passNs   [publishIdleEvery]atomic.Int64
	passDone atomic.Uint64
}

// record returns a free record, adding a block when none is left. The
// caller holds the Scheduler's mu.
func (sh *shard) record() *simArm {
	if n := len(sh.free); n > 0 {
		r := sh.free[n-1]
		sh.free = sh.free[:n-1]
		return r
	}
	// On huge pages when asked (HAPTICD_HUGE_PAGES=1): a pass streams every
	// block (hugepages.go).
	b := newHuge[armBlock]()
	old := *sh.blocks.Load()
	for i := range b.arms {
		b.arms[i].armCold = &b.cold[i]
		b.arms[i].sh, b.arms[i].blk, b.arms[i].idx = sh, b, uint8(i)
	}
	// By block: a tick's sparse publishes fill whole blocks' buffers in
	// order, which the prefetcher streams, where one record in
	// publishIdleEvery of every block missed the cache each.
	b.phase = uint16(len(old) % publishIdleEvery)
	for i := armBlockLen - 1; i > 0; i-- {
		sh.free = append(sh.free, &b.arms[i])
	}
	next := make([]*armBlock, len(old), len(old)+1)
	copy(next, old)
	next = append(next, b)
	sh.blocks.Store(&next)
	return &b.arms[0]
}

// NewScheduler returns a stopped scheduler; Start starts its shards.
func NewScheduler(o SchedulerOptions) *Scheduler {
	if o.PeriodNs <= 0 {
		o.PeriodNs = int64(time.Millisecond)
	}
	if o.Shards <= 0 {
		o.Shards = runtime.GOMAXPROCS(0)
	}
	if o.Clock == nil {
		o.Clock = SystemClock()
	}
	if o.ShardFill <= 0 {
		o.ShardFill = defaultShardFill
	}
	if o.SpinFrom == 0 {
		o.SpinFrom = DefaultSpinFrom
	}
	s := &Scheduler{opts: o, stop: make(chan struct{})}
	for range o.Shards {
		sh := &shard{stats: newRunnerStats(o.PeriodNs), wake: make(chan struct{}, 1)}
		sh.devices.Store(new([]*Device))
		sh.blocks.Store(new([]*armBlock))
		s.shards = append(s.shards, sh)
	}
	return s
}

// Start starts the shards. It does nothing if the scheduler was started or
// stopped before.
func (s *Scheduler) Start() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started || s.stopped {
		return
	}
	s.started = true
	for _, sh := range s.shards {
		sh.running.Store(true)
		s.wg.Add(1)
		go s.run(sh)
	}
}

// Stop stops the shards, waits for them, and halts every device they held.
// The scheduler cannot be started again.
func (s *Scheduler) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	close(s.stop)
	s.wg.Wait()
	for _, sh := range s.shards {
		list := *sh.devices.Load()
		for _, d := range list {
			d.Halt()
			d.running.Store(false)
		}
		sh.devices.Store(new([]*Device))
		sh.n.Add(-int64(len(list)))
		for _, b := range *sh.blocks.Load() {
			for i := range b.arms {
				if d := b.arms[i].dev.Load(); d != nil {
					d.Halt()
					sh.leave(&b.arms[i], d)
				}
			}
		}
	}
}

// leave takes d out of its record r; the caller holds the Scheduler's mu.
func (sh *shard) leave(r *simArm, d *Device) {
	r.dev.Store(nil)
	sh.mu.Lock() // the shard's tick that may still step d is over
	d.detach(r)
	r.want.Store(0) // d's reader's mark, not the record's next device's
	sh.mu.Unlock()
	sh.free = append(sh.free, r)
	sh.arms.Add(-1)
	sh.n.Add(-1)
	d.running.Store(false)
}

// defaultShardFill is how many devices a shard takes before the next shard
// wakes: a few devices cost less than one shard's own wake-ups, so they
// share one thread, and an idle shard sleeps instead of ticking.
const defaultShardFill = 256

// Add puts d on the first shard with fewer than ShardFill devices, or, once
// every shard has that many, on the one with the fewest. It does nothing if
// d is nil, already has a runner, or the scheduler was stopped.
func (s *Scheduler) Add(d *Device) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d == nil || s.stopped || !d.running.CompareAndSwap(false, true) {
		return
	}
	var best *shard
	for _, sh := range s.shards {
		if sh.n.Load() < int64(s.opts.ShardFill) {
			best = sh
			break
		}
	}
	if best == nil {
		best = s.shards[0]
		for _, sh := range s.shards[1:] {
			if sh.n.Load() < best.n.Load() {
				best = sh
			}
		}
	}
	d.runner.Store(best.stats)
	if m, ok := d.drv.(coreMover); ok {
		// The shard holds the token from now on; a Halt or a direct Step
		// may hold it for a moment.
		for !d.token.CompareAndSwap(false, true) {
			runtime.Gosched()
		}
		d.joinTick.Store(best.stats.ticks.Load())
		d.attach(best.record(), m)
		best.arms.Add(1)
	} else {
		old := *best.devices.Load()
		next := make([]*Device, len(old), len(old)+1)
		copy(next, old)
		next = append(next, d)
		best.devices.Store(&next)
	}
	best.n.Add(1)
	select {
	case best.wake <- struct{}{}:
	default:
	}
}

// Remove takes d off its shard and returns once the shard will not step it
// again, so the caller may then Halt and Close its driver.
func (s *Scheduler) Remove(d *Device) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d == nil {
		return
	}
	if r := d.slot.Load(); r != nil {
		if slices.Contains(s.shards, r.sh) {
			r.sh.leave(r, d)
		}
		return
	}
	for _, sh := range s.shards {
		old := *sh.devices.Load()
		i := slices.Index(old, d)
		if i < 0 {
			continue
		}
		next := make([]*Device, 0, len(old)-1)
		next = append(next, old[:i]...)
		next = append(next, old[i+1:]...)
		sh.devices.Store(&next)
		// A tick under way may have loaded the old list; wait it out.
		sh.mu.Lock()
		sh.mu.Unlock() //nolint:staticcheck // an empty critical section: the wait is the point
		sh.n.Add(-1)
		d.running.Store(false)
		return
	}
}

// Len returns how many devices the scheduler holds.
func (s *Scheduler) Len() int {
	n := 0
	for _, sh := range s.shards {
		n += int(sh.n.Load())
	}
	return n
}

// run is a shard's goroutine.
func (s *Scheduler) run(sh *shard) {
	defer s.wg.Done()
	defer sh.running.Store(false)
	// On Linux a shard with no real-time priority is locked to a thread
	// only while it spins (see shardThread); elsewhere the pacer blocks its
	// thread, so it keeps one.
	th := shardThread{rtPriority: s.opts.RealtimePriority, procs: s.opts.Procs}
	defer th.release()
	th.pace(false)
	sh.stats.realtime.Store(threadRealtime()) // true under chrt, locked or not
	p := NewPacer(s.opts.PeriodNs, s.opts.Clock)
	// A few simulated devices need no sub-50 µs tick precision; a spinning
	// shard per core would burn up to a fifth of each core doing nothing
	// (see SpinFrom).
	p.SleepOnly()
	for !s.ticks(sh, p, &th) {
	}
}

// shardThread is the OS thread a shard's goroutine holds, if any.
//
// A sleep-only pacer parks the goroutine on the runtime's poller; were it
// locked to its thread, every tick would hand its P to another thread and
// back (stoplockedm, startlockedm: 5.5 % of the service's CPU in a
// one-client lock-step profile, and a futex wake that preempts the
// session's thread). So on Linux, without real-time priority, a shard
// holds a thread only while its pacer spins (SpinFrom devices or more):
// then it sleeps in clock_nanosleep, a syscall during which sysmon may give
// its P to another goroutine, and an unlocked goroutine coming back from it
// queues for a P behind whatever runs there. Measured with 14,000 moving
// arms on 2 cores: 10.9 % of ticks overrun unlocked, 0.5 % locked, at about
// the same CPU (131 % and 120 %).
//
// A spinning shard with Procs also sleeps holding its P (Pacer.KeepP), and
// Procs lends the process another P meanwhile: in clock_nanosleep as a
// system call, with no P idle, sysmon retook the shard's P every sleep
// (docs/performance.md, "Capacity with effects").
type shardThread struct {
	rtPriority int
	procs      *Procs
	held       bool
	keepsP     bool // the pacer sleeps holding its P; procs lent one
	restore    func()
}

// pace prepares the thread for a spinning pacer or a sleep-only one, and
// reports whether the pacer may keep its P while it sleeps.
func (t *shardThread) pace(spin bool) (keepP bool) {
	switch {
	case spin || t.rtPriority > 0 || runtime.GOOS != "linux":
		t.hold()
	default:
		t.release()
	}
	switch {
	case spin && !t.keepsP:
		t.keepsP = t.procs.Hold()
	case !spin && t.keepsP:
		t.procs.Release()
		t.keepsP = false
	}
	return t.keepsP
}

// hold locks the goroutine to its thread and tunes the thread for pacing.
func (t *shardThread) hold() {
	if t.held {
		return
	}
	runtime.LockOSThread()
	_, t.restore = tuneThread(t.rtPriority)
	t.held = true
}

// release undoes hold and gives back a P procs lent: the thread's settings
// first, so no other goroutine inherits them.
func (t *shardThread) release() {
	if t.keepsP {
		t.procs.Release()
		t.keepsP = false
	}
	if !t.held {
		return
	}
	t.restore()
	runtime.UnlockOSThread()
	t.held = false
}

// ticks runs the shard's ticks until Stop (returning true). A panic in a
// device's step fails and halts that device and returns false, so the shard
// carries on with the others.
func (s *Scheduler) ticks(sh *shard, p *Pacer, th *shardThread) (stopped bool) {
	var cur *Device
	locked := false
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if locked {
			sh.mu.Unlock()
		}
		if cur != nil {
			cur.failed.Store(true)
			// Halted before it is reported: the registry closes the
			// driver once it hears, and the halt must be over by then.
			haltAfterPanic(cur)
			cur.emit(Event{Kind: EventFailed, Err: fmt.Errorf("actors/loop: step of %s panicked; the device was halted and stopped: %v", cur.info.ID, v)})
		}
	}()
	clock := s.opts.Clock
	for {
		select {
		case <-s.stop:
			return true
		default:
		}
		if sh.n.Load() == 0 {
			// Nothing to step: sleep until a device arrives, then start
			// a fresh grid (the idle time is not an overrun). An idle
			// shard does not spin, and gives back a P lent for it.
			p.Pause()
			th.pace(false)
			select {
			case <-s.stop:
				return true
			case <-sh.wake:
			}
			p.Restart()
			continue
		}
		spin := s.opts.SpinFrom > 0 && sh.n.Load() >= int64(s.opts.SpinFrom)
		p.Spin(spin)
		p.KeepP(th.pace(spin))
		now, overrun := p.Wait()
		if warn, p99 := sh.stats.tick(now, overrun); warn && s.opts.OnRateWarning != nil {
			if held, ok := sh.stats.limitWarning(now); ok {
				s.opts.OnRateWarning(Event{Kind: EventRateWarning, PeriodP99Ns: p99, TargetNs: sh.stats.targetNs, Suppressed: held})
			}
		}
		sh.mu.Lock()
		locked = true
		sh.pass(now, clock, &cur)
		locked = false
		sh.mu.Unlock()
		sh.stats.busy.Record(clock.Now() - now)
		sh.stats.endTick()
	}
}

// pass steps the shard's devices once; the caller holds sh.mu. cur is the
// device being stepped, for the caller's panic handling.
func (sh *shard) pass(now int64, clock Clock, cur **Device) {
	tick := sh.stats.ticks.Add(1)
	// The records first, a block at a time; each tick one arm nobody
	// controls has its step timed (a clock read costs a fair part of a
	// step).
	ps := passScratch{tick: tick, clock: clock, rs: sh.stats, now: now}
	ps.sample = 1
	if n := sh.arms.Load(); n > 0 {
		ps.sample += tick % uint64(n)
	}
	blocks := *sh.blocks.Load()
	for bi, b := range blocks {
		ps.first = uint64(bi * armBlockLen)
		var next *armBlock
		if bi+1 < len(blocks) {
			next = blocks[bi+1]
		}
		b.pass(&ps, cur, next)
	}
	for i, d := range *sh.devices.Load() {
		*cur = d
		d.stepAt(now, (tick+uint64(i))%exchangeSampleEvery == 0)
	}
	*cur = nil
	// The pass's time, then its number (passTime reads them in that order).
	sh.passNs[tick%publishIdleEvery].Store(now)
	sh.passDone.Store(tick)
	sh.stats.endTick() // the exchange timed in this pass (ticks ends it again after Busy)
}

// ShardStats is one scheduler shard's loop: the figures every device on it
// reports as its own, once.
type ShardStats struct {
	// Devices is how many devices the shard steps.
	Devices int
	Stats   Stats
	// PeriodBuckets is the shard's period histogram since it started, its
	// non-empty buckets lowest first: two reads' difference is a window's
	// distribution, where Stats.Period covers the shard's whole life.
	PeriodBuckets []Bucket
	// BusyBuckets is the histogram of the shard's passes (Stats.Busy: each
	// tick from the pacer's wake-up to the last device stepped), likewise
	// since it started, for a window's distribution of pass durations.
	BusyBuckets []Bucket
}

// Bucket is one histogram bucket: values in [LoNs, HiNs), N of them.
type Bucket struct {
	LoNs, HiNs int64
	N          uint64
}

// Shards returns each shard's loop figures, in shard order. It reads them
// as a device's Stats does, without waiting for a tick.
func (s *Scheduler) Shards() []ShardStats {
	out := make([]ShardStats, 0, len(s.shards))
	for _, sh := range s.shards {
		r := sh.stats
		sums := r.summaries()
		st := ShardStats{Devices: int(sh.n.Load()), Stats: Stats{TargetNs: r.targetNs, Period: sums.period, Busy: sums.busy,
			Exchange: sums.exchange, Overruns: r.overruns.Load(), Ticks: r.ticks.Load(), Realtime: r.realtime.Load()}}
		r.period.Buckets(func(lo, hi int64, n uint64) {
			st.PeriodBuckets = append(st.PeriodBuckets, Bucket{LoNs: lo, HiNs: hi, N: n})
		})
		r.busy.Buckets(func(lo, hi int64, n uint64) {
			st.BusyBuckets = append(st.BusyBuckets, Bucket{LoNs: lo, HiNs: hi, N: n})
		})
		out = append(out, st)
	}
	return out
}
