package recording

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/activity"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/protocol/mcap"
	"github.com/hapticd/hapticd/protocol/schema"
)

// queueLen bounds each recording's queue (100 arms at 1 kHz fill it in
// about 80 ms if the writer stalls).
const queueLen = 8192

// defaultTapTicks is each recorded device's ring by default: a quarter
// second at 1 kHz for the pump to fall behind before the loop drops. With
// many devices the rings share tapBytes instead (a snapshot is about 300
// bytes: 10,000 simulated arms would otherwise hold 740 MB), down to
// minTapTicks, three drains' worth at 1 kHz.
const (
	defaultTapTicks = 256
	tapBytes        = 32 << 20
	minTapTicks     = 16
)

// tapTicksFor is the ring of each of n recorded devices.
func tapTicksFor(n int) int {
	if n <= 0 {
		return defaultTapTicks
	}
	per := tapBytes / (n * int(reflect.TypeFor[loop.Snapshot]().Size()))
	return min(max(per, minTapTicks), defaultTapTicks)
}

// drainEvery is how often the pump drains the devices' rings, and
// attachEvery how often it looks for devices that came or went.
const (
	drainEvery  = 5 * time.Millisecond
	attachEvery = 100 * time.Millisecond
)

// flushEvery bounds how much a killed service loses: a chunk is written at
// least this often.
const flushEvery = 250 * time.Millisecond

// ErrClosed is Start's answer once StopAll has run (the service is
// shutting down): a recording started then would never be stopped and
// its file never completed.
var ErrClosed = errors.New("recording: the service is shutting down")

// MaxRunning bounds the recordings running at once: each keeps rings for
// every device (up to 32 MiB) and costs every loop tick a copy, so a
// client starting them in a loop would slow every arm's loop.
const MaxRunning = 8

// MaxStoppedListed bounds the stopped recordings List keeps: a service
// recording each trial all day would otherwise list (and hold) every one.
// An older one leaves the list; its file stays where it was written.
const MaxStoppedListed = 64

// ErrTooMany is Start's answer while MaxRunning recordings run.
var ErrTooMany = fmt.Errorf("recording: %d recordings are running, the most at once; stop one (DELETE /recordings/{id}) first", MaxRunning)

// ErrNoDirectory is Start's answer when the service has nowhere to write.
var ErrNoDirectory = errors.New("recording: recordings need a directory (start hapticd with --record DIR or a state directory)")

// Config is what a Recorder needs of the service.
type Config struct {
	Service *actors.Service
	// Dir is where recordings go; "" refuses Start with ErrNoDirectory.
	Dir string
	// TapTicks is each recorded device's ring, in ticks; <= 0 sizes the
	// rings by the number of devices.
	TapTicks int
	Log      zerolog.Logger
	// ServedSchema returns the JSON Schema the service serves under a name
	// ("client-message", "frame", "event"), so a recording's channels
	// carry the very schema clients validate against. nil, or an error,
	// keeps the minimal schemas.
	ServedSchema func(name string) (schema.Schema, error)
	// Create makes a new recording's file at path; nil creates it (and
	// refuses one that exists). Tests give a file whose writes fail.
	Create func(path string) (*os.File, error)
}

// Options is the body of POST /recordings.
type Options struct {
	// Devices are device IDs to record; empty records every device.
	Devices []string `json:"devices,omitempty"`
	// Sessions are session IDs to record; empty records every session.
	Sessions []uint64 `json:"sessions,omitempty"`
	// RateHz decimates device states; 0 records every tick.
	RateHz float64 `json:"rate_hz,omitempty"`
	Name   string  `json:"name,omitempty"`
}

// ErrBadOptions is Start's answer to options that would make no
// recording (the client's fault); Start's other errors are the service's.
var ErrBadOptions = errors.New("recording: bad options")

// MinRateHz is the lowest rate_hz but 0: a state at most every 1000 s.
// Below it the decimation interval in nanoseconds overflows the loop's
// clock arithmetic and the tap would record every tick instead.
const MinRateHz = 0.001

// MaxNameLen bounds a recording's name: the file name adds about 30
// bytes to it, and a file system takes 255.
const MaxNameLen = 128

// NamePattern is the names check takes, as a regular expression (the
// schema of POST /recordings states it; check says which rule a name
// breaks): letters, digits, '-', '_' and '.', not first, or none.
const NamePattern = `^([A-Za-z0-9_-][A-Za-z0-9._-]*)?$`

// Check refuses options that would make no recording, before any file
// or id is taken.
func (o Options) Check() error {
	if o.RateHz < 0 || o.RateHz > 0 && o.RateHz < MinRateHz || math.IsNaN(o.RateHz) || math.IsInf(o.RateHz, 0) {
		return fmt.Errorf("%w: rate_hz must be 0 (every tick) or at least %g, got %v", ErrBadOptions, MinRateHz, o.RateHz)
	}
	if len(o.Name) > MaxNameLen {
		return fmt.Errorf("%w: name is %d bytes long, at most %d", ErrBadOptions, len(o.Name), MaxNameLen)
	}
	if strings.HasPrefix(o.Name, ".") {
		// The file would be hidden from a directory listing.
		return fmt.Errorf("%w: name %q may not start with '.'", ErrBadOptions, o.Name)
	}
	for _, c := range o.Name {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return fmt.Errorf("%w: name %q may hold only letters, digits, '-', '_' and '.'", ErrBadOptions, o.Name)
		}
	}
	return nil
}

// Info is one recording as GET /recordings lists it.
type Info struct {
	ID       uint64    `json:"id"`
	Name     string    `json:"name"`
	Path     string    `json:"path"`
	Options  Options   `json:"options"`
	Started  time.Time `json:"started"`
	Active   bool      `json:"active"`
	Messages uint64    `json:"messages"`
	// Dropped counts messages lost: refused by the recording's queue,
	// events published while it ran that it could not collect (its
	// subscription fell behind, or the activity actor had not handed them
	// over within lastEventsWait of the stop), or device states a loop
	// dropped; DroppedStates is the latter part.
	Dropped       uint64 `json:"dropped"`
	DroppedStates uint64 `json:"dropped_states"`
	Error         string `json:"error,omitempty"`
}

// item is one message on its way to the writer.
type item struct {
	kind string
	key  string // device or session id within the kind
	// seat is a state's device's place in the recording's device order
	// (pump.order), counted from 1: its channel's "order" metadata.
	seat int
	ns   int64
	data []byte
	buf  *[]byte // data's buffer, back to Recorder.stateBufs once written
}

// recording is one file being written.
type recording struct {
	// Atomics.
	dropped atomic.Uint64 // refused by queue
	// droppedStates counts the states the loops dropped; the pump keeps
	// it up to date.
	droppedStates atomic.Uint64
	written       atomic.Uint64
	active        atomic.Bool
	// lostInventories holds the sessions (their channel key) whose
	// inventory the queue dropped, for the writer to mark their frames
	// channel (InventoryLost) when a later frame makes it.
	lostInventories sync.Map
	// Immutable after Start.
	id       uint64
	opts     Options
	name     string
	path     string
	started  time.Time
	clock    loop.Clock
	queue    chan item
	sessions map[uint64]bool // nil: every session
	stop     context.CancelFunc
	done     chan struct{} // closed once the file is complete
	// finished is set, under Recorder.mu, when the writer ended before
	// Start listed it: Start then lists it stopped.
	finished bool
	// errMu guards err (lock order: the package doc, # Locks).
	errMu sync.Mutex
	err   error
}

// put queues an item without waiting; a full queue counts a drop.
func (r *recording) put(it item) bool {
	select {
	case r.queue <- it:
		return true
	default:
		r.dropped.Add(1)
		return false
	}
}

// droppedAll is every message lost so far.
func (r *recording) droppedAll() uint64 { return r.dropped.Load() + r.droppedStates.Load() }

func (r *recording) wantsSession(id uint64) bool { return r.sessions == nil || r.sessions[id] }

// setErr keeps the first error; Info reports it.
func (r *recording) setErr(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
}

func (r *recording) info() Info {
	i := Info{ID: r.id, Name: r.name, Path: r.path, Options: r.opts, Started: r.started,
		Active: r.active.Load(), Messages: r.written.Load(), Dropped: r.droppedAll(), DroppedStates: r.droppedStates.Load()}
	r.errMu.Lock()
	if r.err != nil {
		i.Error = r.err.Error()
	}
	r.errMu.Unlock()
	return i
}

// Recorder is the service's set of recordings. Its methods may be called
// from any goroutine; the taps (Session, Config) also on a nil Recorder.
type Recorder struct {
	// active is read by every tap: copy-on-write, nil when none record.
	active atomic.Pointer[[]*recording]
	// Immutable after New.
	cfg     Config
	clock   loop.Clock
	schemas map[string][]byte // channel kind → JSON Schema
	// stateBufs recycles encoded states: at 1 kHz per device they would
	// otherwise be the recorder's main garbage.
	stateBufs sync.Pool
	// mu guards the following (lock order: the package doc, # Locks).
	mu sync.Mutex
	// all are the recordings whose file is not complete yet; stopped the
	// final state of the last MaxStoppedListed complete ones, oldest
	// stopped first. A stopped recording keeps no more than its Info.
	all     []*recording
	stopped []Info
	nextID  uint64
	closed  bool // StopAll has run: Start refuses
	// starting counts the Starts under way, not yet in all.
	starting int
}

// New returns the service's recordings, none running.
func New(cfg Config) *Recorder {
	rs := &Recorder{cfg: cfg, clock: loop.SystemClock(), nextID: 1, schemas: channelSchemas(cfg)}
	rs.stateBufs.New = func() any { b := make([]byte, 0, 512); return &b }
	return rs
}

// channelSchemas are the JSON Schemas written for the recording's
// channels: the minimal ones, with the served schemas of client messages,
// frames and events in their place where the service gives them.
func channelSchemas(cfg Config) map[string][]byte {
	out := map[string][]byte{}
	for _, s := range minimalSchemas {
		out[s.kind] = []byte(s.schema)
	}
	if cfg.ServedSchema == nil {
		return out
	}
	for _, w := range []struct{ kind, served, title, timeAbout string }{
		{KindClient, "client-message", "a session's client message as received", "receive time"},
		{KindFrame, "frame", "a frame as sent to a session", "send time"},
		{KindEvent, "event", "an activity event", ""},
	} {
		b, err := wrapServed(cfg.ServedSchema, w.kind, w.served, w.title, w.timeAbout)
		if err != nil {
			cfg.Log.Warn().Err(err).Str("schema", w.served).Msg("recording keeps its minimal channel schema")
			continue
		}
		out[w.kind] = b
	}
	return out
}

// wrapServed makes a channel's schema of the served schema: under
// "message" of a session's record, or the event itself.
func wrapServed(served func(string) (schema.Schema, error), kind, name, title, timeAbout string) ([]byte, error) {
	doc, err := served(name)
	if err != nil {
		return nil, err
	}
	defs, _ := doc["$defs"].(schema.Schema)
	if defs == nil {
		defs = schema.Schema{}
	}
	delete(doc, "$defs")
	delete(doc, "$schema")
	defs[name] = doc
	wrapped := schema.Schema{"$schema": schema.Dialect, "title": title, "$ref": "#/$defs/" + name, "$defs": defs}
	if kind != KindEvent {
		wrapped = schema.Schema{
			"$schema":  schema.Dialect,
			"title":    title,
			"type":     "object",
			"required": []string{"session", "time_ns", "message"},
			"properties": schema.Schema{
				"session": schema.Schema{"type": "integer"},
				"time_ns": schema.Schema{"type": "integer", "description": timeAbout},
				"message": schema.Schema{"$ref": "#/$defs/" + name},
			},
			"$defs": defs,
		}
		if kind == KindFrame {
			wrapped["properties"].(schema.Schema)["inventory"] = schema.Schema{"const": true,
				"description": "the session's inventory, the frame its opening sent: present only on it"}
		}
	}
	return json.Marshal(wrapped)
}

// maxNameTries bounds the names a start tries when the first is taken
// (Start): past it, the create's error answers.
const maxNameTries = 100

// Start opens a file and starts recording into it. Every tick after it
// returns is recorded.
func (rs *Recorder) Start(o Options) (Info, error) {
	if rs.cfg.Dir == "" {
		return Info{}, ErrNoDirectory
	}
	if err := o.Check(); err != nil {
		return Info{}, err
	}
	if err := os.MkdirAll(rs.cfg.Dir, 0o755); err != nil {
		return Info{}, fmt.Errorf("recording: recordings directory: %w", err)
	}
	rs.mu.Lock()
	if rs.closed {
		rs.mu.Unlock()
		return Info{}, ErrClosed
	}
	if rs.runningLocked()+rs.starting >= MaxRunning {
		rs.mu.Unlock()
		return Info{}, ErrTooMany
	}
	// The place is taken until this start is listed or fails: two
	// starts at once cannot both take the last one.
	rs.starting++
	id := rs.nextID
	rs.nextID++
	listed := false
	defer func() {
		if !listed { // a failed start gives its place back here
			rs.mu.Lock()
			rs.starting--
			if rs.nextID == id+1 {
				// And its id, unless a later start took one: a failed
				// POST takes no id, as the docs say.
				rs.nextID = id
			}
			rs.mu.Unlock()
		}
	}()
	rs.mu.Unlock()
	name := o.Name
	if name == "" {
		name = "recording"
	}
	started := time.Now()
	create := rs.cfg.Create
	if create == nil {
		create = func(path string) (*os.File, error) {
			return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		}
	}
	// NAME-TIME-ID.mcap. Ids start at 1 with each run, and the time has
	// seconds: a service restarted within the second of a file its last
	// run left (a supervisor's quick restart), or another service on the
	// same directory, finds the name taken. It takes the next free one,
	// NAME-TIME-ID-2.mcap and on, and never writes over a file.
	base := fmt.Sprintf("%s-%s-%d", name, started.UTC().Format("20060102T150405"), id)
	var f *os.File
	var path string
	var err error
	for n := 1; ; n++ {
		path = filepath.Join(rs.cfg.Dir, base+".mcap")
		if n > 1 {
			path = filepath.Join(rs.cfg.Dir, fmt.Sprintf("%s-%d.mcap", base, n))
		}
		if f, err = create(path); !errors.Is(err, fs.ErrExist) || n == maxNameTries {
			break
		}
	}
	if err != nil {
		return Info{}, fmt.Errorf("recording: create %s: %w", path, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &recording{id: id, opts: o, name: name, path: path, started: started, clock: rs.clock,
		queue: make(chan item, queueLen), stop: cancel, done: make(chan struct{})}
	// The header and schemas are written before Start answers: a file
	// that refuses its first bytes (a full disk, a read-only mount) is a
	// failed start, not a recording that fails once listed.
	w, err := mcap.NewWriter(f, mcap.Header{Library: "hapticd"}, 0)
	var wr *writer
	if err == nil {
		wr = newWriter(rs, r, f, w)
		err = wr.addSchemas()
	}
	if err != nil {
		cancel()
		_ = f.Close()
		_ = os.Remove(path)
		return Info{}, fmt.Errorf("recording: %s: %w", path, err)
	}
	if len(o.Sessions) > 0 {
		r.sessions = map[uint64]bool{}
		for _, s := range o.Sessions {
			r.sessions[s] = true
		}
	}
	r.active.Store(true)
	// Subscribed before Start answers, as the taps are attached: an event
	// published once it has (the session a client opens right after POST
	// /recordings) is recorded. Without waiting for the activity actor,
	// which may be seconds behind a flood of events: what it has not
	// handed over by the stop counts as dropped.
	events := rs.cfg.Service.Activity()
	sub := events.SubscribeLive()
	var producers sync.WaitGroup
	producers.Add(2)
	attached := make(chan struct{})
	go func() { defer producers.Done(); newPump(rs, r).run(ctx, attached) }()
	go func() { defer producers.Done(); r.events(ctx, events, sub) }()
	go wr.run(&producers)
	<-attached
	rs.mu.Lock()
	if rs.closed {
		// StopAll ran while this one started and did not see it: end it
		// here, and leave no file for a recording that was refused.
		rs.mu.Unlock()
		r.active.Store(false)
		cancel()
		<-r.done
		_ = os.Remove(path)
		return Info{}, ErrClosed
	}
	// Listed and no longer starting in one locked section: in between it
	// would count twice, and a start beside it be refused the last place.
	if r.finished { // its file refused a write already, and is complete
		rs.keepStoppedLocked(r.info())
	} else {
		rs.all = append(rs.all, r)
	}
	rs.starting--
	listed = true
	rs.publishLocked()
	rs.mu.Unlock()
	return r.info(), nil
}

// runningLocked counts the recordings running.
func (rs *Recorder) runningLocked() int {
	n := 0
	for _, r := range rs.all {
		if r.active.Load() {
			n++
		}
	}
	return n
}

// publishLocked refreshes the taps' list.
func (rs *Recorder) publishLocked() {
	var act []*recording
	for _, r := range rs.all {
		if r.active.Load() {
			act = append(act, r)
		}
	}
	if len(act) == 0 {
		rs.active.Store(nil)
		return
	}
	rs.active.Store(&act)
}

// Stop ends a recording and waits until its file is complete; false when
// there is no recording id listed.
func (rs *Recorder) Stop(id uint64) (Info, bool) {
	rs.mu.Lock()
	var r *recording
	for _, c := range rs.all {
		if c.id == id {
			r = c
		}
	}
	if r == nil {
		defer rs.mu.Unlock()
		for _, i := range rs.stopped {
			if i.ID == id {
				return i, true
			}
		}
		return Info{}, false
	}
	wasActive := r.active.Swap(false)
	rs.publishLocked()
	rs.mu.Unlock()
	if wasActive {
		r.stop()
	}
	<-r.done
	return r.info(), true
}

// retire moves r, whose file is complete, from the recordings running to
// the stopped ones: its writer calls it last, before closing r.done.
func (rs *Recorder) retire(r *recording) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	i := slices.Index(rs.all, r)
	if i < 0 {
		r.finished = true // not listed yet: Start lists it stopped
		return
	}
	rs.all = slices.Delete(rs.all, i, i+1)
	rs.keepStoppedLocked(r.info())
}

// keepStoppedLocked lists a stopped recording, and forgets the oldest
// stopped past MaxStoppedListed.
func (rs *Recorder) keepStoppedLocked(i Info) {
	rs.stopped = append(rs.stopped, i)
	if n := len(rs.stopped) - MaxStoppedListed; n > 0 {
		rs.stopped = slices.Delete(rs.stopped, 0, n)
	}
}

// writeFailed ends r after its writer's first failed write (err): the taps
// stop feeding it, its producers stop, and the activity channel says so.
// Its writer goes on to count what still reaches it as dropped and to close
// the file; Info reports it inactive, with err.
func (rs *Recorder) writeFailed(r *recording, err error) {
	// The event goes first: whoever sees the recording listed inactive
	// with its error finds the event that says why.
	rs.cfg.Log.Error().Err(err).Uint64("recording", r.id).Msg("recording stopped: its file refused a write")
	if rs.cfg.Service != nil {
		rs.cfg.Service.Activity().Publish(event.RecordingFailed(r.id, r.name, r.path, err.Error()))
	}
	rs.mu.Lock()
	r.active.Store(false)
	rs.publishLocked()
	rs.mu.Unlock()
	r.stop()
}

// StopAll ends every recording (shutdown); Start refuses from then on.
func (rs *Recorder) StopAll() {
	rs.mu.Lock()
	rs.closed = true
	ids := make([]uint64, 0, len(rs.all))
	for _, r := range rs.all {
		ids = append(ids, r.id)
	}
	rs.mu.Unlock()
	// All at once: each may wait for its last events (lastEventsWait) and
	// syncs its file, and shutdown should wait for the slowest, not the sum.
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { rs.Stop(id) })
	}
	wg.Wait()
}

// List returns this run's recordings running and the last
// MaxStoppedListed stopped, oldest first.
func (rs *Recorder) List() []Info {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]Info, 0, len(rs.all)+len(rs.stopped))
	out = append(out, rs.stopped...)
	for _, r := range rs.all {
		out = append(out, r.info())
	}
	slices.SortFunc(out, func(a, b Info) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Recording says whether a recording runs: a tap's caller may skip work
// (reading a request body) when none does.
func (rs *Recorder) Recording() bool { return rs != nil && rs.active.Load() != nil }

// running returns the running recordings and the time now, or nil when
// none runs (one atomic load: the taps' whole cost then).
func (rs *Recorder) running() ([]*recording, int64) {
	if rs == nil {
		return nil, 0
	}
	act := rs.active.Load()
	if act == nil {
		return nil, 0
	}
	return *act, rs.clock.Now()
}

// Active reports whether a recording runs: a tap whose input costs
// something to put together (a frame written in parts) asks first.
func (rs *Recorder) Active() bool { return rs != nil && rs.active.Load() != nil }

// Session records one client message (KindClient) or frame (KindFrame) of
// a session, at the time it was received or is sent. It copies buf: the
// caller may reuse it.
func (rs *Recorder) Session(kind string, session uint64, buf []byte) {
	act, ns := rs.running()
	if act == nil {
		return
	}
	// The inventory is sent while the session opens, before the
	// connection knows its id: the frame carries it. Marked, it tells
	// Drive the session was recorded from its start: a later frame (one
	// answering force_render_full_state) may hold all it holds.
	inventory := session == 0 && kind == KindFrame
	if session == 0 {
		var inv struct {
			SessionID uint64 `json:"session_id"`
		}
		_ = json.Unmarshal(buf, &inv)
		session = inv.SessionID
	}
	var data []byte
	for _, r := range act {
		if !r.wantsSession(session) {
			continue
		}
		if data == nil {
			data = sessionMessage(session, ns, buf, kind == KindFrame, inventory)
		}
		key := strconv.FormatUint(session, 10)
		if !r.put(item{kind: kind, key: key, ns: ns, data: data}) && inventory {
			// Before any later frame of the session is queued (its
			// frames come one after another): the writer sees it when
			// one of them makes the channel.
			r.lostInventories.Store(key, true)
		}
	}
}

// Config records a config or settings change made over HTTP, with the
// status it was answered.
func (rs *Recorder) Config(method, path string, status int, body []byte) {
	act, ns := rs.running()
	if act == nil {
		return
	}
	data := configChange(method, path, status, body)
	for _, r := range act {
		r.put(item{kind: KindConfig, ns: ns, data: data})
	}
}

// lastEventsWait bounds how long a stopped recording waits for the events
// published before its stop that the activity actor has not handed over
// yet: behind a flood of events it can be seconds behind, and DELETE
// /recordings/{id} (and shutdown) must answer. Those still not handed over
// then count as dropped.
const lastEventsWait = 500 * time.Millisecond

// events records sub's events until ctx ends, and then those published
// before it ended: every event published while the recording ran, though
// the activity actor hands them over later, or, when it is too far behind
// (lastEventsWait), counted dropped as each one it could not take is.
func (r *recording) events(ctx context.Context, events *activity.Activity, sub *activity.Subscription) {
	defer sub.Close()
	// The actor hands every event over in seq order from the first live
	// one: all before accounted is recorded or counted dropped.
	accounted := sub.FirstLiveSeq() - 1
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			break
		}
		accounted = r.takeEvent(e, accounted, math.MaxUint64)
	}
	if ctx.Err() == nil {
		return // the activity actor stopped: nothing more is coming
	}
	until := events.LastPublishedSeq()
	wait, cancel := context.WithTimeout(context.Background(), lastEventsWait)
	defer cancel()
	for accounted < until {
		e, err := sub.Next(wait)
		if err != nil {
			break
		}
		accounted = r.takeEvent(e, accounted, until)
	}
	if accounted < until {
		r.dropped.Add(until - accounted)
	}
}

// takeEvent records e, given that the events up to seq accounted are
// recorded or counted dropped, and returns up to which seq they are then.
// The events the subscription could not hold for the recording (behind an
// events-dropped event, recorded as well, or a gap in seqs) count as
// dropped, up to seq until: those after it came after the stop.
func (r *recording) takeEvent(e event.Event, accounted, until uint64) uint64 {
	r.putEvent(e)
	through := e.Seq // a published event: handed over after those before it
	lostThrough := through - 1
	if missed, ok := event.MissedOf(e); ok && e.Seq <= accounted {
		// The subscription's own: it stands for the events after its seq.
		through = e.Seq + missed
		lostThrough = through
	}
	if lostThrough = min(lostThrough, until); lostThrough > accounted {
		r.dropped.Add(lostThrough - accounted)
	}
	return max(accounted, min(through, until))
}

func (r *recording) putEvent(e event.Event) {
	data, _ := e.MarshalJSON()
	r.put(item{kind: KindEvent, ns: r.clock.Now(), data: data})
}
