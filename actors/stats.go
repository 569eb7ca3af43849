package actors

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"

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
				Realtime:    st.Realtime,
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

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

// rssBytes is the process's resident set as the kernel counts it
// (/proc/self/statm on Linux, cgo shims and thread stacks included);
// elsewhere, the memory the Go runtime has mapped and not released.
func rssBytes() uint64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseUint(f[1], 10, 64); err == nil {
				return pages * uint64(os.Getpagesize())
			}
		}
	}
	sample := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 || sample[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64() - sample[1].Value.Uint64()
}
