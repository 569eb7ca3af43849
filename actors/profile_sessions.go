package actors

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// profileSessions is the one owner of each live profile's session document
// (profiles.v2/<hash>/session): while a session has the profile, the
// document here is the latest queued, and each change goes onto it entry
// by entry (basis, lease), so two sessions of one profile never store one's
// whole session level over the other's acknowledged entry. Once no session
// has the profile and no session is reading it to join (reading), the
// document is dropped, and the next session reads it again.
//
// A read for a joiner keeps the document: a copy read before a holder's
// change, joined after the holder left, would otherwise start a new
// document from that stale copy and store it over the acknowledged change
// (review36). Kept, the document is what the joiner takes.
type profileSessions struct {
	mu   sync.Mutex
	docs map[string]*profileSessionDoc
	// removing are the profile folders the profiles' bound is removing
	// (claimRemoval to removed), each with a channel closed once it is
	// done: a read for a session about to join one waits for that, then
	// reads what is left (nothing), so the pick and the removal are
	// ordered and neither runs under the other.
	removing map[string]chan struct{}
	// waitingRemoval, if set (tests), is called, without mu, when a
	// read is about to wait for the removal of its profile.
	waitingRemoval func(profile string)
}

type profileSessionDoc struct {
	ps       profileSession
	sessions int
	// readers are the reads of the profile for a session about to join
	// it (reading to doneReading).
	readers int
	// joined: a session joined since the document was made, so ps is the
	// profile's latest (until then it is nothing).
	joined bool
	// unread: the sessions that joined could not read the stored document
	// (they have the defaults); the next session that reads it replaces
	// ps with what it read, so the defaults never stand for, nor get
	// stored over, a document that is there.
	unread bool
}

// profileSessionChange says which entries of the document a change sets.
type profileSessionChange struct {
	basis *protocol.Basis
	lease int // 0: unchanged
}

// apply sets ch's entries, and the name and last use, on ps.
func (ch profileSessionChange) apply(ps *profileSession, profile string, now time.Time) {
	ps.Name, ps.UsedAt = profile, now
	if ch.basis != nil {
		ps.Basis = *ch.basis
	}
	if ch.lease != 0 {
		ps.LeaseMs = ch.lease
	}
}

// join counts one more session on profile and returns the document the
// session takes, and whether it stands for a stored one nobody could read
// (it holds the defaults). read is what the session took from the stored
// document, and readOK whether it could read it. When a session joined the
// profile since the session began reading it, that document is the latest
// (even if those sessions all left since), unless they could not read the
// stored one and this one could: then what it read replaces it.
func (t *profileSessions) join(profile string, read profileSession, readOK bool) (ps profileSession, unread bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.doc(profile)
	if !d.joined || (d.unread && readOK) {
		d.ps, d.unread, d.joined = read, !readOK, true
	}
	d.sessions++
	return d.ps, d.unread
}

// doc returns profile's document, made when there is none. The caller
// holds t.mu.
func (t *profileSessions) doc(profile string) *profileSessionDoc {
	if t.docs == nil {
		t.docs = make(map[string]*profileSessionDoc)
	}
	d := t.docs[profile]
	if d == nil {
		d = &profileSessionDoc{}
		t.docs[profile] = d
	}
	return d
}

// reading counts a read of profile for a session about to join it, until
// doneReading, and returns the profile's document when a session joined it
// and could read it: the latest, so the session takes it rather than
// reading the file, whose read failing for a moment would have the store
// refuse every later write of it (the changes of the sessions holding it,
// acknowledged, then lost at restart) until a restart.
// A profile the profiles' bound is removing is waited for first: the read
// then finds no stored profile, as for a name never used. The wait ends
// early, with an error and no read counted, when stop is closed (the
// session ended) or after limit (a disk that does not finish the removal:
// the pick is then told the profile could not be read, as for a read the
// disk failed, rather than hang its session).
func (t *profileSessions) reading(profile string, stop <-chan struct{}, limit time.Duration) (profileSession, bool, error) {
	folder := profileFolder(profile)
	var timeout <-chan time.Time
	t.mu.Lock()
	for t.removing[folder] != nil {
		done, hook := t.removing[folder], t.waitingRemoval
		t.mu.Unlock()
		if hook != nil {
			hook(profile)
		}
		if timeout == nil {
			timer := time.NewTimer(limit)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-done:
		case <-stop:
			return profileSession{}, false, errProfileRemovalWaitEnded
		case <-timeout:
			return profileSession{}, false, fmt.Errorf("%w (waited %v)", errProfileBeingRemoved, limit)
		}
		t.mu.Lock()
	}
	defer t.mu.Unlock()
	d := t.doc(profile)
	d.readers++
	if d.joined && !d.unread {
		return d.ps, true, nil
	}
	return profileSession{}, false, nil
}

var (
	errProfileBeingRemoved     = errors.New("the profiles' bound is removing this stored profile and the state directory has not finished")
	errProfileRemovalWaitEnded = errors.New("the session ended while the profiles' bound was removing the profile it picked")
)

// inUse returns the profiles a session has or is reading to join: a
// session picking a profile has not got it yet (Session.Profile). The
// profiles' bound skips them without reading their documents; what keeps
// them is claimRemoval, which looks again under the lock reading counts
// under.
func (t *profileSessions) inUse() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.docs))
	for name, d := range t.docs {
		if d.sessions > 0 || d.readers > 0 {
			names = append(names, name)
		}
	}
	return names
}

// profileRemoval is a claim of claimRemoval on one profile folder.
type profileRemoval struct {
	folder string
	done   chan struct{}
}

// claimRemoval marks for removal the first n of folders (profile folders,
// in the order they are to go) that no session has nor is reading to join,
// and returns the claims; a folder another pass is removing counts as one
// of the n. It is where a pick and a removal are ordered: a read counted
// before it keeps its profile; one after waits until removed. Every claim
// returned must be passed to removed once its removal is over.
func (t *profileSessions) claimRemoval(folders []string, n int) []profileRemoval {
	t.mu.Lock()
	defer t.mu.Unlock()
	inUse := make(map[string]bool, len(t.docs))
	for name, d := range t.docs {
		if d.sessions > 0 || d.readers > 0 {
			inUse[profileFolder(name)] = true
		}
	}
	for _, f := range folders {
		if t.removing[f] != nil {
			n--
		}
	}
	var claimed []profileRemoval
	for _, f := range folders {
		if len(claimed) >= n {
			break
		}
		if inUse[f] || t.removing[f] != nil {
			continue
		}
		if t.removing == nil {
			t.removing = make(map[string]chan struct{})
		}
		c := profileRemoval{f, make(chan struct{})}
		t.removing[f] = c.done
		claimed = append(claimed, c)
	}
	return claimed
}

// beingRemoved says whether a pass of the profiles' bound is removing
// folder.
func (t *profileSessions) beingRemoved(folder string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removing[folder] != nil
}

// removed ends the removal claimed by c: the reads waiting for it go on.
// A claim ended already does nothing, even once another pass has claimed
// the same folder again (that claim is its own to end).
func (t *profileSessions) removed(c profileRemoval) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.removing[c.folder] == c.done {
		close(c.done)
		delete(t.removing, c.folder)
	}
}

// doneReading ends a read counted by reading, once the session joined the
// profile or will not.
func (t *profileSessions) doneReading(profile string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.docs[profile]; d != nil {
		d.readers--
		t.dropUnused(profile, d)
	}
}

// leave counts one session fewer on profile.
func (t *profileSessions) leave(profile string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if d := t.docs[profile]; d != nil {
		d.sessions--
		t.dropUnused(profile, d)
	}
}

// dropUnused drops d once no session has its profile nor reads it to
// join. The caller holds t.mu.
func (t *profileSessions) dropUnused(profile string, d *profileSessionDoc) {
	if d.sessions <= 0 && d.readers <= 0 {
		delete(t.docs, profile)
	}
}

// errProfileSessionUnread refuses to store a change on a profile's session
// document that its sessions could not read.
var errProfileSessionUnread = errors.New("the profile's stored session document could not be read, so a change would be stored over it with the defaults; pick the profile again once the state directory reads")

// change queues profile's document with ch on it (put runs outside the
// lock), and puts ch on the document in memory only once queued: a change
// the store refuses is not what the profile's next session takes. When
// another session's change went on meanwhile, the document is put again,
// so the last Put holds every change in memory whatever order the callers'
// Puts ran in.
func (t *profileSessions) change(profile string, ch profileSessionChange, put func(profileSession) error) error {
	now := time.Now().UTC()
	t.mu.Lock()
	d := t.docs[profile]
	if d == nil {
		t.mu.Unlock()
		return nil // the session left the profile: nothing of it to store
	}
	if d.unread {
		// d.ps is the defaults, standing for a document nobody could
		// read: queued, they would be what the profile's next session
		// takes (the queued value is the latest) and be written over the
		// document once it reads again.
		t.mu.Unlock()
		return errProfileSessionUnread
	}
	next := d.ps
	ch.apply(&next, profile, now)
	t.mu.Unlock()
	applied := false
	for {
		if err := put(next); err != nil {
			return err
		}
		t.mu.Lock()
		if t.docs[profile] != d {
			t.mu.Unlock()
			return nil
		}
		if !applied {
			ch.apply(&d.ps, profile, now)
			applied = true
		}
		latest := d.ps == next
		next = d.ps
		t.mu.Unlock()
		if latest {
			return nil
		}
	}
}
