package activity

import (
	"sync/atomic"

	"github.com/hapticd/hapticd/protocol/event"
)

// eventCounts counts published events by name, for GET /metrics. The map
// is built once from the event table and never written after, so Publish
// counts with one atomic add and Counts reads without asking the actor.
type eventCounts map[string]*atomic.Uint64

func newEventCounts() eventCounts {
	c := make(eventCounts)
	for _, k := range event.Kinds() {
		c[k.Name] = new(atomic.Uint64)
	}
	return c
}

func (c eventCounts) add(name string) {
	if n := c[name]; n != nil {
		n.Add(1)
	}
}

// Counts returns how many events of each name were published since start,
// every name of the event table included (unused ones at zero).
func (a *Activity) Counts() map[string]uint64 {
	out := make(map[string]uint64, len(a.counts))
	for name, n := range a.counts {
		out[name] = n.Load()
	}
	return out
}
