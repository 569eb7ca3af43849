package recording

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/actors"
	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/replay"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/event"
	"github.com/hapticd/hapticd/protocol/mcap"
	"github.com/hapticd/hapticd/protocol/mcap/mcaptest"
)

// oddStrings are what firmware and clients may send where the recording
// writes a string: each must come out as valid JSON.
var oddStrings = []struct{ name, s string }{
	{"control characters", "arm\x00\x01\a\x1f\x7f"},
	{"quotes and backslashes", `a"b\c\"d`},
	{"newlines and tabs", "a\nb\r\tc"},
	{"non-ASCII", "Gerät-Ω-機械-🤖"},
	{"invalid UTF-8", "a\xff\xfeb\xc3"},
	{"HTML and line separators", "<a>&\u2028\u2029"},
}

// asJSON is s as encoding/json carries it: each byte that is not UTF-8
// becomes U+FFFD.
func asJSON(s string) string {
	b, _ := json.Marshal(s)
	var out string
	_ = json.Unmarshal(b, &out)
	return out
}

// The state's hand-written encoding decodes to what it encoded, strings
// escaped as JSON asks (invalid UTF-8 as U+FFFD).
func TestStateJSON(t *testing.T) {
	arm := State{Device: "049D", Type: "arm3", Status: 7, Tick: 12, TimeNs: -3, Mode: 1, Owner: 4, AppliedSeq: 9, Failed: true,
		Target: [3]float64{1, -2.5, 1e-9}, Position: [3]float64{0.1, 0.15, 0.2}, Velocity: [3]float64{-1e300, 0, 3}, Force: [3]float64{1.5, 2, 3}}
	grip := State{Device: "C3B2", Type: protocol.TypeGrip.Key(), Tick: 3, Orientation: [4]float64{0.5, -0.5, 0.5, 0.5}, Buttons: 5, Hall: 0.25, Battery: 1, Link: "wired"}
	tests := []struct {
		name string
		in   State
	}{{"arm", arm}, {"grip", grip}}
	for _, odd := range oddStrings {
		a, g := arm, grip
		a.Device, g.Device, g.Link = odd.s, odd.s, odd.s
		tests = append(tests, struct {
			name string
			in   State
		}{"arm id with " + odd.name, a}, struct {
			name string
			in   State
		}{"grip id and link with " + odd.name, g})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.in.AppendJSON(nil)
			if !json.Valid(b) {
				t.Fatalf("not JSON: %q", b)
			}
			var out State
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			want := tt.in
			want.Device = asJSON(want.Device)
			want.Link = asJSON(want.Link)
			if out != want {
				t.Fatalf("%s decodes to %+v, want %+v", b, out, want)
			}
			if strings.Contains(string(b), "orientation") != tt.in.IsGrip() {
				t.Fatalf("%s: grip fields on an arm, or none on a grip", b)
			}
		})
	}
}

// A full queue never blocks a tap: it drops, and counts the drop.
func TestQueueDropsWhenFull(t *testing.T) {
	r := &recording{queue: make(chan item, 2)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			r.put(item{kind: KindState})
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

// The rings of many recorded devices share a bounded budget: 10,000
// simulated arms do not get a quarter second of snapshots each.
func TestTapTicksFor(t *testing.T) {
	for _, tc := range []struct{ devices, want int }{{0, defaultTapTicks}, {1, defaultTapTicks}, {100, defaultTapTicks}, {10_000, minTapTicks}} {
		if got := tapTicksFor(tc.devices); got != tc.want {
			t.Errorf("tapTicksFor(%d) = %d, want %d", tc.devices, got, tc.want)
		}
	}
	if n := 1000; tapTicksFor(n)*n*int(reflect.TypeFor[loop.Snapshot]().Size()) > tapBytes {
		t.Errorf("1,000 devices' rings of %d ticks pass the %d byte budget", tapTicksFor(n), tapBytes)
	}
}

func TestOptionsRefused(t *testing.T) {
	rs := New(Config{Dir: t.TempDir()})
	for _, o := range []Options{{RateHz: -1}, {Name: "../x"}, {Name: "a b"}, {Name: "é"}} {
		if _, err := rs.Start(o); err == nil {
			t.Errorf("Start(%+v) accepted", o)
		}
	}
	if l := rs.List(); len(l) != 0 {
		t.Errorf("refused starts left recordings: %+v", l)
	}
	if _, err := New(Config{}).Start(Options{}); err != ErrNoDirectory {
		t.Errorf("without a directory: %v, want ErrNoDirectory", err)
	}
}

// startService runs a service with one replayed arm per id, each holding
// still at a recorded state.
func startService(t *testing.T, ids []string) *actors.Service {
	t.Helper()
	svc := startBareService(t)
	for i, id := range ids {
		info := sim.NewArm(sim.ArmOptions{Index: i}).Info()
		info.ID, info.UUID = id, fmt.Sprintf("odd-%d", i)
		d := replay.New(replay.Options{Info: info, Samples: []replay.Sample{{Position: hw.Vec3{X: 0.01 * float64(i)}}}})
		if _, err := svc.AddDevice(d, false); err != nil {
			t.Fatalf("add a device with id %q: %v", id, err)
		}
	}
	return svc
}

// startBareService starts a service with no device, shut down with the
// test.
func startBareService(t *testing.T) *actors.Service {
	t.Helper()
	return startServiceWith(t, zerolog.Nop())
}

// startServiceWith starts a service with no device logging to log, shut
// down with the test.
func startServiceWith(t *testing.T, log zerolog.Logger) *actors.Service {
	t.Helper()
	svc, err := actors.Start(actors.Options{Log: log, SimShards: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = svc.Shutdown(ctx)
	})
	return svc
}

// Device ids come from firmware and messages from clients: whatever they
// hold, every recorded message is JSON, every topic UTF-8, and the file
// reads back with our reader and @mcap/core.
func TestRecordOddIdentities(t *testing.T) {
	var ids []string
	for _, odd := range oddStrings {
		ids = append(ids, odd.s)
	}
	svc := startService(t, ids)
	rs := New(Config{Service: svc, Dir: t.TempDir(), Log: zerolog.Nop()})
	info, err := rs.Start(Options{Name: "odd"})
	if err != nil {
		t.Fatal(err)
	}
	for i, odd := range oddStrings {
		rs.Session(KindClient, uint64(i+1), []byte(odd.s)) // not JSON: kept as a string
		rs.Session(KindFrame, uint64(i+1), []byte(`{"session_id":1,"note":`+string(protocol.AppendString(nil, odd.s))+`}`))
		rs.Config("POST", "/arm3/"+odd.s+"/config/handedness", 400, []byte(odd.s))
	}
	hwtest.Eventually(t, 30*time.Second, "every device's states", func() bool {
		return rs.List()[0].Messages >= uint64(20*len(ids))
	})
	stopped, ok := rs.Stop(info.ID)
	if !ok || stopped.Error != "" {
		t.Fatalf("Stop: %+v, %v", stopped, ok)
	}

	f, cut, err := Load(stopped.Path)
	if err != nil || cut != nil || !f.Complete {
		t.Fatalf("Load: %v (cut %v)", err, cut)
	}
	devices := map[string]bool{}
	for i, m := range f.Messages {
		c := f.Channels[m.ChannelID]
		if !json.Valid(m.Data) {
			t.Fatalf("message %d on %q is not JSON: %q", i, c.Topic, m.Data)
		}
		if !utf8.ValidString(c.Topic) || !utf8.ValidString(c.Metadata["key"]) {
			t.Fatalf("channel %q (key %q) is not UTF-8", c.Topic, c.Metadata["key"])
		}
		if c.Metadata["kind"] == KindState {
			var st State
			if err := json.Unmarshal(m.Data, &st); err != nil {
				t.Fatal(err)
			}
			devices[st.Device] = true
		}
	}
	for _, id := range ids {
		if want := asJSON(id); !devices[want] {
			t.Errorf("no state recorded for device %q (as %q); recorded %v", id, want, devices)
		}
	}
	for i, odd := range oddStrings {
		in := MessagesOf(f, KindClient)[fmt.Sprint(i+1)]
		if len(in) != 1 {
			t.Fatalf("session %d: %d client messages", i+1, len(in))
		}
		msg, err := clientMessage(in[0])
		if want := asJSON(odd.s); err != nil || string(msg) != want {
			t.Errorf("client message %q replays as %q (%v), want %q", odd.s, msg, err, want)
		}
	}

	var jsonl bytes.Buffer
	if err := ExportJSONL(f, &jsonl); err != nil {
		t.Fatal(err)
	}
	for i, line := range bytes.Split(bytes.TrimSpace(jsonl.Bytes()), []byte("\n")) {
		if !json.Valid(line) {
			t.Fatalf("export line %d is not JSON: %q", i, line)
		}
	}

	js := mcaptest.Read(t, stopped.Path)
	if js.Statistics.MessageCount != len(f.Messages) {
		t.Errorf("@mcap/core counts %d messages, ours %d", js.Statistics.MessageCount, len(f.Messages))
	}
	for _, c := range js.Indexed.Channels {
		if c.Count == 0 {
			t.Errorf("@mcap/core read no message on %q", c.Topic)
		}
	}
}

// Export writes each device state as a CSV row with its columns.
func TestExportCSV(t *testing.T) {
	var buf bytes.Buffer
	w, err := mcap.NewWriter(&buf, mcap.Header{Library: "test"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	st := State{Device: "a,\"b", Type: "arm3", Tick: 7, Position: [3]float64{0.5, 0, -1}}
	steps := []error{
		w.AddChannel(mcap.Channel{ID: 1, Topic: topic(KindState, "arm3-x"), MessageEncoding: messageEncoding, Metadata: map[string]string{"kind": KindState}}),
		w.AddChannel(mcap.Channel{ID: 2, Topic: topic(KindConfig, ""), MessageEncoding: messageEncoding, Metadata: map[string]string{"kind": KindConfig}}),
		w.WriteMessage(mcap.Message{ChannelID: 1, LogTime: 5, Data: st.AppendJSON(nil)}),
		w.WriteMessage(mcap.Message{ChannelID: 2, LogTime: 6, Data: configChange("POST", "/x", 200, nil)}),
		w.Close(),
	}
	for _, err := range steps {
		if err != nil {
			t.Fatal(err)
		}
	}
	f, err := mcap.Read(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := ExportCSV(f, &out); err != nil {
		t.Fatal(err)
	}
	want := csvHeader + "\n" + `/devices/arm3-x/state,5,"a,""b",arm3,7,0,0,0.5,0,-1,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0` + "\n"
	if out.String() != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestCompareJSON(t *testing.T) {
	tol := Tolerance{Abs: 0.01, Force: 0.1, Angle: 2, Rel: 0.1, Ignore: []string{"skip"}}
	tests := []struct {
		name      string
		want, got string
		diffs     int
	}{
		{"equal", `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`, 0},
		{"within tolerance", `{"p":1}`, `{"p":1.1}`, 0},
		{"beyond tolerance", `{"p":1}`, `{"p":1.2}`, 1},
		{"forces have their own", `{"force":0}`, `{"force":0.09}`, 0},
		{"angles have their own", `{"angular":0}`, `{"angular":1.5}`, 0},
		{"session_id differs by nature", `{"session_id":1}`, `{"session_id":2}`, 0},
		{"ignored key", `{"skip":1}`, `{"skip":9}`, 0},
		{"ignored key the recording lacks", `{"a":1}`, `{"a":1,"skip":9}`, 0},
		{"ignored key the service no longer sends", `{"a":1,"skip":9}`, `{"a":1}`, 0},
		{"missing and extra keys", `{"a":1}`, `{"b":1}`, 2},
		{"array length", `[1,2]`, `[1]`, 1},
		{"another string", `{"s":"a"}`, `{"s":"b"}`, 1},
		{"a message's measured number within tolerance", `{"message":"arm3 lapsed 1014 ms ago"}`, `{"message":"arm3 lapsed 1013 ms ago"}`, 0},
		{"a message's number beyond tolerance", `{"message":"lapsed 1014 ms ago"}`, `{"message":"lapsed 1414 ms ago"}`, 1},
		{"a message's other words", `{"message":"lapsed 1014 ms ago"}`, `{"message":"renewed 1014 ms ago"}`, 1},
		{"a digit in a message's name is a word", `{"message":"arm3 lapsed"}`, `{"message":"arm4 lapsed"}`, 1},
		{"a message's count is exact", `{"message":"its 10 effects were dropped"}`, `{"message":"its 11 effects were dropped"}`, 1},
		{"a message's session is exact", `{"message":"controlled by session 12"}`, `{"message":"controlled by session 13"}`, 1},
		{"a message's time in µs", `{"message":"late by 100 µs"}`, `{"message":"late by 105 µs"}`, 0},
		{"a message's time and count", `{"message":"1014 ms ago, 2 effects"}`, `{"message":"1013 ms ago, 2 effects"}`, 0},
		{"numbers only in messages", `{"s":"took 1014 ms"}`, `{"s":"took 1013 ms"}`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w, g any
			if err := json.Unmarshal([]byte(tt.want), &w); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tt.got), &g); err != nil {
				t.Fatal(err)
			}
			var diffs []string
			compareJSON("f", w, g, tol, &diffs)
			if len(diffs) != tt.diffs {
				t.Fatalf("%d differences %q, want %d", len(diffs), diffs, tt.diffs)
			}
			// compareMixed with the one recorded frame decides the same.
			diffs = nil
			compareMixed("f", []any{w}, g, tol, &diffs)
			if len(diffs) != tt.diffs {
				t.Fatalf("compareMixed: %d differences %q, want %d", len(diffs), diffs, tt.diffs)
			}
		})
	}
}

// A replayed frame matches a recorded frame within the window of it, or
// the one before or after it however far apart (a tick earlier or later
// than recorded, around a stall of the recording).
func TestFrameCheckWindow(t *testing.T) {
	const ms = uint64(time.Millisecond)
	at := []uint64{0, 1000 * ms, 2000 * ms, 2010 * ms, 2020 * ms} // recorded frame i shows {"v":i}
	tests := []struct {
		name     string
		replayed []int // the v each replayed frame shows
		diffs    int
	}{
		{"as recorded", []int{0, 1, 2, 3, 4}, 0},
		{"a tick late, a second after the recorded frame before", []int{0, 1, 1, 3, 4}, 0},
		{"a tick early, a second before the recorded frame after", []int{0, 2, 2, 3, 4}, 0},
		{"two frames back, within the window", []int{0, 1, 2, 3, 2}, 0},
		{"two frames back, beyond the window", []int{0, 1, 2, 1, 4}, 1},
		{"a frame never recorded", []int{0, 1, 2, 3, 9}, 1},
	}
	var frames []mcap.Message
	for i, t0 := range at {
		rec, _ := json.Marshal(Message{Session: 1, Message: json.RawMessage(fmt.Sprintf(`{"v":%d}`, i))})
		frames = append(frames, mcap.Message{LogTime: t0, Data: rec})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check, err := newFrameCheck(frames, Tolerance{}, 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tt.replayed {
				check.next([]byte(fmt.Sprintf(`{"v":%d}`, v)))
			}
			if len(check.diffs) != tt.diffs {
				t.Fatalf("%d differences %q, want %d", len(check.diffs), check.diffs, tt.diffs)
			}
		})
	}
}

// A replayed frame caught at the tick where a force ramp ends shows the
// control mode of one neighbour and the force of the other: each value
// matches a neighbour, so it is no difference; so is a force caught
// elsewhere on the ramp between its neighbours. A value no neighbour
// showed, or beyond the range they span, is one.
func TestFrameCheckMixesNeighbours(t *testing.T) {
	const ms = uint64(time.Millisecond)
	recorded := []string{
		`{"arm":[{"mode":"idle","f":0}]}`, // the inventory
		`{"arm":[{"mode":"force","f":0.3}]}`,
		`{"arm":[{"mode":"force","f":0.15}]}`,
		`{"arm":[{"mode":"idle","f":0}]}`,
		`{"arm":[{"mode":"idle","f":0}]}`,
	}
	tests := []struct {
		name  string
		frame int // the replayed frame's index; the others replay as recorded
		got   string
		diffs int
	}{
		{"the ramp's end a tick later", 3, `{"arm":[{"mode":"force","f":0.004}]}`, 0},
		{"the ramp's end a tick earlier", 2, `{"arm":[{"mode":"idle","f":0.14}]}`, 0},
		{"a mode no neighbour showed", 3, `{"arm":[{"mode":"velocity","f":0}]}`, 1},
		{"a force no neighbour showed", 3, `{"arm":[{"mode":"idle","f":0.6}]}`, 1},
		{"the ramp caught elsewhere on its way", 2, `{"arm":[{"mode":"force","f":0.07}]}`, 0},
		{"a force beyond the ramp's ends", 2, `{"arm":[{"mode":"force","f":0.45}]}`, 1},
		{"a mode two frames away", 4, `{"arm":[{"mode":"force","f":0}]}`, 1},
		{"a key no neighbour has", 3, `{"arm":[{"mode":"idle","f":0,"x":1}]}`, 1},
		{"a key every neighbour has, missing", 3, `{"arm":[{"mode":"idle"}]}`, 1},
	}
	var frames []mcap.Message
	for i, m := range recorded {
		rec, _ := json.Marshal(Message{Session: 1, Message: json.RawMessage(m)})
		frames = append(frames, mcap.Message{LogTime: uint64(i) * 10 * ms, Data: rec})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check, err := newFrameCheck(frames, Tolerance{Abs: 0.01, Rel: 0.2}, time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			for i, m := range recorded {
				if i == tt.frame {
					m = tt.got
				}
				check.next([]byte(m))
			}
			if len(check.diffs) != tt.diffs {
				t.Fatalf("%d differences %q, want %d", len(check.diffs), check.diffs, tt.diffs)
			}
		})
	}
}

// The pump encodes every recorded device's state at the loop rate into a
// recycled buffer: no allocation per state.
func TestStateAppendJSONAllocs(t *testing.T) {
	st := State{Device: "049D\x01", Type: protocol.TypeGrip.Key(), Tick: 1, Position: [3]float64{0.1, 0.2, 0.3}, Link: "wired"}
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = st.AppendJSON(buf[:0]) }); n != 0 {
		t.Fatalf("AppendJSON allocates %v times per state", n)
	}
}

func BenchmarkStateAppendJSON(b *testing.B) {
	st := State{Device: "049D", Type: "arm3", Tick: 123456, TimeNs: 987654321, Position: [3]float64{0.0123, -0.0456, 0.0789},
		Velocity: [3]float64{0.001, 0.002, -0.003}, Force: [3]float64{1.25, -0.5, 2}}
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = st.AppendJSON(buf[:0])
	}
}

// agedDriver hands over states ageNs old, as a lab gateway's proxy does
// with a node's pushes (loop.StateAgeReporter).
type agedDriver struct {
	hw.Driver
	ageNs int64
}

func (a agedDriver) StateAge() (int64, bool) { return a.ageNs, false }

// A recorded state says how old it was at its tick: a device whose driver
// hands over states 250 ms old (a node's, on a gateway) is recorded that
// old, one that reads its device each tick as fresh. A reader of the file
// must not take a proxied state for one read at time_ns.
func TestRecordedStateSaysHowOldItWas(t *testing.T) {
	const ageNs = 250 * int64(time.Millisecond)
	svc := startBareService(t)
	want := map[string]int64{}
	for i, age := range []int64{ageNs, 0} {
		info := sim.NewArm(sim.ArmOptions{Index: i}).Info()
		info.ID, info.UUID = fmt.Sprintf("aged-%d", i), fmt.Sprintf("aged-%d", i)
		d := replay.New(replay.Options{Info: info, Samples: []replay.Sample{{Position: hw.Vec3{X: 0.01}}}})
		if _, err := svc.AddDevice(agedDriver{Driver: d, ageNs: age}, false); err != nil {
			t.Fatal(err)
		}
		want[info.ID] = age
	}
	rs := New(Config{Service: svc, Dir: t.TempDir(), Log: zerolog.Nop()})
	info, err := rs.Start(Options{Name: "aged"})
	if err != nil {
		t.Fatal(err)
	}
	hwtest.Eventually(t, 30*time.Second, "states of both devices", func() bool { return rs.List()[0].Messages >= 100 })
	stopped, ok := rs.Stop(info.ID)
	if !ok || stopped.Error != "" {
		t.Fatalf("Stop: %+v, %v", stopped, ok)
	}
	f, _, err := Load(stopped.Path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, m := range f.Messages {
		if f.Channels[m.ChannelID].Metadata["kind"] != KindState {
			continue
		}
		var st State
		if err := json.Unmarshal(m.Data, &st); err != nil {
			t.Fatal(err)
		}
		age, ok := want[st.Device]
		if !ok {
			continue
		}
		seen[st.Device]++
		// The first tick of the aged device may publish the state of its
		// open (nothing handed over yet: as old as the device).
		if st.AgeNs != age && !(age != 0 && seen[st.Device] == 1) {
			t.Fatalf("device %s's state at tick %d recorded %v old, want %v", st.Device, st.Tick, time.Duration(st.AgeNs), time.Duration(age))
		}
	}
	for id := range want {
		if seen[id] < 10 {
			t.Errorf("device %s: %d states recorded, want at least 10", id, seen[id])
		}
	}
}

// A recording started once StopAll has run (a POST /recordings that
// reaches the service while it shuts down) would never be stopped: its
// file would lack its summary and its goroutines would outlive the
// service. Start refuses it, leaving no file, and nothing stays active
// however a Start and the StopAll interleave.
func TestStartAfterStopAllIsRefused(t *testing.T) {
	svc := startService(t, []string{"a1"})
	dir := t.TempDir()
	rs := New(Config{Service: svc, Dir: dir, Log: zerolog.Nop()})
	if _, err := rs.Start(Options{Name: "before"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = rs.Start(Options{Name: "racing"})
		}()
	}
	rs.StopAll()
	wg.Wait()
	if info, err := rs.Start(Options{Name: "after"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Start after StopAll: %+v, %v, want ErrClosed", info, err)
	}
	files, _ := os.ReadDir(dir)
	listed := rs.List()
	if len(files) != len(listed) {
		t.Errorf("%d files in the directory, %d recordings listed: a refused start left its file", len(files), len(listed))
	}
	for _, i := range listed {
		if i.Active {
			t.Errorf("recording %d %q still active after StopAll", i.ID, i.Name)
			rs.Stop(i.ID)
			continue
		}
		if _, cut, err := Load(i.Path); err != nil || cut != nil {
			t.Errorf("recording %d %q: %v (cut %v), want a complete file", i.ID, i.Name, err, cut)
		}
	}
}

// A recording whose file refuses a write (here a pipe whose reader went
// away; a full disk alike) stops there: listed inactive with the error,
// the messages it lost counted in dropped, nothing more fed to it by the
// taps, a recording-failed event published, and Stop answers at once.
func TestRecordingStopsWhenItsFileRefusesWrites(t *testing.T) {
	svc := startService(t, []string{"a1"})
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	rs := New(Config{Service: svc, Dir: t.TempDir(), Log: zerolog.Nop(),
		Create: func(string) (*os.File, error) { return pw, nil }})
	info, err := rs.Start(Options{Name: "doomed"})
	if err != nil {
		t.Fatal(err)
	}
	// Start wrote the header and schemas; the next write (the session's
	// channel) fails.
	_ = pr.Close()
	rs.Session(KindClient, 1, []byte(`{}`))
	var failed Info
	hwtest.EventuallyNil(t, 30*time.Second, "the recording to stop on its failed write", func() error {
		failed = rs.List()[0]
		if failed.Active || failed.Error == "" {
			return fmt.Errorf("listed %+v", failed)
		}
		return nil
	})
	if !strings.Contains(failed.Error, "broken pipe") || failed.Messages != 0 || failed.Dropped == 0 {
		t.Errorf("failed recording listed %+v: want the write's error, no message written, its lost messages dropped", failed)
	}
	if rs.Active() {
		t.Error("the taps still feed a recording whose file failed")
	}
	page, err := svc.Activity().Recent(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	events := page.Events
	// The event is published before the recording is listed failed.
	var reported bool
	for _, e := range events {
		reported = reported || e.Name == event.NameRecordingFailed && strings.Contains(string(e.Data), fmt.Sprintf(`"recording_id":%d`, info.ID))
	}
	if !reported {
		t.Errorf("no recording-failed event for recording %d among %d events, though it is listed failed", info.ID, len(events))
	}
	stopped, ok := rs.Stop(info.ID)
	if !ok || stopped.Active || stopped.Error != failed.Error || stopped.Dropped < failed.Dropped {
		t.Errorf("Stop of the failed recording: %+v, %v; listed before %+v", stopped, ok, failed)
	}
}

// A file that refuses its first bytes (a full disk, a read-only mount)
// fails the start: Start answers the write's error, nothing is listed, no
// tap is fed, and no id is taken: the next start that works is the first
// (a failed POST used up an id: tourrec2).
func TestStartFailsWhenItsFileRefusesTheHeader(t *testing.T) {
	svc := startService(t, []string{"a1"})
	refuse := true
	rs := New(Config{Service: svc, Dir: t.TempDir(), Log: zerolog.Nop(),
		Create: func(path string) (*os.File, error) {
			if refuse { // a pipe whose reader is gone refuses every write
				pr, pw, err := os.Pipe()
				if err != nil {
					return nil, err
				}
				_ = pr.Close()
				return pw, nil
			}
			return os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		}})
	for range 2 {
		info, err := rs.Start(Options{Name: "refused"})
		if err == nil || !strings.Contains(err.Error(), "broken pipe") {
			t.Fatalf("Start on a file that refuses writes: %+v, %v, want the write's error", info, err)
		}
	}
	if listed := rs.List(); len(listed) != 0 || rs.Active() {
		t.Errorf("after a failed start: listed %+v, active %v, want nothing", listed, rs.Active())
	}
	refuse = false
	info, err := rs.Start(Options{Name: "works"})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Stop(info.ID)
	if info.ID != 1 {
		t.Errorf("the first start that worked has id %d after two that failed, want 1", info.ID)
	}
}

// A recording cut off by SIGKILL ends inside a record: Load, Replay and
// the exports use what is there, or say there is nothing to replay, at
// any cut; never a panic. Cut inside its summary, a file holds every
// device it recorded.
func TestCutRecordingReplaysWhatIsThere(t *testing.T) {
	svc := startService(t, []string{"a1", "a2"})
	rs := New(Config{Service: svc, Dir: t.TempDir(), Log: zerolog.Nop()})
	info, err := rs.Start(Options{Name: "cut"})
	if err != nil {
		t.Fatal(err)
	}
	rs.Session(KindClient, 1, []byte(`{"session":{}}`))
	rs.Session(KindFrame, 1, []byte(`{"session_id":1}`))
	hwtest.Eventually(t, 30*time.Second, "some states of each arm", func() bool { return rs.List()[0].Messages >= 600 })
	stopped, _ := rs.Stop(info.ID)
	whole, err := os.ReadFile(stopped.Path)
	if err != nil {
		t.Fatal(err)
	}
	cutPath := stopped.Path + ".cut"
	for i := 0; i <= 64; i++ {
		n := len(whole) - 1 - i*(len(whole)-1)/64
		if err := os.WriteFile(cutPath, whole[:n], 0o600); err != nil {
			t.Fatal(err)
		}
		f, cut, err := Load(cutPath)
		if err != nil {
			continue // a clear error: no MCAP header
		}
		if cut == nil {
			t.Fatalf("cut at %d of %d bytes: Load says the file is whole", n, len(whole))
		}
		drivers, err := Replay(f, 1, true)
		if i == 0 && (err != nil || len(drivers) != 2) {
			t.Fatalf("cut inside the summary: %d replayed devices, %v, want both arms", len(drivers), err)
		}
		if err := ExportCSV(f, io.Discard); err != nil {
			t.Fatalf("cut at %d: ExportCSV: %v", n, err)
		}
		if err := ExportJSONL(f, io.Discard); err != nil {
			t.Fatalf("cut at %d: ExportJSONL: %v", n, err)
		}
		_, _ = newFrameCheck(MessagesOf(f, KindFrame)["1"], Tolerance{}, time.Millisecond)
	}
}

// Every event published while a recording runs is in its file: one
// published as soon as Start answered (a session opening right after POST
// /recordings) and one published just before Stop (a session ending before
// DELETE), on every round, with no wait in between.
func TestRecordingKeepsEveryEventPublishedWhileItRuns(t *testing.T) {
	svc := startService(t, []string{"a1"})
	rs := New(Config{Service: svc, Dir: t.TempDir(), Log: zerolog.Nop()})
	for round := range 20 {
		info, err := rs.Start(Options{Name: "events"})
		if err != nil {
			t.Fatal(err)
		}
		first, last := uint64(1000+2*round), uint64(1001+2*round)
		svc.Activity().Publish(event.SessionStarted(first, "", "127.0.0.1:1", "3.1"))
		svc.Activity().Publish(event.SessionEnded(last, "", "127.0.0.1:1", "3.1", protocol.CloseReason("normal")))
		if _, ok := rs.Stop(info.ID); !ok {
			t.Fatalf("round %d: recording %d not listed", round, info.ID)
		}
		var got []string
		for _, e := range recordedEvents(t, info.Path) {
			got = append(got, e.String())
		}
		want := []string{fmt.Sprintf("%s %d", event.NameSessionStarted, first), fmt.Sprintf("%s %d", event.NameSessionEnded, last)}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: events recorded %q, want %q", round, got, want)
		}
	}
}

// A recording whose name is taken (ids start at 1 with each run and names
// have whole seconds: a service restarted within the second of the file its
// last run left, or another service on the directory) takes the next free
// name and leaves the other file as it was. The start failed before: with
// --record the service exited at start, and POST /recordings answered 500.
func TestRecordingTakesAFreeNameBesideAnEarlierRunsFile(t *testing.T) {
	dir := t.TempDir()
	// The files an earlier run left for every second the start may fall
	// in, and their second takers too.
	now := time.Now()
	var taken []string
	for s := -1; s <= 3; s++ {
		base := fmt.Sprintf("trial-%s-1", now.Add(time.Duration(s)*time.Second).UTC().Format("20060102T150405"))
		for _, name := range []string{base + ".mcap", base + "-2.mcap"} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte("an earlier run's recording"), 0o644); err != nil {
				t.Fatal(err)
			}
			taken = append(taken, p)
		}
	}
	rs := New(Config{Service: startBareService(t), Dir: dir, Log: zerolog.Nop()})
	info, err := rs.Start(Options{Name: "trial"})
	if err != nil {
		t.Fatalf("a start beside an earlier run's file: %v", err)
	}
	stopped, _ := rs.Stop(info.ID)
	if !strings.HasSuffix(stopped.Path, "-1-3.mcap") {
		t.Errorf("recorded into %s; want the name after the two taken", stopped.Path)
	}
	if _, _, err := Load(stopped.Path); err != nil {
		t.Errorf("the new recording: %v", err)
	}
	for _, p := range taken {
		if b, err := os.ReadFile(p); err != nil || string(b) != "an earlier run's recording" {
			t.Errorf("%s: %q %v; the earlier file must stay as it was", p, b, err)
		}
	}
}
