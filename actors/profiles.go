package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/protocol/space"
)

// Profile storage.
//
// A profile's documents live in the folder profiles.v2/<store.HashName(name)>/:
// "session" (the session level: basis and lease, the profile's name itself
// and when a session last picked it) and one "<type>-<id>" per device. The
// folder name has a fixed length whatever the name, so every valid name
// (64 characters of any script) can be stored.
//
// The number of stored profiles is bounded: when a session picks a profile
// that is not stored yet and that makes more than Options.MaxStoredProfiles
// (default DefaultMaxStoredProfiles), the profiles least recently picked are
// removed, never one a connected session has or is picking, nor one whose session
// document is missing or unreadable (nothing dates it). A pick and a removal
// of one profile are ordered (pruneProfiles): the pick that comes first
// keeps the profile; one that comes after finds none stored.
//
// State directories of the earlier layout, profiles/<store.EscapeName(name)>/,
// are moved to the new one when the service starts.
const (
	DefaultMaxStoredProfiles = 1000
	profilesFolder           = "profiles.v2"
	oldProfilesFolder        = "profiles"
)

// leftUnread reports whether a Load's error leaves the file where it was,
// unread (not a corrupt one moved aside): it holds values a restart that
// can read it brings back, so the defaults that stand for it must never be
// written over it, and a POST of the value in force must not be answered
// 200 as if the disk had it (a device reads such a document again first:
// readGlobalThenSet, readProfilesThen).
//
// A document read with entries this build does not accept
// (*store.RejectedError) is read, unless no copy of it could be kept: then
// it is the only place the values of those entries are, and is left as it
// is as an unread one is.
func leftUnread(err error) bool {
	var corrupt *store.CorruptError
	var rejected *store.RejectedError
	return err != nil && !(errors.As(err, &corrupt) && corrupt.MovedTo != "") &&
		!(errors.As(err, &rejected) && rejected.KeptAt != "")
}

// isRejected reports whether a Load's error is only entries it did not
// accept (*store.RejectedError) with a copy of the file kept: the document
// was read, and dates its profile.
func isRejected(err error) bool {
	var rerr *store.RejectedError
	return errors.As(err, &rerr) && rerr.KeptAt != ""
}

// profileFolder is the folder of a profile's documents.
func profileFolder(name string) string { return profilesFolder + "/" + store.HashName(name) }

// profileSession is what a profile keeps of the session level.
type profileSession struct {
	// Name is the profile's name: the folder name is a hash of it.
	Name string `json:"name"`
	// UsedAt is when a session last picked or changed the profile; the
	// least recently used profiles are removed first.
	UsedAt  time.Time      `json:"used_at"`
	Basis   protocol.Basis `json:"basis"`
	LeaseMs int            `json:"lease_ms"`
}

// storedSession reads a profile's stored session level member by member
// (UnmarshalJSON): a basis or a lease this build does not accept is left
// at its zero value, which applyStoredProfile does not apply, and named in
// rejected.
type storedSession struct {
	ps       profileSession
	rejected []rejectedMember
	// unknown: the members that are not profileSession's
	// (sessionMembers), which the store writes back.
	unknown []protocol.UnknownMember
}

// sessionMembers are the members of a profile's stored session level, as
// profileSession's tags name them: any other is one this build does not
// know, kept as it is (TestStoredReadersKnowWhatTheirWritersWrite).
var sessionMembers = []string{"name", "used_at", "basis", "lease_ms"}

// UnknownMembers makes storedSession a store.KeepsUnknown.
func (s *storedSession) UnknownMembers() []store.Member { return keptMembers(s.unknown) }

// UnmarshalJSON decodes the stored session level member by member, the
// basis and the lease with protocol's decode (the wire's); the name is
// read as it is (it names the profile: a document without a readable one
// is corrupt). A date that does not read (a hand edit) is rejected as a
// bad basis is, and leaves the profile undated, the first the profiles'
// bound removes, until its next pick dates it: it cost the basis and the
// lease with it when the document was corrupt for it (tourstate).
func (s *storedSession) UnmarshalJSON(data []byte) error {
	var raw struct {
		Name    string          `json:"name"`
		UsedAt  json.RawMessage `json:"used_at"`
		Basis   json.RawMessage `json:"basis"`
		LeaseMs json.RawMessage `json:"lease_ms"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	// The wire's parser, which lists the members, is stricter than
	// encoding/json (UTF-8, depth): a document that reads here but not
	// there (a hand edit saved in Latin-1) keeps what it holds, and has
	// no members kept beyond this build's (review59: it was moved aside
	// whole, basis and lease with it).
	unknown, err := protocol.UnknownMembers(data, sessionMembers...)
	if err != nil {
		unknown = nil
	}
	*s = storedSession{ps: profileSession{Name: raw.Name}, unknown: unknown}
	if len(raw.UsedAt) > 0 && string(raw.UsedAt) != "null" {
		if err := s.ps.UsedAt.UnmarshalJSON(raw.UsedAt); err != nil {
			s.ps.UsedAt = time.Time{}
			s.rejected = append(s.rejected, rejectedMember{"used_at", fmt.Sprintf("%s is not a date in RFC 3339 (\"2026-11-29T20:00:00Z\"): the profile counts as the least recently used until its next pick", protocol.ClipQuoted(string(raw.UsedAt)))})
		}
	}
	if len(raw.Basis) > 0 && string(raw.Basis) != "null" {
		e, inner, err := protocol.DecodeStoredEntry(protocol.KeyBasis, raw.Basis)
		if err != nil {
			s.rejected = append(s.rejected, rejectedMember{"basis", err.Message})
		} else {
			s.ps.Basis = e.(protocol.Basis)
			// A newer build's field inside the basis: kept as a member
			// this build does not know is (its place In "basis").
			s.unknown = append(s.unknown, inner...)
		}
	}
	if len(raw.LeaseMs) > 0 && string(raw.LeaseMs) != "null" {
		ms, err := protocol.DecodeStoredLeaseMs(raw.LeaseMs)
		if err != nil {
			s.rejected = append(s.rejected, rejectedMember{"lease", err.Message})
		} else {
			s.ps.LeaseMs = ms
		}
	}
	return nil
}

// rejectedMember is a member of a stored session level that was not
// accepted.
type rejectedMember struct{ name, reason string }

// RejectedEntries makes storedSession a store.Tolerant: the basis or
// lease it did not accept, nil when none.
func (s *storedSession) RejectedEntries() error {
	if len(s.rejected) == 0 {
		return nil
	}
	errs := make([]error, len(s.rejected))
	for i, r := range s.rejected {
		errs[i] = fmt.Errorf("%s: %s", r.name, r.reason)
	}
	return errors.Join(errs...)
}

func (a *sessionActor) profileSessionName() string {
	return profileFolder(a.state.profile) + "/session"
}

// storedProfile is a profile's stored session level, read for the session
// actor by the per-tick path when a message picks the profile: the read may
// block on the disk, which no Receive may.
type storedProfile struct {
	name  string // "" when the message picks no new profile
	found bool
	ps    profileSession
	err   error
	// rejected: the members of the stored document this build did not
	// accept (err is a *store.RejectedError); ps has the others.
	rejected []rejectedMember
	// reading: the read is counted (profileSessions.reading) until
	// Service.storedProfileRead, called once.
	reading bool
}

// loadStoredProfile reads the stored session level of profile name, or
// takes it from the sessions that hold it (profileSessions.reading). The
// caller ends the read with storedProfileRead once the session joined the
// profile or will not.
// A pick of a profile the profiles' bound is removing waits for the
// removal, until stop is closed or for the write timeout at most; past it
// the read fails (sp.err), and the session is told so.
func (s *Service) loadStoredProfile(name string, stop <-chan struct{}) storedProfile {
	sp := storedProfile{name: name}
	if s.store == nil || name == "" {
		return sp
	}
	ps, ok, err := s.profileSessions.reading(name, stop, s.opts.WriteTimeout)
	if err != nil {
		sp.err = fmt.Errorf("actors: read stored profile %q: %w", name, err)
		return sp
	}
	sp.reading = true
	if ok {
		sp.found, sp.ps = true, ps
		return sp
	}
	var stored storedSession
	sp.found, sp.err = loadLatest(s.writeBehind, s.store, profileFolder(name)+"/session", &stored)
	sp.ps, sp.rejected = stored.ps, stored.rejected
	return sp
}

// storedProfileRead ends the read of loadStoredProfile, once. It only reads
// sp: an actor whose session ended may still be reading it.
func (s *Service) storedProfileRead(sp *storedProfile) {
	if sp.reading {
		s.profileSessions.doneReading(sp.name)
	}
}

// loadLatest reads document name, preferring a value written behind and
// not on disk yet: that value was acknowledged, and the disk still has the
// one before it for up to the write-behind's second.
func loadLatest(wb *store.WriteBehind, st Store, name string, v any) (found bool, err error) {
	if wb != nil {
		if data, ok := wb.Pending(name); ok {
			if err := json.Unmarshal(data, v); err != nil {
				return false, fmt.Errorf("actors: decode %s as written behind: %w", name, err)
			}
			return true, nil
		}
	}
	return st.Load(name, v)
}

// applyStoredProfile applies the stored session level of the profile just
// picked (read by the per-tick path), and records that it was used. A
// stored level it cannot read gives the defaults and a warning in
// warnings. When another session has the profile already, its document
// (Service.profileSessions) is the latest and the session takes that.
func (a *sessionActor) applyStoredProfile(sp *storedProfile, warnings *[]protocol.Error) {
	if a.svc.store == nil || a.state.profile == "" {
		return
	}
	// Read with a member this build does not accept, and a copy of the
	// file kept: the other member is the profile's, that one the default.
	var rerr *store.RejectedError
	rejected := errors.As(sp.err, &rerr) && !leftUnread(sp.err)
	if sp.err != nil {
		// Defaults, as documented: the basis and lease the session had
		// are not this profile's, and its next change would store them
		// as if they were.
		a.state.basis = protocol.Basis{Permutation: protocol.IdentityBasis}
		a.state.leaseMs = a.svc.opts.DefaultLeaseMs
	}
	if sp.found && (sp.err == nil || rejected) {
		if _, err := space.ParsePermutation(sp.ps.Basis.Permutation); err == nil {
			a.state.basis = sp.ps.Basis
		}
		if sp.ps.LeaseMs >= protocol.LeaseMinMs && sp.ps.LeaseMs <= protocol.LeaseMaxMs {
			a.state.leaseMs = sp.ps.LeaseMs
		}
	}
	// A new profile starts from the session's basis and lease. A corrupt
	// document moved aside reads as none: the defaults stand until the
	// next write (docs/protocol.md), which nothing on disk forbids.
	readOK := !leftUnread(sp.err)
	ps, unread := a.svc.profileSessions.join(a.state.profile, profileSession{
		Name: a.state.profile, UsedAt: sp.ps.UsedAt, Basis: a.state.basis, LeaseMs: a.state.leaseMs}, readOK)
	a.joined = a.state.profile
	a.state.basis, a.state.leaseMs = ps.Basis, ps.LeaseMs
	switch {
	case rejected:
		names := make([]string, len(sp.rejected))
		dateOnly := true
		for i, r := range sp.rejected {
			names[i] = r.name
			dateOnly = dateOnly && r.name == "used_at"
			a.sess.logged(a.svc.log.Error()).Str("profile", a.state.profile).Str("entry", r.name).Str("file", rerr.Path).Str("kept_at", rerr.KeptAt).Str("reason", r.reason).
				Msg("stored profile session: entry not accepted; its default is in force, the document's other entries are")
			a.svc.activity.Publish(event.StoredEntryRejected("", "", a.state.profile, r.name, rerr.Path, rerr.KeptAt, r.reason))
		}
		// What the session has instead: the pick stores the profile again
		// (its use, below), with the defaults in place of what was not
		// accepted and this pick's date (tourlabwarn: it said the next
		// change would store it, and a date has no default).
		instead := "so the session has the default (or another session's of the profile), stored in the profile from this pick on, and the profile is dated by this pick"
		if dateOnly {
			instead = "so the profile is dated by this pick"
		}
		*warnings = append(*warnings, *protocol.Errorf(protocol.CodeInternal, "session.configure.profile",
			"the profile's stored %s in %s: not accepted by this build (%v), %s; the document's other members are in force; the file as read is kept at %s",
			strings.Join(names, " and "), rerr.Path, rerr.Err, instead, rerr.KeptAt))
	case sp.err != nil && readOK:
		// Moved aside (tourcfg: the session's later basis and lease were
		// refused "until the state directory reads", which it did).
		a.sess.logged(a.svc.log.Error()).Err(sp.err).Msg("stored profile session corrupt and moved aside; defaults until the next change")
		*warnings = append(*warnings, *protocol.Errorf(protocol.CodeInternal, "session.configure.profile",
			"the profile's stored basis and lease were corrupt and were moved aside, so the session has the default ones (or another session's of the profile); its next change is stored: %v", sp.err))
	case sp.err != nil && unread:
		// The client asked for what the profile holds, so its frame says
		// it did not get it.
		a.sess.logged(a.svc.log.Error()).Err(sp.err).Msg("stored profile session unreadable; using defaults")
		*warnings = append(*warnings, *protocol.Errorf(protocol.CodeInternal, "session.configure.profile",
			"the profile's stored basis and lease could not be read, so the session has the default ones: %v", sp.err))
	case sp.err != nil:
		// Another session of the profile holds its document, read and
		// kept current: the session has the profile's basis and lease,
		// not the defaults, and is told nothing it did not get. The file
		// on disk is unreadable all the same: the operator hears it.
		a.sess.logged(a.svc.log.Error()).Err(sp.err).Msg("stored profile session unreadable; the session took the document another session of the profile holds")
	}
	if readOK {
		a.saveProfileSession(warnings, profileSessionChange{}) // the use
	}
}

// leaveProfile ends the session's share in its profile's session document.
func (a *sessionActor) leaveProfile() {
	if a.joined != "" {
		a.svc.profileSessions.leave(a.joined)
		a.joined = ""
	}
}

// storedProfilePicked ends the picking of a profile, on the per-tick path
// after the actor applied it: a profile stored for the first time may take
// the store past its bound.
func (s *Service) storedProfilePicked(sp *storedProfile) {
	if s.store != nil && sp.name != "" && sp.err == nil && !sp.found {
		s.pruneProfiles(profileFolder(sp.name))
	}
}

// saveProfileSession queues ch (the entries the session changed, and the
// last use) on the profile's session document for the state directory:
// only those entries, so another session's acknowledged basis or lease on
// the profile stays. Refused (the shutdown closed the write-behind), the
// frame says so in warnings: the values are in force for this session but
// not stored.
func (a *sessionActor) saveProfileSession(warnings *[]protocol.Error, ch profileSessionChange) {
	if a.svc.writeBehind == nil || a.joined == "" {
		return
	}
	name := a.profileSessionName()
	err := a.svc.profileSessions.change(a.joined, ch, func(ps profileSession) error {
		if ch.basis != nil {
			// Set anew, whole: a newer build's field inside the stored
			// basis goes with the value it was part of.
			return a.svc.writeBehind.Put(name, replacing(ps, []protocol.Key{protocol.KeyBasis}))
		}
		return a.svc.writeBehind.Put(name, ps)
	})
	if err != nil {
		*warnings = append(*warnings, *protocol.Errorf(protocol.CodeUnavailable, "session.configure",
			"the session's basis and lease are in force but not stored in the profile: %v", err))
	}
}

// pruneProfiles removes the least recently used stored profiles beyond the
// bound. added is the folder of a profile just created, counted even when
// its documents are still in the write-behind queue.
//
// A profile a session has or is picking is never removed, nor removed
// under a pick: the profiles in use are listed first only to spare their
// reads, and the pass claims the ones it removes (claimRemoval) under the
// same lock as a pick counts its read (profileSessions.reading), after it
// read the candidates' session documents. A pick counted before the claim
// keeps its profile (the next least recently used goes instead); one that
// starts after it waits until the profile is removed, then finds none
// stored and starts a new one, as for a name never used. A claimed profile
// picked (and left) since the pass dated it is kept: it is no longer the
// least recently used, and the bound holds again at the next profile
// created. So it does after two passes at once that each counted the
// other's removal as its own (each lists from the disk, where the other's
// new profile may not be yet): the store holds one over the bound until
// then, rather than lose a profile picked more recently.
func (s *Service) pruneProfiles(added string) {
	limit := s.opts.MaxStoredProfiles
	if limit <= 0 {
		limit = DefaultMaxStoredProfiles
	}
	names, err := s.store.List(profilesFolder)
	if err != nil {
		s.log.Error().Err(err).Msg("list stored profiles; none removed")
		return
	}
	folders := map[string]bool{added: true}
	for _, n := range names {
		if i := strings.LastIndexByte(n, '/'); i > 0 {
			folders[n[:i]] = true
		}
	}
	over := len(folders) - limit
	if over <= 0 {
		return
	}
	live := map[string]bool{added: true}
	for _, sess := range s.Sessions() {
		if p := sess.Profile(); p != "" {
			live[profileFolder(p)] = true
		}
	}
	for _, p := range s.profileSessions.inUse() {
		live[profileFolder(p)] = true
	}
	type candidate struct {
		folder string
		usedAt time.Time
	}
	var cands []candidate
	// Folders another pass is removing count toward this one's removals
	// (claimRemoval), undated: their session document may be gone already,
	// and this pass would otherwise warn that nothing dates them and remove
	// one profile too many in their place.
	var removing []string
	for f := range folders {
		if live[f] {
			continue
		}
		if s.profileSessions.beingRemoved(f) {
			removing = append(removing, f)
			continue
		}
		// A folder whose session document is missing or unreadable is
		// kept: nothing dates it, and its device entries were
		// acknowledged (a service killed before the write-behind wrote
		// the session document, a disk that failed a read). The bound
		// then holds among the profiles it can date.
		// The latest pick, written behind or on disk: a pick still in the
		// write-behind's second is the profile's last use, and the disk
		// has the one before it.
		var stored storedSession
		found, err := loadLatest(s.writeBehind, s.store, f+"/session", &stored)
		ps := stored.ps
		if !found && err == nil {
			// Claimed, or removed whole, by another pass since this one
			// listed it: it counts toward this pass's removals as above
			// (one removed whole is claimed first, found gone and
			// released). Taken for undated, it was warned about by the
			// thousand in a long churn, and one profile more was removed
			// in its place.
			if s.profileSessions.beingRemoved(f) {
				removing = append(removing, f)
				continue
			}
			if names, lerr := s.store.List(f); lerr == nil && len(names) == 0 {
				removing = append(removing, f)
				continue
			}
		}
		if !found || err != nil && !isRejected(err) {
			s.log.Warn().Err(err).Str("folder", f).Msg("a stored profile without a readable session document is never removed by the profiles' bound")
			continue
		}
		cands = append(cands, candidate{f, ps.UsedAt})
	}
	slices.SortFunc(cands, func(a, b candidate) int { return a.usedAt.Compare(b.usedAt) })
	order := removing
	dated := make(map[string]time.Time, len(cands))
	for _, c := range cands {
		order = append(order, c.folder)
		dated[c.folder] = c.usedAt
	}
	claimed := s.profileSessions.claimRemoval(order, over)
	// A pick of a claimed profile waits until it is released, so each is,
	// whatever becomes of the pass (the per-tick path recovers a panic);
	// releasing a claim twice does nothing.
	defer func() {
		for _, c := range claimed {
			s.profileSessions.removed(c)
		}
	}()
	for _, c := range claimed {
		f := c.folder
		// Picked and left again since its session document was read
		// (no pick can start now): the date that made it the least
		// recently used is no longer its own, and it is kept; the bound
		// then holds again at the next profile created.
		var stored storedSession
		if found, err := loadLatest(s.writeBehind, s.store, f+"/session", &stored); err != nil && !isRejected(err) || !found || stored.ps.UsedAt.After(dated[f]) {
			s.profileSessions.removed(c)
			continue
		}
		if err := s.removeProfile(f); err != nil {
			s.log.Error().Err(err).Str("folder", f).Msg("remove a least recently used profile")
		}
		s.profileSessions.removed(c) // the picks waiting for it go on
	}
}

// removeProfile removes every document of a profile folder claimed for
// removal, on disk or still in the write-behind queue: a document queued
// and never written (a device's first entries in the profile, within the
// write-behind's second) would otherwise be written after the removal and
// bring back half the profile, without the session document that dates
// it, so never removed by the bound again. Deleting it supersedes the
// queued value. No session can queue a new one meanwhile: none has the
// profile, and a pick waits for the removal.
func (s *Service) removeProfile(folder string) error {
	if s.writeBehind != nil {
		for _, n := range s.writeBehind.QueuedUnder(folder) {
			if err := s.store.Delete(n); err != nil {
				return err
			}
		}
	}
	return s.store.DeleteFolder(folder)
}

// migrateProfiles moves profiles of the earlier layout
// (profiles/<EscapeName(name)>/) to profileFolder(name), adding the name to
// the session document. A document that cannot be moved stays where it was
// (and is logged); the rest of its profile moves anyway. A document the new
// layout has already is kept, and the earlier copy removed.
func migrateProfiles(st *store.Store, log zerolog.Logger) {
	names, err := st.List(oldProfilesFolder)
	if err != nil {
		log.Error().Err(err).Msg("list profiles of the earlier layout; not migrated")
		return
	}
	failed := map[string]bool{}
	seen := map[string]bool{}
	for _, n := range names {
		seg, doc, ok := strings.Cut(strings.TrimPrefix(n, oldProfilesFolder+"/"), "/")
		if !ok || strings.Contains(doc, "/") {
			continue // not a document of the earlier layout
		}
		seen[seg] = true
		if err := migrateProfileDoc(st, n, seg, doc); err != nil {
			failed[seg] = true
			log.Error().Err(err).Str("document", n).Msg("could not move a stored profile document to the new layout; it stays unused")
		}
	}
	for seg := range seen {
		if !failed[seg] {
			if err := st.DeleteFolder(oldProfilesFolder + "/" + seg); err != nil {
				log.Error().Err(err).Msg("remove a migrated profile folder")
			}
		}
	}
}

func migrateProfileDoc(st *store.Store, old, seg, doc string) error {
	name, err := store.UnescapeName(seg)
	if err != nil {
		return err
	}
	target := profileFolder(name) + "/" + doc
	// The new layout's copy, when there is one, is the newer: the old one
	// was copied before and could not be removed, and sessions have written
	// the new one since. Copying again would undo what they acknowledged.
	var existing json.RawMessage
	found, err := st.Load(target, &existing)
	var corrupt *store.CorruptError
	switch {
	case err != nil && !(errors.As(err, &corrupt) && corrupt.MovedTo != ""):
		return err // left as it is: neither copy is touched
	case found:
		if err := st.Delete(old); err != nil {
			return fmt.Errorf("the new layout has %s already; remove the earlier copy: %w", target, err)
		}
		return nil
	}
	var v any
	if doc == "session" {
		var sd oldSession
		if _, err := st.Load(old, &sd); err != nil {
			return err
		}
		sd.ps.Name = name
		v = &sd
	} else {
		var raw json.RawMessage
		if _, err := st.Load(old, &raw); err != nil {
			return err
		}
		v = raw
	}
	if err := st.Save(target, v); err != nil {
		return err
	}
	return st.Delete(old)
}

// oldSession is a profile's session document of the earlier layout, which
// has no name: it decodes as profileSession did (a document that does not
// is corrupt, as before), and is written back with the name first and
// every other member of the file as the file had it, in its order, so
// that a newer build's members (at the top level, inside basis) survive
// the move as they survive every other write.
type oldSession struct {
	ps profileSession
	// members are the file's members but its name; nil when the wire's
	// parser, stricter than encoding/json, does not read it (a hand edit
	// in Latin-1): then ps is written, as before.
	members []protocol.UnknownMember
}

func (o *oldSession) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &o.ps); err != nil {
		return err
	}
	members, err := protocol.UnknownMembers(data, "name")
	if err != nil {
		members = nil
	}
	o.members = members
	return nil
}

func (o *oldSession) MarshalJSON() ([]byte, error) {
	if o.members == nil {
		return json.Marshal(o.ps)
	}
	b := []byte(`{"name":`)
	name, err := json.Marshal(o.ps.Name)
	if err != nil {
		return nil, err
	}
	b = append(b, name...)
	for _, m := range o.members {
		key, err := json.Marshal(m.Name)
		if err != nil {
			return nil, err
		}
		b = append(append(append(append(b, ','), key...), ':'), m.Value...)
	}
	return append(b, '}'), nil
}
