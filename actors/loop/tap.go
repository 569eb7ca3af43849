package loop

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// A Tap hands every tick's snapshot of one device (or every tick at most
// once per its everyNs) to one reader, a recorder, through a bounded ring the
// loop writes and the reader drains. The loop never waits on it: when the
// ring is full the tick's snapshot is dropped and counted. A device without
// taps pays one atomic pointer load per tick, and a tap costs a tick a
// snapshot copy and no allocation.
//
// The snapshot a tap takes is the one the tick published (or the last one
// still in force, when the tick changed nothing), with Tick and TimeNs of
// the tick itself, so consecutive taken snapshots count the ticks. A Halt
// between ticks (a service's stop halts every device after its last tick)
// queues one more, whatever everyNs and however full of ticks the ring is
// (a slot is kept for it): the halted device's, with the zero force it
// ends with, the last tick's Tick and the halt's TimeNs. A
// simulated arm's derived fields (joint angles, body orientation) are not
// computed: Next leaves them zero. NextHanded tells the handedness in force
// at the tick.
type Tap struct {
	// The reader's.
	head atomic.Uint64 // the next slot Next takes
	// The loop's; read by the reader.
	tail    atomic.Uint64 // the next slot the loop fills
	dropped atomic.Uint64
	// Immutable after NewTap.
	everyNs int64
	ring    []Snapshot
	// The device's token holder owns the following.
	dev    *Device
	nextNs int64
	// haltedAt is 1 + the tick after which a halt's snapshot was queued
	// (0: none): a second Halt before the next tick (the scheduler's
	// stop halts, then the service's) queues no copy of it.
	haltedAt uint64
}

// NewTap returns a tap whose ring holds size snapshots of ticks (at least
// 1) and that takes at most one snapshot per everyNs of loop time (<= 0:
// every tick). Attach it to one device with Device.AddTap. The ring has one
// slot more, which only a Halt's snapshot may take: a reader that fell a
// ring's worth behind (starved, right before a stop) still gets the halt
// as the device's last word, after the ticks queued before it.
func NewTap(size int, everyNs int64) *Tap {
	return &Tap{ring: make([]Snapshot, max(size, 1)+1), everyNs: max(everyNs, 0)}
}

// ticksFull reports whether the ring holds as many snapshots as a tick may
// queue (all but the slot kept for a halt).
func (t *Tap) ticksFull(tail uint64) bool { return tail-t.head.Load() >= uint64(len(t.ring)-1) }

// Dropped counts the snapshots the loop could not queue because the ring
// was full. Any goroutine may call it.
func (t *Tap) Dropped() uint64 { return t.dropped.Load() }

// Next moves the oldest queued snapshot into dst and reports whether there
// was one. Only one goroutine may call Next at a time.
func (t *Tap) Next(dst *Snapshot) bool {
	ok, _ := t.NextHanded(dst)
	return ok
}

// NextHanded is Next, and also says whether the device was left-handed at
// the snapshot's tick: the handedness the loop had passed to the driver by
// then (a simulated arm's own), not the one in force when the reader gets
// to it.
func (t *Tap) NextHanded(dst *Snapshot) (ok, leftHanded bool) {
	head := t.head.Load()
	if head == t.tail.Load() {
		return false, false
	}
	*dst = t.ring[head%uint64(len(t.ring))]
	leftHanded = dst.derive == deriveLeft
	dst.derive = deriveNone
	t.head.Store(head + 1) // the slot may be refilled from here on
	return true, leftHanded
}

// taps is a device's attached taps: copy-on-write, nil when none.
type taps struct {
	mu   sync.Mutex // serialises AddTap and RemoveTap
	list atomic.Pointer[[]*Tap]
}

// AddTap attaches t to the device; its next tick feeds it. A tap belongs to
// one device.
func (d *Device) AddTap(t *Tap) error {
	d.taps.mu.Lock()
	defer d.taps.mu.Unlock()
	if t.dev != nil {
		return fmt.Errorf("actors/loop: tap already attached to %s", t.dev.info.ID)
	}
	t.dev = d
	var list []*Tap
	if cur := d.taps.list.Load(); cur != nil {
		list = append(list, *cur...)
	}
	list = append(list, t)
	d.taps.list.Store(&list)
	if r := d.slot.Load(); r != nil {
		r.taps.Store(&list)
	}
	return nil
}

// RemoveTap detaches t; from the tick after the one under way (if any) the
// device no longer feeds it. Snapshots already queued stay for Next.
func (d *Device) RemoveTap(t *Tap) {
	d.taps.mu.Lock()
	defer d.taps.mu.Unlock()
	cur := d.taps.list.Load()
	if cur == nil {
		return
	}
	var list []*Tap
	for _, x := range *cur {
		if x != t {
			list = append(list, x)
		}
	}
	next := &list
	if len(list) == 0 {
		next = nil
	}
	d.taps.list.Store(next)
	if r := d.slot.Load(); r != nil {
		r.taps.Store(next) // the shard's pass reads the mirror (simArm.taps)
	}
}

// endTick feeds the taps, then hands the driver back. Step's deferred call:
// it runs on every path out of a tick, the asleep one included.
func (d *Device) endTick(nowNs int64) {
	if l := d.taps.list.Load(); l != nil {
		d.feedTaps(*l, nowNs, d.ticks.Load())
	}
	d.token.Store(false)
}

// feedTaps queues this tick's snapshot on each tap that wants it. The
// caller holds the driver (the token, or a shard's lock for a device on
// its records), so the published snapshot is this tick's; tick is its
// count. A lazy driver's snapshot is in its compact cell (its own or its
// shard record's), which a shard's fast path updates without d.pub.
func (d *Device) feedTaps(l []*Tap, nowNs int64, tick uint64) {
	cell := d.cell.Load()
	for _, t := range l {
		if t.everyNs > 0 {
			if nowNs < t.nextNs {
				continue
			}
			// One per everyNs on average; after a stall, restart from now
			// rather than catch up with a burst.
			t.nextNs += t.everyNs
			if t.nextNs <= nowNs {
				t.nextNs = nowNs + t.everyNs
			}
		}
		tail := t.tail.Load()
		if t.ticksFull(tail) {
			t.dropped.Add(1)
			continue
		}
		s := &t.ring[tail%uint64(len(t.ring))]
		if cell != nil {
			cell.load(s) // the core and the metadata; derived fields stay zero: see Tap
		} else {
			*s = d.pub
			// derive carries the tick's handedness to NextHanded (a
			// simulated arm's cell has its own).
			s.derive = deriveRight
			if d.configuredFrom.Settings.LeftHanded {
				s.derive = deriveLeft
			}
		}
		s.Tick, s.TimeNs = tick, nowNs
		t.tail.Store(tail + 1)
	}
}

// tapHalt queues on each tap the snapshot a Halt between ticks just
// published: the device halted, its force zero when the driver's Halt
// succeeded. No tick follows a stop's Halt, so without it a recording
// ended on the last tick's force (the release's ramp cut short) although
// the device ended at zero. tick is the device's last tick. Every tap takes
// it, whatever its everyNs: it is the device's last word. The caller holds
// the driver, as for feedTaps.
func (d *Device) tapHalt(tick uint64) {
	l := d.taps.list.Load()
	if l == nil {
		return
	}
	// After the last tick's time on the device's clock, so the halt's
	// snapshot follows that tick's in a recording's timeline.
	nowNs := max(d.clock.Now(), d.lastNowNs+1, d.pub.TimeNs+1)
	derive := deriveRight
	if d.lazy != nil {
		if d.lazy.LeftHanded() {
			derive = deriveLeft
		}
	} else if d.configuredFrom.Settings.LeftHanded {
		derive = deriveLeft
	}
	for _, t := range *l {
		if t.haltedAt == tick+1 {
			continue
		}
		tail := t.tail.Load()
		if tail-t.head.Load() >= uint64(len(t.ring)) {
			t.dropped.Add(1)
			continue
		}
		t.haltedAt = tick + 1
		s := &t.ring[tail%uint64(len(t.ring))]
		*s = d.pub
		s.derive = derive
		s.Tick, s.TimeNs = tick, nowNs
		t.tail.Store(tail + 1)
	}
}
