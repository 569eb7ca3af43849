package hw

import (
	"fmt"
	"hash/fnv"
	"strconv"
)

// DerivedID is a short id derived from uuid that taken does not hold,
// spelled as the kind's ids are: 4 upper-case hex digits for arms, decimal
// 1..65535 for grips. It is for a device whose own 16-bit id another
// device already has (the 16-bit ids are not unique; the UUID is the
// identity): the same UUID gets the same id while the same ids are taken.
// It is the FNV-1a hash of uuid folded to 16 bits, counting up past taken
// ids; with all 65536 taken it is uuid itself.
func DerivedID(kind Kind, uuid string, taken func(id string) bool) string {
	h := fnv.New32a()
	h.Write([]byte(uuid))
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
