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
func ArmID(index int) string {
	return fmt.Sprintf("%04X", mix16(idInput(index), 0x6A2B, 0x3C95))
}

// GripID returns the id of the simulated grip at index: a decimal string
// (1..65535), derived from the index alone. Indices 0..65534 all get
// distinct ids.
func GripID(index int) string {
	return strconv.Itoa(int(mix16(idInput(index), 0x2F6D, 0x9E37)))
}

// ArmUUID returns the UUID of the simulated arm at index, derived from the
// index alone (a name-based, version 5 style UUID, 8-4-4-4-12 hex).
func ArmUUID(index int) string { return nameUUID("hapticd/sim/arm/" + strconv.Itoa(index)) }

// GripUUID returns the UUID of the simulated grip at index, derived from the
// index alone.
func GripUUID(index int) string { return nameUUID("hapticd/sim/grip/" + strconv.Itoa(index)) }

// nameUUID hashes name into a UUID with the version (5) and RFC 4122
// variant bits set, so tools that parse UUIDs accept it.
func nameUUID(name string) string {
	sum := sha1.Sum([]byte(name))
	b := sum[:16]
	b[6] = b[6]&0x0F | 0x50
	b[8] = b[8]&0x3F | 0x80
	var u [16]byte
	copy(u[:], b)
	return hw.FormatUUID(u)
}
