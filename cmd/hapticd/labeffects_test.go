//go:build linux

// The lab runs on 127.0.0.2-4: Linux only, as the other lab tests.

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// effectsHold is a client holding effects on an arm through m's simulation
// socket: one declaration, then an empty effects member every 10 ms, which
// renews the lease as a command would. latest is its newest frame.
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
	first := fmt.Sprintf(`{"arm3":[{"device_id":%q,"effects":{"set":[%s]}}]}`, id, set)
	if err := conn.WriteMessage(websocket.TextMessage, []byte(first)); err != nil {
		t.Fatal(err)
	}
	if f := readJSON(t, conn); f["errors"] != nil {
		t.Fatalf("declaring %s on %s: %v", set, m.host, f["errors"])
	}
	h := &effectsHold{}
	done := make(chan struct{})
	go func() {
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var f map[string]any
			if json.Unmarshal(b, &f) == nil {
				h.mu.Lock()
				h.frame = f
				h.mu.Unlock()
			}
		}
	}()
	go func() {
		renew := fmt.Sprintf(`{"arm3":[{"device_id":%q,"effects":{}}]}`, id)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if conn.WriteMessage(websocket.TextMessage, []byte(renew)) != nil {
				return
			}
		}
	}()
	stopped := false
	h.stop = func() {
		if !stopped {
			stopped = true
			close(done)
			_ = conn.Close()
		}
	}
	t.Cleanup(h.stop)
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

// cursorZ is arm id's cursor height on m, as /devices reports it.
func cursorZ(t *testing.T, m *labMember, id string) float64 {
	t.Helper()
	z, ok := path(labArms(t, m)[id], "state", "cursor_position", "z").(float64)
	if !ok {
		t.Fatalf("no cursor position for arm %s on %s", id, m.host)
	}
	return z
}

// wallStiffness lets arm id, under the floor wall at wallZ declared by a
// client of m, fall onto it under its own weight, waits until it rests,
// and returns the wall's stiffness as m's user measures it (the caller
// turns gravity compensation on again): the wall's
// rendered force (GET .../effects) over the cursor's depth behind its
// plane (/devices), averaged over 20 readings at rest.
func wallStiffness(t *testing.T, m, node *labMember, id string, wallZ float64) float64 {
	t.Helper()
	wallForce := func() float64 {
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
	setGravityCompensation(t, node, id, false)
	// At rest: the wall carries the arm (its weight, less what friction
	// holds) and the cursor stopped.
	still := 0
	waitLab(t, 10*time.Second, "the arm resting on the wall", func() bool {
		d := labArms(t, m)[id]
		v, _ := path(d, "state", "cursor_velocity", "z").(float64)
		if f := wallForce(); f > 0.5 && math.Abs(v) < 2e-4 {
			still++
		} else {
			still = 0
		}
		return still >= 5
	})
	var sum float64
	const n = 20
	for range n {
		f := wallForce()
		depth := wallZ - cursorZ(t, m, id)
		if depth <= 0 || !(f > 0) {
			t.Fatalf("reading at rest: wall force %v N at depth %v m", f, depth)
		}
		sum += f / depth
		time.Sleep(5 * time.Millisecond)
	}
	return sum / n
}

// TestLabEffects runs a node (127.0.0.2) and a gateway (127.0.0.4): a
// wall declared by a client of the gateway is rendered by the node's loop
// as stiff as the same wall declared by a client of the node itself, its
// proxy point and passivity figures reach the gateway's client, and when
// the gateway is SIGKILLed the wall's force on the node ends within the
// node's lease (100 ms) plus the ramp (20 ms).
func TestLabEffects(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes")
	}
	lab := newTestLab(t, buildBinary(t), labHostA, labHostGW)
	node := lab.node(labHostA)
	gw := lab.gateway(labHostGW)
	id := onlyArm(t, node)
	waitLab(t, 10*time.Second, "the node's arm on the gateway", func() bool { _, ok := labArms(t, gw)[id]; return ok })
	const stiffness = 1000.0

	// Through the gateway.
	z0 := cursorZ(t, node, id)
	wallGW := z0 - 0.003
	h := holdEffects(t, gw, id, floorWall(z0, stiffness))
	viaGateway := wallStiffness(t, gw, node, id, wallGW)
	// The node renders it: its own /devices shows the wall's force.
	if f, _ := path(labArms(t, node)[id], "state", "current_cursor_force", "z").(float64); f <= 0 {
		t.Errorf("the node's arm shows force %v N while resting on the gateway client's wall", f)
	}
	f := h.latest()
	proxies, _ := path(asList(f["arm3"])[0], "state", "effects", "proxies").([]any)
	if len(proxies) != 1 || path(proxies[0], "contact") != true || math.Abs(path(proxies[0], "position", "z").(float64)-wallGW) > 1e-4 {
		t.Errorf("the gateway's client sees proxies %v, want the floor's, in contact at z %v", proxies, wallGW)
	}
	if path(asList(f["arm3"])[0], "state", "passivity", "energy") == nil {
		t.Errorf("no passivity figures in the gateway client's frame: %v", path(asList(f["arm3"])[0], "state"))
	}
	h.stop()
	setGravityCompensation(t, node, id, true)
	waitLab(t, 5*time.Second, "the node's arm released", func() bool { return controlMode(labArms(t, node)[id]) == "idle" })

	// The same wall declared on the node directly.
	z0 = cursorZ(t, node, id)
	h = holdEffects(t, node, id, floorWall(z0, stiffness))
	direct := wallStiffness(t, node, node, id, z0-0.003)
	h.stop()
	setGravityCompensation(t, node, id, true)
	waitLab(t, 5*time.Second, "the node's arm released", func() bool { return controlMode(labArms(t, node)[id]) == "idle" })
	t.Logf("wall of %v N/m: %.0f N/m measured through the gateway, %.0f N/m on the node directly (ratio %.3f)",
		stiffness, viaGateway, direct, viaGateway/direct)
	if r := viaGateway / direct; r < 0.9 || r > 1.1 {
		t.Errorf("the wall through the gateway is %.0f N/m, on the node %.0f N/m: want within 10 %%", viaGateway, direct)
	}

	// SIGKILL the gateway while the arm rests on its client's wall.
	z0 = cursorZ(t, node, id)
	holdEffects(t, gw, id, floorWall(z0, stiffness))
	setGravityCompensation(t, node, id, false)
	force := func(d map[string]any) float64 {
		f, _ := path(d, "state", "current_cursor_force", "z").(float64)
		return f
	}
	waitLab(t, 10*time.Second, "the arm resting on the gateway client's wall", func() bool { return force(labArms(t, node)[id]) > 0.5 })
	kill := time.Now()
	if err := gw.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The last poll that still saw the force bounds the lapse from below,
	// the first that did not from above.
	var lastSeen, zeroAt time.Duration
	for {
		d := labArms(t, node)[id]
		now := time.Since(kill)
		if d != nil {
			if force(d) == 0 {
				zeroAt = now
				break
			}
			lastSeen = now
		}
		if now > 5*time.Second {
			t.Fatal("the wall's force on the node did not end within 5 s of the gateway's SIGKILL")
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Logf("the wall's force on the node ended between %v and %v after the gateway's SIGKILL (lease 100 ms)",
		lastSeen.Round(time.Millisecond), zeroAt.Round(time.Millisecond))
	if bound := 120 * time.Millisecond; lastSeen > bound {
		t.Errorf("the wall's force still on %v after the gateway died; want zero within the lease plus 20 ms (%v)", lastSeen, bound)
	}
	setGravityCompensation(t, node, id, true)
}
