package activity

import (
	"fmt"
	"time"
)

// SupervisionNote is one supervision decision of the actor system: an actor
// that panicked, and what its supervisor did about it.
type SupervisionNote struct {
	Time      time.Time `json:"time"`
	Actor     string    `json:"actor"`     // the actor's process id, e.g. "session-3"
	Reason    string    `json:"reason"`    // the panic value, as text
	Directive string    `json:"directive"` // RestartDirective, StopDirective, ...
}

// Supervision is what the activity actor has seen of supervision since it
// started: counts by directive and the most recent notes, oldest first.
type Supervision struct {
	Total       uint64            `json:"total"`
	ByDirective map[string]uint64 `json:"by_directive"`
	Recent      []SupervisionNote `json:"recent"`
}

// maxSupervisionNotes bounds Supervision.Recent.
const maxSupervisionNotes = 32

// supervisionBook is the activity actor's record of supervision. Only the
// actor touches it.
type supervisionBook struct {
	total  uint64
	counts map[string]uint64
	recent []SupervisionNote // a ring once full; next is the oldest
	next   int
}

func (b *supervisionBook) note(n SupervisionNote) {
	if b.counts == nil {
		b.counts = make(map[string]uint64)
	}
	b.total++
	b.counts[n.Directive]++
	if len(b.recent) < maxSupervisionNotes {
		b.recent = append(b.recent, n)
		return
	}
	b.recent[b.next] = n
	b.next = (b.next + 1) % maxSupervisionNotes
}

func (b *supervisionBook) report() Supervision {
	r := Supervision{Total: b.total, ByDirective: make(map[string]uint64, len(b.counts)), Recent: make([]SupervisionNote, 0, len(b.recent))}
	for k, v := range b.counts {
		r.ByDirective[k] = v
	}
	r.Recent = append(append(r.Recent, b.recent[b.next:]...), b.recent[:b.next]...)
	return r
}

// NoteSupervision records one supervision decision (the service forwards
// protoactor's supervisor events here). It is not an event of the wire
// table: the user-facing consequences (device-failed, session-ended with
// internal_error) are published by the actors that act on them. It never
// blocks.
func (a *Activity) NoteSupervision(actorID, reason, directive string) {
	a.root.Send(a.pid, &supervised{actor: actorID, reason: reason, directive: directive})
}

// Supervision returns what the actor has seen of supervision: a copy.
func (a *Activity) Supervision() (Supervision, error) {
	res, err := a.root.RequestFuture(a.pid, &supervisionRequest{}, a.timeout).Result()
	if err != nil {
		return Supervision{}, a.requestError("supervision report", err)
	}
	r, ok := res.(*supervisionReply)
	if !ok {
		return Supervision{}, fmt.Errorf("activity: supervision report: unexpected reply %T", res)
	}
	return r.report, nil
}
