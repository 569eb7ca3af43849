package sim

import (
	"crypto/sha1"
	"fmt"
	"strconv"

	"github.com/hapticd/hapticd/hw"
)

// idSpan is how many indices get distinct ids: the 16-bit id space minus
// the zero id, which real firmware reports for a failed wake-up.
const idSpan = 1<<16 - 1

// mix16 is a bijection on 16-bit values with mix16(0) == 0: xor-shifts and
// odd multiplications are each invertible modulo 2^16. Ids therefore look
// scattered yet never collide for the first idSpan indices.
func mix16(x, mulA, mulB uint16) uint16 {
	x ^= x >> 7
	x *= mulA
	x ^= x >> 9
	x *= mulB
	x ^= x >> 8
	return x
}

// idInput maps any index onto 1..idSpan, so that mix16 never returns zero.
func idInput(index int) uint16 {
	r := index % idSpan
	if r < 0 {
		r += idSpan
	}
	return uint16(r + 1)
}

// ArmID returns the id of the simulated arm at index: 4 uppercase hex
// digits, derived from the index alone, never "0000". The same index gives
// the same id after a restart, so stored device config comes back. Indices
// 0..65534 all get distinct ids.
func ArmID(index int) string { return fmt.Sprintf("%04X", armIDValue(index)) }

// armIDValue and gripIDValue are the 16-bit values ArmID and GripID spell.
func armIDValue(index int) uint16  { return mix16(idInput(index), 0x6A2B, 0x3C95) }
func gripIDValue(index int) uint16 { return mix16(idInput(index), 0x2F6D, 0x9E37) }

// GripID returns the id of the simulated grip at index: a decimal string
// (1..65535), derived from the index alone. Indices 0..65534 all get
// distinct ids.
func GripID(index int) string { return strconv.Itoa(int(gripIDValue(index))) }

// ArmUUID returns the UUID of the simulated arm at index, derived from the
// index alone, in a real arm's form (hw.FormatUUID): 32 upper-case hex
// digits whose low 16 bits are its id (ArmID), as an Inverse3's device_id
// is the low 16 bits of its uuid.
func ArmUUID(index int) string {
	return hw.FormatUUID(withID(nameUUID(legacyArmName(index)), armIDValue(index)))
}

// GripUUID returns the UUID of the simulated grip at index, derived from the
// index alone; its low 16 bits are its id (GripID).
func GripUUID(index int) string {
	return hw.FormatUUID(withID(nameUUID(legacyGripName(index)), gripIDValue(index)))
}

// The names a simulated device's UUID is hashed from: its UUID before
// hapticd took the vendor's form was that hash alone (UUIDUpgrader).
func legacyArmName(index int) string  { return "hapticd/sim/arm/" + strconv.Itoa(index) }
func legacyGripName(index int) string { return "hapticd/sim/grip/" + strconv.Itoa(index) }

// nameUUID hashes name into a UUID with the version (5) and RFC 4122
// variant bits set, so tools that parse UUIDs accept it.
func nameUUID(name string) [16]byte {
	sum := sha1.Sum([]byte(name))
	var u [16]byte
	copy(u[:], sum[:16])
	u[6] = u[6]&0x0F | 0x50
	u[8] = u[8]&0x3F | 0x80
	return u
}

// withID is u with its low 16 bits set to id.
func withID(u [16]byte, id uint16) [16]byte {
	u[14], u[15] = byte(id>>8), byte(id)
	return u
}

// EmulatedIndexSpan is how many emulated devices (hw/emulator) of one
// family get ids of their own: a quarter of the quarter of the id space no
// simulated family uses (OtherIndexBase on).
const EmulatedIndexSpan = FamilyIndexSpan / 4

// EmulatedIdentity is the id and UUID the index-th emulated device of
// family f reports by default (hw/emulator's Identity says why): the id is
// the simulated one of an index in the quarter no simulated family uses,
// in f's share of it (its IndexBase scaled down, so the Inverse3 and the
// wireless grip keep the ids they had before families were emulated), and
// the UUID ends in it.
func EmulatedIdentity(f Family, index int) (uint16, [16]byte) {
	spec := f.Spec()
	slot := spec.IndexBase/4 + index
	return emulatedIdentity(spec.Kind, slot)
}

// emulatedIdentity is EmulatedIdentity at a slot of kind's quarter.
func emulatedIdentity(kind hw.Kind, slot int) (uint16, [16]byte) {
	id := armIDValue(OtherIndexBase + slot)
	if kind == hw.KindGrip {
		id = gripIDValue(OtherIndexBase + slot)
	}
	return id, withID(nameUUID(legacyEmulatedName(kind, slot)), id)
}

// legacyEmulatedName is the name an emulated device's UUID is hashed from:
// before hapticd took the vendor's form, the UUID was that hash alone.
func legacyEmulatedName(kind hw.Kind, slot int) string {
	return "hapticd/emulator/" + kind.String() + "/" + strconv.Itoa(slot)
}

// UUIDUpgrader reads a UUID hapticd stored before it took the vendor's
// form (device-ids.json, a lab gateway's ids, the owners of device
// configs) as the same device reports it now, so that an existing state
// directory keeps giving each device its id and config: a simulated or
// emulated device's old UUID (a hash, lower-case and dashed) becomes its
// current one (the hash ending in its id), any other old-form UUID (a real
// arm's) the same 16 bytes in the current form. Anything else is left as
// it is. The tables of hapticd's own old UUIDs are built on the first
// old-form UUID of a kind (tens of milliseconds), so a state directory
// written in the current form costs nothing. Not safe for concurrent use.
type UUIDUpgrader struct {
	byKind map[hw.Kind]map[[16]byte]string
}

// UUID is stored as the device of kind k reports it now.
func (u *UUIDUpgrader) UUID(k hw.Kind, stored string) string {
	b, ok := hw.ParseLegacyUUID(stored)
	if !ok {
		return stored
	}
	if u.byKind == nil {
		u.byKind = map[hw.Kind]map[[16]byte]string{}
	}
	table, built := u.byKind[k]
	if !built {
		table = legacyUUIDs(k)
		u.byKind[k] = table
	}
	if now, ok := table[b]; ok {
		return now
	}
	return hw.FormatUUID(b)
}

// Memory rekeys m's records under their devices' current UUIDs; of two
// records that land on one UUID, the one seen last stays.
func (u *UUIDUpgrader) Memory(m hw.IDMemory) {
	for k, byUUID := range m {
		var old []string
		for uuid := range byUUID {
			if _, ok := hw.ParseLegacyUUID(uuid); ok {
				old = append(old, uuid)
			}
		}
		for _, uuid := range old {
			r := byUUID[uuid]
			delete(byUUID, uuid)
			now := u.UUID(k, uuid)
			if had, dup := byUUID[now]; !dup || r.Seen.After(had.Seen) {
				byUUID[now] = r
			}
		}
	}
}

// legacyUUIDs maps the old UUIDs of kind's simulated devices (every index
// with an id of its own) and emulated ones (every slot of their quarter)
// to their current ones.
func legacyUUIDs(kind hw.Kind) map[[16]byte]string {
	t := make(map[[16]byte]string, idSpan+FamilyIndexSpan)
	for i := range idSpan {
		if kind == hw.KindGrip {
			t[nameUUID(legacyGripName(i))] = GripUUID(i)
		} else {
			t[nameUUID(legacyArmName(i))] = ArmUUID(i)
		}
	}
	for slot := range FamilyIndexSpan {
		_, now := emulatedIdentity(kind, slot)
		t[nameUUID(legacyEmulatedName(kind, slot))] = hw.FormatUUID(now)
	}
	return t
}
