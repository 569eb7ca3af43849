package recording

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/protocol"
)

// feed is one recorded device's tap.
type feed struct {
	dev  *actors.Device
	tap  *loop.Tap
	key  string // the channel key: type name and id
	seat int    // its place in the order devices were attached, from 1
	seen bool   // still in the service's device set at the last attach
}

// pump attaches a loop.Tap to each recorded device (and to devices that
// come later), and every drainEvery moves what the loops queued onto the
// recording's queue. The loops feed the taps at every tick, or once per
// 1/rate_hz: a loop never waits on the pump; a full tap drops and counts,
// and the pump keeps the recording's droppedStates up to date. One
// goroutine owns a pump.
type pump struct {
	rs      *Recorder
	r       *recording
	everyNs int64 // the tap's decimation; 0: every tick
	feeds   map[*actors.Device]*feed
	// order is feeds in the order they were attached (the service's
	// device order), and seats counts the feeds ever attached: each
	// device's state channel says its place in it ("order" metadata),
	// which is the order a replay serves them in, whichever device's
	// states came first (a channel is made on its first state).
	order []*feed
	seats int
	// goneDropped is the drops of the taps of devices that went away.
	goneDropped uint64
	// Scratch of drain.
	snap  loop.Snapshot
	state State
}

func newPump(rs *Recorder, r *recording) *pump {
	p := &pump{rs: rs, r: r, feeds: map[*actors.Device]*feed{}}
	if r.opts.RateHz > 0 {
		p.everyNs = int64(float64(time.Second) / r.opts.RateHz)
	}
	return p
}

// run attaches the taps, closes attached, and drains until ctx ends; then
// it detaches the taps and drains them a last time.
func (p *pump) run(ctx context.Context, attached chan<- struct{}) {
	p.attach()
	close(attached)
	t := time.NewTicker(drainEvery)
	defer t.Stop()
	lastAttach := time.Now()
	for {
		select {
		case <-ctx.Done():
			p.detach(false)
			return
		case <-t.C:
		}
		if time.Since(lastAttach) >= attachEvery {
			lastAttach = time.Now()
			p.attach()
			p.detach(true)
		}
		p.drain()
	}
}

// wanted is the service's devices this recording records.
func (p *pump) wanted() []*actors.Device {
	svc := p.rs.cfg.Service
	ds := svc.Devices()
	var want []*actors.Device
	for _, typ := range svc.Types().Types() {
		for _, d := range ds.OfType(typ) {
			if len(p.r.opts.Devices) == 0 || slices.Contains(p.r.opts.Devices, d.ID) {
				want = append(want, d)
			}
		}
	}
	return want
}

// attach gives each wanted device without a tap one, and marks which
// feeds' devices are still there.
func (p *pump) attach() {
	for _, f := range p.feeds {
		f.seen = false
	}
	want := p.wanted()
	ticks := p.rs.cfg.TapTicks
	if ticks <= 0 {
		ticks = tapTicksFor(len(want))
	}
	for _, d := range want {
		if f := p.feeds[d]; f != nil {
			f.seen = true
			continue
		}
		tap := loop.NewTap(ticks, p.everyNs)
		if err := d.AddTap(tap); err != nil {
			p.r.setErr(fmt.Errorf("recording: record %s: %w", d.ID, err))
			continue
		}
		p.seats++
		f := &feed{dev: d, tap: tap, key: d.Name + "-" + d.ID, seat: p.seats, seen: true}
		p.feeds[d] = f
		p.order = append(p.order, f)
	}
}

// drain moves every queued snapshot onto the recording's queue, encoded.
func (p *pump) drain() {
	dropped := p.goneDropped
	for _, f := range p.order {
		for {
			ok, left := f.tap.NextHanded(&p.snap)
			if !ok {
				break
			}
			fillState(&p.state, f.dev, &p.snap, left)
			buf := p.rs.stateBufs.Get().(*[]byte)
			*buf = p.state.AppendJSON((*buf)[:0])
			if !p.r.put(item{kind: KindState, key: f.key, seat: f.seat, ns: p.snap.TimeNs, data: *buf, buf: buf}) {
				p.rs.stateBufs.Put(buf)
			}
		}
		dropped += f.tap.Dropped()
	}
	p.r.droppedStates.Store(dropped)
}

// detach takes the taps off the devices that went away (onlyGone) or off
// every device, and drains what the loops queued before.
func (p *pump) detach(onlyGone bool) {
	leaving := func(f *feed) bool { return !onlyGone || !f.seen }
	for d, f := range p.feeds {
		if leaving(f) {
			d.RemoveTap(f.tap)
		}
	}
	p.drain()
	for d, f := range p.feeds {
		if leaving(f) {
			p.goneDropped += f.tap.Dropped()
			delete(p.feeds, d)
		}
	}
	p.order = slices.DeleteFunc(p.order, func(f *feed) bool { return p.feeds[f.dev] != f })
}

// fillState fills s from one tick's snapshot of d; leftHanded is the
// handedness at that tick (loop.Tap.NextHanded).
func fillState(s *State, d *actors.Device, snap *loop.Snapshot, leftHanded bool) {
	st := &snap.State
	*s = State{Device: d.ID, Type: d.Type.Key(), Status: uint8(st.Status), Tick: snap.Tick, TimeNs: snap.TimeNs, AgeNs: stateAgeNs(snap),
		Mode: int(snap.Mode), Owner: snap.Owner, AppliedSeq: snap.AppliedSeq, Failed: snap.Failed, Target: snap.Target,
		Position: vec3(st.PositionM), Velocity: vec3(st.VelocityMps), Force: vec3(st.ForceN)}
	if d.Type != protocol.TypeGrip {
		s.Model = DeviceModel(d.Info.Model)
		s.LeftHanded = leftHanded
	}
	if d.Type == protocol.TypeGrip {
		q := st.Orientation
		s.Orientation = [4]float64{q.W, q.X, q.Y, q.Z}
		s.Buttons, s.Hall, s.Battery, s.Link = uint8(st.Buttons), st.Hall, st.Battery, d.Info.Link.String()
	}
}

// stateAgeNs is how old snap's state was at its tick: a state published
// with an earlier time it was current (a missed reply's repeat, a lab
// node's push on a gateway) is that much older; any other is the tick's.
func stateAgeNs(snap *loop.Snapshot) int64 {
	if snap.CurrentAtNs == 0 {
		return 0
	}
	return max(snap.TimeNs-snap.CurrentAtNs, 0)
}

// vec3 flattens an hw.Vec3.
func vec3(v hw.Vec3) [3]float64 { return [3]float64{v.X, v.Y, v.Z} }
