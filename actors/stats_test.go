package actors

import (
	"math"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/rs/zerolog"
)

// TestStatsRuntimeFigures checks the runtime/metrics figures follow what
// the runtime does: a GC counts, and its pauses add to the total.
func TestStatsRuntimeFigures(t *testing.T) {
	svc, _ := startTestService(t, "", zerolog.Nop())
	before := svc.StatsDoc().Process
	runtime.GC()
	after := svc.StatsDoc().Process
	if after.GCCount < before.GCCount+1 {
		t.Fatalf("gc_count %d after a GC, was %d", after.GCCount, before.GCCount)
	}
	if after.GCPauseTotalNs <= before.GCPauseTotalNs {
		t.Fatalf("gc_pause_total_ns %d after a GC, was %d", after.GCPauseTotalNs, before.GCPauseTotalNs)
	}
	if after.HeapBytes == 0 || after.HeapLiveBytes == 0 || after.StackBytes == 0 {
		t.Fatalf("process: %+v", after)
	}
}

func TestHistogramTotalNs(t *testing.T) {
	inf := math.Inf(1)
	h := &metrics.Float64Histogram{
		Counts:  []uint64{1, 2, 0, 1},
		Buckets: []float64{math.Inf(-1), 1e-6, 3e-6, 1e-3, inf},
	}
	// 1 × 1 µs (the finite edge) + 2 × 2 µs + 1 × 1 ms (the finite edge).
	if got, want := histogramTotalNs(h), uint64(1000+4000+1e6); got != want {
		t.Fatalf("histogramTotalNs = %d, want %d", got, want)
	}
}
