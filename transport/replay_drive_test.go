package transport

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/protocol/mcap"
)

// drivenSessions is what Drive did with its sessions against a fresh
// service: when each dialled and closed, in dialling order.
type drivenSessions struct {
	mu             sync.Mutex
	dialed, closed []time.Time
}

// timedConn is a framesOver that notes when it closes.
type timedConn struct {
	*framesOver
	at   *drivenSessions
	i    int
	once sync.Once
}

func (c *timedConn) Close() error {
	c.once.Do(func() {
		c.at.mu.Lock()
		c.at.closed[c.i] = time.Now()
		c.at.mu.Unlock()
	})
	return c.framesOver.Close()
}

// driveOnAFreshService re-drives fl against a fresh service with arms
// simulated arms, with the tolerances and window of the effects replay
// tests, and returns Drive's outcome, its report and the sessions' dial
// and close times.
func driveOnAFreshService(t *testing.T, fl *mcap.File, arms int) (int, string, *drivenSessions, error) {
	t.Helper()
	fresh := startService(t, serviceConfig{arms: arms})
	defer fresh.stop()
	var report bytes.Buffer
	at := &drivenSessions{}
	d := recording.Drive{
		Dial: func() (recording.FrameConn, error) {
			conn, _, err := websocket.DefaultDialer.Dial(fresh.wsURL(), nil)
			if err != nil {
				return nil, err
			}
			at.mu.Lock()
			defer at.mu.Unlock()
			at.dialed = append(at.dialed, time.Now())
			at.closed = append(at.closed, time.Time{})
			return &timedConn{framesOver: &framesOver{conn: conn}, at: at, i: len(at.dialed) - 1}, nil
		},
		Tolerance: recording.Tolerance{Abs: 0.01, Force: 0.1, Angle: 2, Rel: 0.2,
			Ignore: []string{"cursor_position", "cursor_velocity", "angular_position", "angular_velocity", "body_orientation", "session_id"}},
		Window: replayWindow,
		Report: &report,
	}
	diffs, err := d.Run(fl)
	return diffs, report.String(), at, err
}

// pushField is a field effect pushing the cursor along x with fx newtons.
func pushField(fx float64) string {
	return fmt.Sprintf(`{"set":[{"id":"push","type":"field","force":{"x":%g,"y":0,"z":0},"origin":{"x":0,"y":0,"z":0},"radius":5,"valid_ms":5000}]}`, fx)
}

// stopRecordingFile stops the recording POST answered with started and
// reads its file.
func stopRecordingFile(t *testing.T, ts *testService, started reply) *mcap.File {
	t.Helper()
	r := ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(int(num(path(started.data(), "id")))), "")
	if r.status != 200 {
		t.Fatalf("DELETE: %v", r)
	}
	return recordedFile(t, path(started.data(), "path").(string))
}

// Two engines recorded together, each on its own arm, the second refused
// device_busy first on the first's arm, replay together: both sessions
// open at once, and every frame of each shows the other's arm as it was.
// Drive used to re-drive the sessions one after the other, each on its own
// clock: each replayed session saw the other's arm idle, and the busy
// refusal became a takeover.
func TestReplayDriveSessionsRecordedTogetherReplayTogether(t *testing.T) {
	rec := startService(t, serviceConfig{arms: 2, recordDir: t.TempDir()})
	started := rec.startRecording(`{"name":"two"}`)
	a0, a1 := rec.armIDs[0], rec.armIDs[1]
	ca := rec.dial(t, rec.wsURL())
	ca.expect()
	cb := rec.dial(t, rec.wsURL())
	cb.expect()
	ca.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	cb.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	if f := ca.roundTrip(effectsMsg(a0, pushField(0.3))); f["errors"] != nil {
		t.Fatalf("A: %v", f["errors"])
	}
	if f := cb.roundTrip(effectsMsg(a0, pushField(-0.3))); f["errors"] == nil {
		t.Fatalf("B on A's arm: no error: %v", f)
	}
	if f := cb.roundTrip(effectsMsg(a1, pushField(-0.3))); f["errors"] != nil {
		t.Fatalf("B: %v", f["errors"])
	}
	for end := time.Now().Add(800 * time.Millisecond); time.Now().Before(end); {
		time.Sleep(enginePace)
		ca.roundTrip(effectsMsg(a0, `{}`))
		cb.roundTrip(effectsMsg(a1, `{}`))
	}
	fl := stopRecordingFile(t, rec, started)
	rec.stop()

	diffs, report, at, err := driveOnAFreshService(t, fl, 2)
	if err != nil {
		t.Fatalf("drive: %v\n%s", err, report)
	}
	if len(at.dialed) != 2 || !at.dialed[1].Before(at.closed[0]) {
		t.Errorf("the sessions recorded together were not open together in the replay: dialled %v, closed %v", at.dialed, at.closed)
	}
	if diffs != 0 {
		t.Fatalf("two sessions recorded together replay with %d differences:\n%s", diffs, report)
	}
}

// Two engines one after the other on the same arm, the second connecting
// 300 ms after the first closed, replay with that gap: the second session
// is dialled 300 ms after the first one closes, not the moment it closes
// (while the first one's force still ramps out), as Drive used to.
func TestReplayDriveSessionsOneAfterTheOtherKeepTheirGap(t *testing.T) {
	const gap = 300 * time.Millisecond
	rec := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	started := rec.startRecording(`{"name":"handover"}`)
	id := rec.armIDs[0]
	for _, fx := range []float64{0.5, -0.5} {
		c := rec.dial(t, rec.wsURL())
		c.expect()
		c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
		if f := c.roundTrip(effectsMsg(id, pushField(fx))); f["errors"] != nil {
			t.Fatalf("field: %v", f["errors"])
		}
		for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); {
			time.Sleep(enginePace)
			c.roundTrip(effectsMsg(id, `{}`))
		}
		_ = c.conn.Close()
		time.Sleep(gap)
	}
	fl := stopRecordingFile(t, rec, started)
	rec.stop()

	diffs, report, at, err := driveOnAFreshService(t, fl, 1)
	if err != nil {
		t.Fatalf("drive: %v\n%s", err, report)
	}
	if len(at.dialed) != 2 {
		t.Fatalf("%d sessions dialled, want 2", len(at.dialed))
	}
	// The recorded gap runs from the session-ended event, which comes a
	// little after the socket closed: most of the gap is a bound no
	// loaded machine makes shorter.
	if got := at.dialed[1].Sub(at.closed[0]); got < gap*2/3 {
		t.Errorf("the second session was dialled %v after the first closed, recorded %v", got, gap)
	}
	if diffs != 0 {
		t.Fatalf("two sessions one after the other replay with %d differences:\n%s", diffs, report)
	}
}

// A recording started while the engine was connected (POST /recordings
// mid-session, as docs/recording.md's trial-3) lacks what the session
// declared before: Drive refuses it, saying why and what to do, and dials
// nothing, on either WebSocket. It used to take the first recorded frame for
// the inventory, drop the last message and report hundreds of
// differences; a 3.0 session's (every 3.0 frame keys devices by id, as its
// inventory does) it took for one recorded from its start.
func TestReplayDriveRefusesASessionRecordedMidway(t *testing.T) {
	for _, socket := range []struct {
		name string
		url  func(ts *testService) string
		msg  func(id string) string
	}{
		{"3.x", (*testService).wsURL, func(id string) string { return effectsMsg(id, `{}`) }},
		{"3.0", (*testService).legacyWS, func(id string) string { return `{"inverse3":{"` + id + `":{}}}` }},
	} {
		t.Run(socket.name, func(t *testing.T) {
			rec := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
			id := rec.armIDs[0]
			c := rec.dial(t, socket.url(rec))
			c.expect()
			c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
			if socket.name == "3.x" {
				if f := c.roundTrip(effectsMsg(id, pushField(0.3))); f["errors"] != nil {
					t.Fatalf("field: %v", f["errors"])
				}
			}
			started := rec.startRecording(`{"name":"trial-3"}`)
			for range 30 {
				time.Sleep(enginePace)
				if f := c.roundTrip(socket.msg(id)); f["errors"] != nil {
					t.Fatalf("message: %v", f["errors"])
				}
			}
			fl := stopRecordingFile(t, rec, started)
			rec.stop()
			if len(recording.MessagesOf(fl, recording.KindFrame)) == 0 {
				t.Fatal("no session recorded")
			}

			diffs, report, at, err := driveOnAFreshService(t, fl, 1)
			if !errors.Is(err, recording.ErrSessionRecordedMidway) {
				t.Fatalf("drive: %v, %d differences, want ErrSessionRecordedMidway\n%s", err, diffs, report)
			}
			if len(at.dialed) != 0 {
				t.Errorf("%d sessions dialled for a recording it refuses", len(at.dialed))
			}
		})
	}
}
