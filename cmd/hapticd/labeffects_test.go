//go:build linux

// The lab runs on 127.0.0.2-4: Linux only, as the other lab tests.

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// effectsHold is a client holding effects on an arm through m's simulation
// socket under a 1 s lease (the most a session may ask): one declaration,
// then an empty effects member every 10 ms, which renews the lease as a
// command would. latest is its newest frame.
type effectsHold struct {
	mu    sync.Mutex
	frame map[string]any
	stop  func()
}

func (h *effectsHold) latest() map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.frame
}

func holdEffects(t *testing.T, m *labMember, id, set string) *effectsHold {
	t.Helper()
	conn := dialWS(t, "ws://"+m.addr["http"]+"/")
	readJSON(t, conn) // the inventory
	// A lease long enough that a test starved of CPU does not let it lapse
	// between renewals: the node's own lease, which the gateway's commands
	// hold, is what the SIGKILL measures.
	if err := conn.WriteMessage(websocket.TextMessage, []byte(`{"session":{"configure":{"lease":{"ms":1000}}}}`)); err != nil {
		t.Fatal(err)
	}
	if f := readJSON(t, conn); f["errors"] != nil {
		t.Fatalf("lease on %s: %v", m.host, f["errors"])
	}
	first := fmt.Sprintf(`{"arm3":[{"device_id":%q,"effects":{"set":[%s]}}]}`, id, set)
	if err := conn.WriteMessage(websocket.TextMessage, []byte(first)); err != nil {
		t.Fatal(err)
	}
	if f := readJSON(t, conn); f["errors"] != nil {
		t.Fatalf("declaring %s on %s: %v", set, m.host, f["errors"])
	}
	h := &effectsHold{}
	renew := fmt.Sprintf(`{"arm3":[{"device_id":%q,"effects":{}}]}`, id)
	h.stop = holdSession(t, conn, func() string { return renew }, func(f map[string]any) {
		h.mu.Lock()
		h.frame = f
		h.mu.Unlock()
	})
	// The arm's loop renders the declaration once its frames show the
	// wall's proxy: only then may the arm fall onto it (a wall that
	// appears with the cursor behind it lets the cursor be).
	waitLab(t, 10*time.Second, "the wall rendered by the arm's loop", func() bool {
		f := h.latest()
		if f == nil {
			return false
		}
		proxies, _ := path(asList(f["arm3"])[0], "state", "effects", "proxies").([]any)
		return len(proxies) == 1
	})
	return h
}

// setGravityCompensation turns the node's gravity compensation of arm id
// on or off: off, the simulated arm falls under its own weight.
func setGravityCompensation(t *testing.T, node *labMember, id string, on bool) {
	t.Helper()
	body := fmt.Sprintf(`{"enabled":%v,"scaling_factor":1}`, on)
	if status, env := httpDo(t, "POST", node.url("/arm3/"+id+"/config/gravity_compensation"), body); status != 200 {
		t.Fatalf("gravity compensation %v on the node: %d %v", on, status, env)
	}
}

// floorWall is a wall 3 mm under z, its free side up.
func floorWall(z, stiffness float64) string {
	return fmt.Sprintf(`{"id":"floor","type":"wall","position":{"x":0,"y":0,"z":%g},"normal":{"x":0,"y":0,"z":1},"stiffness":%g,"damping":3}`, z-0.003, stiffness)
}

// restingCursorZ waits until arm id's cursor on m is still (five
// readings in a row under 0.2 mm/s, as /devices reports it) and returns its
// height. A floor wall must be declared under a cursor at rest: one the
// cursor is still falling towards may appear with the cursor already
// behind it, and a wall lets such a cursor be.
func restingCursorZ(t *testing.T, m *labMember, id string) float64 {
	t.Helper()
	var z float64
	still := 0
	waitLab(t, 20*time.Second, "arm "+id+"'s cursor at rest on "+m.host, func() bool {
		st := path(labArms(t, m)[id], "state")
		var ok bool
		if z, ok = path(st, "cursor_position", "z").(float64); !ok {
			t.Fatalf("no cursor position for arm %s on %s", id, m.host)
		}
		if v, _ := path(st, "cursor_velocity", "z").(float64); math.Abs(v) < 2e-4 {
			still++
		} else {
			still = 0
		}
		return still >= 5
	})
	return z
}

// wallStiffness lets arm id, under the floor wall at wallZ declared by a
// client of m, fall onto it under its own weight, waits until it rests,
// and returns the wall's stiffness as the arm feels it: the force the
// node's arm puts out (gravity compensation off, no command of its own:
// the wall's force alone) over the cursor's depth behind the wall's plane,
// both from one /devices answer of the node, averaged over 20 readings at
// rest. It also checks that m's GET .../effects reports that force as the
// wall's (rendered_force). The caller turns gravity compensation on again.
func wallStiffness(t *testing.T, m, node *labMember, id string, wallZ float64) float64 {
	t.Helper()
	reported := func() float64 {
		_, env := httpDo(t, "GET", m.url("/arm3/"+id+"/effects"), "")
		list, _ := path(env, "data", "effects").([]any)
		if len(list) != 1 {
			return math.NaN()
		}
		z, ok := path(list[0], "rendered_force", "z").(float64)
		if !ok {
			return math.NaN()
		}
		return z
	}
	// reading is the node arm's output force and depth behind the wall.
	reading := func() (forceN, depthM, speedMps float64) {
		d := labArms(t, node)[id]
		forceN, _ = path(d, "state", "current_cursor_force", "z").(float64)
		z, _ := path(d, "state", "cursor_position", "z").(float64)
		speedMps, _ = path(d, "state", "cursor_velocity", "z").(float64)
		return forceN, wallZ - z, math.Abs(speedMps)
	}
	setGravityCompensation(t, node, id, false)
	// At rest: the wall carries the arm (its weight, less what friction
	// holds) and the cursor stopped.
	still := 0
	waitLab(t, 20*time.Second, "the arm resting on the wall", func() bool {
		if f, depth, v := reading(); f > 0.5 && depth > 0 && v < 2e-4 {
			still++
		} else {
			still = 0
		}
		return still >= 5
	})
	var sum float64
	const n = 20
	for range n {
		f, depth, _ := reading()
		if depth <= 0 || !(f > 0) {
			t.Fatalf("reading at rest through %s: force %v N at depth %v m", m.host, f, depth)
		}
		sum += f / depth
		time.Sleep(5 * time.Millisecond)
	}
	f, _, _ := reading()
	if r := reported(); !(math.Abs(r-f) <= 0.1*f) {
		t.Errorf("%s reports the wall's force as %v N; the node's arm puts out %v N", m.host, r, f)
	}
	return sum / n
}

// TestLabEffects runs a node (127.0.0.2) and a gateway (127.0.0.4): a
// wall declared by a client of the gateway is rendered by the node's loop
// as stiff as the same wall declared by a client of the node itself, its
// proxy point and passivity figures reach the gateway's client, and when
// the gateway is SIGKILLed the wall's force on the node ends within the
// node's lease plus the ramp (20 ms).
func TestLabEffects(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes")
	}
	lab := newTestLab(t, buildBinary(t), labHostA, labHostGW)
	// The node's lease is the longest a node takes (1 s), not the default
	// 100 ms: the stiffness readings hold the arm on the wall for
	// seconds, and on a shared 2-core machine under -race the gateway's
	// loop or actor stalls now and then, for most of 100 ms and, with the
	// full suite beside it (load 12), past 250 ms; a lapse lets the arm
	// fall through the wall (a wall the lease brings back finds the
	// cursor behind it) and it never rests on it again. The SIGKILL bound
	// is this lease plus the ramp.
	const lease = time.Second
	node := lab.node(labHostA, "--cluster-lease-ms", strconv.Itoa(int(lease/time.Millisecond)))
	gw := lab.gateway(labHostGW)
	id := onlyArm(t, node)
	waitArmOnGateway(t, gw, id)
	const stiffness = 1000.0

	// Through the gateway.
	z0 := restingCursorZ(t, node, id)
	wallGW := z0 - 0.003
	h := holdEffects(t, gw, id, floorWall(z0, stiffness))
	viaGateway := wallStiffness(t, gw, node, id, wallGW)
	logStateAge(t, gw, id)
	// The node lists the wall among the effects in force on its arm, as
	// the gateway lists it, marked with the gateway and its session.
	_, onNode := httpDo(t, "GET", node.url("/arm3/"+id+"/effects"), "")
	_, onGW := httpDo(t, "GET", gw.url("/arm3/"+id+"/effects"), "")
	nodeList, _ := path(onNode, "data", "effects").([]any)
	gwList, _ := path(onGW, "data", "effects").([]any)
	if len(nodeList) != 1 || len(gwList) != 1 || path(nodeList[0], "id") != path(gwList[0], "id") ||
		path(nodeList[0], "stiffness") != path(gwList[0], "stiffness") || path(nodeList[0], "rendered_force") == nil {
		t.Errorf("the node lists %v, the gateway %v: want the gateway client's wall on both", nodeList, gwList)
	}
	if g := path(onNode, "data", "gateway"); path(g, "id") != "gw-"+labHostGW || path(g, "session_id") != path(onGW, "data", "session_id") {
		t.Errorf("the node's listing names its owner %v, want gateway gw-%s and its session %v", g, labHostGW, path(onGW, "data", "session_id"))
	}
	f := h.latest()
	proxies, _ := path(asList(f["arm3"])[0], "state", "effects", "proxies").([]any)
	if len(proxies) != 1 || path(proxies[0], "contact") != true || math.Abs(path(proxies[0], "position", "z").(float64)-wallGW) > 1e-4 {
		t.Errorf("the gateway's client sees proxies %v, want the floor's, in contact at z %v", proxies, wallGW)
	}
	if path(asList(f["arm3"])[0], "state", "passivity", "energy") == nil {
		t.Errorf("no passivity figures in the gateway client's frame: %v", path(asList(f["arm3"])[0], "state"))
	}
	// Compensation back on before the wall goes, so the arm does not
	// fall when it does.
	setGravityCompensation(t, node, id, true)
	h.stop()
	waitLab(t, 5*time.Second, "the node's arm released", func() bool { return controlMode(labArms(t, node)[id]) == "idle" })

	// The same wall declared on the node directly.
	z0 = restingCursorZ(t, node, id)
	h = holdEffects(t, node, id, floorWall(z0, stiffness))
	direct := wallStiffness(t, node, node, id, z0-0.003)
	// Compensation back on before the wall goes, so the arm does not
	// fall when it does.
	setGravityCompensation(t, node, id, true)
	h.stop()
	waitLab(t, 5*time.Second, "the node's arm released", func() bool { return controlMode(labArms(t, node)[id]) == "idle" })
	t.Logf("wall of %v N/m: %.1f N/m measured through the gateway, %.1f N/m on the node directly (ratio %.4f)",
		stiffness, viaGateway, direct, viaGateway/direct)
	if r := viaGateway / direct; r < 0.9 || r > 1.1 {
		t.Errorf("the wall through the gateway is %.0f N/m, on the node %.0f N/m: want within 10 %%", viaGateway, direct)
	}

	// SIGKILL the gateway while the arm rests on its client's wall.
	z0 = restingCursorZ(t, node, id)
	h = holdEffects(t, gw, id, floorWall(z0, stiffness))
	setGravityCompensation(t, node, id, false)
	force := func(d map[string]any) float64 {
		f, _ := path(d, "state", "current_cursor_force", "z").(float64)
		return f
	}
	waitLab(t, 10*time.Second, "the arm resting on the gateway client's wall", func() bool { return force(labArms(t, node)[id]) > 0.5 })
	forceEndsAfterGatewayKill(t, gw, node, id, lease, "the wall's force", force)
	setGravityCompensation(t, node, id, true)
}

// forceEndsAfterGatewayKill SIGKILLs gw and polls node's arm id every 2 ms
// until force, read from the arm's listing, is zero: the gateway's force
// (what) must end on the node within the node's lease plus the 20 ms ramp
// (plus the node loop's longest tick period meanwhile: see releaseRamp).
// The last poll that still saw the force bounds the lapse from below, the
// first that did not from above, each from when it was sent.
func forceEndsAfterGatewayKill(t *testing.T, gw, node *labMember, id string, lease time.Duration, what string, force func(d map[string]any) float64) {
	t.Helper()
	before, err := loopShards(http.DefaultClient, node)
	if err != nil {
		t.Fatal(err)
	}
	kill := time.Now()
	if err := gw.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var lastSeen, zeroAt time.Duration
	for {
		// Taken before the request: the state the answer holds is younger,
		// so a force seen counts as on at this time at the latest.
		now := time.Since(kill)
		if d := labArms(t, node)[id]; d != nil {
			if force(d) == 0 {
				zeroAt = now
				break
			}
			lastSeen = now
		}
		if now > 5*time.Second {
			t.Fatalf("%s on the node did not end within 5 s of the gateway's SIGKILL", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
	after, err := loopShards(http.DefaultClient, node)
	if err != nil {
		t.Fatal(err)
	}
	stall := longestPeriod(before, after)
	t.Logf("%s on the node ended between %v and %v after the gateway's SIGKILL (lease %v; the node's longest tick period meanwhile %v)",
		what, lastSeen.Round(time.Millisecond), zeroAt.Round(time.Millisecond), lease, stall)
	if bound := lease + releaseRamp + stall; lastSeen > bound {
		t.Errorf("%s still on %v after the gateway died; want zero within the lease plus 20 ms plus the node's longest tick period (%v), %v", what, lastSeen, stall, bound)
	}
}

// logStateAge logs how old the node's states were when the gateway's loop
// took them (GET /stats, remote.state_age): a gateway that lags its node by
// the node's lease has its commands dropped there.
func logStateAge(t *testing.T, gw *labMember, id string) {
	t.Helper()
	_, env := httpDo(t, "GET", gw.url("/stats"), "")
	devs, _ := path(env, "data", "devices").([]any)
	for _, d := range devs {
		if path(d, "device_id") == id {
			b, _ := json.Marshal(path(d, "remote", "state_age"))
			t.Logf("state age on the gateway: %s", b)
		}
	}
}

// navPush is a client of m pushing arm id along x with a force it may
// change, every 10 ms under a 1 s lease, with bubble navigation on; latest
// is its newest frame's arm state.
type navPush struct {
	mu    sync.Mutex
	fx    float64
	state map[string]any
	stop  func()
}

func (p *navPush) set(fx float64) {
	p.mu.Lock()
	p.fx = fx
	p.mu.Unlock()
}

func (p *navPush) latest() map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// pushNavigating opens a session on m that turns bubble navigation on
// around the cursor (a 3 cm sphere, a 3 cm zone, gain 4 1/s) and then
// pushes along x.
func pushNavigating(t *testing.T, m *labMember, id string) *navPush {
	t.Helper()
	conn := dialWS(t, "ws://"+m.addr["http"]+"/")
	readJSON(t, conn) // the inventory
	roundTrip := func(msg string) map[string]any {
		t.Helper()
		if err := conn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		f := readJSON(t, conn)
		if f["errors"] != nil {
			t.Fatalf("%s on %s: %v", msg, m.host, f["errors"])
		}
		return f
	}
	roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	force := func(fx float64) string {
		return fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":%g,"y":0,"z":0}}}}]}`, id, fx)
	}
	c := path(asList(roundTrip(force(0))["arm3"])[0], "state", "cursor_position")
	x, _ := path(c, "x").(float64)
	y, _ := path(c, "y").(float64)
	z, _ := path(c, "z").(float64)
	roundTrip(fmt.Sprintf(`{"arm3":[{"device_id":%q,"configure":{"navigation":{"mode":"bubble","bubble":{"center":{"position":{"x":%g,"y":%g,"z":%g}},`+
		`"shape":{"primitive":"sphere","parameters":{"r":0.03}},"velocity_zone_width":0.03,"speed_gain":4,"max_speed":0.5,`+
		`"easing":"linear","wall_stiffness":800}}}}]}`, id, x, y, z))
	p := &navPush{}
	p.stop = holdSession(t, conn, func() string {
		p.mu.Lock()
		defer p.mu.Unlock()
		return force(p.fx)
	}, func(f map[string]any) {
		if f["arm3"] == nil {
			return
		}
		p.mu.Lock()
		p.state, _ = path(asList(f["arm3"])[0], "state").(map[string]any)
		p.mu.Unlock()
	})
	return p
}

// TestLabNavigation runs a node (127.0.0.2) and a gateway (127.0.0.4): a
// client of the gateway navigates the node's arm; the node's loop renders
// the velocity zone's spring against the client's push (the node's output
// is less than the client's force: the gateway sends only the client's),
// the workspace slides, and the gateway's client sees the node's offset
// in its positions and state.navigation; when the gateway is SIGKILLed the
// navigation's force on the node ends within the node's lease plus the
// ramp (20 ms).
func TestLabNavigation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes")
	}
	lab := newTestLab(t, buildBinary(t), labHostA, labHostGW)
	const lease = time.Second // as in TestLabEffects: a stalled gateway must not lapse it
	node := lab.node(labHostA, "--cluster-lease-ms", strconv.Itoa(int(lease/time.Millisecond)))
	gw := lab.gateway(labHostGW)
	id := onlyArm(t, node)
	waitArmOnGateway(t, gw, id)

	p := pushNavigating(t, gw, id)
	vec := func(v any) [3]float64 {
		var out [3]float64
		for i, k := range []string{"x", "y", "z"} {
			out[i], _ = path(v, k).(float64)
		}
		return out
	}
	// 1 N against the zone's 50 N/m spring rests the cursor about 2 cm
	// deep: the node puts out the client's 1 N less the spring's.
	p.set(1)
	var nodeFx float64
	waitLab(t, 20*time.Second, "the node's loop navigating in the velocity zone", func() bool {
		st := p.latest()
		off := vec(path(st, "navigation", "workspace_offset"))
		d := labArms(t, node)[id]
		nodeFx, _ = path(d, "state", "current_cursor_force", "x").(float64)
		v := vec(path(d, "state", "cursor_velocity"))
		// At rest: friction may leave the spring a little over or under
		// the push.
		return path(st, "navigation", "zone") == "velocity" && off[0] > 0.01 && math.Abs(v[0]) < 2e-3 && math.Abs(nodeFx) < 0.7
	})
	t.Logf("the client pushes 1 N; the node's arm puts out %.2f N along x", nodeFx)
	// The offset is in the gateway client's positions and transform: its
	// cursor is the node's plus the offset (the arm rests in the zone).
	waitLab(t, 10*time.Second, "the gateway client's cursor carrying the node's offset", func() bool {
		st := p.latest()
		off := vec(path(st, "navigation", "workspace_offset"))
		tr := vec(path(st, "transform", "position"))
		gwX := vec(path(st, "cursor_position"))[0]
		nodeX := vec(path(labArms(t, node)[id], "state", "cursor_position"))[0]
		return math.Abs(gwX-nodeX-off[0]) < 0.003 && math.Abs(tr[0]-off[0]) < 1e-9
	})

	// SIGKILL the gateway while the zone's spring holds the arm.
	fx := func() float64 {
		f, _ := path(labArms(t, node)[id], "state", "current_cursor_force", "x").(float64)
		return f
	}
	waitLab(t, 10*time.Second, "the navigation's force on the node", func() bool { return fx() != 0 })
	forceEndsAfterGatewayKill(t, gw, node, id, lease, "the navigation's force", func(d map[string]any) float64 {
		f, _ := path(d, "state", "current_cursor_force", "x").(float64)
		return f
	})
}
