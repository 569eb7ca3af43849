package actors

import (
	"sync"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// profileSessions is the one owner of each live profile's session document
// (profiles.v2/<hash>/session): while a session has the profile, the
// document here is the latest queued, and each change goes onto it entry
// by entry (basis, lease), so two sessions of one profile never store one's
// whole session level over the other's acknowledged entry. Once no session
// has the profile the document is dropped, and the next session reads it
// again.
type profileSessions struct {
	mu   sync.Mutex
	docs map[string]*profileSessionDoc
}

type profileSessionDoc struct {
	ps       profileSession
	seq      uint64 // bumped by every change: the Put of an older one is put again
	sessions int
}

// profileSessionChange says which entries of the document a change sets.
type profileSessionChange struct {
	basis *protocol.Basis
	lease int // 0: unchanged
}

// join counts one more session on profile. When another session has it
// already, its document is the latest and what the session takes; else
// read (what the session took from the stored document) starts it.
func (t *profileSessions) join(profile string, read profileSession) profileSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.docs == nil {
		t.docs = make(map[string]*profileSessionDoc)
	}
	d := t.docs[profile]
	if d == nil {
		d = &profileSessionDoc{ps: read}
		t.docs[profile] = d
	}
	d.sessions++
	return d.ps
}

// leave counts one session fewer on profile.
func (t *profileSessions) leave(profile string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.docs[profile]; d != nil {
		if d.sessions--; d.sessions <= 0 {
			delete(t.docs, profile)
		}
	}
}

// change puts ch onto profile's document and queues the document with put.
// put runs outside the lock; when a change of another session was merged
// meanwhile, the latest document is put again, so the last Put is always
// the latest merge whatever order the callers' Puts ran in.
func (t *profileSessions) change(profile string, ch profileSessionChange, put func(profileSession) error) error {
	t.mu.Lock()
	d := t.docs[profile]
	if d == nil {
		t.mu.Unlock()
		return nil // the session left the profile: nothing of it to store
	}
	d.ps.Name, d.ps.UsedAt = profile, time.Now().UTC()
	if ch.basis != nil {
		d.ps.Basis = *ch.basis
	}
	if ch.lease != 0 {
		d.ps.LeaseMs = ch.lease
	}
	d.seq++
	ps, seq := d.ps, d.seq
	t.mu.Unlock()
	for {
		if err := put(ps); err != nil {
			return err
		}
		t.mu.Lock()
		latest := d.seq == seq || t.docs[profile] != d
		ps, seq = d.ps, d.seq
		t.mu.Unlock()
		if latest {
			return nil
		}
	}
}
