// Package awake is an awake clock: it tells a process that stood still
// (stopped, a VM paused, starved of CPU) from one that ran, by the notes a
// goroutine takes while the process runs. A note late by more than the
// clock's slack is a stall, however long the process was gone.
//
// Two places ask it. The sessions' transport bounds the wait of commands
// that queued in a socket during a stall where the kernel stamps no
// receive time (transport/stallbound.go); a lab member's health poller
// tells a round whose polls timed out while it stood still from one whose
// hosts failed (actors/cluster/healthpoll.go).
package awake

import (
	"sync/atomic"
	"time"
)

// Clock knows when the process was last seen running: Run notes the
// monotonic time every interval, and a gap between two notes longer than
// the slack is a stall, kept until the next one. Times are nanoseconds
// since the clock's epoch on the monotonic clock (At), so a step of the
// wall clock is no stall.
//
// One goroutine writes (Note, through Run); any reader reads. Note stores
// the stall before the note that ends it, so a reader that sees the new
// note sees the stall too.
type Clock struct {
	epoch    time.Time
	interval time.Duration
	slack    time.Duration

	last      atomic.Int64 // the newest note
	stallFrom atomic.Int64 // the note before the newest stall
	stallTo   atomic.Int64 // the note that ended it (0: none yet)
}

// New is a clock that notes every interval once Run runs, and takes a gap
// of more than slack between two notes for a stall. Its first note is now.
func New(interval, slack time.Duration) *Clock {
	a := &Clock{epoch: time.Now(), interval: interval, slack: slack}
	a.last.Store(a.Now())
	return a
}

// Now is the monotonic time since the clock's epoch, in ns.
func (a *Clock) Now() int64 { return a.At(time.Now()) }

// At is t on the clock's time line (t must carry a monotonic reading, as
// time.Now's does).
func (a *Clock) At(t time.Time) int64 { return int64(t.Sub(a.epoch)) }

// Run notes every interval until stop closes.
func (a *Clock) Run(stop <-chan struct{}) {
	t := time.NewTicker(a.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		a.Note(a.Now())
	}
}

// Note records that the process runs at now. Only Run calls it, but for a
// test that plays the notes itself.
func (a *Clock) Note(now int64) {
	last := a.last.Load()
	if now-last > int64(a.slack) {
		a.stallFrom.Store(last)
		a.stallTo.Store(now)
	}
	a.last.Store(now)
}

// StallSince reports a stall that ended after from or is under way at now
// (the clock's notes are late by more than the slack): its start, the
// newest note before it, at or before which the process last ran, and its
// end, the note after it (0: under way, or over and not noted yet).
func (a *Clock) StallSince(from, now int64) (start, end int64, ok bool) {
	if last := a.last.Load(); now-last > int64(a.slack) {
		return last, 0, true
	}
	if to := a.stallTo.Load(); to > from {
		return a.stallFrom.Load(), to, true
	}
	return 0, 0, false
}
