//go:build linux

// Delay and loss on the cluster link, through toxiproxy run in the test
// between a node and its gateway (this kernel has no netem). Real processes
// on 127.0.0.2 and 127.0.0.4, as the other lab tests.

package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// linkToxic is the link's delay and loss on one stream. Each chunk the
// proxy reads (one read, at these message rates mostly one segment) goes
// on DelayMs after it was read. Losing a share of a TCP stream's segments
// shows an application no loss, only the wait for the retransmission: a
// chunk is lost with Probability and goes on RetransmitMs later still;
// nothing behind it overtakes it (head-of-line blocking), while the chunks
// behind keep their own clocks, as segments sent during a retransmission
// are recovered alongside it, not one after another. toxiproxy has no
// such loss (its toxics drop whole connections, or a share of
// connections), so this is a toxic registered through toxiproxy's toxic
// API; and it does the delay too, because toxiproxy's latency toxic
// (v2.5.0) hands a chunk on stamped with its read time plus the sleep it
// took, short by however long the chunk queued behind the one before
// (about 18 ms at 20 ms with a batch every 2 ms): a loss counted after it
// from that stamp came about 22 ms late instead of 40, and one before it
// leaves the latency toxic last in the chain, where nothing ends its
// Pipe when the test is over (see done).
type linkToxic struct {
	DelayMs      int64   `json:"delay_ms"`
	Probability  float64 `json:"probability"`
	RetransmitMs int64   `json:"retransmit_ms"`

	chunks, lost atomic.Int64
	// done ends Pipe when the test is over, closing its output so the
	// link's writer ends too: toxiproxy stops reading a link's output once
	// its destination closes, and a Pipe still sending to it would wait
	// forever.
	done chan struct{}
}

func init() { toxics.Register("hapticd_link", new(linkToxic)) }

// GetBufferSize lets chunks queue behind the delay and a retransmission,
// as the network and the receiver's window hold them, instead of blocking
// the proxy's reader.
func (l *linkToxic) GetBufferSize() int { return 1024 }

func (l *linkToxic) Pipe(stub *toxics.ToxicStub) {
	delay := time.Duration(l.DelayMs) * time.Millisecond
	retransmit := time.Duration(l.RetransmitMs) * time.Millisecond
	for {
		select {
		case <-stub.Interrupt:
			return
		case <-l.done:
			stub.Close()
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			l.chunks.Add(1)
			due := c.Timestamp.Add(delay) // c.Timestamp: when the proxy read it
			if rand.Float64() < l.Probability {
				l.lost.Add(1)
				due = due.Add(retransmit)
			}
			if wait := time.Until(due); wait > 0 {
				select {
				case <-time.After(wait):
					c.Timestamp = due
				case <-stub.Interrupt:
					stub.Output <- c // toxics are being changed: keep the data
					return
				case <-l.done:
					stub.Close()
					return
				}
			}
			select {
			case stub.Output <- c:
			case <-l.done:
				stub.Close()
				return
			}
		}
	}
}

// The link's faults: 20 ms each way (a 40 ms round trip) and, by default,
// 5 % of chunks lost, each retransmitted one round trip later (TCP's fast
// retransmit on a stream this busy: the duplicate acks come within a push
// period or two).
const (
	labDelayMs   = 20
	labLossShare = 0.05
)

// linkFaults are what a faultyLink injects on each of its streams.
type linkFaults struct {
	delayMs int     // one way
	loss    float64 // share of chunks retransmitted, one round trip late
}

// labDelayLease is the node's --cluster-lease-ms for the delay test. A
// command's lease counts from the node's state the gateway answered, so it
// must cover the link's round trip with its retransmissions: the default
// 100 ms does not at 40 ms and 5 % loss (docs/lab.md has both figures).
const labDelayLease = 300

// faultyLink is a toxiproxy proxy in front of one member's cluster port,
// with the delay and the loss on both of its streams.
type faultyLink struct {
	proxy *toxiproxy.Proxy
	loss  []*linkToxic
}

func newFaultyLink(t *testing.T, srv *toxiproxy.ApiServer, name, listen, upstream string, faults linkFaults) *faultyLink {
	t.Helper()
	p := toxiproxy.NewProxy(srv, name, listen, upstream)
	done := make(chan struct{})
	t.Cleanup(func() { close(done) }) // after p.Stop: cleanups run last first
	f := &faultyLink{proxy: p}
	for _, stream := range []string{"upstream", "downstream"} {
		for _, spec := range []string{
			fmt.Sprintf(`{"name":"link_%s","type":"hapticd_link","stream":%q,"toxicity":1,"attributes":{"delay_ms":%d,"probability":%g,"retransmit_ms":%d}}`,
				stream, stream, faults.delayMs, faults.loss, 2*faults.delayMs),
		} {
			w, err := p.Toxics.AddToxicJson(strings.NewReader(spec))
			if err != nil {
				t.Fatalf("toxiproxy %s: add %s: %v", name, spec, err)
			}
			if l, ok := w.Toxic.(*linkToxic); ok {
				// The proxy is not listening yet, so no link runs Pipe
				// before done is set (a stray dial on a reused loopback
				// port would otherwise race with this write).
				l.done = done
				f.loss = append(f.loss, l)
			}
		}
	}
	if err := p.Start(); err != nil {
		t.Fatalf("toxiproxy %s on %s: %v", name, listen, err)
	}
	t.Cleanup(p.Stop)
	return f
}

// lossCounts sums what the link's toxics saw and lost.
func (f *faultyLink) lossCounts() (chunks, lost int64) {
	for _, l := range f.loss {
		chunks += l.chunks.Load()
		lost += l.lost.Load()
	}
	return chunks, lost
}

// remoteStateAge is the gateway's GET /stats state age of device id.
func remoteStateAge(t *testing.T, gw *labMember, id string) (count uint64, p50, p99, maxAge time.Duration) {
	t.Helper()
	resp, err := http.Get(gw.url("/stats"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Data struct {
			Devices []struct {
				DeviceID string `json:"device_id"`
				Remote   *struct {
					StateAge struct {
						Count uint64  `json:"count"`
						P50Us float64 `json:"p50_us"`
						P99Us float64 `json:"p99_us"`
						MaxUs float64 `json:"max_us"`
					} `json:"state_age"`
				} `json:"remote"`
			} `json:"devices"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET /stats: %v", err)
	}
	for _, d := range body.Data.Devices {
		if d.DeviceID == id && d.Remote != nil {
			us := func(v float64) time.Duration { return time.Duration(v * float64(time.Microsecond)) }
			a := d.Remote.StateAge
			return a.Count, us(a.P50Us), us(a.P99Us), us(a.MaxUs)
		}
	}
	t.Fatalf("gateway /stats has no remote device %s", id)
	return 0, 0, 0, 0
}

// A node and its gateway whose cluster link runs through toxiproxy: 20 ms
// each way and 5 % loss (linkToxic). A force sent through the gateway
// still moves the node's arm; over 20 s the gateway never drops the arm;
// the gateway's /stats reports the state's age with the delay in it.
// HAPTICD_LAB_DELAY_WINDOW sets the window (default 20s),
// HAPTICD_LAB_DELAY_MS the one-way delay (default 20), HAPTICD_LAB_LOSS the
// share lost (default 0.05) and HAPTICD_LAB_LEASE_MS the node's lease
// (default labDelayLease), for the figures by hand.
func TestLabDelayLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes behind toxiproxy for about 30 s")
	}
	window := labDuration(t, "HAPTICD_LAB_DELAY_WINDOW", 20*time.Second)
	faults := linkFaults{delayMs: labDelayMs, loss: labLossShare}
	if s := os.Getenv("HAPTICD_LAB_DELAY_MS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			t.Fatalf("HAPTICD_LAB_DELAY_MS=%q: want milliseconds", s)
		}
		faults.delayMs = v
	}
	if s := os.Getenv("HAPTICD_LAB_LOSS"); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || v >= 1 {
			t.Fatalf("HAPTICD_LAB_LOSS=%q: want a share from 0 to below 1", s)
		}
		faults.loss = v
	}
	lease := labDelayLease
	if s := os.Getenv("HAPTICD_LAB_LEASE_MS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			t.Fatalf("HAPTICD_LAB_LEASE_MS=%q: want milliseconds", s)
		}
		lease = v
	}
	lab := newTestLab(t, buildBinary(t), labHostA, labHostGW)
	// Each member's remote listens on a fixed port behind its proxy and
	// advertises the proxy: whoever dials it, the other member included,
	// goes through the faults. Both directions of the link are covered,
	// the gateway's connection to the node and the node's to the gateway.
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	links := map[string]*faultyLink{}
	args := map[string][]string{}
	for _, host := range []string{labHostA, labHostGW} {
		real, front := lab.ports.free(host), lab.ports.free(host)
		hp := func(p int) string { return net.JoinHostPort(host, strconv.Itoa(p)) }
		links[host] = newFaultyLink(t, srv, "cluster-"+host, hp(front), hp(real), faults)
		args[host] = []string{"--cluster-port", strconv.Itoa(real), "--cluster-advertise", hp(front)}
	}
	a := lab.node(labHostA, append(args[labHostA], "--cluster-lease-ms", strconv.Itoa(lease))...)
	gw := lab.gateway(labHostGW, args[labHostGW]...)
	if a.addr["cluster"] != links[labHostA].proxy.Listen || gw.addr["cluster"] != links[labHostGW].proxy.Listen {
		t.Fatalf("cluster addresses %s and %s, want the proxies' %s and %s", a.addr["cluster"], gw.addr["cluster"], links[labHostA].proxy.Listen, links[labHostGW].proxy.Listen)
	}
	arm := onlyArm(t, a)
	took := waitLab(t, 20*time.Second, "the node's arm on the gateway through the faulty link", func() bool { _, ok := labArms(t, gw)[arm]; return ok })
	t.Logf("arm on the gateway %v after both were ready", took.Round(time.Millisecond))

	// The node's arm is under the gateway's force when it is in force
	// mode at the client's 1.5 N less what the force gates may take
	// (underGatewayForce). Not exactly 1.5 N: after one lapse at load 11
	// the trim held it at 1.4948 to 1.4999999 N for 420 ms, so each lapse
	// of a few ms counted as 30 polls without the force.
	const commanded = 1.5
	underForce := func(d map[string]any) (on, trimmed bool) {
		on = underGatewayForce(d, commanded)
		return on, on && cursorForceZ(d) != commanded
	}

	// Commands flow: a client's force through the gateway moves the arm.
	z0, _ := path(labArms(t, a)[arm], "state", "cursor_position", "z").(float64)
	stop := forceThrough(t, gw, arm, commanded)
	defer stop()
	took = waitLab(t, 10*time.Second, "the gateway's force on the node", func() bool {
		on, _ := underForce(labArms(t, a)[arm])
		return on
	})
	t.Logf("force on the node %v after the client started sending", took.Round(time.Millisecond))
	waitLab(t, 10*time.Second, "the node's arm moving under the gateway's force", func() bool {
		z, _ := path(labArms(t, a)[arm], "state", "cursor_position", "z").(float64)
		return z > z0+0.005
	})

	// The window: the gateway must list the arm throughout (it is live,
	// only late), and the node's force is sampled as often as the gateway.
	disconnected, failed := eventCount(gw, "device-disconnected", arm), eventCount(gw, "device-failed", arm)
	if disconnected < 0 || failed < 0 {
		t.Fatal("the gateway's events could not be read before the window")
	}
	chunks0, lost0 := int64(0), int64(0)
	for _, l := range links {
		c, lo := l.lossCounts()
		chunks0, lost0 = chunks0+c, lost0+lo
	}
	w := watchArms(gw, arm)
	var polls, held, trimmedPolls, lapses int
	wasHeld := true
	start := time.Now()
	for time.Since(start) < window {
		if d := labArms(t, a)[arm]; d != nil {
			polls++
			on, trimmed := underForce(d)
			if trimmed {
				trimmedPolls++
			}
			if on {
				held++
			} else if wasHeld {
				lapses++
			}
			wasHeld = on
		}
		time.Sleep(10 * time.Millisecond) // the sampling period of the window
	}
	gwPolls, misses, gaps := w.end()
	var chunks, lost int64
	for _, l := range links {
		c, lo := l.lossCounts()
		chunks, lost = chunks+c, lost+lo
	}
	chunks, lost = chunks-chunks0, lost-lost0
	count, p50, p99, maxAge := remoteStateAge(t, gw, arm)
	t.Logf("%v at %d ms each way and %.1f %% loss, node lease %d ms: the link's proxies delayed %d of %d chunks by a retransmission (%.1f %%)",
		window, faults.delayMs, faults.loss*100, lease, lost, chunks, 100*float64(lost)/float64(max(chunks, 1)))
	t.Logf("gateway listed the arm in %d of %d polls; the node's arm under the gateway's force in %d of %d polls (%d lapses; %d polls with the force trimmed by a force gate)",
		gwPolls-misses[arm], gwPolls, held, polls, lapses, trimmedPolls)
	t.Logf("gateway /stats state age: p50 %v p99 %v max %v over %d ticks (load average %.1f)",
		p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), maxAge.Round(100*time.Microsecond), count, loadAverage())

	if misses[arm] > 0 || gwPolls == 0 {
		t.Errorf("the gateway dropped the live arm in %d of %d polls (gaps %v)", misses[arm], gwPolls, gaps[arm])
	}
	if n := eventCount(gw, "device-disconnected", arm); n != disconnected {
		t.Errorf("%d device-disconnected for the live arm during the window", n-disconnected)
	}
	if n := eventCount(gw, "device-failed", arm); n != failed {
		t.Errorf("%d device-failed for the live arm during the window", n-failed)
	}
	if chunks == 0 || (faults.loss > 0 && lost == 0) {
		t.Errorf("the proxies saw %d chunks and lost %d: the faults were not on the link", chunks, lost)
	}
	// Commands keep flowing: the force holds on the node most of the
	// time, and lapses only when a process of the chain (the node, the
	// gateway, or this test's proxies and client) stalls past what the
	// lease leaves over the link's round trip and retransmission (about
	// 220 ms). A lease that does not cover the link lapses between
	// commands, stalls or not: with the default 100 ms, 175 to 215
	// lapses in 20 s (82 to 85 % of polls under the force, load 8 to
	// 18), against 0 to 4 with 300 ms (99.2 to 100 %, load 13 to 19). So
	// the lapses are bounded at one a second, which would take a process
	// of the chain stalled that long every second.
	if polls == 0 || float64(held) < 0.8*float64(polls) {
		t.Errorf("the node's arm was under the gateway's force in %d of %d polls, want at least 80 %%", held, polls)
	}
	if most := int(window / time.Second); lapses > most {
		t.Errorf("the node's force lapsed %d times in %v, want at most %d: the lease does not cover the link", lapses, window, most)
	}
	// The age includes the link's one-way delay: a gateway that showed
	// less would hide the link from its clients.
	if oneWay := time.Duration(faults.delayMs) * time.Millisecond; count == 0 || p50 < oneWay*3/4 {
		t.Errorf("gateway /stats state age p50 %v over %d ticks, want at least the link's %v", p50, count, oneWay)
	}
	// And still flow at the end: the arm is under the force again within
	// a few leases. One look at the end fell in a lapse as often as the
	// window's polls did (4 lapses, 10 % of the polls off, on a machine at
	// load 7 to 9), which the bound above allows.
	end := time.Now()
	for {
		d := labArms(t, a)[arm]
		if on, _ := underForce(d); on {
			break
		}
		if time.Since(end) > 5*time.Second {
			t.Errorf("the node's arm is in %q at %v N 5 s after the end of the window, want under the gateway's %v N", controlMode(d), cursorForceZ(d), commanded)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}
