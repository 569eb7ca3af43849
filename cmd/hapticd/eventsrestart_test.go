package main

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// TestEventsResumeAcrossARestart: a tool watching the events saw hapticd's
// first run up to its newest event; hapticd is stopped and started again
// (the real binary, on the same state directory) with one arm more, so the
// new run has published more events than the tool saw before it resumes.
// Resuming with the seq it last saw, on the socket and over GET /events,
// the tool is told of the restart and gets every device-connected of the
// new run. Before runs had their own first seq, it got the new run's
// events after that seq only, and no word of the restart.
func TestEventsResumeAcrossARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary twice")
	}
	bin := buildBinary(t)
	state := t.TempDir()
	// connected waits until the run's ring holds n device-connected events
	// and returns the seq of its newest event.
	connected := func(p *process, n int) uint64 {
		var newest uint64
		hwtest.EventuallyNil(t, 20*time.Second, fmt.Sprintf("%d device-connected events", n), func() error {
			_, env := httpDo(t, "GET", p.url("/events?since=0"), "")
			evs, _ := dig2(env, "data", "events").([]any)
			if got := countNamed(evs, "device-connected"); got != n {
				return fmt.Errorf("%d device-connected among %d events", got, len(evs))
			}
			newest = uint64(dig(env, "data", "next_seq")) - 1
			return nil
		})
		return newest
	}

	first := startProcess(t, bin, "--state-dir", state, "--sim-arms", "2", "--sim-grips", "0")
	seen := connected(first, 2)
	if err := first.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := first.cmd.Wait(); err != nil {
		t.Fatalf("the first run's exit after SIGTERM: %v", err)
	}

	second := startProcess(t, bin, "--state-dir", state, "--sim-arms", "3", "--sim-grips", "0")
	connected(second, 3)

	status, env := httpDo(t, "GET", second.url(fmt.Sprintf("/events?since=%d", seen)), "")
	evs, _ := dig2(env, "data", "events").([]any)
	if status != 200 || dig2(env, "data", "restarted") != true || countNamed(evs, "device-connected") != 3 {
		t.Fatalf("GET /events?since=%d (the first run's newest): %d %v; want restarted and the new run's 3 device-connected", seen, status, env)
	}

	c := dialWS(t, fmt.Sprintf("ws://%s/?since=%d", second.addr["events"], seen))
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var frames []any
	for len(frames) < 1+len(evs) {
		_, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("events socket after %d frames: %v", len(frames), err)
		}
		var f any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	if dig2(frames[0], "name") != "service-restarted" || uint64(dig(frames[0], "data", "since")) != seen {
		t.Fatalf("the socket's first frame %v, want service-restarted {since:%d}", frames[0], seen)
	}
	if n := countNamed(frames[1:], "device-connected"); n != 3 {
		t.Fatalf("the socket replayed %d device-connected of the new run, want 3: %v", n, frames[1:])
	}
}

func countNamed(evs []any, name string) int {
	n := 0
	for _, e := range evs {
		if dig2(e, "name") == name {
			n++
		}
	}
	return n
}
