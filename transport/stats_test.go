package transport

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/protocol"
)

// TestStatsWithoutDevices: GET /stats?devices=none answers the simulation
// shards and the process without a device entry, the shards holding every
// simulated device and ticking; the default answer has both; any other
// value is a 400 that says what is accepted.
func TestStatsWithoutDevices(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 3, grips: 1})
	shardFigures := func(r reply) (devices int, ticks float64) {
		shards, _ := path(r.env, "data", "shards").([]any)
		for i := range shards {
			n, _ := path(shards[i], "devices").(float64)
			tk, _ := path(shards[i], "loop", "ticks").(float64)
			devices += int(n)
			ticks += tk
		}
		return devices, ticks
	}
	cases := []struct {
		query       string
		wantDevices int // entries in data.devices
	}{
		{"", 4},
		{"?devices=all", 4},
		{"?devices=none", 0},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			var before float64
			hwtest.EventuallyNil(t, 10*time.Second, "the shards tick", func() error {
				r := ts.do(http.MethodGet, ts.base+"/stats"+c.query, "")
				if r.status != http.StatusOK {
					return fmt.Errorf("status %d: %s", r.status, r.body)
				}
				list, ok := path(r.env, "data", "devices").([]any)
				if !ok || len(list) != c.wantDevices {
					return fmt.Errorf("data.devices %v, want a list of %d", path(r.env, "data", "devices"), c.wantDevices)
				}
				if path(r.env, "data", "process", "goroutines") == nil {
					return fmt.Errorf("no process figures: %s", r.body)
				}
				n, ticks := shardFigures(r)
				if n != 4 {
					return fmt.Errorf("the shards hold %d devices, want the 4 simulated ones: %s", n, r.body)
				}
				if before == 0 || ticks <= before {
					before = ticks
					return fmt.Errorf("shard ticks %v, not yet past an earlier read", ticks)
				}
				return nil
			})
		})
	}
	// devices= given empty is no value the route takes, as format= of
	// GET /devices: it answered every device, as if absent.
	for _, q := range []string{"?devices=some", "?devices=", "?devices"} {
		r := ts.do(http.MethodGet, ts.base+"/stats"+q, "")
		if r.status != http.StatusBadRequest || path(r.env, "code") != "invalid_value" || !strings.Contains(fmt.Sprint(path(r.env, "error")), "want all (the default) or none") {
			t.Fatalf("GET /stats%s: %d %.300s, want 400 invalid_value naming the values", q, r.status, r.body)
		}
	}
}

// TestStatsServesShardPasses: GET /stats serves each shard's pass
// durations (busy: count, percentiles, max, and its histogram), read over
// HTTP from running shards: the passes are counted as the shard ticks, the
// percentiles are in order and a pass of four simulated arms takes less
// than the period, and the histogram's buckets hold at least the passes
// counted (it is read after the summary).
func TestStatsServesShardPasses(t *testing.T) {
	ts := startService(t, serviceConfig{arms: 3, grips: 1})
	var before float64
	hwtest.EventuallyNil(t, 10*time.Second, "the shards' passes counted", func() error {
		r := ts.do(http.MethodGet, ts.base+"/stats?devices=none", "")
		if r.status != http.StatusOK {
			return fmt.Errorf("status %d: %s", r.status, r.body)
		}
		var doc struct {
			Data protocol.Stats `json:"data"`
		}
		if err := json.Unmarshal(r.body, &doc); err != nil {
			return fmt.Errorf("decode: %w: %s", err, r.body)
		}
		var passes float64
		for i, sh := range doc.Data.Shards {
			if sh.Devices == 0 {
				continue
			}
			b := sh.Busy
			if b.Count == 0 || b.Count > sh.Loop.Ticks {
				return fmt.Errorf("shard %d: busy.count %d with %d ticks, want 1..ticks: %s", i, b.Count, sh.Loop.Ticks, r.body)
			}
			order := []float64{b.P50Us, b.P90Us, b.P99Us, b.P999Us, b.MaxUs}
			for j := range order {
				if order[j] <= 0 || (j > 0 && order[j] < order[j-1]) {
					return fmt.Errorf("shard %d: busy percentiles %v, want positive and ascending to max", i, order)
				}
			}
			if b.P50Us >= sh.Loop.TargetUs {
				return fmt.Errorf("shard %d: a pass of %d devices takes %v µs (p50), want under the %v µs period", i, sh.Devices, b.P50Us, sh.Loop.TargetUs)
			}
			var inBuckets uint64
			for _, bk := range sh.BusyBuckets {
				inBuckets += bk.Count
			}
			if inBuckets < b.Count {
				return fmt.Errorf("shard %d: busy_buckets hold %d passes, busy.count %d", i, inBuckets, b.Count)
			}
			if last := sh.BusyBuckets[len(sh.BusyBuckets)-1].UpperUs; last < b.MaxUs {
				return fmt.Errorf("shard %d: the last busy bucket ends at %v µs, below the max %v", i, last, b.MaxUs)
			}
			passes += float64(b.Count)
		}
		if before == 0 || passes <= before {
			before = passes
			return fmt.Errorf("%v passes, not yet past an earlier read", passes)
		}
		return nil
	})
}
