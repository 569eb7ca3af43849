package bench

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSearchCapacityFindsTheLargestPassingN(t *testing.T) {
	tests := []struct {
		name      string
		threshold int // the largest N that passes
		max       int
		precision float64
		want      int
		wantAtMax bool
	}{
		{"nothing passes", 0, 1024, 1e-9, 0, false},
		{"one arm", 1, 1024, 1e-9, 1, false},
		{"between powers of two", 37, 1024, 1e-9, 37, false},
		{"a power of two", 256, 1024, 1e-9, 256, false},
		{"beyond max", 5000, 1024, 1e-9, 1024, true},
		{"max not a power of two", 5000, 1000, 1e-9, 1000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := CapacityOptions{Max: tt.max, Precision: tt.precision}
			o.defaults()
			o.Precision = tt.precision
			res, err := searchCapacity(context.Background(), o, func(n int) (CapacityProbe, error) {
				return CapacityProbe{Arms: n, Pass: n <= tt.threshold}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.Capacity != tt.want || res.AtMax != tt.wantAtMax {
				t.Errorf("capacity %d (at max %v), want %d (at max %v); probes %+v", res.Capacity, res.AtMax, tt.want, tt.wantAtMax, res.Probes)
			}
			for _, p := range res.Probes {
				if p.Arms > tt.max || p.Arms < 1 {
					t.Errorf("probed %d arms, outside 1..%d", p.Arms, tt.max)
				}
			}
		})
	}
}

func TestSearchCapacityStopsWithinPrecision(t *testing.T) {
	o := CapacityOptions{Max: 1 << 20}
	o.defaults()
	res, err := searchCapacity(context.Background(), o, func(n int) (CapacityProbe, error) {
		return CapacityProbe{Arms: n, Pass: n <= 3000}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Capacity > 3000 || float64(3000-res.Capacity) > o.Precision*float64(res.Capacity) {
		t.Errorf("capacity %d, want within %.0f %% below 3000", res.Capacity, 100*o.Precision)
	}
}

func TestSearchCapacityRetriesAFailingProbe(t *testing.T) {
	o := CapacityOptions{Max: 64, Precision: 1e-9}
	o.defaults()
	calls := map[int]int{}
	res, err := searchCapacity(context.Background(), o, func(n int) (CapacityProbe, error) {
		calls[n]++
		// 4 arms fail once (noise), then pass; 16 and more always fail.
		pass := n < 16 && !(n == 4 && calls[n] == 1)
		return CapacityProbe{Arms: n, Pass: pass}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Capacity != 15 {
		t.Errorf("capacity %d, want 15: a single noisy failure at 4 must not end the search", res.Capacity)
	}
	if calls[4] != 2 || calls[16] != 2 {
		t.Errorf("probes per N %v: want 4 and 16 tried twice (one retry)", calls)
	}
}

func TestSearchCapacityErrors(t *testing.T) {
	o := CapacityOptions{Max: 64}
	o.defaults()
	boom := errors.New("cannot start")
	if _, err := searchCapacity(context.Background(), o, func(n int) (CapacityProbe, error) {
		return CapacityProbe{Arms: n}, boom
	}); !errors.Is(err, boom) {
		t.Errorf("first probe error: got %v, want it returned", err)
	}
	// A later error is a failure at that N, not the end of the search.
	res, err := searchCapacity(context.Background(), o, func(n int) (CapacityProbe, error) {
		if n > 8 {
			return CapacityProbe{Arms: n, Error: "crashed"}, boom
		}
		return CapacityProbe{Arms: n, Pass: true}, nil
	})
	if err != nil || res.Capacity != 8 {
		t.Errorf("capacity %d, %v; want 8 and no error", res.Capacity, err)
	}
}

func TestCapacityTable(t *testing.T) {
	rep := CapacityReport{LoopHz: 1000, OverrunLimit: 0.01, WindowS: 3, Machine: Machine{GoVersion: "go1.26.8", CPUs: 2},
		Service:  CapacityResult{Capacity: 3000, Probes: []CapacityProbe{{Arms: 2048, Pass: true, OverrunFraction: 0.001}, {Arms: 4096, OverrunFraction: 0.2}}},
		BareLoop: &CapacityResult{Capacity: 8192, AtMax: true, Probes: []CapacityProbe{{Arms: 8192, Pass: true, NsPerStep: 80}}},
		Ratio:    3000.0 / 8192, RatioIsUpperBound: true}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"capacity (arms)", "3000", "≥ 8192", "bare loop", "≤ 0.37x", "4096", "fail", "20.00"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("capacity table lacks %q:\n%s", want, b.String())
		}
	}
}

// TestCapacityWindowOutlastsALateRead: on a loaded machine the first
// /stats read may come back late; the probe still measures a whole window
// after it, so an over-capacity service is not judged on the few ticks of
// a window cut short (TestCapacityAgainstFakeProcesses flaked so under a
// load average of 40, its fake's overrun count rounding to zero).
func TestCapacityWindowOutlastsALateRead(t *testing.T) {
	f := newFake(2, fakeFaults{overrunPermille: 100})
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reads.Add(1) == 1 {
			// A read served well past the window's planned end.
			time.Sleep(300 * time.Millisecond)
		}
		f.stats(w, r)
	}))
	t.Cleanup(srv.Close)
	const window = 150 * time.Millisecond
	win := readCapacityWindow(context.Background(), srv.URL, 10*time.Millisecond, window)
	if win.err != nil {
		t.Fatal(win.err)
	}
	if win.elapsed < window {
		t.Errorf("window %s, want at least %s after the late read", win.elapsed, window)
	}
	lf, _, err := capacityFigures(win, 2)
	if err != nil {
		t.Fatal(err)
	}
	if lf.Ticks < uint64(window.Milliseconds())*9/10 || lf.OverrunFractionWorst < 0.05 {
		t.Errorf("window figures: %d ticks, overrun fraction %g; want the whole window's ticks and the fake's 10 %% overruns", lf.Ticks, lf.OverrunFractionWorst)
	}
}

// TestCapacityFiguresFromShardsOrDevices: a probe reads /stats without the
// device entries and takes the window from the shards, the period p99 the
// window's; from a hapticd whose /stats lists no shards (an older binary
// in a before-and-after run) it takes the same figures from every device;
// a service holding another number of arms than it was started with fails
// the probe either way.
func TestCapacityFiguresFromShardsOrDevices(t *testing.T) {
	cases := []struct {
		name    string
		faults  fakeFaults
		arms    int
		wantP99 float64
		wantErr string
	}{
		{"shards", fakeFaults{overrunPermille: 20}, 3, 2048, ""},
		{"no shards", fakeFaults{overrunPermille: 20, noShards: true}, 3, 1030, ""},
		{"shards, arms missing", fakeFaults{overrunPermille: 20}, 4, 0, "holds 3 devices on its shards"},
		{"no shards, arms missing", fakeFaults{overrunPermille: 20, noShards: true}, 4, 0, "lists 3 arms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(3, c.faults)
			var queries []string
			var mu sync.Mutex
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				queries = append(queries, r.URL.RawQuery)
				mu.Unlock()
				f.stats(w, r)
			}))
			t.Cleanup(srv.Close)
			const window = 200 * time.Millisecond
			win := readCapacityWindow(context.Background(), srv.URL, 10*time.Millisecond, window)
			if win.err != nil {
				t.Fatal(win.err)
			}
			if len(win.after.Devices) != 0 && !c.faults.noShards {
				t.Errorf("the window's /stats held %d device entries, want none", len(win.after.Devices))
			}
			mu.Lock()
			if len(queries) != 2 || queries[0] != "devices=none" || queries[1] != "devices=none" {
				t.Errorf("queries %q, want two of devices=none", queries)
			}
			mu.Unlock()
			lf, _, err := capacityFigures(win, c.arms)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if lf.Ticks < uint64(window.Milliseconds())*9/10 || lf.OverrunFractionWorst < 0.01 || lf.OverrunFractionWorst > 0.03 {
				t.Errorf("%d ticks, overrun fraction %g; want the window's ticks and the fake's 2 %%", lf.Ticks, lf.OverrunFractionWorst)
			}
			if lf.PeriodP99UsWorst != c.wantP99 {
				t.Errorf("period p99 %g µs, want %g", lf.PeriodP99UsWorst, c.wantP99)
			}
		})
	}
}
