package store

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// benchDoc is about the size of a device's session config.
var benchDoc = map[string]any{
	"preset": "custom",
	"basis":  map[string]string{"permutation": "XZY"},
	"mount": map[string]any{"position": map[string]float64{"x": 0.01, "y": 0.02, "z": 0.03},
		"rotation": map[string]float64{"w": 1}, "scale": map[string]float64{"x": 1, "y": 1, "z": 1}},
	"damping":    map[string]float64{"scalar": 2},
	"force_gate": map[string]float64{"gain": 0.3},
}

// BenchmarkBaselineWriteFile is the same bytes with os.WriteFile: no temp
// file, no fsync, no rename. Save's cost is reported as a multiple of it.
func BenchmarkBaselineWriteFile(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	data, err := encodeDocument("devices/arm3-049D", benchDoc)
	if err != nil {
		b.Fatal(err)
	}
	p := filepath.Join(s.Dir(), "doc.json")
	for b.Loop() {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSave is what an HTTP POST of a config entry waits for.
func BenchmarkSave(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := s.Save("devices/arm3-049D", benchDoc); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteBehindPut is what a WebSocket configure costs the device
// actor: an encode and a map store, no disk.
func BenchmarkWriteBehindPut(b *testing.B) {
	s, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	w := s.NewWriteBehind(time.Hour)
	defer w.Close()
	for b.Loop() {
		w.Put("profiles/p/arm3-049D", benchDoc)
	}
	b.StopTimer()
	if err := w.Flush(); err != nil { // the round trip: the last value lands
		b.Fatal(err)
	}
}
