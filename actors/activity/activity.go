package activity

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/protocol/event"
)

// Defaults of Options.
const (
	DefaultRingSize       = 4096
	DefaultQueueSize      = 1024
	DefaultRequestTimeout = 2 * time.Second
	// DefaultLogBurst is how many events of one name are logged per second
	// before the rest of that second is summarised in one line.
	DefaultLogBurst = 20
)

// Options configure the activity actor. Zero values take the defaults.
type Options struct {
	// RingSize is how many recent events are kept for replay and GET
	// /events (default 4096).
	RingSize int
	// QueueSize is each subscriber's live queue, in events (default
	// 1024). Past it, events are dropped for that subscriber alone.
	QueueSize int
	// Log receives one line per event (rate-limited per name).
	Log zerolog.Logger
	// Clock stamps events (default time.Now).
	Clock func() time.Time
	// RequestTimeout bounds Subscribe, Recent and Usage (default 2 s).
	RequestTimeout time.Duration
	// LogBurst is the per-name, per-second log budget (default 20).
	LogBurst int
	// FirstSeq is the seq of this run's first event. The default (0) is
	// one past the start time in microseconds since 1970 (by Clock): an
	// earlier run, numbering from its own start, would have had to publish
	// more than an event a microsecond to reach it, so a client's resume
	// point is never mistaken for this run's. It must stay under 2^53, so
	// that a JavaScript client reads every seq exactly.
	FirstSeq uint64
}

// maxSeq is the largest seq a JSON number carries exactly (2^53-1).
const maxSeq = 1<<53 - 1

// firstSeqAt is the default Options.FirstSeq of a run started at start.
// A clock before 1970 or past 2112 (2^52 µs, which leaves 2^52 seqs to the
// run) numbers from 1, as hapticd did before it had run bases.
func firstSeqAt(start time.Time) uint64 {
	us := start.UnixMicro()
	if us < 0 || us >= 1<<52 {
		return 1
	}
	return uint64(us) + 1
}

// Activity is a handle on the activity actor. Its methods are safe for
// concurrent use.
type Activity struct {
	lastSubID atomic.Uint64
	// published counts Publish calls, counted and sent under sendMu so
	// that their order is the mailbox's: the actor numbers events in the
	// order they reach it from firstSeq, so firstSeq+published-1 is the
	// newest's seq before the actor has got to it (LastPublishedSeq), and
	// firstSeq+published a live subscription's first (SubscribeLive).
	published atomic.Uint64
	sendMu    sync.Mutex
	firstSeq  uint64

	root      *actor.RootContext
	pid       *actor.PID
	timeout   time.Duration
	queueSize int
	stopOnce  sync.Once
	counts    eventCounts
}

// ErrStopped is returned by requests made after the actor stopped.
var ErrStopped = errors.New("activity: the activity actor is stopped (the service is shutting down)")

// Start spawns the activity actor in system.
func Start(system *actor.ActorSystem, o Options) (*Activity, error) {
	if system == nil {
		return nil, errors.New("activity: no actor system given; pass the service's *actor.ActorSystem")
	}
	if o.RingSize < 0 || o.QueueSize < 0 {
		return nil, fmt.Errorf("activity: ring size %d and queue size %d must not be negative; use 0 for the defaults", o.RingSize, o.QueueSize)
	}
	if o.FirstSeq > maxSeq {
		return nil, fmt.Errorf("activity: first seq %d is past 2^53-1, which a JSON client cannot read exactly; use 0 for the default", o.FirstSeq)
	}
	if o.RingSize == 0 {
		o.RingSize = DefaultRingSize
	}
	if o.QueueSize == 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.QueueSize < 2 {
		// One slot for the events-dropped event and one for the event
		// after the gap.
		o.QueueSize = 2
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.FirstSeq == 0 {
		o.FirstSeq = firstSeqAt(o.Clock())
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.LogBurst <= 0 {
		o.LogBurst = DefaultLogBurst
	}
	a := &Activity{root: system.Root, timeout: o.RequestTimeout, queueSize: o.QueueSize, counts: newEventCounts(), firstSeq: o.FirstSeq}
	state := newActivityActor(o)
	// The producer hands back the same state on a restart: subscribers and
	// the ring must survive a supervisor restart, or every socket would go
	// silent without being told.
	props := actor.PropsFromProducer(func() actor.Actor { return state })
	pid := system.Root.SpawnPrefix(props, "activity")
	a.pid = pid
	return a, nil
}

// Publish hands an event to the actor, which numbers, stamps, keeps, fans
// out, counts and logs it. It never waits on the actor (its mailbox is
// unbounded and its fan-out never waits on a subscriber), only on another
// Publish's Send, which sendMu orders.
func (a *Activity) Publish(e event.Event) {
	a.counts.add(e.Name)
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	a.published.Add(1)
	a.root.Send(a.pid, &publish{event: e})
}

// NoteLegacyRoute counts one call to a route of the legacy 3.0 API for the
// migration report (Usage.Legacy.Routes). It is not an event. profile is ""
// when the call names no session.
func (a *Activity) NoteLegacyRoute(route, remote, profile string) {
	a.root.Send(a.pid, &legacyRoute{route: route, remote: remote, profile: profile})
}

// Subscribe registers a subscriber. With replay, every ring entry with seq >
// since is queued first, then live events follow with no gap and no
// duplicate, because both happen inside one actor message. If the ring no
// longer holds seq since+1 (since > 0), the stream starts with an
// events-dropped event counting the lost ones. A since that is not this
// run's (an earlier run handed it out) replays this run's events from the
// first, behind a service-restarted event. Without replay, since is ignored
// and the stream is live only.
func (a *Activity) Subscribe(since uint64, replay bool) (*Subscription, error) {
	sub := newSubscription(a, a.lastSubID.Add(1), a.queueSize)
	res, err := a.root.RequestFuture(a.pid, &subscribe{since: since, replay: replay, sub: sub}, a.timeout).Result()
	if err != nil {
		// If the actor registers it late, this removes it again.
		sub.Close()
		return nil, a.requestError("subscribe", err)
	}
	if _, ok := res.(*subscribed); !ok {
		sub.Close()
		return nil, fmt.Errorf("activity: subscribe: unexpected reply %T", res)
	}
	return sub, nil
}

// SubscribeLive registers a live-only subscriber without waiting for the
// actor, which may be seconds behind a flood of events: the subscription is
// handed every event published after SubscribeLive returns (its request is
// in the mailbox ahead of them), from FirstLiveSeq on, once the actor gets
// to it. A stopped actor never hands it any.
func (a *Activity) SubscribeLive() *Subscription {
	sub := newSubscription(a, a.lastSubID.Add(1), a.queueSize)
	a.sendMu.Lock()
	defer a.sendMu.Unlock()
	sub.firstLive = a.firstSeq + a.published.Load() // as the actor will find it
	a.root.Send(a.pid, &subscribe{sub: sub})
	return sub
}

// Page is an answer of Recent.
type Page struct {
	// Events are the ring entries after since, oldest first.
	Events []event.Event
	// NextSeq is the seq of the first event not returned: to continue
	// without a gap, ask again with since = NextSeq-1.
	NextSeq uint64
	// Missed counts the events after since that the ring no longer holds
	// (0 when since is 0): those before Events[0].
	Missed uint64
	// Restarted says that since was not this run's (an earlier run handed
	// it out): Events start at this run's first, Missed counting those of
	// them the ring no longer holds.
	Restarted bool
}

// Recent returns up to limit ring entries with seq > since (all of them
// when limit <= 0) and what the client should know of the ones it cannot
// have (Page).
func (a *Activity) Recent(since uint64, limit int) (Page, error) {
	res, err := a.root.RequestFuture(a.pid, &recentRequest{since: since, limit: limit}, a.timeout).Result()
	if err != nil {
		return Page{}, a.requestError("recent events", err)
	}
	r, ok := res.(*recentReply)
	if !ok {
		return Page{}, fmt.Errorf("activity: recent events: unexpected reply %T", res)
	}
	return r.page, nil
}

// LastPublishedSeq is the seq of the newest event published so far, which
// the actor may not have numbered yet (behind a flood of events its mailbox
// can be seconds long): a subscriber that must account for every event
// published until some moment (a recording being stopped) reads it then,
// and knows which seqs it still waits for. With Publish running on other
// goroutines meanwhile, it is that of the newest or of one published at the
// same time (or just after). One less than the first seq while nothing was
// published.
func (a *Activity) LastPublishedSeq() uint64 { return a.firstSeq + a.published.Load() - 1 }

// Sync returns once every event published before it was called is queued
// for every subscriber registered then: a subscriber that must not miss
// the events published until some moment calls it at that moment, then
// reads what is queued with TryNext.
func (a *Activity) Sync() error {
	res, err := a.root.RequestFuture(a.pid, &syncRequest{}, a.timeout).Result()
	if err != nil {
		return a.requestError("sync", err)
	}
	if _, ok := res.(*synced); !ok {
		return fmt.Errorf("activity: sync: unexpected reply %T", res)
	}
	return nil
}

// Usage returns the migration report since the actor started: a copy,
// free to keep and encode.
func (a *Activity) Usage() (Usage, error) {
	res, err := a.root.RequestFuture(a.pid, &usageRequest{}, a.timeout).Result()
	if err != nil {
		return Usage{}, a.requestError("usage report", err)
	}
	r, ok := res.(*usageReply)
	if !ok {
		return Usage{}, fmt.Errorf("activity: usage report: unexpected reply %T", res)
	}
	return r.usage, nil
}

// Stop stops the actor after the messages already sent to it (so every
// event published before Stop is delivered), ends every subscription, and
// waits. It is idempotent.
func (a *Activity) Stop() {
	a.stopOnce.Do(func() {
		_ = a.root.PoisonFuture(a.pid).Wait()
	})
}

func (a *Activity) requestError(what string, err error) error {
	if errors.Is(err, actor.ErrDeadLetter) {
		return fmt.Errorf("activity: %s: %w", what, ErrStopped)
	}
	if errors.Is(err, actor.ErrTimeout) {
		return fmt.Errorf("activity: %s: no answer within %v (the actor is overloaded or stopping): %w", what, a.timeout, err)
	}
	return fmt.Errorf("activity: %s: %w", what, err)
}
