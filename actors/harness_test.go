package actors

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
)

// startWith starts a service with o (logs off, one simulation shard) and
// shuts it down when the test ends.
func startWith(t *testing.T, o Options) *Service {
	t.Helper()
	o.Log = zerolog.Nop()
	if o.SimShards == 0 {
		o.SimShards = 1
	}
	svc, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(t, svc) })
	return svc
}

func shutdown(t *testing.T, svc *Service) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := svc.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

func addArm(t *testing.T, svc *Service, d hw.Driver) *Device {
	t.Helper()
	dev, err := svc.AddDevice(d, false)
	if err != nil {
		t.Fatal(err)
	}
	return dev
}

func simArm(index int) *sim.Arm { return sim.NewArm(sim.ArmOptions{Index: index, PeriodS: 0.001}) }

// recSink is a connection as a test sees it: every frame, and the close
// code the session asked for.
type recSink struct {
	frames chan []byte
	closed chan int
	once   sync.Once
}

func newRecSink() *recSink {
	return &recSink{frames: make(chan []byte, 4096), closed: make(chan int, 1)}
}

func (s *recSink) Buffer() []byte  { return make([]byte, 0, 1024) }
func (s *recSink) Send(buf []byte) { s.frames <- buf }
func (s *recSink) Recycle([]byte)  {}
func (s *recSink) Close(reason protocol.CloseReason) {
	s.once.Do(func() { s.closed <- reason.CloseCode() })
}

// waitClosed fails the test unless the session closes the connection with
// code within 5 s.
func (s *recSink) waitClosed(t *testing.T, code int) {
	t.Helper()
	select {
	case got := <-s.closed:
		if got != code {
			t.Fatalf("closed with %d, want %d", got, code)
		}
	case <-time.After(patience):
		t.Fatalf("the connection was not closed within %v (want %d)", patience, code)
	}
}

// patience bounds every wait in this package's tests for something the
// service does on its own (a frame, a close, a driver closed): generous,
// because the full suite runs under -race on a shared 2-core machine,
// where 5 s was not always enough.
const patience = 30 * time.Second

// next returns the next frame, decoded.
func (s *recSink) next(t *testing.T) testFrame {
	t.Helper()
	select {
	case b := <-s.frames:
		var f testFrame
		if err := json.Unmarshal(b, &f.raw); err != nil {
			t.Fatalf("frame is not JSON: %v: %s", err, b)
		}
		f.text = string(b)
		return f
	case <-time.After(patience):
		t.Fatalf("no frame within %v", patience)
		return testFrame{}
	}
}

// testFrame is a decoded frame with accessors for what the tests read.
type testFrame struct {
	raw  map[string]any
	text string
}

// device returns the element of device id, whatever the array's key.
func (f testFrame) device(id string) map[string]any {
	for _, v := range f.raw {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		for _, e := range list {
			if m, ok := e.(map[string]any); ok && m["device_id"] == id {
				return m
			}
		}
	}
	return nil
}

// forceZ is the z of an arm's current_cursor_force.
func (f testFrame) forceZ(t *testing.T, id string) float64 {
	t.Helper()
	d := f.device(id)
	if d == nil {
		t.Fatalf("arm %s is not in the frame: %s", id, f.text)
	}
	force := d["state"].(map[string]any)["current_cursor_force"].(map[string]any)
	return force["z"].(float64)
}

// errorCodes lists the codes of the frame's errors.
func (f testFrame) errorCodes() []string {
	var out []string
	list, _ := f.raw["errors"].([]any)
	for _, e := range list {
		out = append(out, fmt.Sprint(e.(map[string]any)["code"]))
	}
	return out
}

// open opens a session with codec (protocol.Codec when nil) and reads its
// inventory.
func open(t *testing.T, svc *Service, codec Codec) (*Session, *recSink) {
	t.Helper()
	if codec == nil {
		codec = protocol.Codec{}
	}
	sink := newRecSink()
	sess, err := svc.OpenSession(SessionOptions{Remote: "test", Codec: codec, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close(protocol.CloseClientClosed) })
	sink.next(t)
	return sess, sink
}

// reader delivers messages to a session on a goroutine of its own, in
// order, as a connection's reader does: Deliver may wait for the session's
// actor, and the test meanwhile watches the frames.
type reader struct {
	in              chan string
	done            chan struct{}
	sent, delivered atomic.Int64
}

// startReader starts a reader for sess; it stops with the test.
func startReader(t *testing.T, sess *Session) *reader {
	r := &reader{in: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for m := range r.in {
			sess.Deliver([]byte(m), 0)
			r.delivered.Add(1)
		}
	}()
	t.Cleanup(func() {
		close(r.in)
		sess.Close(protocol.CloseClientClosed) // a Deliver still waiting returns
		<-r.done
	})
	return r
}

func (r *reader) send(msg string) {
	r.sent.Add(1)
	r.in <- msg
}

// settled waits until every message sent so far has been delivered. A
// session writes each message's frame (if it gets one) on the reader's
// goroutine before Deliver returns (Session.Deliver), so the sink then
// holds every frame those messages will ever get: a test can assert that
// none came without waiting for a window in which a late one might.
func (r *reader) settled(t *testing.T) {
	t.Helper()
	hwtest.EventuallyNil(t, patience, "the reader to deliver every message sent", func() error {
		if d, s := r.delivered.Load(), r.sent.Load(); d != s {
			return fmt.Errorf("%d of %d messages delivered", d, s)
		}
		return nil
	})
}

// noFrame fails the test if the sink holds a frame. Call it once whatever
// could write one has provably finished (reader.settled, or a later
// message's frame already read: frames are written in order).
func (s *recSink) noFrame(t *testing.T, what string) {
	t.Helper()
	select {
	case f := <-s.frames:
		t.Fatalf("%s: %s", what, f)
	default:
	}
}

// exchange sends one message and returns its frame.
func exchange(t *testing.T, sess *Session, sink *recSink, msg string) testFrame {
	t.Helper()
	sess.Deliver([]byte(msg), 0)
	return sink.next(t)
}

func forceMsg(id string, z float64) string {
	return fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":%g}}}}]}`, id, z)
}

// waitEvent waits for an event named name whose data contains want (a
// JSON fragment such as `"device_id":"049D"`), and returns its data.
func waitEvent(t *testing.T, svc *Service, name, want string) string {
	t.Helper()
	var data string
	hwtest.EventuallyNil(t, 5*time.Second, "a "+name+" event", func() error {
		page, err := svc.Activity().Recent(0, 0)
		if err != nil {
			return err
		}
		for _, e := range page.Events {
			if e.Name == name && strings.Contains(string(e.Data), want) {
				data = string(e.Data)
				return nil
			}
		}
		return fmt.Errorf("no %s event with %s among %d events", name, want, len(page.Events))
	})
	return data
}

// countEvents counts the events named name whose data contains want.
func countEvents(t *testing.T, svc *Service, name, want string) int {
	t.Helper()
	page, err := svc.Activity().Recent(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range page.Events {
		if e.Name == name && strings.Contains(string(e.Data), want) {
			n++
		}
	}
	return n
}

// waitSupervision waits until the activity actor has seen a supervision
// decision with directive for an actor whose id starts with prefix.
func waitSupervision(t *testing.T, svc *Service, prefix, directive string) {
	t.Helper()
	hwtest.EventuallyNil(t, 5*time.Second, "a supervision decision", func() error {
		rep, err := svc.Activity().Supervision()
		if err != nil {
			return err
		}
		for _, n := range rep.Recent {
			if strings.HasPrefix(n.Actor, prefix) && n.Directive == directive {
				return nil
			}
		}
		return fmt.Errorf("no %s of %s* in %+v", directive, prefix, rep.Recent)
	})
}

// errCode is the error-table code of err ("" for nil).
func errCode(err error) protocol.Code {
	if err == nil {
		return ""
	}
	return protocol.AsError(err, "").Code
}

// panicCodec is the 3.x codec, except that it panics on a message that
// contains trigger.
type panicCodec struct {
	protocol.Codec
	trigger string
}

func (c panicCodec) Decode(data []byte, types *protocol.TypeTable, dst *protocol.ClientMessage) []protocol.Error {
	if strings.Contains(string(data), c.trigger) {
		panic("test codec: " + c.trigger)
	}
	return c.Codec.Decode(data, types, dst)
}

// fakeDriver wraps a simulated arm as a plain driver, like one of real
// hardware: the loop exchanges with it every tick (the simulated arm's own
// fast paths, which step its physics without its driver, are hidden), so a
// panic set in Exchange comes on the next tick whatever the arm is doing.
// It counts Halt and Close calls.
type fakeDriver struct {
	Arm       *sim.Arm
	panicking atomic.Bool
	halts     atomic.Int64
	closes    atomic.Int64
}

func (d *fakeDriver) Info() hw.Info { return d.Arm.Info() }

func (d *fakeDriver) Exchange(cmd *hw.Command, st *hw.State) error {
	if d.panicking.Load() {
		panic("test driver: exchange")
	}
	return d.Arm.Exchange(cmd, st)
}

func (d *fakeDriver) Configure(s hw.Settings) error { return d.Arm.Configure(s) }

func (d *fakeDriver) Halt() error {
	d.halts.Add(1)
	return d.Arm.Halt()
}

func (d *fakeDriver) Close() error {
	d.closes.Add(1)
	return d.Arm.Close()
}

var (
	_ hw.Driver     = (*fakeDriver)(nil)
	_ hw.Configurer = (*fakeDriver)(nil)
)

// failingStore fails every Save of one document; the rest goes through.
type failingStore struct {
	Store
	name string
}

func (s failingStore) Save(name string, v any) error {
	if name == s.name {
		return fmt.Errorf("test store: %s: disk full", name)
	}
	return s.Store.Save(name, v)
}

// eventData extracts one field of an event's JSON data.
func eventData(t *testing.T, data, field string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(data), &m); err != nil {
		t.Fatal(err)
	}
	return m[field]
}

var _ = event.NameDeviceFailed
