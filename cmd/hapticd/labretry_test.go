//go:build linux

// A config set through the gateway to a node that hangs and is then
// killed and restarted: real processes on 127.0.0.2-4, Linux only as the
// other lab tests.

package main

import (
	"syscall"
	"testing"
	"time"
)

// A set through the gateway to a hung node (SIGSTOP) that is then killed
// and restarted at once: a set answered 503 is not applied by the node's
// new process (its old one never took it up), and once the arm is back a
// read through the gateway answers what the node has. The gateway's
// request to a cluster member goes through the device's cluster identity,
// and protoactor's cluster Request retries a dead letter with a fresh
// identity lookup, which could find the new process; the kill comes at
// delays after the set so that the new process joins around the
// request's end, the last after the gateway dropped the node for its
// silence (1 s), so that the set ends with the kill, not the 2 s. (A set
// whose answer is 200 was applied by a process of the node.)
func TestLabConfigToAHungNodeNotAppliedByItsNextProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and restarts a real process")
	}
	lab := newTestLab(t, buildBinary(t), labHostA, labHostGW)
	node, gw, id := lab.oneNode(t)
	hd := "/arm3/" + id + "/config/handedness"
	delays := []time.Duration{200 * time.Millisecond, 600 * time.Millisecond, 1300 * time.Millisecond}
	for i := range labReps(t, 1) * len(delays) {
		delay := delays[i%len(delays)]
		waitLab(t, 20*time.Second, "a set of \"right\" acknowledged through the gateway", func() bool {
			st, _ := postJSON(gw.url(hd), `"right"`)
			return st == 200
		})
		connected := eventCount(gw, "device-connected", id)
		hang(t, node)
		sent := time.Now()
		answered := make(chan int, 1)
		var took time.Duration
		go func() {
			st, _ := postJSON(gw.url(hd), `"left"`)
			took = time.Since(sent)
			answered <- st
		}()
		time.Sleep(delay) // the set waits on the hung node: the scenario
		if err := node.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = node.cmd.Wait()
		node = lab.node(labHostA)
		ready := time.Since(sent)
		var status int
		select {
		case status = <-answered:
		case <-time.After(30 * time.Second):
			t.Fatal("the set to the hung node was never answered")
		}
		waitLab(t, 20*time.Second, "the arm back on the gateway from the node's new process", func() bool {
			ids, err := armIDs(gw)
			return err == nil && ids[id] && eventCount(gw, "device-connected", id) > connected
		})
		back := time.Since(sent)
		// A retry of the set lands within the request's 2 s and its
		// lookup's 5 s of the send: past them, nothing more can come.
		time.Sleep(time.Until(sent.Add(8 * time.Second)))
		// Each read until answered 200: a read through the gateway asks
		// the node, and either may answer 503 while loaded (docs/lab.md),
		// whose data getData took for handedness "".
		onNode, onGW := answeredData(t, node, hd), answeredData(t, gw, hd)
		t.Logf("kill %v after the set: answered %d after %v; new process ready %v and its arm back %v after the set; handedness on the node %q, through the gateway %q",
			delay, status, took.Round(time.Millisecond), ready.Round(time.Millisecond), back.Round(time.Millisecond), onNode, onGW)
		if status != 200 && onNode != "right" {
			t.Errorf("kill %v after the set: the node's new process has handedness %q: the set answered %d, which its old process never took up, was applied", delay, onNode, status)
		}
		if onGW != onNode {
			t.Errorf("kill %v after the set: the gateway answers handedness %q, the node has %q", delay, onGW, onNode)
		}
	}
}
