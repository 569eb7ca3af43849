package transport

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

// failOneStore fails every Save of one document.
type failOneStore struct {
	actors.Store
	name string
}

func (s failOneStore) Save(name string, v any) error {
	if name == s.name {
		return errors.New("test store: disk full")
	}
	return s.Store.Save(name, v)
}

// A POST to every arm whose store fails for the second one answers the
// error with exactly the targets that took the change, and that is what is
// in force and on disk after a restart.
func TestWriteToSeveralTargetsAnswersWhichTookIt(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 2, dir: dir, wrapStore: func(s actors.Store) actors.Store {
		return failOneStore{s, "devices/arm3-" + sim.ArmID(1)}
	}})

	r := ts.do(http.MethodPost, ts.base+"/arm3/*/config/handedness", `"left"`)
	if r.status != http.StatusInternalServerError || r.env["ok"] != false || r.env["code"] != string(protocol.CodeInternal) {
		t.Fatalf("POST to both arms with the second one's store failing: %v", r)
	}
	if !jsonEqual(t, r.env["applied_to"], `[{"device_type":"arm3","device_id":"`+ts.armIDs[0]+`"}]`) {
		t.Fatalf("applied_to %v, want only %s", r.env["applied_to"], ts.armIDs[0])
	}
	want := []string{`"left"`, `"right"`}
	for i, id := range ts.armIDs {
		if r := ts.do(http.MethodGet, ts.base+"/arm3/"+id+"/config/handedness", ""); !jsonEqual(t, r.data(), want[i]) {
			t.Fatalf("arm %s: %v, want %s", id, r, want[i])
		}
	}

	ts.stop()
	ts2 := startService(t, serviceConfig{arms: 2, dir: dir})
	for i, id := range ts2.armIDs {
		if r := ts2.do(http.MethodGet, ts2.base+"/arm3/"+id+"/config/handedness", ""); !jsonEqual(t, r.data(), want[i]) {
			t.Fatalf("after a restart arm %s: %v, want %s", id, r, want[i])
		}
	}
}

// A POST the device actor reaches only after the request's deadline is
// answered 503 and never applied: the value in force and the value after a
// restart are the ones answered 200.
func TestLatePOSTAnswers503AndIsNeverApplied(t *testing.T) {
	dir := t.TempDir()
	var hold atomic.Bool
	held, release := make(chan struct{}, 1), make(chan struct{})
	ts := startService(t, serviceConfig{arms: 1, dir: dir, requestTimeout: 100 * time.Millisecond, deviceHook: func(*actors.Device) {
		if hold.CompareAndSwap(true, false) {
			held <- struct{}{}
			<-release
		}
	}})
	url := ts.base + "/arm3/" + ts.armIDs[0] + "/config/gravity_compensation"
	if r := ts.do(http.MethodPost, url, `{"enabled":true,"scaling_factor":0.5}`); r.status != 200 {
		t.Fatal(r)
	}
	hold.Store(true)
	// The device actor stays held until the answer came (or the test
	// ends): a service that waited for it instead of answering 503 at the
	// deadline fails here instead of hanging the test.
	var released sync.Once
	letGo := func() { released.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	type answer struct {
		r   reply
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		r, err := ts.tryDo(http.MethodPost, url, `{"enabled":true,"scaling_factor":1.5}`)
		answered <- answer{r, err}
	}()
	select {
	case <-held:
	case a := <-answered:
		t.Fatalf("the POST was answered before the device actor took it up: %v %v", a.r, a.err)
	case <-time.After(10 * time.Second):
		t.Fatal("the device actor did not take the POST up within 10 s")
	}
	var a answer
	select {
	case a = <-answered:
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10 s to a POST the device actor holds (request timeout 100 ms)")
	}
	letGo()
	if a.err != nil {
		t.Fatal(a.err)
	}
	r := a.r
	if r.status != http.StatusServiceUnavailable || r.env["code"] != string(protocol.CodeUnavailable) {
		t.Fatalf("a POST the device actor did not reach in time: %v, want 503 unavailable", r)
	}
	const inForce = `{"enabled":true,"scaling_factor":0.5}`
	if r := ts.do(http.MethodGet, url, ""); !jsonEqual(t, r.data(), inForce) {
		t.Fatalf("after a 503: %v, want %s", r, inForce)
	}
	ts.stop()
	ts2 := startService(t, serviceConfig{arms: 1, dir: dir})
	if r := ts2.do(http.MethodGet, ts2.base+"/arm3/"+ts2.armIDs[0]+"/config/gravity_compensation", ""); !jsonEqual(t, r.data(), inForce) {
		t.Fatalf("after a restart: %v, want %s", r, inForce)
	}
}

// panicOn wraps a codec so that decoding a message containing trigger
// panics.
type panicOn struct {
	actors.Codec
	trigger string
}

func (c panicOn) Decode(data []byte, types *protocol.TypeTable, dst *protocol.ClientMessage) []protocol.Error {
	if strings.Contains(string(data), c.trigger) {
		panic("test codec: " + c.trigger)
	}
	return c.Codec.Decode(data, types, dst)
}

// A session that panics is closed with 1011 over a real socket, whichever
// part panicked: its codec, on the connection's reader, or its actor, on
// a message that changes the session. Its arm's force drops to zero as
// another client sees it; it leaves GET /sessions; the service keeps
// serving.
func TestSessionThatPanicsIsClosedWith1011(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  serviceConfig
		msg  string
	}{
		{"codec", serviceConfig{arms: 1, wrapCodec: func(c actors.Codec) actors.Codec { return panicOn{c, "boom"} }}, `{"boom":true}`},
		// Only the message that picks a profile reaches the session actor.
		{"session actor", serviceConfig{arms: 1, sessionHook: func(*actors.Session) { panic("test hook: session actor") }},
			`{"session":{"configure":{"profile":{"name":"boom"}}}}`},
	} {
		t.Run(c.name, func(t *testing.T) { sessionPanicClosesWith1011(t, c.cfg, c.msg) })
	}
}

func sessionPanicClosesWith1011(t *testing.T, cfg serviceConfig, boom string) {
	ts := startService(t, cfg)
	arm := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	obs := ts.dial(t, ts.wsURL())
	obsID := num(obs.expect()["session_id"])
	force := func() float64 {
		return vec(path(obs.roundTrip(`{}`), "arm3", 0, "state", "current_cursor_force"))[2]
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the observer to see the commanded force", func() error {
		// Renewed inside the poll: the 100 ms lease may lapse between
		// polls on a loaded machine.
		c.roundTrip(`{"arm3":[{"device_id":"` + arm + `","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":1.5}}}}]}`)
		if z := force(); z < 0.1 {
			return fmt.Errorf("the observer sees z=%v, want the commanded force", z)
		}
		return nil
	})

	c.send(boom)
	_ = c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.conn.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseInternalServerErr {
		t.Fatalf("after the session panicked the client read %v, want close 1011", err)
	}
	hwtest.EventuallyNil(t, 5*time.Second, "the force to end after the panic", func() error {
		if z := force(); z != 0 {
			return fmt.Errorf("the observer sees z=%v after the session panicked, want 0", z)
		}
		return nil
	})
	hwtest.EventuallyNil(t, 5*time.Second, "the observer to be the only session listed", func() error {
		r := ts.do(http.MethodGet, ts.base+"/sessions", "")
		list, _ := path(r.data(), "sessions").([]any)
		if len(list) != 1 || num(path(list[0], "session_id")) != obsID {
			return fmt.Errorf("GET /sessions: %s, want only the observer", r.body)
		}
		return nil
	})
}

// A device actor that keeps panicking: each request it panicked on answers
// 500 at once; past its restart budget the device leaves GET /devices,
// answers 404, and GET /events reports device-failed.
func TestDeviceActorPastItsBudgetOverHTTP(t *testing.T) {
	var panicking atomic.Bool
	ts := startService(t, serviceConfig{arms: 2, deviceHook: func(d *actors.Device) {
		if panicking.Load() && d.ID == sim.ArmID(0) {
			panic("test hook: device actor")
		}
	}})
	url := ts.base + "/arm3/" + ts.armIDs[0] + "/config/handedness"
	panicking.Store(true)
	var statuses []int
	hwtest.EventuallyNil(t, 10*time.Second, "the failed device to be gone (404)", func() error {
		r := ts.do(http.MethodGet, url, "")
		statuses = append(statuses, r.status)
		if r.status != http.StatusNotFound {
			return fmt.Errorf("answers %v", statuses)
		}
		return nil
	})
	if statuses[0] != http.StatusInternalServerError {
		t.Fatalf("the first request it panicked on answered %d, want 500", statuses[0])
	}
	r := ts.do(http.MethodGet, ts.base+"/devices", "")
	if strings.Contains(string(r.body), ts.armIDs[0]) || !strings.Contains(string(r.body), ts.armIDs[1]) {
		t.Fatalf("GET /devices after the failure: %s", r.body)
	}
	hwtest.EventuallyNil(t, 5*time.Second, "a device-failed event", func() error {
		r := ts.do(http.MethodGet, ts.base+"/events?since=0", "")
		if !strings.Contains(string(r.body), `"device-failed"`) || !strings.Contains(string(r.body), ts.armIDs[0]) {
			return fmt.Errorf("no device-failed in %s", r.body)
		}
		return nil
	})
	if r := ts.do(http.MethodGet, ts.base+"/arm3/"+ts.armIDs[1]+"/config/handedness", ""); r.status != 200 {
		t.Fatalf("the other arm: %v", r)
	}
}
