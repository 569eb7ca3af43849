package actors

import (
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// The ring keeps the last ClosedRingSize ends, oldest first, whatever
// number of sessions ended before.
func TestClosedRingKeepsTheLastEnds(t *testing.T) {
	for _, n := range []int{0, 1, ClosedRingSize - 1, ClosedRingSize, ClosedRingSize + 1, 3*ClosedRingSize + 7} {
		var r closedRing
		for i := 1; i <= n; i++ {
			r.add(ClosedSession{ID: uint64(i), Reason: protocol.CloseClientClosed})
		}
		got := r.list()
		want := min(n, ClosedRingSize)
		if len(got) != want {
			t.Fatalf("after %d ends: %d listed, want %d", n, len(got), want)
		}
		for i, c := range got {
			if c.ID != uint64(n-want+i+1) {
				t.Fatalf("after %d ends: entry %d is session %d, want %d", n, i, c.ID, n-want+i+1)
			}
		}
	}
}
