package activity

import (
	"github.com/hapticd/hapticd/protocol/event"
)

// message seals the activity actor's own messages: only types in this file
// implement it, so the Receive type switch is the whole protocol.
//
// These messages never leave the process (the activity channel is per host),
// so they are plain Go structs rather than protobuf.
type message interface{ activityMessage() }

// publish carries one event to be numbered, kept in the ring, fanned out and
// counted.
type publish struct{ event event.Event }

// subscribe registers sub, made by the caller (so that a caller whose
// request timed out can still remove it by id). With replay, ring entries
// with seq > since are queued first. The actor replies with *subscribed.
type subscribe struct {
	since  uint64
	replay bool
	sub    *Subscription
}

// subscribed confirms that the subscriber is registered and its replay is
// queued.
type subscribed struct{}

// unsubscribe removes a subscriber; sent by Subscription.Close.
type unsubscribe struct{ id uint64 }

// recentRequest asks for ring entries with seq > since, at most limit (all
// when limit <= 0). The actor replies with *recentReply.
type recentRequest struct {
	since uint64
	limit int
}

type recentReply struct{ page Page }

// syncRequest asks the actor to answer *synced once it has handled every
// message sent to it before: every event published before it is then in
// its subscribers' queues.
type syncRequest struct{}

type synced struct{}

// usageRequest asks for the migration report; the reply is *usageReply.
type usageRequest struct{}

type usageReply struct{ usage Usage }

// legacyRoute counts one call to a route of the 3.0 API (not an event).
type legacyRoute struct {
	route, remote, profile string
}

// supervised records one supervision decision (NoteSupervision).
type supervised struct {
	actor, reason, directive string
}

// supervisionRequest asks for the supervision report; the reply is
// *supervisionReply.
type supervisionRequest struct{}

type supervisionReply struct{ report Supervision }

func (*supervised) activityMessage()         {}
func (*supervisionRequest) activityMessage() {}
func (*supervisionReply) activityMessage()   {}
func (*publish) activityMessage()            {}
func (*subscribe) activityMessage()          {}
func (*subscribed) activityMessage()         {}
func (*unsubscribe) activityMessage()        {}
func (*recentRequest) activityMessage()      {}
func (*recentReply) activityMessage()        {}
func (*usageRequest) activityMessage()       {}
func (*syncRequest) activityMessage()        {}
func (*synced) activityMessage()             {}
func (*usageReply) activityMessage()         {}
func (*legacyRoute) activityMessage()        {}

var _ message = (*publish)(nil)
