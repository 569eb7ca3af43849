package actors

import (
	"sync"
	"time"

	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// ClosedRingSize is how many recent session ends ClosedSessions keeps.
const ClosedRingSize = 256

// ClosedSession is one session that ended, as GET /sessions/closed lists
// it.
type ClosedSession struct {
	ID          uint64
	Profile     string
	Remote      string
	APIVersion  string
	ConnectedAt time.Time
	ClosedAt    time.Time
	Reason      protocol.CloseReason
}

// closedRing keeps the last ClosedRingSize session ends, oldest first when
// read. Fixed size: a storm of short connections costs no memory.
type closedRing struct {
	mu    sync.Mutex // guards the following
	items [ClosedRingSize]ClosedSession
	next  int // index of the next write
	n     int // how many items are filled
}

func (r *closedRing) add(c ClosedSession) {
	r.mu.Lock()
	r.items[r.next] = c
	r.next = (r.next + 1) % len(r.items)
	if r.n < len(r.items) {
		r.n++
	}
	r.mu.Unlock()
}

// list returns a copy, oldest first.
func (r *closedRing) list() []ClosedSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ClosedSession, 0, r.n)
	start := (r.next - r.n + len(r.items)) % len(r.items)
	for i := 0; i < r.n; i++ {
		out = append(out, r.items[(start+i)%len(r.items)])
	}
	return out
}

// ClosedSessions lists the most recent session ends (at most
// ClosedRingSize), oldest first, each with its reason.
func (s *Service) ClosedSessions() []ClosedSession { return s.closes.list() }

// sessionEnded records a session's end in the ring and publishes
// session-ended; it runs once per session, when its actor stops.
func (s *Service) sessionEnded(sess *Session) {
	reason := sess.CloseReason()
	s.closes.add(ClosedSession{
		ID: sess.ID, Profile: sess.Profile(), Remote: sess.Remote, APIVersion: sess.APIVersion,
		ConnectedAt: sess.ConnectedAt, ClosedAt: time.Now(), Reason: reason,
	})
	s.activity.Publish(event.SessionEnded(sess.ID, sess.Profile(), sess.Remote, sess.APIVersion, reason))
}
