package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// quickRun runs a short load against a fake service with no bare-loop
// baseline (the fake has no binary behind it).
func quickRun(t *testing.T, f testFake, o RunOptions) RunReport {
	t.Helper()
	o.Target = f.wsURL()
	o.NoBareLoop = true
	if o.Duration == 0 {
		o.Duration = 300 * time.Millisecond
	}
	if o.Warmup == 0 {
		o.Warmup = 50 * time.Millisecond
	}
	if o.FrameTimeout == 0 {
		o.FrameTimeout = 2 * time.Second
	}
	if o.Pairs == 0 && !o.NoEcho {
		o.Pairs = 2 // enough to pair; the default's 5 only cost time here
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func TestRunAgainstHealthyService(t *testing.T) {
	f := newFakeService(t, fakeFaults{})
	rep := quickRun(t, f, RunOptions{Clients: 3, Observers: 1})

	h := rep.Hapticd.Overall
	if h.Received == 0 || h.Received != h.Sent {
		t.Fatalf("received %d of %d frames, want every frame of a healthy service", h.Received, h.Sent)
	}
	if h.Lost+h.OutOfOrder+h.ErrorFrames != 0 || h.ClientsInError != 0 {
		t.Errorf("healthy service: lost %d, out of order %d, error frames %d, clients in error %d; want none",
			h.Lost, h.OutOfOrder, h.ErrorFrames, h.ClientsInError)
	}
	if h.RTT.Count != h.Received || h.RTT.P50Us <= 0 || h.RTT.MaxUs < h.RTT.P99Us {
		t.Errorf("rtt summary %+v does not describe %d round trips", h.RTT, h.Received)
	}
	wantDevices := []string{"049D", "15AE", "049D", "049D"} // client i → arm i mod 2; observer 0 → arm 0
	wantRoles := []Role{RoleController, RoleController, RoleController, RoleObserver}
	for i, c := range rep.Hapticd.Clients {
		if c.DeviceID != wantDevices[i] || c.Role != wantRoles[i] {
			t.Errorf("session %d: %s on %s, want %s on %s", i, c.Role, c.DeviceID, wantRoles[i], wantDevices[i])
		}
	}
	seen := map[int64]bool{}
	for _, c := range rep.Hapticd.Clients {
		if seen[c.SessionID] {
			t.Errorf("session id %d used twice", c.SessionID)
		}
		seen[c.SessionID] = true
	}

	if rep.Echo == nil {
		t.Fatal("no echo baseline in the report")
	}
	e := rep.Echo.Overall
	if e.Received == 0 || e.Lost+e.OutOfOrder+e.ErrorFrames != 0 {
		t.Errorf("echo baseline: received %d, lost %d, out of order %d, error frames %d", e.Received, e.Lost, e.OutOfOrder, e.ErrorFrames)
	}
	if e.FrameBytes != h.FrameBytes {
		t.Errorf("echo frames are %d bytes, hapticd's %d: the baseline must use the same frame size", e.FrameBytes, h.FrameBytes)
	}

	if rep.Loop == nil || rep.Loop.Devices != 2 || rep.Loop.TargetUs != 1000 || rep.Loop.PeriodP99UsWorst != 1020 {
		t.Errorf("loop figures %+v, want 2 devices, target 1000 µs, worst p99 1020 µs", rep.Loop)
	}
	if rep.Config.LoopHz != 1000 || rep.Config.Arms != 2 {
		t.Errorf("config %+v: want the loop rate and arm count read from /stats", rep.Config)
	}
	if rep.Process == nil || rep.Process.CPUSeconds <= 0 || rep.Process.Goroutines != 12 {
		t.Errorf("process figures %+v, want the window's CPU delta and the goroutine count", rep.Process)
	}
	var rtt *Comparison
	for i := range rep.Comparisons {
		if rep.Comparisons[i].Figure == "rtt p99" {
			rtt = &rep.Comparisons[i]
		}
	}
	// The fake service may beat the in-process echo: then the comparison
	// is flagged instead of given a ratio.
	var p99s []float64
	for _, p := range rep.Pairs {
		p99s = append(p99s, p.Hapticd.RTT.P99Us)
	}
	if rtt == nil || rtt.Baseline != "echo" || (rtt.Ratio <= 0) == (rtt.Flag == "") || rtt.Hapticd != median(p99s) {
		t.Errorf("rtt p99 comparison = %+v, want the median hapticd run beside echo with a ratio or a flag", rtt)
	}
	if len(rep.Pairs) != 2 || rep.Pairs[0].Echo == nil || rep.Pairs[1].Echo == nil {
		t.Errorf("pairs %+v, want two pairs of hapticd and echo runs", rep.Pairs)
	}
}

func TestRunDetectsBrokenContract(t *testing.T) {
	tests := []struct {
		name    string
		fake    fakeFaults
		timeout time.Duration
		check   func(Overall) bool
		want    string
	}{
		{"lost frame", fakeFaults{dropEvery: 20}, 200 * time.Millisecond,
			func(o Overall) bool { return o.Lost >= 1 && o.ClientsInError >= 1 }, "lost ≥ 1 and the client in error"},
		{"surplus frame", fakeFaults{extraEvery: 20}, 0,
			func(o Overall) bool { return o.OutOfOrder >= 1 }, "out of order ≥ 1"},
		{"errors array", fakeFaults{errorEvery: 10}, 0,
			func(o Overall) bool { return o.ErrorFrames >= 1 }, "error frames ≥ 1"},
		{"foreign session id", fakeFaults{foreignEvery: 10}, 0,
			func(o Overall) bool { return o.OutOfOrder >= 1 }, "out of order ≥ 1"},
		{"device busy is not a contract error", fakeFaults{busyEvery: 10}, 0,
			func(o Overall) bool { return o.BusyFrames >= 1 && o.ErrorFrames == 0 && o.ClientsInError == 0 },
			"busy frames ≥ 1 and no error frames"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeService(t, tt.fake)
			rep := quickRun(t, f, RunOptions{Clients: 2, NoEcho: true, FrameTimeout: tt.timeout})
			if o := rep.Hapticd.Overall; !tt.check(o) {
				t.Errorf("overall %+v: want %s", o, tt.want)
			}
		})
	}
}

func TestPacedClientsNeverBurst(t *testing.T) {
	// Absolute deadlines allow at most one send per period of the window:
	// a client that fell behind skips ahead instead of catching up.
	f := newFakeService(t, fakeFaults{})
	const rate, window = 200.0, 300 * time.Millisecond
	rep := quickRun(t, f, RunOptions{Clients: 2, RateHz: rate, Duration: window, NoEcho: true})
	for _, c := range rep.Hapticd.Clients {
		if limit := uint64(rate*window.Seconds()) + 1; c.Sent == 0 || c.Sent > limit {
			t.Errorf("session %d sent %d messages in the window, want 1..%d", c.Index, c.Sent, limit)
		}
	}
}

func TestRunReportOutputs(t *testing.T) {
	f := newFakeService(t, fakeFaults{})
	rep := quickRun(t, f, RunOptions{Clients: 1})

	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"figure", "hapticd", "baseline", "ratio", "rtt p99 (µs)", "rate total (Hz)",
		"loop period p99 (worst device) (µs)", "echo", "device loops: 2 devices", "machine: go"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	t.Logf("table:\n%s", table.String())

	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	raw := buf.Bytes()
	var doc struct {
		Config  map[string]any `json:"config"`
		Machine map[string]any `json:"machine"`
		Hapticd struct {
			Overall struct {
				RTT map[string]float64 `json:"rtt"`
			} `json:"overall"`
			Clients []map[string]any `json:"clients"`
		} `json:"hapticd"`
		Echo        map[string]any   `json:"echo"`
		Comparisons []map[string]any `json:"comparisons"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("report JSON does not decode: %v", err)
	}
	for _, k := range []string{"p50_us", "p90_us", "p99_us", "p99_9_us", "max_us"} {
		if _, ok := doc.Hapticd.Overall.RTT[k]; !ok {
			t.Errorf("JSON hapticd.overall.rtt lacks %s", k)
		}
	}
	if len(doc.Hapticd.Clients) != 1 || doc.Echo == nil || len(doc.Comparisons) == 0 || doc.Machine["go_version"] == nil {
		t.Errorf("JSON lacks clients, echo, comparisons or machine: %s", raw)
	}
}

func TestTargetURLs(t *testing.T) {
	tests := []struct{ in, ws, http string }{
		{"ws://127.0.0.1:10001/", "ws://127.0.0.1:10001/", "http://127.0.0.1:10001"},
		{"http://127.0.0.1:10001", "ws://127.0.0.1:10001/", "http://127.0.0.1:10001"},
		{"127.0.0.1:9000", "ws://127.0.0.1:9000/", "http://127.0.0.1:9000"},
	}
	for _, tt := range tests {
		ws, h, err := targetURLs(tt.in)
		if err != nil || ws != tt.ws || h != tt.http {
			t.Errorf("targetURLs(%q) = %q, %q, %v; want %q, %q", tt.in, ws, h, err, tt.ws, tt.http)
		}
	}
	if _, _, err := targetURLs("ftp://x:1"); err == nil {
		t.Error("targetURLs accepted an ftp URL")
	}
}

func TestSessionIDOf(t *testing.T) {
	tests := []struct {
		frame string
		id    int64
		ok    bool
	}{
		{`{"session_id":42,"arm3":[]}`, 42, true},
		{`{ "session_id" : 7 }`, 7, true},
		{`{"arm3":[]}`, 0, false},
		{`{"session_id":"x"}`, 0, false},
	}
	for _, tt := range tests {
		id, ok := sessionIDOf([]byte(tt.frame))
		if id != tt.id || ok != tt.ok {
			t.Errorf("sessionIDOf(%s) = %d, %v; want %d, %v", tt.frame, id, ok, tt.id, tt.ok)
		}
	}
}

// TestReportJSONKeys pins the keys, and their order, of the per-client and
// overall figures: reports in bench/results and the plots read them.
func TestReportJSONKeys(t *testing.T) {
	for _, tt := range []struct {
		name string
		v    any
		want string
	}{
		{"ClientResult", ClientResult{Errors: []string{"x"}},
			"index role device_id session_id target_hz achieved_hz sent received missed_deadlines lost out_of_order error_frames busy_frames errors frame_bytes rtt"},
		{"Overall", Overall{},
			"sessions target_hz achieved_hz_total achieved_hz_mean achieved_hz_min sent received missed_deadlines lost out_of_order error_frames busy_frames clients_in_error frame_bytes rtt"},
	} {
		b, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(hwtest.JSONKeys(t, b), " "); got != tt.want {
			t.Errorf("%s keys:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

// TestCountsAddSumsEveryField fails when a field added to Counts is left
// out of add.
func TestCountsAddSumsEveryField(t *testing.T) {
	var a, b Counts
	va, vb := reflect.ValueOf(&a).Elem(), reflect.ValueOf(&b).Elem()
	for i := range va.NumField() {
		va.Field(i).SetUint(uint64(i + 1))
		vb.Field(i).SetUint(uint64(100 * (i + 1)))
	}
	a.add(b)
	for i := range va.NumField() {
		if got, want := va.Field(i).Uint(), uint64(101*(i+1)); got != want {
			t.Errorf("%s = %d after add, want %d", va.Type().Field(i).Name, got, want)
		}
	}
}

// TestPairsAlternateAndQuoteTheMedian: hapticd and the echo take turns,
// pair by pair; each ratio is the median of the pairs' ratios, so one pair
// on a slow minute (here a service that held its frames over three hundred
// times longer in its third run) shows in the range and the printed pairs
// but does not choose the figure, and the run shown in full is the median
// one. The echo runs are real: on a loaded machine one ran at 283 Hz where
// the others ran at 2,000 to 22,000, so the slow run must be slower than
// any such noise (a 30 times slower one was not).
func TestPairsAlternateAndQuoteTheMedian(t *testing.T) {
	const fast, slow = 300 * time.Microsecond, 100 * time.Millisecond
	f := newFakeService(t, fakeFaults{delays: []time.Duration{fast, fast, slow, fast, fast}})
	var progress strings.Builder
	// Windows long enough that every run measures round trips on a
	// machine loaded by other work (a 300 ms window once caught none).
	rep := quickRun(t, f, RunOptions{Clients: 1, Pairs: 5, Progress: &progress, Duration: 600 * time.Millisecond})

	var turns []string
	for _, line := range strings.Split(progress.String(), "\n") {
		if strings.HasPrefix(line, "pair ") {
			turns = append(turns, strings.SplitN(line, ":", 2)[0])
		}
	}
	var want []string
	for i := 1; i <= 5; i++ {
		want = append(want, fmt.Sprintf("pair %d of 5, hapticd", i), fmt.Sprintf("pair %d of 5, echo", i))
	}
	if !slices.Equal(turns, want) {
		t.Fatalf("runs went %q, want hapticd and echo alternating: %q", turns, want)
	}

	if len(rep.Pairs) != 5 {
		t.Fatalf("%d pairs, want 5", len(rep.Pairs))
	}
	var rates []float64
	for i, p := range rep.Pairs {
		if p.Echo == nil || p.Hapticd.Received == 0 || p.Echo.Received == 0 {
			t.Fatalf("pair %d: hapticd %+v, echo %+v: want a hapticd run and an echo run that both measured", i+1, p.Hapticd, p.Echo)
		}
		rates = append(rates, p.Hapticd.AchievedHzTotal)
	}
	if slowest := slices.Min(rates); slowest != rates[2] {
		t.Fatalf("hapticd rates %v: want the third run the slowest", rates)
	}
	got := map[string]Comparison{}
	for _, c := range rep.Comparisons {
		got[c.Figure] = c
	}
	for _, fig := range []string{"rate total", "rtt p50", "rtt p99"} {
		c := got[fig]
		if len(c.PairRatios) != 5 || c.Flag != "" {
			t.Fatalf("%s: %+v, want 5 pair ratios and no flag", fig, c)
		}
		sorted := slices.Sorted(slices.Values(c.PairRatios))
		if c.Ratio != sorted[2] || c.RatioMin != sorted[0] || c.RatioMax != sorted[4] {
			t.Errorf("%s: ratio %v in %v–%v, want the median %v of %v in its range", fig, c.Ratio, c.RatioMin, c.RatioMax, sorted[2], c.PairRatios)
		}
	}
	// The slow pair is the rate's minimum and the round trip's maximum,
	// and the figure stays with the four others.
	if c := got["rate total"]; c.RatioMin != c.PairRatios[2] || c.Ratio < 2*c.RatioMin {
		t.Errorf("rate total: ratio %v, pairs %v: want the slow third pair at the bottom of the range, not the figure", c.Ratio, c.PairRatios)
	}
	if c := got["rtt p50"]; c.RatioMax != c.PairRatios[2] || c.Hapticd >= float64(slow.Microseconds()) {
		t.Errorf("rtt p50: hapticd %v µs, pairs %v: want the slow pair at the top of the range and the median hapticd p50 under %v", c.Hapticd, c.PairRatios, slow)
	}
	if h := rep.Hapticd.Overall.AchievedHzTotal; h != median(slices.Clone(rates)) {
		t.Errorf("shown run's rate %v, want the median of %v", h, rates)
	}

	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	out := table.String()
	t.Logf("table:\n%s", out)
	if !strings.Contains(out, "MEDIAN of the 5 per-pair ratios") || !strings.Contains(out, "pairs min–max") {
		t.Errorf("the table does not say the ratios are medians of pairs with their range:\n%s", out)
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 4 {
			rows[strings.Join(f[:4], " ")] = true
		}
	}
	for i, p := range rep.Pairs {
		row := fmt.Sprintf("%d %s %s %.2fx", i+1, number(p.Hapticd.AchievedHzTotal), number(p.Echo.AchievedHzTotal), p.Hapticd.AchievedHzTotal/p.Echo.AchievedHzTotal)
		if !rows[row] {
			t.Errorf("the table does not print pair %d (%q):\n%s", i+1, row, out)
		}
	}
}

// TestARunWhereTheBaselineLosesSaysSo: against an echo slower than the
// service in every pair, the comparisons are flagged, with no ratio to
// quote, and the table says so; every pair's ratio is still kept.
func TestARunWhereTheBaselineLosesSaysSo(t *testing.T) {
	f := newFakeService(t, fakeFaults{})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeEchoEnv, "2ms") // the echo process holds every frame 2 ms
	rep := quickRun(t, f, RunOptions{Clients: 1, Pairs: 3, EchoCommand: []string{exe}})
	if rep.EchoInProcess {
		t.Fatal("the echo ran inside the test, not as the slow process")
	}
	got := map[string]Comparison{}
	for _, c := range rep.Comparisons {
		got[c.Figure] = c
	}
	for _, fig := range []string{"rate total", "rtt p50"} {
		c := got[fig]
		if c.Flag != FlagBaselineLost || c.Ratio != 0 || len(c.PairRatios) != 3 {
			t.Errorf("%s: %+v, want flagged baseline-lost, no ratio, and the 3 pair ratios kept", fig, c)
		}
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "BASELINE LOST (median pair") || !strings.Contains(table.String(), "FLAG: rate total") {
		t.Errorf("the table does not say the baseline lost:\n%s", table.String())
	}
}

// TestAFaultyRunIsNeverHiddenBehindAFasterOne: the run that broke the
// contract is the one the report shows (and the command fails on).
func TestAFaultyRunIsNeverHiddenBehindAFasterOne(t *testing.T) {
	// The second run's session (id 2) is slower and answers with errors.
	f := newFakeService(t, fakeFaults{errorEvery: 10, faultyFrom: 2})
	rep := quickRun(t, f, RunOptions{Clients: 1, Pairs: 3, NoEcho: true})
	if len(rep.Pairs) != 3 || rep.Pairs[1].Hapticd.AchievedHzTotal >= rep.Pairs[0].Hapticd.AchievedHzTotal {
		t.Fatalf("pairs %+v: want the faulty second run to be the slower", rep.Pairs)
	}
	if rep.Hapticd.Overall.ErrorFrames == 0 {
		t.Fatalf("shown run has no error frames (pairs %+v): a faulty run was hidden", rep.Pairs)
	}
}

// TestARefusedSubscriptionFailsTheRun: a subscription the service refuses
// (an unknown state field) fails the run with the service's answer, rather
// than measuring the default frames under the subscription's name.
func TestARefusedSubscriptionFailsTheRun(t *testing.T) {
	f := newFakeService(t, fakeFaults{refuseSubscribe: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := Run(ctx, RunOptions{Target: f.wsURL(), NoBareLoop: true, NoEcho: true, Clients: 1,
		StateFields: []string{"bogus_field"}, Duration: 200 * time.Millisecond, FrameTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "refused the subscription") || !strings.Contains(err.Error(), "bogus_field") {
		t.Fatalf("Run = %v, want an error naming the refused subscription", err)
	}
}

// The machine line says whether the CPU keeps the TLB across a process
// switch: without PCID the one-client ratio to the echo is another figure.
func TestReadCPUInfoFindsModelAndPCID(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		name, text string
		model      string
		pcid       *bool
	}{
		{"pcid", "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu vme pcid sse\n\nprocessor\t: 1\nmodel name\t: other\nflags\t\t: fpu\n", "AMD EPYC", &yes},
		{"no pcid", "model name\t: AMD EPYC\nflags\t\t: fpu vme invpcid sse\n", "AMD EPYC", &no},
		{"no flags line (not x86)", "model name\t: ARMv8\nFeatures\t: fp asimd\n", "ARMv8", nil},
	} {
		model, pcid := readCPUInfo(c.text)
		if model != c.model || (pcid == nil) != (c.pcid == nil) || (pcid != nil && *pcid != *c.pcid) {
			t.Errorf("%s: model %q pcid %v, want %q %v", c.name, model, pcid, c.model, c.pcid)
		}
	}
}
