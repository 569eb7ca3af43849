package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// inventory is the part of the first frame a client needs. The arms are
// under inverse3 (hapticd's default names) or arm3 (--type-names
// reference); messages name them arm3, which hapticd accepts either way.
type inventory struct {
	SessionID int64      `json:"session_id"`
	Inverse3  []armEntry `json:"inverse3"`
	Arm3      []armEntry `json:"arm3"`
}

type armEntry struct {
	DeviceID string `json:"device_id"`
}

func parseInventory(frame []byte) (inventory, error) {
	var inv inventory
	if err := json.Unmarshal(frame, &inv); err != nil {
		return inv, fmt.Errorf("inventory frame is not the JSON object the README's simulation channel section describes: %w", err)
	}
	if inv.SessionID < 1 {
		return inv, fmt.Errorf("inventory frame has no session_id (got %d); is this a hapticd 3.x simulation socket?", inv.SessionID)
	}
	inv.Arm3 = append(inv.Arm3, inv.Inverse3...)
	return inv, nil
}

// ServiceStats is the body of hapticd's GET /stats; DeviceStats and
// ProcessStats are its parts. The shapes are protocol's, which hapticd
// writes.
type (
	ServiceStats = protocol.Stats
	DeviceStats  = protocol.DeviceStats
	ProcessStats = protocol.ProcessStats
)

// statsNoDevices is the query of a /stats without device entries: the
// simulation shards and the process only (a hapticd from before it
// answers the whole document).
const statsNoDevices = "?devices=none"

// fetchStats reads GET {httpBase}/stats{query}.
func fetchStats(ctx context.Context, httpBase, query string) (ServiceStats, error) {
	r, err := fetchStatsRaw(ctx, httpBase, query)
	if err != nil {
		return ServiceStats{}, err
	}
	return r.decode()
}

// rawStats is a /stats answer not yet decoded: a window's first read is
// decoded after the window, so that decoding (megabytes of JSON with
// 10,000 arms) does not take CPU from the loops it measures.
type rawStats struct {
	status string
	body   []byte
}

func fetchStatsRaw(ctx context.Context, httpBase, query string) (rawStats, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, httpBase+"/stats"+query, nil)
	if err != nil {
		return rawStats{}, fmt.Errorf("bench: stats request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rawStats{}, fmt.Errorf("bench: GET %s/stats: %w", httpBase, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return rawStats{}, fmt.Errorf("bench: read /stats: %w", err)
	}
	return rawStats{status: resp.Status, body: body}, nil
}

func (r rawStats) decode() (ServiceStats, error) {
	var env struct {
		OK    bool         `json:"ok"`
		Error string       `json:"error"`
		Data  ServiceStats `json:"data"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		return ServiceStats{}, fmt.Errorf("bench: /stats answered %s with a body that is not the {ok,data} envelope (%w): %s", r.status, err, clip(r.body, 200))
	}
	if !env.OK {
		return ServiceStats{}, fmt.Errorf("bench: /stats answered %s: %s; does this hapticd build have the /stats route?", r.status, env.Error)
	}
	return env.Data, nil
}

// LoopFigures summarizes the device loops over the measured window:
// overruns and ticks are deltas between two /stats reads, the period
// percentiles are each device's own (since it started).
type LoopFigures struct {
	Devices  int     `json:"devices"`
	TargetUs float64 `json:"target_us"`
	// Median and Worst are across devices.
	PeriodP50UsMedian float64 `json:"period_p50_us_median"`
	PeriodP99UsMedian float64 `json:"period_p99_us_median"`
	PeriodP99UsWorst  float64 `json:"period_p99_us_worst"`
	PeriodMaxUsWorst  float64 `json:"period_max_us_worst"`
	// PassP99UsWorst is the worst shard's pass p99 over the window (from
	// its busy_buckets; zero without shards that serve them).
	PassP99UsWorst float64 `json:"pass_p99_us_worst,omitempty"`
	Ticks          uint64  `json:"ticks"`
	Overruns       uint64  `json:"overruns"`
	// OverrunFractionWorst is the largest Δoverruns/Δticks of any device.
	OverrunFractionWorst  float64 `json:"overrun_fraction_worst"`
	OverrunFractionMedian float64 `json:"overrun_fraction_median"`
	// ExchangeP50UsMedian is the driver round trip per tick; for simulated
	// arms, the cost of one step.
	ExchangeP50UsMedian float64        `json:"exchange_p50_us_median"`
	PerDevice           []DeviceWindow `json:"per_device,omitempty"`
}

// DeviceWindow is one device over the measured window.
type DeviceWindow struct {
	DeviceType  string  `json:"device_type"`
	DeviceID    string  `json:"device_id"`
	PeriodUsP50 float64 `json:"period_us_p50"`
	PeriodUsP99 float64 `json:"period_us_p99"`
	PeriodUsMax float64 `json:"period_us_max"`
	Ticks       uint64  `json:"ticks"`
	Overruns    uint64  `json:"overruns"`
}

// ProcessFigures is the service's resource use over the measured window.
type ProcessFigures struct {
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUPercent float64 `json:"cpu_percent"`
	RSSBytes   uint64  `json:"rss_bytes"`
	Goroutines int     `json:"goroutines"`
	GCCount    uint64  `json:"gc_count"`
	GCPauseMs  float64 `json:"gc_pause_ms"`
	HeapBytes  uint64  `json:"heap_bytes"`
	// Sessions is the service's count at the end of the window; it should
	// be the run's clients plus observers.
	Sessions int `json:"sessions"`
}

// windowFigures compares two /stats reads taken window apart.
func windowFigures(before, after ServiceStats, window time.Duration, perDevice bool) (LoopFigures, ProcessFigures) {
	prev := make(map[string]DeviceStats, len(before.Devices))
	for _, d := range before.Devices {
		prev[d.DeviceType+"/"+d.DeviceID] = d
	}
	var lf LoopFigures
	var p50s, p99s, fractions, exchanges []float64
	for _, d := range after.Devices {
		b := prev[d.DeviceType+"/"+d.DeviceID]
		w := DeviceWindow{DeviceType: d.DeviceType, DeviceID: d.DeviceID,
			PeriodUsP50: d.Loop.PeriodUsP50, PeriodUsP99: d.Loop.PeriodUsP99, PeriodUsMax: d.Loop.PeriodUsMax,
			Ticks: sub(d.Loop.Ticks, b.Loop.Ticks), Overruns: sub(d.Loop.Overruns, b.Loop.Overruns)}
		lf.Devices++
		lf.TargetUs = max(lf.TargetUs, d.Loop.TargetUs)
		lf.Ticks += w.Ticks
		lf.Overruns += w.Overruns
		lf.PeriodP99UsWorst = max(lf.PeriodP99UsWorst, w.PeriodUsP99)
		lf.PeriodMaxUsWorst = max(lf.PeriodMaxUsWorst, w.PeriodUsMax)
		p50s = append(p50s, w.PeriodUsP50)
		exchanges = append(exchanges, d.Exchange.P50Us)
		p99s = append(p99s, w.PeriodUsP99)
		f := 0.0
		if w.Ticks > 0 {
			f = float64(w.Overruns) / float64(w.Ticks)
		} else if window > 0 {
			f = 1 // a loop that did not tick in the window missed every deadline
		}
		fractions = append(fractions, f)
		lf.OverrunFractionWorst = max(lf.OverrunFractionWorst, f)
		if perDevice {
			lf.PerDevice = append(lf.PerDevice, w)
		}
	}
	lf.PeriodP50UsMedian = median(p50s)
	lf.PeriodP99UsMedian = median(p99s)
	lf.OverrunFractionMedian = median(fractions)
	lf.ExchangeP50UsMedian = median(exchanges)

	pf := ProcessFigures{
		CPUSeconds: after.Process.CPUSeconds - before.Process.CPUSeconds,
		RSSBytes:   after.Process.RSSBytes,
		Goroutines: after.Process.Goroutines,
		GCCount:    sub(after.Process.GCCount, before.Process.GCCount),
		GCPauseMs:  float64(sub(after.Process.GCPauseTotalNs, before.Process.GCPauseTotalNs)) / 1e6,
		HeapBytes:  after.Process.HeapBytes,
		Sessions:   after.Process.Sessions,
	}
	if window > 0 {
		pf.CPUPercent = 100 * pf.CPUSeconds / window.Seconds()
	}
	return lf, pf
}

func sub(a, b uint64) uint64 {
	if a < b {
		return 0 // a counter that went back means the device restarted
	}
	return a - b
}

// median returns the middle value (the mean of the two middle values for an
// even count); it sorts xs in place.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	m := len(xs) / 2
	if len(xs)%2 == 1 {
		return xs[m]
	}
	return (xs[m-1] + xs[m]) / 2
}
