package cluster

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
)

// healthHost is a member's health endpoint that can stall (answer nothing
// until released, as a SIGSTOPped process) and change its member id (a
// restarted process).
type healthHost struct {
	srv     *httptest.Server
	kinds   []string
	id      atomic.Value // string
	stalled atomic.Bool
	release chan struct{}
}

func newHealthHost(t *testing.T, id string, kinds ...string) *healthHost {
	h := &healthHost{release: make(chan struct{}), kinds: kinds}
	h.id.Store(id)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.stalled.Load() {
			select {
			case <-h.release:
			case <-r.Context().Done():
				return
			}
		}
		_ = json.NewEncoder(w).Encode(automanaged.NewNode(clusterName, h.id.Load().(string), "127.0.0.1", 7000, 0, h.kinds))
	}))
	t.Cleanup(func() { close(h.release); h.srv.Close() })
	return h
}

func (h *healthHost) host() string { return strings.TrimPrefix(h.srv.URL, "http://") }

// A gateway (a member without a node kind) whose health endpoint stops answering
// (stalled: a VM pause, a SIGSTOP, a starved host) stays in the published
// topology for the grace, and leaves it only once it has not answered for
// longer; one that answers again under a new id (restarted) is published
// under that id at once. protoactor's own provider dropped it at the first
// failed poll, and protoactor never readmits a member id that left. A node
// (a member with a node kind) still leaves at its first failed poll, unless this
// process itself stood still during the round.
func TestHealthPollerKeepsAStalledGatewayForTheGrace(t *testing.T) {
	// A gateway registers protoactor's own kinds only (its pubsub topics).
	node, gw := newHealthHost(t, "n", "prototopic", NodeKind("n")), newHealthHost(t, "gw", "prototopic")
	var published [][]string
	p := newHealthPoller(nil, time.Hour, node.host(), gw.host())
	p.name = clusterName
	p.client.Timeout = 200 * time.Millisecond
	p.publish = func(ms cluster.Members) {
		ids := []string{}
		for _, m := range ms {
			ids = append(ids, m.Id)
		}
		published = append(published, ids)
	}
	t0 := time.Now()
	round := func(at time.Duration, selfStalled bool, want ...string) {
		t.Helper()
		n := len(published)
		p.merge(t0.Add(at), p.pollAll(), selfStalled)
		if len(published) != n+1 || !slices.Equal(published[n], want) {
			t.Fatalf("round at %v: published %v, want %v", at, published[n:], want)
		}
	}
	round(0, false, "n", "gw")
	gw.stalled.Store(true)
	round(time.Second, false, "n", "gw")
	round(p.grace, false, "n", "gw")
	round(p.grace+time.Second, false, "n") // silent for longer than the grace
	gw.stalled.Store(false)
	gw.id.Store("gw2")
	round(p.grace+2*time.Second, false, "n", "gw2")

	node.stalled.Store(true)
	round(p.grace+3*time.Second, true, "n", "gw2") // the round's failures were this process's stall
	round(p.grace+4*time.Second, false, "gw2")     // a hung node leaves at once, as with protoactor's provider
}
