package transport

import (
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// Bubble navigation rendered: a simulated arm pushed by the session's own
// force command into each zone of a bubble centred where the cursor rests,
// with the navigation configured over WebSocket and read from the frames,
// or configured with POST and read with GET; then the same profile after a
// restart. The bubble: a 3 cm sphere, a 3 cm velocity zone, 4 1/s
// (linear), an 800 N/m wall, 2 mm of hysteresis.

const (
	navRadius = 0.03
	navWidth  = 0.03
	navGain   = 4.0
)

// navRig is one session steering one simulated arm.
type navRig struct {
	t       *testing.T
	ts      *testService
	c       *wsClient
	id      string
	profile string
	center  [3]float64
	overWS  bool // configure and read over WebSocket (else HTTP)
}

// navSample is what the session sees of its arm and navigation after one
// message. Its navigation is the frame's (state.navigation), read at the
// same instant as the positions; over HTTP, getAgrees says whether GET's
// state, read between that frame and the next, matches them.
type navSample struct {
	pos, offset, velocity, transform, force [3]float64
	zone                                    string
	hasState                                bool
	getAgrees                               bool
	get                                     string // GET's state, when it did not agree
}

func (s navSample) String() string {
	return fmt.Sprintf("zone %q pos %.4v offset %.4v velocity %.4v transform %.4v force %.3v", s.zone, s.pos, s.offset, s.velocity, s.transform, s.force)
}

func startNavRig(t *testing.T, ts *testService, profile string, overWS bool) *navRig {
	t.Helper()
	r := &navRig{t: t, ts: ts, id: ts.armIDs[0], profile: profile, overWS: overWS}
	r.c = ts.dial(t, ts.wsURL())
	r.c.expect()
	f := r.c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":%q}}}}`, profile))
	if f["errors"] != nil {
		t.Fatalf("profile: %v", f["errors"])
	}
	r.center = vec(path(f, "arm3", 0, "state", "cursor_position"))
	return r
}

func (r *navRig) navigationURL() string {
	return r.ts.base + "/arm3/0/config/navigation?session=" + r.profile
}

// configure turns the bubble on around the rig's centre.
func (r *navRig) configure() {
	r.t.Helper()
	body := fmt.Sprintf(`{"mode":"bubble","bubble":{"center":{"position":{"x":%g,"y":%g,"z":%g}},`+
		`"shape":{"primitive":"sphere","parameters":{"r":%g}},"velocity_zone_width":%g,"speed_gain":%g,"max_speed":0.5,`+
		`"easing":"linear","wall_stiffness":800,"collision_detection":{"hysteresis":0.002}}}`,
		r.center[0], r.center[1], r.center[2], navRadius, navWidth, navGain)
	if r.overWS {
		f := r.c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":%s}}]}`, r.id, body))
		if f["errors"] != nil {
			r.t.Fatalf("configure.navigation: %v", f["errors"])
		}
		return
	}
	if a := r.ts.do(http.MethodPost, r.navigationURL(), body); a.status != 200 || path(a.env, "data", "mode") != "bubble" {
		r.t.Fatalf("POST navigation: %v", a)
	}
}

// push commands a force along x (N) and returns what the session then
// sees in the frame. Over HTTP it also reads GET's navigation state and
// then a second frame: GET must answer what the arm did between the two
// (its zone one of theirs, its offset between theirs). The frame and GET
// are never compared as if read at one instant: the workspace slides at up
// to 12 cm/s, and a loaded machine puts any time between two requests.
func (r *navRig) push(fx float64) navSample {
	r.t.Helper()
	s := r.frame(fx)
	s.getAgrees = true
	if r.overWS {
		return s
	}
	a := r.ts.do(http.MethodGet, r.navigationURL(), "")
	if a.status != 200 {
		r.t.Fatalf("GET navigation: %v", a)
	}
	nav := path(a.env, "data", "state")
	after := r.frame(fx)
	s.get = fmt.Sprint(nav)
	if nav == nil || !s.hasState || !after.hasState {
		s.getAgrees = nav == nil && !s.hasState && !after.hasState
		return s
	}
	zone, _ := path(nav, "zone").(string)
	offset := vec(path(nav, "workspace_offset"))
	s.getAgrees = zone == s.zone || zone == after.zone
	const eps = 1e-6 // frames carry measured values at float32 precision
	for i := range 3 {
		lo, hi := min(s.offset[i], after.offset[i]), max(s.offset[i], after.offset[i])
		s.getAgrees = s.getAgrees && offset[i] >= lo-eps && offset[i] <= hi+eps
	}
	return s
}

// frame sends the force and reads the frame's view of the arm.
func (r *navRig) frame(fx float64) navSample {
	r.t.Helper()
	f := r.c.roundTrip(force(r.id, fx, 0, 0))
	if f["errors"] != nil {
		r.t.Fatalf("force: %v", f["errors"])
	}
	st := path(f, "arm3", 0, "state")
	s := navSample{pos: vec(path(st, "cursor_position")), transform: vec(path(st, "transform", "position")),
		force: vec(path(st, "current_cursor_force"))}
	if nav := path(st, "navigation"); nav != nil {
		s.hasState = true
		s.zone, _ = path(nav, "zone").(string)
		s.offset, s.velocity = vec(path(nav, "workspace_offset")), vec(path(nav, "velocity"))
	}
	return s
}

// until pushes with fx until ok holds for what the session sees (and, over
// HTTP, GET agrees with it). The deadline is generous: the arm's motion
// runs in real time, however slowly a loaded machine answers.
func (r *navRig) until(fx float64, what string, ok func(navSample) bool) navSample {
	r.t.Helper()
	var s navSample
	hwtest.EventuallyNil(r.t, 30*time.Second, fmt.Sprintf("pushing %g N: %s", fx, what), func() error {
		s = r.push(fx)
		if !ok(s) {
			return fmt.Errorf("last: %v", s)
		}
		if !s.getAgrees {
			return fmt.Errorf("GET's navigation state %s is not what the frames around it show: %v", s.get, s)
		}
		return nil
	})
	return s
}

// navFrictionDepth is as deep in the velocity zone as static friction can
// hold a cursor against the zone's spring: the simulated arm's 0.15 N over
// the default 50 N/m is 3 mm (the workspace then still creeps, at gain
// times depth); a little more for the cursor's last motion.
const navFrictionDepth = 0.0035

// letGo stops pushing: the navigation's forces bring the cursor back to
// the bubble's surface, to within what static friction holds against the
// zone's spring (navFrictionDepth). Whether it then also crosses the 2 mm
// of hysteresis into the dead zone is up to its momentum (no force acts
// inside the surface), and a loaded machine changes that: so a light pull
// inward (0.3 N, a hand letting the handle settle) takes it there. It
// returns the first sample in the dead zone, the workspace stopped.
func (r *navRig) letGo(from string) navSample {
	r.t.Helper()
	r.until(0, "the navigation bringing the cursor back "+from, func(s navSample) bool {
		return s.zone != "wall" && r.depth(s) < navFrictionDepth
	})
	return r.until(-0.3, "the cursor into the dead zone "+from, func(s navSample) bool {
		return s.zone == "dead" && s.velocity == [3]float64{}
	})
}

// depth is how far the cursor is outside the bubble's surface, in the
// workspace as set_transform alone places it (the offset taken out).
func (r *navRig) depth(s navSample) float64 {
	var d2 float64
	for i := range 3 {
		x := s.pos[i] - s.offset[i] - r.center[i]
		d2 += x * x
	}
	return math.Sqrt(d2) - navRadius
}

func norm(v [3]float64) float64 { return math.Sqrt(v[0]*v[0] + v[1]*v[1] + v[2]*v[2]) }

// checkZones pushes the cursor through each zone and checks what the
// navigation does there.
func checkZones(t *testing.T, r *navRig) {
	// Dead zone: the cursor moves inside the bubble, the workspace does not.
	s := r.until(0, "navigation state", func(s navSample) bool { return s.hasState })
	if s.zone != "dead" || s.offset != [3]float64{} {
		t.Fatalf("at rest in the bubble: %v", s)
	}
	far := r.until(0.5, "cursor 1 cm into the dead zone", func(s navSample) bool {
		if s.zone != "dead" || s.offset != [3]float64{} || s.velocity != [3]float64{} {
			t.Fatalf("the workspace moved in the dead zone: %v", s)
		}
		return s.pos[0]-r.center[0] > 0.01
	})
	r.until(-0.5, "cursor back toward the centre", func(s navSample) bool {
		if s.zone != "dead" || s.offset != [3]float64{} {
			t.Fatalf("the workspace moved in the dead zone: %v (from %v)", s, far)
		}
		return s.pos[0]-r.center[0] < 0.005
	})

	// Velocity zone: 1 N against the zone's 50 N/m spring rests the cursor
	// about 2 cm deep; the workspace slides outward (+x) at gain·depth.
	s = r.until(1, "the velocity zone, cursor settled", func(s navSample) bool {
		d := r.depth(s)
		want := navGain * d
		return s.zone == "velocity" && d > 0.005 && math.Abs(s.velocity[0]-want) <= 0.15*want+0.004
	})
	if math.Abs(s.velocity[1])+math.Abs(s.velocity[2]) > 0.3*s.velocity[0] {
		t.Fatalf("the workspace does not slide outward along x: %v", s)
	}
	// The offset shows in the positions the session reads and in
	// state.transform (set_transform is the identity here).
	for i := range 3 {
		if math.Abs(s.transform[i]-s.offset[i]) > 1e-6 {
			t.Fatalf("state.transform %v is not the navigation's offset %v", s.transform, s.offset)
		}
	}
	first := s
	s = r.until(1, "the workspace sliding on", func(s navSample) bool { return s.offset[0] > first.offset[0]+0.01 })
	if s.pos[0] < first.pos[0]+0.005 {
		t.Fatalf("the cursor's position does not carry the workspace's motion: %v, then %v", first, s)
	}

	// Letting go: the zone's spring brings the cursor back and the
	// workspace stops where it got to.
	stopped := r.letGo("from the velocity zone")
	r.until(0, "the cursor at rest", func(s navSample) bool {
		if s.offset != stopped.offset {
			t.Fatalf("the workspace moved on after the cursor came back: %v, then %v", stopped, s)
		}
		return s.zone == "dead" && norm(s.velocity) == 0 && r.depth(s) < 0
	})

	// Wall: 4 N is more than the zone's spring holds (1.5 N); the wall
	// beyond the outer boundary pushes back toward the inside.
	s = r.until(4, "the wall", func(s navSample) bool { return s.zone == "wall" && r.depth(s) > navWidth })
	s = r.until(4, "the wall holding the cursor", func(s navSample) bool {
		// What the navigation adds to the session's 4 N: inward, more than
		// the zone's spring alone.
		return s.zone == "wall" && s.force[0]-4 < -1.5
	})
	if want := navGain * navWidth; math.Abs(norm(s.velocity)-want) > 0.1*want {
		t.Fatalf("in the wall the workspace slides at the full zone's speed %g: %v", want, s)
	}
	r.letGo("from the wall")
}

func TestNavigationZones(t *testing.T) {
	for _, tt := range []struct {
		name   string
		overWS bool
	}{
		{"websocket", true},
		{"http", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := startService(t, serviceConfig{arms: 1})
			r := startNavRig(t, ts, "co.example.nav:"+tt.name, tt.overWS)
			r.configure()
			checkZones(t, r)
		})
	}
}

// TestNavigationRestoredAfterRestart: navigation set under a profile comes
// back with the profile after a restart and renders the same zones; a bad
// body in between changes nothing; DELETE turns it off and the workspace
// returns to what set_transform says.
func TestNavigationRestoredAfterRestart(t *testing.T) {
	const profile = "co.example.nav:restart"
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	r := startNavRig(t, ts, profile, false)
	r.configure()
	for _, bad := range []string{`{"mode":"bubble","bubble":{"speed_gain":-4}}`, `{"mode":"bubble","bubble":{"shape":{"primitive":"cone","parameters":{"c":{"x":0.6,"y":0.8},"h":0.05}}}}`, `{"mode":`} {
		if a := ts.do(http.MethodPost, r.navigationURL(), bad); a.status != 400 || a.env["code"] == nil {
			t.Fatalf("POST %s: %v", bad, a)
		}
	}
	bad := r.c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":{"mode":"bubble","bubble":{"max_speed":99}}}}]}`, r.id))
	if path(bad, "errors", 0, "path") != "arm3[0].configure.navigation.bubble.max_speed" {
		t.Fatalf("bad configure: %v", bad["errors"])
	}
	a := ts.do(http.MethodGet, r.navigationURL(), "")
	if num(path(a.env, "data", "config", "bubble", "speed_gain")) != navGain || num(path(a.env, "data", "config", "bubble", "max_speed")) != 0.5 ||
		path(a.env, "data", "config", "bubble", "shape", "primitive") != "sphere" {
		t.Fatalf("a refused body changed the navigation: %v", a)
	}
	_ = r.c.conn.Close()
	ts.stop()

	ts2 := startService(t, serviceConfig{arms: 1, dir: dir})
	r2 := startNavRig(t, ts2, profile, true)
	r2.center = r.center // the arm starts where it did, the bubble is where it was
	a = ts2.do(http.MethodGet, r2.navigationURL(), "")
	if path(a.env, "data", "status", "mode") != "bubble" || num(path(a.env, "data", "config", "bubble", "velocity_zone_width")) != navWidth ||
		num(path(a.env, "data", "config", "bubble", "center", "position", "x")) != r.center[0] {
		t.Fatalf("navigation after restart: %v", a)
	}
	checkZones(t, r2)
	// At rest and pushed by nothing, so that nothing moves the arm while
	// the DELETE goes through (under the full suite's load a 1 N push
	// held on for it and the cursor was 2.3 cm from where the sample said).
	s := r2.until(0, "the workspace away from zero, the cursor at rest", func(s navSample) bool {
		return s.offset[0] > 0.005 && s.velocity == [3]float64{}
	})
	if a = ts2.do(http.MethodDelete, r2.navigationURL(), ""); a.status != 200 || path(a.env, "data", "mode") != "off" {
		t.Fatalf("DELETE: %v", a)
	}
	off := r2.push(0)
	if off.hasState || off.transform != [3]float64{} || math.Abs(off.pos[0]-(s.pos[0]-s.offset[0])) > 0.02 {
		t.Fatalf("navigation off, the workspace is set_transform's again: %v (before: %v)", off, s)
	}
}

// TestNavigationDefaultBubbleStartsAroundTheHand: `{"mode":"bubble"}` alone
// (no centre given) centres the bubble where the cursor is when the
// navigation starts, so an arm at rest 0.18 m from the mount's origin is in
// the dead zone, not pulled in by the wall; pushed out 7 cm from there it
// reaches the velocity zone and the workspace moves.
func TestNavigationDefaultBubbleStartsAroundTheHand(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	r := startNavRig(t, ts, "co.example.nav:default", true)
	f := r.c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":{"mode":"bubble"}}}]}`, r.id))
	if f["errors"] != nil {
		t.Fatalf("configure {\"mode\":\"bubble\"}: %v", f["errors"])
	}
	if a := ts.do(http.MethodGet, r.navigationURL(), ""); path(a.env, "data", "config", "bubble", "center", "mode") != "cursor" {
		t.Fatalf("GET navigation after {\"mode\":\"bubble\"}: %v, want the centre mode cursor", a.env)
	}
	var first navSample
	var center [3]float64
	hwtest.EventuallyNil(t, 10*time.Second, "the navigation rendered", func() error {
		f := r.c.roundTrip(force(r.id, 0, 0, 0))
		nav := path(f, "arm3", 0, "state", "navigation")
		if nav == nil {
			return fmt.Errorf("no state.navigation yet")
		}
		first.zone, _ = path(nav, "zone").(string)
		first.pos = vec(path(f, "arm3", 0, "state", "cursor_position"))
		center = vec(path(nav, "bubble", "center"))
		return nil
	})
	if first.zone != "dead" {
		t.Fatalf("the default bubble found the hand at rest in zone %q, want the dead zone (centre %v, cursor %v)", first.zone, center, first.pos)
	}
	for i := range 3 {
		if math.Abs(center[i]-r.center[i]) > 0.002 {
			t.Fatalf("the default bubble's centre %v is not where the hand rested, %v", center, r.center)
		}
	}
	// 1.5 N outward along x: past the default 5 cm sphere into its zone.
	r.until(1.5, "the velocity zone of the bubble around the start", func(s navSample) bool {
		return s.zone != "dead" && s.offset[0] > 0 && s.pos[0]-center[0] > 0.05
	})
}

// TestNavigationForceEndsWithTheLease: a client that pushed the cursor into
// the wall and went silent leaves no navigation force once its lease
// lapses, and its workspace stays where the navigation took it.
func TestNavigationForceEndsWithTheLease(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	r := startNavRig(t, ts, "co.example.nav:lease", true)
	obs := ts.dial(t, ts.wsURL())
	obs.expect()
	r.configure()
	r.c.roundTrip(`{"session":{"configure":{"lease":{"ms":50}}}}`)
	r.until(4, "the wall", func(s navSample) bool { return s.zone == "wall" && s.offset[0] > 0.005 }) // then silence
	var offset [3]float64
	hwtest.EventuallyNil(t, 3*time.Second, "the force to end with the lease, the arm free", func() error {
		f := obs.roundTrip(`{}`)
		if got := vec(path(f, "arm3", 0, "state", "current_cursor_force")); got != [3]float64{} || path(f, "arm3", 0, "status", "in_use") != false {
			return fmt.Errorf("force %v in use %v", got, path(f, "arm3", 0, "status", "in_use"))
		}
		a := ts.do(http.MethodGet, r.navigationURL(), "")
		if v := vec(path(a.env, "data", "state", "velocity")); v != [3]float64{} {
			return fmt.Errorf("the workspace still moves at %v", v)
		}
		offset = vec(path(a.env, "data", "state", "workspace_offset"))
		return nil
	})
	if offset[0] < 0.005 {
		t.Fatalf("the workspace offset %v did not stay where the navigation took it", offset)
	}
	// It stays: the lease lapsed, nothing renders the navigation.
	obs.roundTrip(`{}`)
	if a := ts.do(http.MethodGet, r.navigationURL(), ""); vec(path(a.env, "data", "state", "workspace_offset")) != offset {
		t.Fatalf("the offset moved after the lease lapsed: %v, was %v", path(a.env, "data", "state"), offset)
	}
	// Navigation is the session's config, not part of the lease: a push
	// after the lapse renders it again from where the workspace stopped,
	// so no frame tells of anything dropped (effects_dropped is for
	// effects).
	if f := r.c.roundTrip(force(r.id, 4, 0, 0)); len(warningsWith(f, "effects_dropped")) != 0 {
		t.Fatalf("a session without effects told of effects dropped: %v", f["warnings"])
	}
	r.until(4, "the navigation rendering again after the lapse", func(s navSample) bool {
		return s.zone == "wall" && s.offset[0] > offset[0]+0.002
	})
}

// TestNavigationComposesWithSetTransform: the offset adds to set_transform's
// position, and the velocity law (mount metres) is carried into
// application space by its scale.
func TestNavigationComposesWithSetTransform(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	r := startNavRig(t, ts, "co.example.nav:transform", true)
	r.configure()
	const shift, scale = 0.5, 2.0
	f := r.c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_transform":{"position":{"x":%g,"y":0,"z":0},"scale":{"x":%g,"y":%g,"z":%g}}}}]}`,
		r.id, shift, scale, scale, scale))
	if f["errors"] != nil {
		t.Fatalf("set_transform: %v", f["errors"])
	}
	// depth in mount metres: app = shift + scale·mount + offset.
	depth := func(s navSample) float64 {
		var d2 float64
		for i := range 3 {
			m := s.pos[i] - s.offset[i]
			if i == 0 {
				m -= shift
			}
			m /= scale
			d2 += (m - r.center[i]) * (m - r.center[i])
		}
		return math.Sqrt(d2) - navRadius
	}
	s := r.until(1, "the velocity zone at scale 2", func(s navSample) bool {
		d := depth(s)
		want := scale * navGain * d
		return s.zone == "velocity" && d > 0.005 && math.Abs(s.velocity[0]-want) <= 0.15*want+0.004
	})
	if math.Abs(s.transform[0]-(shift+s.offset[0])) > 1e-6 || s.offset[0] <= 0 {
		t.Fatalf("state.transform.position %v is not set_transform's %g plus the offset %v", s.transform, shift, s.offset)
	}
}

// TestNavigationCursorBubbleStartsWithTheHandInside: a bubble in the
// default centre mode ("cursor") finds the hand at rest in its dead zone
// whatever its shape, and the workspace does not move while the hand does
// not. A torus's centre is in its hole and a capsule's ends may both be off
// its centre: centred on the hand, either would find it outside the
// surface, and the workspace would slide at once.
func TestNavigationCursorBubbleStartsWithTheHandInside(t *testing.T) {
	for _, tt := range []struct {
		name, shape string
		// coreDistance is how far the hand at rest is from the bubble's
		// reported centre: on a torus's core circle, at a capsule's middle.
		coreDistance float64
	}{
		{"sphere", `{"primitive":"sphere","parameters":{"r":0.05}}`, 0},
		{"torus", `{"primitive":"torus","parameters":{"r1":0.06,"r2":0.02}}`, 0.06},
		{"capsule off the centre", `{"primitive":"capsule","parameters":{"a":{"x":0.05,"y":0,"z":0},"b":{"x":0.09,"y":0,"z":0},"r":0.015}}`, 0.07},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := startService(t, serviceConfig{arms: 1})
			r := startNavRig(t, ts, "co.example.nav:start", true)
			f := r.c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":{"mode":"bubble","bubble":{"shape":%s}}}}]}`, r.id, tt.shape))
			if f["errors"] != nil {
				t.Fatalf("configure: %v", f["errors"])
			}
			var center [3]float64
			hwtest.EventuallyNil(t, 10*time.Second, "the navigation rendered", func() error {
				s := r.frame(0)
				if !s.hasState {
					return fmt.Errorf("no state.navigation yet")
				}
				f := r.c.roundTrip(`{}`)
				center = vec(path(f, "arm3", 0, "state", "navigation", "bubble", "center"))
				return nil
			})
			// The loop runs about a tick per millisecond: these frames span
			// tens of ticks, in which a hand found outside the surface has
			// the workspace sliding at centimetres a second.
			var s navSample
			for range 20 {
				s = r.frame(0)
				if s.zone != "dead" || norm(s.offset) > 1e-4 {
					t.Fatalf("the hand at rest: %v; want the dead zone and the workspace still (bubble centre %v)", s, center)
				}
			}
			if d := norm([3]float64{s.pos[0] - center[0], s.pos[1] - center[1], s.pos[2] - center[2]}); math.Abs(d-tt.coreDistance) > 0.003 {
				t.Fatalf("the hand at %v is %.4f m from the bubble's centre %v, want %g", s.pos, d, center, tt.coreDistance)
			}
		})
	}
}

// TestNavigationDriftingTorusKeepsTheHandInItsTube: a drifting bubble's
// centre follows the hand while the hand is in the dead zone. A torus's
// centre is in its hole: brought onto the hand, it would put the hand in
// the hole (the velocity zone), and the workspace would slide with the hand
// at rest. The torus drifts instead until the hand is on its core circle,
// the middle of its tube.
func TestNavigationDriftingTorusKeepsTheHandInItsTube(t *testing.T) {
	const r1, r2 = 0.06, 0.02
	ts := startService(t, serviceConfig{arms: 1})
	r := startNavRig(t, ts, "co.example.nav:drift", true)
	// The hand in the tube 1 cm outside its core circle, along x.
	cx := r.center[0] - r1 - 0.01
	f := r.c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":{"mode":"bubble","bubble":{`+
		`"center":{"position":{"x":%g,"y":%g,"z":%g},"mode":"drift","drift_rate":0.2},`+
		`"shape":{"primitive":"torus","parameters":{"r1":%g,"r2":%g}}}}}}]}`, r.id, cx, r.center[1], r.center[2], r1, r2))
	if f["errors"] != nil {
		t.Fatalf("configure: %v", f["errors"])
	}
	var last [3]float64
	hwtest.EventuallyNil(t, 10*time.Second, "the torus drifting until the hand is on its core circle", func() error {
		s := r.frame(0)
		if !s.hasState {
			return fmt.Errorf("no state.navigation yet")
		}
		if s.zone != "dead" || norm(s.offset) > 1e-4 {
			t.Fatalf("the hand at rest left the dead zone: %v (bubble centre last %v)", s, last)
		}
		last = vec(path(r.c.roundTrip(`{}`), "arm3", 0, "state", "navigation", "bubble", "center"))
		if d := norm([3]float64{s.pos[0] - last[0], s.pos[1] - last[1], s.pos[2] - last[2]}); math.Abs(d-r1) > 0.002 {
			return fmt.Errorf("the hand is %.4f m from the centre %v, want %g", d, last, r1)
		}
		return nil
	})
	// And it stays there: a centre drifting on toward the hand at 0.2 m/s
	// would put the hand past the tube's inner surface within 0.12 s.
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		if s := r.frame(0); s.zone != "dead" || norm(s.offset) > 1e-4 {
			t.Fatalf("the hand at rest left the dead zone: %v (bubble centre %v)", s, vec(path(r.c.roundTrip(`{}`), "arm3", 0, "state", "navigation", "bubble", "center")))
		}
	}
}

// TestEffectProxiesCarryTheNavigationOffset: a wall's proxy point is in the
// coordinates of the frame's cursor_position, which carry the navigation's
// workspace offset: on the free side the proxy is the cursor itself
// (docs/protocol.md, "Reading them"), wherever the workspace slid. A
// fixed bubble finds the hand 2 cm into its velocity zone with no spring
// there, so the hand stays put and the workspace slides at 2 cm/s.
func TestEffectProxiesCarryTheNavigationOffset(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	f := c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	p0 := vec(path(f, "arm3", 0, "state", "cursor_position"))
	body := fmt.Sprintf(`{"mode":"bubble","bubble":{"center":{"position":{"x":%g,"y":%g,"z":%g}},`+
		`"shape":{"primitive":"sphere","parameters":{"r":0.05}},"velocity_zone_width":0.03,"speed_gain":1,"max_speed":0.5,`+
		`"velocity_zone_stiffness":0,"dead_zone_damping":0,"wall_stiffness":0}}`, p0[0]+0.07, p0[1], p0[2])
	if f := c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":%s}}]}`, id, body)); f["errors"] != nil {
		t.Fatalf("configure.navigation: %v", f["errors"])
	}
	// A floor half a metre under the hand: never touched.
	wall := fmt.Sprintf(`{"id":"floor","type":"wall","position":{"x":%g,"y":%g,"z":%g},"normal":{"x":0,"y":0,"z":1},"stiffness":100}`, p0[0], p0[1], p0[2]-0.5)
	if f := c.roundTrip(effectsMsg(id, `{"set":[`+wall+`]}`)); f["errors"] != nil || effectCount(f) != 1 {
		t.Fatalf("declare the floor: %v", f["errors"])
	}
	hwtest.EventuallyNil(t, 15*time.Second, "the proxy on the free side is the cursor as the frame shows it", func() error {
		f := c.roundTrip(effectsMsg(id, `{}`)) // renews the lease
		st := path(f, "arm3", 0, "state")
		offset := vec(path(st, "navigation", "workspace_offset"))
		if offset[0] > -0.01 { // the workspace slides along the outward normal, −x
			return fmt.Errorf("the workspace offset is %v: not 1 cm yet", offset)
		}
		if path(st, "effects", "proxies", 0, "contact") != false {
			return fmt.Errorf("the floor's proxy %v: want it on the free side", path(st, "effects", "proxies", 0))
		}
		cursor := vec(path(st, "cursor_position"))
		proxy := vec(path(st, "effects", "proxies", 0, "position"))
		for i := range 3 {
			if math.Abs(proxy[i]-cursor[i]) > 0.002 {
				return fmt.Errorf("proxy %v, cursor %v (workspace offset %v): the proxy is not where the frame puts the cursor", proxy, cursor, offset)
			}
		}
		return nil
	})
}

// A bubble that drifted, then set to a fixed centre, is at that centre
// ("fixed keeps it", docs/protocol.md), as GET's state shows: the drift
// was kept across the change and put the zones beside the configured place.
func TestNavigationFixedCentreAfterDriftIsThere(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	r := startNavRig(t, ts, "co.example.nav:drift-fixed", true)
	c := r.center
	// A 5 cm sphere whose centre is 2 cm from the hand (+x): the hand is in
	// its dead zone, and the centre drifts onto the hand at 0.2 m/s.
	drift := fmt.Sprintf(`{"mode":"bubble","bubble":{"center":{"position":{"x":%g,"y":%g,"z":%g},"mode":"drift","drift_rate":0.2}}}`, c[0]+0.02, c[1], c[2])
	if f := r.c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":%s}}]}`, r.id, drift)); f["errors"] != nil {
		t.Fatalf("configure drift: %v", f["errors"])
	}
	hwtest.EventuallyNil(t, 10*time.Second, "the centre drifted onto the hand", func() error {
		s := r.frame(0)
		cen := vec(path(r.c.roundTrip(`{}`), "arm3", 0, "state", "navigation", "bubble", "center"))
		if !s.hasState || math.Abs(cen[0]-s.pos[0]) > 0.002 {
			return fmt.Errorf("centre %v, hand %v", cen, s.pos)
		}
		return nil
	})
	// Now a fixed centre 2 cm beside the hand (the same position).
	fixed := fmt.Sprintf(`{"mode":"bubble","bubble":{"center":{"position":{"x":%g,"y":%g,"z":%g},"mode":"fixed"}}}`, c[0]+0.02, c[1], c[2])
	if a := ts.do(http.MethodPost, r.navigationURL(), fixed); a.status != 200 {
		t.Fatalf("POST fixed: %v", a)
	}
	r.frame(0) // a command with the new view
	var cen [3]float64
	hwtest.EventuallyNil(t, 5*time.Second, "the fixed bubble rendered", func() error {
		r.frame(0)
		a := ts.do(http.MethodGet, r.navigationURL(), "")
		if path(a.env, "data", "config", "bubble", "center", "mode") != "fixed" || path(a.env, "data", "state") == nil {
			return fmt.Errorf("GET: %v", a)
		}
		cen = vec(path(a.env, "data", "state", "bubble", "center"))
		return nil
	})
	if math.Abs(cen[0]-(c[0]+0.02)) > 1e-4 {
		t.Fatalf("a fixed bubble configured at x=%.4f reports its centre at %v (the old drift kept)", c[0]+0.02, cen)
	}
}

// A session takes its arm into position control while the workspace
// slides: the workspace stops, and the velocity the state reports with it
// is zero (it kept the last speed and the velocity zone for good).
func TestNavigationPositionControlStopsTheReportedVelocity(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	r := startNavRig(t, ts, "co.example.nav:position", true)
	r.configure()
	s := r.until(1, "the velocity zone, the workspace sliding", func(s navSample) bool {
		return s.zone == "velocity" && s.velocity[0] > 0.01
	})
	hold := fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_position":{"position":{"x":%g,"y":%g,"z":%g}}}}]}`, r.id, s.pos[0], s.pos[1], s.pos[2])
	var first, last map[string]any
	for i := range 30 {
		f := r.c.roundTrip(hold)
		if f["errors"] != nil {
			t.Fatalf("set_cursor_position: %v", f["errors"])
		}
		if i == 5 {
			first = f
		}
		last = f
	}
	o1 := vec(path(first, "arm3", 0, "state", "navigation", "workspace_offset"))
	o2 := vec(path(last, "arm3", 0, "state", "navigation", "workspace_offset"))
	v := vec(path(last, "arm3", 0, "state", "navigation", "velocity"))
	a := ts.do(http.MethodGet, r.navigationURL(), "")
	t.Logf("mode %v offset %v then %v, velocity %v; GET state %v", path(last, "arm3", 0, "state", "control_mode"), o1, o2, v, path(a.env, "data", "state"))
	if o1 != o2 {
		t.Fatalf("the workspace moved under position control: %v then %v", o1, o2)
	}
	if v != [3]float64{} || vec(path(a.env, "data", "state", "velocity")) != [3]float64{} {
		t.Fatalf("the workspace is still (offset %v) but state.navigation.velocity says %v and GET %v", o2, v, path(a.env, "data", "state", "velocity"))
	}
}

// DELETE turns navigation off: the bubble's wall lets go of the arm at
// once, though the session sends nothing more. Before, the held command
// kept the navigation until the session's next command or its lease. The
// force can read the session's 4 N alone only before the lease (1 s) lapses
// (then it ramps to zero), so the generous deadline cannot pass the old
// code.
func TestNavigationDeleteLetsTheWallGoAtOnce(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	r := startNavRig(t, ts, "co.example.nav:off-http", true)
	obs := ts.dial(t, ts.wsURL())
	obs.expect()
	if f := r.c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`); f["errors"] != nil || f["warnings"] != nil {
		t.Fatalf("lease: %v %v", f["errors"], f["warnings"])
	}
	r.configure()
	r.until(4, "the wall holding the cursor", func(s navSample) bool { return s.zone == "wall" && s.force[0]-4 < -1.5 })
	f0 := obs.roundTrip(`{}`)
	t.Logf("before DELETE: force %v in_use %v", vec(path(f0, "arm3", 0, "state", "current_cursor_force")), path(f0, "arm3", 0, "status", "in_use"))
	if a := ts.do(http.MethodDelete, r.navigationURL(), ""); a.status != 200 || path(a.env, "data", "mode") != "off" {
		t.Fatalf("DELETE: %v", a)
	}
	start := time.Now()
	hwtest.EventuallyNil(t, 10*time.Second, "the session's own 4 N alone on the arm", func() error {
		f := obs.roundTrip(`{}`)
		if fx := vec(path(f, "arm3", 0, "state", "current_cursor_force"))[0]; fx < 3.9 {
			return fmt.Errorf("force x %.5f N %v after DELETE, in_use %v, mode %v", fx, time.Since(start), path(f, "arm3", 0, "status", "in_use"), path(f, "arm3", 0, "state", "control_mode"))
		}
		return nil
	})
}

// A WebSocket configure turning navigation off is in force when its frame
// answers (docs/protocol.md): the wall lets go of the arm, as for DELETE.
func TestNavigationConfigureOffLetsTheWallGoAtOnce(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	r := startNavRig(t, ts, "co.example.nav:off-ws", true)
	obs := ts.dial(t, ts.wsURL())
	obs.expect()
	r.c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	r.configure()
	r.until(4, "the wall holding the cursor", func(s navSample) bool { return s.zone == "wall" && s.force[0]-4 < -1.5 })
	f := r.c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":{"mode":"off"}}}]}`, r.id))
	if f["errors"] != nil || path(f, "arm3", 0, "state", "navigation") != nil {
		t.Fatalf("configure off: %v", f)
	}
	start := time.Now()
	hwtest.EventuallyNil(t, 10*time.Second, "the session's own 4 N alone on the arm", func() error {
		f := obs.roundTrip(`{}`)
		if fx := vec(path(f, "arm3", 0, "state", "current_cursor_force"))[0]; fx < 3.9 {
			return fmt.Errorf("force x %.3f N %v after the frame said navigation is off", fx, time.Since(start))
		}
		return nil
	})
}

// A client that checks state.transform.position against set_transform's
// position plus state.navigation.workspace_offset, in its own float64
// arithmetic, finds them equal to the bit: the offset is written as
// exactly as the transform it is added to, not at the float32 of measured
// values, which would leave a spurious difference of a few nanometres.
func TestNavigationOffsetAddsToStateTransformExactly(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	r := startNavRig(t, ts, "co.example.nav:exact", true)
	r.configure()
	shift := [3]float64{0.1, -0.2, 0.3}
	f := r.c.roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_transform":{"position":{"x":%g,"y":%g,"z":%g}}}}]}`,
		r.id, shift[0], shift[1], shift[2]))
	if f["errors"] != nil {
		t.Fatalf("set_transform: %v", f["errors"])
	}
	moved := 0
	r.until(1, "the workspace sliding in three frames", func(s navSample) bool {
		if !s.hasState || s.offset == [3]float64{} {
			return false
		}
		for i := range 3 {
			if s.transform[i] != shift[i]+s.offset[i] {
				t.Fatalf("state.transform.position %v is not set_transform's %v plus workspace_offset %v: component %d differs by %g",
					s.transform, shift, s.offset, i, s.transform[i]-(shift[i]+s.offset[i]))
			}
		}
		moved++
		return moved >= 3
	})
}
