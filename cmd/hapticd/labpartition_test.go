//go:build linux

// Partitions between a node and its gateway, each in a network namespace
// the test creates, joined by a veth pair; a blackhole route on one side
// drops what that side sends (one way), on both sides both ways. Needs
// root (CAP_NET_ADMIN) and iproute2; skipped with the reason otherwise.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"golang.org/x/sys/unix"
)

// forceIn holds a force on device id through m's WebSocket, dialled inside
// ns, until the returned stop is called.
func forceIn(t *testing.T, ns *labNetns, m *labMember, id string, z float64) (stop func()) {
	t.Helper()
	d := websocket.Dialer{NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialInNetns(ctx, ns.name, network, addr)
	}}
	conn, _, err := d.Dial("ws://"+m.addr["http"]+"/", nil)
	if err != nil {
		t.Fatalf("dial %s in %s: %v", m.addr["http"], ns.name, err)
	}
	msg := labForce(id, z)
	return holdSession(t, conn, func() string { return msg }, nil)
}

// labNetns is a network namespace the test made.
type labNetns struct {
	name string
	// client reaches the namespace's own addresses (its loopback).
	client *http.Client
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %v: %w: %s", args, err, out)
	}
	return nil
}

// newLabNetns makes a namespace with its loopback up, removed at cleanup.
func newLabNetns(t *testing.T, name string) *labNetns {
	t.Helper()
	if err := ipCmd("netns", "add", name); err != nil {
		t.Skipf("cannot create a network namespace (needs root and iproute2): %v", err)
	}
	t.Cleanup(func() { _ = ipCmd("netns", "del", name) })
	if err := ipCmd("netns", "exec", name, "ip", "link", "set", "lo", "up"); err != nil {
		t.Fatal(err)
	}
	ns := &labNetns{name: name}
	ns.client = &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// Kept alive: a poll of the node's force must not pay a dial.
		MaxIdleConnsPerHost: 4,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return dialInNetns(ctx, name, network, addr)
		},
	}}
	return ns
}

// dialInNetns dials from inside the namespace: the socket is made on an OS
// thread moved into it (the thread is then dropped, never reused).
func dialInNetns(ctx context.Context, name, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		f, err := os.Open(filepath.Join("/run/netns", name))
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{nil, fmt.Errorf("setns %s: %w", name, err)}
			return
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		done <- result{c, err}
	}()
	r := <-done
	return r.c, r.err
}

// runIn is a wrapper that runs the binary inside the namespace.
func runIn(t *testing.T, ns *labNetns, bin string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in-"+ns.name)
	script := fmt.Sprintf("#!/bin/sh\nexec ip netns exec %s %s \"$@\"\n", ns.name, bin)
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// tcpQueue is a column of ss: bytes a socket's process has not read, or
// bytes its peer has not acknowledged.
type tcpQueue int

const (
	recvQueue tcpQueue = 1 // Recv-Q
	sendQueue tcpQueue = 2 // Send-Q
)

// tcpQueued sums column q over ns's TCP sockets, in any state but
// listening, whose peer is addr (ss -N; iproute2, as ip is).
func tcpQueued(ns *labNetns, addr string, q tcpQueue) (int, error) {
	out, err := exec.Command("ss", "-N", ns.name, "-tanH").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("ss -N %s: %w: %s", ns.name, err, out)
	}
	total := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[0] == "LISTEN" || !strings.HasPrefix(f[4], addr+":") {
			continue
		}
		n, err := strconv.Atoi(f[q])
		if err != nil {
			return 0, fmt.Errorf("ss line %q: %w", line, err)
		}
		total += n
	}
	return total, nil
}

// nsArm is one arm as /devices reports it, read inside the namespace.
func nsArm(ns *labNetns, m *labMember, id string) (map[string]any, error) {
	resp, err := ns.client.Get(m.url("/devices"))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body map[string][]map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, err
	}
	for _, d := range body["arm3"] {
		if d["device_id"] == id {
			return d, nil
		}
	}
	return nil, nil
}

// A node and its gateway in two namespaces. Partitioned both ways: the
// node's force lapses with its lease (plus the ramp's 20 ms and the node
// loop's longest tick period meanwhile: see releaseRamp), the gateway
// drops the arm; healed, the arm returns with its config and nothing sent
// during the partition moves it. Partitioned one way (the node's packets
// dropped): the same, within the same bound. CI runs this where it can create namespaces.
func TestLabPartition(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes in network namespaces")
	}
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("iproute2's ip is not installed")
	}
	tag := strconv.Itoa(os.Getpid() % 100000)
	gns, nns := newLabNetns(t, "hxg"+tag), newLabNetns(t, "hxn"+tag)
	vg, vn := "hxg"+tag+"v", "hxn"+tag+"v"
	if err := ipCmd("link", "add", vg, "netns", gns.name, "type", "veth", "peer", "name", vn, "netns", nns.name); err != nil {
		t.Skipf("cannot create a veth pair: %v", err)
	}
	const gwAddr, nodeAddr = "10.231.0.1", "10.231.0.2"
	for _, c := range [][]string{
		{"netns", "exec", gns.name, "ip", "addr", "add", gwAddr + "/24", "dev", vg},
		{"netns", "exec", gns.name, "ip", "link", "set", vg, "up"},
		{"netns", "exec", nns.name, "ip", "addr", "add", nodeAddr + "/24", "dev", vn},
		{"netns", "exec", nns.name, "ip", "link", "set", vn, "up"},
	} {
		if err := ipCmd(c...); err != nil {
			t.Fatal(err)
		}
	}
	// healer is the func that heals a drop of ns's packets to addr.
	healer := func(ns *labNetns, addr string) func() {
		healed := false
		heal := func() {
			if !healed {
				healed = true
				if err := ipCmd("-n", ns.name, "route", "del", "blackhole", addr+"/32"); err != nil {
					t.Error(err)
				}
			}
		}
		t.Cleanup(heal)
		return heal
	}
	// drop makes ns's packets to addr vanish from its return on; the
	// returned func heals.
	drop := func(ns *labNetns, addr string) func() {
		if err := ipCmd("-n", ns.name, "route", "add", "blackhole", addr+"/32"); err != nil {
			t.Fatal(err)
		}
		return healer(ns, addr)
	}

	bin := buildBinary(t)
	const health = 7071 // a namespace of its own: any port is free
	peers := fmt.Sprintf("%s:%d,%s:%d", gwAddr, health, nodeAddr, health)
	node := &labMember{process: startProcess(t, runIn(t, nns, bin), "--role", "node", "--node-id", "a", "--cluster-bind", nodeAddr,
		"--peers", peers, "--cluster-health-port", strconv.Itoa(health), "--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0")}
	gw := &labMember{process: startProcess(t, runIn(t, gns, bin), "--role", "gateway", "--node-id", "gw", "--cluster-bind", gwAddr,
		"--peers", peers, "--cluster-health-port", strconv.Itoa(health), "--state-dir", t.TempDir(), "--sim-arms", "0", "--sim-grips", "0")}
	var arm string
	waitLab(t, 10*time.Second, "the node's arm", func() bool {
		resp, err := nns.client.Get(node.url("/devices"))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var body map[string][]map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if len(body["arm3"]) == 1 {
			arm, _ = body["arm3"][0]["device_id"].(string)
		}
		return arm != ""
	})
	onGateway := func() bool { d, err := nsArm(gns, gw, arm); return err == nil && d != nil }
	waitLab(t, 10*time.Second, "the arm on the gateway across the veth", onGateway)
	hd := "/arm3/" + arm + "/config/handedness"
	req, _ := http.NewRequest("POST", gw.url(hd), strings.NewReader(`"left"`))
	if resp, err := gns.client.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST %s through the gateway: %v %v", hd, resp, err)
	} else {
		resp.Body.Close()
	}

	force := func(d map[string]any) float64 {
		z, _ := path(d, "state", "current_cursor_force", "z").(float64)
		return z
	}
	// Both ways, and the gateway's packets dropped, the commands stop at
	// the cut and the node's lease ends the force. The node's packets
	// dropped, the gateway's commands may still arrive (until TCP, its
	// acks lost, stops sending), but each carries the newest state the
	// gateway had from the node, and the node ends a command's lease at
	// most the lease after that state: the same bound.
	// Each cut returns when the force's lease starts running out: the
	// end of the route command that stops what keeps it on (the
	// gateway's commands, or, with the node's packets dropped, the state
	// those commands carry). The cut happens while the command runs, so
	// counting from its end never counts the command against the service.
	const lease = 100 * time.Millisecond
	for _, tc := range []struct {
		name string
		cut  func() (cut time.Time, heal func())
	}{
		{"both ways", func() (time.Time, func()) {
			h1 := drop(gns, nodeAddr)
			cut := time.Now()
			// The other way is cut while the force is watched: waiting
			// for it would miss the lapse.
			second := make(chan error, 1)
			go func() { second <- ipCmd("-n", nns.name, "route", "add", "blackhole", gwAddr+"/32") }()
			h2 := healer(nns, gwAddr)
			var waited sync.Once
			cutBoth := func() {
				waited.Do(func() {
					if err := <-second; err != nil {
						t.Errorf("cutting the node's packets too: %v", err)
					}
				})
			}
			t.Cleanup(cutBoth) // before h2's cleanup, which undoes it
			return cut, func() { cutBoth(); h1(); h2() }
		}},
		{"one way, the gateway's packets dropped", func() (time.Time, func()) { h := drop(gns, nodeAddr); return time.Now(), h }},
		{"one way, the node's packets dropped", func() (time.Time, func()) { h := drop(nns, gwAddr); return time.Now(), h }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A client on the gateway holds a force on the arm.
			conn := forceIn(t, gns, gw, arm, 1.5)
			waitLab(t, 5*time.Second, "the gateway's force on the node", func() bool {
				d, err := nsArm(nns, node, arm)
				return err == nil && underGatewayForce(d, 1.5)
			})
			before, err := loopShards(nns.client, node)
			if err != nil {
				t.Fatal(err)
			}
			cutStart := time.Now()
			cut, heal := tc.cut()
			t.Logf("%s: the route command took %v", tc.name, cut.Sub(cutStart).Round(time.Millisecond))
			// The force ends on the node: the last poll that still saw it
			// bounds the lapse from below, the first that did not from above.
			// A poll's answer shows the force as it was at some moment after
			// the poll went out, so a force seen is known to be on at the
			// poll's send time, not at its answer's: starved, an answer
			// came late enough to put a force within the bound past it
			// ("still on 123ms after the partition; want zero within 120ms").
			var lastSeen, zeroAt time.Duration
			for {
				sent := time.Since(cut)
				d, err := nsArm(nns, node, arm)
				now := time.Since(cut)
				if err == nil && d != nil {
					if force(d) == 0 {
						zeroAt = now
						break
					}
					lastSeen = sent
				}
				if now > 5*time.Second {
					t.Fatal("the node's force did not end within 5 s of the partition")
				}
				time.Sleep(2 * time.Millisecond)
			}
			after, err := loopShards(nns.client, node)
			if err != nil {
				t.Fatal(err)
			}
			stall := longestPeriod(before, after)
			bound := lease + releaseRamp + stall
			t.Logf("%s: force on the node ended between %v and %v after the cut (lease 100 ms; the node's longest tick period meanwhile %v)",
				tc.name, lastSeen.Round(time.Millisecond), zeroAt.Round(time.Millisecond), stall)
			if lastSeen > bound {
				t.Errorf("force still on %v after the partition; want zero within the lease + 20 ms + the node's longest tick period (%v), %v", lastSeen, stall, bound)
			}
			waitLab(t, 10*time.Second, "the arm gone from the gateway", func() bool { d, err := nsArm(gns, gw, arm); return err == nil && d == nil })
			t.Logf("%s: the gateway dropped the arm %v after the cut", tc.name, time.Since(cut).Round(time.Millisecond))
			// The client stops before the link heals: nothing it sent may
			// move the arm afterwards.
			conn()
			heal()
			healed := time.Now()
			backWithConfig := func() bool {
				resp, err := gns.client.Get(gw.url(hd))
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				var env struct {
					Data string `json:"data"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&env)
				return env.Data == "left"
			}
			// Watched from the healing on: a replayed command holds the
			// arm for a lease (100 ms), over before the arm is back on
			// the gateway. What TCP queued during the cut arrives at its
			// next retransmission, which has backed off to seconds by
			// then: a window counted from the healing can end before it.
			// So the watch runs until the node has read every byte the
			// gateway sent before it (the gateway's sockets to the node
			// with nothing unacknowledged, then the node's with nothing
			// unread), and a while after, for the node to act on them.
			var back time.Duration
			var drained time.Time
			for {
				d, err := nsArm(nns, node, arm)
				if err == nil && d != nil && (force(d) != 0 || controlMode(d) != "idle") {
					t.Fatalf("after healing the node's arm is in %q with force %v: a command from the partition was replayed", controlMode(d), force(d))
				}
				if back == 0 && backWithConfig() {
					back = time.Since(healed)
					t.Logf("%s: arm back on the gateway with its config %v after healing", tc.name, back.Round(time.Millisecond))
				}
				if drained.IsZero() {
					if unacked, err := tcpQueued(gns, nodeAddr, sendQueue); err != nil {
						t.Fatal(err)
					} else if unacked == 0 {
						drained = time.Now() // the gateway's side; now the node's
					}
				} else if unread, err := tcpQueued(nns, gwAddr, recvQueue); err != nil {
					t.Fatal(err)
				} else if unread == 0 && back != 0 && time.Since(drained) > 500*time.Millisecond && time.Since(healed) > back+time.Second {
					break
				}
				if since := time.Since(healed); since > 30*time.Second {
					t.Fatalf("30 s after healing: arm back on the gateway with its config after %v (0: not yet), the gateway's bytes to the node acknowledged: %v", back, !drained.IsZero())
				}
				time.Sleep(5 * time.Millisecond)
			}
			t.Logf("%s: the gateway's bytes to the node all acknowledged %v after healing", tc.name, drained.Sub(healed).Round(time.Millisecond))
		})
	}
}
