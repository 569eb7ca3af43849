package loop

import "unsafe"

// LoadCurrent is Load, and says as of when the state it loaded is the
// device's current one: currentNs (Clock time, ns) is a tick at which the
// device's state was still dst's, so a reader's now less currentNs is how
// old the state is. It is never later than the truth (a state is never
// presented fresher than it is) and never earlier than dst.TimeNs, except
// for a state older than its publish (StateAgeReporter: a reply missed, a
// lab node's push): that one is current as of dst.CurrentAtNs.
//
// A snapshot's TimeNs is when it was published, which is not its age: an
// arm at rest publishes nothing and its old snapshot stays current, while
// a moving simulated arm that nobody read lately publishes one tick in
// publishIdleEvery (Load), so its snapshot may be up to 127 ticks behind.
// The loop records nothing per arm and tick for this; LoadCurrent infers
// it from what it does record:
//
//   - A driver other than a lazy one (hardware, a lab proxy) publishes
//     every tick: currentNs is dst.TimeNs, the tick that published it, or
//     dst.CurrentAtNs when that tick published an older state.
//   - A simulated arm on a scheduler shard whose read mark (markRead) is
//     pending and was seen by the last completed pass or one before it
//     (Device.markSeen), or was taken up at most publishHotTicks-1 passes
//     before it (Device.hotPass), published every moving tick of those
//     passes (publishDue): its snapshot is current as of the last one,
//     even if it rests since long ago.
//   - Otherwise, an arm whose state changed after a publish publishes it
//     by its block's next sparse publish at the latest (or as it comes to
//     rest, which is earlier): dst is current as of the last of those
//     passes that completed, at most publishIdleEvery-1 passes ago, or as
//     of dst.TimeNs if that is later. This is the first read after a quiet
//     spell; the reads from the shard's next pass on take the case above.
//   - A simulated arm off a shard (stepped directly): dst.TimeNs.
//
// A publish that found its spare buffer held by a reader (one preempted
// in the middle of its copy for a whole tick) leaves the state unpublished
// until the arm's next publish: while that lasts (armCell.held),
// currentNs is dst.TimeNs.
//
// It never blocks and never allocates; any number of goroutines may call
// it. It counts as a read (the arm publishes every tick from the shard's
// next pass on, as after Load).
func (d *Device) LoadCurrent(dst *Snapshot) (currentNs int64) {
	if d.lazy == nil {
		d.load(dst, true)
		if dst.CurrentAtNs != 0 {
			return dst.CurrentAtNs
		}
		return dst.TimeNs
	}
	for {
		r := d.slot.Load()
		if r == nil {
			d.load(dst, true)
			if d.slot.Load() == nil {
				return dst.TimeNs
			}
			continue // it joined a shard meanwhile
		}
		sh := r.sh
		// In this order: a pass number stored (hotPass) or a publish
		// failed (held) after done was read concerns a later pass than
		// done, which this read does not claim.
		// markSeen after readMark: a mark that names r now was set after
		// the take-up of any earlier one, which cleared markSeen first.
		done := sh.passDone.Load()
		pending := d.readMark.Load() == uintptr(unsafe.Pointer(r))
		ms, hp := d.markSeen.Load(), d.hotPass.Load()
		hot := pending && ms != 0 && done >= ms || hp != 0 && done >= hp && done < hp+publishHotTicks
		held := r.pub.held.Load() != 0
		from := d.load(dst, true)
		if d.slot.Load() != r {
			continue // it moved to another record meanwhile
		}
		if from != &r.pub {
			// Joining r (attach stores the slot, then the cell): dst is
			// of the device's own cell, whose held flag this is not and
			// whose last publish may have failed, so it may be older
			// than what attach handed r. The cell the copy came from,
			// not the device's cell now: attach may have stored that
			// since the copy.
			return dst.TimeNs
		}
		asOf := dst.TimeNs
		if done == 0 || held {
			return asOf
		}
		pass := done
		if !hot {
			// The last sparse publish of the record's block (pass sets
			// due when (tick+phase)%publishIdleEvery is 0).
			pass = done - (done+uint64(r.blk.phase))%publishIdleEvery
			if pass == 0 {
				return asOf
			}
		}
		if t, ok := sh.passTime(pass); ok {
			asOf = max(asOf, t)
		}
		return asOf
	}
}

// passTime is the Clock time of pass number n, if the ring still holds it.
func (sh *shard) passTime(n uint64) (int64, bool) {
	t := sh.passNs[n%publishIdleEvery].Load()
	// Pass n+publishIdleEvery writes n's place at its end; one not yet
	// started when the place was read had not.
	return t, sh.stats.ticks.Load() < n+publishIdleEvery
}
