package transport

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/recording"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/mcap"
	"github.com/hapticd/hapticd/protocol/mcap/mcaptest"
)

// lockStep drives arm id with a force that pushes it around for d and at
// least n round trips (a loaded machine makes fewer in d), one message per
// frame, and returns the frames received after the inventory.
func lockStep(t *testing.T, c *wsClient, id string, d time.Duration, n int) []map[string]any {
	t.Helper()
	var frames []map[string]any
	start := time.Now()
	for i := 0; time.Since(start) < d || len(frames) < n; i++ {
		if time.Since(start) > d+time.Minute {
			t.Fatalf("only %d round trips in %v", len(frames), time.Since(start))
		}
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

// startRecording starts a recording with POST /recordings and body, and
// fails the test unless the service answers 200.
func (ts *testService) startRecording(body string) reply {
	ts.t.Helper()
	r := ts.do("POST", ts.base+"/recordings", body)
	if r.status != 200 {
		ts.t.Fatalf("POST /recordings %s: %v", body, r)
	}
	return r
}

func TestRecordLockStepSession(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	arm := ts.armIDs[0]
	started := ts.startRecording(`{"name":"lockstep"}`)
	id := int(num(path(started.data(), "id")))
	file, _ := path(started.data(), "path").(string)

	c := ts.dial(t, ts.wsURL())
	inv := c.expect()
	session := strconv.Itoa(int(num(inv["session_id"])))
	frames := lockStep(t, c, arm, 2*time.Second, 50)
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
	// The device states match the frames: the recording holds the arm's
	// state at every tick, and a frame reports the state of the latest
	// tick (in float32), so every frame the client received shows a
	// recorded state (but for states the loop dropped, if any), first
	// recorded before the frame was sent: one clock times both.
	recorded := map[[6]float32]uint64{} // the first log time of each state
	var prevTick uint64
	for _, m := range states {
		var st recording.State
		if err := json.Unmarshal(m.Data, &st); err != nil {
			t.Fatal(err)
		}
		if st.Tick <= prevTick || st.TimeNs != int64(m.LogTime) {
			t.Fatalf("state at tick %d (%d ns) logged at %d after tick %d", st.Tick, st.TimeNs, m.LogTime, prevTick)
		}
		prevTick = st.Tick
		if k := key6(st.Position, st.Force); recorded[k] == 0 {
			recorded[k] = m.LogTime
		}
	}
	unmatched, firstUnmatched := 0, ""
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
		at, ok := recorded[key6(vec(path(st, "cursor_position")), vec(path(st, "current_cursor_force")))]
		if !ok {
			unmatched++
			if firstUnmatched == "" {
				b, _ := json.Marshal(st)
				firstUnmatched = fmt.Sprintf("frame %d (sent at %d ns): %s", i, topics[frameTopic][i+1].LogTime, b)
			}
		} else if sent := topics[frameTopic][i+1].LogTime; at > sent {
			t.Fatalf("frame %d, sent at %d ns, shows a state first recorded at %d ns", i, sent, at)
		}
	}
	if dropped := int(num(path(stopped.data(), "dropped_states"))); unmatched > dropped {
		// Which state, and the recording's other drops (its queue's), so
		// that a failure says where to look: it was seen once under load
		// with no state dropped.
		t.Errorf("%d of %d frames show a state not recorded (%d states dropped, %v messages in all); the first: %s; recorded states %d, ticks %d to %d",
			unmatched, len(frames), dropped, path(stopped.data(), "dropped"), firstUnmatched, len(states), firstTick(t, states), prevTick)
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

// Options that would make no recording, or a file hidden from a listing,
// or overflow the decimation (a tiny rate_hz recorded every tick), are
// refused with invalid_value and change nothing: no file, no id taken. So
// is a body that is not one JSON object (invalid_json when it is not one
// JSON value, as on every route): a second object or trailing bytes after
// the options, or null, used to start a recording.
func TestRecordingRefusesBadOptions(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, recordDir: dir})
	for _, tt := range []struct {
		code   protocol.Code
		bodies []string
	}{
		{protocol.CodeInvalidValue, []string{
			`{"rate_hz":-1}`, `{"rate_hz":1e-12}`, `{"rate_hz":1e-300}`,
			`{"name":"../x"}`, `{"name":".."}`, `{"name":".hidden"}`,
			`{"name":"` + strings.Repeat("n", recording.MaxNameLen+1) + `"}`,
			`{"name":"` + strings.Repeat("n", 300) + `"}`,
			`{"nope":1}`, `null`, `"x"`, `[]`,
		}},
		{protocol.CodeInvalidJSON, []string{
			`[`, `{"name":"a"} garbage`, `{"name":"a"}{"rate_hz":-5}`, `{"name":"a"}]`,
		}},
	} {
		for _, body := range tt.bodies {
			r := ts.do("POST", ts.base+"/recordings", body)
			if r.status != 400 || r.env["code"] != string(tt.code) {
				t.Errorf("POST /recordings %.80s: %.300v, want 400 %s", body, r, tt.code)
			}
		}
	}
	if l := ts.do("GET", ts.base+"/recordings", ""); l.status != 200 || !jsonEqual(t, l.data(), `[]`) {
		t.Errorf("after refused starts: %v, want no recordings", l)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("after refused starts: %d files in the recordings directory, want none", len(files))
	}
	long := strings.Repeat("n", recording.MaxNameLen)
	r := ts.do("POST", ts.base+"/recordings", `{"name":"`+long+`","rate_hz":`+fmt.Sprint(recording.MinRateHz)+`}`)
	if r.status != 200 || num(path(r.data(), "id")) != 1 {
		t.Fatalf("POST /recordings with the longest name and the lowest rate: %v, want 200 and id 1 (the refused ones took none)", r)
	}
	if stopped := ts.do("DELETE", ts.base+"/recordings/1", ""); stopped.status != 200 {
		t.Fatalf("DELETE /recordings/1: %v", stopped)
	}
	// The second stop of one recording answers its final state again.
	if again := ts.do("DELETE", ts.base+"/recordings/1", ""); again.status != 200 || path(again.data(), "active") != false {
		t.Errorf("second DELETE /recordings/1: %v, want 200 and the stopped recording", again)
	}
	for _, id := range []string{"2", "0", "x", "-1", "18446744073709551616"} {
		if r := ts.do("DELETE", ts.base+"/recordings/"+id, ""); r.status < 400 || r.env["code"] == nil {
			t.Errorf("DELETE /recordings/%s: %v, want a JSON error", id, r)
		}
	}
}

// A recordings directory the service cannot write is its fault, not the
// request's: POST answers 500 internal, not 400 invalid_value.
func TestRecordingUnwritableDirectoryIsInternal(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ts := startService(t, serviceConfig{arms: 1, recordDir: filepath.Join(file, "recordings")})
	r := ts.do("POST", ts.base+"/recordings", `{"name":"fine"}`)
	if r.status != 500 || r.env["code"] != string(protocol.CodeInternal) {
		t.Errorf("POST /recordings into a directory under a file: %v, want 500 internal", r)
	}
}

// key6 is a state's position and force as a frame writes them (float32).
// firstTick is the tick of the first recorded state in states.
func firstTick(t *testing.T, states []mcap.Message) uint64 {
	t.Helper()
	var st recording.State
	if len(states) == 0 || json.Unmarshal(states[0].Data, &st) != nil {
		return 0
	}
	return st.Tick
}

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
// the 1 kHz loop rate costs (every tick of every arm through the loops'
// taps): the lock-step round trip (p50/p99) and the loop period p99 of the
// same service and session, first without a recording, then with one
// running, and their ratios (on/off). One op is one round trip of each.
// The lead measures on a quiet machine:
//
//	go test -run '^$' -bench BenchmarkRecordingCost -benchtime 20000x ./transport
func BenchmarkRecordingCost(b *testing.B) {
	ts := startService(b, serviceConfig{arms: 100, motion: sim.MotionCircle, recordDir: b.TempDir()})
	c := ts.dial(b, ts.wsURL())
	c.expect()
	_ = c.conn.SetReadDeadline(time.Time{}) // a long run outlasts the helper's read deadline
	msg := []byte(force(ts.armIDs[0], 0, 0, 0.1))
	arms := ts.svc.Devices().OfType(protocol.TypeArm)
	// phase runs b.N round trips and returns their times and the loops'
	// period p99 over them.
	phase := func() (rt []int64, periodP99 float64) {
		before := periodCounts(arms)
		rt = make([]int64, 0, b.N)
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			roundTripBytes(b, c.conn, msg)
			rt = append(rt, time.Since(t0).Nanoseconds())
		}
		return rt, diffQuantile(before, periodCounts(arms), 0.99)
	}
	b.ResetTimer()
	offRT, offPeriod := phase()
	b.StopTimer()
	r := ts.do("POST", ts.base+"/recordings", `{"name":"bench"}`)
	if r.status != 200 {
		b.Fatalf("POST /recordings: %v", r)
	}
	b.StartTimer()
	onRT, onPeriod := phase()
	b.StopTimer()
	stopped := ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(int(num(path(r.data(), "id")))), "")
	off50, off99 := percentiles(offRT)
	on50, on99 := percentiles(onRT)
	b.ReportMetric(off50/1e3, "rt-p50-off-µs")
	b.ReportMetric(off99/1e3, "rt-p99-off-µs")
	b.ReportMetric(on50/1e3, "rt-p50-on-µs")
	b.ReportMetric(on99/1e3, "rt-p99-on-µs")
	b.ReportMetric(offPeriod/1e3, "period-p99-off-µs")
	b.ReportMetric(onPeriod/1e3, "period-p99-on-µs")
	b.ReportMetric(on99/off99, "rt-p99-ratio")
	if offPeriod > 0 {
		b.ReportMetric(onPeriod/offPeriod, "period-p99-ratio")
	}
	b.ReportMetric(num(path(stopped.data(), "messages")), "recorded-msgs")
	b.ReportMetric(num(path(stopped.data(), "dropped")), "dropped-msgs")
}

// periodCounts adds up the period histograms of devs' runners (devices on
// one scheduler shard share one), by bucket upper bound.
func periodCounts(devs []*actors.Device) map[int64]uint64 {
	out := map[int64]uint64{}
	seen := map[actors.Histogram]bool{}
	for _, d := range devs {
		h := d.PeriodHistogram()
		if h == nil || seen[h] {
			continue
		}
		seen[h] = true
		h.Buckets(func(_, hi int64, n uint64) { out[hi] += n })
	}
	return out
}

// diffQuantile is the q quantile (a bucket's upper bound) of the values
// recorded between two periodCounts.
func diffQuantile(before, after map[int64]uint64, q float64) float64 {
	var his []int64
	var total uint64
	for hi, n := range after {
		if n > before[hi] {
			his = append(his, hi)
			total += n - before[hi]
		}
	}
	slices.Sort(his)
	var seen uint64
	for _, hi := range his {
		if seen += after[hi] - before[hi]; float64(seen) >= q*float64(total) {
			return float64(hi)
		}
	}
	return 0
}

// recordFor records the service's devices with the options in body until
// the first arm's loop ran ticks more ticks, and returns the file, DELETE's
// answer, and the arm's tick counter around the recording: after POST
// answered and before DELETE was sent (every tick between them is
// recorded), and before POST and after DELETE answered (no tick outside
// them is).
func recordFor(t *testing.T, ts *testService, body string, ticks uint64) (f *mcap.File, stopped reply, inner, outer [2]uint64) {
	t.Helper()
	arm := ts.svc.Devices().OfType(protocol.TypeArm)[0]
	outer[0] = arm.Stats().Ticks
	started := ts.startRecording(body)
	inner[0] = arm.Stats().Ticks
	hwtest.EventuallyNil(t, 30*time.Second, "the loop to run its ticks", func() error {
		if n := arm.Stats().Ticks - inner[0]; n < ticks {
			return fmt.Errorf("the loop ran %d ticks, waiting for %d", n, ticks)
		}
		return nil
	})
	inner[1] = arm.Stats().Ticks
	stopped = ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(int(num(path(started.data(), "id")))), "")
	if stopped.status != 200 {
		t.Fatalf("DELETE /recordings: %v", stopped)
	}
	outer[1] = arm.Stats().Ticks
	file, _ := path(started.data(), "path").(string)
	return recordedFile(t, file), stopped, inner, outer
}

// statesOf decodes the states recorded on the channel of the device whose
// id is id.
func statesOf(t *testing.T, f *mcap.File, id string) []recording.State {
	t.Helper()
	var out []recording.State
	for topic, ms := range byTopic(f) {
		if !strings.HasPrefix(topic, "/devices/") || !strings.HasSuffix(topic, "-"+id+"/state") {
			continue
		}
		for _, m := range ms {
			var st recording.State
			if err := json.Unmarshal(m.Data, &st); err != nil {
				t.Fatal(err)
			}
			out = append(out, st)
		}
	}
	return out
}

// A device's states are recorded at every tick the loop runs, or at
// rate_hz.
func TestRecordingAtTheLoopRate(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir(), motion: sim.MotionCircle})
	arm := ts.armIDs[0]

	t.Run("every tick", func(t *testing.T) {
		f, stopped, inner, outer := recordFor(t, ts, `{}`, 1000)
		states := statesOf(t, f, arm)
		if len(states) == 0 {
			t.Fatal("no states recorded")
		}
		first, last := states[0].Tick, states[len(states)-1].Tick
		dropped := uint64(num(path(stopped.data(), "dropped_states")))
		// Every tick the tap saw, from the first (an empty ring takes it)
		// to the recording's end, is recorded or counted dropped. The
		// drops need not all lie between the first and the last recorded
		// tick: a recorder starved at the stop finds the ring full, and
		// the ticks the loop ran meanwhile, dropped, come after the last
		// one recorded (a 400 ms stall of the pump before its detach
		// failed the count taken over first..last alone). So the ticks
		// missing inside first..last are drops, the other drops are the
		// ticks after last, and the tap's end is where they end.
		if span := last - first + 1; uint64(len(states)) > span || uint64(len(states))+dropped < span {
			t.Fatalf("%d states and %d dropped over ticks %d..%d (%d ticks)", len(states), dropped, first, last, span)
		}
		end := first + uint64(len(states)) + dropped - 1
		// And they are the ticks the loop ran while recording.
		if first > inner[0]+1 || end < inner[1] || first <= outer[0] || end > outer[1] {
			t.Fatalf("ticks %d..%d recorded, %d..%d recorded or dropped (%d states, %d dropped); the loop was at %d..%d while recording for sure, %d..%d at most",
				first, last, first, end, len(states), dropped, inner[0], inner[1], outer[0], outer[1])
		}
		if span := end - first + 1; dropped > span/4 { // a loaded machine may starve the recorder, never the count
			t.Fatalf("%d of %d ticks dropped", dropped, span)
		}
	})

	t.Run("rate_hz 100", func(t *testing.T) {
		// A recording of every tick runs alongside: it says when the
		// loop ticked, also when a loaded machine stalled it.
		all := ts.do("POST", ts.base+"/recordings", `{}`)
		if all.status != 200 {
			t.Fatalf("POST /recordings: %v", all)
		}
		f, _, _, _ := recordFor(t, ts, `{"rate_hz":100}`, 1000)
		ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(int(num(path(all.data(), "id")))), "")
		file, _ := path(all.data(), "path").(string)
		ticks := statesOf(t, recordedFile(t, file), arm)
		states := statesOf(t, f, arm)
		if len(states) < 50 {
			t.Fatalf("%d states recorded", len(states))
		}
		first, last := states[0].TimeNs, states[len(states)-1].TimeNs
		// Never more than 100 a second...
		if max := (last-first)/int64(10*time.Millisecond) + 1; int64(len(states)) > max {
			t.Fatalf("%d states over %d ns at rate_hz 100", len(states), last-first)
		}
		// ...and a state at the first tick 10 ms or more after the one
		// before, at the latest (after a stall the count restarts).
		k := 0
		for i := 1; i < len(states); i++ {
			due := states[i-1].TimeNs + int64(10*time.Millisecond)
			for k < len(ticks) && ticks[k].TimeNs < due {
				k++
			}
			if k < len(ticks) && states[i].TimeNs > ticks[k].TimeNs {
				t.Fatalf("state %d at %d ns: the loop ticked at %d ns, 10 ms after the state before (%d ns)", i, states[i].TimeNs, ticks[k].TimeNs, states[i-1].TimeNs)
			}
		}
	})
}

// A device's ring that fills (here: two ticks) drops states without
// holding the loop up; the drops are reported in GET /recordings and
// recorded in the file.
func TestRecordingCountsDroppedStates(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir(), recordTapTicks: 2})
	started := ts.startRecording(`{}`)
	hwtest.EventuallyNil(t, 30*time.Second, "dropped states counted", func() error {
		l := ts.do("GET", ts.base+"/recordings", "")
		if d := num(path(l.data(), 0, "dropped_states")); d == 0 || num(path(l.data(), 0, "dropped")) < d {
			return fmt.Errorf("GET /recordings: %v", l)
		}
		return nil
	})
	stopped := ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(int(num(path(started.data(), "id")))), "")
	file, _ := path(started.data(), "path").(string)
	stats := byTopic(recordedFile(t, file))["/recorder"]
	if len(stats) == 0 {
		t.Fatal("no /recorder messages")
	}
	var last struct {
		Dropped       float64 `json:"dropped"`
		DroppedStates float64 `json:"dropped_states"`
	}
	if err := json.Unmarshal(stats[len(stats)-1].Data, &last); err != nil {
		t.Fatal(err)
	}
	if last.DroppedStates == 0 || last.DroppedStates != num(path(stopped.data(), "dropped_states")) || last.Dropped != num(path(stopped.data(), "dropped")) {
		t.Fatalf("the file's last counts %+v; DELETE answered %v", last, stopped)
	}
}

// Grips are recorded with their orientation, buttons, hall sensor and
// battery at every tick; arms without those fields.
func TestRecordingGripStates(t *testing.T) {
	ts := startService(t, serviceConfig{grips: 1, arms: 1, recordDir: t.TempDir(), motion: sim.MotionCircle})
	f, _, _, _ := recordFor(t, ts, `{}`, 300)
	states := statesOf(t, f, ts.gripIDs[0])
	if len(states) < 100 {
		t.Fatalf("%d grip states recorded", len(states))
	}
	orientations, halls := map[[4]float64]bool{}, map[float64]bool{}
	for _, st := range states {
		q := st.Orientation
		if !st.IsGrip() || math.Abs(q[0]*q[0]+q[1]*q[1]+q[2]*q[2]+q[3]*q[3]-1) > 1e-6 || st.Battery <= 0 || st.Battery > 1 || st.Hall < 0 || st.Hall > 1 {
			t.Fatalf("grip state %+v: want a unit orientation, hall and battery in 0..1", st)
		}
		orientations[q], halls[st.Hall] = true, true
	}
	if len(orientations) < 10 || len(halls) < 10 {
		t.Fatalf("%d orientations, %d hall values over %d states of a moving grip", len(orientations), len(halls), len(states))
	}
	for _, st := range statesOf(t, f, ts.armIDs[0]) {
		if st.Orientation != [4]float64{} || st.IsGrip() {
			t.Fatalf("an arm's state carries grip fields: %+v", st)
		}
	}
}

// A session-scoped config change is recorded with the session it was for:
// without its query the /config channel showed
// POST /arm3/{id}/config/preset, a device-global route that does not exist
// (session_required), and a reader could not tell whose change it was.
func TestRecordingKeepsTheSessionOfAConfigChange(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, recordDir: t.TempDir()})
	arm := ts.armIDs[0]
	started := ts.startRecording(`{"name":"config"}`)
	c := ts.dial(t, ts.wsURL())
	session := strconv.Itoa(int(num(c.expect()["session_id"])))
	route := "/arm3/" + arm + "/config/preset?session=" + session
	if r := ts.do("POST", ts.base+route, `{"preset":"arm_front_centered"}`); r.status != 200 {
		t.Fatalf("POST %s: %v", route, r)
	}
	stopped := ts.do("DELETE", ts.base+"/recordings/"+strconv.Itoa(int(num(path(started.data(), "id")))), "")
	if stopped.status != 200 {
		t.Fatalf("DELETE /recordings: %v", stopped)
	}
	cfg := byTopic(recordedFile(t, path(started.data(), "path").(string)))["/config"]
	if len(cfg) != 1 {
		t.Fatalf("/config: %d messages, want the one preset change", len(cfg))
	}
	var change struct {
		Method, Path string
		Status       int
	}
	if err := json.Unmarshal(cfg[0].Data, &change); err != nil {
		t.Fatal(err)
	}
	if change.Method != "POST" || change.Path != route || change.Status != 200 {
		t.Errorf("/config recorded %s %s (%d), want POST %s (200)", change.Method, change.Path, change.Status, route)
	}
}
