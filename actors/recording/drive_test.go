package recording

import (
	"errors"
	"fmt"
	"strings"
	"sync"
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

// recordedItem is one message of a hand-made recording: a session's
// client message or frame at a recorded time.
type recordedItem struct {
	session string
	kind    string
	ms      uint64
	json    string
}

// recordingOf makes a recording of items, as a recorder whose queue may
// have dropped some writes it.
func recordingOf(items []recordedItem) *mcap.File {
	f := &mcap.File{Channels: map[uint16]mcap.Channel{}}
	ids := map[string]uint16{}
	for _, it := range items {
		ck := it.kind + "/" + it.session
		id, ok := ids[ck]
		if !ok {
			id = uint16(len(ids) + 1)
			ids[ck] = id
			f.Channels[id] = mcap.Channel{ID: id, Metadata: map[string]string{"kind": it.kind, "key": it.session}}
		}
		ns := it.ms * uint64(time.Millisecond)
		data := fmt.Sprintf(`{"session":%s,"time_ns":%d,"message":%s}`, it.session, ns, it.json)
		f.Messages = append(f.Messages, mcap.Message{ChannelID: id, LogTime: ns, Data: []byte(data)})
	}
	return f
}

// A recording that lost a client message or a frame of a session (the
// recorder's bounded queue dropped it) is refused, saying where, and the
// drive ends. With a lost message, Drive used to hang for ever: session 1's
// frame at 10 ms answers a message not in the file, session 2 about to
// send at 30 ms waited for session 1 to read it, which session 1 does only
// once it sends at 50 ms, for which it waited on session 2. With a lost
// frame, it skipped the last message and compared each later frame with
// the one recorded after it. A recording cut before the last message's
// frame still re-drives.
func TestDriveRefusesARecordingWithGaps(t *testing.T) {
	const inv, st = `{"session_id":1,"session":{},"arm3":[]}`, `{"session_id":1,"arm3":[]}`
	for _, tc := range []struct {
		name  string
		items []recordedItem
		gap   string // in the error; "" for none
	}{
		{"a client message lost, two sessions", []recordedItem{
			{"1", KindFrame, 0, inv},
			{"2", KindFrame, 1, inv},
			{"1", KindFrame, 10, st}, // its client message at 9 ms was dropped
			{"2", KindClient, 30, `{}`},
			{"2", KindFrame, 31, st},
			{"1", KindClient, 50, `{}`},
			{"1", KindFrame, 51, st},
		}, "session 1: " + ErrRecordingHasGaps.Error() + ": its frame 1, 10ms into the recording, answers no recorded client message"},
		{"a frame lost", []recordedItem{
			{"1", KindFrame, 0, inv},
			{"1", KindClient, 10, `{}`},
			{"1", KindFrame, 11, st},
			{"1", KindClient, 20, `{}`}, // its frame at 21 ms was dropped
			{"1", KindClient, 30, `{}`},
			{"1", KindFrame, 31, st},
		}, "its client message 2, 20ms into the recording, has no recorded frame"},
		{"cut before the last frame", []recordedItem{
			{"1", KindFrame, 0, inv},
			{"1", KindClient, 10, `{}`},
			{"1", KindFrame, 11, st},
			{"1", KindClient, 20, `{}`},
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dialled atomic.Int32
			d := Drive{
				Dial:   func() (FrameConn, error) { dialled.Add(1); return newAnsweringConn(inv, st), nil },
				Window: 20 * time.Millisecond,
			}
			done := make(chan error, 1)
			go func() { _, err := d.Run(recordingOf(tc.items)); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("Drive.Run still running 20 s into a recording of 51 ms")
			}
			if tc.gap == "" {
				if err != nil {
					t.Fatalf("a recording without gaps: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrRecordingHasGaps) || !strings.Contains(err.Error(), tc.gap) || dialled.Load() != 0 {
				t.Fatalf("%v, %d sessions dialled; want ErrRecordingHasGaps with %q before any dial", err, dialled.Load(), tc.gap)
			}
		})
	}
}

// The timeline never waits for a session to read a recorded frame that no
// message it sends before then brings: such a wait could point forward in
// recorded time (that session sends its next message only once the waiting
// one has) and never end. Run refuses such a recording first; the timeline
// holds on its own.
func TestTimelineWaitsOnlyForFramesEarlierMessagesBring(t *testing.T) {
	at := func(ms uint64) mcap.Message { return mcap.Message{LogTime: ms * uint64(time.Millisecond)} }
	tl := &timeline{closeAt: []uint64{uint64(time.Second), uint64(time.Second)}, progress: []sessionProgress{
		// Read its inventory; its frame at 10 ms answers a message lost
		// from the recording, its next message is at 50 ms.
		{frames: []mcap.Message{at(0), at(10), at(51)}, in: []mcap.Message{at(50)}, read: 1},
		{frames: []mcap.Message{at(1), at(31)}, in: []mcap.Message{at(30)}, read: 1},
	}}
	tl.changed = sync.NewCond(&tl.mu)
	done := make(chan struct{})
	go func() { defer close(done); tl.after(1, uint64(30*time.Millisecond)) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		tl.update(0, func(p *sessionProgress) { p.closed = true }) // let it end
		<-done
		t.Fatal("session 2, sending at 30 ms, waits for session 1 to read its frame at 10 ms, which no message of session 1 before 30 ms brings")
	}
}
