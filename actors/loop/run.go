package loop

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/hapticd/hapticd/protocol/histogram"
)

// rateWindowNs is how often a runner checks its period against the bound.
const rateWindowNs = int64(time.Second)

// rateWarnEveryNs: a loop that stays late reports it once per this long,
// with the count of late windows it did not report, rather than once a
// second.
const rateWarnEveryNs = int64(time.Minute)

// runnerStats are the measurements of one runner (a RunLocked loop or a
// scheduler shard). Only the runner records; anyone may read.
type runnerStats struct {
	period   *histogram.Histogram
	busy     *histogram.Histogram
	exchange *histogram.Histogram // its devices' exchanges (a shard's: a sample)
	overruns atomic.Uint64
	realtime atomic.Bool
	// ticks counts a shard's ticks (the ticks of the devices in its
	// records are counted from it).
	ticks atomic.Uint64

	targetNs int64

	// version counts the runner's finished ticks (bumped after each
	// tick's last record), and sums caches the histograms' summaries
	// under it: the devices of a shard share its runnerStats, and
	// summarising three histograms for each of 10,000 devices on every
	// GET /stats took 40-90 ms of CPU away from the shards.
	version atomic.Uint64
	sums    atomic.Pointer[runnerSums]

	// The runner's goroutine owns the following.
	window        *histogram.Histogram
	lastNs        int64
	windowStartNs int64
	warned        bool
	warnedNs      int64  // when the last warning went out
	suppressed    uint64 // late windows not reported since then
}

// runnerSums is the summaries of a runnerStats at one version.
type runnerSums struct {
	version                uint64
	period, busy, exchange Summary
}

// summaries returns the runner's summaries, computed at most once per
// tick however many devices ask. A reader during a tick may get them
// without that tick's records, as it could a moment earlier.
func (r *runnerStats) summaries() *runnerSums {
	v := r.version.Load()
	if s := r.sums.Load(); s != nil && s.version == v {
		return s
	}
	s := &runnerSums{version: v, period: r.period.Summary(), busy: r.busy.Summary(), exchange: r.exchange.Summary()}
	r.sums.Store(s)
	return s
}

// endTick marks a tick's records done (see summaries).
func (r *runnerStats) endTick() { r.version.Add(1) }

// Summary is a histogram's distribution at one moment.
type Summary = histogram.Summary

// precisionBits is the loops' histogram precision: buckets at most 1/8 of
// their value wide, 2.4 KiB per histogram (kept per runner, not per device:
// a service may run thousands of simulated devices).
const precisionBits = 3

func newRunnerStats(targetNs int64) *runnerStats {
	return &runnerStats{
		targetNs: targetNs,
		period:   histogram.New(precisionBits),
		busy:     histogram.New(precisionBits),
		exchange: histogram.New(precisionBits),
		window:   histogram.New(precisionBits),
	}
}

// tick records one tick at nowNs. Once per window it reports whether the
// window's p99 period passed 1.5 × target, and that p99.
func (r *runnerStats) tick(nowNs int64, overrun bool) (warn bool, p99Ns int64) {
	if overrun {
		r.overruns.Add(1)
	}
	if r.lastNs != 0 {
		p := nowNs - r.lastNs
		r.period.Record(p)
		r.window.Record(p)
	}
	r.lastNs = nowNs
	if r.windowStartNs == 0 {
		r.windowStartNs = nowNs
	}
	if nowNs-r.windowStartNs < rateWindowNs {
		return false, 0
	}
	s := r.window.Summary()
	r.window.Reset()
	r.windowStartNs = nowNs
	return s.Count >= 10 && s.P99Ns > r.targetNs+r.targetNs/2, s.P99Ns
}

// limitWarning rate-limits the warnings of a late runner: it reports
// whether this one goes out, and how many were held back before it.
func (r *runnerStats) limitWarning(nowNs int64) (suppressed uint64, ok bool) {
	if r.warned && nowNs-r.warnedNs < rateWarnEveryNs {
		r.suppressed++
		return 0, false
	}
	suppressed, r.suppressed = r.suppressed, 0
	r.warned, r.warnedNs = true, nowNs
	return suppressed, true
}

// RunLocked runs d's loop on the calling goroutine, locked to its OS thread
// and paced by a Pacer at d's PeriodNs, until ctx ends or the device fails.
// It halts the driver on the way out, also after a panic in the loop (which
// it recovers and returns as an error). Once a second it checks the period's
// p99 and emits EventRateWarning through OnEvent when it passed its bound
// (at most once a minute, counting the late seconds it held back).
// A device is run by one runner at a time.
//
// Its pacer sleeps in a system call that gives up the goroutine's P, which
// the runtime hands to another thread when none is idle; RunLockedProcs
// keeps it.
func RunLocked(ctx context.Context, d *Device) error { return RunLockedProcs(ctx, d, nil) }

// RunLockedProcs is RunLocked for a process with a Procs (its one, made by
// its main): the loop's pacer sleeps holding its P (Pacer.KeepP) and procs
// lends the process another P while the loop runs, as for a spinning
// scheduler shard. Without that, every sleep of a loop whose process has
// no idle P (sessions under load, spinning shards) lost its P to sysmon
// after 20 µs, and each wake-up waited for a P to come free: a busy
// goroutine's preemption, up to 10 ms (docs/performance.md, "The hardware
// loop's sleep"). A nil procs, or a platform where a pacer cannot keep its P, is
// RunLocked.
func RunLockedProcs(ctx context.Context, d *Device, procs *Procs) (err error) {
	if d == nil {
		return fmt.Errorf("actors/loop: RunLocked needs a device; create it with NewDevice")
	}
	if !d.running.CompareAndSwap(false, true) {
		return fmt.Errorf("actors/loop: device %s already has a loop; remove it from its scheduler or stop its other RunLocked first", d.info.ID)
	}
	rs := newRunnerStats(d.opts.PeriodNs)
	d.runner.Store(rs)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, restore := tuneThread(int(d.opts.RealtimePriority))
	defer restore()
	rs.realtime.Store(threadRealtime())
	// Held after the thread is locked and tuned, released before it is
	// unlocked: the P is lent exactly while this thread may sleep on it.
	// Deferred before the halt, so it is released after it: a release
	// changes GOMAXPROCS, which stops the world, and the device must not
	// wait for that to be halted.
	held := procs.Hold()
	if held {
		defer procs.Release()
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("actors/loop: loop of %s panicked and was stopped with the device halted: %v", d.info.ID, v)
		}
		haltAfterPanic(d)
		d.running.Store(false)
	}()
	done := ctx.Done()
	p := NewPacer(d.opts.PeriodNs, d.clock)
	p.KeepP(held)
	for {
		select {
		case <-done:
			return nil
		default:
		}
		now, overrun := p.Wait()
		if warn, p99 := rs.tick(now, overrun); warn {
			if held, ok := rs.limitWarning(now); ok {
				d.emit(Event{Kind: EventRateWarning, PeriodP99Ns: p99, TargetNs: rs.targetNs, Suppressed: held})
			}
		}
		d.Step(now)
		rs.busy.Record(d.clock.Now() - now)
		rs.endTick()
		if d.failed.Load() {
			return fmt.Errorf("actors/loop: %s stopped after %d driver errors in a row", d.info.ID, d.opts.MaxErrors)
		}
	}
}

// haltAfterPanic halts d where a panic was just recovered: a driver whose
// Halt panics too must not take the process down with it.
func haltAfterPanic(d *Device) {
	defer func() {
		if recover() != nil {
			d.errors.Add(1)
			// Give the request up rather than retry a Halt that panics
			// on every tick, and release the driver haltLocked held.
			d.haltAck.Store(d.haltReq.Load())
			if d.slot.Load() == nil { // on a shard the token stays the shard's
				d.token.Store(false)
			}
		}
	}()
	d.Halt()
}
