package protocol

// The shapes of GET /stats and of `hapticd baseline-arms`: the service
// writes them and load generators read them, so they live here once.

import "strconv"

// Stats is what GET /stats answers: each device loop's own measurements and
// the process's resource use.
type Stats struct {
	// Devices is empty when asked without them (GET /stats?devices=none).
	Devices []DeviceStats `json:"devices"`
	// Shards is the simulation scheduler's shards: the loops the simulated
	// devices share. Each of their devices repeats its shard's loop figures;
	// a load test of thousands of arms reads the shards alone.
	Shards  []ShardStats `json:"shards"`
	Process ProcessStats `json:"process"`
}

// ShardStats is one simulation scheduler shard's loop.
type ShardStats struct {
	Devices int       `json:"devices"`
	Loop    LoopStats `json:"loop"`
	// PeriodBuckets is the loop's period histogram since the service
	// started, its non-empty buckets lowest first: two reads' difference
	// is a window's distribution (WindowQuantileUs), where Loop's
	// percentiles cover the whole run.
	PeriodBuckets []HistogramBucket `json:"period_buckets"`
	// Busy is the distribution of the shard's passes since the service
	// started: each tick, from the pacer's wake-up to the last device
	// stepped. A shard overruns when a pass outlasts the period less the
	// wake-up's lateness, so its tail is where overruns come from.
	Busy DurationStats `json:"busy"`
	// BusyBuckets is Busy's histogram as PeriodBuckets is the period's:
	// two reads' difference is a window's passes.
	BusyBuckets []HistogramBucket `json:"busy_buckets"`
}

// DurationStats is a distribution of durations in microseconds: how many,
// percentiles and the largest.
type DurationStats struct {
	Count  uint64  `json:"count"`
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P99Us  float64 `json:"p99_us"`
	P999Us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
}

// HistogramBucket is one bucket of a histogram of durations: Count values
// at most UpperUs (and above the previous bucket's UpperUs).
type HistogramBucket struct {
	UpperUs float64 `json:"upper_us"`
	Count   uint64  `json:"count"`
}

// WindowQuantileUs is the q quantile (0..1) of the values recorded between
// two reads of one histogram, before and after (each lowest bucket first):
// the upper bound of the bucket it falls in. ok is false when nothing was
// recorded in between.
func WindowQuantileUs(before, after []HistogramBucket, q float64) (us float64, ok bool) {
	prev := make(map[float64]uint64, len(before))
	for _, b := range before {
		prev[b.UpperUs] = b.Count
	}
	var total uint64
	for _, b := range after {
		total += b.Count - min(b.Count, prev[b.UpperUs])
	}
	if total == 0 {
		return 0, false
	}
	rank := uint64(q*float64(total) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for _, b := range after {
		seen += b.Count - min(b.Count, prev[b.UpperUs])
		if seen >= rank {
			return b.UpperUs, true
		}
	}
	return after[len(after)-1].UpperUs, true
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
	// Busy is the worst thread's passes over its arms, each tick from the
	// pacer's wake-up to the last arm stepped, as a service shard's
	// (Stats.Shards[].Busy), so the two compare at equal arms a thread.
	Busy DurationStats `json:"busy"`
}

// OverrunFraction is overruns per tick (1 when nothing ticked).
func (b BaselineArms) OverrunFraction() float64 {
	if b.Ticks == 0 {
		return 1
	}
	return float64(b.Overruns) / float64(b.Ticks)
}

// AppendStats appends s as the JSON object GET /stats answers with under
// "data", field for field as encoding/json writes Stats (numbers in the
// package's shortest form). With thousands of simulated arms the answer
// runs to megabytes, and encoding/json took 56 ms for 22,528 devices on
// the 2-core test host: CPU the loop shards then lacked (about 15 overrun
// ticks per GET at that load).
func AppendStats(dst []byte, s *Stats) []byte {
	dst = append(dst, `{"devices":[`...)
	for i := range s.Devices {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendDeviceStats(dst, &s.Devices[i])
	}
	dst = append(dst, `],"shards":`...)
	if s.Shards == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range s.Shards {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendShardStats(dst, &s.Shards[i])
		}
		dst = append(dst, ']')
	}
	p := &s.Process
	dst = append(dst, `,"process":{"cpu_seconds":`...)
	dst = AppendFloat(dst, p.CPUSeconds)
	dst = appendUintField(dst, `,"rss_bytes":`, p.RSSBytes)
	dst = appendUintField(dst, `,"heap_bytes":`, p.HeapBytes)
	dst = appendUintField(dst, `,"heap_live_bytes":`, p.HeapLiveBytes)
	dst = appendUintField(dst, `,"stack_bytes":`, p.StackBytes)
	dst = strconv.AppendInt(append(dst, `,"goroutines":`...), int64(p.Goroutines), 10)
	dst = appendUintField(dst, `,"gc_count":`, p.GCCount)
	dst = appendUintField(dst, `,"gc_pause_total_ns":`, p.GCPauseTotalNs)
	dst = strconv.AppendInt(append(dst, `,"sessions":`...), int64(p.Sessions), 10)
	return append(dst, "}}"...)
}

func appendShardStats(dst []byte, sh *ShardStats) []byte {
	dst = strconv.AppendInt(append(dst, `{"devices":`...), int64(sh.Devices), 10)
	dst = appendLoopStats(append(dst, `,"loop":`...), &sh.Loop)
	dst = appendBuckets(append(dst, `,"period_buckets":`...), sh.PeriodBuckets)
	dst = appendDurationStats(append(dst, `,"busy":`...), &sh.Busy)
	dst = appendBuckets(append(dst, `,"busy_buckets":`...), sh.BusyBuckets)
	return append(dst, '}')
}

func appendBuckets(dst []byte, bs []HistogramBucket) []byte {
	if bs == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, b := range bs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendFloat(append(dst, `{"upper_us":`...), b.UpperUs)
		dst = appendUintField(dst, `,"count":`, b.Count)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendDurationStats(dst []byte, d *DurationStats) []byte {
	dst = appendUintField(dst, `{"count":`, d.Count)
	dst = AppendFloat(append(dst, `,"p50_us":`...), d.P50Us)
	dst = AppendFloat(append(dst, `,"p90_us":`...), d.P90Us)
	dst = AppendFloat(append(dst, `,"p99_us":`...), d.P99Us)
	dst = AppendFloat(append(dst, `,"p999_us":`...), d.P999Us)
	dst = AppendFloat(append(dst, `,"max_us":`...), d.MaxUs)
	return append(dst, '}')
}

func appendDeviceStats(dst []byte, d *DeviceStats) []byte {
	dst = AppendString(append(dst, `{"device_type":`...), d.DeviceType)
	dst = AppendString(append(dst, `,"device_id":`...), d.DeviceID)
	dst = appendBool(append(dst, `,"simulated":`...), d.Simulated)
	dst = appendLoopStats(append(dst, `,"loop":`...), &d.Loop)
	dst = appendRoundTripStats(append(dst, `,"exchange":`...), &d.Exchange)
	dst = appendUintField(dst, `,"errors":`, d.Errors)
	if r := d.Remote; r != nil {
		dst = AppendString(append(dst, `,"remote":{"node_id":`...), r.NodeID)
		dst = AppendString(append(dst, `,"node_url":`...), r.NodeURL)
		dst = appendRoundTripStats(append(dst, `,"state_age":`...), &r.StateAge)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendLoopStats(dst []byte, l *LoopStats) []byte {
	dst = AppendFloat(append(dst, `{"target_us":`...), l.TargetUs)
	dst = AppendFloat(append(dst, `,"period_us_p50":`...), l.PeriodUsP50)
	dst = AppendFloat(append(dst, `,"period_us_p99":`...), l.PeriodUsP99)
	dst = AppendFloat(append(dst, `,"period_us_max":`...), l.PeriodUsMax)
	dst = appendUintField(dst, `,"overruns":`, l.Overruns)
	dst = appendUintField(dst, `,"ticks":`, l.Ticks)
	dst = appendBool(append(dst, `,"realtime":`...), l.Realtime)
	return append(dst, '}')
}

func appendRoundTripStats(dst []byte, r *RoundTripStats) []byte {
	dst = appendUintField(dst, `{"count":`, r.Count)
	dst = AppendFloat(append(dst, `,"p50_us":`...), r.P50Us)
	dst = AppendFloat(append(dst, `,"p99_us":`...), r.P99Us)
	dst = AppendFloat(append(dst, `,"max_us":`...), r.MaxUs)
	return append(dst, '}')
}

func appendUintField(dst []byte, key string, v uint64) []byte {
	return strconv.AppendUint(append(dst, key...), v, 10)
}
