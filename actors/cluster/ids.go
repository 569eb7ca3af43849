package cluster

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
)

// newcomer is a device that is about to join the gateway.
type newcomer struct {
	uuid string
	id   string // its own short id; "" to derive one from the UUID
	kind hw.Kind
}

// idsDocument is the state directory's document of the gateway ids given
// out (idMemory), so that a restarted gateway gives each UUID its id back.
const idsDocument = "cluster/gateway-ids"

// idReservedFor is how long a remembered id stays reserved for its UUID
// after the gateway last knew the UUID connected: a node down for
// maintenance gets its arms' ids back, yet an arm that never returns does
// not keep a newcomer from its own id for good. The gateway refreshes
// the record of connected UUIDs every idsRefreshEvery.
//
// At most maxRememberedIDs records are kept per kind, the least recently
// seen of the devices not connected going first: every newcomer's id is
// chosen against them, under the gateway's lock.
const (
	idReservedFor    = 30 * 24 * time.Hour
	idsRefreshEvery  = time.Hour
	maxRememberedIDs = 8192
)

// rememberedID is the gateway id a UUID had, and when the gateway last
// knew the UUID connected.
type rememberedID = hw.RememberedID

// idMemory holds the remembered ids by kind, then UUID (hw.IDMemory, with
// the gateway's reservations).
type idMemory hw.IDMemory

// idsFile is idsDocument's shape (hw.IDsFile).
type idsFile = hw.IDsFile

func (m idMemory) file() idsFile { return hw.IDMemory(m).File() }

// memoryOf reads f back at now (hw.IDsFile.Memory): a record seen after now
// counts as seen now, so that its reservation still ends; one stored under
// a UUID in the form hapticd wrote before it took the vendor's is read
// under the UUID its device reports now, so the device keeps its id.
func memoryOf(f idsFile, now time.Time) idMemory {
	m := f.Memory(now)
	var upgrade sim.UUIDUpgrader
	upgrade.Memory(m)
	return idMemory(m)
}

func (m idMemory) set(k hw.Kind, uuid string, r rememberedID) { hw.IDMemory(m).Set(k, uuid, r) }

// reservations are the ids of kind k reserved at now, each for the UUID
// whose record claims it: of two records that claim one id (the older one
// outlived its reservation once and the id went to a newcomer; or a
// hand-edited file), the one seen last, then the lower UUID.
func (m idMemory) reservations(k hw.Kind, now time.Time) map[string]string {
	owner := map[string]string{}
	for uuid, r := range m[k] {
		if now.Sub(r.Seen) >= idReservedFor {
			continue
		}
		o, ok := owner[r.ID]
		if !ok {
			owner[r.ID] = uuid
			continue
		}
		if seen := m[k][o].Seen; r.Seen.After(seen) || r.Seen.Equal(seen) && uuid < o {
			owner[r.ID] = uuid
		}
	}
	return owner
}

// prune drops the records whose reservation ended before now, then the
// least recently seen beyond maxRememberedIDs per kind; never the record of
// a device connected now (its record's Seen may lag by idsRefreshEvery, or
// by a wall clock stepped forward).
func (m idMemory) prune(now time.Time, connected func(uuid string) bool) {
	for _, byUUID := range m {
		maps.DeleteFunc(byUUID, func(uuid string, r rememberedID) bool {
			return now.Sub(r.Seen) >= idReservedFor && !connected(uuid)
		})
	}
	hw.IDMemory(m).Trim(maxRememberedIDs, func(_ hw.Kind, uuid string) bool { return connected(uuid) })
}

// assignIDs gives each newcomer a gateway id that no device in used (ids in
// use, by kind) has, following the package doc's rule: a UUID gets its
// remembered id back (mem) if it is free and still reserved for it; else,
// in UUID order, its own id if free and not reserved for another UUID,
// else one derived from the UUID that is neither. used is updated with
// the ids handed out, and mem with each newcomer's id, seen at now.
func assignIDs(used map[hw.Kind]map[string]bool, mem idMemory, news []newcomer, now time.Time) map[string]string {
	news = slices.Clone(news)
	slices.SortFunc(news, func(a, b newcomer) int { return strings.Compare(a.uuid, b.uuid) })
	reserved := map[hw.Kind]map[string]string{}
	for _, n := range news {
		if used[n.kind] == nil {
			used[n.kind] = map[string]bool{}
		}
		if reserved[n.kind] == nil {
			reserved[n.kind] = mem.reservations(n.kind, now)
		}
	}
	out := make(map[string]string, len(news))
	// Remembered ids first, so that a newcomer earlier in UUID order
	// cannot take one from its owner in the same inventory.
	for _, n := range news {
		if r, ok := mem[n.kind][n.uuid]; ok && reserved[n.kind][r.ID] == n.uuid && !used[n.kind][r.ID] {
			used[n.kind][r.ID] = true
			out[n.uuid] = r.ID
		}
	}
	for _, n := range news {
		if _, ok := out[n.uuid]; ok {
			continue
		}
		free := func(id string) bool {
			o := reserved[n.kind][id]
			return id != "" && !used[n.kind][id] && (o == "" || o == n.uuid)
		}
		id := n.id
		if r, ok := mem[n.kind][n.uuid]; ok && free(r.ID) {
			id = r.ID // its reservation ended, but nobody took the id meanwhile
		}
		if !free(id) {
			taken := maps.Clone(used[n.kind])
			for rid, o := range reserved[n.kind] {
				if o != n.uuid {
					taken[rid] = true
				}
			}
			id = derivedID(n.kind, n.uuid, taken)
		}
		used[n.kind][id] = true
		out[n.uuid] = id
	}
	for _, n := range news {
		mem.set(n.kind, n.uuid, rememberedID{ID: out[n.uuid], Seen: now})
	}
	return out
}

// derivedID is a free short id derived from uuid (hw.DerivedID, which a
// node's registry uses for two of its own devices with one id).
func derivedID(kind hw.Kind, uuid string, used map[string]bool) string {
	return hw.DerivedID(kind, uuid, func(id string) bool { return used[id] })
}
