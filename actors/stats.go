package actors

import (
	"runtime"
	"runtime/metrics"
	"syscall"

	"github.com/hapticd/hapticd/actors/loop"
)

// StatsDoc is what GET /stats answers: each device loop's own measurements
// and the process's resource use, for load tests and operators.
type StatsDoc struct {
	Devices []DeviceStats `json:"devices"`
	Process ProcessStats  `json:"process"`
}

// DeviceStats is one device's loop and transport figures.
type DeviceStats struct {
	DeviceType string       `json:"device_type"`
	DeviceID   string       `json:"device_id"`
	Simulated  bool         `json:"simulated"`
	Loop       LoopStats    `json:"loop"`
	Exchange   SummaryStats `json:"exchange"`
	Errors     uint64       `json:"errors"`
}

// LoopStats is a loop's period histogram summary in microseconds.
type LoopStats struct {
	TargetUs    float64 `json:"target_us"`
	PeriodUsP50 float64 `json:"period_us_p50"`
	PeriodUsP99 float64 `json:"period_us_p99"`
	PeriodUsMax float64 `json:"period_us_max"`
	Overruns    uint64  `json:"overruns"`
	Ticks       uint64  `json:"ticks"`
}

// SummaryStats is a round-trip histogram summary in microseconds.
type SummaryStats struct {
	Count uint64  `json:"count"`
	P50Us float64 `json:"p50_us"`
	P99Us float64 `json:"p99_us"`
	MaxUs float64 `json:"max_us"`
}

// ProcessStats is the process's resource use.
type ProcessStats struct {
	CPUSeconds     float64 `json:"cpu_seconds"`
	RSSBytes       uint64  `json:"rss_bytes"`
	HeapBytes      uint64  `json:"heap_bytes"`
	Goroutines     int     `json:"goroutines"`
	GCCount        uint32  `json:"gc_count"`
	GCPauseTotalNs uint64  `json:"gc_pause_total_ns"`
	Sessions       int     `json:"sessions"`
}

// StatsDoc gathers the figures now. Reading loop stats is lock-free.
func (s *Service) StatsDoc() StatsDoc {
	doc := StatsDoc{Devices: []DeviceStats{}}
	for _, d := range s.Devices().All() {
		st := d.Stats()
		doc.Devices = append(doc.Devices, DeviceStats{
			DeviceType: d.Type.Key(),
			DeviceID:   d.ID,
			Simulated:  d.Info.Simulated,
			Loop: LoopStats{
				TargetUs:    us(st.TargetNs),
				PeriodUsP50: us(st.Period.P50Ns),
				PeriodUsP99: us(st.Period.P99Ns),
				PeriodUsMax: us(st.Period.MaxNs),
				Overruns:    st.Overruns,
				Ticks:       st.Ticks,
			},
			Exchange: summary(st.Exchange),
			Errors:   st.Errors,
		})
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	doc.Process = ProcessStats{
		CPUSeconds:     cpuSeconds(),
		RSSBytes:       rssBytes(),
		HeapBytes:      ms.HeapAlloc,
		Goroutines:     runtime.NumGoroutine(),
		GCCount:        ms.NumGC,
		GCPauseTotalNs: ms.PauseTotalNs,
		Sessions:       len(s.Sessions()),
	}
	return doc
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

func summary(s loop.Summary) SummaryStats {
	return SummaryStats{Count: s.Count, P50Us: us(s.P50Ns), P99Us: us(s.P99Ns), MaxUs: us(s.MaxNs)}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// rssBytes reads the resident set from the runtime's view of mapped memory
// that is in use; the process RSS itself is not portable to read.
func rssBytes() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64() - sample[1].Value.Uint64()
}
