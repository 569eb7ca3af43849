package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LabOptions configure a gateway-against-direct run: one hapticd node with
// simulated arms and one gateway in front of it, both on loopback, driven
// by the same lock-step clients one after the other.
type LabOptions struct {
	Hapticd  string // binary; empty searches as FindHapticd does
	Arms     int    // simulated arms on the node (default 1)
	Clients  int    // controlling sessions (default 1)
	RateHz   float64
	Duration time.Duration
	Warmup   time.Duration
	LoopHz   float64
	Progress io.Writer
}

// LabReport is the direct and the gateway path measured in one run, with
// the gateway's figures as ratios of the direct ones.
type LabReport struct {
	Machine Machine    `json:"machine"`
	Direct  LoadResult `json:"direct"`
	Gateway LoadResult `json:"gateway"`
	// RTTP50Ratio, RTTP99Ratio and RateRatio are gateway / direct.
	RTTP50Ratio float64 `json:"rtt_p50_ratio"`
	RTTP99Ratio float64 `json:"rtt_p99_ratio"`
	RateRatio   float64 `json:"rate_ratio"`
	// StateAge is how old the node's state was when the gateway's loop
	// took it (the state a gateway frame answers with is up to one gateway
	// tick older still), from the gateway's GET /stats after its phase,
	// over the arms' life: the arm with the highest p99.
	StateAge StateAge `json:"gateway_state_age"`
}

// StateAge summarises a gateway's state age in microseconds.
type StateAge struct {
	Count uint64  `json:"count"`
	P50Us float64 `json:"p50_us"`
	P99Us float64 `json:"p99_us"`
	MaxUs float64 `json:"max_us"`
}

// Lab starts a node and a gateway (--role node, --role gateway) and runs
// the same lock-step load against the node directly, then through the
// gateway. The gateway's frames carry the state the node last pushed, so
// its round trip is the client's to the gateway; the state's age adds up
// to one push period on top.
func Lab(ctx context.Context, o LabOptions) (LabReport, error) {
	rep := LabReport{Machine: ThisMachine()}
	ro := RunOptions{Hapticd: o.Hapticd, Arms: o.Arms, Clients: o.Clients, RateHz: o.RateHz,
		Duration: o.Duration, Warmup: o.Warmup, LoopHz: o.LoopHz, Progress: o.Progress, NoEcho: true, NoBareLoop: true}
	if err := ro.defaults(); err != nil {
		return rep, err
	}
	binary, cleanup, err := FindHapticd(ctx, o.Hapticd)
	if err != nil {
		return rep, err
	}
	defer cleanup()
	// Each process: a cluster port and a health port (membership is
	// automanaged, hapticd's default; every process lists both members).
	var ports [4]int
	for i := range ports {
		if ports[i], err = freePort(ports[:i]); err != nil {
			return rep, err
		}
	}
	peers := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d", ports[1], ports[3])
	member := func(role string, cluster, health int) []string {
		return []string{"--role", role, "--node-id", role, "--cluster-port", strconv.Itoa(cluster),
			"--cluster-health-port", strconv.Itoa(health), "--peers", peers}
	}
	ro.progress("starting a node with %d simulated arms and a gateway", ro.Arms)
	node, err := startService(ctx, ServiceOptions{Binary: binary, Arms: ro.Arms, LoopHz: ro.LoopHz,
		Extra: member("node", ports[0], ports[1])})
	if err != nil {
		return rep, err
	}
	defer node.stop()
	gw, err := startService(ctx, ServiceOptions{Binary: binary, Arms: 0, LoopHz: ro.LoopHz,
		Extra: member("gateway", ports[2], ports[3])})
	if err != nil {
		return rep, err
	}
	defer gw.stop()
	if err := waitArms(ctx, gw.httpBase, ro.Arms, 10*time.Second); err != nil {
		return rep, err
	}
	for _, phase := range []struct {
		name string
		svc  *service
		dst  *LoadResult
	}{{"direct", node, &rep.Direct}, {"gateway", gw, &rep.Gateway}} {
		ro.progress("%s: %d clients at %s for %s (+%s warm-up)", phase.name, ro.Clients, rateText(ro.RateHz), ro.Duration, ro.Warmup)
		load, _, err := runLoad(ctx, ro, phase.name, phase.svc.wsURL, phase.svc.httpBase, &capturedFrames{})
		if err != nil {
			return rep, fmt.Errorf("bench: %s: %w", phase.name, err)
		}
		*phase.dst = load
	}
	ratio := func(g, d float64) float64 {
		if d == 0 {
			return 0
		}
		return g / d
	}
	rep.RTTP50Ratio = ratio(rep.Gateway.Overall.RTT.P50Us, rep.Direct.Overall.RTT.P50Us)
	rep.RTTP99Ratio = ratio(rep.Gateway.Overall.RTT.P99Us, rep.Direct.Overall.RTT.P99Us)
	rep.RateRatio = ratio(rep.Gateway.Overall.AchievedHzTotal, rep.Direct.Overall.AchievedHzTotal)
	if rep.StateAge, err = gatewayStateAge(ctx, gw.httpBase); err != nil {
		return rep, err
	}
	return rep, nil
}

// gatewayStateAge reads the gateway's GET /stats: the state age of the
// remote device with the highest p99.
func gatewayStateAge(ctx context.Context, httpBase string) (StateAge, error) {
	var body struct {
		Data struct {
			Devices []struct {
				Remote *struct {
					StateAge StateAge `json:"state_age"`
				} `json:"remote"`
			} `json:"devices"`
		} `json:"data"`
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, httpBase+"/stats", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return StateAge{}, fmt.Errorf("bench: gateway /stats: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return StateAge{}, fmt.Errorf("bench: gateway /stats: %w", err)
	}
	var worst StateAge
	found := false
	for _, d := range body.Data.Devices {
		if d.Remote != nil && (!found || d.Remote.StateAge.P99Us > worst.P99Us) {
			worst, found = d.Remote.StateAge, true
		}
	}
	if !found || worst.Count == 0 {
		return StateAge{}, errors.New("bench: the gateway's /stats reports no state age for a remote device")
	}
	return worst, nil
}

// freePort is a loopback port free right now and not in taken (the
// cluster link needs a fixed port, since the gateway lists it). It is
// drawn below Linux's ephemeral range (32768 and up), so no port-0
// listener or outgoing connection can take it before its process binds it.
func freePort(taken []int) (int, error) {
	const low, high = 20000, 32768
	for range 1000 {
		port := low + rand.IntN(high-low)
		if slices.Contains(taken, port) {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // taken: draw again
		}
		l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("bench: no free loopback port in [%d, %d) after 1000 draws", low, high)
}

// waitArms polls GET /devices until it lists n arms.
func waitArms(ctx context.Context, httpBase string, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var body map[string][]json.RawMessage
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, httpBase+"/devices", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
		}
		got := 0
		for k, v := range body {
			if k == "inverse3" || k == "arm3" {
				got += len(v)
			}
		}
		if got >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: the gateway listed %d of the node's %d arms within %v", got, n, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// WriteTable prints both paths and the ratios.
func (r LabReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "hapticbench lab: %d clients; %s %s/%s, %d CPUs\n\n",
		r.Direct.Overall.Sessions, r.Machine.GoVersion, r.Machine.OS, r.Machine.Arch, r.Machine.CPUs)
	var t textTable
	t.add("figure", "direct", "gateway", "gateway/direct")
	t.add("lock-step round trip p50 (µs)", number(r.Direct.Overall.RTT.P50Us), number(r.Gateway.Overall.RTT.P50Us), number(r.RTTP50Ratio))
	t.add("lock-step round trip p99 (µs)", number(r.Direct.Overall.RTT.P99Us), number(r.Gateway.Overall.RTT.P99Us), number(r.RTTP99Ratio))
	t.add("achieved rate, all clients (Hz)", number(r.Direct.Overall.AchievedHzTotal), number(r.Gateway.Overall.AchievedHzTotal), number(r.RateRatio))
	t.add("state age p50 / p99 / max (µs)", "-", fmt.Sprintf("%s / %s / %s", number(r.StateAge.P50Us), number(r.StateAge.P99Us), number(r.StateAge.MaxUs)), "")
	t.write(&b)
	_, err := io.WriteString(w, b.String())
	return err
}
