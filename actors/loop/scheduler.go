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
}

// Scheduler steps many simulated devices from a few threads: each shard is
// one goroutine paced by a Pacer (locked to an OS thread where run says
// why), and each tick it steps every device it holds. A device's Stats
// report its shard's period and overruns.
//
// Device lists are copy-on-write: Add and Remove publish a new list that the
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
	devices atomic.Pointer[[]*Device]
	// epoch is odd while the shard is stepping its devices, so Remove can
	// wait out a tick that may still step the removed device.
	epoch   atomic.Uint64
	running atomic.Bool
	stats   *runnerStats
	wake    chan struct{} // Add's signal to a shard that sleeps with no devices
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
	s := &Scheduler{opts: o, stop: make(chan struct{})}
	for range o.Shards {
		sh := &shard{stats: newRunnerStats(o.PeriodNs), wake: make(chan struct{}, 1)}
		sh.devices.Store(new([]*Device))
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
		for _, d := range *sh.devices.Load() {
			d.Halt()
			d.running.Store(false)
		}
		sh.devices.Store(new([]*Device))
	}
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
		if len(*sh.devices.Load()) < s.opts.ShardFill {
			best = sh
			break
		}
	}
	if best == nil {
		best = s.shards[0]
		for _, sh := range s.shards[1:] {
			if len(*sh.devices.Load()) < len(*best.devices.Load()) {
				best = sh
			}
		}
	}
	old := *best.devices.Load()
	next := make([]*Device, len(old), len(old)+1)
	copy(next, old)
	next = append(next, d)
	best.devices.Store(&next)
	d.runner.Store(best.stats)
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
		if e := sh.epoch.Load(); e%2 == 1 {
			for sh.epoch.Load() == e && sh.running.Load() {
				time.Sleep(20 * time.Microsecond)
			}
		}
		d.running.Store(false)
		return
	}
}

// Len returns how many devices the scheduler holds.
func (s *Scheduler) Len() int {
	n := 0
	for _, sh := range s.shards {
		n += len(*sh.devices.Load())
	}
	return n
}

// run is a shard's goroutine.
func (s *Scheduler) run(sh *shard) {
	defer s.wg.Done()
	defer sh.running.Store(false)
	// On Linux a shard with no real-time priority is not locked to a
	// thread: its sleep-only pacer parks on the runtime's poller, and a
	// locked goroutine that parks hands its P to another thread and back on
	// every tick (stoplockedm, startlockedm: 5.5 % of the service's CPU in
	// a one-client lock-step profile, and a futex wake that preempts the
	// session's thread). Elsewhere the pacer blocks its thread, so it keeps
	// one.
	if s.opts.RealtimePriority > 0 || runtime.GOOS != "linux" {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		_, restore := tuneThread(s.opts.RealtimePriority)
		defer restore()
	}
	sh.stats.realtime.Store(threadRealtime()) // true under chrt, locked or not
	p := NewPacer(s.opts.PeriodNs, s.opts.Clock)
	// Simulated devices need no sub-50 µs tick precision; a spinning shard
	// per core would burn a fifth of each core doing nothing.
	p.SleepOnly()
	for !s.ticks(sh, p) {
	}
}

// ticks runs the shard's ticks until Stop (returning true). A panic in a
// device's step fails and halts that device and returns false, so the shard
// carries on with the others.
func (s *Scheduler) ticks(sh *shard, p *Pacer) (stopped bool) {
	var cur *Device
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if sh.epoch.Load()%2 == 1 {
			sh.epoch.Add(1)
		}
		if cur != nil {
			cur.failed.Store(true)
			cur.emit(Event{Kind: EventFailed, Err: fmt.Errorf("actors/loop: step of %s panicked; the device was halted and stopped: %v", cur.info.ID, v)})
			haltAfterPanic(cur)
		}
	}()
	clock := s.opts.Clock
	var tick uint64
	for {
		select {
		case <-s.stop:
			return true
		default:
		}
		if len(*sh.devices.Load()) == 0 {
			// Nothing to step: sleep until a device arrives, then start
			// a fresh grid (the idle time is not an overrun).
			select {
			case <-s.stop:
				return true
			case <-sh.wake:
			}
			p.Restart()
			continue
		}
		now, overrun := p.Wait()
		if warn, p99 := sh.stats.tick(now, overrun); warn && s.opts.OnRateWarning != nil {
			if held, ok := sh.stats.limitWarning(now); ok {
				s.opts.OnRateWarning(Event{Kind: EventRateWarning, PeriodP99Ns: p99, TargetNs: sh.stats.targetNs, Suppressed: held})
			}
		}
		sh.epoch.Add(1)
		tick++
		for i, d := range *sh.devices.Load() {
			cur = d
			d.stepAt(now, (tick+uint64(i))%exchangeSampleEvery == 0)
		}
		cur = nil
		sh.epoch.Add(1)
		sh.stats.busy.Record(clock.Now() - now)
	}
}
