package awake

import (
	"testing"
	"time"
)

// A clock's notes late by less than the slack (a loaded host's timers) are
// no stall; a gap past it is one, until the next gap.
func TestClockTellsAStallFromLateNotes(t *testing.T) {
	const slack = 250 * time.Millisecond
	a := &Clock{slack: slack}
	ms := int64(time.Millisecond)
	a.Note(0)
	late := []int64{5 * ms, 12 * ms, 30 * ms, int64(slack)} // late, but within the slack
	for _, at := range late {
		a.Note(at)
	}
	last := late[len(late)-1]
	if _, _, ok := a.StallSince(0, last+ms); ok {
		t.Fatal("notes late by less than the slack count as a stall")
	}
	if start, end, ok := a.StallSince(0, last+int64(slack)+ms); !ok || start != last || end != 0 {
		t.Fatalf("no note for longer than the slack: stall from %v to %v (%v), want from the last note, under way", time.Duration(start), time.Duration(end), ok)
	}
	stallEnd := last + int64(slack) + 10*ms
	a.Note(stallEnd) // the stall ends
	a.Note(stallEnd + 5*ms)
	if start, end, ok := a.StallSince(stallEnd-ms, stallEnd+6*ms); !ok || start != last || end != stallEnd {
		t.Fatalf("a read that began before the stall ended: stall from %v to %v (%v), want %v to %v",
			time.Duration(start), time.Duration(end), ok, time.Duration(last), time.Duration(stallEnd))
	}
	if _, _, ok := a.StallSince(stallEnd, stallEnd+6*ms); ok {
		t.Fatal("a read that began after the stall ended is told of it")
	}
}
