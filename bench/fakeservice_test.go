package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"github.com/hapticd/hapticd/bench/echoserver"
	"github.com/hapticd/hapticd/hw/hwtest"
)

// fakeService behaves like hapticd's simulation socket as docs/walkthrough.md's simulation channel section
// describes (inventory on open, then one frame per message, config only in
// full-state frames) and serves a /stats route whose loops tick at 1 kHz of
// wall time, with knobs to break the contract the way a faulty service
// would.
type fakeService struct {
	arms []string
	fakeFaults

	start       time.Time
	nextSession atomic.Int64
	sessions    atomic.Int64
	wg          sync.WaitGroup
}

// fakeFaults say how a fakeService breaks the contract.
type fakeFaults struct {
	// dropEvery drops the frame of every n-th control message of each
	// session (0: never), which stalls a lock-step client.
	dropEvery int
	// extraEvery sends a second frame for every n-th control message.
	extraEvery int
	// errorEvery adds an errors array to every n-th frame.
	errorEvery int
	// foreignEvery gives every n-th frame another session's id.
	foreignEvery int
	// busyEvery answers every n-th control message with device_busy.
	busyEvery int
	// overrunPermille is the share of loop ticks /stats reports overrun.
	overrunPermille uint64
	// noShards serves /stats as a hapticd before it listed its shards
	// did: no shards, and every device whatever the query.
	noShards bool
	// faultyFrom limits the faults above to sessions from this id on
	// (0: every session), and slows those sessions' frames by 200 µs:
	// a later run that is both slower and faulty.
	faultyFrom int64
	// refuseSubscribe answers a session.configure.subscribe with errors,
	// as the service answers an unknown state field.
	refuseSubscribe bool
	// delays, if set, hold every frame of session i (ids from 1) for
	// delays[(i-1) mod len(delays)] before it is sent: a service whose
	// speed changes from run to run, as a shared machine's does.
	delays []time.Duration
}

func newFake(arms int, faults fakeFaults) *fakeService {
	f := &fakeService{fakeFaults: faults, start: time.Now()}
	for i := range arms {
		f.arms = append(f.arms, fmt.Sprintf("%04X", 0x049D+i*0x1111))
	}
	return f
}

func (f *fakeService) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", f.stats)
	mux.HandleFunc("/", f.socket)
	return mux
}

// testFake serves a fake with two arms on an httptest server.
type testFake struct {
	*fakeService
	srv *httptest.Server
}

func newFakeService(t *testing.T, faults fakeFaults) testFake {
	t.Helper()
	f := newFake(2, faults)
	srv := httptest.NewServer(f.handler())
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		f.wg.Wait()
	})
	return testFake{f, srv}
}

func (f testFake) wsURL() string { return "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/" }

func (f *fakeService) frame(session int64, withConfig, withErrors bool) []byte {
	return f.frameWith(session, withConfig, withErrors, false)
}

func (f *fakeService) frameWith(session int64, withConfig, withErrors, busy bool) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"session_id":%d,"arm3":[`, session)
	for i, id := range f.arms {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"device_id":%q,`, id)
		if withConfig {
			fmt.Fprintf(&b, `"config":{"type":"arm3","preset":"defaults"},`)
		}
		b.WriteString(`"state":{"cursor_position":{"x":0,"y":0.15,"z":0.1},"control_mode":"force"},"status":{"ready":true}}`)
	}
	b.WriteString(`],"grip":[]`)
	switch {
	case withErrors:
		b.WriteString(`,"errors":[{"code":"invalid","message":"bad","path":"arm3[0]"}]`)
	case busy:
		b.WriteString(`,"errors":[{"code":"device_busy","message":"another session controls 049D","path":"arm3[0].commands"}],"warnings":[{"code":"unknown_field","message":"x","path":"arm3[0].x"}]`)
	}
	b.WriteString("}")
	return b.Bytes()
}

var fakeUpgrader = websocket.Upgrader{}

func (f *fakeService) socket(w http.ResponseWriter, r *http.Request) {
	conn, err := fakeUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	f.wg.Add(1)
	f.sessions.Add(1)
	defer func() {
		f.sessions.Add(-1)
		conn.Close()
		f.wg.Done()
	}()
	session := f.nextSession.Add(1)
	if conn.WriteMessage(websocket.TextMessage, f.frame(session, true, false)) != nil {
		return
	}
	faults := f.fakeFaults
	if f.faultyFrom > 0 && session < f.faultyFrom {
		faults = fakeFaults{}
	}
	var n int
	for {
		_, msg, err := conn.ReadMessage()
		if err != nil {
			return
		}
		full := bytes.Contains(msg, []byte("force_render_full_state"))
		control := bytes.Contains(msg, []byte("arm3"))
		if control {
			n++
		}
		if f.faultyFrom > 0 && session >= f.faultyFrom {
			time.Sleep(200 * time.Microsecond)
		}
		if d := f.delays; len(d) > 0 {
			time.Sleep(d[int(session-1)%len(d)])
		}
		if control && faults.dropEvery > 0 && n%faults.dropEvery == 0 {
			continue
		}
		id := session
		if control && faults.foreignEvery > 0 && n%faults.foreignEvery == 0 {
			id = session + 1000
		}
		withErrors := control && faults.errorEvery > 0 && n%faults.errorEvery == 0 ||
			f.refuseSubscribe && bytes.Contains(msg, []byte(`"subscribe"`))
		busy := control && faults.busyEvery > 0 && n%faults.busyEvery == 0
		if conn.WriteMessage(websocket.TextMessage, f.frameWith(id, full, withErrors, busy)) != nil {
			return
		}
		if control && faults.extraEvery > 0 && n%faults.extraEvery == 0 {
			if conn.WriteMessage(websocket.TextMessage, f.frame(id, false, false)) != nil {
				return
			}
		}
	}
}

func (f *fakeService) stats(w http.ResponseWriter, r *http.Request) {
	elapsed := time.Since(f.start)
	ticks := uint64(elapsed.Milliseconds())
	fmt.Fprintf(w, `{"ok":true,"data":{"devices":[`)
	devices := f.noShards || r.URL.Query().Get("devices") != "none"
	for i, id := range f.arms {
		if !devices {
			break
		}
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		fmt.Fprintf(w, `{"device_type":"arm3","device_id":%q,"loop":{"target_us":1000,"period_us_p50":1000,"period_us_p99":%d,"period_us_max":1500,"overruns":%d,"ticks":%d},"exchange":{"p50_us":1,"p99_us":2,"max_us":3}}`,
			id, 1010+10*i, ticks*f.overrunPermille/1000, ticks)
	}
	fmt.Fprint(w, "]")
	if !f.noShards {
		// One shard holds every arm; its overrun ticks took 2 ms, their
		// passes 1.5 ms, the others 1 ms and 0.5 ms.
		late := ticks * f.overrunPermille / 1000
		fmt.Fprintf(w, `,"shards":[{"devices":%d,"loop":{"target_us":1000,"period_us_p50":1000,"period_us_p99":2000,"period_us_max":2000,"overruns":%d,"ticks":%d},"period_buckets":[{"upper_us":1024,"count":%d},{"upper_us":2048,"count":%d}],"busy_buckets":[{"upper_us":512,"count":%d},{"upper_us":1536,"count":%d}]}]`,
			len(f.arms), late, ticks, ticks-late, late, ticks-late, late)
	}
	fmt.Fprintf(w, `,"process":{"cpu_seconds":%g,"rss_bytes":10485760,"goroutines":12,"sessions":%d,"gc_pause_total_ns":%d,"gc_count":%d,"heap_bytes":4194304}}}`,
		elapsed.Seconds()/2, f.sessions.Load(), ticks*1000, ticks/100)
}

// Running the test binary as a fake hapticd process: with
// BENCH_FAKE_HAPTICD=1 in its environment, TestMain serves the hapticd
// command line bench uses (and baseline-arms) instead of running tests, so
// the process handling is tested without the real service.
const fakeHapticdEnv = "BENCH_FAKE_HAPTICD"

// fakeCapacityEnv sets the most arms the fake steps without overruns; the
// fake bare loop manages twice as many.
const fakeCapacityEnv = "BENCH_FAKE_CAPACITY"

// fakeBareEnv, if set, replaces the fake bare loop's factor of 2 (a factor
// under 1 makes a bare loop that loses to the service).
const fakeBareEnv = "BENCH_FAKE_BARE_FACTOR"

// fakeEchoEnv, if set to a duration, makes the test binary an echo
// process (RunOptions.EchoCommand) that holds every frame that long: a
// baseline slower than the service.
const fakeEchoEnv = "BENCH_FAKE_ECHO_DELAY"

// TestMain runs the tests, or, when the tests start this binary as a fake
// echo process or a fake hapticd (its environment says which), that fake.
func TestMain(m *testing.M) {
	if d := os.Getenv(fakeEchoEnv); d != "" {
		if err := fakeEcho(d); err != nil {
			fmt.Fprintln(os.Stderr, "fake echo:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(fakeHapticdEnv) == "1" {
		if err := fakeHapticd(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "fake hapticd:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Only the tests, not the fakes above, are checked for leaks: a fake
	// ends its process when its work is done.
	hwtest.Main(m, func() error { return goleak.Find() })
}

// fakeEcho serves as an echo process does (its URL as the first line,
// until stdin closes), slowed by delay per frame.
func fakeEcho(delay string) error {
	d, err := time.ParseDuration(delay)
	if err != nil {
		return err
	}
	f := newFake(2, fakeFaults{delays: []time.Duration{d}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: f.handler()}
	go srv.Serve(ln)
	fmt.Printf("ws://%s/\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	return srv.Close()
}

func fakeHapticd(args []string) error {
	capacity, _ := strconv.Atoi(os.Getenv(fakeCapacityEnv))
	if capacity == 0 {
		capacity = 1 << 30
	}
	if len(args) > 0 && args[0] == "baseline-arms" {
		fs := flag.NewFlagSet("baseline-arms", flag.ContinueOnError)
		arms := fs.Int("arms", 1, "")
		hz := fs.Float64("loop-hz", 1000, "")
		d := fs.Duration("duration", time.Second, "")
		fs.Bool("json", false, "")
		fs.String("motion", "none", "")
		effects := fs.String("effects", "", "")
		inventory := fs.String("inventory", "", "")
		state := fs.String("state", "", "")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		// Inside an echo, as the real one: the URL, a line on stdin to
		// step, the result, and serving until stdin closes.
		lines := bufio.NewScanner(os.Stdin)
		if *inventory != "" {
			echo, err := echoserver.StartFiles(*inventory, *state, os.Stdout)
			if err != nil {
				return err
			}
			defer echo.Close()
			if !lines.Scan() {
				return nil
			}
			defer func() {
				for lines.Scan() {
				}
			}()
		}
		ticks := uint64(d.Seconds() * *hz)
		var overruns uint64
		factor := 2.0
		if f, err := strconv.ParseFloat(os.Getenv(fakeBareEnv), 64); err == nil {
			factor = f
		}
		if *effects != "" {
			factor /= 2 // rendering effects costs the fake as much as stepping
		}
		if float64(*arms) > factor*float64(capacity) {
			overruns = ticks / 10
		}
		return json.NewEncoder(os.Stdout).Encode(BareLoop{Arms: *arms, LoopHz: *hz, Ticks: ticks, Overruns: overruns,
			PeriodUsP50: 1e6 / *hz, PeriodUsP99: 1e6 / *hz, NsPerStep: 100}) // a floor for the fake service
	}
	fs := flag.NewFlagSet("hapticd", flag.ContinueOnError)
	port := fs.Int("port", 10001, "")
	fs.Int("legacy-port", 10000, "")
	fs.Int("events-port", 10020, "")
	arms := fs.Int("sim-arms", 1, "")
	fs.Int("sim-grips", 0, "")
	fs.String("sim-motion", "none", "")
	simEffects := fs.String("sim-effects", "", "")
	fs.Int("loop-hz", 1000, "")
	fs.String("state-dir", "", "")
	fs.String("log-format", "console", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var faults fakeFaults
	if *simEffects != "" {
		capacity /= 2 // rendering effects costs the fake as much as stepping
	}
	if *arms > capacity {
		faults.overrunPermille = 100
	}
	// Catch the signal before announcing the listener, as hapticd does.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	f := newFake(*arms, faults)
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: f.handler()}
	go srv.Serve(ln)
	// The log lines bench waits for, as zerolog writes them.
	fmt.Fprintf(os.Stderr, `{"level":"info","listener":"http","addr":%q,"message":"listening"}`+"\n", ln.Addr().String())
	fmt.Fprintln(os.Stderr, `{"level":"info","arms":`+strconv.Itoa(*arms)+`,"message":"ready"}`)
	<-stop
	return srv.Close()
}

// fakeHapticdBinary makes the test binary the hapticd that bench starts.
func fakeHapticdBinary(t *testing.T, capacity int) string {
	t.Helper()
	t.Setenv(fakeHapticdEnv, "1")
	t.Setenv(fakeCapacityEnv, strconv.Itoa(capacity))
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
