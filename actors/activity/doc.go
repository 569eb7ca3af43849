// Package activity is the activity channel: one actor that numbers every
// event, keeps the most recent ones in a ring, fans them out to subscribers
// (the events WebSocket), logs them, and counts deprecated usage for the
// migration report.
//
// # Ordering
//
// Events get seq F, F+1, F+2, … in the order the actor receives them, and
// time is stamped at that moment. F, the run's first seq, is one past its
// start time in microseconds (Options.FirstSeq), so every run numbers above
// what any earlier run handed out. Publish never waits on the actor: it is an
// actor Send, counted under a mutex held for the Send alone, so that the
// count's order is the mailbox's and LastPublishedSeq knows the newest
// event's seq before the actor has numbered it. Events published by one
// goroutine keep their order; events from different goroutines are ordered
// by arrival.
//
// A subscriber sees each event at most once, in seq order. Subscribe with
// replay queues the ring entries after since and registers the subscriber
// inside one actor message, so replay and live traffic meet with no gap and
// no duplicate. If the ring has already dropped some of the events after
// since, the stream starts with an events-dropped event counting them
// (with seq = since). A since that is not this run's (below the one before
// its first, or past its newest) was handed out by an earlier run: the
// stream starts with a service-restarted event whose seq is the one before
// this run's first, then replays this run's events from the first (behind
// an events-dropped event with that seq if the ring no longer holds it);
// Recent answers it from the first event too, and says it restarted.
//
// SubscribeLive registers a live-only subscriber without waiting for the
// actor (a recording starting while the actor is behind a flood of events):
// its request is queued ahead of the events published after it returns,
// and its FirstLiveSeq is known at once.
//
// Recent answers from the same ring: events after since, oldest first, and
// the seq of the first event it did not return (continue with since =
// nextSeq-1).
//
// # Backpressure
//
// Fan-out never waits on a subscriber. Each has a bounded live queue
// (Options.QueueSize); when it is full, events are dropped for that
// subscriber alone and counted. The next thing it reads after the gap is
// one events-dropped event {missed: n}: as soon as it drains its queue, or
// in front of the next live event once there is room. That event is not in
// the ring and has no seq of its own: it repeats the seq of the last event
// the subscriber received before the gap, so seq never goes backwards on a
// stream and GET /events?since=<that seq> fetches what was missed while the
// ring still holds it. A stalled subscriber costs the actor one mutex
// acquire per event and never slows production or other subscribers.
//
// # Logging
//
// Each event is logged once at its level (notice logs at info), at most
// Options.LogBurst lines per event name and second (a token bucket of
// golang.org/x/time/rate, by the events' own times); the events over it are
// summed up in one line before the name's next line, or at stop.
//
// # Migration report
//
// Usage aggregates http-route-deprecated and command-deprecated events,
// 3.0-format sessions (session-started with api_version "3.0") and 3.0
// routes (NoteLegacyRoute, and deprecated routes called under /3.0/), each
// with counts, first and last use, and by remote host and session profile.
package activity
