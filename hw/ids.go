package hw

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DerivedID is a short id derived from uuid that taken does not hold,
// spelled as the kind's ids are: 4 upper-case hex digits for arms, decimal
// 1..65535 for grips. It is for a device whose own 16-bit id another
// device already has (the 16-bit ids are not unique; the UUID is the
// identity): the same UUID gets the same id while the same ids are taken.
// It is the FNV-1a hash of uuid folded to 16 bits, counting up past taken
// ids; with all 65536 taken it is uuid itself. A UUID in FormatUUID's form
// is hashed in the 8-4-4-4-12 lower-case form hapticd reported before, so
// a device keeps the id derived for it then (and the config stored under
// it) when the remembered ids are lost.
func DerivedID(kind Kind, uuid string, taken func(id string) bool) string {
	h := fnv.New32a()
	if u, ok := parseUUID(uuid); ok {
		h.Write([]byte(formatLegacyUUID(u)))
	} else {
		h.Write([]byte(uuid))
	}
	v := h.Sum32()
	x := uint16(v ^ v>>16)
	for range 1 << 16 {
		var id string
		if kind == KindGrip {
			if x == 0 {
				x++
			}
			id = strconv.Itoa(int(x))
		} else {
			id = fmt.Sprintf("%04X", x)
		}
		if !taken(id) {
			return id
		}
		x++
	}
	return uuid
}

// IDSpelled reports whether id is spelled as the drivers spell a kind's
// ids (4 upper-case hex digits for arms, decimal 0..65535 without leading
// zeros for grips): an id is a route segment (/arm3/{id}), a key clients
// match on and part of the name of the device's stored config.
func IDSpelled(kind Kind, id string) bool {
	if kind == KindGrip {
		v, err := strconv.ParseUint(id, 10, 16)
		return err == nil && strconv.FormatUint(v, 10) == id
	}
	if len(id) != 4 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// RememberedID is the id a device was given, and when it was last known
// connected (wall clock: the record outlives the process).
type RememberedID struct {
	ID   string    `json:"id"`
	Seen time.Time `json:"seen"`
}

// IDMemory holds the ids given to devices, by kind, then UUID: what a
// service keeps on disk so that a device gets its id back after a restart
// (the lab gateway for every device it serves, the local registry for the
// devices served on a derived id).
type IDMemory map[Kind]map[string]RememberedID

// IDsFile is an IDMemory as stored: records by kind name ("arm", "grip"),
// then UUID.
type IDsFile struct {
	IDs map[string]map[string]RememberedID `json:"ids"`
}

// Set records uuid's id.
func (m IDMemory) Set(k Kind, uuid string, r RememberedID) {
	if m[k] == nil {
		m[k] = map[string]RememberedID{}
	}
	m[k][uuid] = r
}

// File is m as stored, sharing nothing with m.
func (m IDMemory) File() IDsFile {
	f := IDsFile{IDs: map[string]map[string]RememberedID{}}
	for k, byUUID := range m {
		if len(byUUID) > 0 {
			f.IDs[k.String()] = maps.Clone(byUUID)
		}
	}
	return f
}

// Memory reads f back at now; records of an unknown kind or with an id not
// spelled as its kind's ids are left out (a hand-edited file), and a record
// seen after now (a clock stepped back, a hand-edited file) counts as seen
// now, so that whatever ages records still ages it.
func (f IDsFile) Memory(now time.Time) IDMemory {
	m := IDMemory{}
	for name, byUUID := range f.IDs {
		var k Kind
		switch name {
		case KindArm.String():
			k = KindArm
		case KindGrip.String():
			k = KindGrip
		default:
			continue
		}
		for uuid, r := range byUUID {
			if uuid != "" && IDSpelled(k, r.ID) {
				if r.Seen.After(now) {
					r.Seen = now
				}
				m.Set(k, uuid, r)
			}
		}
	}
	return m
}

// Trim drops the least recently seen records beyond limit per kind, never
// one that keep holds (a device connected now, whose Seen may lag): keep
// is asked with the record's kind, as the same UUID may name a device of
// each kind.
func (m IDMemory) Trim(limit int, keep func(k Kind, uuid string) bool) {
	for k, byUUID := range m {
		over := len(byUUID) - limit
		if over <= 0 {
			continue
		}
		var gone []string
		for uuid := range byUUID {
			if !keep(k, uuid) {
				gone = append(gone, uuid)
			}
		}
		slices.SortFunc(gone, func(a, b string) int {
			if c := byUUID[a].Seen.Compare(byUUID[b].Seen); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		for _, uuid := range gone[:min(over, len(gone))] {
			delete(byUUID, uuid)
		}
	}
}
