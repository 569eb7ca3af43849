package driver

import (
	"time"

	"github.com/hapticd/hapticd/hw/wire"
)

// Resynchronisation after a missed reply.
//
// The wire is lock-step with no sequence number: a reply says nothing about
// the command it answers. The firmware answers in order, so a reply that
// missed its deadline (the device or the USB link stalled) comes before the
// replies to later commands, at any time after the deadline. Flushing the
// input before the next write is not enough: a late reply that lands after
// the flush is read as the answer to the new command, and from then on
// every reply is read one exchange late.
//
// So after a missed (or deliberately unread) reply the driver
// resynchronises. Before each write it drains, without waiting, the input
// that is already there: every reply in it arrived before the command was
// written, so it answers an older one and is dropped (counted by Stale).
// Bytes of a reply that had only begun to arrive are remembered as stale,
// and the frame they start is dropped when it completes. After the write,
// a reply followed by another complete reply of the same header already
// buffered was stale too: the newest is this command's. What is left is a
// late reply that arrives wholly after the write and alone: it is taken
// for this command's once, and the reply that really answers it is found
// stale by the next drain.
//
// Leaving: resynchronisation ends once resyncExchanges() exchanges in a row
// (MaxMisses, by default 20 at 1 kHz) got their reply and found nothing
// stale, and at least that many periods have passed since the last miss
// or stale reply. The device would have been declared gone after that many
// misses; each exchange in the window is one more chance for a drain to
// catch a reply left over by a misread, and any miss or stale reply starts
// the window again. Outside it the tick pays nothing: no drain, no extra
// system call.

// drainReads bounds one drain: a device that keeps the input full this
// long is flooding it, and the rest is flushed unread.
const drainReads = 8

// startResync enters (or restarts) resynchronisation.
func (a *Arm) startResync() {
	n := a.resyncExchanges()
	a.resync = true
	a.staleSeen = false
	a.cleanLeft = n
	a.resyncUntil = time.Now().Add(time.Duration(float64(n) * a.opts.PeriodS * float64(time.Second)))
}

// resyncExchanges is how many clean exchanges end resynchronisation.
func (a *Arm) resyncExchanges() int { return max(a.opts.MaxMisses, 3) }

// settleResync counts an exchange that got its reply while
// resynchronising, and ends resynchronisation when the window is over.
func (a *Arm) settleResync() {
	if a.staleSeen {
		a.staleSeen = false
		a.startResync()
		return
	}
	a.cleanLeft--
	if a.cleanLeft <= 0 && !time.Now().Before(a.resyncUntil) {
		a.resync = false
		a.staleAhead = 0
	}
}

// drain reads the input already received, without waiting, and drops the
// replies in it (see above). Configuration acknowledgements in it still
// settle their codes. On error the input may hold stale bytes; the driver
// stays resynchronising.
func (a *Arm) drain() error {
	if err := a.port.SetReadTimeout(0); err != nil {
		return err
	}
	for range drainReads {
		n, err := a.fill()
		if err != nil {
			return err
		}
		a.dropBuffered()
		if n == 0 {
			// Whatever is left (the start of a frame, or noise) arrived
			// before the write, too.
			a.staleAhead = a.scan.Buffered()
			return nil
		}
	}
	if err := a.port.ResetInputBuffer(); err != nil {
		return err
	}
	a.scan.Reset()
	a.staleAhead = 0
	a.staleSeen = true
	return nil
}

// fill reads once into the scanner and keeps staleAhead pointing at the
// same bytes when the scanner drops old ones to make room.
func (a *Arm) fill() (int, error) {
	before := a.scan.Buffered()
	n, err := a.port.Read(a.scan.Space())
	a.scan.Fill(n)
	if dropped := before + n - a.scan.Buffered(); dropped > 0 {
		a.staleAhead = max(0, a.staleAhead-dropped)
	}
	return n, err
}

// dropBuffered takes every complete frame out of the scanner: replies are
// stale, acknowledgements are taken.
func (a *Arm) dropBuffered() {
	for _, ok := a.scan.Next(&a.ahead); ok; _, ok = a.scan.Next(&a.ahead) {
		switch a.ahead.Header {
		case wire.HeaderEndEffectorState, wire.HeaderJointState:
			a.stale++
			a.staleSeen = true
		case wire.HeaderConfig:
			a.acknowledge(a.ahead.Config)
		}
	}
}

// nextFrame is scan.Next into m that also tells whether the frame started
// in the stale bytes, and consumes them.
func (a *Arm) nextFrame(m *wire.Message) (ok, stale bool) {
	before := a.scan.Buffered()
	frame, ok := a.scan.Next(m)
	consumed := before - a.scan.Buffered()
	stale = ok && consumed-len(frame) < a.staleAhead
	a.staleAhead = max(0, a.staleAhead-consumed)
	return ok, stale
}

// readResync is readReply while resynchronising: it drops a reply that
// began before the write, and when more than one reply of header want is
// complete it takes the newest. Acknowledgements are taken on the way,
// late ones too: they settle their codes whenever they come.
func (a *Arm) readResync(want byte, timeout time.Duration) (bool, error) {
	deadline := time.Now().Add(timeout)
	for late := false; ; {
		for ok, stale := a.nextFrame(&a.msg); ok; ok, stale = a.nextFrame(&a.msg) {
			switch {
			case a.msg.Header == want && stale:
				a.stale++
				a.staleSeen = true
			case a.msg.Header == want:
				a.takeNewest(want)
				return true, nil
			case a.msg.Header == wire.HeaderConfig:
				a.acknowledge(a.msg.Config)
			}
		}
		if late {
			return false, nil
		}
		var err error
		if late, err = a.readBefore(deadline); err != nil {
			return false, err
		}
	}
}

// takeNewest replaces the reply in a.msg with any later complete reply of
// header want already buffered: in lock-step only the last can answer the
// command just written.
func (a *Arm) takeNewest(want byte) {
	for ok, _ := a.nextFrame(&a.ahead); ok; ok, _ = a.nextFrame(&a.ahead) {
		switch {
		case a.ahead.Header == want:
			a.stale++
			a.staleSeen = true
			a.msg = a.ahead
		case a.ahead.Header == wire.HeaderConfig:
			a.acknowledge(a.ahead.Config)
		}
	}
}
