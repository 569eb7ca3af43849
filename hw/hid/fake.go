package hid

import (
	"fmt"
	"sync"
	"time"

	"github.com/hapticd/hapticd/hw"
)

// Fake is an in-memory RawHID board: it answers info requests with its
// Info and force commands with a state report, at once. Tests set its
// position and buttons, stall its replies and read back the force it holds.
type Fake struct {
	mu      sync.Mutex
	info    Info
	state   StateReport
	forceN  hw.Vec3
	stall   int
	delay   time.Duration
	queue   [8]Report
	due     [8]time.Time // when each queued reply becomes readable
	head, n int
	writes  int
	closed  bool
	gone    bool
}

var _ Device = (*Fake)(nil)

// NewFake returns a ready board with identity in.
func NewFake(in Info) *Fake {
	return &Fake{info: in, state: StateReport{Status: 3}}
}

// SetState sets what the next state replies report.
func (f *Fake) SetState(s StateReport) { f.mu.Lock(); f.state = s; f.mu.Unlock() }

// Stall makes the next n commands go unanswered.
func (f *Fake) Stall(n int) { f.mu.Lock(); f.stall = n; f.mu.Unlock() }

// Delay makes each reply readable only d after the command that caused it,
// as a board that answers late does.
func (f *Fake) Delay(d time.Duration) { f.mu.Lock(); f.delay = d; f.mu.Unlock() }

// ForceN returns the force the board holds (sticky, as firmware does).
func (f *Fake) ForceN() hw.Vec3 { f.mu.Lock(); defer f.mu.Unlock(); return f.forceN }

// Unplug pulls the board: from then on its reads and writes fail with an
// error wrapping ErrDisconnected, as the hidapi backend's do.
func (f *Fake) Unplug() { f.mu.Lock(); f.gone = true; f.mu.Unlock() }

// errUnplugged is what a pulled Fake answers.
var errUnplugged = fmt.Errorf("hw/hid: fake board unplugged: %w", ErrDisconnected)

// Writes returns how many reports the host wrote.
func (f *Fake) Writes() int { f.mu.Lock(); defer f.mu.Unlock(); return f.writes }

// Read pops the oldest queued reply once it is due; it never waits.
func (f *Fake) Read(r *Report, _ time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false, ErrClosed
	}
	if f.gone {
		return false, errUnplugged
	}
	if f.n == 0 || (f.delay > 0 && time.Now().Before(f.due[f.head])) {
		return false, nil
	}
	*r = f.queue[f.head]
	f.head = (f.head + 1) % len(f.queue)
	f.n--
	return true, nil
}

// Write takes a command and queues its reply.
func (f *Fake) Write(r *Report) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	if f.gone {
		return errUnplugged
	}
	f.writes++
	var reply Report
	switch r.Type() {
	case TypeForce:
		f.forceN = r.Force()
		reply.PutState(r.Seq(), &f.state)
	case TypeInfoRequest:
		reply.PutInfo(r.Seq(), &f.info)
	default:
		return nil
	}
	if f.stall > 0 {
		f.stall--
		return nil
	}
	if f.n == len(f.queue) { // a full queue drops the oldest, as a HID ring does
		f.head = (f.head + 1) % len(f.queue)
		f.n--
	}
	i := (f.head + f.n) % len(f.queue)
	f.queue[i] = reply
	if f.delay > 0 {
		f.due[i] = time.Now().Add(f.delay)
	}
	f.n++
	return nil
}

// Close closes the fake; later calls fail.
func (f *Fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return ErrClosed
	}
	f.closed = true
	return nil
}
