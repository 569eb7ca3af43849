package recording

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// stallingLog is a service's log whose activity lines wait, once held,
// until released: the activity actor stalls on the next event it logs, as
// one far behind a flood of events is, and every event published
// meanwhile waits in its mailbox.
type stallingLog struct {
	mu      sync.Mutex
	held    bool
	release chan struct{}
	once    sync.Once
}

func newStallingLog() *stallingLog { return &stallingLog{release: make(chan struct{})} }

func (l *stallingLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	held := l.held
	l.mu.Unlock()
	if held && bytes.Contains(p, []byte(`"component":"activity"`)) {
		<-l.release
	}
	return len(p), nil
}

func (l *stallingLog) hold() { l.mu.Lock(); l.held = true; l.mu.Unlock() }

func (l *stallingLog) letGo() { l.once.Do(func() { close(l.release) }) }

// A Stop while the activity actor is far behind a flood of events (here
// stalled) answers within lastEventsWait, with a complete file and no
// error: a disk refused nothing. Every event published while the recording
// ran is in its file or counted in dropped; StopAll stops the recordings at
// once, not one after the other. Stop used to wait 2 s for the actor, then
// list the recording with the error "the last events: activity: sync: no
// answer within 2s" and dropped 0 however many events its file lacked;
// StopAll waited 2 s per recording.
func TestStopBehindAFloodOfEventsCountsWhatItMissed(t *testing.T) {
	svc, stall := startStallingService(t)
	rs := New(Config{Service: svc, Dir: t.TempDir(), Log: zerolog.Nop()})
	var started []Info
	for i := range MaxRunning {
		info, err := rs.Start(Options{Name: fmt.Sprintf("flood-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		started = append(started, info)
	}

	// Half the flood while the actor keeps up (the recordings'
	// subscriptions may fall behind: that counts too), then a session-end
	// the actor stalls logging, then the other half behind it.
	const half = 3000
	act := svc.Activity()
	for id := range uint64(half) {
		act.Publish(event.SessionStarted(id+1, "", "127.0.0.1:1", "3.1"))
	}
	stall.hold()
	act.Publish(event.SessionEnded(2*half+1, "", "127.0.0.1:1", "3.1", protocol.CloseReason("normal")))
	for id := range uint64(half) {
		act.Publish(event.SessionStarted(half+id+1, "", "127.0.0.1:1", "3.1"))
	}
	const published = 2*half + 1

	first, ok := rs.Stop(started[0].ID)
	if !ok {
		t.Fatalf("recording %d not listed", started[0].ID)
	}
	began := time.Now()
	rs.StopAll()
	// Each Stop waits lastEventsWait for the stalled actor: one after the
	// other they could not be done sooner than this.
	if took, serial := time.Since(began), time.Duration(MaxRunning-1)*lastEventsWait; took >= serial {
		t.Errorf("StopAll of %d recordings took %v: they were stopped one after the other", MaxRunning-1, took)
	}
	stall.letGo()

	stopped := map[uint64]Info{first.ID: first}
	for _, i := range rs.List() {
		if i.ID != first.ID {
			stopped[i.ID] = i
		}
	}
	for _, s := range started {
		i := stopped[s.ID]
		if i.Active || i.Error != "" {
			t.Errorf("recording %d after its stop: active %v, error %q, want stopped with no error", s.ID, i.Active, i.Error)
		}
		recorded := recordedSessionEvents(t, i.Path)
		missing := published - uint64(len(recorded))
		if missing < half {
			t.Fatalf("recording %d holds %d of the %d events though the actor stalled before the last %d: the test stalled nothing", s.ID, len(recorded), published, half)
		}
		if i.Dropped != missing {
			t.Errorf("recording %d: %d of the %d events published while it ran are not in its file, dropped says %d", s.ID, missing, published, i.Dropped)
		}
	}
}

// startStallingService starts a service with no device whose activity
// actor stalls once its log is held, shut down with the test.
func startStallingService(t *testing.T) (*actors.Service, *stallingLog) {
	t.Helper()
	stall := newStallingLog()
	svc := startServiceWith(t, zerolog.New(stall))
	t.Cleanup(stall.letGo) // before the shutdown, which waits for the actor
	return svc, stall
}

// A Start while the activity actor is far behind a flood of events (here
// stalled) answers without waiting for it, with no error, and records the
// events published once it answered when the actor gets to them. It used
// to wait 2 s for the actor, then list the recording with the error
// "events: activity: subscribe: no answer within 2s" and record no event
// at all, counting none dropped.
func TestStartBehindAFloodOfEventsRecordsItsEvents(t *testing.T) {
	svc, stall := startStallingService(t)
	rs := New(Config{Service: svc, Dir: t.TempDir(), Log: zerolog.Nop()})
	act := svc.Activity()
	stall.hold()
	act.Publish(event.SessionEnded(1, "", "127.0.0.1:1", "3.1", protocol.CloseReason("normal")))
	info, err := rs.Start(Options{Name: "behind"})
	if err != nil || info.Error != "" {
		t.Fatalf("Start behind a stalled activity actor: %+v, %v", info, err)
	}
	act.Publish(event.SessionStarted(2, "", "127.0.0.1:1", "3.1"))
	stall.letGo()
	if err := act.Sync(); err != nil { // the actor caught up
		t.Fatal(err)
	}
	stopped, _ := rs.Stop(info.ID)
	recorded := recordedSessionEvents(t, stopped.Path)
	if stopped.Error != "" || stopped.Dropped != 0 || !recorded[2] || recorded[1] {
		t.Errorf("stopped %+v holding the events of sessions %v, want no error, nothing dropped, and session 2's event, not session 1's, published before Start", stopped, recorded)
	}
}

// recordedEvent is what the tests read of a recorded event.
type recordedEvent struct {
	Name string
	Data struct {
		SessionID uint64 `json:"session_id"`
	}
}

func (e recordedEvent) String() string { return fmt.Sprintf("%s %d", e.Name, e.Data.SessionID) }

// recordedEvents are the events in the recording at path, which must be
// complete, in its order.
func recordedEvents(t *testing.T, path string) []recordedEvent {
	t.Helper()
	f, cut, err := Load(path)
	if err != nil || cut != nil || !f.Complete {
		t.Fatalf("%s: %v (cut %v), want a complete file", path, err, cut)
	}
	var out []recordedEvent
	for _, ms := range MessagesOf(f, KindEvent) {
		for _, m := range ms {
			var e recordedEvent
			if err := json.Unmarshal(m.Data, &e); err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
	}
	return out
}

// recordedSessionEvents are the session ids of the session events in the
// recording at path.
func recordedSessionEvents(t *testing.T, path string) map[uint64]bool {
	t.Helper()
	ids := map[uint64]bool{}
	for _, e := range recordedEvents(t, path) {
		if e.Name == event.NameSessionStarted || e.Name == event.NameSessionEnded {
			ids[e.Data.SessionID] = true
		}
	}
	return ids
}

// What a recording's subscription hands over accounts for every seq from
// its first live one: the events it missed count as dropped, whether an
// events-dropped event stands for them or only a gap in seqs shows them,
// and none past the stop (until) does.
func TestTakeEventCountsWhatTheSubscriptionMissed(t *testing.T) {
	published := func(seq uint64) event.Event {
		e := event.SessionStarted(seq, "", "127.0.0.1:1", "3.1")
		e.Seq = seq
		return e
	}
	missed := func(after, n uint64) event.Event {
		e := event.EventsDropped(n)
		e.Seq = after
		return e
	}
	const running = ^uint64(0)
	tests := []struct {
		name          string
		accounted     uint64
		until         uint64
		events        []event.Event
		wantAccounted uint64
		wantDropped   uint64
	}{
		{"every one, in order", 10, running, []event.Event{published(11), published(12)}, 12, 0},
		{"a gap in seqs", 10, running, []event.Event{published(11), published(15)}, 15, 3},
		{"an events-dropped event", 10, running, []event.Event{published(11), missed(11, 4), published(16)}, 16, 4},
		{"an events-dropped event last", 10, running, []event.Event{missed(10, 5)}, 15, 5},
		{"missed past the stop", 10, 12, []event.Event{missed(10, 5)}, 12, 2},
		{"published past the stop", 10, 12, []event.Event{published(14)}, 12, 2},
		{"a published events-dropped event", 10, running, []event.Event{missed(11, 7)}, 11, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recording{queue: make(chan item, len(tt.events)), clock: New(Config{}).clock}
			accounted := tt.accounted
			for _, e := range tt.events {
				accounted = r.takeEvent(e, accounted, tt.until)
			}
			if accounted != tt.wantAccounted || r.dropped.Load() != tt.wantDropped {
				t.Errorf("accounted through %d, dropped %d; want %d and %d", accounted, r.dropped.Load(), tt.wantAccounted, tt.wantDropped)
			}
			if len(r.queue) != len(tt.events) {
				t.Errorf("%d of the %d events recorded, want every one", len(r.queue), len(tt.events))
			}
		})
	}
}
