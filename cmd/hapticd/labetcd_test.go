//go:build linux

// Discovery through etcd: a real etcd process the test starts (Debian's
// etcd-server), and the lab's members finding each other through it with
// protoactor's etcd provider instead of --peers.

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// startEtcd runs a one-member etcd on 127.0.0.1 with its data in a
// temporary directory, and returns its client URL once it is healthy.
func startEtcd(t *testing.T, ports *labPorts) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Skip("etcd is not installed (Debian: apt-get install etcd-server; .ci/run installs it)")
	}
	const host = "127.0.0.1"
	client := fmt.Sprintf("http://%s:%d", host, ports.free(host))
	peer := fmt.Sprintf("http://%s:%d", host, ports.free(host))
	cmd := exec.Command(bin, "--name", "lab", "--data-dir", t.TempDir(),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "lab="+peer, "--log-level", "error")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitLab(t, 20*time.Second, "etcd healthy", func() bool {
		resp, err := http.Get(client + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var h struct {
			Health string `json:"health"`
		}
		return json.NewDecoder(resp.Body).Decode(&h) == nil && h.Health == "true"
	})
	return client
}

// A node and a gateway that know nothing of each other but etcd's address:
// the gateway lists the node's arm, forces through it reach the node, and
// the node restarted (SIGTERM or SIGKILL, after 0 and 5 s: before and after
// its old registration's 3 s lease lapsed) is back with its config within
// 2 s of its ready line and stays listed. A node hung past its etcd lease
// (issue 1133) is back once it resumes, and config still reaches it.
func TestLabEtcdDiscovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs etcd and two processes")
	}
	ports := newLabPorts(t)
	etcd := startEtcd(t, ports)
	bin := buildBinary(t)
	stateA := t.TempDir()
	discovery := []string{"--discovery", "etcd=" + etcd, "--sim-grips", "0"}
	node := func() *labMember {
		return startLabMember(t, bin, labHostA, append([]string{"--role", "node", "--node-id", "a", "--sim-arms", "1", "--state-dir", stateA}, discovery...)...)
	}
	a := node()
	gw := startLabMember(t, bin, labHostGW, append([]string{"--role", "gateway", "--node-id", "gw", "--sim-arms", "0", "--state-dir", t.TempDir()}, discovery...)...)
	arm := onlyArm(t, a)
	took := waitLab(t, 10*time.Second, "the node's arm on the gateway through etcd", func() bool { _, ok := labArms(t, gw)[arm]; return ok })
	t.Logf("arm on the gateway %v after both were ready (etcd discovery)", took.Round(time.Millisecond))

	stop := forceThrough(t, gw, arm, 1.5)
	waitLab(t, 5*time.Second, "the gateway's force on the node", func() bool {
		return underGatewayForce(labArms(t, a)[arm], 1.5)
	})
	stop()
	hd := "/arm3/" + arm + "/config/handedness"
	if status, env := httpDo(t, "POST", gw.url(hd), `"left"`); status != 200 {
		t.Fatalf("POST %s through the gateway: %d %v", hd, status, env)
	}
	restart := nodeRestart{gw: gw, arm: arm, handednessPath: hd, start: node}

	reps := labReps(t, 1)
	figures := map[string][]time.Duration{}
	for _, down := range []time.Duration{0, 5 * time.Second} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			for rep := range reps {
				name := fmt.Sprintf("%v after %v", sig, down)
				connected := eventCount(gw, "device-connected", arm)
				var back time.Duration
				a, back = restart.untilBack(t, a, sig, down, fmt.Sprintf("%s (rep %d)", name, rep+1), connected)
				figures[name] = append(figures[name], back)
				stay := watchArms(gw, arm)
				time.Sleep(5 * time.Second) // the window the arm must stay through
				if polls, misses, gaps := stay.end(); misses[arm] > 0 || polls == 0 {
					t.Errorf("%s (rep %d): the arm missing in %d of %d polls in the 5 s after it returned (gaps %v)", name, rep+1, misses[arm], polls, gaps[arm])
				}
			}
		}
	}
	// Issue 1133: a member cut off from etcd for longer than its lease
	// (3 s) is deleted there; when it re-registers under the same member
	// id, protoactor keeps it out of the topology (a member that left is
	// blocked by id, and the provider skips its own key). A hung node is
	// such a member: the gateway drops it for silence, and once it resumes
	// its arm must return through the link and its config still reach it
	// (by address, as for any node outside the topology).
	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitLab(t, 10*time.Second, "the hung node's arm gone from the gateway", func() bool {
		ids, err := armIDs(gw)
		return err == nil && !ids[arm]
	})
	time.Sleep(5 * time.Second) // past the node's 3 s etcd lease: the scenario
	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	took = waitLab(t, 20*time.Second, "the resumed node's arm back on the gateway", func() bool {
		ids, err := armIDs(gw)
		return err == nil && ids[arm]
	})
	t.Logf("a node hung past its etcd lease (issue 1133): arm back %v after it resumed", took.Round(time.Millisecond))
	if status, env := httpDo(t, "POST", gw.url(hd), `"right"`); status != 200 {
		t.Fatalf("POST %s through the gateway after the node resumed: %d %v", hd, status, env)
	}
	if _, env := httpDo(t, "GET", a.url(hd), ""); env["data"] != "right" {
		t.Fatalf("node has handedness %v after a POST through the gateway, want right", env["data"])
	}
	t.Logf("config through the gateway reached the resumed node %v after it resumed", time.Since(resumed).Round(time.Millisecond))
	stay := watchArms(gw, arm)
	time.Sleep(5 * time.Second) // the window the arm must stay through
	if polls, misses, gaps := stay.end(); misses[arm] > 0 || polls == 0 {
		t.Errorf("resumed node's arm missing in %d of %d polls in the 5 s after it returned (gaps %v)", misses[arm], polls, gaps[arm])
	}

	logBackAfterReady(t, figures, "etcd discovery")
}

// A member that cannot reach etcd says so and exits, instead of hanging
// on protoactor's first read of the member list.
func TestLabEtcdUnreachable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	ports := newLabPorts(t)
	dead := "http://127.0.0.1:" + strconv.Itoa(ports.free("127.0.0.1")) // nothing listens there
	cmd := exec.Command(buildBinary(t), "--role", "node", "--discovery", "etcd="+dead, "--port", "0", "--legacy-port", "0",
		"--events-port", "0", "--state-dir", t.TempDir(), "--sim-arms", "1", "--sim-grips", "0", "--log-format", "json")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		defer close(done)
		out, err = cmd.CombinedOutput()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("a node with an unreachable etcd still runs 30 s later:\n%s", out)
	}
	if err == nil {
		t.Fatalf("a node with an unreachable etcd exited with status 0:\n%s", out)
	}
	if !regexp.MustCompile(`etcd at ` + regexp.QuoteMeta(dead) + `.*is etcd running there`).Match(out) {
		t.Errorf("a node with an unreachable etcd: the error does not name etcd's address and the fix:\n%s", out)
	}
}
