package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
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
// state, each session's messages and frames, config changes over HTTP,
// and activity events. Taps never block: they put a copy on a bounded
// queue and count a drop when it is full; one writer goroutine per
// recording owns the file. The device loops are not touched at all: a
// sampler reads their lock-free snapshots.

// recordQueue bounds each recording's queue (100 arms at 1 kHz fill it in
// about 80 ms if the writer stalls).
const recordQueue = 8192

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
	{kindState, "hapticd.DeviceState", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"hapticd device state","type":"object","required":["device","type","tick","time_ns","position","velocity","force"],"properties":{"device":{"type":"string"},"type":{"type":"string"},"status":{"type":"integer","description":"status flags, as hw.Status"},"tick":{"type":"integer"},"time_ns":{"type":"integer"},"mode":{"type":"integer"},"owner":{"type":"integer"},"applied_seq":{"type":"integer"},"failed":{"type":"boolean"},"target":{"type":"array","items":{"type":"number"}},"position":{"type":"array","items":{"type":"number"}},"velocity":{"type":"array","items":{"type":"number"}},"force":{"type":"array","items":{"type":"number"}}}}`},
	{kindIn, "hapticd.ClientMessage", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"a session's client message as received","type":"object","required":["session","time_ns","message"],"properties":{"session":{"type":"integer"},"time_ns":{"type":"integer","description":"receive time"},"message":{}}}`},
	{kindOut, "hapticd.Frame", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"a frame as sent to a session","type":"object","required":["session","time_ns","message"],"properties":{"session":{"type":"integer"},"time_ns":{"type":"integer","description":"send time"},"message":{}}}`},
	{kindConfig, "hapticd.ConfigChange", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"an HTTP config or settings change","type":"object","required":["method","path","status"],"properties":{"method":{"type":"string"},"path":{"type":"string"},"status":{"type":"integer"},"body":{}}}`},
	{kindEvent, "hapticd.Event", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"an activity event (PROTOCOL.md)","type":"object","required":["seq","time","name"],"properties":{"seq":{"type":"integer"},"time":{"type":"string"},"name":{"type":"string"},"category":{"type":"string"},"level":{"type":"string"},"data":{},"message":{"type":"string"}}}`},
	{kindStats, "hapticd.RecorderStats", `{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"the recorder's own counters","type":"object","required":["dropped","messages"],"properties":{"dropped":{"type":"integer","description":"messages the bounded queue refused so far"},"messages":{"type":"integer"}}}`},
}

// RecordingOptions is the body of POST /recordings.
type RecordingOptions struct {
	// Devices are device IDs to record; empty records every device.
	Devices []string `json:"devices,omitempty"`
	// Sessions are session IDs to record; empty records every session.
	Sessions []uint64 `json:"sessions,omitempty"`
	// RateHz decimates device states; 0 samples at the loop rate.
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
	Dropped  uint64           `json:"dropped"`
	Error    string           `json:"error,omitempty"`
}

// recItem is one message on its way to the writer.
type recItem struct {
	kind string
	key  string // device or session id within the kind
	ns   int64
	data []byte
}

type recording struct {
	id       uint64
	opts     RecordingOptions
	name     string
	path     string
	started  time.Time
	clock    loop.Clock
	queue    chan recItem
	dropped  atomic.Uint64
	written  atomic.Uint64
	sessions map[uint64]bool // nil: every session
	stop     context.CancelFunc
	done     chan struct{}
	active   atomic.Bool
	errMu    sync.Mutex
	err      error
}

// put queues an item without waiting; a full queue counts a drop.
func (r *recording) put(it recItem) {
	select {
	case r.queue <- it:
	default:
		r.dropped.Add(1)
	}
}

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
	active  atomic.Pointer[[]*recording]
	schemas map[string][]byte // channel kind → JSON Schema; immutable
	mu      sync.Mutex        // guards the following
	all     []*recording
	nextID  uint64
}

func newRecorders(svc *actors.Service, dir string, log zerolog.Logger) *recorders {
	return &recorders{svc: svc, dir: dir, log: log, clock: loop.SystemClock(), nextID: 1, schemas: channelSchemas(svc.Types(), log)}
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
	go func() { defer wg.Done(); rs.sample(ctx, r) }()
	go func() { defer wg.Done(); rs.events(ctx, r) }()
	go rs.write(r, f, w, &wg)
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
		Active: r.active.Load(), Messages: r.written.Load(), Dropped: r.dropped.Load()}
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
		r.put(recItem{kind: kind, key: strconv.FormatUint(session, 10), ns: ns, data: sessionMessage(session, ns, buf)})
	}
}

// sessionMessage wraps a client message or frame; one that is not JSON (a
// client's bad input) is kept as a string.
func sessionMessage(session uint64, ns int64, buf []byte) []byte {
	out := make([]byte, 0, len(buf)+64)
	out = append(out, `{"session":`...)
	out = strconv.AppendUint(out, session, 10)
	out = append(out, `,"time_ns":`...)
	out = strconv.AppendInt(out, ns, 10)
	out = append(out, `,"message":`...)
	if json.Valid(buf) {
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

// RecordedState is the recorded form of one loop snapshot.
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
}

// RecordedMessage is a session's client message or frame as recorded.
type RecordedMessage struct {
	Session uint64          `json:"session"`
	TimeNs  int64           `json:"time_ns"` // receive time (client), send time (frame)
	Message json.RawMessage `json:"message"` // a JSON string when the client sent no JSON
}

// appendJSON encodes s as encoding/json would, without reflection: the
// sampler encodes every arm at the loop rate.
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
	for _, f := range []struct {
		name string
		v    *[3]float64
	}{{"target", &s.Target}, {"position", &s.Position}, {"velocity", &s.Velocity}, {"force", &s.Force}} {
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":[`...)
		for i, x := range f.v {
			if i > 0 {
				b = append(b, ',')
			}
			if math.IsNaN(x) || math.IsInf(x, 0) {
				x = 0 // JSON has no NaN; a failed device's state is zero
			}
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

// sample reads each recorded device's latest snapshot at rate_hz (the loop
// rate by default) and queues those that changed. It reads the loops'
// lock-free snapshots: a loop never waits on it.
func (rs *recorders) sample(ctx context.Context, r *recording) {
	period := time.Duration(rs.svc.LoopPeriodNs())
	if r.opts.RateHz > 0 {
		period = time.Duration(float64(time.Second) / r.opts.RateHz)
	}
	if period <= 0 {
		period = time.Millisecond
	}
	t := time.NewTicker(period)
	defer t.Stop()
	last := map[*actors.Device]uint64{}
	var snap loop.Snapshot
	for {
		ds := rs.svc.Devices()
		for _, typ := range rs.svc.Types().Types() {
			for _, d := range ds.OfType(typ) {
				if len(r.opts.Devices) > 0 && !slices.Contains(r.opts.Devices, d.ID) {
					continue
				}
				d.Load(&snap)
				if prev, seen := last[d]; seen && prev == snap.Tick {
					continue
				}
				last[d] = snap.Tick
				st := RecordedState{Device: d.ID, Type: d.Type.Key(), Status: uint8(snap.State.Status), Tick: snap.Tick, TimeNs: snap.TimeNs, Mode: int(snap.Mode), Owner: snap.Owner,
					AppliedSeq: snap.AppliedSeq, Failed: snap.Failed, Target: snap.Target,
					Position: vec3(snap.State.PositionM), Velocity: vec3(snap.State.VelocityMps), Force: vec3(snap.State.ForceN)}
				data := st.appendJSON(make([]byte, 0, 400))
				ns := snap.TimeNs
				if ns == 0 {
					ns = r.clock.Now()
				}
				r.put(recItem{kind: kindState, key: d.Name + "-" + d.ID, ns: ns, data: data})
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
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
			Dropped  uint64 `json:"dropped"`
			Messages uint64 `json:"messages"`
		}{r.dropped.Load(), r.written.Load()})
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
