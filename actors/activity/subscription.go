package activity

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hapticd/hapticd/protocol/event"
)

// ErrClosed is returned by Subscription.Next once the subscription is closed
// or the activity actor has stopped and every queued event was read.
var ErrClosed = errors.New("activity: subscription closed")

// Subscription is one subscriber's stream: first the replayed ring entries
// (if asked for), then live events, each once, in seq order, with at most
// one events-dropped event standing in for each run of events the
// subscriber was too slow to take.
//
// One goroutine should read a Subscription (Next or TryNext); Close may be
// called from any goroutine.
type Subscription struct {
	id  uint64
	act *Activity
	// wake holds one token when something was queued since the reader last
	// looked; the actor never blocks on it.
	wake chan struct{}
	// done is closed when the subscription is closed or the actor stopped.
	done     chan struct{}
	doneOnce sync.Once

	// mu guards the following. It is held only to move events in or out
	// of memory, never across I/O, so the actor never waits on a reader.
	mu     sync.Mutex
	replay []event.Event // read first
	// queue is the ring buffer of the live queue: it starts small and
	// doubles as events wait, up to limit, so an idle subscriber (an
	// events socket) holds a few entries, not limit.
	queue []event.Event
	limit int
	head  int
	n     int
	// missed counts events dropped since the reader last got an
	// events-dropped event; gapSeq is the seq of the last event queued
	// before them and gapTime the time of the latest dropped one.
	missed  uint64
	gapSeq  uint64
	gapTime time.Time
	// lastQueued is the seq of the newest event queued (or replayed).
	lastQueued uint64
	// firstLive is the seq of the first live event it is handed.
	firstLive uint64
	dropped   uint64 // total over the subscription's life
	closed    bool   // closed by the reader: queued events are discarded
}

// initialQueue is a new subscriber's live queue, in events, before it grows.
const initialQueue = 16

func newSubscription(act *Activity, id uint64, queueSize int) *Subscription {
	return &Subscription{
		id:    id,
		act:   act,
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
		queue: make([]event.Event, min(initialQueue, queueSize)),
		limit: queueSize,
	}
}

// Ready is signalled when an event may be waiting; a reader that found
// nothing with TryNext waits on Ready and Done, then tries again. It lets a
// writer goroutine select on events, its own timers and shutdown at once.
func (s *Subscription) Ready() <-chan struct{} { return s.wake }

// Done is closed when no more events will be queued: Close was called or the
// activity actor stopped. Events already queued can still be read after the
// actor stopped.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// TryNext returns the next event without waiting.
func (s *Subscription) TryNext() (event.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.replay) > 0 {
		e := s.replay[0]
		s.replay[0] = event.Event{}
		s.replay = s.replay[1:]
		if len(s.replay) == 0 {
			// An empty tail still pins the whole copy of the ring.
			s.replay = nil
		}
		return e, true
	}
	if s.n > 0 {
		e := s.queue[s.head]
		s.queue[s.head] = event.Event{} // let the data be collected
		s.head = (s.head + 1) % len(s.queue)
		s.n--
		if s.n == 0 && len(s.queue) >= 4*initialQueue {
			// Drained after a burst: back to the idle size, so that a
			// socket that once had 1024 events waiting does not keep
			// their room (about 120 KiB) for its whole life. Not for a
			// queue near its first size, which a steady reader would
			// otherwise reallocate over and over.
			s.queue, s.head = make([]event.Event, initialQueue), 0
		}
		return e, true
	}
	if s.missed > 0 {
		// The reader has caught up: tell it about the gap right away
		// rather than at the next live event.
		e := stampedEvent(event.EventsDropped(s.missed), s.gapSeq, s.gapTime)
		s.missed = 0
		return e, true
	}
	return event.Event{}, false
}

// Next waits for the next event. It returns ErrClosed after Close, or once
// the actor has stopped and the queue is drained, and ctx.Err() when ctx
// ends first.
func (s *Subscription) Next(ctx context.Context) (event.Event, error) {
	for {
		if e, ok := s.TryNext(); ok {
			return e, nil
		}
		select {
		case <-s.wake:
		case <-s.done:
			if e, ok := s.TryNext(); ok {
				return e, nil
			}
			return event.Event{}, ErrClosed
		case <-ctx.Done():
			return event.Event{}, ctx.Err()
		}
	}
}

// FirstLiveSeq is the seq of the first live event the subscription is
// handed (queued, or dropped and counted in an events-dropped event), the
// replayed ones apart: from it on, each is handed in seq order, none left
// out, so a reader knows every seq it has to account for.
func (s *Subscription) FirstLiveSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstLive
}

// Dropped is how many events this subscriber missed in total because its
// queue was full.
func (s *Subscription) Dropped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

// Close ends the subscription: the actor forgets it, queued events are
// discarded and Next returns ErrClosed. It is idempotent.
func (s *Subscription) Close() {
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.replay = nil
	clear(s.queue)
	s.n = 0
	s.missed = 0
	s.mu.Unlock()
	if already {
		return
	}
	select {
	case <-s.done:
		// The actor ended it while stopping and has forgotten it already;
		// a message now would only be a dead letter in the log.
		return
	default:
	}
	s.end()
	s.act.root.Send(s.act.pid, &unsubscribe{id: s.id})
}

// end marks that no more events will be queued.
func (s *Subscription) end() {
	s.doneOnce.Do(func() { close(s.done) })
}

// deliver queues one live event; called only by the actor. When the queue
// is full the event is dropped and counted for this subscriber alone. Once
// there is room again, an events-dropped event goes first.
func (s *Subscription) deliver(e *event.Event) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	free := s.limit - s.n
	switch {
	case s.missed == 0 && free >= 1:
		s.pushLocked(*e)
	case s.missed > 0 && free >= 2:
		s.pushLocked(stampedEvent(event.EventsDropped(s.missed), s.gapSeq, s.gapTime))
		s.missed = 0
		s.pushLocked(*e)
	default:
		if s.missed == 0 {
			s.gapSeq = s.lastQueued
		}
		s.missed++
		s.dropped++
		s.gapTime = e.Time
		s.mu.Unlock()
		return
	}
	s.lastQueued = e.Seq
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pushLocked appends to the live queue, growing it; the caller checked
// there is room under limit.
func (s *Subscription) pushLocked(e event.Event) {
	if s.n == len(s.queue) {
		grown := make([]event.Event, min(2*len(s.queue), s.limit))
		k := copy(grown, s.queue[s.head:])
		copy(grown[k:], s.queue[:s.head])
		s.queue, s.head = grown, 0
	}
	s.queue[(s.head+s.n)%len(s.queue)] = e
	s.n++
}

// stampedEvent gives an event written on one subscriber's stream only
// (events-dropped, service-restarted) its seq and time. An events-dropped
// event repeats the seq of the last event the subscriber got before the gap,
// so that a client can fetch what it missed with GET /events?since=<that
// seq> while the ring still holds it, and so that seq never goes backwards
// on a stream.
func stampedEvent(e event.Event, seq uint64, at time.Time) event.Event {
	e.Seq = seq
	e.Time = at
	return e
}
