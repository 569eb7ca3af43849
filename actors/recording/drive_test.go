package recording

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/hw/hwtest"
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
func recordingOf(items []recordedItem) *mcap.File { return recordingIn(time.Millisecond, items) }

// recordingIn makes a recording of items whose times (ms) count units.
func recordingIn(unit time.Duration, items []recordedItem) *mcap.File {
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
		ns := it.ms * uint64(unit)
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
	tl := newTimeline([]sessionProgress{
		// Read its inventory; its frame at 10 ms answers a message lost
		// from the recording, its next message is at 50 ms.
		{frames: []mcap.Message{at(0), at(10), at(51)}, in: []mcap.Message{at(50)}, read: 1},
		{frames: []mcap.Message{at(1), at(31)}, in: []mcap.Message{at(30)}, read: 1},
	}, []uint64{uint64(time.Second), uint64(time.Second)})
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

// sessionLog is what a service sees of the sessions Drive re-drives, in
// the order it sees it: each connection's dial, frames read and messages
// sent.
type sessionLog struct {
	mu     sync.Mutex
	events []connEvent
}

type connEvent struct {
	conn *loggedConn
	kind string // "dial", "read" or "send"
	msg  string // what a send sent
}

func (l *sessionLog) add(e connEvent) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

// loggedConn answers as answeringConn does, logs what it does and may
// take a while to hand over a frame, as a loaded service or machine does.
type loggedConn struct {
	*answeringConn
	log  *sessionLog
	slow func() time.Duration
}

func (c *loggedConn) Send(msg []byte) error {
	c.log.add(connEvent{conn: c, kind: "send", msg: string(msg)})
	return c.answeringConn.Send(msg)
}

func (c *loggedConn) Receive(timeout time.Duration) ([]byte, error) {
	if d := c.slow(); d > 0 {
		time.Sleep(d) // disorder only: the test waits on the drive's end
	}
	b, err := c.answeringConn.Receive(timeout)
	if err == nil {
		c.log.add(connEvent{conn: c, kind: "read"})
	}
	return b, err
}

// Many sessions re-driven at once keep the recorded order: a session sends
// a message, or connects, only once every other session has read each
// frame recorded before that message, however slowly each one's frames
// come. 40 lock-step sessions, recorded interleaved at random.
func TestDriveKeepsTheRecordedOrderAcrossManySessions(t *testing.T) {
	const sessions, messages = 40, 8
	const inv, st = `{"session_id":1,"session":{},"arm3":[]}`, `{"session_id":1,"arm3":[]}`
	rng := rand.New(rand.NewPCG(9, 9))
	// Each session's next step: its inventory, then a message and its
	// frame, messages times; recorded 20 µs apart in a random interleaving.
	step := make([]int, sessions)
	frameTimes := make([][]uint64, sessions)
	msgTimes := map[string]uint64{}
	var items []recordedItem
	const spacing = 20 * time.Microsecond
	for t := uint64(0); ; t++ {
		var open []int
		for s := range step {
			if step[s] < 1+2*messages {
				open = append(open, s)
			}
		}
		if len(open) == 0 {
			break
		}
		s := open[rng.IntN(len(open))]
		id := strconv.Itoa(s + 1)
		ns := t * uint64(spacing)
		switch {
		case step[s] == 0:
			items = append(items, recordedItem{id, KindFrame, t, inv})
		case step[s]%2 == 1:
			msg := fmt.Sprintf(`{"s":%d,"k":%d}`, s, step[s]/2)
			msgTimes[msg] = ns
			items = append(items, recordedItem{id, KindClient, t, msg})
		default:
			items = append(items, recordedItem{id, KindFrame, t, st})
		}
		if step[s]%2 == 0 {
			frameTimes[s] = append(frameTimes[s], ns)
		}
		step[s]++
	}
	log := &sessionLog{}
	d := Drive{
		Dial: func() (FrameConn, error) {
			c := &loggedConn{answeringConn: newAnsweringConn(inv, st), log: log, slow: func() time.Duration {
				log.mu.Lock()
				defer log.mu.Unlock()
				return time.Duration(rng.IntN(300)) * time.Microsecond
			}}
			log.add(connEvent{conn: c, kind: "dial"})
			return c, nil
		},
		Window: 20 * time.Millisecond,
	}
	done := make(chan error, 1)
	go func() { _, err := d.Run(recordingIn(spacing, items)); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Drive.Run still running 60 s into a recording of a few ms")
	}
	// Which session each connection is: its first message says.
	sessionOf := map[*loggedConn]int{}
	for _, e := range log.events {
		if e.kind == "send" {
			if _, ok := sessionOf[e.conn]; !ok {
				var m struct{ S int }
				_ = json.Unmarshal([]byte(e.msg), &m)
				sessionOf[e.conn] = m.S
			}
		}
	}
	if len(sessionOf) != sessions {
		t.Fatalf("%d sessions sent messages, want %d", len(sessionOf), sessions)
	}
	read := make([]int, sessions) // frames read so far, by session
	dialled := map[int]bool{}
	for n, e := range log.events {
		s := sessionOf[e.conn]
		var at uint64
		switch e.kind {
		case "read":
			read[s]++
			continue
		case "dial":
			dialled[s] = true
			at = frameTimes[s][0]
		case "send":
			at = msgTimes[e.msg]
		}
		for o := range sessions {
			recorded := sort.Search(len(frameTimes[o]), func(k int) bool { return frameTimes[o][k] >= at })
			if o != s && read[o] < recorded {
				t.Fatalf("event %d: session %d's %s, recorded at %v, came when session %d had read %d of the %d frames recorded before it",
					n, s+1, e.kind, time.Duration(at), o+1, read[o], recorded)
			}
		}
	}
	if len(dialled) != sessions {
		t.Fatalf("%d sessions dialled, want %d", len(dialled), sessions)
	}
}

// BenchmarkDriveTimeline re-drives sessions on a timeline that never
// waits for the clock (recorded 1 ns apart): what keeping the recorded
// order costs a frame as sessions grow. In "one after another" each
// session's message was recorded after every other session's frame before
// it, so each waits for all the others; in "at random" the sessions'
// messages and frames were recorded interleaved at random, as independent
// clients' are. cpu-ns/frame is the CPU time the process spent a frame:
// on a loaded machine the wall time is mostly waiting for a CPU.
func BenchmarkDriveTimeline(b *testing.B) {
	const messages = 40
	const inv, st = `{"session_id":1,"session":{},"arm3":[]}`, `{"session_id":1,"arm3":[]}`
	for _, layout := range []string{"one after another", "at random"} {
		for _, sessions := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("%s/sessions=%d", layout, sessions), func(b *testing.B) {
				var items []recordedItem
				add := func(s int, kind, json string) {
					items = append(items, recordedItem{strconv.Itoa(s + 1), kind, uint64(len(items)), json})
				}
				step := make([]int, sessions) // 0: the inventory, then odd a message, even its frame
				next := func(s int) {
					switch {
					case step[s] == 0:
						add(s, KindFrame, inv)
					case step[s]%2 == 1:
						add(s, KindClient, `{}`)
					default:
						add(s, KindFrame, st)
					}
					step[s]++
				}
				if layout == "at random" {
					rng := rand.New(rand.NewPCG(1, 2))
					for left := sessions * (1 + 2*messages); left > 0; left-- {
						s := rng.IntN(sessions)
						for step[s] == 1+2*messages {
							s = (s + 1) % sessions
						}
						next(s)
					}
				} else {
					for range 1 + messages {
						for s := range sessions {
							next(s)
							if step[s] > 1 {
								next(s) // its frame right after its message
							}
						}
					}
				}
				f := recordingIn(time.Nanosecond, items)
				d := Drive{Dial: func() (FrameConn, error) { return newAnsweringConn(inv, st), nil }, Window: 20 * time.Millisecond}
				b.ResetTimer()
				cpu0, _ := processCPU()
				for range b.N {
					if _, err := d.Run(f); err != nil {
						b.Fatal(err)
					}
				}
				frames := float64(b.N * sessions * (messages + 1))
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/frames, "ns/frame")
				if cpu1, ok := processCPU(); ok {
					b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/frames, "cpu-ns/frame")
				}
			})
		}
	}
}

// A session whose inventory the recorder's full queue dropped is refused
// as a recording with a gap, saying the inventory was lost, not as one
// recorded mid-way: it connected while recording, and the advice to start
// the recording first would not help. The file is a pipe nobody reads
// until the queue is full, as a stalled disk.
func TestDriveCallsALostInventoryAGap(t *testing.T) {
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rs := New(Config{Service: startBareService(t), Dir: t.TempDir(), Log: zerolog.Nop(),
		Create: func(string) (*os.File, error) { return pw, nil }})
	t.Cleanup(func() { _ = pr.Close(); rs.StopAll() }) // a stalled writer fails and ends
	info, err := rs.Start(Options{Name: "stalled"})
	if err != nil {
		t.Fatal(err)
	}
	listed := func() Info {
		for _, i := range rs.List() {
			if i.ID == info.ID {
				return i
			}
		}
		t.Fatalf("recording %d not listed", info.ID)
		return Info{}
	}
	// Another session's messages: more than the pipe holds, in the
	// chunk the writer stalls on, then until the queue is full.
	big := []byte(`{"filler":"` + strings.Repeat("x", 100<<10) + `"}`)
	rs.Session(KindClient, 99, big)
	rs.Session(KindClient, 99, big)
	taps := 2
	hwtest.EventuallyNil(t, 30*time.Second, "the recorder's queue to drop a message", func() error {
		for range 1000 {
			rs.Session(KindClient, 99, []byte(`{}`))
			taps++
		}
		if listed().Dropped == 0 {
			return errors.New("nothing dropped yet")
		}
		return nil
	})
	before := listed().Dropped
	rs.Session(KindFrame, 0, []byte(inventory3x)) // session 1 opens
	if got := listed().Dropped; got != before+1 {
		t.Fatalf("dropped %d after the inventory, %d before: the queue had room", got, before)
	}
	var file bytes.Buffer
	copied := make(chan error, 1)
	go func() { _, err := io.Copy(&file, pr); copied <- err }()
	hwtest.EventuallyNil(t, 30*time.Second, "the writer to catch up", func() error {
		if i := listed(); i.Messages < uint64(taps)-i.Dropped {
			return fmt.Errorf("%d messages written of %d taps, %d dropped", i.Messages, taps, i.Dropped)
		}
		return nil
	})
	rs.Session(KindClient, 1, []byte(`{}`))
	rs.Session(KindFrame, 1, []byte(state3x))
	if got := listed().Dropped; got != before+1 {
		t.Fatalf("dropped %d, %d after the inventory: session 1's message or frame was dropped too", got, before+1)
	}
	rs.Stop(info.ID)
	if err := <-copied; err != nil {
		t.Fatal(err)
	}
	f, err := mcap.Read(file.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var dialled atomic.Int32
	dial := func() (FrameConn, error) { dialled.Add(1); return newAnsweringConn(inventory3x, state3x), nil }
	_, err = Drive{Dial: dial, Window: 20 * time.Millisecond}.Run(f)
	if !errors.Is(err, ErrRecordingHasGaps) || errors.Is(err, ErrSessionRecordedMidway) || !strings.Contains(err.Error(), "inventory") || dialled.Load() != 0 {
		t.Fatalf("%v, %d sessions dialled; want ErrRecordingHasGaps naming the lost inventory, before any dial", err, dialled.Load())
	}
}

// Two sessions recorded one after the other, the second connecting 300 ms
// after the first ended, keep that gap when the first falls behind the
// recorded timeline (its frame comes late, as on a loaded machine): the
// second is dialled 300 ms after the first closes. Drive used to dial it
// at its recorded time, by then past: at once, while the first one's force
// still ramped out.
func TestDriveKeepsTheGapAfterASessionThatFellBehind(t *testing.T) {
	const inv, st = `{"session_id":1,"session":{},"arm3":[]}`, `{"session_id":1,"arm3":[]}`
	const gap, late = 300 * time.Millisecond, 600 * time.Millisecond
	f := recordingOf([]recordedItem{
		{"1", KindFrame, 0, inv},
		{"1", KindClient, 10, `{"k":1}`},
		{"1", KindFrame, 10, st},
		{"2", KindFrame, 20 + uint64(gap/time.Millisecond), inv},
		{"2", KindClient, 30 + uint64(gap/time.Millisecond), `{"k":2}`},
		{"2", KindFrame, 30 + uint64(gap/time.Millisecond), st},
	})
	endSessionOneAt20ms(f)

	var mu sync.Mutex
	var dialed, closed []time.Time
	d := Drive{
		Dial: func() (FrameConn, error) {
			mu.Lock()
			defer mu.Unlock()
			dialed, closed = append(dialed, time.Now()), append(closed, time.Time{})
			n := len(dialed) - 1
			c := &timedCloseConn{answeringConn: newAnsweringConn(inv, st), closed: func() {
				mu.Lock()
				if closed[n].IsZero() { // Drive closes it again on its way out
					closed[n] = time.Now()
				}
				mu.Unlock()
			}}
			if len(dialed) == 1 {
				c.slow = lateOnSecondFrame(late)
			}
			return c, nil
		},
		Window: 50 * time.Millisecond,
	}
	if diffs, err := d.Run(f); err != nil || diffs != 0 {
		t.Fatalf("Run: %d differences, %v", diffs, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialed) != 2 {
		t.Fatalf("%d sessions dialled, want 2", len(dialed))
	}
	if got := dialed[1].Sub(closed[0]); got < gap {
		t.Errorf("the second session was dialled %v after the first closed, %v late; recorded %v after it", got, late, gap)
	}
}

// A session dialled late to keep its gap after one that fell behind sends
// its messages as far apart as they were recorded, not back to back to
// catch up with the recorded timeline: the service integrates state over
// the time between them, and its frames would differ.
func TestDriveKeepsALateSessionsOwnSpacing(t *testing.T) {
	const inv, st = `{"session_id":1,"session":{},"arm3":[]}`, `{"session_id":1,"arm3":[]}`
	const gap, late, spacing = 100 * time.Millisecond, 600 * time.Millisecond, 200 * time.Millisecond
	t2 := 20 + uint64(gap/time.Millisecond)
	f := recordingOf([]recordedItem{
		{"1", KindFrame, 0, inv},
		{"1", KindClient, 10, `{"k":1}`},
		{"1", KindFrame, 10, st},
		{"2", KindFrame, t2, inv},
		{"2", KindClient, t2 + 10, `{"k":2}`},
		{"2", KindFrame, t2 + 10, st},
		{"2", KindClient, t2 + 10 + uint64(spacing/time.Millisecond), `{"k":3}`},
		{"2", KindFrame, t2 + 10 + uint64(spacing/time.Millisecond), st},
	})
	endSessionOneAt20ms(f)

	var mu sync.Mutex
	var dials int
	var sent []time.Time // the second session's messages
	d := Drive{
		Dial: func() (FrameConn, error) {
			mu.Lock()
			defer mu.Unlock()
			dials++
			c := &timedCloseConn{answeringConn: newAnsweringConn(inv, st), closed: func() {}}
			if dials == 1 {
				c.slow = lateOnSecondFrame(late)
			} else {
				c.sent = func() {
					mu.Lock()
					sent = append(sent, time.Now())
					mu.Unlock()
				}
			}
			return c, nil
		},
		Window: 50 * time.Millisecond,
	}
	if diffs, err := d.Run(f); err != nil || diffs != 0 {
		t.Fatalf("Run: %d differences, %v", diffs, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sent) != 2 {
		t.Fatalf("the second session sent %d messages, want 2", len(sent))
	}
	// Each message goes at its place on the session's shifted timeline, so
	// the gap is the recorded one less however late the first one's sleep
	// woke (146 ms of 200 once, on a loaded machine). A session that did
	// not keep its spacing sends both at once, both being overdue: a
	// quarter of the spacing tells the two apart and leaves the first
	// message 150 ms to be late.
	if got := sent[1].Sub(sent[0]); got < spacing/4 {
		t.Errorf("the late session sent its two messages %v apart; recorded %v apart", got, spacing)
	}
}

// endSessionOneAt20ms records session 1's session-ended event at 20 ms in f.
func endSessionOneAt20ms(f *mcap.File) {
	ended := mcap.Channel{ID: 99, Metadata: map[string]string{"kind": KindEvent, "key": "events"}}
	f.Channels[ended.ID] = ended
	f.Messages = append(f.Messages, mcap.Message{ChannelID: ended.ID, LogTime: uint64(20 * time.Millisecond),
		Data: []byte(`{"seq":1,"time":"2026-01-01T00:00:00Z","name":"session-ended","data":{"session_id":1}}`)})
}

// lateOnSecondFrame is a timedCloseConn's slow that hands over the second
// frame (the one answering the session's message) late: the session falls
// behind the recorded timeline.
func lateOnSecondFrame(late time.Duration) func() time.Duration {
	reads := 0
	return func() time.Duration {
		if reads++; reads == 2 {
			return late
		}
		return 0
	}
}

// timedCloseConn answers as answeringConn does, may take a while to hand
// over a frame (slow, nil: never) and tells closed when it closes.
type timedCloseConn struct {
	*answeringConn
	slow   func() time.Duration
	closed func()
	sent   func() // nil: nothing to tell
}

func (c *timedCloseConn) Send(b []byte) error {
	if c.sent != nil {
		c.sent()
	}
	return c.answeringConn.Send(b)
}

func (c *timedCloseConn) Receive(timeout time.Duration) ([]byte, error) {
	if c.slow != nil {
		time.Sleep(c.slow())
	}
	return c.answeringConn.Receive(timeout)
}

func (c *timedCloseConn) Close() error {
	c.closed()
	return nil
}
