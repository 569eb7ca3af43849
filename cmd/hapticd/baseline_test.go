package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/protocol"
)

// TestBaselineArmsSplitsArmsOverThreads: the bare loop steps every arm on
// the threads asked for and reports ticks, a per-step cost and its passes'
// durations, for each scripted motion the service offers.
func TestBaselineArmsSplitsArmsOverThreads(t *testing.T) {
	for _, motion := range []string{"none", "circle", "random"} {
		var out bytes.Buffer
		err := baselineArms([]string{"--arms", "5", "--threads", "2", "--loop-hz", "500", "--duration", "300ms", "--motion", motion, "--json"}, nil, &out)
		if err != nil {
			t.Fatalf("motion %s: %v", motion, err)
		}
		var b protocol.BaselineArms
		if err := json.Unmarshal(out.Bytes(), &b); err != nil {
			t.Fatalf("motion %s: output %q: %v", motion, out.String(), err)
		}
		if b.Arms != 5 || b.LoopHz != 500 || b.Ticks == 0 || b.NsPerStep <= 0 || b.PeriodUsP50 <= 0 {
			t.Fatalf("motion %s: %+v, want 5 arms at 500 Hz that ticked", motion, b)
		}
		// Every tick's pass is counted, in order up to the longest.
		p := b.Busy
		if p.Count != b.Ticks || p.MaxUs <= 0 || p.P50Us > p.P90Us || p.P90Us > p.P99Us || p.P99Us > p.P999Us || p.P999Us > p.MaxUs {
			t.Fatalf("motion %s: busy %+v with %d ticks, want a pass a tick, percentiles ascending to a positive max", motion, p, b.Ticks)
		}
	}
	if err := baselineArms([]string{"--arms", "5", "--threads", "0"}, nil, &bytes.Buffer{}); err == nil {
		t.Fatal("--threads 0 was accepted")
	}
}

// TestBaselineArmsInsideAnEcho: with --inventory and --state the bare loop
// runs inside an echo baseline's process. It prints the echo's URL, the
// echo answers the lock-step protocol with the files' frames, the arms are
// stepped once a line arrives on stdin and the result printed, and the echo
// serves until stdin closes.
func TestBaselineArmsInsideAnEcho(t *testing.T) {
	dir := t.TempDir()
	inventory, state := `{"session_id":1,"inverse3":[{"device_id":"049D","config":{}}]}`, `{"session_id":1,"inverse3":[]}`
	invFile, stateFile := filepath.Join(dir, "inventory.json"), filepath.Join(dir, "state.json")
	if err := os.WriteFile(invFile, []byte(inventory), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stateFile, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- baselineArms([]string{"--arms", "3", "--loop-hz", "500", "--duration", "200ms", "--json",
			"--inventory", invFile, "--state", stateFile}, stdinR, stdoutW)
		stdoutW.Close()
	}()
	lines := bufio.NewScanner(stdoutR)
	if !lines.Scan() || !strings.HasPrefix(lines.Text(), "ws://127.0.0.1:") {
		t.Fatalf("first line %q, want the echo's URL", lines.Text())
	}
	ws, _, err := websocket.DefaultDialer.Dial(lines.Text(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	exchange := func(msg, want string) {
		t.Helper()
		if msg != "" {
			if err := ws.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatal(err)
			}
		}
		if _, got, err := ws.ReadMessage(); err != nil || string(got) != want {
			t.Fatalf("after %q: frame %q, %v; want %q", msg, got, err, want)
		}
	}
	exchange("", inventory)
	exchange(`{"inverse3":[{"device_id":"049D","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`, state)
	exchange(`{"session":{"force_render_full_state":{}}}`, inventory)

	if _, err := io.WriteString(stdinW, "go\n"); err != nil {
		t.Fatal(err)
	}
	if !lines.Scan() {
		t.Fatalf("no result line: %v", lines.Err())
	}
	var b protocol.BaselineArms
	if err := json.Unmarshal(lines.Bytes(), &b); err != nil || b.Arms != 3 || b.Ticks == 0 {
		t.Fatalf("result %q (%v), want 3 arms that ticked", lines.Text(), err)
	}
	exchange(`{}`, state) // still serving after the loop
	stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("baseline-arms did not return after stdin closed")
	}
}
