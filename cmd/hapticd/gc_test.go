package main

import (
	"runtime/debug"
	"testing"
)

// TestTuneGCHonoursTheEnvironment: the service's GOGC applies only when the
// operator set none.
func TestTuneGCHonoursTheEnvironment(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	tuneGC(func(k string) (string, bool) { return "200", k == "GOGC" })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("with GOGC set, the GC percent became %d; the operator's setting must stand", got)
	}
	tuneGC(func(string) (string, bool) { return "", false })
	if got := debug.SetGCPercent(100); got != serviceGCPercent {
		t.Fatalf("with no GOGC, the GC percent is %d, want %d", got, serviceGCPercent)
	}
}
