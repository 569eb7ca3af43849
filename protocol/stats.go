package protocol

// The shapes of GET /stats and of `hapticd baseline-arms`: the service
// writes them and load generators read them, so they live here once.

// Stats is what GET /stats answers: each device loop's own measurements and
// the process's resource use.
type Stats struct {
	Devices []DeviceStats `json:"devices"`
	Process ProcessStats  `json:"process"`
}

// DeviceStats is one device's loop and transport figures. Percentiles cover
// the device's life so far; counters only grow.
type DeviceStats struct {
	DeviceType string         `json:"device_type"`
	DeviceID   string         `json:"device_id"`
	Simulated  bool           `json:"simulated"`
	Loop       LoopStats      `json:"loop"`
	Exchange   RoundTripStats `json:"exchange"`
	Errors     uint64         `json:"errors"`
	// Remote is set on a lab gateway for a device served by a node.
	Remote *RemoteStats `json:"remote,omitempty"`
}

// RemoteStats is a lab gateway's view of a device on a node: where it
// lives, and how old the state the gateway's loop answered with was (from
// the node reading it to the gateway using it, each tick, on the gateway's
// clock; across hosts the clocks' offset is estimated, within half the
// difference of the two directions' shortest delays).
type RemoteStats struct {
	NodeID   string         `json:"node_id"`
	NodeURL  string         `json:"node_url"`
	StateAge RoundTripStats `json:"state_age"`
}

// LoopStats is a loop's period histogram summary in microseconds.
type LoopStats struct {
	TargetUs    float64 `json:"target_us"`
	PeriodUsP50 float64 `json:"period_us_p50"`
	PeriodUsP99 float64 `json:"period_us_p99"`
	PeriodUsMax float64 `json:"period_us_max"`
	Overruns    uint64  `json:"overruns"`
	Ticks       uint64  `json:"ticks"`
	// Realtime is true when the loop's thread runs under a real-time
	// policy (read back from the OS; see --realtime-priority).
	Realtime bool `json:"realtime"`
}

// RoundTripStats summarises a driver's exchange times in microseconds (for
// simulated devices, the cost of one step).
type RoundTripStats struct {
	Count uint64  `json:"count"`
	P50Us float64 `json:"p50_us"`
	P99Us float64 `json:"p99_us"`
	MaxUs float64 `json:"max_us"`
}

// ProcessStats is the service process's resource use. The Go runtime's
// figures come from runtime/metrics, read without stopping the world.
type ProcessStats struct {
	CPUSeconds float64 `json:"cpu_seconds"`
	RSSBytes   uint64  `json:"rss_bytes"`
	// HeapBytes is the heap's objects, live or not yet collected.
	HeapBytes uint64 `json:"heap_bytes"`
	// HeapLiveBytes is the heap the last GC found live.
	HeapLiveBytes uint64 `json:"heap_live_bytes"`
	// StackBytes is the goroutine stacks' memory.
	StackBytes uint64 `json:"stack_bytes"`
	Goroutines int    `json:"goroutines"`
	GCCount    uint64 `json:"gc_count"`
	// GCPauseTotalNs is estimated from the runtime's pause histogram
	// (bucket midpoints), to within a bucket's width per pause.
	GCPauseTotalNs uint64 `json:"gc_pause_total_ns"`
	Sessions       int    `json:"sessions"`
}

// BaselineArms is what `hapticd baseline-arms` prints: simulated arms
// stepped in one paced loop with no service around them, the baseline load
// tests set beside the service's own loops.
type BaselineArms struct {
	Arms        int     `json:"arms"`
	LoopHz      float64 `json:"loop_hz"`
	Ticks       uint64  `json:"ticks"`
	Overruns    uint64  `json:"overruns"`
	PeriodUsP50 float64 `json:"period_us_p50"`
	PeriodUsP99 float64 `json:"period_us_p99"`
	// NsPerStep is the mean cost of one arm's step.
	NsPerStep float64 `json:"ns_per_step"`
}

// OverrunFraction is overruns per tick (1 when nothing ticked).
func (b BaselineArms) OverrunFraction() float64 {
	if b.Ticks == 0 {
		return 1
	}
	return float64(b.Overruns) / float64(b.Ticks)
}
