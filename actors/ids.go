package actors

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/store"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

// idsDocument is the state directory's document of the ids the registry
// gave devices in place of their hardware's (localIDs).
const idsDocument = "device-ids"

// maxRememberedIDs bounds the records kept per kind: past it, the least
// recently seen of the devices not connected are forgotten. Only devices
// that ever shared a 16-bit id with another have a record, so a bench
// never comes near it; it only keeps the document small whatever happens.
const maxRememberedIDs = 8192

// localIDs is what the registry remembers of the ids it gave: for each
// UUID served on an id other than the one its hardware reports (an id
// derived from its UUID, hw.DerivedID), that id. A device's stored config
// is keyed by its id (devices/<type>-<id>), so the id must follow the
// device: a remembered UUID gets its id back whatever else is plugged in
// first, and no other device is given that id while the record stands (a
// device without a UUID neither). Nor is a derived id the own id of a
// device known but absent (seen).
// A record is never forgotten for age: an arm away for a year still finds
// its id and config (only maxRememberedIDs bounds them). It is dropped
// when the device is next served on its own hardware id, which happens
// only when its remembered id was taken (a hand-edited document).
//
// The registry actor alone reads and changes mem; saving runs off the
// actor (idsSaver), and each snapshot is durable before the device it was
// taken for is listed.
type localIDs struct {
	mem hw.IDMemory
	// version counts the changes to mem; saver writes the newest.
	version uint64
	// unread: the document could not be read at start (not a corrupt one,
	// which the store moved aside), so it is never written over.
	unread bool
	saver  *idsSaver
	// seen holds, by kind, the ids known to be some device's own: those
	// with stored documents (device-global config, a profile's entries)
	// when the service started, and those served since, with the UUID
	// last served on each. A derived id avoids them (knownElse).
	seen map[hw.Kind]map[string]knownID
	// movedAside are the device documents the scan at start found
	// unreadable and the store moved aside, by document name: the device's
	// addition tells of each (movedAsideEntries), once.
	movedAside map[string]*store.CorruptError
}

// knownID is what the registry knows of an id: the UUID last served on
// it since the start, if any was (served); else, the UUID its stored
// device-global config was set for, if the document says (owned: a
// document written before owners were recorded does not).
type knownID struct {
	uuid   string
	served bool
	owned  bool
	// assigned: served on an id its giver keeps (AssignedID), not one the
	// registry keeps for a local device (localHolders).
	assigned bool
}

// ownedConfig is a device's device-global config as stored: its entries
// and the UUID of the device they were set for ("" for a device without
// one). The owner tells, after a restart, whose config an id's document
// is, so that a device is given back its derived id and config even when
// the remembered ids are lost, and a device without a UUID its own
// (knownElse). The entries' reader ignores the member.
type ownedConfig struct {
	config protocol.DeviceConfig
	owner  string
}

// ownerMember is the member of a device's stored document that says whose
// it is (ownedConfig, configOwner's tag).
const ownerMember = "owner"

// MarshalJSON is the config's object with the member "owner":{"uuid":...}.
func (c ownedConfig) MarshalJSON() ([]byte, error) {
	uuid, err := json.Marshal(c.owner)
	if err != nil {
		return nil, fmt.Errorf("actors: encode the owner of a device config: %w", err)
	}
	b := c.config.AppendJSON(nil)
	b = append(b[:len(b)-1], `,"`+ownerMember+`":{"uuid":`...)
	b = append(b, uuid...)
	return append(b, "}}"...), nil
}

// storedOwnedConfig reads a device's stored document (ownedConfig's) for
// its entries, as protocol.StoredDeviceConfig does, and names as members
// it does not know (store.KeepsUnknown) those that are neither an entry
// nor the owner, which ownedConfig writes itself.
type storedOwnedConfig struct {
	protocol.StoredDeviceConfig
}

// UnknownMembers makes storedOwnedConfig a store.KeepsUnknown.
func (s *storedOwnedConfig) UnknownMembers() []store.Member {
	return keptMembers(s.Unknown, ownerMember)
}

// keptMembers is unknown as the store keeps it, without the members of
// the document's object named drop (ones the document's writer knows,
// though the decode of its entries does not; a member of that name inside
// an entry is not one of them).
func keptMembers(unknown []protocol.UnknownMember, drop ...string) []store.Member {
	var out []store.Member
	for _, m := range unknown {
		if len(m.In) > 0 || !slices.Contains(drop, m.Name) {
			out = append(out, store.Member{Name: m.Name, Value: m.Value, In: m.In})
		}
	}
	return out
}

// StoredIDs reads a document of remembered ids (the registry's
// idsDocument, a lab gateway's) as hw.IDsFile, and names the members it
// does not know (store.KeepsUnknown): besides "ids", and in "ids" a kind
// this build does not have (a newer build's device kind), which the store
// writes back at each write of the document.
type StoredIDs struct {
	hw.IDsFile
	unknown []protocol.UnknownMember
}

// idsKnown is what this build reads of idsDocument: "ids", and in it the
// kinds it has, each read whole.
var idsKnown = protocol.KnownMembers{"ids": {hw.KindArm.String(): nil, hw.KindGrip.String(): nil}}

// UnmarshalJSON reads the document as hw.IDsFile does, then lists the
// members it does not know. Only the member named exactly "ids" is the
// ids (at its last occurrence, as UnknownMembersIn looks into it):
// encoding/json would read "IDs" as them too, a member this build lists
// as unknown and writes back, the same records twice. A document the
// wire's stricter parser refuses (a hand edit saved in Latin-1) is read
// with none kept, as a profile's session level is (storedSession).
func (s *StoredIDs) UnmarshalJSON(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return err
	}
	var f hw.IDsFile
	if ids, ok := top["ids"]; ok {
		if err := json.Unmarshal(ids, &f.IDs); err != nil {
			return err
		}
	}
	unknown, err := protocol.UnknownMembersIn(data, idsKnown)
	if err != nil {
		unknown = nil
	}
	*s = StoredIDs{IDsFile: f, unknown: unknown}
	return nil
}

// UnknownMembers makes StoredIDs a store.KeepsUnknown.
func (s *StoredIDs) UnknownMembers() []store.Member { return keptMembers(s.unknown) }

// configOwner is the part of a stored device-global config that says
// whose it is (ownedConfig); Owner is nil in a document without one.
type configOwner struct {
	Owner *struct {
		UUID string `json:"uuid"`
	} `json:"owner"`
}

// idsSaver writes snapshots of the memory one at a time, and never one
// older than the last written (two additions save from two goroutines).
type idsSaver struct {
	mu      sync.Mutex
	written uint64
}

// loadLocalIDs reads the remembered ids; none when the document is missing
// or unreadable (logged: ids are then first-come, as before any was
// remembered).
func loadLocalIDs(st Store, log zerolog.Logger) *localIDs {
	l := &localIDs{mem: hw.IDMemory{}, saver: &idsSaver{}, seen: map[hw.Kind]map[string]knownID{}}
	if st == nil {
		return l
	}
	// UUIDs stored before hapticd took the vendor's form are read as
	// their devices report them now, so those keep their ids and configs.
	var upgrade sim.UUIDUpgrader
	l.loadStoredIDs(st, &upgrade, log)
	var f StoredIDs
	if _, err := st.Load(idsDocument, &f); err != nil {
		l.unread = leftUnread(err)
		log.Error().Err(err).Bool("left_as_is", l.unread).Msg("remembered device ids unreadable; a device sharing its 16-bit id with another gets an id first-come")
		return l
	}
	l.mem = f.Memory(time.Now())
	upgrade.Memory(l.mem)
	return l
}

// loadStoredIDs notes the ids that have stored documents: the devices'
// device-global config (devices/<type>-<id>), with the UUID it was set
// for where it says, and the profiles' entries (<profile folder>/<type>-
// <id>). An unlistable folder is logged; its ids are then not avoided.
// A device config unreadable here is known with no owner (and a corrupt
// one is moved aside now rather than when its device is added, which then
// starts with the defaults).
func (l *localIDs) loadStoredIDs(st Store, upgrade *sim.UUIDUpgrader, log zerolog.Logger) {
	for _, folder := range []string{"devices", profilesFolder} {
		names, err := st.List(folder)
		if err != nil {
			log.Error().Err(err).Str("folder", folder).Msg("could not list stored device documents; an id derived for a device sharing its 16-bit id may be an absent device's own")
			continue
		}
		for _, name := range names {
			base := name[strings.LastIndexByte(name, '/')+1:]
			for _, t := range []protocol.DeviceType{protocol.TypeArm, protocol.TypeGrip} {
				if id, ok := strings.CutPrefix(base, t.Key()+"-"); ok {
					k := hw.KindArm
					if t == protocol.TypeGrip {
						k = hw.KindGrip
					}
					if folder != "devices" {
						// Entries say nothing of their device: the
						// device config's owner, if any, stands.
						if _, ok := l.seen[k][id]; !ok {
							l.mark(k, id, knownID{})
						}
						continue
					}
					var doc configOwner
					if _, err := st.Load(name, &doc); err != nil {
						log.Error().Err(err).Str("document", name).Msg("stored device config unreadable; its device starts with the defaults")
						if corrupt := (*store.CorruptError)(nil); errors.As(err, &corrupt) && corrupt.MovedTo != "" {
							if l.movedAside == nil {
								l.movedAside = map[string]*store.CorruptError{}
							}
							l.movedAside[name] = corrupt
						}
					}
					n := knownID{}
					if doc.Owner != nil {
						n = knownID{uuid: upgrade.UUID(k, doc.Owner.UUID), owned: true}
					}
					l.mark(k, id, n)
				}
			}
		}
	}
}

func (l *localIDs) mark(k hw.Kind, id string, n knownID) {
	if l.seen == nil {
		l.seen = map[hw.Kind]map[string]knownID{}
	}
	if l.seen[k] == nil {
		l.seen[k] = map[string]knownID{}
	}
	l.seen[k][id] = n
}

// served notes that the device with uuid (maybe "") is served on id;
// assigned: on an id a lab gateway gave it (AssignedID).
func (l *localIDs) served(k hw.Kind, id, uuid string, assigned bool) {
	l.mark(k, id, knownID{uuid: uuid, served: true, assigned: assigned})
}

// localHolders are the ids the registry keeps for local devices, by kind,
// with the UUID each is kept for: remembered ids, ids whose stored config
// says whose it is, and ids a local device was served on since the start.
// A lab gateway gives a node's device none of them but its own
// (Service.LocalIDHolders): it would load that device's config, and the
// device, back, find its id held. An id with stored documents that do not
// say whose they are is left out: it may be a node device's, given by the
// gateway before owners were recorded.
func (l *localIDs) localHolders() map[hw.Kind]map[string]string {
	out := map[hw.Kind]map[string]string{}
	hold := func(k hw.Kind, id, uuid string) {
		if out[k] == nil {
			out[k] = map[string]string{}
		}
		out[k][id] = uuid
	}
	for k, byID := range l.seen {
		for id, n := range byID {
			if n.keptLocally() {
				hold(k, id, n.uuid)
			}
		}
	}
	for k, byUUID := range l.mem {
		for uuid, r := range byUUID {
			hold(k, r.ID, uuid)
		}
	}
	return out
}

// keptLocally says whether an id known this way is kept for a local
// device (localHolders): one served on it since the start, not on an id
// its giver keeps; or, none served, the one its stored config says.
func (n knownID) keptLocally() bool { return n.served && !n.assigned || !n.served && n.owned }

// keptFor is localHolders' answer for one id, from the memory itself,
// without building the map (the registry's own check of an id given for a
// node's device). It scans the remembered ids of the kind, which only
// devices that shared a 16-bit id have.
func (l *localIDs) keptFor(k hw.Kind, id string) (uuid string, held bool) {
	for u, r := range l.mem[k] {
		if r.ID == id {
			return u, true
		}
	}
	if n, ok := l.seen[k][id]; ok && n.keptLocally() {
		return n.uuid, true
	}
	return "", false
}

// knownElse reports whether id of kind k may be another device's own than
// the one with uuid: another UUID was served on it last since the start,
// or, none served on it, it has stored documents that do not say they are
// uuid's (ownedConfig). A device without a UUID served on an id before, or
// whose stored config was set for a device without one, gets it again
// (nothing tells it apart from another without one).
func (l *localIDs) knownElse(k hw.Kind, id, uuid string) bool {
	n, ok := l.seen[k][id]
	return ok && (!n.served && !n.owned || n.uuid != uuid)
}

// remembered is uuid's remembered id of kind k, if any.
func (l *localIDs) remembered(k hw.Kind, uuid string) (string, bool) {
	if uuid == "" {
		return "", false
	}
	r, ok := l.mem[k][uuid]
	return r.ID, ok
}

// reservedFor is the UUID whose record holds id of kind k ("" if none).
func (l *localIDs) reservedFor(k hw.Kind, id string) string {
	for uuid, r := range l.mem[k] {
		if r.ID == id {
			return uuid
		}
	}
	return ""
}

// note records the id a device of kind k was given (hwID is the one its
// hardware reports) and returns the snapshot to save before the device is
// listed, or ok false when nothing is to be saved. connected says whether
// a device of a kind with a UUID is connected or being added (its record
// is never trimmed, whatever the kind of the device being added).
func (l *localIDs) note(k hw.Kind, uuid, hwID, id string, now time.Time, connected func(k hw.Kind, uuid string) bool) (f hw.IDsFile, version uint64, ok bool) {
	if uuid == "" {
		return hw.IDsFile{}, 0, false
	}
	_, had := l.mem[k][uuid]
	switch {
	case id != hwID:
		l.mem.Set(k, uuid, hw.RememberedID{ID: id, Seen: now})
		l.mem.Trim(maxRememberedIDs, func(kind hw.Kind, u string) bool { return kind == k && u == uuid || connected(kind, u) })
	case had:
		delete(l.mem[k], uuid)
	default:
		return hw.IDsFile{}, 0, false
	}
	l.version++
	return l.mem.File(), l.version, !l.unread
}

// save writes snapshot version f unless a newer one is written already.
func (s *idsSaver) save(st Store, version uint64, f hw.IDsFile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if version <= s.written {
		return nil
	}
	if err := st.Save(idsDocument, f); err != nil {
		return fmt.Errorf("actors: remember device ids: %w", err)
	}
	s.written = version
	return nil
}

// heldIDs is localIDs.localHolders kept current for readers off the
// registry actor (Service.LocalIDHolders, a lab gateway choosing ids for
// its nodes' devices). The registry changes one id's entry as it serves a
// device and rebuilds the whole only when its remembered ids change;
// rebuilding it on every device served made starting n simulated arms
// O(n²) (4,000 took 38 to 77 s against 8 s; BenchmarkDevicesAdd).
type heldIDs struct {
	mu     sync.RWMutex
	byKind map[hw.Kind]map[string]string
}

// replace puts m in force.
func (h *heldIDs) replace(m map[hw.Kind]map[string]string) {
	h.mu.Lock()
	h.byKind = m
	h.mu.Unlock()
}

// set keeps id of kind k for uuid (held) or for no local device.
func (h *heldIDs) set(k hw.Kind, id, uuid string, held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case held && h.byKind == nil:
		h.byKind = map[hw.Kind]map[string]string{k: {id: uuid}}
	case held && h.byKind[k] == nil:
		h.byKind[k] = map[string]string{id: uuid}
	case held:
		h.byKind[k][id] = uuid
	default:
		delete(h.byKind[k], id)
	}
}

// copyOf is a copy of the ids of kind k kept and whose they are.
func (h *heldIDs) copyOf(k hw.Kind) map[string]string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return maps.Clone(h.byKind[k])
}
