package cluster

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	"github.com/hapticd/hapticd/hw"
)

// newcomer is a device that is about to join the gateway.
type newcomer struct {
	uuid string
	id   string // its own short id; "" to derive one from the UUID
	kind hw.Kind
}

// assignIDs gives each newcomer a gateway id that no device in used (ids in
// use, by kind) has, following the package doc's rule: UUID order, own id if
// free, else derived from the UUID. used is updated with the ids handed out.
func assignIDs(used map[hw.Kind]map[string]bool, news []newcomer) map[string]string {
	news = slices.Clone(news)
	slices.SortFunc(news, func(a, b newcomer) int {
		switch {
		case a.uuid < b.uuid:
			return -1
		case a.uuid > b.uuid:
			return 1
		}
		return 0
	})
	out := make(map[string]string, len(news))
	for _, n := range news {
		if used[n.kind] == nil {
			used[n.kind] = map[string]bool{}
		}
		id := n.id
		if id == "" || used[n.kind][id] {
			id = derivedID(n.kind, n.uuid, used[n.kind])
		}
		used[n.kind][id] = true
		out[n.uuid] = id
	}
	return out
}

// derivedID is a free short id derived from uuid, spelled as the kind's ids
// are: 4 hex digits for arms, decimal 1..65535 for grips.
func derivedID(kind hw.Kind, uuid string, used map[string]bool) string {
	h := fnv.New32a()
	h.Write([]byte(uuid))
	v := h.Sum32()
	x := uint16(v ^ v>>16)
	for range 1 << 16 {
		var id string
		if kind == hw.KindGrip {
			if x == 0 {
				x++
			}
			id = strconv.Itoa(int(x))
		} else {
			id = fmt.Sprintf("%04X", x)
		}
		if !used[id] {
			return id
		}
		x++
	}
	return uuid // 65536 devices of one kind: ids cannot be short any more
}
