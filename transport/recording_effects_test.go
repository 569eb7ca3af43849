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
	"github.com/hapticd/hapticd/protocol/mcap"
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

// enginePace is how often the recorded client sends a message while the
// scene holds still: an engine's frame (100 Hz), and movePace while the
// arm moves (dense: each recorded frame is one a replayed frame may match,
// and while the arm speeds up its forces change by 0.1 N in a few ms).
// Neither bounds anything. The replay re-sends each message and reads its
// frame in less than that, so it keeps to the recorded timeline (Drive's
// report says how far behind it fell).
const (
	enginePace = 10 * time.Millisecond
	movePace   = 2 * time.Millisecond
)

// TestReplayRendersRecordedEffectsAndNavigation records a session that
// configures bubble navigation and declares a field, a damper and an SDF
// sphere, then re-drives the recording against a fresh service: the fresh
// service renders the same forces and the same navigation (zone, velocity,
// workspace offset and transform), frame for frame.
//
// The scene, along x in metres from p0 where the cursor starts at rest:
//
//	        ball (sdf)   its push     bubble's surface
//	centre  surface      ends    p0   (dead zone inside)   outer boundary
//	-0.026  -0.016       -0.006  0    +0.003               +0.033
//
// First the field pushes +x with 0.5 N: the cursor leaves the dead zone
// and comes to rest in the velocity zone, about 0.008 m deep, where the
// zone's spring (50 N/m) and the arm's friction balance the field; the
// workspace slides at speed_gain·depth, about 0.024 m/s. A second later
// the field turns to −x: the cursor goes back through the dead zone and
// comes to rest against the ball (its push, 1 N at its surface fading to 0
// over 0.01 m, balances the field), well inside the bubble, and the
// workspace stops where it slid to.
//
// Every frame is compared with recording.Drive's tolerances: 0.1 N plus
// 20 % for forces, 0.01 plus 20 % for other numbers, and a frame may match
// any recorded frame within 250 ms of it. The two moves are covered by the
// window: a declaration and the move it starts land some ticks earlier or
// later than recorded, and a loaded machine stalls either loop for tens of
// ms. Between the moves the scene is at rest, and ends at rest, so a
// frame's forces do not depend on which tick it fell on. The offset is
// not static while the cursor is in the velocity zone: it integrates the
// time spent there (over the loop's clock, while the simulated arm moves
// by ticks: a stall slides the workspace on with the arm held still), so
// the scene bounds that time: the workspace stops at about 0.043 m, where
// the tolerance (0.019 m) is 0.8 s of sliding. The passivity energy also
// integrates over the loop's clock (the power of the rendered sources);
// it stays small, about 0.012 J, with slow moves against light forces.
func TestReplayRendersRecordedEffectsAndNavigation(t *testing.T) {
	rec := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	id := rec.armIDs[0]
	started := rec.startRecording(`{"name":"effects"}`)
	c := rec.dial(t, rec.wsURL())
	c.expect()
	f := c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	// Each step of the scene waits, as an engine would, until the frames
	// show it (the loop publishes on its next tick): a frame answering a
	// change mixes what is declared at once (effects) with what the loop
	// renders a tick later (navigation, control), so the replay can only
	// match the recording where neither caught the service mid-change.
	refresh := func(pace time.Duration) map[string]any {
		time.Sleep(pace)
		return c.roundTrip(effectsMsg(id, `{}`))
	}
	hold := func(d time.Duration) map[string]any {
		for end := time.Now().Add(d); ; {
			f := refresh(enginePace)
			if time.Now().After(end) {
				return f
			}
		}
	}
	// until waits for a move to end, sampling it at movePace.
	until := func(what string, ok func(map[string]any) bool) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			f := refresh(movePace)
			if ok(f) {
				// And 100 ms more of the same: the replay re-sends the next
				// step on this timeline, and its loop may be a tick, or a
				// stall of a loaded machine, behind where this one was.
				for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
					f = refresh(movePace)
				}
				return f
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 10 s: %v", what, f)
			}
		}
	}
	navState := func(f map[string]any, key string) any { return path(f, "arm3", 0, "state", "navigation", key) }
	atRest := func(f map[string]any) bool {
		v := vec(path(f, "arm3", 0, "state", "cursor_velocity"))
		return math.Abs(v[0])+math.Abs(v[1])+math.Abs(v[2]) < 1e-4
	}
	f = until("the arm in use", func(f map[string]any) bool { return path(f, "arm3", 0, "status", "in_use") == true })
	p0 := vec(path(f, "arm3", 0, "state", "cursor_position"))
	nav := fmt.Sprintf(`{"mode":"bubble","bubble":{"center":{"position":{"x":%g,"y":%g,"z":%g}},`+
		`"shape":{"primitive":"sphere","parameters":{"r":0.03}},"velocity_zone_width":0.03,"speed_gain":3,"max_speed":0.5,`+
		`"easing":"linear","velocity_zone_stiffness":50,"wall_stiffness":800,"collision_detection":{"hysteresis":0.002}}}`,
		p0[0]-0.027, p0[1], p0[2])
	if f = c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":%s}}]}`, id, nav)); f["errors"] != nil {
		t.Fatalf("configure.navigation: %v", f["errors"])
	}
	until("the navigation rendered", func(f map[string]any) bool { return navState(f, "zone") == "dead" })
	push := func(fx float64) string {
		return fmt.Sprintf(`{"id":"push","type":"field","force":{"x":%g,"y":0,"z":0},"origin":{"x":%g,"y":%g,"z":%g},"radius":5,"valid_ms":10000}`,
			fx, p0[0], p0[1], p0[2])
	}
	effects := fmt.Sprintf(`{"set":[%s,{"id":"calm","type":"damper","scalar":6},`+
		`{"id":"ball","type":"sdf","shape":{"primitive":"sphere","parameters":{"r":0.01}},"transform":{"position":{"x":%g,"y":%g,"z":%g}},"force_scale":1,"range":0.01}]}`,
		push(0.5), p0[0]-0.026, p0[1], p0[2])
	if f = c.roundTrip(effectsMsg(id, effects)); f["errors"] != nil {
		t.Fatalf("effects: %v", f["errors"])
	}
	until("the cursor at rest in the velocity zone", func(f map[string]any) bool {
		return navState(f, "zone") == "velocity" && atRest(f)
	})
	hold(time.Second) // the workspace slides
	if f = c.roundTrip(effectsMsg(id, `{"set":[`+push(-0.5)+`]}`)); f["errors"] != nil {
		t.Fatalf("the field turned: %v", f["errors"])
	}
	until("the cursor at rest against the ball", func(f map[string]any) bool {
		return navState(f, "zone") == "dead" && atRest(f)
	})
	hold(300 * time.Millisecond)
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
	// The recording itself shows the scene: a slide through the velocity
	// zone, then the cursor at rest against the ball with the workspace
	// where it stopped.
	recScene := sceneOf(t, recorded, p0)
	if recScene.fastestSlide < 0.02 {
		t.Fatalf("the recorded workspace slid at most at %v m/s, want about 0.024 (speed_gain·depth)", recScene.fastestSlide)
	}
	checkAtRestAgainstTheBall(t, "recorded", recScene)

	replayed := replayOnAFreshService(t, fl)
	// Not vacuous: the replay ran the same scene, and the cursor came to
	// rest where it did when recorded (the frames do not show it: Drive
	// leaves the cursor's position out, and at rest the forces are a
	// balance whichever push the ball renders). The arm's physics runs by
	// ticks, so the same forces leave it in the same place; 1 mm is less
	// than the band static friction holds it in (0.15 N against the ball's
	// 100 N/m).
	if len(replayed.frames) != len(recorded) {
		t.Fatalf("replayed %d frames, recorded %d", len(replayed.frames), len(recorded))
	}
	repScene := sceneOf(t, replayed.frames, p0)
	checkAtRestAgainstTheBall(t, "replayed", repScene)
	if a, b := recScene.restX, repScene.restX; math.Abs(a-b) > 0.001 {
		t.Fatalf("the cursor came to rest at x %+.4f m when recorded, %+.4f m replayed", a, b)
	}
}

// replayScene is what the frames of TestReplayRendersRecordedEffectsAndNavigation
// show: the fastest slide of the workspace along x, and the last frame's
// navigation, effects and where the cursor rests (relative to p0, on the
// arm: the workspace offset taken out).
type replayScene struct {
	fastestSlide float64
	zone         any
	effects      float64
	velocity     [3]float64
	offset       float64 // x
	restX        float64
}

func sceneOf(t *testing.T, frames [][]byte, p0 [3]float64) replayScene {
	t.Helper()
	var s replayScene
	for _, b := range frames[1:] {
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		nav := path(f, "arm3", 0, "state", "navigation")
		s.velocity = vec(path(nav, "velocity"))
		s.fastestSlide = max(s.fastestSlide, s.velocity[0])
		s.zone = path(nav, "zone")
		o := vec(path(nav, "workspace_offset"))
		s.offset = o[0]
		s.restX = vec(path(f, "arm3", 0, "state", "cursor_position"))[0] - o[0] - p0[0]
		s.effects = effectCount(f)
	}
	return s
}

// checkAtRestAgainstTheBall checks the end of the scene: the cursor held by
// the ball's push against the field (its surface at −0.016 m, its push
// fading to zero at −0.006 m), in the dead zone, the workspace still where
// the slide took it.
func checkAtRestAgainstTheBall(t *testing.T, which string, s replayScene) {
	t.Helper()
	if s.effects != 3 || s.zone != "dead" || s.velocity != [3]float64{} || s.offset < 0.02 || s.restX < -0.016 || s.restX > -0.006 {
		t.Fatalf("the %s scene does not end at rest against the ball with the workspace slid: %+v", which, s)
	}
}

// TestReplayRendersEffectChangesAndALapse records a session whose effects
// change mid-recording (a field declared, replaced under its id, removed,
// declared again) and whose lease then lapses while the client is quiet,
// and re-drives it against a fresh service: every frame's force, effect
// count and control state match the recorded ones (within Drive's
// tolerances), and the replay shows the lapse (no effect and no force
// after it) where the recording did.
func TestReplayRendersEffectChangesAndALapse(t *testing.T) {
	rec := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	id := rec.armIDs[0]
	started := rec.startRecording(`{"name":"lapse"}`)
	c := rec.dial(t, rec.wsURL())
	c.expect()
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":500}}}}`)
	// The steps hold long past the 20 ms force ramp, so each step's frames
	// settle on one force whichever tick the replay's change lands on.
	hold := func(d time.Duration) map[string]any {
		for end := time.Now().Add(d); ; {
			time.Sleep(enginePace)
			f := c.roundTrip(effectsMsg(id, `{}`))
			if f["errors"] != nil {
				t.Fatalf("refresh: %v", f["errors"])
			}
			if time.Now().After(end) {
				return f
			}
		}
	}
	// Each field stays valid through its step (the default valid_ms,
	// 100 ms, would let it go stale within the step, and a loaded replay
	// catch it in only a frame or two before it did).
	field := func(fx float64) string {
		return fmt.Sprintf(`{"set":[{"id":"push","type":"field","force":{"x":%g,"y":0,"z":0},"origin":{"x":0,"y":0,"z":0},"radius":5,"valid_ms":5000}]}`, fx)
	}
	// Claim the arm first and wait until the frames show it, as an engine
	// would: a frame answering a claim may catch the loop before or after
	// it renders the claim (docs/recording.md).
	for deadline := time.Now().Add(10 * time.Second); path(hold(0), "arm3", 0, "status", "in_use") != true; {
		if time.Now().After(deadline) {
			t.Fatal("the arm not in use after 10 s of effects refreshes")
		}
	}
	hold(100 * time.Millisecond)
	for _, step := range []string{field(0.3), field(-0.3), `{"remove":["push"]}`, field(0.3)} {
		if f := c.roundTrip(effectsMsg(id, step)); f["errors"] != nil {
			t.Fatalf("effects %s: %v", step, f["errors"])
		}
		hold(400 * time.Millisecond)
	}
	// Quiet for longer than the lease: the lease lapses and the effects go.
	time.Sleep(1500 * time.Millisecond)
	if f := c.roundTrip(`{"session":{"configure":{"lease":{"ms":500}}}}`); effectCount(f) != 0 || forceNorm(f) > 1e-6 {
		t.Fatalf("after the lapse: %d effects, force %v N, want none", int(effectCount(f)), forceNorm(f))
	}
	hold(300 * time.Millisecond)
	if r := rec.do("DELETE", rec.base+"/recordings/"+strconv.Itoa(int(num(path(started.data(), "id")))), ""); r.status != 200 {
		t.Fatalf("DELETE /recordings: %v", r)
	}
	fl := recordedFile(t, path(started.data(), "path").(string))

	replayed := replayOnAFreshService(t, fl)
	// Not vacuous: the replay declared, replaced, removed, declared again
	// and lost the field as recorded, in that order: +0.3, -0.3, 0 (the
	// removal), +0.3, 0 (the lapse, with no effect left in force).
	var forces []float64
	var counts []float64
	for _, b := range replayed.frames[1:] {
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		forces = append(forces, vec(path(f, "arm3", 0, "state", "current_cursor_force"))[0])
		counts = append(counts, effectCount(f))
	}
	want := []float64{0.3, -0.3, 0, 0.3, 0}
	next, againAt := 0, -1
	for i, fx := range forces {
		if next < len(want) && math.Abs(fx-want[next]) < 0.05 && (want[next] != 0 || math.Abs(fx) < 1e-6) {
			if next == 3 {
				againAt = i
			}
			next++
		}
	}
	if next != len(want) || math.Abs(forces[len(forces)-1]) > 1e-6 {
		t.Fatalf("the replayed forces along x do not go +0.3, -0.3, 0, +0.3, 0 in order and end at 0 (matched %d of them): %v", next, forces)
	}
	// The field declared again was in force, and the lapse dropped it
	// (the force reaches 0 on the ramp a frame or so before the count).
	if counts[againAt] != 1 || counts[len(counts)-1] != 0 {
		t.Fatalf("effects in force: %v with the field declared again, %v at the end; want 1, then none after the lapse (counts %v)", counts[againAt], counts[len(counts)-1], counts)
	}
}

// replayOnAFreshService drives the recording fl against a fresh service
// with one arm (recording.Drive, its frames compared within the tolerance
// the effect tests share) and returns the frames the replay read; it fails
// t on any difference.
func replayOnAFreshService(t *testing.T, fl *mcap.File) *framesOver {
	t.Helper()
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
	return replayed
}
