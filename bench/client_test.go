package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

func TestFrameChecksDoNotAllocate(t *testing.T) {
	c := &client{sessionID: 7, result: ClientResult{rtt: newRTTHistogram()}}
	frame := []byte(`{"session_id":7,"arm3":[{"device_id":"049D","state":{"control_mode":"force"},"status":{"ready":true}}],"grip":[]}`)
	allocs := testing.AllocsPerRun(1000, func() { c.check(frame, false) })
	if allocs != 0 {
		t.Errorf("per-frame checks allocate %.1f times, want 0", allocs)
	}
	if c.result.OutOfOrder+c.result.ErrorFrames != 0 {
		t.Errorf("a good frame failed the checks: %+v", c.result)
	}
}

func TestPadTo(t *testing.T) {
	f := capturedFrames{state: []byte(`{"a":1}`)}
	f.padTo(12)
	if string(f.state) != `{"a":1}     ` {
		t.Errorf("padded frame %q, want 5 trailing spaces", f.state)
	}
	f.padTo(3) // never shortens
	if len(f.state) != 12 {
		t.Errorf("padTo shortened the frame to %d bytes", len(f.state))
	}
}

// BenchmarkLockStepEcho is the client's own cost per round trip against
// the in-process echo server with a 600-byte frame: the floor under every
// RTT hapticbench reports. allocs/op are gorilla/websocket's per-message
// reader and writer objects on both ends; the client's checks add none.
func BenchmarkLockStepEcho(b *testing.B) {
	state := append([]byte(`{"session_id":1,"arm3":[],"grip":[]}`), bytes.Repeat([]byte(" "), 600-36)...)
	echo, err := startEcho(capturedFrames{inventory: []byte(`{"session_id":1,"arm3":[{"device_id":"049D","config":{}}],"grip":[]}`), state: state})
	if err != nil {
		b.Fatal(err)
	}
	defer echo.close()
	c, err := dialClient(context.Background(), echo.url, 0, RoleController, 0, 5*time.Second, subscribeTo{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.close()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.conn.WriteMessage(websocket.TextMessage, c.message); err != nil {
			b.Fatal(err)
		}
		frame, err := c.readFrame()
		if err != nil {
			b.Fatal(err)
		}
		c.check(frame, false)
	}
	if c.result.OutOfOrder+c.result.ErrorFrames != 0 {
		b.Fatalf("echo frames failed the checks: %+v", c.result)
	}
}

func TestSubscribeMessage(t *testing.T) {
	tests := []struct {
		name string
		sub  subscribeTo
		want string
	}{
		{"nothing", subscribeTo{}, ""},
		{"own arm", subscribeTo{ownArm: true}, `{"session":{"configure":{"subscribe":{"devices":[{"device_type":"arm3","device_id":"049D"}]}}}}`},
		{"state fields", subscribeTo{state: []string{"cursor_position", "cursor_velocity"}}, `{"session":{"configure":{"subscribe":{"state":["cursor_position","cursor_velocity"]}}}}`},
		{"both", subscribeTo{ownArm: true, state: []string{"cursor_position"}}, `{"session":{"configure":{"subscribe":{"devices":[{"device_type":"arm3","device_id":"049D"}],"state":["cursor_position"]}}}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(tc.sub.message("049D")); got != tc.want {
				t.Errorf("message = %s, want %s", got, tc.want)
			}
		})
	}
}
