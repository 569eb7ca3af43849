package transport

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/mcap"
	"github.com/hapticd/hapticd/protocol/mcap/mcaptest"
)

// lockStep drives arm id with a force that pushes it around for d, one
// message per frame, and returns the frames received after the inventory
// and the number of messages sent.
func lockStep(t *testing.T, c *wsClient, id string, d time.Duration) []map[string]any {
	t.Helper()
	var frames []map[string]any
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		ph := float64(i) / 50
		frames = append(frames, c.roundTrip(force(id, 2*math.Sin(ph), 2*math.Cos(ph), 0.5)))
	}
	return frames
}

// recordedFile reads a finished recording with the project's reader.
func recordedFile(t *testing.T, path string) *mcap.File {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := mcap.Read(b)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if !f.Complete || f.Statistics == nil || f.Chunks == 0 || len(f.ChunkIndexes) != f.Chunks {
		t.Fatalf("%s: complete %v, %d chunks, %d chunk indexes, statistics %v: want a complete chunked and indexed file", path, f.Complete, f.Chunks, len(f.ChunkIndexes), f.Statistics)
	}
	return f
}

// byTopic gathers a file's messages per topic.
func byTopic(f *mcap.File) map[string][]mcap.Message {
	out := map[string][]mcap.Message{}
	for _, m := range f.Messages {
		topic := f.Channels[m.ChannelID].Topic
		out[topic] = append(out[topic], m)
	}
	return out
}

func TestRecordLockStepSession(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	arm := ts.armIDs[0]
	started := ts.do("POST", ts.base+"/recordings", `{"name":"lockstep"}`)
	if started.status != 200 {
		t.Fatalf("POST /recordings: %v", started)
	}
	id := int(num(path(started.data(), "id")))
	file, _ := path(started.data(), "path").(string)

	c := ts.dial(t, ts.wsURL())
	inv := c.expect()
	session := strconv.Itoa(int(num(inv["session_id"])))
	frames := lockStep(t, c, arm, 2*time.Second)
	if len(frames) < 50 {
		t.Fatalf("only %d round trips in 2 s", len(frames))
	}
	// A config change over HTTP is recorded too.
	if r := ts.do("POST", ts.base+"/arm3/"+arm+"/config/handedness", `"left"`); r.status != 200 {
		t.Fatalf("config change: %v", r)
	}

	if l := ts.do("GET", ts.base+"/recordings", ""); l.status != 200 || path(l.data(), 0, "active") != true {
		t.Fatalf("GET /recordings while recording: %v", l)
	}
	stopped := ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(id), "")
	if stopped.status != 200 || path(stopped.data(), "active") != false {
		t.Fatalf("DELETE /recordings/%d: %v", id, stopped)
	}
	if r := ts.do("DELETE", ts.base+"/recordings/999", ""); r.status != 404 {
		t.Fatalf("DELETE of an unknown recording: %v, want 404", r)
	}

	f := recordedFile(t, file)
	topics := byTopic(f)
	clientTopic, frameTopic := "/sessions/"+session+"/client", "/sessions/"+session+"/frames"
	if got := len(topics[clientTopic]); got != len(frames) {
		t.Errorf("%s: %d messages recorded, %d sent", clientTopic, got, len(frames))
	}
	// Every frame the client received, the inventory first, is recorded
	// byte for byte in order.
	if got := len(topics[frameTopic]); got != len(frames)+1 {
		t.Fatalf("%s: %d frames recorded, %d received", frameTopic, got, len(frames)+1)
	}
	var stateTopic string
	for topic := range topics {
		if strings.HasPrefix(topic, "/devices/") && strings.HasSuffix(topic, "-"+arm+"/state") {
			stateTopic = topic
		}
	}
	states := topics[stateTopic]
	if len(states) < 100 {
		t.Fatalf("device %s: %d states recorded over %d round trips (topics %v)", arm, len(states), len(frames), keys(topics))
	}
	// The device states match the frames: a frame reports the arm's state
	// at the latest tick (in float32), and the frames, many per tick, see
	// every tick; so a state recorded while the session held the arm is
	// one the client received.
	seen := map[[6]float32]bool{}
	for i, fr := range frames {
		var rec struct {
			Message json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal(topics[frameTopic][i+1].Data, &rec); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(rec.Message, &got); err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(t, got, mustJSON(t, fr)) {
			t.Fatalf("frame %d: recorded %s, received %v", i, rec.Message, fr)
		}
		st := path(fr, "arm3", 0, "state")
		seen[key6(vec(path(st, "cursor_position")), vec(path(st, "current_cursor_force")))] = true
	}
	held, matched := 0, 0
	for _, m := range states {
		var st RecordedState
		if err := json.Unmarshal(m.Data, &st); err != nil {
			t.Fatal(err)
		}
		// Held by the session, and before its last frame (the arm stays
		// held until its lease runs out).
		if strconv.FormatUint(st.Owner, 10) != session || m.LogTime > topics[frameTopic][len(topics[frameTopic])-1].LogTime {
			continue
		}
		held++
		if seen[key6(st.Position, st.Force)] {
			matched++
		}
	}
	// A client stalled past a tick (a loaded machine) sees no frame of
	// that tick: most states, not all, have their frame.
	if held < 50 || matched < held*3/4 {
		t.Errorf("%d of %d states recorded while the session held the arm match a received frame", matched, held)
	}
	if cfg := topics["/config"]; len(cfg) != 1 || !strings.Contains(string(cfg[0].Data), `"status":200`) || !strings.Contains(string(cfg[0].Data), `"body":"left"`) {
		t.Errorf("/config: %d messages, want the one handedness change: %v", len(cfg), cfg)
	}
	// The recorder's own counts close the file and agree with DELETE's answer.
	stats := topics["/recorder"]
	if len(stats) == 0 {
		t.Fatal("no /recorder messages")
	}
	var last struct{ Dropped, Messages float64 }
	if err := json.Unmarshal(stats[len(stats)-1].Data, &last); err != nil {
		t.Fatal(err)
	}
	if last.Dropped != num(path(stopped.data(), "dropped")) {
		t.Errorf("the file's last drop count %v, DELETE answered %v", last.Dropped, path(stopped.data(), "dropped"))
	}
	if len(topics["/events"]) == 0 || len(topics["/recorder"]) == 0 {
		t.Errorf("events %d, recorder stats %d: want both recorded", len(topics["/events"]), len(topics["/recorder"]))
	}

	js := mcaptest.Read(t, file)
	if len(js.Indexed.Channels) != len(f.Channels) || len(js.Indexed.Schemas) != len(f.Schemas) {
		t.Fatalf("@mcap/core: %d channels, %d schemas; ours: %d, %d", len(js.Indexed.Channels), len(js.Indexed.Schemas), len(f.Channels), len(f.Schemas))
	}
	for cid, ch := range f.Channels {
		k := strconv.Itoa(int(cid))
		jc := js.Indexed.Channels[k]
		n := len(topics[ch.Topic])
		if jc.Topic != ch.Topic || jc.Count != n || js.Streamed.Channels[k] != n || jc.SchemaID != int(ch.SchemaID) {
			t.Errorf("channel %s: @mcap/core %+v (streamed %d), ours %d messages, schema %d", ch.Topic, jc, js.Streamed.Channels[k], n, ch.SchemaID)
		}
		js, ours := js.Indexed.Schemas[strconv.Itoa(int(ch.SchemaID))], f.Schemas[ch.SchemaID]
		if js.Name != ours.Name || js.Encoding != "jsonschema" || js.Data != string(ours.Data) || !json.Valid(ours.Data) {
			t.Errorf("schema %d: @mcap/core %+v, ours %s", ch.SchemaID, js, ours.Name)
		}
	}
	if js.Statistics.MessageCount != len(f.Messages) {
		t.Errorf("@mcap/core counts %d messages, ours %d", js.Statistics.MessageCount, len(f.Messages))
	}
}

// The sampler's hand-written encoding decodes to what it encoded.
func TestRecordedStateJSON(t *testing.T) {
	in := RecordedState{Device: "049D", Type: "arm3", Status: 7, Tick: 12, TimeNs: -3, Mode: 1, Owner: 4, AppliedSeq: 9, Failed: true,
		Target: [3]float64{1, -2.5, 1e-9}, Position: [3]float64{0.1, 0.15, 0.2}, Velocity: [3]float64{-1e300, 0, 3}, Force: [3]float64{1.5, 2, 3}}
	b := in.appendJSON(nil)
	var out RecordedState
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("%s decodes to %+v (%v), want %+v", b, out, err, in)
	}
}

// A full queue never blocks a tap: it drops, and counts the drop.
func TestRecordingQueueDropsWhenFull(t *testing.T) {
	r := &recording{queue: make(chan recItem, 2)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 5; i++ {
			r.put(recItem{kind: kindState})
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("put blocked on a full queue")
	}
	if got := r.dropped.Load(); got != 3 {
		t.Fatalf("dropped %d, want 3", got)
	}
}

func TestRecordingRefusesBadOptions(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	for _, body := range []string{`{"rate_hz":-1}`, `{"name":"../x"}`, `{"nope":1}`, `[`} {
		if r := ts.do("POST", ts.base+"/recordings", body); r.status != 400 {
			t.Errorf("POST /recordings %s: %v, want 400", body, r)
		}
	}
	if l := ts.do("GET", ts.base+"/recordings", ""); l.status != 200 || !jsonEqual(t, l.data(), `[]`) {
		t.Errorf("after refused starts: %v, want no recordings", l)
	}
}

// key6 is a state's position and force as a frame writes them (float32).
func key6(p, f [3]float64) [6]float32 {
	return [6]float32{float32(p[0]), float32(p[1]), float32(p[2]), float32(f[0]), float32(f[1]), float32(f[2])}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// BenchmarkRecordingCost measures what a recording of 100 moving arms at
// the 1 kHz loop rate costs: the lock-step round trip (p50/p99) and the
// loops' period p99, with and without the recording running. The lead
// measures on a quiet machine:
//
//	go test -run '^$' -bench BenchmarkRecordingCost -benchtime 20000x ./transport
func BenchmarkRecordingCost(b *testing.B) {
	for _, record := range []bool{false, true} {
		name := "off"
		if record {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			ts := startService(b, serviceConfig{arms: 100, motion: sim.MotionCircle, recordDir: b.TempDir()})
			var id string
			if record {
				r := ts.do("POST", ts.base+"/recordings", `{"name":"bench"}`)
				if r.status != 200 {
					b.Fatalf("POST /recordings: %v", r)
				}
				id = strconv.Itoa(int(num(path(r.data(), "id"))))
			}
			c := ts.dial(b, ts.wsURL())
			c.expect()
			_ = c.conn.SetReadDeadline(time.Time{}) // a long run outlasts the helper's read deadline
			msg := []byte(force(ts.armIDs[0], 0, 0, 0.1))
			ns := make([]int64, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				roundTripBytes(b, c.conn, msg)
				ns = append(ns, time.Since(t0).Nanoseconds())
			}
			b.StopTimer()
			p50, p99 := percentiles(ns)
			b.ReportMetric(p50/1e3, "rt-p50-µs")
			b.ReportMetric(p99/1e3, "rt-p99-µs")
			var period int64
			for _, d := range ts.svc.Devices().OfType(protocol.TypeArm) {
				period = max(period, d.Stats().Period.P99Ns)
			}
			b.ReportMetric(float64(period)/1e3, "loop-period-p99-µs")
			if record {
				r := ts.do("DELETE", ts.base+"/recordings/"+id, "")
				b.ReportMetric(num(path(r.data(), "messages")), "recorded-msgs")
				b.ReportMetric(num(path(r.data(), "dropped")), "dropped-msgs")
			}
		})
	}
}
