package actors

import (
	"math"
	"runtime"
	"runtime/metrics"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/protocol"
)

// RemoteDriver is implemented by drivers of a device on another host (a lab
// gateway's proxy of a node's device): GET /stats says which node it is on,
// where clients reach that node, and how old the states the loop got were.
type RemoteDriver interface {
	Remote() (nodeID, nodeURL string, stateAge loop.Summary)
}

// A StaleStateReporter is a driver whose states are read on another host
// (a lab gateway's proxy): every frame that carries the device, and GET
// /devices, warns state_stale while StateStaleness says the newest state
// is older than its bound. It is called once per such device and frame:
// it must not block or allocate.
type StaleStateReporter interface {
	// StateStaleness is how old the newest state is now (ns; 0 before the
	// first) and the age past which it is stale.
	StateStaleness() (ageNs, boundNs int64)
}

// StatsDoc gathers what GET /stats answers, now. Reading loop stats is lock-free.
func (s *Service) StatsDoc() protocol.Stats { return s.statsDoc(true) }

// ShardStatsDoc is StatsDoc without the devices (GET /stats?devices=none):
// the shards and the process, about 7 KB where 4,600 devices
// took 1.4 MB and 8 to 11 ms of CPU to gather and encode, which a load
// test reading it during its window took from the loops it measured.
func (s *Service) ShardStatsDoc() protocol.Stats { return s.statsDoc(false) }

func (s *Service) statsDoc(devices bool) protocol.Stats {
	var all []*Device
	if devices {
		all = s.Devices().All()
	}
	// Sized once: grown by append, the list of 10,000 devices' entries
	// left as much garbage again, and garbage collected while the loops
	// run steals their ticks.
	doc := protocol.Stats{Devices: make([]protocol.DeviceStats, 0, len(all)), Shards: shardStats(s.sched.Shards())}
	for _, d := range all {
		st := d.Stats()
		var remote *protocol.RemoteStats
		if r, ok := d.rt.Driver().(RemoteDriver); ok {
			node, url, age := r.Remote()
			remote = &protocol.RemoteStats{NodeID: node, NodeURL: url, StateAge: summary(age)}
		}
		doc.Devices = append(doc.Devices, protocol.DeviceStats{
			Remote:     remote,
			DeviceType: d.Name,
			DeviceID:   d.ID,
			Simulated:  d.Info.Simulated,
			Loop: protocol.LoopStats{
				TargetUs:    us(st.TargetNs),
				PeriodUsP50: us(st.Period.P50Ns),
				PeriodUsP99: us(st.Period.P99Ns),
				PeriodUsMax: us(st.Period.MaxNs),
				Overruns:    st.Overruns,
				Ticks:       st.Ticks,
				Realtime:    st.Realtime,
			},
			Exchange: summary(st.Exchange),
			Errors:   st.Errors,
		})
	}
	doc.Process = protocol.ProcessStats{
		CPUSeconds: cpuSeconds(),
		RSSBytes:   rssBytes(),
		Goroutines: runtime.NumGoroutine(),
		Sessions:   len(s.Sessions()),
	}
	readRuntimeMetrics(&doc.Process)
	return doc
}

// readRuntimeMetrics fills the Go runtime's figures from runtime/metrics,
// which reads them without stopping the world (runtime.ReadMemStats stops
// it, and with it every device loop, on each GET /stats).
func readRuntimeMetrics(p *protocol.ProcessStats) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/sched/pauses/total/gc:seconds"},
	}
	metrics.Read(samples)
	u := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0 // a metric this Go version does not have
		}
		return samples[i].Value.Uint64()
	}
	p.HeapBytes = u(0)
	p.HeapLiveBytes = u(1)
	p.StackBytes = u(2)
	p.GCCount = u(3)
	if samples[4].Value.Kind() == metrics.KindFloat64Histogram {
		p.GCPauseTotalNs = histogramTotalNs(samples[4].Value.Float64Histogram())
	}
}

// histogramTotalNs estimates the sum of a histogram of seconds: each
// bucket's count at its midpoint (its finite edge when the other is
// infinite). runtime/metrics keeps pauses as a histogram, not a sum.
func histogramTotalNs(h *metrics.Float64Histogram) uint64 {
	var total float64
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		mid := (lo + hi) / 2
		switch {
		case math.IsInf(lo, -1):
			mid = hi
		case math.IsInf(hi, 1):
			mid = lo
		}
		total += float64(n) * mid
	}
	return uint64(total * 1e9)
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

func shardStats(shards []loop.ShardStats) []protocol.ShardStats {
	out := make([]protocol.ShardStats, 0, len(shards))
	for _, sh := range shards {
		st := sh.Stats
		ps := protocol.ShardStats{Devices: sh.Devices, Loop: protocol.LoopStats{TargetUs: us(st.TargetNs),
			PeriodUsP50: us(st.Period.P50Ns), PeriodUsP99: us(st.Period.P99Ns), PeriodUsMax: us(st.Period.MaxNs),
			Overruns: st.Overruns, Ticks: st.Ticks, Realtime: st.Realtime},
			PeriodBuckets: buckets(sh.PeriodBuckets), Busy: durations(st.Busy), BusyBuckets: buckets(sh.BusyBuckets)}
		out = append(out, ps)
	}
	return out
}

// buckets is a histogram's buckets as /stats serves them, each by its
// upper bound.
func buckets(bs []loop.Bucket) []protocol.HistogramBucket {
	out := make([]protocol.HistogramBucket, 0, len(bs))
	for _, b := range bs {
		out = append(out, protocol.HistogramBucket{UpperUs: us(b.HiNs), Count: b.N})
	}
	return out
}

// durations is a distribution as /stats serves it.
func durations(s loop.Summary) protocol.DurationStats {
	return protocol.DurationStats{Count: s.Count, P50Us: us(s.P50Ns), P90Us: us(s.P90Ns), P99Us: us(s.P99Ns),
		P999Us: us(s.P999Ns), MaxUs: us(s.MaxNs)}
}

func summary(s loop.Summary) protocol.RoundTripStats {
	return protocol.RoundTripStats{Count: s.Count, P50Us: us(s.P50Ns), P99Us: us(s.P99Ns), MaxUs: us(s.MaxNs)}
}

// cpuSeconds and rssBytes read the process's own figures from the OS:
// procstat_unix.go and procstat_windows.go.
