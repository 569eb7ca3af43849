package protocol

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"
)

// statsDoc is a /stats document of n devices, every field set, every
// third one remote, with names that need escaping.
func statsDoc(n int) Stats {
	s := Stats{Process: ProcessStats{CPUSeconds: 12.345678, RSSBytes: 1 << 33, HeapBytes: 123456789,
		HeapLiveBytes: 98765432, StackBytes: 1 << 20, Goroutines: 42, GCCount: 7, GCPauseTotalNs: 1234567, Sessions: 3}}
	for i := range n {
		d := DeviceStats{DeviceType: "inverse3", DeviceID: fmt.Sprintf("%04X", i), Simulated: i%2 == 0,
			Loop: LoopStats{TargetUs: 1000, PeriodUsP50: 1048.575, PeriodUsP99: 15728.639 + float64(i), PeriodUsMax: 35908.027e3,
				Overruns: uint64(i) * 3, Ticks: 1234567 + uint64(i), Realtime: i%5 == 0},
			Exchange: RoundTripStats{Count: uint64(i), P50Us: 0.043, P99Us: 1e-7 * float64(i), MaxUs: 2.5e21},
			Errors:   uint64(i % 4)}
		if i%3 == 0 {
			d.DeviceID = `a"b\<&>` + d.DeviceID
			d.Remote = &RemoteStats{NodeID: "node-b", NodeURL: "http://10.0.0.2:8080", StateAge: RoundTripStats{Count: 9, P50Us: 120.5, P99Us: 480, MaxUs: 1e6}}
		}
		s.Devices = append(s.Devices, d)
	}
	for i := range min(n, 2) {
		s.Shards = append(s.Shards, ShardStats{Devices: 100 + i, Loop: LoopStats{TargetUs: 1000, PeriodUsP50: 1000.5, PeriodUsP99: 2047.75, Overruns: 3, Ticks: 9000, Realtime: i == 1},
			PeriodBuckets: []HistogramBucket{{UpperUs: 0.875, Count: 1}, {UpperUs: 1024.5, Count: 8999}},
			Busy:          DurationStats{Count: 9000, P50Us: 412.5, P90Us: 450.25, P99Us: 767, P999Us: 1023.5, MaxUs: 35908.027e3},
			BusyBuckets:   []HistogramBucket{{UpperUs: 415.75, Count: 8990}, {UpperUs: 35908.027e3, Count: 10}}})
	}
	if n == 1 {
		s.Shards[0].PeriodBuckets = nil
		s.Shards[0].BusyBuckets = nil
	}
	return s
}

// TestAppendStatsDecodesAsEncodingJSON: what AppendStats writes decodes to
// the same document as encoding/json's encoding, with no devices, one, and
// many with remotes and escaped names, and into Stats back to the input.
func TestAppendStatsDecodesAsEncodingJSON(t *testing.T) {
	for _, n := range []int{0, 1, 7} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			doc := statsDoc(n)
			if n == 0 {
				doc.Devices = []DeviceStats{}
			}
			got := AppendStats(nil, &doc)
			want, err := json.Marshal(&doc)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("AppendStats wrote invalid JSON (%v): %s", err, got)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Fatalf("AppendStats wrote\n%s\nencoding/json\n%s", got, want)
			}
			var back Stats
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, doc) {
				t.Fatalf("decoded back to\n%+v\nwant\n%+v", back, doc)
			}
		})
	}
}

// TestAppendStatsWritesNoNaN: a figure that is not a number (no sample
// yet, a division by zero) still leaves valid JSON.
func TestAppendStatsWritesNoNaN(t *testing.T) {
	doc := statsDoc(1)
	doc.Devices[0].Loop.PeriodUsP99 = math.NaN()
	doc.Process.CPUSeconds = math.Inf(1)
	var v any
	if b := AppendStats(nil, &doc); json.Unmarshal(b, &v) != nil {
		t.Fatalf("invalid JSON: %s", b)
	}
}

// BenchmarkStatsEncoding is GET /stats's body for 22,528 simulated arms:
// AppendStats beside encoding/json in the same run.
func BenchmarkStatsEncoding(b *testing.B) {
	doc := statsDoc(22528)
	b.Run("AppendStats", func(b *testing.B) {
		var buf []byte
		for range b.N {
			buf = AppendStats(buf[:0], &doc)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("encoding-json", func(b *testing.B) {
		for range b.N {
			out, _ := json.Marshal(&doc)
			b.SetBytes(int64(len(out)))
		}
	})
}

// TestWindowQuantileUs: a window's quantile is taken from the counts the
// buckets gained between two reads, not from the whole run: a run whose
// start was slow and whose window was on time has an on-time window p99.
func TestWindowQuantileUs(t *testing.T) {
	b := func(upper float64, n uint64) HistogramBucket { return HistogramBucket{UpperUs: upper, Count: n} }
	cases := []struct {
		name          string
		before, after []HistogramBucket
		q             float64
		want          float64
		wantOK        bool
	}{
		{"nothing before", nil, []HistogramBucket{b(1000, 98), b(2000, 2)}, 0.99, 2000, true},
		{"slow start left out", []HistogramBucket{b(1000, 10), b(9000, 50)}, []HistogramBucket{b(1000, 1010), b(9000, 50)}, 0.99, 1000, true},
		{"a bucket new in the window", []HistogramBucket{b(1000, 10)}, []HistogramBucket{b(1000, 60), b(1500, 50)}, 0.5, 1000, true},
		{"the window's median in the upper bucket", []HistogramBucket{b(1000, 10)}, []HistogramBucket{b(1000, 60), b(1500, 51)}, 0.5, 1500, true},
		{"no tick in the window", []HistogramBucket{b(1000, 10)}, []HistogramBucket{b(1000, 10)}, 0.99, 0, false},
		{"p0 is the lowest bucket gained", nil, []HistogramBucket{b(500, 1), b(1000, 9)}, 0, 500, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := WindowQuantileUs(c.before, c.after, c.q)
			if got != c.want || ok != c.wantOK {
				t.Fatalf("WindowQuantileUs = %v, %v; want %v, %v", got, ok, c.want, c.wantOK)
			}
		})
	}
}
