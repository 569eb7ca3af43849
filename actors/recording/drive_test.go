package recording

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/protocol/mcap"
)

// answeringConn is a session with a service as Drive sees it: the
// inventory on dial, then one frame per message sent, as the service's
// simulation channel answers.
type answeringConn struct {
	frame  string
	queued chan string
}

func newAnsweringConn(inventory, frame string) *answeringConn {
	c := &answeringConn{frame: frame, queued: make(chan string, 1024)}
	c.queued <- inventory
	return c
}

func (c *answeringConn) Send([]byte) error { c.queued <- c.frame; return nil }

func (c *answeringConn) Receive(timeout time.Duration) ([]byte, error) {
	select {
	case f := <-c.queued:
		return []byte(f), nil
	case <-time.After(timeout):
		return nil, errors.New("no frame")
	}
}

func (c *answeringConn) Close() error { return nil }

// tap is one client message or frame a session's connection hands the
// recorder, as transport's does: the inventory with session 0.
type tap struct {
	kind    string
	session uint64
	json    string
}

// recordTaps records taps with a real recorder and reads its file back.
func recordTaps(t *testing.T, taps []tap) *mcap.File {
	t.Helper()
	rs := New(Config{Service: startBareService(t), Dir: t.TempDir(), Log: zerolog.Nop()})
	info, err := rs.Start(Options{Name: "drive"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range taps {
		rs.Session(tp.kind, tp.session, []byte(tp.json))
	}
	stopped, _ := rs.Stop(info.ID)
	f, _, err := Load(stopped.Path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Frames of both WebSockets: a 3.x full-state frame holds all its
// inventory holds, a 3.0 state frame keys devices by id as its inventory.
const (
	inventory3x = `{"session_id":1,"arm3":[{"id":"049D","config":{},"state":{},"status":{}}],"session":{"config":{}}}`
	fullState3x = `{"session_id":1,"arm3":[{"id":"049D","config":{},"state":{},"status":{}}],"session":{"config":{}}}`
	state3x     = `{"session_id":1,"arm3":[{"id":"049D","state":{},"status":{}}]}`
	inventory30 = `{"session_id":1,"inverse3":{"049D":{"config":{},"state":{},"status":{}}},"session":{"config":{}}}`
	state30     = `{"session_id":1,"inverse3":{"049D":{"state":{},"status":{}}}}`
)

// A session connected before the recording started is refused before
// anything is dialled, whatever its first recorded frame holds: a 3.x frame
// answering force_render_full_state carries the session view and configs
// as the inventory does, and every 3.0 frame keys devices by id as its
// inventory does. Drive used to take either for the inventory and re-drive
// the session without what it had declared before.
func TestDriveRefusesEverySessionRecordedMidway(t *testing.T) {
	for _, tc := range []struct {
		name       string
		taps       []tap
		inv, frame string
		midway     bool
	}{
		{"3.x from its start", []tap{{KindFrame, 0, inventory3x}, {KindClient, 1, `{}`}, {KindFrame, 1, state3x}}, inventory3x, state3x, false},
		{"3.x midway, first a full-state frame", []tap{{KindFrame, 1, fullState3x}, {KindClient, 1, `{}`}, {KindFrame, 1, state3x}}, inventory3x, state3x, true},
		{"3.0 from its start", []tap{{KindFrame, 0, inventory30}, {KindClient, 1, `{}`}, {KindFrame, 1, state30}}, inventory30, state30, false},
		{"3.0 midway, first a state frame", []tap{{KindFrame, 1, state30}, {KindClient, 1, `{}`}, {KindFrame, 1, state30}}, inventory30, state30, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := recordTaps(t, tc.taps)
			var dialled atomic.Int32
			dial := func() (FrameConn, error) { dialled.Add(1); return newAnsweringConn(tc.inv, tc.frame), nil }
			_, err := Drive{Dial: dial, DialLegacy: dial, Window: 20 * time.Millisecond}.Run(f)
			if tc.midway {
				if !errors.Is(err, ErrSessionRecordedMidway) || dialled.Load() != 0 {
					t.Fatalf("%v, %d sessions dialled; want ErrSessionRecordedMidway before any dial", err, dialled.Load())
				}
				return
			}
			if err != nil || dialled.Load() != 1 {
				t.Fatalf("%v, %d sessions dialled; want the session re-driven", err, dialled.Load())
			}
		})
	}
}
