package activity

import (
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"golang.org/x/time/rate"

	"github.com/hapticd/hapticd/protocol/event"
)

// activityActor owns the ring, the subscribers, the usage book and the log
// budget. Only Receive touches them, on the actor's goroutine.
type activityActor struct {
	log      zerolog.Logger
	clock    func() time.Time
	logBurst int

	ring     []event.Event // seq s lives at ring[(s-1) % len(ring)]
	firstSeq uint64        // seq of this run's first event (Options.FirstSeq)
	nextSeq  uint64        // seq of the next event published

	subs map[uint64]*Subscription

	usage       usageBook
	supervision supervisionBook
	// logWindows holds, per event name, its log budget. flushArmed is set
	// while a flushLogs is due (see armLogFlush).
	logWindows map[string]*logWindow
	leftOut    bool // a line was left out since the last flushLogWindows
	flushArmed bool
	flushTimer *time.Timer
}

// flushLogs asks the actor to log the events its log budget left out: a
// burst's summary comes a second after it, not with the next line of its
// name, which may be hours later or at the stop (tour1000: 429
// device-connected lines of a 1000-arm start summed up only at SIGTERM).
type flushLogs struct{}

// logSummaryAfter is how long after a left-out line its summary is logged.
const logSummaryAfter = time.Second

type logWindow struct {
	budget     *rate.Limiter // logBurst lines a second, in bursts of logBurst
	suppressed int           // events not logged since the last line
	level      zerolog.Level
}

func newActivityActor(o Options) *activityActor {
	return &activityActor{
		log:        o.Log,
		clock:      o.Clock,
		logBurst:   o.LogBurst,
		ring:       make([]event.Event, o.RingSize),
		firstSeq:   o.FirstSeq,
		nextSeq:    o.FirstSeq,
		subs:       make(map[uint64]*Subscription),
		usage:      newUsageBook(o.Clock().UTC()),
		logWindows: make(map[string]*logWindow),
	}
}

// Receive handles one message: lifecycle first, then the sealed messages of
// messages.go.
func (a *activityActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
	case *actor.Stopping:
		// No more events will come: let every reader drain and see the end.
		for id, s := range a.subs {
			s.end()
			delete(a.subs, id)
		}
		if a.flushTimer != nil {
			a.flushTimer.Stop()
		}
		a.flushLogWindows()
	case *actor.Stopped, *actor.Restarting:
	case *publish:
		a.publish(&m.event)
		a.armLogFlush(ctx)
	case *flushLogs:
		a.flushArmed = false
		a.flushLogWindows()
	case *subscribe:
		a.subscribe(m.sub, m.since, m.replay)
		if ctx.Sender() != nil { // SubscribeLive waits for no answer
			ctx.Respond(&subscribed{})
		}
	case *unsubscribe:
		delete(a.subs, m.id)
	case *recentRequest:
		ctx.Respond(&recentReply{page: a.recent(m.since, m.limit)})
	case *usageRequest:
		ctx.Respond(&usageReply{usage: a.usage.report()})
	case *syncRequest:
		ctx.Respond(&synced{})
	case *supervised:
		a.supervision.note(SupervisionNote{Time: a.clock().UTC(), Actor: m.actor, Reason: m.reason, Directive: m.directive})
		a.log.Warn().Str("actor", m.actor).Str("directive", m.directive).Str("reason", m.reason).Msg("supervision")
	case *supervisionRequest:
		ctx.Respond(&supervisionReply{report: a.supervision.report()})
	case *legacyRoute:
		a.usage.legacyRoute(m.route, m.remote, m.profile, a.clock().UTC())
	default:
		a.log.Warn().Str("type", fmt.Sprintf("%T", m)).Msg("activity actor: unknown message dropped")
	}
}

func (a *activityActor) publish(e *event.Event) {
	if e.Category == "" || e.Level == "" {
		// Built by hand rather than by a constructor: fill in the table's
		// row so every event on the wire has the full shape.
		if k, ok := event.Lookup(e.Name); ok {
			e.Category, e.Level = k.Category, k.Level
		}
	}
	if len(e.Data) == 0 {
		e.Data = emptyData
	}
	e.Seq = a.nextSeq
	a.nextSeq++
	e.Time = a.clock().UTC()
	a.ring[(e.Seq-1)%uint64(len(a.ring))] = *e
	for _, s := range a.subs {
		s.deliver(e)
	}
	a.usage.record(e)
	a.logEvent(e)
}

var emptyData = []byte("{}")

// oldest is the smallest seq the ring still holds (nextSeq when empty).
func (a *activityActor) oldest() uint64 {
	n := uint64(len(a.ring))
	if a.nextSeq-a.firstSeq <= n {
		return a.firstSeq
	}
	return a.nextSeq - n
}

// resumePoint is the since a client's resume point means in this run, and
// whether an earlier run handed it out. This run's resume points run from
// the one before its first event (nothing of this run seen yet) to its
// newest; any other but 0 (everything the ring holds) is an earlier run's:
// all this run has published is news to that client, or it would never
// see, say, the device-connected events of the restart. Earlier runs
// numbered from their own, earlier, start (Options.FirstSeq), so their
// seqs fall below this run's; one past the newest too, should the clock
// have stepped back across the restart.
func (a *activityActor) resumePoint(since uint64) (uint64, bool) {
	if since == 0 || (since >= a.firstSeq-1 && since < a.nextSeq) {
		return since, false
	}
	return a.firstSeq - 1, true
}

func (a *activityActor) subscribe(s *Subscription, since uint64, replay bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return // closed before it was registered (its request timed out)
	}
	s.lastQueued = a.nextSeq - 1
	s.firstLive = a.nextSeq
	if replay {
		asked := since
		since, restarted := a.resumePoint(since)
		now := a.clock().UTC()
		if restarted {
			// Its seq is the resume point this run gives the client,
			// so one that resumes again from it is not told twice.
			s.replay = append(s.replay, stampedEvent(event.ServiceRestarted(asked), since, now))
		}
		from := max(since+1, a.firstSeq)
		if oldest := a.oldest(); from < oldest {
			// since=0 asks for what the ring holds; any other resume
			// point (an earlier run's too) wants every event after it.
			if asked > 0 {
				// The ring wrapped past what the client asked for:
				// say so first, as for a slow subscriber.
				s.replay = append(s.replay, stampedEvent(event.EventsDropped(oldest-from), since, now))
			}
			from = oldest
		}
		s.replay = slices.Grow(s.replay, int(a.nextSeq-from))
		for seq := from; seq < a.nextSeq; seq++ {
			s.replay = append(s.replay, a.ring[(seq-1)%uint64(len(a.ring))])
		}
	}
	a.subs[s.id] = s
}

func (a *activityActor) recent(since uint64, limit int) Page {
	asked := since
	since, restarted := a.resumePoint(since)
	from := max(since+1, a.firstSeq)
	var missed uint64
	if oldest := a.oldest(); from < oldest {
		if asked > 0 {
			missed = oldest - from
		}
		from = oldest
	}
	to := a.nextSeq
	if limit > 0 && to-from > uint64(limit) {
		to = from + uint64(limit)
	}
	out := make([]event.Event, 0, to-from)
	for seq := from; seq < to; seq++ {
		out = append(out, a.ring[(seq-1)%uint64(len(a.ring))])
	}
	return Page{Events: out, NextSeq: to, Missed: missed, Restarted: restarted}
}

// logEvent writes one line per event at the event's level, at most logBurst
// lines per name and second (by the events' own times); the events not
// logged are summed up in one line before the next line of that name (or at
// stop).
func (a *activityActor) logEvent(e *event.Event) {
	level := zerologLevel(e.Level)
	if a.log.GetLevel() > level || zerolog.GlobalLevel() > level {
		return
	}
	w := a.logWindows[e.Name]
	if w == nil {
		w = &logWindow{budget: rate.NewLimiter(rate.Limit(a.logBurst), a.logBurst), level: level}
		a.logWindows[e.Name] = w
	}
	if !w.budget.AllowN(e.Time, 1) {
		w.suppressed++
		a.leftOut = true
		return
	}
	a.flushLogWindow(e.Name, w)
	a.log.WithLevel(level).
		Uint64("seq", e.Seq).
		Str("event", e.Name).
		Str("category", e.Category).
		RawJSON("data", e.Data).
		Msg(e.Message)
}

// armLogFlush has the actor sent a flushLogs logSummaryAfter from now when
// a line was left out and none is due yet.
func (a *activityActor) armLogFlush(ctx actor.Context) {
	if a.flushArmed || !a.leftOut {
		return
	}
	a.flushArmed = true
	root, self := ctx.ActorSystem().Root, ctx.Self()
	a.flushTimer = time.AfterFunc(logSummaryAfter, func() { root.Send(self, &flushLogs{}) })
}

func (a *activityActor) flushLogWindow(name string, w *logWindow) {
	if w.suppressed == 0 {
		return
	}
	a.log.WithLevel(w.level).
		Str("event", name).
		Int("suppressed", w.suppressed).
		Msg(fmt.Sprintf("%d more %s events were not logged, over %d a second (they are in the ring and on the events socket)", w.suppressed, name, a.logBurst))
	w.suppressed = 0
}

func (a *activityActor) flushLogWindows() {
	for name, w := range a.logWindows {
		a.flushLogWindow(name, w)
	}
	a.leftOut = false
}

// zerologLevel maps an event level onto zerolog's; zerolog has no notice,
// so notice logs at info.
func zerologLevel(level string) zerolog.Level {
	switch level {
	case event.LevelError:
		return zerolog.ErrorLevel
	case event.LevelWarning:
		return zerolog.WarnLevel
	default:
		return zerolog.InfoLevel
	}
}
