package actors

import (
	"runtime"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/protocol"
)

// StatsDoc gathers what GET /stats answers, now. Reading loop stats is lock-free.
func (s *Service) StatsDoc() protocol.Stats {
	doc := protocol.Stats{Devices: []protocol.DeviceStats{}}
	for _, d := range s.Devices().All() {
		st := d.Stats()
		doc.Devices = append(doc.Devices, protocol.DeviceStats{
			DeviceType: d.Type.Key(),
			DeviceID:   d.ID,
			Simulated:  d.Info.Simulated,
			Loop: protocol.LoopStats{
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
	doc.Process = protocol.ProcessStats{
		CPUSeconds:     cpuSeconds(),
		RSSBytes:       rssBytes(),
		HeapBytes:      ms.HeapAlloc,
		Goroutines:     runtime.NumGoroutine(),
		GCCount:        uint64(ms.NumGC),
		GCPauseTotalNs: ms.PauseTotalNs,
		Sessions:       len(s.Sessions()),
	}
	return doc
}

func us(ns int64) float64 { return float64(ns) / 1e3 }

func summary(s loop.Summary) protocol.RoundTripStats {
	return protocol.RoundTripStats{Count: s.Count, P50Us: us(s.P50Ns), P99Us: us(s.P99Ns), MaxUs: us(s.MaxNs)}
}

// cpuSeconds and rssBytes read the process's own figures from the OS:
// procstat_unix.go and procstat_windows.go.
