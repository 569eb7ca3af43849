//go:build unix

package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// envStoppedPoller, set, makes TestHealthPollerStoppedMidRoundKeepsItsNodes
// the poller process it stops: it polls the hosts named (comma-separated)
// and prints every topology it publishes, until its stdin closes.
const envStoppedPoller = "HAPTICD_TEST_STOPPED_POLLER_HOSTS"

// A member process stopped for 2 s in the middle of a round of health
// polls (a SIGSTOP, as a VM pause or a starved host) keeps its nodes: the
// round's polls time out while it stands still, and it must not take that
// for the nodes' failure. The round ends within 3 s, so its length alone
// did not tell: the poller dropped every node it polled in that round,
// and protoactor never readmits a member id that left.
func TestHealthPollerStoppedMidRoundKeepsItsNodes(t *testing.T) {
	if hosts := os.Getenv(envStoppedPoller); hosts != "" {
		p := newHealthPoller(nil, 50*time.Millisecond, strings.Split(hosts, ",")...)
		p.name = clusterName
		p.publish = func(ms cluster.Members) {
			ids := []string{}
			for _, m := range ms {
				ids = append(ids, m.Id)
			}
			fmt.Printf("published %s\n", strings.Join(ids, ","))
		}
		p.started.Store(true)
		go p.run()
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = p.Shutdown(false)
		return
	}
	// The node answers at once, except the request held: it comes as the
	// poller is stopped 300 ms into the round, and is answered 300 ms
	// after the poller resumes, past the poll's timeout.
	const holdRequest = 10
	var (
		requests atomic.Int32
		poller   atomic.Pointer[hwtest.TestProcess] // set once started
		resumed  = make(chan struct{})
		// signals orders the stop after the test's end, which lets the
		// poller go on for good (else a test failing in the hold would
		// leave it stopped and its cleanup waiting for it).
		signals sync.Mutex
		ended   bool
	)
	signal := func(sig syscall.Signal) bool {
		signals.Lock()
		defer signals.Unlock()
		if ended {
			return false
		}
		if err := poller.Load().Signal(sig); err != nil {
			t.Errorf("signal the poller (%v): %v", sig, err)
		}
		return true
	}
	hold := func() {
		time.Sleep(300 * time.Millisecond)
		if !signal(syscall.SIGSTOP) {
			return
		}
		time.Sleep(2 * time.Second)
		if signal(syscall.SIGCONT) {
			close(resumed)
		}
		time.Sleep(300 * time.Millisecond)
	}
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if requests.Add(1) == holdRequest {
			hold()
		}
		_ = json.NewEncoder(w).Encode(automanaged.NewNode(clusterName, "n", "127.0.0.1", 7000, 0, []string{"prototopic", NodeKind("n")}))
	}))
	t.Cleanup(node.Close)
	gw := newHealthHost(t, "gw", "prototopic")

	child := hwtest.StartTestProcess(t, "TestHealthPollerStoppedMidRoundKeepsItsNodes",
		envStoppedPoller+"="+strings.TrimPrefix(node.URL, "http://")+","+gw.host())
	t.Cleanup(func() { // before its stdin is closed
		signals.Lock()
		defer signals.Unlock()
		ended = true
		_ = child.Signal(syscall.SIGCONT)
	})
	poller.Store(child)

	deadline := time.After(60 * time.Second)
	afterResume := 0
	for afterResume < 10 {
		select {
		case line, ok := <-child.Lines():
			if !ok {
				t.Fatal("the poller's process ended")
			}
			ids, published := strings.CutPrefix(line, "published ")
			if !published {
				continue
			}
			if ids != "n,gw" {
				t.Fatalf("published %q (request %d to the node), want n,gw throughout: the poller dropped the node for its own stall", ids, requests.Load())
			}
			select {
			case <-resumed:
				afterResume++
			default:
			}
		case <-deadline:
			t.Fatalf("%d topologies published after the resume within 60 s (the node had %d requests), want 10", afterResume, requests.Load())
		}
	}
}
