package transport

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
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
	r := ts.do(http.MethodGet, ts.base+"/stats?devices=some", "")
	if r.status != http.StatusBadRequest || path(r.env, "code") != "invalid_value" || !strings.Contains(fmt.Sprint(path(r.env, "error")), "want all (the default) or none") {
		t.Fatalf("GET /stats?devices=some: %d %s, want 400 invalid_value naming the values", r.status, r.body)
	}
}
