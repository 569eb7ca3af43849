package activity_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// waitLimit bounds every wait in these tests; it is a failure deadline, not
// a speed goal.
const waitLimit = 30 * time.Second

func newSystem(t testing.TB) *actor.ActorSystem {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	t.Cleanup(sys.Shutdown)
	return sys
}

// start starts an activity actor that numbers its events from 1 unless o
// says otherwise, so that the tables read easily; the service numbers them
// from its start time (TestRunsNumberFromTheirStart).
func start(t testing.TB, o activity.Options) *activity.Activity {
	t.Helper()
	if o.FirstSeq == 0 {
		o.FirstSeq = 1
	}
	a, err := activity.Start(newSystem(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	return a
}

// fakeClock advances one millisecond per reading, so every event has its
// own, predictable time.
type fakeClock struct{ ms atomic.Int64 }

var epoch = time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)

func (c *fakeClock) now() time.Time { return epoch.Add(time.Duration(c.ms.Add(1)) * time.Millisecond) }

func next(t testing.TB, s *activity.Subscription) event.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	e, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("next event: %v", err)
	}
	return e
}

func missed(t testing.TB, e event.Event) uint64 {
	t.Helper()
	if e.Name != event.NameEventsDropped {
		t.Fatalf("want events-dropped, got %s seq %d", e.Name, e.Seq)
	}
	var d struct{ Missed uint64 }
	if err := json.Unmarshal(e.Data, &d); err != nil {
		t.Fatal(err)
	}
	return d.Missed
}

// publishN publishes n numbered device-busy events (session id = i).
func publishN(a *activity.Activity, from, n int) {
	for i := from; i < from+n; i++ {
		a.Publish(event.DeviceBusy("arm3", "049D", uint64(i), 0))
	}
}

// settle waits until the actor has handled everything published so far:
// a request is answered after every message sent before it.
func settle(t testing.TB, a *activity.Activity) uint64 {
	t.Helper()
	page, err := a.Recent(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return page.NextSeq
}

func seqs(evs []event.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func TestRecent(t *testing.T) {
	// This run numbers from 101: an earlier run's seqs fall below.
	a := start(t, activity.Options{RingSize: 16, FirstSeq: 101})
	publishN(a, 1, 10)
	tests := []struct {
		name          string
		since         uint64
		limit         int
		wantFirst     uint64
		wantCount     int
		wantNextSeq   uint64
		wantRestarted bool
	}{
		{"everything", 0, 0, 101, 10, 111, false},
		{"after a seq", 104, 0, 105, 6, 111, false},
		{"limited", 102, 3, 103, 3, 106, false},
		{"limit past the end", 108, 100, 109, 2, 111, false},
		{"caught up", 110, 5, 0, 0, 111, false},
		// next_seq-1 of an answer given before this run's first event.
		{"nothing of this run seen yet", 100, 0, 101, 10, 111, false},
		// A since of an earlier run, however it compares with this run's
		// newest: what this run has published is all news to that client.
		{"from an earlier run", 7, 0, 101, 10, 111, true},
		{"from an earlier run, limited", 99, 4, 101, 4, 105, true},
		{"past the newest (the clock stepped back across the restart)", 500, 0, 101, 10, 111, true},
		{"past any seq", ^uint64(0), 0, 101, 10, 111, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := a.Recent(tt.since, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			evs := page.Events
			if len(evs) != tt.wantCount || page.NextSeq != tt.wantNextSeq || page.Restarted != tt.wantRestarted || page.Missed != 0 {
				t.Fatalf("got seqs %v next %d, restarted %v, missed %d; want %d events from %d, next %d, restarted %v, none missed",
					seqs(evs), page.NextSeq, page.Restarted, page.Missed, tt.wantCount, tt.wantFirst, tt.wantNextSeq, tt.wantRestarted)
			}
			for i, e := range evs {
				if e.Seq != tt.wantFirst+uint64(i) {
					t.Fatalf("seqs %v are not contiguous from %d", seqs(evs), tt.wantFirst)
				}
				if e.Time.IsZero() || e.Time.Location() != time.UTC || e.Name != event.NameDeviceBusy {
					t.Fatalf("event %+v lacks its stamp", e)
				}
			}
		})
	}
}

// TestRunsNumberFromTheirStart: by default a run's first seq is one past its
// start time in microseconds, so a later run numbers above anything an
// earlier one handed out, and stays under 2^53 for JSON clients; a clock
// that cannot give such a base numbers from 1.
func TestRunsNumberFromTheirStart(t *testing.T) {
	tests := []struct {
		name  string
		start time.Time
		want  uint64
	}{
		{"now", epoch, uint64(epoch.UnixMicro()) + 1},
		{"a clock before 1970", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC), 1},
		{"a clock past 2112", time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := activity.Start(newSystem(t), activity.Options{Clock: func() time.Time { return tt.start }})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(a.Stop)
			a.Publish(event.DeviceConnected("inverse", "arm3", "049D"))
			if page, err := a.Recent(0, 0); err != nil || len(page.Events) != 1 || page.Events[0].Seq != tt.want {
				t.Fatalf("first event %+v (%v), want seq %d", page.Events, err, tt.want)
			}
		})
	}
	if _, err := activity.Start(newSystem(t), activity.Options{FirstSeq: 1 << 53}); err == nil {
		t.Fatal("Start took a first seq of 2^53, which a JSON client cannot read exactly")
	}
}

func TestRingWrapAround(t *testing.T) {
	clock := &fakeClock{}
	a := start(t, activity.Options{RingSize: 8, Clock: clock.now})
	publishN(a, 1, 20)
	page, err := a.Recent(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	evs := page.Events
	if got := seqs(evs); len(got) != 8 || got[0] != 13 || got[7] != 20 || page.NextSeq != 21 {
		t.Fatalf("ring holds %v (next %d), want 13..20 (next 21)", got, page.NextSeq)
	}
	for i := 1; i < len(evs); i++ {
		if !evs[i].Time.After(evs[i-1].Time) {
			t.Fatalf("times do not follow seqs: %v then %v", evs[i-1].Time, evs[i].Time)
		}
	}

	// A client that asks for more than the ring holds is told how many
	// it lost, then gets what is left, then live events. So is one that
	// resumes across a restart (its since is not this run's), once told of
	// the restart: it cannot have this run's events before the oldest kept.
	for _, tt := range []struct {
		since, missed, gapSeq uint64
		restarted             bool
		why                   string
	}{
		{5, 7, 5, false, "6..12 fell off the ring"},
		{500, 12, 0, true, "an earlier run's since; this run's 1..12 fell off the ring"},
	} {
		a := start(t, activity.Options{RingSize: 8})
		publishN(a, 1, 20)
		sub, err := a.Subscribe(tt.since, true)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		if tt.restarted {
			if e := next(t, sub); e.Name != event.NameServiceRestarted || e.Seq != tt.gapSeq {
				t.Fatalf("since %d: first %s seq %d, want service-restarted seq %d", tt.since, e.Name, e.Seq, tt.gapSeq)
			}
		}
		gap := next(t, sub)
		if n := missed(t, gap); n != tt.missed || gap.Seq != tt.gapSeq {
			t.Fatalf("since %d: events-dropped {missed:%d} seq %d, want {missed:%d} seq %d (%s)", tt.since, n, gap.Seq, tt.missed, tt.gapSeq, tt.why)
		}
		for want := uint64(13); want <= 20; want++ {
			if e := next(t, sub); e.Seq != want {
				t.Fatalf("since %d: replay gave seq %d, want %d", tt.since, e.Seq, want)
			}
		}
		publishN(a, 21, 1)
		if e := next(t, sub); e.Seq != 21 {
			t.Fatalf("since %d: live gave seq %d, want 21", tt.since, e.Seq)
		}
	}
}

func TestSubscribeModes(t *testing.T) {
	tests := []struct {
		name      string
		since     uint64
		replay    bool
		want      []uint64 // after 5 events already published and 2 more live
		restarted bool     // the first is service-restarted
	}{
		{"live only", 0, false, []uint64{105, 106}, false},
		{"live only ignores since", 3, false, []uint64{105, 106}, false},
		{"replay everything", 0, true, []uint64{100, 101, 102, 103, 104, 105, 106}, false},
		{"replay after a seq", 102, true, []uint64{103, 104, 105, 106}, false},
		{"replay when caught up", 104, true, []uint64{105, 106}, false},
		// The client's resume point is from an earlier run (this one
		// numbers from 100): it is told so (seq 99, before this run's
		// first), then gets this run's events from the first, or it would
		// never see the device-connected events of the restart.
		{"replay from an earlier run", 40, true, []uint64{99, 100, 101, 102, 103, 104, 105, 106}, true},
		{"replay past the newest", 400, true, []uint64{99, 100, 101, 102, 103, 104, 105, 106}, true},
		{"replay before this run's first", 99, true, []uint64{100, 101, 102, 103, 104, 105, 106}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := start(t, activity.Options{FirstSeq: 100})
			publishN(a, 1, 5)
			settle(t, a)
			sub, err := a.Subscribe(tt.since, tt.replay)
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			publishN(a, 6, 2)
			var got []uint64
			for len(got) < len(tt.want) {
				e := next(t, sub)
				if restart := e.Name == event.NameServiceRestarted; restart != (len(got) == 0 && tt.restarted) {
					t.Fatalf("event %d is %s seq %d: want service-restarted first exactly when since is an earlier run's", len(got), e.Name, e.Seq)
				}
				got = append(got, e.Seq)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got seqs %v, want %v", got, tt.want)
			}
			if e, ok := sub.TryNext(); ok {
				t.Fatalf("unexpected extra event seq %d", e.Seq)
			}
		})
	}
}

// TestReplayWhileProducing subscribes with since= while a producer is
// publishing: the stream must be every later seq exactly once, in order.
func TestReplayWhileProducing(t *testing.T) {
	const total = 5000
	a := start(t, activity.Options{RingSize: total, QueueSize: total})
	publishN(a, 1, 100)
	settle(t, a)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		publishN(a, 101, total-100)
	}()
	sub, err := a.Subscribe(50, true)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for want := uint64(51); want <= total; want++ {
		e := next(t, sub)
		if e.Seq != want {
			t.Fatalf("got seq %d, want %d: a gap or a duplicate", e.Seq, want)
		}
	}
	wg.Wait()
	if e, ok := sub.TryNext(); ok {
		t.Fatalf("extra event seq %d after the last one", e.Seq)
	}
}

// TestStalledSubscriberDoesNotSlowOthers publishes 10 000 events with one
// subscriber that never reads and one that reads everything. The producer
// paces itself on the live reader only (so the live queue never fills and
// the test does not depend on speed); the stalled one must neither block it
// nor lose its place: it gets its queue, then one events-dropped with the
// exact count, then live events again.
func TestStalledSubscriberDoesNotSlowOthers(t *testing.T) {
	const (
		total     = 10000
		queueSize = 256
		batch     = 100
	)
	a := start(t, activity.Options{QueueSize: queueSize})
	stalled, err := a.Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	live, err := a.Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()

	for from := 1; from <= total; from += batch {
		publishN(a, from, batch)
		for want := uint64(from); want < uint64(from+batch); want++ {
			if e := next(t, live); e.Seq != want || e.Name != event.NameDeviceBusy {
				t.Fatalf("live subscriber got %s seq %d, want seq %d", e.Name, e.Seq, want)
			}
		}
	}
	if nextSeq := settle(t, a); nextSeq != total+1 {
		t.Fatalf("production stopped at %d", nextSeq-1)
	}
	if got := stalled.Dropped(); got != total-queueSize {
		t.Fatalf("stalled subscriber dropped %d, want %d", got, total-queueSize)
	}

	// The stalled subscriber resumes: its queue, then the gap, at once
	// (no further event needed to learn of it).
	for want := uint64(1); want <= queueSize; want++ {
		if e := next(t, stalled); e.Seq != want {
			t.Fatalf("stalled subscriber got seq %d, want %d", e.Seq, want)
		}
	}
	gap := next(t, stalled)
	if n := missed(t, gap); n != total-queueSize || gap.Seq != queueSize {
		t.Fatalf("events-dropped {missed:%d} seq %d, want {missed:%d} seq %d", n, gap.Seq, total-queueSize, queueSize)
	}
	publishN(a, total+1, 1)
	if e := next(t, stalled); e.Seq != total+1 {
		t.Fatalf("after the gap got seq %d, want %d", e.Seq, total+1)
	}
	if e := next(t, live); e.Seq != total+1 {
		t.Fatalf("live got seq %d, want %d", e.Seq, total+1)
	}
	// The gap is on that subscriber's stream only, never in the ring.
	page, err := a.Recent(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		if e.Name == event.NameEventsDropped {
			t.Fatalf("events-dropped leaked into the ring at seq %d", e.Seq)
		}
	}
}

// TestGapGoesBeforeTheNextLiveEvent: a subscriber that reads a little after
// falling behind gets the events-dropped in front of the next live event.
func TestGapGoesBeforeTheNextLiveEvent(t *testing.T) {
	a := start(t, activity.Options{QueueSize: 4})
	sub, err := a.Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	publishN(a, 1, 6) // 1..4 queued, 5 and 6 dropped
	settle(t, a)
	for want := uint64(1); want <= 2; want++ {
		if e := next(t, sub); e.Seq != want {
			t.Fatalf("got seq %d, want %d", e.Seq, want)
		}
	}
	publishN(a, 7, 1) // room for the gap and seq 7
	settle(t, a)
	var got []string
	for range 4 {
		e := next(t, sub)
		got = append(got, fmt.Sprintf("%s:%d", e.Name, e.Seq))
	}
	want := []string{"device-busy:3", "device-busy:4", "events-dropped:4", "device-busy:7"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("stream %v, want %v", got, want)
	}
}

func TestCloseAndStop(t *testing.T) {
	a := start(t, activity.Options{})
	closed, err := a.Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	open, err := a.Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	publishN(a, 1, 3)
	settle(t, a)
	closed.Close()
	closed.Close() // idempotent
	if _, err := closed.Next(context.Background()); !errors.Is(err, activity.ErrClosed) {
		t.Fatalf("Next after Close: %v, want ErrClosed", err)
	}

	a.Stop()
	a.Stop() // idempotent
	// Events published before Stop are still readable, then the end.
	for want := uint64(1); want <= 3; want++ {
		if e := next(t, open); e.Seq != want {
			t.Fatalf("got seq %d, want %d", e.Seq, want)
		}
	}
	if _, err := open.Next(context.Background()); !errors.Is(err, activity.ErrClosed) {
		t.Fatalf("Next after Stop: %v, want ErrClosed", err)
	}
	if _, err := a.Subscribe(0, false); !errors.Is(err, activity.ErrStopped) {
		t.Fatalf("Subscribe after Stop: %v, want ErrStopped", err)
	}
	if _, err := a.Recent(0, 0); !errors.Is(err, activity.ErrStopped) {
		t.Fatalf("Recent after Stop: %v, want ErrStopped", err)
	}
	a.Publish(event.EventsDropped(1)) // must not panic or block
}

func TestNextHonoursContext(t *testing.T) {
	a := start(t, activity.Options{})
	sub, err := a.Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sub.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Next with a cancelled context: %v", err)
	}
}

func TestHandMadeEventsGetTheirTableRow(t *testing.T) {
	a := start(t, activity.Options{})
	a.Publish(event.Event{Name: event.NameDeviceBusy, Message: "by hand"})
	page, err := a.Recent(0, 0)
	if err != nil || len(page.Events) != 1 {
		t.Fatalf("recent: %v %v", page.Events, err)
	}
	if e := page.Events[0]; e.Category != event.CategoryDevice || e.Level != event.LevelWarning || string(e.Data) != "{}" {
		t.Fatalf("event %+v was not completed from the table", e)
	}
}

func TestUsage(t *testing.T) {
	clock := &fakeClock{}
	a := start(t, activity.Options{Clock: clock.now})
	const (
		force   = "POST /force_scale"
		forceTo = "POST /settings/devices/force_scale"
		torque  = "POST /3.0/torque_scaling"
	)
	a.Publish(event.HTTPRouteDeprecated(force, forceTo, "127.0.0.1:4000"))
	a.Publish(event.HTTPRouteDeprecated(force, forceTo, "127.0.0.1:4001"))
	a.Publish(event.HTTPRouteDeprecated(force, forceTo, "10.0.0.2:4000"))
	a.Publish(event.HTTPRouteDeprecated(torque, "POST /3.0/arm3/049D/config/torque_scaling", "[::1]:9"))
	a.Publish(event.HTTPRouteDeprecated(torque, "POST /3.0/arm3/04A0/config/torque_scaling", "[::1]:10"))
	a.Publish(event.SessionStarted(1, "", "127.0.0.1:5000", "3.x"))
	a.Publish(event.SessionStarted(2, "", "10.0.0.3:5000", "3.0"))
	a.Publish(event.SessionStarted(3, "", "10.0.0.3:5001", "3.0"))
	a.Publish(event.CommandDeprecated("session.set_basis", "session.configure.basis", 1, "lab:rig"))
	a.Publish(event.CommandDeprecated("session.set_basis", "session.configure.basis", 2, ""))
	a.Publish(event.SessionEnded(2, "lab:old", "10.0.0.3:5000", "3.0", protocol.CloseClientClosed))
	a.NoteLegacyRoute("GET /3.0/devices", "10.0.0.3:7000", "")
	a.NoteLegacyRoute("GET /3.0/devices", "10.0.0.3:7001", "lab:old")
	a.Publish(event.DeviceConnected("inverse", "arm3", "049D")) // not usage

	u, err := a.Usage()
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Routes) != 2 || u.Routes[0].Name != torque || u.Routes[1].Name != force {
		t.Fatalf("routes %+v, want %s and %s sorted", u.Routes, torque, force)
	}
	r := u.Routes[1]
	if r.Count != 3 || r.Replacement != forceTo || r.ByRemote["127.0.0.1"] != 2 || r.ByRemote["10.0.0.2"] != 1 || len(r.ByProfile) != 0 {
		t.Errorf("force_scale use %+v", r)
	}
	if r.FirstSeen.Sub(u.Since) != time.Millisecond || r.LastSeen.Sub(r.FirstSeen) != 2*time.Millisecond {
		t.Errorf("since %v, first/last seen %v %v: want the first and third event's times", u.Since, r.FirstSeen, r.LastSeen)
	}
	if tq := u.Routes[0]; tq.Count != 2 || len(tq.Replacements) != 2 || tq.ByRemote["::1"] != 2 {
		t.Errorf("torque_scaling use %+v", tq)
	}
	if len(u.Commands) != 1 {
		t.Fatalf("commands %+v", u.Commands)
	}
	c := u.Commands[0]
	if c.Name != "session.set_basis" || c.Count != 2 || c.Replacement != "session.configure.basis" ||
		c.ByProfile["lab:rig"] != 1 || c.ByProfile[activity.NoProfile] != 1 ||
		c.ByRemote["127.0.0.1"] != 1 || c.ByRemote["10.0.0.3"] != 1 {
		t.Errorf("set_basis use %+v", c)
	}
	l := u.Legacy
	if l.Sessions.Count != 2 || l.OpenSessions != 1 || l.Sessions.ByRemote["10.0.0.3"] != 2 || l.Sessions.ByProfile["lab:old"] != 1 {
		t.Errorf("3.0 sessions %+v", l)
	}
	var routes []string
	for _, lr := range l.Routes {
		routes = append(routes, fmt.Sprintf("%s=%d", lr.Route, lr.Count))
	}
	if fmt.Sprint(routes) != "[GET /3.0/devices=2 POST /3.0/torque_scaling=2]" {
		t.Errorf("3.0 routes %v", routes)
	}
	if l.Routes[0].ByProfile["lab:old"] != 1 || l.Routes[0].ByRemote["10.0.0.3"] != 2 {
		t.Errorf("3.0 route tally %+v", l.Routes[0])
	}

	// The report is a copy: changing it changes nothing inside.
	u.Routes[1].ByRemote["127.0.0.1"] = 99
	again, err := a.Usage()
	if err != nil || again.Routes[1].ByRemote["127.0.0.1"] != 2 {
		t.Fatalf("usage shares memory with the actor: %v %v", again.Routes[1].ByRemote, err)
	}
	if _, err := json.Marshal(again); err != nil {
		t.Fatalf("usage does not encode: %v", err)
	}
}

func TestUsageMapsAreBounded(t *testing.T) {
	a := start(t, activity.Options{})
	for i := range activity.MaxTallyKeys + 50 {
		a.Publish(event.HTTPRouteDeprecated("POST /force_scale", "POST /settings/devices/force_scale", fmt.Sprintf("10.0.%d.%d:1", i/250, i%250)))
	}
	u, err := a.Usage()
	if err != nil {
		t.Fatal(err)
	}
	r := u.Routes[0]
	if len(r.ByRemote) > activity.MaxTallyKeys || r.ByRemote[activity.OtherKey] != 51 || r.Count != activity.MaxTallyKeys+50 {
		t.Fatalf("%d remote keys, %d under %s, count %d", len(r.ByRemote), r.ByRemote[activity.OtherKey], activity.OtherKey, r.Count)
	}
}

func TestLogOneLinePerEventRateLimited(t *testing.T) {
	var sink hwtest.LogBuffer
	clock := &fakeClock{} // 1 ms per event: 50 events fit in one second
	a, err := activity.Start(newSystem(t), activity.Options{
		Log: zerolog.New(&sink), Clock: clock.now, LogBurst: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	publishN(a, 1, 50)
	a.Publish(event.DeviceConnected("inverse", "arm3", "049D"))
	a.Publish(event.InvalidIOChannel([]byte("x"))) // a different name has its own budget
	a.Stop()

	var busy, suppressed, other int
	for _, line := range sink.Lines() {
		var rec struct {
			Level      string
			Event      string
			Seq        uint64
			Suppressed int
			Data       json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch {
		case rec.Event == event.NameDeviceBusy && rec.Suppressed > 0:
			suppressed = rec.Suppressed
		case rec.Event == event.NameDeviceBusy:
			busy++
			if rec.Level != "warn" || len(rec.Data) == 0 {
				t.Errorf("line %s: want level warn with the data", line)
			}
		case rec.Event == event.NameDeviceConnected && rec.Level == "info",
			rec.Event == event.NameInvalidIOChannel && rec.Level == "warn":
			other++
		}
	}
	if busy != 5 || suppressed != 45 || other != 2 {
		t.Fatalf("logged %d device-busy lines and a summary of %d, %d others; want 5, 45, 2:\n%s",
			busy, suppressed, other, strings.Join(sink.Lines(), "\n"))
	}
}

func TestStartRejectsBadOptions(t *testing.T) {
	if _, err := activity.Start(nil, activity.Options{}); err == nil {
		t.Error("Start without a system must fail")
	}
	if _, err := activity.Start(newSystem(t), activity.Options{RingSize: -1}); err == nil {
		t.Error("a negative ring size must fail")
	}
}

// BenchmarkPublish measures the actor's cost per event with no subscriber
// (the baseline), one reading subscriber and one stalled subscriber; the
// stalled case must cost about the same as the live one.
func BenchmarkPublish(b *testing.B) {
	for _, mode := range []string{"no-subscriber", "one-live", "one-stalled"} {
		b.Run(mode, func(b *testing.B) {
			a := start(b, activity.Options{QueueSize: 1024})
			var sub *activity.Subscription
			if mode != "no-subscriber" {
				var err error
				if sub, err = a.Subscribe(0, false); err != nil {
					b.Fatal(err)
				}
				defer sub.Close()
			}
			done := make(chan struct{})
			if mode == "one-live" {
				go func() {
					defer close(done)
					for {
						if _, err := sub.Next(context.Background()); err != nil {
							return
						}
					}
				}()
			} else {
				close(done)
			}
			e := event.DeviceBusy("arm3", "049D", 1, 2)
			b.ResetTimer()
			for b.Loop() {
				a.Publish(e)
			}
			settle(b, a) // the round trip: every event handled
			b.StopTimer()
			if sub != nil {
				sub.Close()
			}
			<-done
		})
	}
}

// After Sync, every event published before it waits in a subscriber's
// queue: TryNext hands them all over without waiting; a
// stopped actor answers ErrStopped.
func TestSyncQueuesEveryEventPublishedBefore(t *testing.T) {
	a := start(t, activity.Options{})
	sub, err := a.Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	for round := range 50 {
		for i := range 3 {
			a.Publish(event.DeviceConnected("arm", "inverse3", strconv.Itoa(3*round+i)))
		}
		if err := a.Sync(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			e, ok := sub.TryNext()
			if !ok {
				t.Fatalf("round %d: %d of the 3 events published before Sync queued", round, i)
			}
			if want := strconv.Itoa(3*round + i); !strings.Contains(string(e.Data), `"`+want+`"`) {
				t.Fatalf("round %d: event %d is %s, want device %s", round, i, e.Data, want)
			}
		}
	}
	a.Stop()
	if err := a.Sync(); !errors.Is(err, activity.ErrStopped) {
		t.Errorf("Sync after Stop: %v, want ErrStopped", err)
	}
}

// LastPublishedSeq says, at once, which seq the newest event published
// has or will get, and FirstLiveSeq the first a subscriber is handed (one
// SubscribeLive made as well as one Subscribe did): a recording knows from
// them every seq it must account for, however far behind the actor is.
func TestLastPublishedAndFirstLiveSeq(t *testing.T) {
	a := start(t, activity.Options{FirstSeq: 100})
	if got := a.LastPublishedSeq(); got != 99 {
		t.Errorf("LastPublishedSeq before any event: %d, want 99 (one before the first)", got)
	}
	for i := range 5 {
		a.Publish(event.DeviceConnected("arm", "inverse3", strconv.Itoa(i)))
	}
	sub, err := a.Subscribe(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if got := sub.FirstLiveSeq(); got != 105 {
		t.Errorf("FirstLiveSeq after 5 events from 100: %d, want 105", got)
	}
	live := a.SubscribeLive() // answers at once: its first is known now
	defer live.Close()
	if got := live.FirstLiveSeq(); got != 105 {
		t.Errorf("SubscribeLive's FirstLiveSeq: %d, want 105", got)
	}
	a.Publish(event.DeviceConnected("arm", "inverse3", "5"))
	last := a.LastPublishedSeq()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	for _, s := range []*activity.Subscription{sub, live} {
		e, err := s.Next(ctx)
		if err != nil || e.Seq != 105 || last != 105 {
			t.Errorf("the next event: seq %d (%v), LastPublishedSeq %d, want both 105", e.Seq, err, last)
		}
	}
}

// The lines a burst's log budget left out are summed up a second after it,
// not with the next line of that name, which may come hours later or at the
// stop (tour1000: a 1000-arm start's 429 device-connected lines left out
// were told only at SIGTERM, two minutes on).
func TestLogSumsUpALeftOutBurstSoon(t *testing.T) {
	var sink hwtest.LogBuffer
	clock := &fakeClock{}
	a, err := activity.Start(newSystem(t), activity.Options{
		Log: zerolog.New(&sink), Clock: clock.now, LogBurst: 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	publishN(a, 1, 50)
	hwtest.Eventually(t, 10*time.Second, "the summary of the 45 lines left out", func() bool {
		for _, line := range sink.Lines() {
			var rec struct{ Suppressed int }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Suppressed == 45 {
				return true
			}
		}
		return false
	})
}
