//go:build linux

// The lab runs on 127.0.0.2-4 and stops a node with SIGSTOP: Linux only.

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/hapticd/hapticd/protocol"
)

// labMember is one process of a test lab with what restarts it.
type labMember struct {
	*process
	host string
	args []string
}

// labPorts hands out the ports a test lab's members are told to listen on.
// A port is chosen before the member that binds it starts, so it is drawn
// from below Linux's ephemeral range (32768 and up): no listener on port 0
// and no outgoing connection of another member, or of a test running
// beside this one, can take it in between. A port is never handed out
// twice in one test.
type labPorts struct {
	t    *testing.T
	used map[int]bool
}

func newLabPorts(t *testing.T) *labPorts { return &labPorts{t: t, used: map[int]bool{}} }

// free is a port free on host (a 127.0.0.x address) right now.
func (p *labPorts) free(host string) int {
	p.t.Helper()
	const low, high = 20000, 32768 // [low, high): below the ephemeral range
	for range 1000 {
		port := low + mrand.IntN(high-low)
		if p.used[port] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			l0, anyErr := net.Listen("tcp", host+":0")
			if anyErr != nil {
				p.t.Skipf("cannot listen on %s (the lab test needs 127.0.0.2-4): %v", host, anyErr)
			}
			l0.Close()
			continue // taken: draw again
		}
		l.Close()
		p.used[port] = true
		return port
	}
	p.t.Fatalf("no free port on %s in [%d, %d) after 1000 draws", host, low, high)
	return 0
}

func startLabMember(t *testing.T, bin, host string, args ...string) *labMember {
	t.Helper()
	all := append([]string{"--bind", host, "--cluster-bind", host}, args...)
	return &labMember{process: startProcess(t, bin, all...), host: host, args: args}
}

// loopShards is m's simulation shards as GET /stats reports them, each
// with its loop's period histogram since the start; client reaches m.
func loopShards(client *http.Client, m *labMember) ([]protocol.ShardStats, error) {
	resp, err := client.Get(m.url("/stats?devices=none"))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var env struct {
		Data protocol.Stats `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		return nil, fmt.Errorf("GET /stats of %s: %w", m.addr["http"], err)
	}
	if len(env.Data.Shards) == 0 {
		return nil, fmt.Errorf("GET /stats of %s lists no shard", m.addr["http"])
	}
	return env.Data.Shards, nil
}

// longestPeriod is the longest tick period of any shard between two reads
// (the upper bound of its histogram bucket): how long the loop went
// without a tick, at worst, in between.
func longestPeriod(before, after []protocol.ShardStats) time.Duration {
	var longest float64
	for i := range min(len(before), len(after)) {
		if us, ok := protocol.WindowQuantileUs(before[i].PeriodBuckets, after[i].PeriodBuckets, 1); ok {
			longest = max(longest, us)
		}
	}
	return time.Duration(longest * float64(time.Microsecond))
}

// A node's force ends within its lease plus the ramp's 20 ms on a loop that
// gets the CPU on time (actors/loop ReleaseBoundNs): the ramp runs from the
// lease's end and the first tick past it reads zero. A node whose loop went
// without a tick for a while (a starved CI machine) ends it that much
// later, so the lab tests assert the lease + 20 ms + the longest tick
// period the node itself reports over the wait (GET /stats period buckets);
// on a quiet machine that is a period or two. hapticbench lease holds the
// strict figure.
const releaseRamp = 20 * time.Millisecond

// labArms lists the arms /devices reports, by device id.
func labArms(t *testing.T, m *labMember) map[string]map[string]any {
	t.Helper()
	return labDevices(t, m, "arm3")
}

// labDevices lists the devices of one type /devices reports, by device id.
func labDevices(t *testing.T, m *labMember, typ string) map[string]map[string]any {
	t.Helper()
	resp, err := http.Get(m.url("/devices"))
	if err != nil {
		return nil // a process being killed; callers poll
	}
	defer resp.Body.Close()
	var body map[string][]map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET /devices: %v", err)
	}
	out := map[string]map[string]any{}
	for _, d := range body[typ] {
		out[d["device_id"].(string)] = d
	}
	return out
}

func armUUID(d map[string]any) string {
	s, _ := path(d, "config", "device_info", "uuid").(string)
	return s
}

// waitArmOnGateway waits until gw lists the arm id (a node's, through the
// cluster link).
func waitArmOnGateway(t *testing.T, gw *labMember, id string) {
	t.Helper()
	waitLab(t, 10*time.Second, "the node's arm on the gateway", func() bool { _, ok := labArms(t, gw)[id]; return ok })
}

// waitLab polls cond every 10 ms for up to d and returns how long it took.
func waitLab(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// forceThrough holds a force on device id through m's simulation socket
// until the returned stop is called.
func forceThrough(t *testing.T, m *labMember, id string, z float64) (stop func()) {
	t.Helper()
	conn, _, err := websocket.DefaultDialer.Dial("ws://"+m.addr["http"]+"/", nil)
	if err != nil {
		t.Fatalf("dial %s: %v", m.addr["http"], err)
	}
	msg := labForce(id, z)
	return holdSession(t, conn, func() string { return msg }, nil)
}

// holdSession keeps a client's session on conn alive until the returned stop
// is called or the test ends: it writes next() every 10 ms (each renews the
// lease, as a client holding a force or effects does) and hands every
// frame that parses to onFrame (nil: the frames are read and dropped, so
// the server never finds the client slow). stop closes conn.
func holdSession(t *testing.T, conn *websocket.Conn, next func() string, onFrame func(f map[string]any)) (stop func()) {
	t.Helper()
	// The reads are this session's from here on: a deadline readJSON set
	// (10 s) would end them mid-test, the client would stop reading its
	// frames, and the server's writes, then its reads, then the client's
	// writes would stall behind them.
	_ = conn.SetReadDeadline(time.Time{})
	done := make(chan struct{})
	go func() {
		for {
			_, b, err := conn.ReadMessage()
			if err != nil {
				return
			}
			var f map[string]any
			if onFrame != nil && json.Unmarshal(b, &f) == nil {
				onFrame(f)
			}
		}
	}()
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			if conn.WriteMessage(websocket.TextMessage, []byte(next())) != nil {
				return
			}
		}
	}()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			close(done)
			_ = conn.Close()
		}
	}
	t.Cleanup(stop)
	return stop
}

// labSession opens a simulation session on m and returns its round trip:
// one message out, its frame back.
func labSession(t *testing.T, m *labMember) (roundTrip func(msg string) map[string]any, close func()) {
	t.Helper()
	c := dialWS(t, "ws://"+m.addr["http"]+"/")
	readJSON(t, c) // the inventory frame
	return func(msg string) map[string]any {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		return readJSON(t, c)
	}, func() { c.Close() }
}

func labForce(id string, z float64) string {
	return fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":%g}}}}]}`, id, z)
}

// errorCodes are the codes of a frame's errors.
func errorCodes(f map[string]any) []string {
	var codes []string
	errs, _ := f["errors"].([]any)
	for _, e := range errs {
		c, _ := path(e, "code").(string)
		codes = append(codes, c)
	}
	return codes
}

func controlMode(d map[string]any) string {
	s, _ := path(d, "state", "control_mode").(string)
	return s
}

// underGatewayForce reports whether arm listing d is under the z force a
// client sends through a gateway: in force mode at that force less what
// the force gates may take. Not exactly z: the gateway's loop gates the
// session's force and the node's loop the gateway's command, each taking
// at most its gain (docs/protocol.md; both the default in the lab: its
// clients configure none, and a node gates a gateway's commands with the
// defaults), and a gate starts from rest at each claim, so after a claim,
// a lapse or a change of motion the force reads a little under z for a
// few hundred ms (1.4948 to 1.4999999 N for 420 ms for 1.5 N at load
// 11): a loaded host could stretch that past a wait for exactly z.
func underGatewayForce(d map[string]any, z float64) bool {
	gain := protocol.DefaultEntry(protocol.KeyForceGate).(protocol.ForceGate).Gain
	got := cursorForceZ(d)
	least := z * (1 - gain) * (1 - gain) // both gates at their gain
	return controlMode(d) == "force" && min(least, z) <= got && got <= max(least, z)
}

// TestLab runs a lab of three real processes: nodes n1 (127.0.0.2) and n2
// (127.0.0.3) with one simulated arm each, and a gateway (127.0.0.4), once
// per membership. It checks the merged inventory, forces through the
// gateway on the right arm, config through the gateway persisted on the
// node, a killed node's devices leaving with device-disconnected and
// returning after a restart, a hung node's detection time, and the force on
// a node going to zero when the gateway is killed while holding it.
func TestLab(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes")
	}
	bin := buildBinary(t)
	for _, membership := range []string{"static", "automanaged"} {
		t.Run(membership, func(t *testing.T) { testLab(t, bin, membership) })
	}
}

func testLab(t *testing.T, bin, membership string) {
	const n1Host, n2Host, gwHost = "127.0.0.2", "127.0.0.3", "127.0.0.4"
	ports := newLabPorts(t)
	p1, p2, pg := ports.free(n1Host), ports.free(n2Host), ports.free(gwHost)
	common := []string{"--sim-grips", "0", "--membership", membership}
	extra := map[string][]string{} // per host
	checkHealth := func(map[string]*labMember) {}
	hungBound := 5 * time.Second
	switch membership {
	case "static":
		extra[gwHost] = []string{"--peers", fmt.Sprintf("%s:%d,%s:%d", n1Host, p1, n2Host, p2), "--cluster-node-timeout", "1s"}
	case "automanaged":
		health := map[string]int{n1Host: ports.free(n1Host), n2Host: ports.free(n2Host), gwHost: ports.free(gwHost)}
		peers := fmt.Sprintf("%s:%d,%s:%d,%s:%d", n1Host, health[n1Host], n2Host, health[n2Host], gwHost, health[gwHost])
		for host, port := range health {
			extra[host] = []string{"--peers", peers, "--cluster-health-port", strconv.Itoa(port)}
		}
		// The heartbeat timeout is out of the way, so a hung node must be
		// found by the cluster's topology: the health poll's fixed 2 s
		// timeout, one poll period, then the loop's 50 failed ticks.
		extra[gwHost] = append(extra[gwHost], "--cluster-node-timeout", "10s")
		hungBound = 8 * time.Second
		checkHealth = func(members map[string]*labMember) {
			// The health endpoints listen on --cluster-bind only (protoactor's
			// own would take every interface): the member's own address
			// answers, and the member listens on that port at no other
			// address (asked of its own sockets: another test's process may
			// listen on 127.0.0.1 at the same port).
			for host, port := range health {
				resp, err := http.Get(fmt.Sprintf("http://%s:%d/_health", host, port))
				if err != nil {
					t.Fatalf("%s's health endpoint: %v", host, err)
				}
				resp.Body.Close()
				own := 0
				for _, a := range listeningAddrs(t, members[host].cmd.Process.Pid) {
					switch {
					case int(a.Port()) != port:
					case a.Addr().String() != host:
						t.Errorf("%s's health port %d listens on %v: it binds beyond --cluster-bind", host, port, a)
					default:
						own++
					}
				}
				if own == 0 {
					t.Errorf("%s's process lists no listener on its health port %d", host, port)
				}
			}
		}
	}
	node := func(host string, port, base int) []string {
		if membership == "automanaged" {
			port = 0 // the default: a fresh port per start, found through the health port
		}
		args := append([]string{"--role", "node", "--node-id", host, "--cluster-port", strconv.Itoa(port),
			"--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-index-base", strconv.Itoa(base)}, common...)
		return append(args, extra[host]...)
	}
	// n1's lease on the gateway's commands is 300 ms (as TestLabTwoGateways'
	// node's): labBusy checks that the gateway's hold keeps a node session
	// off the arm, and with the default 100 ms a starved gateway renewing
	// every 20 ms let it lapse. n2 keeps the default, which the gateway's
	// SIGKILL below times.
	n1 := startLabMember(t, bin, n1Host, append(node(n1Host, p1, 0), "--sim-grips", "1", "--cluster-lease-ms", "300")...)
	n2 := startLabMember(t, bin, n2Host, node(n2Host, p2, 10)...)
	gw := startLabMember(t, bin, gwHost, append(append([]string{"--role", "gateway", "--node-id", "gw", "--cluster-port", strconv.Itoa(pg),
		"--state-dir", t.TempDir(), "--sim-arms", "0"}, common...), extra[gwHost]...)...)

	// The merged inventory: both nodes' arms, same UUIDs as on their nodes.
	var a1, a2 string // ids of n1's and n2's arm
	for id := range labArms(t, n1) {
		a1 = id
	}
	for id := range labArms(t, n2) {
		a2 = id
	}
	took := waitLab(t, 10*time.Second, "both nodes' arms on the gateway", func() bool { return len(labArms(t, gw)) == 2 })
	t.Logf("merged inventory after %v", took)
	checkHealth(map[string]*labMember{n1Host: n1, n2Host: n2, gwHost: gw})
	labRemoteStats(t, gw, map[string]*labMember{a1: n1, a2: n2})
	gwArms := labArms(t, gw)
	for id, node := range map[string]*labMember{a1: n1, a2: n2} {
		if armUUID(gwArms[id]) == "" || armUUID(gwArms[id]) != armUUID(labArms(t, node)[id]) {
			t.Fatalf("gateway arm %s has UUID %q, node says %q", id, armUUID(gwArms[id]), armUUID(labArms(t, node)[id]))
		}
		if port, want := path(gwArms[id], "config", "port"), "http://"+node.addr["http"]; port != want {
			t.Errorf("gateway arm %s has port %v, want its node's URL %s", id, port, want)
		}
	}

	// 3.0 clients see the remote arms on the gateway's legacy port too.
	resp, err := http.Get("http://" + gw.addr["legacy"] + "/3.0/devices")
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, id := range []string{a1, a2} {
		if err != nil || resp.StatusCode != 200 || !strings.Contains(string(legacy), armUUID(gwArms[id])) {
			t.Errorf("GET /3.0/devices on the gateway (%d, %v) does not list arm %s: %s", resp.StatusCode, err, id, legacy)
		}
	}

	// n1's grip too, with its state (a simulated grip reports its battery).
	var grip string
	for id := range labDevices(t, n1, "grip") {
		grip = id
	}
	waitLab(t, 5*time.Second, "n1's grip with its state on the gateway", func() bool {
		d := labDevices(t, gw, "grip")[grip]
		return d != nil && path(d, "config", "device_info", "uuid") == path(labDevices(t, n1, "grip")[grip], "config", "device_info", "uuid") &&
			path(d, "state", "battery_level") != nil && path(d, "state", "battery_level") != 0.0
	})

	// A force through the gateway lands on n1's arm only, and moves it.
	z0, _ := path(labArms(t, n1)[a1], "state", "cursor_position", "z").(float64)
	stop := forceThrough(t, gw, a1, 1.5)
	waitLab(t, 5*time.Second, "n1's arm under force from the gateway", func() bool {
		return underGatewayForce(labArms(t, n1)[a1], 1.5)
	})
	waitLab(t, 5*time.Second, "n1's arm moving up under the gateway's force", func() bool {
		z, _ := path(labArms(t, n1)[a1], "state", "cursor_position", "z").(float64)
		return z > z0+0.005
	})
	if m := controlMode(labArms(t, n2)[a2]); m != "idle" {
		t.Fatalf("n2's arm is in %q while only n1's is commanded", m)
	}
	stop()
	waitLab(t, 5*time.Second, "n1's arm idle after the client left", func() bool { return controlMode(labArms(t, n1)[a1]) == "idle" })
	labBusy(t, gw, n1, a1)

	// Config through the gateway is validated, then set and persisted on
	// the owning node (read back from the node itself).
	gc := "/arm3/" + a1 + "/config/gravity_compensation"
	const gcBody = `{"enabled":false,"scaling_factor":0.25}`
	for _, op := range []struct{ method, route, body string }{
		{"POST", gc, gcBody},
		{"POST", "/arm3/" + a1 + "/config/handedness", `"left"`},
		{"DELETE", "/arm3/" + a1 + "/config/handedness", ""},
	} {
		if status, env := httpDo(t, op.method, gw.url(op.route), op.body); status != 200 {
			t.Fatalf("%s %s through the gateway: %d %v", op.method, op.route, status, env)
		}
	}
	labConfig := func(m *labMember, route string) string {
		_, env := httpDo(t, "GET", m.url(route), "")
		b, _ := json.Marshal(env["data"])
		return string(b)
	}
	if got := labConfig(n1, gc); got != gcBody {
		t.Fatalf("node n1 has %s = %s after a POST through the gateway, want %s", gc, got, gcBody)
	}
	if got := labConfig(n1, "/arm3/"+a1+"/config/handedness"); got != `"right"` {
		t.Fatalf("node n1 has handedness %s after a DELETE through the gateway, want the default", got)
	}
	if status, _ := httpDo(t, "POST", gw.url("/arm3/"+a1+"/config/handedness"), `"sideways"`); status != 400 {
		t.Fatalf("bad handedness through the gateway: status %d, want 400", status)
	}

	// A deprecated route used on a node shows on the gateway's events.
	if n := eventCount(gw, "http-route-deprecated", ""); n != 0 {
		t.Fatalf("the gateway has %d http-route-deprecated events before any deprecated route was used (-1: its events could not be read)", n)
	}
	if status, env := httpDo(t, "POST", n1.url("/device_handedness"), fmt.Sprintf(`{"device_id":%q,"handedness":"right"}`, a1)); status != 200 {
		t.Fatalf("POST /device_handedness on n1: %d %v", status, env)
	}
	waitLab(t, 5*time.Second, "n1's deprecation event on the gateway", func() bool { return eventCount(gw, "http-route-deprecated", "") > 0 })

	// Config set on the node itself, behind the gateway's back: the
	// gateway must show it once the node comes back.
	hd := "/arm3/" + a1 + "/config/handedness"
	if status, env := httpDo(t, "POST", n1.url(hd), `"left"`); status != 200 {
		t.Fatalf("POST %s on n1: %d %v", hd, status, env)
	}

	// SIGKILL n1: its arm leaves the gateway with device-disconnected.
	if err := n1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = n1.cmd.Wait()
	took = waitLab(t, 5*time.Second, "n1's arm gone from the gateway", func() bool { _, ok := labArms(t, gw)[a1]; return !ok })
	t.Logf("SIGKILL of a node detected in %v (%s)", took, membership)
	waitLab(t, 5*time.Second, "device-disconnected on the gateway", func() bool { return eventCount(gw, "device-disconnected", a1) > 0 })
	if _, ok := labArms(t, gw)[a2]; !ok {
		t.Fatal("n2's arm left with n1")
	}

	// n1 back at the same address: its arm returns.
	n1 = startLabMember(t, bin, n1Host, n1.args...)
	took = waitLab(t, 10*time.Second, "n1's arm back on the gateway", func() bool { _, ok := labArms(t, gw)[a1]; return ok })
	t.Logf("restarted node's arm back %v after its ready line", took)
	waitLab(t, 5*time.Second, "n1's arm back with its config", func() bool {
		return labConfig(gw, gc) == gcBody && labConfig(gw, hd) == `"left"`
	})

	// SIGSTOP n2: a hung node is detected by its silence.
	if err := n2.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	took = waitLab(t, hungBound, "hung n2's arm gone from the gateway", func() bool { _, ok := labArms(t, gw)[a2]; return !ok })
	t.Logf("SIGSTOP of a node detected in %v (%s)", took, membership)
	if err := n2.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	took = waitLab(t, 10*time.Second, "resumed n2's arm back on the gateway", func() bool { _, ok := labArms(t, gw)[a2]; return ok })
	t.Logf("resumed node's arm back after %v", took)

	// SIGKILL the gateway while it holds a force on n2's arm: the node's
	// lease (100 ms) ramps it to zero.
	forceThrough(t, gw, a2, 1.5)
	waitLab(t, 5*time.Second, "n2's arm under force from the gateway", func() bool { return underGatewayForce(labArms(t, n2)[a2], 1.5) })
	if err := gw.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	took = waitLab(t, 5*time.Second, "n2's arm idle after the gateway died", func() bool { return controlMode(labArms(t, n2)[a2]) == "idle" })
	t.Logf("force on a node ended %v after the gateway's SIGKILL (lease 100 ms)", took)
	if took > time.Second {
		t.Errorf("force held %v after the gateway died; the lease is 100 ms", took)
	}

	// A node whose gateway is gone still stops cleanly and promptly.
	if err := n2.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- n2.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("node exited with %v after SIGTERM, want status 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("node did not exit within 10 s of SIGTERM")
	}
}

// labRemoteStats checks that the gateway's GET /stats says, for each
// node's arm, which node serves it, where clients reach that node, and how
// old the states its loop got were.
func labRemoteStats(t *testing.T, gw *labMember, nodes map[string]*labMember) {
	t.Helper()
	var body struct {
		Data struct {
			Devices []struct {
				DeviceID string `json:"device_id"`
				Remote   *struct {
					NodeID   string `json:"node_id"`
					NodeURL  string `json:"node_url"`
					StateAge struct {
						Count uint64  `json:"count"`
						P50Us float64 `json:"p50_us"`
					} `json:"state_age"`
				} `json:"remote"`
			} `json:"devices"`
		} `json:"data"`
	}
	waitLab(t, 5*time.Second, "state ages of both arms in the gateway's /stats", func() bool {
		resp, err := http.Get(gw.url("/stats"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("GET /stats: %v", err)
		}
		aged := 0
		for _, d := range body.Data.Devices {
			if n := nodes[d.DeviceID]; n != nil && d.Remote != nil {
				if d.Remote.NodeURL != "http://"+n.addr["http"] || d.Remote.NodeID != n.host {
					t.Fatalf("gateway /stats: arm %s on node %q at %q, want %q at http://%s", d.DeviceID, d.Remote.NodeID, d.Remote.NodeURL, n.host, n.addr["http"])
				}
				if d.Remote.StateAge.Count > 0 && d.Remote.StateAge.P50Us > 0 {
					aged++
				}
			}
		}
		return aged == len(nodes)
	})
}

// labBusy checks one controller per arm across a gateway and its node: a
// second session on the gateway gets device_busy as on a single host; a
// session on the gateway holding the arm makes a session on the node get
// device_busy, and the other way round.
func labBusy(t *testing.T, gw, node *labMember, id string) {
	// Two sessions on the gateway: the gateway's own register decides.
	aConn := dialWS(t, "ws://"+gw.addr["http"]+"/")
	readJSON(t, aConn) // the inventory frame
	a := func(msg string) map[string]any {
		t.Helper()
		if err := aConn.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		return readJSON(t, aConn)
	}
	a(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	if f := a(labForce(id, 1)); f["errors"] != nil {
		t.Fatalf("first session on the gateway refused: %v", f["errors"])
	}
	b, closeB := labSession(t, gw)
	if codes := errorCodes(b(labForce(id, -1))); !slices.Equal(codes, []string{"device_busy"}) {
		t.Fatalf("second session on the gateway: errors %v, want [device_busy]", codes)
	}
	closeB()

	// The gateway's session holds the arm on the node: a session on the
	// node itself is refused.
	waitLab(t, 5*time.Second, "the gateway's force on the node", func() bool { return controlMode(labArms(t, node)[id]) == "force" })
	// The gateway's session renews its hold from here on, as a client
	// holding a force does: starved, the steps since its one command
	// outlasted its lease, or the node's lease on the gateway's command,
	// and the node's session took the freed arm (errors []).
	closeA := holdSession(t, aConn, func() string { return labForce(id, 1) }, nil)
	d, closeD := labSession(t, node)
	if codes := errorCodes(d(labForce(id, -1))); !slices.Equal(codes, []string{"device_busy"}) {
		t.Fatalf("session on the node while the gateway's holds the arm: errors %v, want [device_busy]", codes)
	}
	closeD()
	closeA()
	waitLab(t, 5*time.Second, "the arm idle on the node after the gateway's session left", func() bool { return controlMode(labArms(t, node)[id]) == "idle" })

	// A session on the node holds the arm: the gateway's sessions are
	// refused once the node's state says so (one push). The gateway's
	// session uses the shortest lease, so a command that got in before
	// that lapses at once and the refusal follows.
	stop := forceThrough(t, node, id, 1.5)
	defer stop()
	waitLab(t, 5*time.Second, "the node's own session forcing the arm", func() bool { return controlMode(labArms(t, node)[id]) == "force" })
	g, closeG := labSession(t, gw)
	defer closeG()
	g(`{"session":{"configure":{"lease":{"ms":10}}}}`)
	waitLab(t, 5*time.Second, "device_busy on the gateway while a node session holds the arm", func() bool {
		return slices.Equal(errorCodes(g(labForce(id, -1))), []string{"device_busy"})
	})
	// The node session's force, not the gateway's -1: waited for, since
	// that session renews its 100 ms lease every 10 ms from a test that a
	// loaded machine may starve past it, and one look could fall in the
	// lapse or in the rise after it.
	var z float64
	waitLab(t, 5*time.Second, "the node session's force on the node's arm (1.5, not the gateway's -1)", func() bool {
		z, _ = path(labArms(t, node)[id], "state", "current_cursor_force", "z").(float64)
		return z >= 1
	})
	// The gateway shows the node session's control, not its own idle hold.
	waitLab(t, 5*time.Second, "the gateway showing the node session's force", func() bool { return controlMode(labArms(t, gw)[id]) == "force" })
	stop()
	// Now a lease that outlasts the wait between two polls: with 10 ms,
	// a starved machine let each command lapse before the next, and the
	// node's force ramped up and down (0.18-0.49999 N) without holding 0.5.
	g(`{"session":{"configure":{"lease":{"ms":1000}}}}`)
	waitLab(t, 5*time.Second, "the gateway's session controls the arm once the node's let go", func() bool {
		return len(errorCodes(g(labForce(id, 0.5)))) == 0 && underGatewayForce(labArms(t, node)[id], 0.5)
	})
	closeG()
	waitLab(t, 5*time.Second, "the arm idle on the node after the sessions left", func() bool { return controlMode(labArms(t, node)[id]) == "idle" })
}

// writeLabPKI writes a CA and one certificate signed by it, valid for
// 127.0.0.2-4 as server and client, into dir: ca.pem, cert.pem, key.pem.
func writeLabPKI(t *testing.T, dir string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "lab ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "lab member"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.2"), net.ParseIP("127.0.0.3"), net.ParseIP("127.0.0.4")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*pem.Block{
		"ca.pem": {Type: "CERTIFICATE", Bytes: caDER}, "cert.pem": {Type: "CERTIFICATE", Bytes: der},
		"key.pem": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// readmeLabPKI runs docs/lab.md's certificate recipe, as written but for the
// addresses (hosts a, b and gw at 127.0.0.2-4), and leaves ca.pem and each
// member's NAME.pem and NAME.key in dir. It reports false when openssl is
// not installed.
func readmeLabPKI(t *testing.T, dir string) bool {
	t.Helper()
	if _, err := exec.LookPath("openssl"); err != nil {
		return false
	}
	doc, err := os.ReadFile("../../docs/lab.md")
	if err != nil {
		t.Fatal(err)
	}
	block := readmeBlock(t, string(doc), "## Running a two-host lab")
	for from, to := range map[string]string{"10.0.0.1": "127.0.0.2", "10.0.0.2": "127.0.0.3", "10.0.0.3": "127.0.0.4"} {
		if !strings.Contains(block, from) {
			t.Fatalf("docs/lab.md's certificate recipe no longer names %s", from)
		}
		block = strings.ReplaceAll(block, from, to)
	}
	cmd := exec.Command("sh", "-e", "-c", block)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docs/lab.md's certificate recipe: %v\n%s", err, out)
	}
	// The recipe writes into ./lab; the test reads dir.
	entries, err := os.ReadDir(filepath.Join(dir, "lab"))
	if err != nil {
		t.Fatalf("docs/lab.md's certificate recipe made no lab directory: %v", err)
	}
	for _, e := range entries {
		if err := os.Rename(filepath.Join(dir, "lab", e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return true
}

// With mutual TLS on, a gateway with the lab's certificate sees the node's
// arm and a foreign one (its own CA) never does, though it asks as often.
func TestLabMutualTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs three processes")
	}
	bin := buildBinary(t)
	lab, foreign := t.TempDir(), t.TempDir()
	// The lab's certificates are made by docs/lab.md's recipe, run as
	// written with the lab's addresses on 127.0.0.x; the foreign CA's by Go.
	nodeCert, gwCert := []string{"a.pem", "a.key"}, []string{"gw.pem", "gw.key"}
	if !readmeLabPKI(t, lab) {
		writeLabPKI(t, lab)
		nodeCert, gwCert = []string{"cert.pem", "key.pem"}, []string{"cert.pem", "key.pem"}
	}
	writeLabPKI(t, foreign)
	tlsArgs := func(dir string, certKey []string) []string {
		return []string{"--cluster-cert", filepath.Join(dir, certKey[0]), "--cluster-key", filepath.Join(dir, certKey[1]), "--cluster-ca", filepath.Join(dir, "ca.pem")}
	}
	const nHost, gwHost = "127.0.0.2", "127.0.0.4"
	ports := newLabPorts(t)
	// Membership is automanaged (the default); its health endpoints are
	// plain HTTP, so the foreign gateways see the node as a member, and
	// must still get nothing over the cluster link.
	pn, hn, hMember := ports.free(nHost), ports.free(nHost), ports.free(gwHost)
	labPeers := fmt.Sprintf("%s:%d,%s:%d", nHost, hn, gwHost, hMember)
	startLabMember(t, bin, nHost, append([]string{"--role", "node", "--cluster-port", strconv.Itoa(pn), "--cluster-health-port", strconv.Itoa(hn),
		"--peers", labPeers, "--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0"}, tlsArgs(lab, nodeCert)...)...)
	gateway := func(health int, pki []string) *labMember {
		args := []string{"--role", "gateway", "--cluster-port", strconv.Itoa(ports.free(gwHost)), "--cluster-health-port", strconv.Itoa(health),
			"--peers", fmt.Sprintf("%s:%d,%s:%d", nHost, hn, gwHost, health), "--state-dir", t.TempDir(), "--sim-arms", "0", "--sim-grips", "0"}
		return startLabMember(t, bin, gwHost, append(args, pki...)...)
	}
	// The foreign gateway starts first, so it has asked at least as often
	// as the lab's own by the time that one sees the arm.
	intruder := gateway(ports.free(gwHost), tlsArgs(foreign, []string{"cert.pem", "key.pem"}))
	plain := gateway(ports.free(gwHost), nil)
	member := gateway(hMember, tlsArgs(lab, gwCert))
	waitLab(t, 10*time.Second, "the arm on the lab's gateway", func() bool { return len(labArms(t, member)) == 1 })
	for name, g := range map[string]*labMember{"foreign CA": intruder, "no TLS": plain} {
		if n := len(labArms(t, g)); n != 0 {
			t.Errorf("gateway with %s sees %d arms of a TLS lab", name, n)
		}
	}
}

// --role standalone, the default, starts no cluster code: with the lab's
// flags given, neither the cluster port nor the health port listens.
func TestStandaloneStartsNoClusterCode(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	const host = "127.0.0.2"
	ports := newLabPorts(t)
	port, health := ports.free(host), ports.free(host)
	m := startLabMember(t, buildBinary(t), host, "--cluster-port", strconv.Itoa(port), "--cluster-health-port", strconv.Itoa(health),
		"--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0")
	if len(labArms(t, m)) != 1 {
		t.Fatal("the standalone service does not serve its arm")
	}
	for name, p := range map[string]int{"cluster": port, "health": health} {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("%s:%d", host, p), time.Second); err == nil {
			c.Close()
			t.Errorf("standalone listens on the %s port %d", name, p)
		}
	}
}

// Lab flags that cannot work are refused before anything starts, with the
// flag named; standalone stays the default.
func TestLabFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{nil, ""},
		{[]string{"--role", "cluster"}, "--role"},
		{[]string{"--sim-index-base", "-1"}, "--sim-index-base"},
		// automanaged, the default: every process lists every member.
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071,127.0.0.4:7071"}, ""},
		{[]string{"--role", "gateway", "--peers", "127.0.0.2:7071,127.0.0.4:7071"}, ""},
		{[]string{"--role", "node"}, "--peers"},
		{[]string{"--role", "gateway", "--membership", "automanaged"}, "--peers"},
		{[]string{"--peers", "127.0.0.2:7071"}, "standalone"},
		{[]string{"--role", "node", "--membership", "gossip"}, "--membership"},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-port", "7071"}, "--cluster-health-port"},
		// static: only the gateway lists the nodes.
		{[]string{"--role", "node", "--membership", "static"}, "--cluster-port"},
		{[]string{"--role", "node", "--membership", "static", "--cluster-port", "7070"}, ""},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-port", "70000"}, "--cluster-port"},
		{[]string{"--role", "gateway", "--membership", "static", "--peers", "127.0.0.2:7070"}, ""},
		{[]string{"--role", "gateway", "--membership", "static"}, "--peers"},
		{[]string{"--role", "node", "--membership", "static", "--cluster-port", "7070", "--peers", "127.0.0.2:7070"}, "--peers"},
		// etcd discovery replaces --peers.
		{[]string{"--role", "node", "--discovery", "etcd=http://127.0.0.1:2379"}, ""},
		{[]string{"--role", "gateway", "--discovery", "etcd=127.0.0.1:2379,http://127.0.0.2:2379"}, ""},
		{[]string{"--discovery", "etcd=http://127.0.0.1:2379"}, "standalone"},
		{[]string{"--role", "node", "--discovery", "consul=http://127.0.0.1:8500"}, "--discovery"},
		{[]string{"--role", "node", "--discovery", "etcd="}, "--discovery"},
		{[]string{"--role", "node", "--discovery", "etcd=http://127.0.0.1"}, "--discovery"},
		{[]string{"--role", "node", "--discovery", "etcd=https://127.0.0.1:2379"}, "http://"},
		{[]string{"--role", "node", "--discovery", "etcd=http://127.0.0.1:2379/v3"}, "no path"},
		{[]string{"--role", "node", "--discovery", "etcd=127.0.0.1:2379", "--peers", "127.0.0.2:7071"}, "--peers"},
		{[]string{"--role", "node", "--discovery", "etcd=127.0.0.1:2379", "--membership", "static", "--cluster-port", "7070"}, "static"},
		{[]string{"--role", "node", "--membership", "etcd"}, "--discovery"},
		{[]string{"--role", "node", "--membership", "etcd", "--discovery", "etcd=127.0.0.1:2379"}, ""},
		// An advertised address needs a fixed port to forward to.
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-port", "7070", "--cluster-advertise", "127.0.0.2:9000"}, ""},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-advertise", "127.0.0.2:9000"}, "--cluster-port"},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-port", "7070", "--cluster-advertise", "127.0.0.2"}, "--cluster-advertise"},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-port", "7070", "--cluster-advertise", "127.0.0.2:0"}, "--cluster-advertise"},
		{[]string{"--cluster-port", "7070", "--cluster-advertise", "127.0.0.2:9000"}, "standalone"},
		// A node's timing: a push interval of 0 or less crashed the node
		// once it started (time.NewTicker); a lease the gateway's
		// keep-alive cannot renew, or that outlasts the longest session
		// lease, or that no push falls within, is no lease.
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-push-hz", "-5"}, "--cluster-push-hz"},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-push-hz", "2000000000"}, "--cluster-push-hz"},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-push-hz", "8000"}, ""},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-lease-ms", "-1"}, "--cluster-lease-ms"},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-lease-ms", "10"}, "--cluster-lease-ms"},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-lease-ms", "60000"}, "--cluster-lease-ms"},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-lease-ms", "300"}, ""},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-push-hz", "10"}, "--cluster-push-hz"},
		{[]string{"--role", "node", "--peers", "127.0.0.2:7071", "--cluster-push-hz", "10", "--cluster-lease-ms", "1000"}, ""},
		{[]string{"--role", "gateway", "--peers", "127.0.0.2:7071", "--cluster-node-timeout", "-1s"}, "--cluster-node-timeout"},
		{[]string{"--role", "gateway", "--peers", "127.0.0.2:7071", "--cluster-node-timeout", "1ns"}, "--cluster-node-timeout"},
		{[]string{"--role", "gateway", "--peers", "127.0.0.2:7071", "--cluster-node-timeout", "200ms"}, ""},
		// A negative scan period is not "no scan" (0 is).
		{[]string{"--hw-scan-period", "-1s"}, "--hw-scan-period"},
		{[]string{"--hw-scan-period", "0"}, ""},
	}
	for _, tt := range tests {
		o, err := parseFlags(tt.args)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%v: error %v, want one naming %s", tt.args, err, tt.wantErr)
		case tt.args == nil && (o.lab.role != "standalone" || o.lab.membership != "automanaged"):
			t.Errorf("default role %q, membership %q; want standalone, automanaged", o.lab.role, o.lab.membership)
		}
	}
}

// listeningAddrs returns the local addresses process pid's TCP sockets
// listen on, from /proc: its socket descriptors' inodes matched against
// the listening sockets of its network namespace.
func listeningAddrs(t *testing.T, pid int) []netip.AddrPort {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("the sockets of process %d: %v", pid, err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []netip.AddrPort
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, filepath.Base(table)))
		if err != nil {
			continue // no IPv6
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			const listen = "0A"
			if len(f) < 10 || f[3] != listen || !inodes[f[9]] {
				continue
			}
			hexAddr, hexPort, _ := strings.Cut(f[1], ":")
			raw, err1 := hex.DecodeString(hexAddr)
			port, err2 := strconv.ParseUint(hexPort, 16, 16)
			if err1 != nil || err2 != nil || (len(raw) != 4 && len(raw) != 16) {
				t.Fatalf("%s: cannot read local address %q", table, f[1])
			}
			// Each 32-bit word is in the host's (little-endian) order.
			for w := 0; w < len(raw); w += 4 {
				raw[w], raw[w+1], raw[w+2], raw[w+3] = raw[w+3], raw[w+2], raw[w+1], raw[w]
			}
			addr, _ := netip.AddrFromSlice(raw)
			out = append(out, netip.AddrPortFrom(addr.Unmap(), uint16(port)))
		}
	}
	return out
}

// hang stops m's process (SIGSTOP) and waits until every one of its
// threads has stopped, so that nothing the test sends next can be taken
// up. The kill returns before that: the kernel wakes one thread, which
// then stops the others, and those run on meanwhile. On a loaded machine
// they ran on for more than 50 ms, long enough for the node to take a set
// sent after the kill, persist it and answer it 200 (docs/lab.md, "Config
// sets through the gateway").
func hang(t *testing.T, m *labMember) {
	t.Helper()
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	tasks := fmt.Sprintf("/proc/%d/task", m.cmd.Process.Pid)
	waitLab(t, 20*time.Second, "every thread of the SIGSTOPped process stopped", func() bool {
		ents, err := os.ReadDir(tasks)
		if err != nil || len(ents) == 0 {
			return false
		}
		for _, e := range ents {
			if state, ok := threadState(filepath.Join(tasks, e.Name(), "stat")); !ok || state != 'T' {
				return false
			}
		}
		return true
	})
}

// threadState is the state letter in a /proc/<pid>/task/<tid>/stat file
// (the field after the command name, which may hold spaces and parens).
func threadState(stat string) (byte, bool) {
	b, err := os.ReadFile(stat)
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	return b[i+2], true
}
