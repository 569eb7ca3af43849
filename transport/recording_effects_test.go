package transport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// framesOver is a session as recording.Drive uses it, over a real
// WebSocket, keeping every frame it read and when each message went out.
type framesOver struct {
	conn   *websocket.Conn
	frames [][]byte
	sent   []time.Time
}

func (w *framesOver) Send(msg []byte) error {
	w.sent = append(w.sent, time.Now())
	return w.conn.WriteMessage(websocket.TextMessage, msg)
}

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
	var p0 [3]float64
	fl, replayed := recordAndReplay(t, "effects", func(rec *testService, id string) {
		p0 = navigationScene(t, rec, id)
	})
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

// navigationScene plays TestReplayRendersRecordedEffectsAndNavigation's
// scene on rec's arm id and returns where the cursor started (p0).
func navigationScene(t *testing.T, rec *testService, id string) (p0 [3]float64) {
	t.Helper()
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
	p0 = vec(path(f, "arm3", 0, "state", "cursor_position"))
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
	return p0
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
	_, replayed := recordAndReplay(t, "lapse", func(rec *testService, id string) { lapseScene(t, rec, id) })
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

// lapseScene plays TestReplayRendersEffectChangesAndALapse's scene on
// rec's arm id.
func lapseScene(t *testing.T, rec *testService, id string) {
	t.Helper()
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
}

// replayWindow is how far apart in time a replayed frame and the recorded
// frame it matches may be (recording.Drive's Window): a declaration and the
// move it starts land some ticks earlier or later than recorded, and a
// loaded machine stalls either loop for tens of ms.
const replayWindow = 250 * time.Millisecond

// replayAttempts bounds how often recordAndReplay records and replays a
// scene again after a comparison a starved machine voided.
const replayAttempts = 3

// recordAndReplay records scene on a service with one arm (id), then drives
// the recording against a fresh service (recording.Drive, its frames
// compared within the tolerance the effect tests share) and returns the
// recording and the frames the replay read; it fails t on any difference.
//
// The comparison holds while the two runs' arms keep together through
// each move: the simulated arm moves by ticks, and a loop stalled by a
// starved machine skips the ticks it missed, so a move runs late by as
// much; a replay's client that sends late starts a move late. A starved
// machine stalls a whole process for hundreds of ms (a starved replay
// stalled 343 ms and showed the cursor 0.3 s behind the recorded one
// through a move). Both runs are recorded, so the ticks each frame shows
// are known, and armDrift says how far apart the moves ran. The time each
// loop lost over the whole scene says little: at load 6 with -race each
// lost 1 to 2 s of a 10 s scene, mostly while the arm held still, and the
// replays matched.
//
// A comparison that failed when the arms drifted apart, or the replay's
// client fell behind, by more than half the window is void: the scene is
// recorded and replayed again. When every one of replayAttempts attempts
// was void, the machine could not run the scene and the test is skipped
// with the figures: a starved run is no verdict on the service. A
// comparison that failed without such a drift fails at once.
func recordAndReplay(t *testing.T, name string, scene func(rec *testService, id string)) (*mcap.File, *framesOver) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		rec := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
		stop := rec.record(t, name)
		scene(rec, rec.armIDs[0])
		fl := stop()
		period := time.Duration(rec.svc.Devices().OfType(protocol.TypeArm)[0].Stats().TargetNs)
		// The recording's service goes before the replay: it would go on
		// rendering the scene for its session until the lease lapsed, and
		// take from the replay's loop the ticks its arm moves by.
		rec.stop()
		r := replayOnAFreshService(t, fl)
		if r.err != nil {
			t.Fatalf("replay against a fresh service (attempt %d): %v\n%s", attempt, r.err, r.report)
		}
		drift := armDrift(t, fl, r.file, period)
		if r.diffs == 0 {
			t.Logf("attempt %d matched (the arms drifted %v apart, the replay's client fell %v behind)", attempt, drift, r.behind)
			return fl, r.frames
		}
		figures := fmt.Sprintf("attempt %d: the arms drifted %v apart, the replay's client fell %v behind; %d differences", attempt, drift, r.behind, r.diffs)
		switch {
		case max(drift, r.behind) <= replayWindow/2:
			t.Fatalf("replay against a fresh service (%s)\n%s", figures, r.report)
		case attempt == replayAttempts:
			t.Skipf("every attempt voided by a starved machine, the service not judged (%s)\n%s", figures, r.report)
		}
		t.Logf("voided by a starved machine (%s); recording again\n%s", figures, r.report)
	}
}

// record starts a recording on ts and returns what stops it and reads its
// file.
func (ts *testService) record(t *testing.T, name string) (stop func() *mcap.File) {
	t.Helper()
	started := ts.startRecording(fmt.Sprintf(`{"name":%q}`, name))
	return func() *mcap.File {
		t.Helper()
		if r := ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(int(num(path(started.data(), "id")))), ""); r.status != 200 {
			t.Fatalf("DELETE /recordings: %v", r)
		}
		return recordedFile(t, path(started.data(), "path").(string))
	}
}

// replayRun is what replayOnAFreshService saw: the frames read, Drive's
// outcome, the fresh service's recording of the replay and how far the
// replay's messages went out behind the recorded timeline at worst.
type replayRun struct {
	frames *framesOver
	diffs  int
	err    error
	report string
	file   *mcap.File
	behind time.Duration
}

// replayOnAFreshService drives the recording fl against a fresh service
// with one arm, recording it there, and stops that service when done.
func replayOnAFreshService(t *testing.T, fl *mcap.File) replayRun {
	t.Helper()
	fresh := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	defer fresh.stop()
	var run replayRun
	var report bytes.Buffer
	d := recording.Drive{
		Dial: func() (recording.FrameConn, error) {
			conn, _, err := websocket.DefaultDialer.Dial(fresh.wsURL(), nil)
			if err != nil {
				return nil, err
			}
			run.frames = &framesOver{conn: conn}
			return run.frames, nil
		},
		Tolerance: recording.Tolerance{Abs: 0.01, Force: 0.1, Angle: 2, Rel: 0.2,
			Ignore: []string{"cursor_position", "cursor_velocity", "angular_position", "angular_velocity", "body_orientation", "session_id"}},
		Window: replayWindow,
		Report: &report,
	}
	stop := fresh.record(t, "replay")
	run.diffs, run.err = d.Run(fl)
	run.file = stop()
	run.report = report.String()
	if run.frames != nil {
		run.behind = behindTimeline(fl, run.frames.sent)
	}
	return run
}

// armDrift is how far apart the two runs' arms (the recorded scene's and
// its replay's: recordings of one session on one arm) ran while moving, at
// worst. The simulated arm moves by ticks, so a frame shows the arm as many
// ticks of physics into a move as its loop ran since the move began. Over
// each stretch of frames in which the cursor moves in either run, the
// replayed loop's ticks less the recorded one's add up; the largest sum,
// in loop periods (period), is how far the replayed move ran ahead of or
// behind the recorded one. Ticks run or lost with the cursor at rest
// change no frame, and do not count: at load 10 the loops drift apart by
// 0.3 to 2 s over the scenes, mostly while they hold still, and the
// replays match.
func armDrift(t *testing.T, recorded, replayed *mcap.File, period time.Duration) time.Duration {
	t.Helper()
	rec, rep := armAtFrames(t, recorded), armAtFrames(t, replayed)
	var acc, worst int64
	for i := 2; i < min(len(rec), len(rep)); i++ { // past the inventory and the first frame
		if !rec[i].moving && !rep[i].moving {
			acc = 0
			continue
		}
		if rec[i].tick == 0 || rep[i-1].tick == 0 || rec[i-1].tick == 0 {
			continue // no state recorded before the frame
		}
		acc += int64(rep[i].tick-rep[i-1].tick) - int64(rec[i].tick-rec[i-1].tick)
		worst = max(worst, acc, -acc)
	}
	return time.Duration(worst) * period
}

// armAtFrame is what a frame shows of a session's one arm: the tick its
// loop had run (the last state the loop recorded before the frame went
// out, on the recording's one clock; 0 for none) and whether the cursor
// moved.
type armAtFrame struct {
	tick   uint64
	moving bool
}

// armAtFrames returns the arm at each frame of a recording's one session.
func armAtFrames(t *testing.T, fl *mcap.File) []armAtFrame {
	t.Helper()
	var states []recording.State
	for _, ms := range recording.MessagesOf(fl, recording.KindState) {
		for _, m := range ms {
			var st recording.State
			if err := json.Unmarshal(m.Data, &st); err != nil {
				t.Fatal(err)
			}
			states = append(states, st)
		}
	}
	if len(states) == 0 {
		t.Fatal("no arm state recorded, want the loop's ticks")
	}
	var out []armAtFrame
	for _, ms := range recording.MessagesOf(fl, recording.KindFrame) {
		for _, m := range ms {
			var a armAtFrame
			if i := sort.Search(len(states), func(i int) bool { return states[i].TimeNs > int64(m.LogTime) }); i > 0 {
				a.tick = states[i-1].Tick
			}
			var msg recording.Message
			var f map[string]any
			if err := json.Unmarshal(m.Data, &msg); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(msg.Message, &f); err != nil {
				t.Fatal(err)
			}
			v := vec(path(f, "arm3", 0, "state", "cursor_velocity"))
			a.moving = math.Abs(v[0])+math.Abs(v[1])+math.Abs(v[2]) >= 1e-4
			out = append(out, a)
		}
	}
	return out
}

// behindTimeline is how far behind the recorded timeline the replay's
// messages went out at worst (sent: when each did), measured from the
// first, as recording.Drive paces them.
func behindTimeline(fl *mcap.File, sent []time.Time) time.Duration {
	var worst time.Duration
	for _, in := range recording.MessagesOf(fl, recording.KindClient) {
		for i, m := range in {
			if i >= len(sent) {
				break
			}
			late := sent[i].Sub(sent[0]) - time.Duration(m.LogTime-in[0].LogTime)
			worst = max(worst, late)
		}
	}
	return worst
}
