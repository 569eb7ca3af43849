package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

// scrape is one /metrics answer in Prometheus' protobuf format (the one
// that carries native histograms), by family name.
type scrape map[string]*dto.MetricFamily

func (ts *testService) scrape(t testing.TB) scrape {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, ts.base+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeProtoDelim)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, b)
	}
	dec := expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header))
	out := scrape{}
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decode /metrics: %v", err)
		}
		out[mf.GetName()] = mf
	}
	return out
}

// metric finds the series of family name whose labels include want
// ("k=v" pairs), or nil.
func (s scrape) metric(name string, want ...string) *dto.Metric {
	mf := s[name]
	if mf == nil {
		return nil
	}
	for _, m := range mf.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		ok := true
		for _, kv := range want {
			k, v, _ := strings.Cut(kv, "=")
			if have[k] != v {
				ok = false
			}
		}
		if ok {
			return m
		}
	}
	return nil
}

// value is a counter's or gauge's value, or a histogram's count; -1 when
// the series is missing.
func (s scrape) value(name string, labels ...string) float64 {
	m := s.metric(name, labels...)
	switch {
	case m == nil:
		return -1
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return -1
}

// TestMetricsMoveWithTraffic drives a real service with lock-step clients
// and checks that each counter and histogram moves as the traffic does.
func TestMetricsMoveWithTraffic(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	arm := ts.armIDs[0]
	dev := []string{"device_type=arm3", "device_id=" + arm}
	x := []string{"api_format=3.x"}

	before := ts.scrape(t)
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "hapticd_build_info"} {
		if before[name] == nil {
			t.Errorf("%s missing: the Go and process collectors and the build info belong in every scrape", name)
		}
	}
	if got := before.value("hapticd_sessions", x...); got != 0 {
		t.Errorf("hapticd_sessions{3.x} = %v before any client, want 0", got)
	}

	c := ts.dial(t, ts.wsURL())
	c.expect() // inventory
	// The longest lease, so that a loaded machine does not lapse the first
	// client's control before the second asks for the arm (the -race suite
	// at load 10 did, with the default 100 ms).
	c.roundTrip(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	const n = 50
	force := fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0.5}}}}]}`, arm)
	for range n {
		c.roundTrip(force)
	}
	c.roundTrip(`{"arm3":[{"device_id":"NOPE"}]}`) // a warning: unknown device
	c.roundTrip(`{"arm3":[`)                       // an error: not JSON

	// A second client asks for the arm the first one controls.
	other := ts.dial(t, ts.wsURL())
	other.expect()
	c.roundTrip(force) // renewed just before
	other.roundTrip(force)

	if r := ts.do(http.MethodPost, ts.base+"/arm3/0/config/handedness", `"left"`); r.status != http.StatusOK {
		t.Fatalf("POST handedness: %v", r)
	}
	if r := ts.do(http.MethodPost, ts.base+"/force_scale", `{"force_scale":0.5}`); r.status != http.StatusOK {
		t.Fatalf("deprecated POST /force_scale: %v", r)
	}

	after := ts.scrape(t)
	grew := func(name string, labels []string, atLeast float64) {
		t.Helper()
		b, a := max(before.value(name, labels...), 0), after.value(name, labels...)
		if a-b < atLeast {
			t.Errorf("%s%v went from %v to %v, want at least +%v", name, labels, b, a, atLeast)
		}
	}
	grew("hapticd_messages_total", x, n+2+1+2)
	grew("hapticd_frames_total", x, n+2+1+2+2) // + two inventories
	grew("hapticd_frame_warnings_total", append(x, "code=unknown_device"), 1)
	grew("hapticd_frame_errors_total", append(x, "code=invalid_json"), 1)
	grew("hapticd_frame_errors_total", append(x, "code=device_busy"), 1)
	grew("hapticd_busy_refusals_total", dev, 1)
	grew("hapticd_loop_period_seconds", dev, 1)
	grew("hapticd_loop_ticks_total", dev, 1)
	grew("hapticd_driver_exchange_seconds", dev, 1)
	grew("hapticd_store_write_seconds", nil, 1)
	grew("hapticd_events_total", []string{"name=session-started"}, 2)
	grew("hapticd_events_total", []string{"name=http-route-deprecated"}, 1)
	grew("hapticd_deprecated_route_uses_total", []string{"route=POST /force_scale"}, 1)
	if got := after.value("hapticd_sessions", x...); got != 2 {
		t.Errorf("hapticd_sessions{3.x} = %v with two clients, want 2", got)
	}
	if got := after.value("hapticd_loop_target_period_seconds", dev...); got != 0.001 {
		t.Errorf("target period %v s, want 0.001 at 1 kHz", got)
	}

	// The period histogram carries classic and native buckets, in seconds.
	h := after.metric("hapticd_loop_period_seconds", dev...).GetHistogram()
	if len(h.GetBucket()) == 0 || len(h.GetPositiveSpan()) == 0 || h.GetSchema() != nativeSchema {
		t.Fatalf("loop period histogram has %d classic buckets, %d native spans, schema %d: want both kinds",
			len(h.GetBucket()), len(h.GetPositiveSpan()), h.GetSchema())
	}
	var native int64
	var running int64
	for _, d := range h.GetPositiveDelta() {
		running += d
		native += running
	}
	if uint64(native)+h.GetZeroCount() != h.GetSampleCount() {
		t.Errorf("native buckets hold %d of %d samples", native, h.GetSampleCount())
	}
	if mean := h.GetSampleSum() / float64(h.GetSampleCount()); mean < 100e-6 || mean > 1 {
		t.Errorf("mean loop period %v s at 1 kHz: the unit is not seconds", mean)
	}

	// The first client goes quiet: its lease lapses and the count shows it.
	hwtest.EventuallyNil(t, 5*time.Second, "a lease expiry counted", func() error {
		if got := ts.scrape(t).value("hapticd_lease_expiries_total", dev...); got < 1 {
			return fmt.Errorf("hapticd_lease_expiries_total = %v after the controlling client went quiet", got)
		}
		return nil
	})
}

// TestMetricsPassPromtool checks the text exposition with Prometheus' own
// linter.
func TestMetricsPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found (Debian package prometheus; .ci/run installs it): the exposition is not linted")
	}
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	c := ts.dial(t, ts.wsURL())
	c.expect()
	c.roundTrip(`{"arm3":[`)
	if r := ts.do(http.MethodPost, ts.base+"/arm3/0/config/handedness", `"left"`); r.status != http.StatusOK {
		t.Fatalf("POST handedness: %v", r)
	}
	r := ts.do(http.MethodGet, ts.base+"/metrics", "")
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte("hapticd_loop_period_seconds_bucket")) {
		t.Fatalf("GET /metrics: %d, %d bytes", r.status, len(r.body))
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(r.body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

// A fresh service lists at 0 every counter series whose labels it knows at
// start (each API format, error code, close reason, deprecated route and
// command, each device): Prometheus' rate() and increase() see a series'
// first increment only if the series was there before it, and an alert
// over an absent series sees nothing.
func TestMetricsSeriesStartAtZero(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	type series struct {
		name   string
		labels []string
	}
	var want []series
	for _, format := range []string{"3.x", "3.0"} {
		f := "api_format=" + format
		want = append(want, series{"hapticd_messages_total", []string{f}}, series{"hapticd_frames_total", []string{f}}, series{"hapticd_sessions", []string{f}})
		for _, c := range protocol.Codes() {
			want = append(want, series{"hapticd_frame_errors_total", []string{f, "code=" + string(c)}}, series{"hapticd_frame_warnings_total", []string{f, "code=" + string(c)}})
		}
	}
	for _, r := range protocol.CloseReasons() {
		want = append(want, series{"hapticd_events_sockets_closed_total", []string{"reason=" + string(r)}})
	}
	for _, d := range protocol.DeprecatedRoutes() {
		for _, prefix := range []string{"", protocol.LegacyRoutePrefix} {
			want = append(want, series{"hapticd_deprecated_route_uses_total", []string{"route=" + d.Method + " " + prefix + d.Path}})
		}
	}
	for _, c := range protocol.DeprecatedCommands() {
		for _, format := range []string{"3.x", "3.0"} {
			want = append(want, series{"hapticd_deprecated_command_uses_total", []string{"command=" + c.Name, "api_format=" + format}})
		}
	}
	got := ts.scrape(t)
	for _, s := range want {
		if v := got.value(s.name, s.labels...); v != 0 {
			t.Errorf("%s%v = %v on a fresh service, want 0 (-1: absent)", s.name, s.labels, v)
		}
	}
	// Each device's counters are there from its arrival (a loaded machine
	// may have counted overruns already).
	for _, dev := range [][]string{{"device_type=arm3", "device_id=" + ts.armIDs[0]}, {"device_type=grip", "device_id=" + ts.gripIDs[0]}} {
		for _, name := range []string{"hapticd_loop_overruns_total", "hapticd_loop_ticks_total", "hapticd_driver_errors_total", "hapticd_lease_expiries_total", "hapticd_busy_refusals_total"} {
			if v := got.value(name, dev...); v < 0 {
				t.Errorf("%s%v is absent on a fresh service", name, dev)
			}
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		r := ts.do(http.MethodGet, ts.base+"/metrics", "")
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = bytes.NewReader(r.body)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}
}

// A deprecated command counts under the API format of the session that
// sent it, so a 3.0 integrator tells its own uses from the 3.x clients'
// (tourmig: one series per command could not).
func TestDeprecatedCommandUsesByAPIFormat(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	sent := map[string]int{"3.x": 2, "3.0": 1}
	for format, url := range map[string]string{"3.x": ts.wsURL(), "3.0": ts.legacyWS()} {
		c := ts.dial(t, url)
		for range sent[format] {
			for _, cmd := range protocol.DeprecatedCommands() {
				if f := c.roundTrip(cmd.Shape); f["errors"] != nil {
					t.Fatalf("%s over %s: %v", cmd.Shape, format, f["errors"])
				}
			}
		}
	}
	// The migration report counts each use as its event reaches the
	// activity actor: wait for the counts.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := ts.scrape(t)
		var wrong []string
		for _, cmd := range protocol.DeprecatedCommands() {
			for format, n := range sent {
				if v := got.value("hapticd_deprecated_command_uses_total", "command="+cmd.Name, "api_format="+format); v != float64(n) {
					wrong = append(wrong, fmt.Sprintf("%s over %s: %v, want %d", cmd.Name, format, v, n))
				}
			}
		}
		if len(wrong) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hapticd_deprecated_command_uses_total after 10 s: %s", strings.Join(wrong, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestOperatorRoutesAreGuarded(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	for _, p := range []string{"/metrics", "/healthz", "/readyz", "/ports", "/ui/", "/ui/app.js", "/ui/entries.json", "/ui/families.json"} {
		if r := ts.do(http.MethodGet, ts.base+p, "", "Origin", "http://evil.example"); r.status != http.StatusForbidden {
			t.Errorf("GET %s from a foreign origin: %d, want 403", p, r.status)
		}
		if r := ts.do(http.MethodGet, ts.base+p, ""); r.status != http.StatusOK {
			t.Errorf("GET %s: %v", p, r)
		}
		if r := ts.do(http.MethodPost, ts.base+p, "{}"); r.status != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d, want 405", p, r.status)
		}
	}
}

// A dashboard path that names no file is answered as the port answers
// every route it does not serve (404, unknown_route, the error envelope the
// API document promises), not with a plain-text 404 or a folder listing
// (review34).
func TestDashboardPathsWithoutAFileAnswerTheErrorEnvelope(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1})
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/ui/", http.StatusOK},
		{"/ui/app.js", http.StatusOK},
		{"/ui/vendor/uplot/uPlot.min.css", http.StatusOK},
		{"/ui/no-such-file.js", http.StatusNotFound},
		{"/ui/vendor/", http.StatusNotFound},
		{"/ui/vendor/uplot", http.StatusNotFound},
	} {
		r := ts.do(http.MethodGet, ts.base+c.path, "") // checked against the API document
		if r.status != c.status {
			t.Errorf("GET %s: %d, want %d", c.path, r.status, c.status)
			continue
		}
		if c.status == http.StatusNotFound && r.env["code"] != string(protocol.CodeUnknownRoute) {
			t.Errorf("GET %s: %v, want the error envelope with code unknown_route", c.path, r)
		}
	}
}

func TestHealthAndReadiness(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 1, grips: 1})
	if r := ts.do(http.MethodGet, ts.base+"/healthz", ""); r.status != http.StatusOK || r.env["status"] != "alive" {
		t.Errorf("/healthz: %v", r)
	}
	hwtest.EventuallyNil(t, 5*time.Second, "/readyz to say ready", func() error {
		if r := ts.do(http.MethodGet, ts.base+"/readyz", ""); r.status != http.StatusOK || r.env["status"] != "ready" {
			return fmt.Errorf("/readyz of a started service: %v", r)
		}
		return nil
	})
	// Without its state directory the service cannot keep a POST durable:
	// not ready, and the body says which check failed.
	if err := os.RemoveAll(ts.dir); err != nil {
		t.Fatal(err)
	}
	r := ts.do(http.MethodGet, ts.base+"/readyz", "")
	if r.status != http.StatusServiceUnavailable || r.env["status"] != "not ready" {
		t.Fatalf("/readyz without a state directory: %v", r)
	}
	var failed []string
	for _, c := range r.env["checks"].([]any) {
		if c := c.(map[string]any); c["ok"] == false {
			failed = append(failed, fmt.Sprint(c["name"], ": ", c["detail"]))
		}
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0], "state_dir: ") || !strings.Contains(failed[0], ts.dir) {
		t.Errorf("failed checks %q: want only state_dir, naming %s", failed, ts.dir)
	}
}

// A durable write the state directory refuses is visible to an operator
// without the log: a settings POST that answered 500 counts in
// hapticd_store_write_failures_total, and a profile document the
// write-behind keeps retrying shows in hapticd_store_documents_failing
// until it is written.
func TestFailedStateWritesShowInMetrics(t *testing.T) {
	dir := t.TempDir()
	ts := startService(t, serviceConfig{arms: 1, dir: dir})
	failures := func() float64 { return ts.scrape(t).value("hapticd_store_write_failures_total") }
	if got := failures(); got != 0 {
		t.Fatalf("hapticd_store_write_failures_total = %v before any write, want 0", got)
	}

	// A directory in the place of settings.json refuses the settings' write.
	if err := os.Mkdir(filepath.Join(dir, "settings.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	if r := ts.do(http.MethodPost, ts.base+"/settings/devices/force_scale", `{"value":0.5}`); r.status != http.StatusInternalServerError || r.env["code"] != "internal" {
		t.Fatalf("POST a setting the disk refuses: %v, want 500 internal", r)
	}
	if got := failures(); got < 1 {
		t.Errorf("hapticd_store_write_failures_total = %v after a settings POST answered 500, want at least 1", got)
	}

	// A profile's device document, once written, replaced by a directory:
	// the next WebSocket configure is retried in the background.
	id := ts.armIDs[0]
	c := ts.dial(t, ts.wsURL())
	c.expect()
	gate := func(gain string) string {
		return `{"arm3":[{"device_id":"` + id + `","configure":{"force_gate":{"gain":` + gain + `}}}]}`
	}
	if f := c.roundTrip(`{"session":{"configure":{"profile":{"name":"co.example:disk"}}}}`); f["errors"] != nil {
		t.Fatalf("pick a profile: %v", f["errors"])
	}
	if f := c.roundTrip(gate("0.5")); f["errors"] != nil {
		t.Fatalf("configure: %v", f["errors"])
	}
	var doc string
	hwtest.EventuallyNil(t, 10*time.Second, "the profile's device document written", func() error {
		m, _ := filepath.Glob(filepath.Join(dir, "profiles.v2", "*", "arm3-*.json"))
		if len(m) != 1 {
			return fmt.Errorf("device documents %v", m)
		}
		doc = m[0]
		return nil
	})
	if err := os.Remove(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(doc, 0o700); err != nil {
		t.Fatal(err)
	}
	before := failures()
	if f := c.roundTrip(gate("0.25")); f["errors"] != nil {
		t.Fatalf("configure: %v", f["errors"])
	}
	hwtest.EventuallyNil(t, 10*time.Second, "the refused document counted as failing", func() error {
		s := ts.scrape(t)
		if n, f := s.value("hapticd_store_documents_failing"), s.value("hapticd_store_write_failures_total"); n != 1 || f < before+2 {
			return fmt.Errorf("hapticd_store_documents_failing = %v, hapticd_store_write_failures_total = %v (from %v); want 1 and two retries", n, f, before)
		}
		return nil
	})
	if err := os.Remove(doc); err != nil {
		t.Fatal(err)
	}
	hwtest.EventuallyNil(t, 10*time.Second, "the document written at last", func() error {
		if n := ts.scrape(t).value("hapticd_store_documents_failing"); n != 0 {
			return fmt.Errorf("hapticd_store_documents_failing = %v", n)
		}
		if _, err := os.Stat(doc); err != nil {
			return err
		}
		return nil
	})
}

// TestMetricsWhileDevicesArrive: a scrape that meets a device the registry
// has listed but whose loop has not started yet (no histograms for a
// moment) leaves out what the device does not have yet; it must not panic,
// which (recovered by client_golang) cut the scrape short: every hapticd_
// series after that device, sessions and events included, missing.
func TestMetricsWhileDevicesArrive(t *testing.T) {
	ts := startService(t, serviceConfig{})
	collector := &serviceCollector{svc: ts.svc, build: BuildInfo{Version: "test"}}
	devices := &metricsGatherer{reg: prometheus.NewRegistry(), svc: ts.svc, yieldEvery: yieldEvery}
	stop := make(chan struct{})
	adderDone := make(chan error, 1)
	go func() {
		defer close(adderDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			// Hardware-style devices start their loop on a goroutine of
			// their own; the scheduler's are added to a shard after
			// they are listed: both leave a moment without a runner.
			d, err := ts.svc.AddDevice(sim.NewArm(sim.ArmOptions{Index: i % 4000, PeriodS: 0.001}), i%2 == 0)
			if err != nil {
				adderDone <- fmt.Errorf("add device %d: %w", i, err)
				return
			}
			ts.svc.RemoveDevice(d, errors.New("test: the device leaves again"))
			// Its id comes round again: wait until it is gone.
			for gone := time.Now().Add(30 * time.Second); ts.svc.Devices().Find(d.Type, d.ID) != nil; time.Sleep(time.Millisecond) {
				if time.Now().After(gone) {
					adderDone <- fmt.Errorf("device %s still listed 30 s after its removal", d.ID)
					return
				}
			}
		}
	}()
	metrics := make(chan prometheus.Metric, 256)
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range metrics {
		}
	}()
	collect := func() (problem any) {
		defer func() { problem = recover() }()
		collector.Collect(metrics)
		// The per-device series are gathered apart (not recovered by
		// client_golang: a panic there would end the scrape's connection).
		if _, err := devices.Gather(); err != nil {
			return err
		}
		_ = ts.svc.StatsDoc() // GET /stats reads the same devices
		return nil
	}
	deadline := time.Now().Add(4 * time.Second)
	for time.Now().Before(deadline) {
		if p := collect(); p != nil {
			close(stop)
			<-adderDone
			close(metrics)
			<-drained
			t.Fatalf("a scrape during a device's arrival panicked: %v", p)
		}
	}
	close(stop)
	if err := <-adderDone; err != nil {
		t.Fatal(err)
	}
	close(metrics)
	<-drained
}

// An events socket's end is counted by reason in /metrics, the reason its
// log line names: an operator sees why event clients go away.
func TestMetricsCountEventsSocketsClosed(t *testing.T) {
	ts := startService(t, serviceConfig{})
	c, _, err := websocket.DefaultDialer.Dial(ts.eventsWS, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	_ = c.Close()
	hwtest.Eventually(t, 10*time.Second, "the events socket's end counted", func() bool {
		return ts.scrape(t).value("hapticd_events_sockets_closed_total", "reason="+string(protocol.CloseClientClosed)) == 1
	})
}
