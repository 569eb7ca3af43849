//go:build linux

// A loaded gateway (50 sessions) while a node restarts: real processes on
// 127.0.0.2-4, Linux only as the other lab tests.

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// cursorForceZ is the z of the force an arm's listing says it puts out.
func cursorForceZ(d map[string]any) float64 {
	f, _ := path(d, "state", "current_cursor_force", "z").(float64)
	return f
}

// gatewayProcess is m's process figures from GET /stats (a gateway's or
// a node's); ok is false when it could not answer.
func gatewayProcess(m *labMember) (goroutines, sessions int, ok bool) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(m.url("/stats"))
	if err != nil {
		return 0, 0, false
	}
	defer resp.Body.Close()
	var env struct {
		Data struct {
			Process struct {
				Goroutines int `json:"goroutines"`
				Sessions   int `json:"sessions"`
			} `json:"process"`
		} `json:"data"`
	}
	if json.NewDecoder(resp.Body).Decode(&env) != nil {
		return 0, 0, false
	}
	return env.Data.Process.Goroutines, env.Data.Process.Sessions, true
}

// loadClient is one of many sessions on a gateway: it sends msg every
// period and reads every frame, recording the longest gap between two
// frames and the codes its frames carried.
type loadClient struct {
	mu       sync.Mutex
	frames   int
	lastAt   time.Time
	maxGap   time.Duration
	maxGapAt time.Time // when the longest gap ended
	codes    map[string]int
	measure  bool // gaps count from when it is set
	done     chan struct{}
	finished chan struct{}
}

func startLoadClient(t *testing.T, gw *labMember, msg string, period time.Duration) *loadClient {
	t.Helper()
	conn := dialWS(t, "ws://"+gw.addr["http"]+"/")
	readJSON(t, conn) // the inventory
	c := &loadClient{codes: map[string]int{}, done: make(chan struct{}), finished: make(chan struct{})}
	go func() {
		defer close(c.finished)
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var f map[string]any
			_ = json.Unmarshal(b, &f)
			now := time.Now()
			c.mu.Lock()
			if c.measure && !c.lastAt.IsZero() {
				if gap := now.Sub(c.lastAt); gap > c.maxGap {
					c.maxGap, c.maxGapAt = gap, now
				}
			}
			c.lastAt = now
			c.frames++
			if c.measure {
				for _, k := range []string{"errors", "warnings"} {
					for _, e := range asList(f[k]) {
						code, _ := path(e, "code").(string)
						c.codes[code]++
					}
				}
			}
			c.mu.Unlock()
		}
	}()
	go func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-c.done:
				_ = conn.Close()
				return
			case <-tick.C:
			}
			if conn.WriteMessage(websocket.TextMessage, []byte(msg)) != nil {
				return
			}
		}
	}()
	t.Cleanup(c.stop)
	return c
}

func (c *loadClient) stop() {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	<-c.finished
}

// machinePauseCodes are the codes a gateway's clients hear when the
// machine pauses the gateway or its nodes past a lease by itself, as a
// shared 2-core machine does (the frames pause for most of a second
// without a fault): state_stale, node b's states reaching the gateway
// later than the lease (434 ms in 3 s without a fault, under the full
// suite); stale_command, a controlling session's message read more than
// its 100 ms lease after it arrived, not applied (twice for session 0 on
// node b's arm during a restart's window, with the test process on one CPU
// and a busy loop beside it; its longest frame pause was 471 ms, the
// reference window's 545 ms). How long the frames pause is what the test
// bounds.
var machinePauseCodes = map[string]bool{"state_stale": true, "stale_command": true}

// A gateway serving 50 sessions at 200 Hz, half of them on each node's
// arm, while one node is SIGKILLed and restarted: the other node's
// sessions keep getting frames (no pause of 3 s; a shared machine pauses
// them for up to a second without a fault) without an error or warning,
// config acknowledged through the gateway meanwhile is on the other node,
// and once the clients leave the gateway's goroutines return to what they
// were before the clients and the restart (each restart of a node left a
// dozen for good: protoactor's connections of its failed attempts to reach
// the dead process, redialling it forever).
func TestLabLoadedGatewayNodeRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes under 50 sessions")
	}
	lab := newTestLab(t, buildBinary(t), labHostA, labHostB, labHostGW)
	a, b, gw, armA, armB := lab.twoNodes(t)
	var baseline int
	waitLab(t, 10*time.Second, "the gateway's /stats", func() bool {
		var ok bool
		baseline, _, ok = gatewayProcess(gw)
		return ok
	})

	const perArm = 25
	const period = 5 * time.Millisecond // 200 Hz
	var onA, onB []*loadClient
	for i := range perArm {
		msgA := fmt.Sprintf(`{"arm3":[{"device_id":%q}]}`, armA)
		msgB := fmt.Sprintf(`{"arm3":[{"device_id":%q}]}`, armB)
		if i == 0 { // one session controls each arm with a force
			msgA, msgB = labForce(armA, 0.3), labForce(armB, 0.4)
		}
		onA = append(onA, startLoadClient(t, gw, msgA, period))
		onB = append(onB, startLoadClient(t, gw, msgB, period))
	}
	waitLab(t, 20*time.Second, "both forces on their nodes", func() bool {
		return underGatewayForce(labArms(t, a)[armA], 0.3) && underGatewayForce(labArms(t, b)[armB], 0.4)
	})
	// A quiet spell first, for reference: how long frames pause on this
	// machine without a fault (a shared 2-core machine pauses processes
	// for most of a second now and then).
	longestGap := func() (gap time.Duration, at time.Time) {
		for _, c := range onB {
			c.mu.Lock()
			if c.maxGap > gap {
				gap, at = c.maxGap, c.maxGapAt
			}
			c.maxGap = 0
			c.mu.Unlock()
		}
		return gap, at
	}
	for _, c := range onB {
		c.mu.Lock()
		c.measure = true
		c.mu.Unlock()
	}
	time.Sleep(3 * time.Second) // the reference window, not a wait for a condition
	quietGap, _ := longestGap()
	for _, c := range onB {
		c.mu.Lock()
		// The machine's own pauses' codes are no fault here either (see
		// machinePauseCodes; this window's longest frame pause was 756 ms
		// at load 7 to 9).
		for code := range c.codes {
			if !machinePauseCodes[code] {
				t.Errorf("a session on node b's arm got codes %v before any fault", c.codes)
				break
			}
		}
		c.mu.Unlock()
	}

	// Config through the gateway on node b's arm while node a restarts:
	// every acknowledged set is on node b.
	hd := "/arm3/" + armB + "/config/handedness"
	configDone, configStop := make(chan struct{}), make(chan struct{})
	var configErr error
	acked := 0
	go func() {
		defer close(configDone)
		for i := 0; ; i++ {
			select {
			case <-configStop:
				return
			default:
			}
			want := []string{"left", "right"}[i%2]
			st, err := postJSON(gw.url(hd), `"`+want+`"`)
			if err != nil || st != 200 {
				continue // not acknowledged: nothing is promised
			}
			acked++
			if got, err := getData(b.url(hd)); err != nil || got != want {
				configErr = fmt.Errorf("handedness %q acknowledged through the gateway, node b has %q (%v)", want, got, err)
				return
			}
		}
	}()

	connected := eventCount(gw, "device-connected", armA)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = a.cmd.Wait()
	waitLab(t, 10*time.Second, "node a's arm gone from the gateway", func() bool {
		ids, err := armIDs(gw)
		return err == nil && !ids[armA]
	})
	a = lab.node(labHostA)
	waitLab(t, 20*time.Second, "node a's arm back on the gateway", func() bool {
		ids, err := armIDs(gw)
		return err == nil && ids[armA] && eventCount(gw, "device-connected", armA) > connected
	})
	waitLab(t, 20*time.Second, "the controlling session's force on the restarted node", func() bool {
		return underGatewayForce(labArms(t, a)[armA], 0.3)
	})
	close(configStop)
	<-configDone
	if configErr != nil {
		t.Error(configErr)
	}
	t.Logf("%d config sets acknowledged through the gateway during the restart", acked)

	worst, worstAt := longestGap()
	for i, c := range onB {
		c.mu.Lock()
		// The codes of the machine's own pauses (machinePauseCodes): how
		// long they pause is bounded below. Any other code is a fault node
		// a's restart handed node b's clients.
		for code := range machinePauseCodes {
			delete(c.codes, code)
		}
		if c.frames == 0 || len(c.codes) > 0 {
			t.Errorf("session %d on node b's arm: %d frames, codes %v during node a's restart", i, c.frames, c.codes)
		}
		c.mu.Unlock()
	}
	t.Logf("longest pause in the frames of a session on node b's arm: %v in 3 s without a fault, %v during node a's restart (ending %v after the kill)",
		quietGap.Round(time.Millisecond), worst.Round(time.Millisecond), worstAt.Sub(killed).Round(time.Millisecond))
	// The restart must not stall node b's sessions beyond what the machine
	// itself does to them: 3 s, or five times the longest pause seen in 3 s
	// without a fault where a starved machine (CI under -race) pauses
	// them longer than that already.
	if bound := max(3*time.Second, 5*quietGap); worst > bound {
		t.Errorf("a session on node b's arm got no frame for %v while node a restarted (bound %v: the longest pause without a fault was %v)", worst, bound, quietGap)
	}

	for _, c := range append(onA, onB...) {
		c.stop()
	}
	now := settledGoroutines(t, gw, baseline, killed, "the clients left and node a restarted")
	t.Logf("gateway goroutines: %d before the clients and node a's restart, %d after", baseline, now)
}

// writerGaveUp is how long after a member died protoactor's connection
// writer of a peer tries its address (five attempts 2 s apart), with a
// margin: what it leaves behind is there by then.
const writerGaveUp = 12 * time.Second

// settledGoroutines waits until m, which lost a peer at died, has at most
// baseline goroutines (and a few: the health poller's connections come
// and go) and no session, and returns its count. It counts from
// writerGaveUp after died on, so that the count includes whatever the
// writer's attempts to reach the dead peer left; it fails after 30 s more.
func settledGoroutines(t *testing.T, m *labMember, baseline int, died time.Time, what string) int {
	t.Helper()
	time.Sleep(time.Until(died.Add(writerGaveUp))) // the writer's attempts are the scenario, not a condition
	start := time.Now()
	for {
		now, sessions, ok := gatewayProcess(m)
		if ok && sessions == 0 && now <= baseline+5 {
			return now
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("%s on %s: %d goroutines (%d before) and %d sessions %v after the peer died", what, m.host, now, baseline, sessions, time.Since(died).Round(time.Second))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// postJSON posts body to url and returns the status, without failing the
// test (it runs beside it).
func postJSON(url, body string) (int, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// getData is the data member of url's answer as a string.
func getData(url string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var env struct {
		Data string `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return "", err
	}
	return env.Data, nil
}

// A node SIGKILLed for good (a workstation switched off): the gateway
// keeps trying its address, so that it comes back when it answers again,
// and that must cost nothing that grows. Each of protoactor's rounds of
// attempts (five, 2 s apart) left four connections redialling the dead
// address and a dozen goroutines, for good: a gateway whose node was off
// for a weekend would have gathered tens of thousands.
func TestLabDeadNodeCostsTheGatewayNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and watches a gateway for 40 s")
	}
	node, gw, _ := newTestLab(t, buildBinary(t), labHostA, labHostGW).oneNode(t)
	if err := node.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = node.cmd.Wait()
	// After the writer's first round, and after two more.
	time.Sleep(time.Until(killed.Add(writerGaveUp))) // the writer's rounds are the scenario, not a condition
	first, _, ok := gatewayProcess(gw)
	if !ok {
		t.Fatal("the gateway's /stats does not answer")
	}
	time.Sleep(time.Until(killed.Add(writerGaveUp + 2*10*time.Second))) // two more rounds
	settled := settledGoroutines(t, gw, first, killed, "two more rounds of attempts to reach the dead node")
	t.Logf("gateway goroutines %v after the node's SIGKILL: %d; %v after: %d", writerGaveUp, first, time.Since(killed).Round(time.Second), settled)
}
