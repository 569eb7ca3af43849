//go:build linux

// A gateway stalled (SIGSTOP) while its client holds a node's arm with a
// force: real processes on 127.0.0.2 and 127.0.0.4, Linux only as the
// other lab tests.

package main

import (
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A gateway stopped for 3 s (a long GC or VM pause, a starved host) while
// its client holds 0.75 N on node a's arm and keeps sending it every
// 10 ms: the force ends on the node within its lease (nothing drives the
// arm meanwhile); once the gateway resumes, the arm is in its /devices and
// the client's frames again, and the client's next commands put the force
// back on the arm without a new claim. protoactor's topology later reports
// the node "left" (its heartbeat expired during the stall, about 20 s on)
// and never readmits its member id: the lab must stay whole past that, and
// a later restart of the node (SIGKILL, started again on the same host) is
// admitted again and driven by the same client.
func TestLabGatewayStall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and stops a real gateway")
	}
	lab := newTestLab(t, buildBinary(t), labHostA, labHostGW)
	node, gw, id := lab.oneNode(t)

	const z = 0.75
	var mu sync.Mutex
	framesWithArm := 0
	var lastFrame map[string]any
	allFrames, codes := 0, map[string]int{}
	conn := dialWS(t, "ws://"+gw.addr["http"]+"/")
	readJSON(t, conn) // the inventory
	holdSession(t, conn, func() string { return labForce(id, z) }, func(f map[string]any) {
		mu.Lock()
		lastFrame = f
		allFrames++
		for _, k := range []string{"errors", "warnings"} {
			for _, e := range asList(f[k]) {
				code, _ := path(e, "code").(string)
				codes[code]++
			}
		}
		mu.Unlock()
		for _, a := range asList(f["arm3"]) {
			if path(a, "device_id") == id {
				mu.Lock()
				framesWithArm++
				mu.Unlock()
			}
		}
	})
	frames := func() int { mu.Lock(); defer mu.Unlock(); return framesWithArm }
	forceOnNode := func() bool { return underGatewayForce(labArms(t, node)[id], z) }
	waitLab(t, 10*time.Second, "the client's force on the node's arm", forceOnNode)

	// The stall: the node's force must end within its lease (100 ms) plus
	// the ramp plus its loop's longest tick period, as after a SIGKILL.
	before, err := loopShards(http.DefaultClient, node)
	if err != nil {
		t.Fatal(err)
	}
	hang(t, gw)
	stopped := time.Now()
	var lastSeen time.Duration
	for time.Since(stopped) < 3*time.Second { // the stall is the scenario
		now := time.Since(stopped)
		if d := labArms(t, node)[id]; d != nil && cursorForceZ(d) != 0 {
			lastSeen = now
		}
		time.Sleep(2 * time.Millisecond)
	}
	after, err := loopShards(http.DefaultClient, node)
	if err != nil {
		t.Fatal(err)
	}
	if bound := 100*time.Millisecond + releaseRamp + longestPeriod(before, after); lastSeen > bound {
		t.Errorf("the force stayed on the node's arm %v into the gateway's stall; want zero within %v", lastSeen, bound)
	}
	if err := gw.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	backOnGateway := func(what string) {
		t.Helper()
		waitLab(t, 15*time.Second, what+": the arm in the gateway's /devices", func() bool {
			ids, err := armIDs(gw)
			return err == nil && ids[id]
		})
		n := frames()
		start := time.Now()
		for frames() <= n+10 {
			if time.Since(start) > 15*time.Second {
				mu.Lock()
				t.Fatalf("%s: the arm not in the client's frames within 15 s (%d frames with it, %d in all, codes %v); its last frame: %v", what, framesWithArm, allFrames, codes, lastFrame)
			}
			time.Sleep(10 * time.Millisecond)
		}
		took := waitLab(t, 15*time.Second, what+": the client's force back on the node's arm", forceOnNode)
		t.Logf("%s: force back on the node's arm %v after the arm was back on the gateway", what, took.Round(time.Millisecond))
	}
	backOnGateway("after the stall")

	// protoactor's heartbeat expiration (20 s) would end on the stall's
	// silence about 20 s after it, had the node dropped the stalled gateway
	// from its topology (it no longer does: actors/cluster healthPoller).
	// The client's frames keep coming throughout (one per message it sends).
	for end := time.Now().Add(25 * time.Second); time.Now().Before(end); {
		n, since := frames(), time.Now()
		for frames() <= n {
			if time.Since(since) > 5*time.Second {
				t.Fatalf("no frame for the client for 5 s, %v after the stall", time.Since(stopped).Round(time.Second))
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Second) // the wait is the scenario: past the heartbeat expiration
	}
	backOnGateway("past the topology's expiry")
	if ids, err := armIDs(gw); err != nil || !ids[id] {
		t.Fatalf("the arm is not on the gateway 25 s after its stall (%v, %v)", ids, err)
	}

	connected := eventCount(gw, "device-connected", id)
	if err := node.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = node.cmd.Wait()
	waitLab(t, 10*time.Second, "the killed node's arm gone from the gateway", func() bool {
		ids, err := armIDs(gw)
		return err == nil && !ids[id]
	})
	node = lab.node(labHostA)
	waitLab(t, 15*time.Second, "device-connected from the node's new process", func() bool {
		return eventCount(gw, "device-connected", id) > connected
	})
	backOnGateway("after the node's restart")
}
