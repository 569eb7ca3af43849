package activity_test

import (
	"fmt"
	"testing"

	"github.com/hapticd/hapticd/actors/activity"
)

// Supervision notes are counted by directive and the most recent ones kept,
// oldest first, within a bound.
func TestSupervisionReport(t *testing.T) {
	a := start(t, activity.Options{})
	const n = 40
	for i := range n {
		directive := "RestartDirective"
		if i%4 == 3 {
			directive = "StopDirective"
		}
		a.NoteSupervision(fmt.Sprintf("device-%d", i), "boom", directive)
	}
	rep, err := a.Supervision()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total != n || rep.ByDirective["RestartDirective"] != 30 || rep.ByDirective["StopDirective"] != 10 {
		t.Fatalf("counts %d %v, want 40: 30 restarts and 10 stops", rep.Total, rep.ByDirective)
	}
	if len(rep.Recent) == 0 || len(rep.Recent) >= n {
		t.Fatalf("%d recent notes kept of %d; want a bounded, non-empty list", len(rep.Recent), n)
	}
	last := rep.Recent[len(rep.Recent)-1]
	first := rep.Recent[0]
	if last.Actor != fmt.Sprintf("device-%d", n-1) || first.Actor != fmt.Sprintf("device-%d", n-len(rep.Recent)) {
		t.Fatalf("recent notes run from %s to %s; want the newest, oldest first", first.Actor, last.Actor)
	}
	if last.Reason != "boom" || last.Time.IsZero() {
		t.Fatalf("last note %+v", last)
	}
	// The report is a copy.
	rep.ByDirective["StopDirective"] = 0
	if again, _ := a.Supervision(); again.ByDirective["StopDirective"] != 10 {
		t.Fatal("the report shares its map with the actor")
	}
}
