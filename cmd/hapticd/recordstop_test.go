package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// A recording running when the service stops ends with every arm where
// the stop left it: the force each arm ends with is zero, and it is the
// last force the file records for it, reached by a ramp that only goes
// down. A replay of that file ends with the arms at zero too. The file
// used to end one tick after the session's release, still showing the
// ramp's force (up to 4.9 N): the halt's zero, written to the driver
// between ticks, never reached the recorder, and a replay ended holding
// the force.
func TestRecordingEndsWithTheArmsAtZero(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	d := startProcess(t, bin, "--state-dir", t.TempDir(), "--record", dir, "--sim-arms", "2", "--sim-grips", "0")
	c, _ := dialLockStep(t, d)
	waitArmListed(t, c)
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":5000}}}}`)
	ids := frameArmIDs(c.roundTrip(`{}`))
	if len(ids) != 2 {
		t.Fatalf("the session lists arms %v, want 2", ids)
	}
	// Both arms held, one with a negative component (its zero may be -0).
	held := map[string][3]float64{ids[0]: {0, 0, 4}, ids[1]: {-3, 0, 2}}
	cmd := `{"arm3":[`
	for i, id := range ids {
		f := held[id]
		if i > 0 {
			cmd += ","
		}
		cmd += fmt.Sprintf(`{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":%g,"y":%g,"z":%g}}}}`, id, f[0], f[1], f[2])
	}
	cmd += `]}`
	hwtest.EventuallyNil(t, 10*time.Second, "both arms to apply the held force", func() error {
		frame := c.roundTrip(cmd)
		if frame["errors"] != nil {
			t.Fatalf("force refused: %v", frame["errors"])
		}
		got := armForces(frame)
		for id, want := range held {
			if g, ok := got[id]; !ok || math.Abs(g[0]-want[0])+math.Abs(g[2]-want[2]) > 0.2 {
				return fmt.Errorf("arm %s applies %v, want %v", id, g, want)
			}
		}
		return nil
	})
	// Held a while longer, so the ramp starts from a settled force. The
	// session still holds both forces (its lease outlasts the stop).
	for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
		c.roundTrip(cmd)
	}
	file := stopRecording(t, d, dir)
	f := readCompleteRecording(t, file)
	states := recording.MessagesOf(f, recording.KindState)
	var span int64
	for _, id := range ids {
		var ms []mcap.Message
		for key, m := range states {
			if strings.HasSuffix(key, "-"+id) {
				ms = m
			}
		}
		if len(ms) == 0 {
			t.Fatalf("no state recorded for arm %s (channels %v)", id, keysOf(states))
		}
		sts := make([]recording.State, len(ms))
		for i, m := range ms {
			if err := json.Unmarshal(m.Data, &sts[i]); err != nil {
				t.Fatal(err)
			}
		}
		span = max(span, sts[len(sts)-1].TimeNs-sts[0].TimeNs)
		tail := func() string {
			var s []string
			for _, st := range sts[max(0, len(sts)-6):] {
				s = append(s, fmt.Sprintf("tick %d owner %d mode %d force %v", st.Tick, st.Owner, st.Mode, st.Force))
			}
			return strings.Join(s, "\n\t")
		}
		// The session's last recorded state holding its force: the
		// release's ramp starts there, at the latest. The stop's halt
		// zeroes the force of an arm its session may still own, so the
		// last owned state can be the release itself.
		held, last := -1, sts[len(sts)-1]
		for i, st := range sts {
			if st.Owner != 0 && mag(st.Force) >= 1 {
				held = i
			}
		}
		if held < 0 {
			t.Fatalf("arm %s: the recording does not show the session holding the force; its last states:\n\t%s", id, tail())
		}
		if last.Force != [3]float64{} { // +0 and -0 alike
			t.Errorf("arm %s: the recording ends with a force of %v N, want the zero the stop left it at; its last states:\n\t%s", id, last.Force, tail())
		}
		for i := held + 1; i < len(sts); i++ {
			if mag(sts[i].Force) > mag(sts[i-1].Force)+1e-9 {
				t.Errorf("arm %s: after the release the recorded force rises from %v to %v N (tick %d); its last states:\n\t%s", id, sts[i-1].Force, sts[i].Force, sts[i].Tick, tail())
			}
		}
	}

	// The replay holds the last recorded state once its timeline is over.
	r := startProcess(t, bin, "replay", file)
	rc, _ := dialLockStep(t, r)
	time.Sleep(time.Duration(span) + 500*time.Millisecond)
	got := armForces(rc.roundTrip(`{}`))
	for _, id := range ids {
		if g, ok := got[id]; !ok || g != [3]float64{} {
			t.Errorf("the replay of the recording ends with arm %s at %v N, want zero (arms %v)", id, g, got)
		}
	}
}

// frameArmIDs lists the arms in a frame.
func frameArmIDs(frame map[string]any) []string {
	var ids []string
	arms, _ := frame["arm3"].([]any)
	for _, a := range arms {
		if id, _ := hwtest.JSONPath(a, "device_id").(string); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// armForces is each arm's current_cursor_force in a frame, by id.
func armForces(frame map[string]any) map[string][3]float64 {
	out := map[string][3]float64{}
	arms, _ := frame["arm3"].([]any)
	for _, a := range arms {
		id, _ := hwtest.JSONPath(a, "device_id").(string)
		v, ok := hwtest.JSONPath(a, "state", "current_cursor_force").(map[string]any)
		if id == "" || !ok {
			continue
		}
		f := func(k string) float64 { x, _ := v[k].(float64); return x }
		out[id] = [3]float64{f("x"), f("y"), f("z")}
	}
	return out
}

func mag(v [3]float64) float64 { return math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2]) }

func keysOf[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// waitArmListed reads frames until the session's frames list the arm, and
// answers its id.
func waitArmListed(t *testing.T, c *lockStepClient) string {
	t.Helper()
	var id string
	hwtest.EventuallyNil(t, 15*time.Second, "the emulated arm in the frames", func() error {
		id, _ = hwtest.JSONPath(c.roundTrip(`{}`), "arm3", 0, "device_id").(string)
		if id == "" {
			return errors.New("no arm listed")
		}
		return nil
	})
	return id
}
