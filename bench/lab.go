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
	// Pairs is how many times each path runs, alternating (direct,
	// gateway, direct, …; default 5): each ratio is the median of the
	// pairs' ratios.
	Pairs    int
	Progress io.Writer
}

// LabReport is the direct and the gateway path measured in one run, with
// the gateway's figures as ratios of the direct ones.
type LabReport struct {
	Machine Machine `json:"machine"`
	// Direct and Gateway are each path's run of the median rate, with
	// every session's figures.
	Direct  LoadResult `json:"direct"`
	Gateway LoadResult `json:"gateway"`
	// Pairs are every run's overall figures in the order they ran: pair i
	// is the direct path's i-th run and the gateway's right after it.
	Pairs []LabPair `json:"pairs"`
	// RTTP50Ratio, RTTP99Ratio and RateRatio are gateway / direct: the
	// median of the pairs' ratios. Comparisons hold them with their range
	// and every pair's ratio.
	RTTP50Ratio float64      `json:"rtt_p50_ratio"`
	RTTP99Ratio float64      `json:"rtt_p99_ratio"`
	RateRatio   float64      `json:"rate_ratio"`
	Comparisons []Comparison `json:"comparisons"`
	// StateAge is how old the node's state was when the gateway's loop
	// took it (the state a gateway frame answers with is up to one gateway
	// tick older still), from the gateway's GET /stats after its phase,
	// over the arms' life: the arm with the highest p99.
	StateAge StateAge `json:"gateway_state_age"`
}

// LabPair is one turn of a lab run: the direct path, then the gateway.
type LabPair struct {
	Direct  Overall `json:"direct"`
	Gateway Overall `json:"gateway"`
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
	pairs := o.Pairs
	if pairs <= 0 {
		pairs = DefaultPairs
	}
	var direct, gateway []LoadResult
	for i := range pairs {
		var pair LabPair
		for _, phase := range []struct {
			name string
			svc  *service
			runs *[]LoadResult
			dst  *Overall
		}{{"direct", node, &direct, &pair.Direct}, {"gateway", gw, &gateway, &pair.Gateway}} {
			ro.progress("pair %d of %d, %s: %d clients at %s for %s (+%s warm-up)", i+1, pairs, phase.name, ro.Clients, rateText(ro.RateHz), ro.Duration, ro.Warmup)
			load, _, err := runLoad(ctx, ro, phase.name, phase.svc.wsURL, phase.svc.httpBase, &capturedFrames{})
			if err != nil {
				return rep, fmt.Errorf("bench: %s: %w", phase.name, err)
			}
			*phase.runs = append(*phase.runs, load)
			*phase.dst = load.Overall
		}
		rep.Pairs = append(rep.Pairs, pair)
	}
	rep.Direct, rep.Gateway = medianRun(direct), medianRun(gateway)
	runPairs := make([]RunPair, len(rep.Pairs))
	for i, p := range rep.Pairs {
		runPairs[i] = RunPair{Hapticd: p.Gateway, Echo: &p.Direct}
	}
	for _, f := range pairedFigures {
		if f.figure != "rate total" && f.figure != "rtt p50" && f.figure != "rtt p99" {
			continue
		}
		c := comparePairs(runPairs, f.figure, f.unit, f.higher, f.get)
		c.Baseline = "direct"
		// The direct path is no floor the gateway could lose to by noise
		// alone only: a gateway ahead of it is reported as it came.
		if c.Flag != "" {
			c.Flag, c.Ratio = "", median(slices.Clone(c.PairRatios))
		}
		rep.Comparisons = append(rep.Comparisons, c)
		switch f.figure {
		case "rate total":
			rep.RateRatio = c.Ratio
		case "rtt p50":
			rep.RTTP50Ratio = c.Ratio
		case "rtt p99":
			rep.RTTP99Ratio = c.Ratio
		}
	}
	if rep.StateAge, err = gatewayStateAge(ctx, gw.httpBase); err != nil {
		return rep, err
	}
	return rep, nil
}

// medianRun is the run of the median total rate.
func medianRun(runs []LoadResult) LoadResult {
	rates := make([]float64, len(runs))
	for i, r := range runs {
		rates[i] = r.Overall.AchievedHzTotal
	}
	return runs[medianIndex(rates)]
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
	fmt.Fprintf(&b, "hapticbench lab: %d clients; %s\n\n",
		r.Direct.Overall.Sessions, r.Machine)
	var t textTable
	t.add("figure", "direct", "gateway", "gateway/direct", "pairs min–max")
	names := map[string]string{"rtt p50": "lock-step round trip p50 (µs)", "rtt p99": "lock-step round trip p99 (µs)", "rate total": "achieved rate, all clients (Hz)"}
	for _, c := range r.Comparisons {
		spread := ""
		if len(c.PairRatios) > 0 {
			spread = fmt.Sprintf("%.2f–%.2f (%d)", c.RatioMin, c.RatioMax, len(c.PairRatios))
		}
		t.add(names[c.Figure], number(c.Base), number(c.Hapticd), number(c.Ratio), spread)
	}
	t.add("state age p50 / p99 / max (µs)", "-", fmt.Sprintf("%s / %s / %s", number(r.StateAge.P50Us), number(r.StateAge.P99Us), number(r.StateAge.MaxUs)), "", "")
	t.write(&b)
	fmt.Fprintf(&b, "direct and gateway are the medians of each path's %d runs; gateway/direct is the MEDIAN of the per-pair ratios (direct run i, then gateway run i)\n", len(r.Pairs))
	t = textTable{}
	t.add("pair", "direct Hz", "gateway Hz", "ratio", "direct p50 µs", "gateway p50 µs", "ratio", "direct p99 µs", "gateway p99 µs", "ratio")
	for i, p := range r.Pairs {
		d, g := p.Direct, p.Gateway
		t.add(itoa(i+1), number(d.AchievedHzTotal), number(g.AchievedHzTotal), ratioCell(g.AchievedHzTotal, d.AchievedHzTotal),
			number(d.RTT.P50Us), number(g.RTT.P50Us), ratioCell(g.RTT.P50Us, d.RTT.P50Us),
			number(d.RTT.P99Us), number(g.RTT.P99Us), ratioCell(g.RTT.P99Us, d.RTT.P99Us))
	}
	t.write(&b)
	_, err := io.WriteString(w, b.String())
	return err
}
