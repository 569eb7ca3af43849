//go:build linux

// A lab whose members run two builds (the other built by buildBinaryWith
// with main.version stamped as a release stamps it): real processes on
// 127.0.0.2 and 127.0.0.4, Linux only as the other lab tests.

package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/cluster"
)

// A node of another build than its gateway's (a lab upgraded host by host,
// the node first): they joined silently, and the gateway then served the
// node's config stale. Now the gateway starts and serves, but lists none
// of the node's arms, publishes lab-node-refused once, and its /readyz
// fails its lab check naming the node and both builds, for as long as
// the node runs; restarted with the gateway's build, the node's arm is
// listed and /readyz answers 200 again, with nothing to clear by hand.
func TestLabRefusesANodeOfAnotherBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary twice and runs real processes")
	}
	const other = "0.0.0-labver-other"
	binOther, bin := buildBinaryWith(t, "hapticd", "-ldflags", "-X main.version="+other), buildBinary(t)
	lab := newTestLab(t, bin, labHostA, labHostGW)
	gw := lab.gateway(labHostGW) // started (ready line) with no node yet
	lab.bin = binOther
	node := lab.node(labHostA)
	arm := onlyArm(t, node)
	readyz := fmt.Sprintf("http://%s/readyz", gw.addr["http"])
	var detail string
	waitLab(t, 10*time.Second, "the gateway's /readyz failing on the node of another build", func() bool {
		var status int
		status, detail = readyzLab(t, readyz)
		return status == 503
	})
	for _, s := range []string{"node a refuses this gateway", other + "+", version + "+", "docs/lab.md"} {
		if !strings.Contains(detail, s) {
			t.Errorf("/readyz's lab check says %q, not %q", detail, s)
		}
	}
	time.Sleep(time.Second) // four more subscription rounds
	// Read until answered: on a loaded machine a GET may take longer
	// than armIDs' 2 s, which says nothing of what the gateway lists.
	var ids map[string]bool
	waitLab(t, 20*time.Second, "the gateway's /devices answered", func() bool {
		var err error
		ids, err = armIDs(gw)
		return err == nil
	})
	if ids[arm] {
		t.Errorf("the gateway lists the arm %s of a node of another build", arm)
	}
	// Told once per refusal: the gateway tells it again only once the
	// node's refusals stopped for cluster.GatewayTimeout (docs/events.md),
	// which on a loaded machine a node stalled that long does. So a
	// second telling sooner than that after the one before is a fault, and
	// one later says the node went silent meanwhile.
	var told []time.Time
	waitLab(t, 20*time.Second, "the gateway's events answered", func() bool {
		var err error
		told, err = eventTimes(gw, "lab-node-refused", "")
		return err == nil
	})
	if len(told) == 0 {
		t.Error("the gateway did not publish lab-node-refused")
	}
	for i := 1; i < len(told); i++ {
		if gap := told[i].Sub(told[i-1]); gap < cluster.GatewayTimeout {
			t.Errorf("the gateway published lab-node-refused %d times, %v after the one before (times %v), want once per refusal", len(told), gap, told)
			break
		}
		t.Logf("lab-node-refused told again %v after the one before: the node's refusals stopped for %v meanwhile", told[i].Sub(told[i-1]), cluster.GatewayTimeout)
	}
	if status, lab := readyzLab(t, readyz); status != 503 {
		t.Errorf("/readyz %d (lab: %q) while the node runs another build", status, lab)
	}

	// The node's host upgraded to the gateway's build.
	if err := node.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = node.cmd.Wait()
	lab.bin = bin
	lab.node(labHostA)
	waitArmOnGateway(t, gw, arm)
	waitLab(t, 10*time.Second, "the gateway's /readyz answering 200 once both run one build", func() bool {
		status, _ := readyzLab(t, readyz)
		return status == 200
	})
}
