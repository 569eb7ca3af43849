package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/mcap"
	"github.com/hapticd/hapticd/protocol/schema"
)

// Recordings write what the service sees to MCAP files: each device's
// state at every tick (or decimated to rate_hz), each session's messages
// and frames, config changes over HTTP, and activity events. Taps never
// block: they put a copy on a bounded queue and count a drop when it is
// full; one writer goroutine per recording owns the file. The device loops
// feed each recording's loop.Tap (a bounded ring per device, dropping and
// counting when full), which a pump goroutine drains into the queue.

// recordQueue bounds each recording's queue (100 arms at 1 kHz fill it in
// about 80 ms if the writer stalls).
const recordQueue = 8192

// recordTapTicks is each recorded device's ring by default: a quarter
// second at 1 kHz for the pump to fall behind before the loop drops. With
// many devices the rings share recordTapBytes instead (a snapshot is about
// 300 bytes: 10,000 simulated arms would otherwise hold 740 MB), down to
// minTapTicks, three drains' worth at 1 kHz.
const (
	recordTapTicks = 256
	recordTapBytes = 32 << 20
	minTapTicks    = 16
)

// tapTicksFor is the ring of each of n recorded devices.
func tapTicksFor(n int) int {
	if n <= 0 {
		return recordTapTicks
	}
	per := recordTapBytes / (n * int(reflect.TypeFor[loop.Snapshot]().Size()))
	return min(max(per, minTapTicks), recordTapTicks)
}

// recordDrainEvery is how often the pump drains the devices' rings, and
// recordAttachEvery how often it looks for devices that came or went.
const (
	recordDrainEvery  = 5 * time.Millisecond
	recordAttachEvery = 100 * time.Millisecond
)

// recordFlushEvery bounds how much a killed service loses: a chunk is
// written at least this often.
const recordFlushEvery = 250 * time.Millisecond

// Channel kinds, in each channel's "kind" metadata (its "key" names the
// device or session); each kind has one schema.
const (
	RecordKindState  = "state"
	RecordKindClient = "in"
	RecordKindFrame  = "out"
	kindConfig       = "config"
	kindEvent        = "event"
	kindStats        = "recorder"
	recProfile       = ""
	recEncoding      = "json"
)

const (
	kindState = RecordKindState
	kindIn    = RecordKindClient
	kindOut   = RecordKindFrame
)

// recordSchemas are the JSON Schemas of the recording's channels.
var recordSchemas = []struct {
	kind, name, schema string
}{
	{kindState, "hapticd.DeviceState", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"hapticd device state","type":"object","required":["device","type","tick","time_ns","position","velocity","force"],"properties":{"device":{"type":"string"},"type":{"type":"string"},"status":{"type":"integer","description":"status flags, as hw.Status"},"tick":{"type":"integer"},"time_ns":{"type":"integer"},"mode":{"type":"integer"},"owner":{"type":"integer"},"applied_seq":{"type":"integer"},"failed":{"type":"boolean"},"target":{"type":"array","items":{"type":"number"}},"position":{"type":"array","items":{"type":"number"}},"velocity":{"type":"array","items":{"type":"number"}},"force":{"type":"array","items":{"type":"number"}},"orientation":{"type":"array","items":{"type":"number"},"minItems":4,"maxItems":4,"description":"a grip's orientation quaternion, w x y z"},"buttons":{"type":"integer","description":"a grip's pressed buttons, as hw.Buttons"},"hall":{"type":"number","description":"a grip's hall sensor, 0..1"},"battery":{"type":"number","description":"a grip's battery level, 0..1"},"link":{"type":"string","enum":["wired","wireless","unknown"],"description":"how a grip reaches the host"}}}`},
	{kindIn, "hapticd.ClientMessage", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"a session's client message as received","type":"object","required":["session","time_ns","message"],"properties":{"session":{"type":"integer"},"time_ns":{"type":"integer","description":"receive time"},"message":{}}}`},
	{kindOut, "hapticd.Frame", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"a frame as sent to a session","type":"object","required":["session","time_ns","message"],"properties":{"session":{"type":"integer"},"time_ns":{"type":"integer","description":"send time"},"message":{}}}`},
	{kindConfig, "hapticd.ConfigChange", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"an HTTP config or settings change","type":"object","required":["method","path","status"],"properties":{"method":{"type":"string"},"path":{"type":"string"},"status":{"type":"integer"},"body":{}}}`},
	{kindEvent, "hapticd.Event", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"an activity event (PROTOCOL.md)","type":"object","required":["seq","time","name"],"properties":{"seq":{"type":"integer"},"time":{"type":"string"},"name":{"type":"string"},"category":{"type":"string"},"level":{"type":"string"},"data":{},"message":{"type":"string"}}}`},
	{kindStats, "hapticd.RecorderStats", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"the recorder's own counters","type":"object","required":["dropped","dropped_states","messages"],"properties":{"dropped":{"type":"integer","description":"messages lost so far: refused by the bounded queue, and device states the loops dropped"},"dropped_states":{"type":"integer","description":"of dropped, the device states the loops dropped (a device's ring was full)"},"messages":{"type":"integer"}}}`},
}

// RecordingOptions is the body of POST /recordings.
type RecordingOptions struct {
	// Devices are device IDs to record; empty records every device.
	Devices []string `json:"devices,omitempty"`
	// Sessions are session IDs to record; empty records every session.
	Sessions []uint64 `json:"sessions,omitempty"`
	// RateHz decimates device states; 0 records every tick.
	RateHz float64 `json:"rate_hz,omitempty"`
	Name   string  `json:"name,omitempty"`
}

// RecordingInfo is one recording as GET /recordings lists it.
type RecordingInfo struct {
	ID       uint64           `json:"id"`
	Name     string           `json:"name"`
	Path     string           `json:"path"`
	Options  RecordingOptions `json:"options"`
	Started  time.Time        `json:"started"`
	Active   bool             `json:"active"`
	Messages uint64           `json:"messages"`
	// Dropped counts messages lost: refused by the recording's queue, or
	// device states a loop dropped; DroppedStates is the latter part.
	Dropped       uint64 `json:"dropped"`
	DroppedStates uint64 `json:"dropped_states"`
	Error         string `json:"error,omitempty"`
}

// recItem is one message on its way to the writer.
type recItem struct {
	kind string
	key  string // device or session id within the kind
	ns   int64
	data []byte
	buf  *[]byte // data's buffer, back to stateBufs once written
}

type recording struct {
	id      uint64
	opts    RecordingOptions
	name    string
	path    string
	started time.Time
	clock   loop.Clock
	queue   chan recItem
	dropped atomic.Uint64 // refused by queue
	// droppedStates counts the states the loops dropped; the pump keeps
	// it up to date.
	droppedStates atomic.Uint64
	written       atomic.Uint64
	sessions      map[uint64]bool // nil: every session
	stop          context.CancelFunc
	done          chan struct{}
	active        atomic.Bool
	errMu         sync.Mutex
	err           error
}

// put queues an item without waiting; a full queue counts a drop.
func (r *recording) put(it recItem) bool {
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

func (r *recording) setErr(err error) {
	r.errMu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.errMu.Unlock()
}

// recorders is the service's set of recordings.
type recorders struct {
	svc   *actors.Service
	dir   string
	log   zerolog.Logger
	clock loop.Clock
	// active is read by every tap: copy-on-write, nil when none record.
	active   atomic.Pointer[[]*recording]
	schemas  map[string][]byte // channel kind → JSON Schema; immutable
	tapTicks int               // each recorded device's ring, in ticks; 0: tapTicksFor
	// stateBufs recycles encoded states: at 1 kHz per device they would
	// otherwise be the recorder's main garbage.
	stateBufs sync.Pool
	mu        sync.Mutex // guards the following
	all       []*recording
	nextID    uint64
}

// newRecorders returns the service's recordings; tapTicks <= 0 sizes the
// rings by the number of devices (tapTicksFor).
func newRecorders(svc *actors.Service, dir string, tapTicks int, log zerolog.Logger) *recorders {
	rs := &recorders{svc: svc, dir: dir, log: log, clock: loop.SystemClock(), nextID: 1, schemas: channelSchemas(svc.Types(), log), tapTicks: tapTicks}
	rs.stateBufs.New = func() any { b := make([]byte, 0, 512); return &b }
	return rs
}

// channelSchemas are the JSON Schemas written for the recording's
// channels: the recorder's own for its own records, and for client
// messages, frames and events the very schemas GET /schema serves
// (protocol/schema, for this service's names), each under "message" or as
// the event itself.
func channelSchemas(types *protocol.TypeTable, log zerolog.Logger) map[string][]byte {
	out := map[string][]byte{}
	for _, s := range recordSchemas {
		out[s.kind] = []byte(s.schema)
	}
	set := newSchemaSet(types)
	wrap := func(kind, served, title, timeAbout string) {
		doc, err := set.Document(served)
		if err != nil {
			log.Warn().Err(err).Str("schema", served).Msg("recording keeps its minimal channel schema")
			return
		}
		defs, _ := doc["$defs"].(schema.Schema)
		if defs == nil {
			defs = schema.Schema{}
		}
		delete(doc, "$defs")
		delete(doc, "$schema")
		defs[served] = doc
		wrapped := schema.Schema{
			"$schema":  schema.Dialect,
			"title":    title,
			"type":     "object",
			"required": []string{"session", "time_ns", "message"},
			"properties": schema.Schema{
				"session": schema.Schema{"type": "integer"},
				"time_ns": schema.Schema{"type": "integer", "description": timeAbout},
				"message": schema.Schema{"$ref": "#/$defs/" + served},
			},
			"$defs": defs,
		}
		if kind == kindEvent {
			wrapped = schema.Schema{"$schema": schema.Dialect, "title": title, "$ref": "#/$defs/" + served, "$defs": defs}
		}
		b, err := json.Marshal(wrapped)
		if err != nil {
			log.Warn().Err(err).Str("schema", served).Msg("recording keeps its minimal channel schema")
			return
		}
		out[kind] = b
	}
	wrap(kindIn, "client-message", "a session's client message as received", "receive time")
	wrap(kindOut, "frame", "a frame as sent to a session", "send time")
	wrap(kindEvent, "event", "an activity event", "")
	return out
}

// Start opens a file and starts recording into it.
func (rs *recorders) Start(o RecordingOptions) (RecordingInfo, error) {
	if rs.dir == "" {
		return RecordingInfo{}, fmt.Errorf("transport: recordings need a directory (start hapticd with --record DIR or a state directory)")
	}
	if o.RateHz < 0 || math.IsNaN(o.RateHz) || math.IsInf(o.RateHz, 0) {
		return RecordingInfo{}, fmt.Errorf("transport: rate_hz must be a positive number or 0 (the loop rate), got %v", o.RateHz)
	}
	for _, c := range o.Name {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return RecordingInfo{}, fmt.Errorf("transport: name %q may hold only letters, digits, '-', '_' and '.'", o.Name)
		}
	}
	if err := os.MkdirAll(rs.dir, 0o755); err != nil {
		return RecordingInfo{}, fmt.Errorf("transport: recordings directory: %w", err)
	}
	rs.mu.Lock()
	id := rs.nextID
	rs.nextID++
	rs.mu.Unlock()
	name := o.Name
	if name == "" {
		name = "recording"
	}
	started := time.Now()
	path := filepath.Join(rs.dir, fmt.Sprintf("%s-%s-%d.mcap", name, started.UTC().Format("20060102T150405"), id))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return RecordingInfo{}, fmt.Errorf("transport: create recording: %w", err)
	}
	w, err := mcap.NewWriter(f, mcap.Header{Profile: recProfile, Library: "hapticd"}, 0)
	if err != nil {
		_ = f.Close()
		return RecordingInfo{}, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &recording{id: id, opts: o, name: name, path: path, started: started, clock: rs.clock,
		queue: make(chan recItem, recordQueue), stop: cancel, done: make(chan struct{})}
	if len(o.Sessions) > 0 {
		r.sessions = map[uint64]bool{}
		for _, s := range o.Sessions {
			r.sessions[s] = true
		}
	}
	r.active.Store(true)
	var wg sync.WaitGroup
	wg.Add(2)
	attached := make(chan struct{})
	go func() { defer wg.Done(); rs.pump(ctx, r, attached) }()
	go func() { defer wg.Done(); rs.events(ctx, r) }()
	go rs.write(r, f, w, &wg)
	<-attached // every tick from here on is recorded
	rs.mu.Lock()
	rs.all = append(rs.all, r)
	rs.publish()
	rs.mu.Unlock()
	return r.info(), nil
}

// publish refreshes the taps' list; rs.mu is held.
func (rs *recorders) publish() {
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

// Stop ends a recording and waits until its file is complete.
func (rs *recorders) Stop(id uint64) (RecordingInfo, bool) {
	rs.mu.Lock()
	var r *recording
	for _, c := range rs.all {
		if c.id == id {
			r = c
		}
	}
	if r == nil {
		rs.mu.Unlock()
		return RecordingInfo{}, false
	}
	wasActive := r.active.Swap(false)
	rs.publish()
	rs.mu.Unlock()
	if wasActive {
		r.stop()
	}
	<-r.done
	return r.info(), true
}

// StopAll ends every recording (shutdown).
func (rs *recorders) StopAll() {
	rs.mu.Lock()
	ids := make([]uint64, 0, len(rs.all))
	for _, r := range rs.all {
		ids = append(ids, r.id)
	}
	rs.mu.Unlock()
	for _, id := range ids {
		rs.Stop(id)
	}
}

// List returns every recording of this run, oldest first.
func (rs *recorders) List() []RecordingInfo {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := make([]RecordingInfo, 0, len(rs.all))
	for _, r := range rs.all {
		out = append(out, r.info())
	}
	return out
}

func (r *recording) info() RecordingInfo {
	i := RecordingInfo{ID: r.id, Name: r.name, Path: r.path, Options: r.opts, Started: r.started,
		Active: r.active.Load(), Messages: r.written.Load(), Dropped: r.droppedAll(), DroppedStates: r.droppedStates.Load()}
	r.errMu.Lock()
	if r.err != nil {
		i.Error = r.err.Error()
	}
	r.errMu.Unlock()
	return i
}

// recording returns the running recordings and the time now, or nil when
// none runs (one atomic load: the taps' whole cost then).
func (rs *recorders) recording() ([]*recording, int64) {
	if rs == nil {
		return nil, 0
	}
	act := rs.active.Load()
	if act == nil {
		return nil, 0
	}
	return *act, rs.clock.Now()
}

// tapSession records one client message (in) or frame (out) of a session,
// at the time it was received or is sent. It copies buf: the caller reuses it.
func (rs *recorders) tapSession(kind string, session uint64, buf []byte) {
	act, ns := rs.recording()
	if act == nil {
		return
	}
	if session == 0 {
		// The inventory is sent while the session opens, before the
		// connection knows its id: the frame carries it.
		var inv struct {
			SessionID uint64 `json:"session_id"`
		}
		_ = json.Unmarshal(buf, &inv)
		session = inv.SessionID
	}
	for _, r := range act {
		if !r.wantsSession(session) {
			continue
		}
		r.put(recItem{kind: kind, key: strconv.FormatUint(session, 10), ns: ns, data: sessionMessage(session, ns, buf, kind == kindOut)})
	}
}

// sessionMessage wraps a client message or frame; a message that is not
// JSON (a client's bad input) is kept as a string. A frame is the service's
// own JSON (its encoders are checked against the schema): validating every
// frame of a 100-arm fleet took 30 % of the CPU while recording.
func sessionMessage(session uint64, ns int64, buf []byte, frame bool) []byte {
	out := make([]byte, 0, len(buf)+64)
	out = append(out, `{"session":`...)
	out = strconv.AppendUint(out, session, 10)
	out = append(out, `,"time_ns":`...)
	out = strconv.AppendInt(out, ns, 10)
	out = append(out, `,"message":`...)
	if frame || json.Valid(buf) {
		out = append(out, buf...)
	} else {
		s, _ := json.Marshal(string(buf))
		out = append(out, s...)
	}
	return append(out, '}')
}

// tapConfig records a config or settings change made over HTTP.
func (rs *recorders) tapConfig(method, path string, status int, body []byte) {
	act, ns := rs.recording()
	if act == nil {
		return
	}
	var b json.RawMessage
	if json.Valid(body) {
		b = body
	}
	data, _ := json.Marshal(struct {
		Method string          `json:"method"`
		Path   string          `json:"path"`
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body,omitempty"`
	}{method, path, status, b})
	for _, r := range act {
		r.put(recItem{kind: kindConfig, ns: ns, data: data})
	}
}

// RecordedState is the recorded form of one tick's loop snapshot. Grips
// also carry Orientation, Buttons, Hall and Battery (arms leave them out).
type RecordedState struct {
	Device     string     `json:"device"`
	Type       string     `json:"type"` // the reference's name: arm3 or grip
	Status     uint8      `json:"status"`
	Tick       uint64     `json:"tick"`
	TimeNs     int64      `json:"time_ns"`
	Mode       int        `json:"mode"`
	Owner      uint64     `json:"owner"`
	AppliedSeq uint64     `json:"applied_seq"`
	Failed     bool       `json:"failed"`
	Target     [3]float64 `json:"target"`
	Position   [3]float64 `json:"position"`
	Velocity   [3]float64 `json:"velocity"`
	Force      [3]float64 `json:"force"`
	// Grip.
	Orientation [4]float64 `json:"orientation"` // w x y z
	Buttons     uint8      `json:"buttons"`
	Hall        float64    `json:"hall"`
	Battery     float64    `json:"battery"`
	Link        string     `json:"link,omitempty"` // wired or wireless (hw.Link)
}

// IsGrip says whether s is a grip's state.
func (s *RecordedState) IsGrip() bool { return s.Type == protocol.TypeGrip.Key() }

// RecordedMessage is a session's client message or frame as recorded.
type RecordedMessage struct {
	Session uint64          `json:"session"`
	TimeNs  int64           `json:"time_ns"` // receive time (client), send time (frame)
	Message json.RawMessage `json:"message"` // a JSON string when the client sent no JSON
}

// appendJSON encodes s as encoding/json would, without reflection (the
// pump encodes every device at the loop rate), leaving the grip fields out
// of an arm's state.
func (s *RecordedState) appendJSON(b []byte) []byte {
	b = append(b, `{"device":`...)
	b = strconv.AppendQuote(b, s.Device)
	b = append(b, `,"type":`...)
	b = strconv.AppendQuote(b, s.Type)
	b = append(b, `,"status":`...)
	b = strconv.AppendUint(b, uint64(s.Status), 10)
	b = append(b, `,"tick":`...)
	b = strconv.AppendUint(b, s.Tick, 10)
	b = append(b, `,"time_ns":`...)
	b = strconv.AppendInt(b, s.TimeNs, 10)
	b = append(b, `,"mode":`...)
	b = strconv.AppendInt(b, int64(s.Mode), 10)
	b = append(b, `,"owner":`...)
	b = strconv.AppendUint(b, s.Owner, 10)
	b = append(b, `,"applied_seq":`...)
	b = strconv.AppendUint(b, s.AppliedSeq, 10)
	b = append(b, `,"failed":`...)
	b = strconv.AppendBool(b, s.Failed)
	b = appendFloats(b, "target", s.Target[:])
	b = appendFloats(b, "position", s.Position[:])
	b = appendFloats(b, "velocity", s.Velocity[:])
	b = appendFloats(b, "force", s.Force[:])
	if s.IsGrip() {
		b = appendFloats(b, "orientation", s.Orientation[:])
		b = append(b, `,"buttons":`...)
		b = strconv.AppendUint(b, uint64(s.Buttons), 10)
		b = appendFloats(b, "hall", []float64{s.Hall})
		b = appendFloats(b, "battery", []float64{s.Battery})
		b = append(b, `,"link":`...)
		b = strconv.AppendQuote(b, s.Link)
	}
	return append(b, '}')
}

// appendFloats appends ,"name":x (one value) or ,"name":[x,...].
func appendFloats(b []byte, name string, v []float64) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	if len(v) != 1 {
		b = append(b, '[')
	}
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			x = 0 // JSON has no NaN; a failed device's state is zero
		}
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
	}
	if len(v) != 1 {
		b = append(b, ']')
	}
	return b
}

// recordedState fills s from one tick's snapshot of d.
func recordedState(s *RecordedState, d *actors.Device, snap *loop.Snapshot) {
	st := &snap.State
	*s = RecordedState{Device: d.ID, Type: d.Type.Key(), Status: uint8(st.Status), Tick: snap.Tick, TimeNs: snap.TimeNs,
		Mode: int(snap.Mode), Owner: snap.Owner, AppliedSeq: snap.AppliedSeq, Failed: snap.Failed, Target: snap.Target,
		Position: vec3(st.PositionM), Velocity: vec3(st.VelocityMps), Force: vec3(st.ForceN)}
	if d.Type == protocol.TypeGrip {
		q := st.Orientation
		s.Orientation = [4]float64{q.W, q.X, q.Y, q.Z}
		s.Buttons, s.Hall, s.Battery, s.Link = uint8(st.Buttons), st.Hall, st.Battery, d.Info.Link.String()
	}
}

// feed is one recorded device's tap.
type feed struct {
	dev  *actors.Device
	tap  *loop.Tap
	key  string // the channel key
	seen bool   // still in the service's device set
}

// pump attaches a loop.Tap to each recorded device (and to devices that
// come later), and every recordDrainEvery moves what the loops queued onto
// the recording's queue. The loops feed the taps at every tick, or once
// per 1/rate_hz: a loop never waits on the pump; a full tap drops and
// counts, and the pump keeps droppedStates up to date. It detaches the
// taps, drains them a last time and returns once ctx ends. It closes
// attached once the devices there are have their taps.
func (rs *recorders) pump(ctx context.Context, r *recording, attached chan<- struct{}) {
	var everyNs int64
	if r.opts.RateHz > 0 {
		everyNs = int64(float64(time.Second) / r.opts.RateHz)
	}
	feeds := map[*actors.Device]*feed{}
	var goneDropped uint64 // the drops of taps of devices that went away
	attach := func() {
		for _, f := range feeds {
			f.seen = false
		}
		ds := rs.svc.Devices()
		var want []*actors.Device
		for _, typ := range rs.svc.Types().Types() {
			for _, d := range ds.OfType(typ) {
				if len(r.opts.Devices) == 0 || slices.Contains(r.opts.Devices, d.ID) {
					want = append(want, d)
				}
			}
		}
		ticks := rs.tapTicks
		if ticks <= 0 {
			ticks = tapTicksFor(len(want))
		}
		for _, d := range want {
			if f := feeds[d]; f != nil {
				f.seen = true
				continue
			}
			tap := loop.NewTap(ticks, everyNs)
			if err := d.AddTap(tap); err != nil {
				r.setErr(fmt.Errorf("transport: record %s: %w", d.ID, err))
				continue
			}
			feeds[d] = &feed{dev: d, tap: tap, key: d.Name + "-" + d.ID, seen: true}
		}
	}
	var snap loop.Snapshot
	var st RecordedState
	drain := func() {
		dropped := goneDropped
		for _, f := range feeds {
			for f.tap.Next(&snap) {
				recordedState(&st, f.dev, &snap)
				buf := rs.stateBufs.Get().(*[]byte)
				*buf = st.appendJSON((*buf)[:0])
				if !r.put(recItem{kind: kindState, key: f.key, ns: snap.TimeNs, data: *buf, buf: buf}) {
					rs.stateBufs.Put(buf)
				}
			}
			dropped += f.tap.Dropped()
		}
		r.droppedStates.Store(dropped)
	}
	detach := func(gone bool) {
		for d, f := range feeds {
			if gone && f.seen {
				continue
			}
			d.RemoveTap(f.tap)
		}
		drain() // what the loops queued before the taps came off
		for d, f := range feeds {
			if gone && f.seen {
				continue
			}
			goneDropped += f.tap.Dropped()
			delete(feeds, d)
		}
	}
	attach()
	close(attached)
	t := time.NewTicker(recordDrainEvery)
	defer t.Stop()
	lastAttach := time.Now()
	for {
		select {
		case <-ctx.Done():
			detach(false)
			return
		case <-t.C:
		}
		if time.Since(lastAttach) >= recordAttachEvery {
			lastAttach = time.Now()
			attach()
			detach(true) // devices that went away
		}
		drain()
	}
}

// events records the activity channel.
func (rs *recorders) events(ctx context.Context, r *recording) {
	sub, err := rs.svc.Activity().Subscribe(0, false)
	if err != nil {
		r.setErr(fmt.Errorf("transport: recording events: %w", err))
		return
	}
	defer sub.Close()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			return
		}
		data, _ := e.MarshalJSON()
		r.put(recItem{kind: kindEvent, ns: r.clock.Now(), data: data})
	}
}

// write owns the file: it turns queued items into messages on channels
// made on first use, writes a chunk at least every recordFlushEvery, and
// records its drop counter with each chunk.
func (rs *recorders) write(r *recording, f *os.File, w *mcap.Writer, producers *sync.WaitGroup) {
	defer close(r.done)
	schemaIDs := map[string]uint16{}
	for i, s := range recordSchemas {
		id := uint16(i + 1)
		schemaIDs[s.kind] = id
		if err := w.AddSchema(mcap.Schema{ID: id, Name: s.name, Encoding: "jsonschema", Data: rs.schemas[s.kind]}); err != nil {
			r.setErr(err)
		}
	}
	channels := map[string]uint16{}
	seq := map[uint16]uint32{}
	var failed bool
	emit := func(it recItem) {
		if it.buf != nil {
			defer rs.stateBufs.Put(it.buf) // WriteMessage copies the data
		}
		if failed {
			return
		}
		topic := recordTopic(it.kind, it.key)
		ch, ok := channels[topic]
		if !ok {
			ch = uint16(len(channels) + 1)
			channels[topic] = ch
			md := map[string]string{"kind": it.kind}
			if it.key != "" {
				md["key"] = it.key
			}
			if err := w.AddChannel(mcap.Channel{ID: ch, SchemaID: schemaIDs[it.kind], Topic: topic, MessageEncoding: recEncoding, Metadata: md}); err != nil {
				r.setErr(err)
				failed = true
				return
			}
		}
		seq[ch]++
		if err := w.WriteMessage(mcap.Message{ChannelID: ch, Sequence: seq[ch], LogTime: uint64(it.ns), PublishTime: uint64(it.ns), Data: it.data}); err != nil {
			r.setErr(err)
			failed = true
			return
		}
		r.written.Add(1)
	}
	stats := func() {
		data, _ := json.Marshal(struct {
			Dropped       uint64 `json:"dropped"`
			DroppedStates uint64 `json:"dropped_states"`
			Messages      uint64 `json:"messages"`
		}{r.droppedAll(), r.droppedStates.Load(), r.written.Load()})
		emit(recItem{kind: kindStats, ns: r.clock.Now(), data: data})
	}
	flush := func() {
		stats()
		if err := w.Flush(); err != nil && !failed {
			r.setErr(err)
			failed = true
		}
	}
	// The producers end when the recording stops; a marker then closes
	// the queue's tail so everything queued before the stop is written.
	stopped := make(chan struct{})
	go func() { producers.Wait(); close(stopped) }()
	t := time.NewTicker(recordFlushEvery)
	defer t.Stop()
	for {
		select {
		case it := <-r.queue:
			emit(it)
		case <-t.C:
			flush()
		case <-stopped:
			for {
				select {
				case it := <-r.queue:
					emit(it)
					continue
				default:
				}
				break
			}
			stats()
			if err := w.Close(); err != nil && !failed {
				r.setErr(err)
			}
			if err := f.Close(); err != nil {
				r.setErr(fmt.Errorf("transport: close recording: %w", err))
			}
			return
		}
	}
}

// vec3 flattens hw.Vec3 (transport does not import hw).
func vec3[V ~struct{ X, Y, Z float64 }](v V) [3]float64 {
	p := struct{ X, Y, Z float64 }(v)
	return [3]float64{p.X, p.Y, p.Z}
}

// recordTopic names a channel.
func recordTopic(kind, key string) string {
	switch kind {
	case kindState:
		return "/devices/" + key + "/state"
	case kindIn:
		return "/sessions/" + key + "/client"
	case kindOut:
		return "/sessions/" + key + "/frames"
	case kindConfig:
		return "/config"
	case kindEvent:
		return "/events"
	}
	return "/recorder"
}
