package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/automanaged"
	"github.com/labstack/echo"

	"github.com/hapticd/hapticd/actors/awake"
)

// healthPoller is the automanaged membership (every member polls every
// host's /_health and publishes who answered as the cluster's topology),
// with two differences from protoactor's own provider, both about a stall:
//
//   - A gateway (a member without a node kind) that stops answering stays in the
//     topology, as last seen, until it has not answered for memberGrace.
//     protoactor's provider dropped it at its first failed poll (a 2 s
//     timeout), and protoactor blocks a member id that leaves the topology
//     for good. So a gateway stalled for 3 s (a VM pause, a starved host)
//     was dropped by its nodes, whose gossip never reached it again; 20 s
//     later its heartbeat of them expired, it blocked them in turn, and
//     protoactor closed its connection to each, losing the commands in
//     flight (a dip of the client's force). Nodes judge their gateways by
//     their subscriptions, never by the topology, so it can wait.
//   - A round of polls during which this process itself stood still drops
//     nobody: its failures are its own stall's. A stall is seen by the
//     round's length (longer than a poll's timeout and a second) or by the
//     poller's awake clock (package awake): a process stopped or starved for
//     2 s in the middle of a round (a SIGSTOP, a VM pause, a loaded host)
//     had its polls time out while it stood still and the round end
//     within 3 s, and dropped every node.
//
// A node (a member with a node kind) is still dropped at its first failed poll:
// the gateway finds a hung node that way, before --cluster-node-timeout.
type healthPoller struct {
	hosts  []string
	client *http.Client
	every  time.Duration
	grace  time.Duration
	// server serves this member's /_health (nil: a client, which serves
	// none); publish hands each round's members to the cluster.
	server  *echo.Echo
	publish func(cluster.Members)
	name    string

	stop     chan struct{}
	stopOnce sync.Once
	started  atomic.Bool
	done     chan struct{} // closed by run, once started

	// awake notes that this process runs, for the rounds to tell their
	// own stall from their hosts' (noting from run on).
	awake *awake.Clock

	// Owned by the polling goroutine: each host's last answer and when.
	seen map[string]polledHost
}

type polledHost struct {
	node *automanaged.NodeModel
	at   time.Time
}

// memberGrace is how long a gateway that stopped answering its health
// polls stays a member: longer than the stalls a lab rides out, shorter
// than protoactor's heartbeat expiry (20 s), so a gateway gone for good
// leaves the topology before gossip would block it.
const memberGrace = 10 * time.Second

// healthPollTimeout bounds one poll, as protoactor's provider does.
const healthPollTimeout = 2 * time.Second

func newHealthPoller(server *echo.Echo, every time.Duration, hosts ...string) *healthPoller {
	return &healthPoller{
		hosts:  hosts,
		client: &http.Client{Timeout: healthPollTimeout},
		every:  every,
		grace:  memberGrace,
		server: server,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
		seen:   map[string]polledHost{},
		awake:  awake.New(awakeInterval, awakeSlack),
	}
}

// StartMember serves the health endpoint and starts polling.
func (p *healthPoller) StartMember(c *cluster.Cluster) error {
	if p.server != nil {
		go func() { _ = p.server.Start("") }() // its Listener is bound already
	}
	return p.StartClient(c)
}

// StartClient starts polling.
func (p *healthPoller) StartClient(c *cluster.Cluster) error {
	p.name = c.Config.Name
	if p.publish == nil {
		p.publish = c.MemberList.UpdateClusterTopology
	}
	p.started.Store(true)
	go p.run()
	return nil
}

// Shutdown stops polling and serving.
func (p *healthPoller) Shutdown(bool) error {
	p.stopOnce.Do(func() { close(p.stop) })
	var err error
	if p.server != nil {
		err = p.server.Close()
	}
	if p.started.Load() {
		<-p.done
	}
	return err
}

func (p *healthPoller) run() {
	defer close(p.done)
	noting := make(chan struct{})
	go func() {
		defer close(noting)
		p.awake.Run(p.stop)
	}()
	defer func() { <-noting }() // stopped by p.stop too: done once both are
	for {
		p.round()
		select {
		case <-p.stop:
			return
		case <-time.After(p.every):
		}
	}
}

// round polls every host once and publishes the members.
func (p *healthPoller) round() {
	start := time.Now()
	answers := p.pollAll()
	now := time.Now()
	// A stall that ended just before the round, noted late, is taken for
	// the round's: that round drops nobody, and the next one decides.
	_, _, stalled := p.awake.StallSince(p.awake.At(start), p.awake.At(now))
	p.merge(now, answers, stalled || now.Sub(start) > healthPollTimeout+time.Second)
}

const (
	// awakeInterval is how often the poller's awake clock notes that the
	// process runs.
	awakeInterval = 100 * time.Millisecond
	// awakeSlack, the gap between notes taken for a stall, is half a poll's
	// timeout: a process that stood still for less had the other half to
	// hear an answer.
	awakeSlack = healthPollTimeout / 2
)

// pollAll asks every host for its node, at once: nil for a host that did
// not answer.
func (p *healthPoller) pollAll() []*automanaged.NodeModel {
	answers := make([]*automanaged.NodeModel, len(p.hosts))
	var wg sync.WaitGroup
	for i, host := range p.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], _ = p.poll(host)
		}()
	}
	wg.Wait()
	return answers
}

// merge takes a round's answers (stalled: this process stood still during
// the round) and publishes the members: those that answered, a node that
// failed only in a stalled round, and a gateway heard within the grace.
func (p *healthPoller) merge(now time.Time, answers []*automanaged.NodeModel, stalled bool) {
	for i, host := range p.hosts {
		h, known := p.seen[host]
		switch n := answers[i]; {
		case n != nil && n.ClusterName == p.name:
			p.seen[host] = polledHost{node: n, at: now}
		case !known || stalled:
		case isNode(h.node) || now.Sub(h.at) > p.grace:
			delete(p.seen, host)
		}
	}
	if len(p.seen) == 0 {
		return // nobody answered yet, not even this member: nothing to say
	}
	members := make(cluster.Members, 0, len(p.seen))
	for _, host := range p.hosts {
		if h, ok := p.seen[host]; ok {
			members = append(members, &cluster.Member{Id: h.node.ID, Host: h.node.Address, Port: int32(h.node.Port), Kinds: h.node.Kinds})
		}
	}
	p.publish(members)
}

// poll asks host for its node.
func (p *healthPoller) poll(host string) (*automanaged.NodeModel, error) {
	ctx, cancel := context.WithTimeout(context.Background(), healthPollTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/_health", nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("cluster: %s/_health answered %s", host, resp.Status)
	}
	var n automanaged.NodeModel
	if err := json.NewDecoder(resp.Body).Decode(&n); err != nil {
		return nil, fmt.Errorf("cluster: %s/_health: %w", host, err)
	}
	if n.ID == "" {
		return nil, errors.New("cluster: " + host + "/_health names no member")
	}
	return &n, nil
}

// isNode says whether n registered a node kind (nodeOf); a gateway has
// none, only protoactor's own kinds.
func isNode(n *automanaged.NodeModel) bool {
	_, ok := nodeOf(&cluster.Member{Kinds: n.Kinds})
	return ok
}
