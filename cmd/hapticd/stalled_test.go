//go:build linux

// The service is stopped with SIGSTOP: Linux only, as the lab tests.

package main

import (
	"encoding/json"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestCommandsQueuedWhileTheServiceStalledPutNoForceBack: a client holds a
// force, the service stalls (SIGSTOP: a stopped VM, a starved or swapping
// host), the client sends on for a while and then goes quiet. When the
// service runs again it reads the commands still queued in the socket;
// each arrived longer than the lease before it is read, so none may renew
// the lease and put the force back: each is answered with stale_command.
// The next command the client sends afresh takes control again.
//
// On the code before, every queued command renewed a fresh lease from its
// reading: the arm was at the client's 2 N again some 400 ms after the
// client went quiet, for another lease (review40).
func TestCommandsQueuedWhileTheServiceStalledPutNoForceBack(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary")
	}
	bin := buildBinary(t)
	m := &labMember{process: startProcess(t, bin, "--state-dir", t.TempDir(), "--sim", "inverse3=1")}
	var id string
	for k := range labArms(t, m) {
		id = k
	}
	if id == "" {
		t.Fatal("no simulated arm in GET /devices")
	}
	conn := dialWS(t, "ws://"+m.addr["http"]+"/")
	readJSON(t, conn) // the inventory

	// The client's frames, in order, with whether each says stale_command
	// and whether the arm in it is under this session's force.
	type answer struct{ stale, other bool }
	var mu sync.Mutex
	var answers []answer
	go func() {
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var f map[string]any
			if json.Unmarshal(b, &f) != nil {
				continue
			}
			var a answer
			for _, w := range asList(f["warnings"]) {
				if c, _ := path(w, "code").(string); c == "stale_command" {
					a.stale = true
				} else {
					a.other = true
				}
			}
			a.other = a.other || len(errorCodes(f)) > 0
			mu.Lock()
			answers = append(answers, a)
			mu.Unlock()
		}
	}()
	answered := func() int { mu.Lock(); defer mu.Unlock(); return len(answers) }
	sent := 0
	send := func() {
		t.Helper()
		if err := conn.WriteMessage(websocket.TextMessage, []byte(labForce(id, 2))); err != nil {
			t.Fatal(err)
		}
		sent++
	}

	// Hold 2 N (the default lease, 100 ms) until the arm shows it.
	waitLab(t, 20*time.Second, "the arm under the client's 2 N", func() bool {
		send()
		time.Sleep(5 * time.Millisecond)
		f, _ := path(labArms(t, m)[id], "state", "current_cursor_force", "z").(float64)
		return f > 1.9
	})
	waitLab(t, 20*time.Second, "every command before the stall answered", func() bool { return answered() == sent })
	before := sent

	// The stall: the client sends on for 200 ms, then is quiet for 400 ms
	// (four leases) before the service runs again.
	hang(t, m)
	for range 20 {
		send()
		time.Sleep(10 * time.Millisecond)
	}
	queued := sent - before
	time.Sleep(400 * time.Millisecond)
	if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitLab(t, 20*time.Second, "every queued command answered", func() bool { return answered() == sent })
	mu.Lock()
	got := slices.Clone(answers[before:])
	mu.Unlock()
	for i, a := range got {
		if !a.stale || a.other {
			t.Errorf("queued command %d of %d: answered with stale_command %v, other warnings or errors %v; want stale_command alone", i+1, queued, a.stale, a.other)
		}
	}

	// The arm is free of the queued force, and a fresh command takes it.
	waitLab(t, 20*time.Second, "the arm at rest after the stall", func() bool {
		f, _ := path(labArms(t, m)[id], "state", "current_cursor_force", "z").(float64)
		return f == 0
	})
	waitLab(t, 20*time.Second, "a fresh command applied with no warning", func() bool {
		send()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		defer mu.Unlock()
		last := answers[len(answers)-1]
		return len(answers) == sent && !last.stale && !last.other
	})
	waitLab(t, 20*time.Second, "the arm under the client's 2 N again", func() bool {
		send()
		time.Sleep(5 * time.Millisecond)
		f, _ := path(labArms(t, m)[id], "state", "current_cursor_force", "z").(float64)
		return f > 1.9
	})
}
