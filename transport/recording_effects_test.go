package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/actors/recording"
)

// framesOver is a session as recording.Drive uses it, over a real
// WebSocket, keeping every frame it read.
type framesOver struct {
	conn   *websocket.Conn
	frames [][]byte
}

func (w *framesOver) Send(msg []byte) error { return w.conn.WriteMessage(websocket.TextMessage, msg) }

func (w *framesOver) Receive(timeout time.Duration) ([]byte, error) {
	_ = w.conn.SetReadDeadline(time.Now().Add(timeout))
	_, b, err := w.conn.ReadMessage()
	if err == nil {
		w.frames = append(w.frames, b)
	}
	return b, err
}

func (w *framesOver) Close() error { return w.conn.Close() }

// armForces reads current_cursor_force and the effect count of each frame
// (after the inventory) of a recorded or replayed session.
func armForces(t *testing.T, frames [][]byte) (forces [][3]float64, effects []float64) {
	t.Helper()
	for _, b := range frames[1:] {
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		forces = append(forces, vec(path(f, "arm3", 0, "state", "current_cursor_force")))
		effects = append(effects, effectCount(f))
	}
	return forces, effects
}

// TestReplayRendersRecordedEffectsAndNavigation records a session that
// configures bubble navigation and declares a field, a damper and an SDF
// sphere, then re-drives the recording against a fresh service: the fresh
// service renders the same forces, frame for frame.
//
// The scene: the field pushes the cursor out of the bubble's dead zone
// into its velocity zone, where it comes to rest against the sphere's push
// (a static balance, so the forces a frame shows do not depend on which
// tick it fell on) while the workspace slides. The forces are compared with
// recording.Drive's tolerances: 0.1 N plus 20 % of the recorded value (the
// order of the force a tick's difference in where the arm was makes while
// it moves: 2 N·s/m of damping at the few cm/s of the approach), and a
// frame may match any recorded frame within 250 ms of it (the declaration
// and the arm's run-up land some ticks earlier or later than recorded, and
// a loaded machine stalls either loop for tens of ms).
func TestReplayRendersRecordedEffectsAndNavigation(t *testing.T) {
	rec := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	id := rec.armIDs[0]
	started := rec.do("POST", rec.base+"/recordings", `{"name":"effects"}`)
	if started.status != 200 {
		t.Fatalf("POST /recordings: %v", started)
	}
	c := rec.dial(t, rec.wsURL())
	c.expect()
	f := c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	// Each step of the scene waits, as an engine would, until the frames
	// show it (the loop publishes on its next tick): a frame answering a
	// change mixes what is declared at once (effects) with what the loop
	// renders a tick later (navigation, control), so the replay can only
	// match the recording where neither caught the service mid-change.
	until := func(what string, ok func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			f := c.roundTrip(effectsMsg(id, `{}`))
			if ok(f) {
				// And 100 ms more of the same: the replay re-sends the next
				// step on this timeline, and its loop may be a tick, or a
				// stall of a loaded machine, behind where this one was.
				for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
					f = c.roundTrip(effectsMsg(id, `{}`))
					time.Sleep(time.Millisecond)
				}
				return f
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 5 s: %v", what, f)
			}
			time.Sleep(time.Millisecond)
		}
	}
	f = until("the arm in use", func(f map[string]any) bool { return path(f, "arm3", 0, "status", "in_use") == true })
	p0 := vec(path(f, "arm3", 0, "state", "cursor_position"))
	nav := fmt.Sprintf(`{"mode":"bubble","bubble":{"center":{"position":{"x":%g,"y":%g,"z":%g}},`+
		`"shape":{"primitive":"sphere","parameters":{"r":0.03}},"velocity_zone_width":0.03,"speed_gain":4,"max_speed":0.5,`+
		`"easing":"linear","wall_stiffness":800,"collision_detection":{"hysteresis":0.002}}}`, p0[0], p0[1], p0[2])
	if f = c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":%s}}]}`, id, nav)); f["errors"] != nil {
		t.Fatalf("configure.navigation: %v", f["errors"])
	}
	until("the navigation rendered", func(f map[string]any) bool { return path(f, "arm3", 0, "state", "navigation") != nil })
	effects := fmt.Sprintf(`{"set":[`+
		`{"id":"push","type":"field","force":{"x":0.5,"y":0,"z":0},"origin":{"x":%[1]g,"y":%[2]g,"z":%[3]g},"radius":5,"valid_ms":10000},`+
		`{"id":"calm","type":"damper","scalar":2},`+
		`{"id":"ball","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":0.01}},"transform":{"position":{"x":%[4]g,"y":%[2]g,"z":%[3]g}},"force_scale":2,"range":0.02}]}`,
		p0[0], p0[1], p0[2], p0[0]+0.075)
	if f = c.roundTrip(effectsMsg(id, effects)); f["errors"] != nil {
		t.Fatalf("effects: %v", f["errors"])
	}
	until("the effects rendered", func(f map[string]any) bool { return effectCount(f) == 3 })
	for start := time.Now(); time.Since(start) < 1500*time.Millisecond; {
		c.roundTrip(effectsMsg(id, `{}`))
		time.Sleep(2 * time.Millisecond) // an engine's pace, not a bound on anything
	}
	if r := rec.do("DELETE", rec.base+"/recordings/"+strconv.Itoa(int(num(path(started.data(), "id")))), ""); r.status != 200 {
		t.Fatalf("DELETE /recordings: %v", r)
	}
	file, _ := path(started.data(), "path").(string)
	fl := recordedFile(t, file)

	var recorded [][]byte
	for _, ms := range recording.MessagesOf(fl, recording.KindFrame) {
		for _, m := range ms {
			var msg recording.Message
			if err := json.Unmarshal(m.Data, &msg); err != nil {
				t.Fatal(err)
			}
			recorded = append(recorded, msg.Message)
		}
	}
	// The recording itself shows the scene: effects in force and a
	// sphere pushing back at the end (the balance: 0.5 N of field).
	recForces, recCounts := armForces(t, recorded)
	last := len(recForces) - 1
	if recCounts[last] != 3 {
		t.Fatalf("the last recorded frame shows %v effects, want 3", recCounts[last])
	}
	if !bytes.Contains(recorded[last+1], []byte(`"zone":"velocity"`)) {
		t.Fatalf("the last recorded frame is not in the velocity zone: %s", recorded[last+1])
	}

	fresh := startService(t, serviceConfig{arms: 1})
	var replayed *framesOver
	var report bytes.Buffer
	d := recording.Drive{
		Dial: func() (recording.FrameConn, error) {
			conn, _, err := websocket.DefaultDialer.Dial(fresh.wsURL(), nil)
			if err != nil {
				return nil, err
			}
			replayed = &framesOver{conn: conn}
			return replayed, nil
		},
		Tolerance: recording.Tolerance{Abs: 0.01, Force: 0.1, Angle: 2, Rel: 0.2,
			Ignore: []string{"cursor_position", "cursor_velocity", "angular_position", "angular_velocity", "body_orientation", "session_id"}},
		Window: 250 * time.Millisecond,
		Report: &report,
	}
	diffs, err := d.Run(fl)
	if err != nil || diffs != 0 {
		t.Fatalf("replay against a fresh service: %d differences, %v\n%s", diffs, err, report.String())
	}
	// Not vacuous: the replay rendered the effects, and ended in the same
	// balance as the recording.
	repForces, repCounts := armForces(t, replayed.frames)
	if len(repForces) != len(recForces) || repCounts[last] != 3 {
		t.Fatalf("replayed %d frames (last with %v effects), recorded %d", len(repForces), repCounts[last], len(recForces))
	}
	if a, b := recForces[last], repForces[last]; math.Abs(a[0]-b[0]) > 0.05 || math.Abs(a[1]-b[1]) > 0.05 || math.Abs(a[2]-b[2]) > 0.05 {
		t.Fatalf("the last frame's force: recorded %v, replayed %v", a, b)
	}
}
