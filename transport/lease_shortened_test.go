package transport

import (
	"fmt"
	"testing"
	"time"
)

// A client that shortens its lease and then goes quiet has its force end
// by the shorter lease (plus the 20 ms ramp), counted from the message
// that shortened it: the client asked for it before it fell silent, as
// docs/protocol.md has it for a shortening message refused as stale
// (tickPath.endLeaseBy). A message that only shortens the lease (no
// command on the arm) left the command the longer lease granted in force
// until that lease's end, up to 1 s after the client went quiet.
func TestShortenedLeaseEndsTheHeldForceByTheShorterLease(t *testing.T) {
	const longMs, shortMs = 1000, 100
	// Slack for a loaded machine, well under the 900 ms the long lease
	// would keep the force on.
	const slack = 400 * time.Millisecond
	bound := shortMs*time.Millisecond + 20*time.Millisecond + slack
	tests := []struct {
		name    string
		prepare func(t *testing.T, ts *testService) // before the session holds the force
		shorten string                              // the quiet client's last message
		effects bool                                // hold the arm with an effect, not a force
	}{
		{name: "lease configure", shorten: fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":%d}}}}`, shortMs)},
		{name: "lease configure, effects only", effects: true,
			shorten: fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":%d}}}}`, shortMs)},
		{name: "a profile whose stored lease is shorter",
			prepare: func(t *testing.T, ts *testService) {
				c := ts.dial(t, ts.wsURL())
				c.expect()
				c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"profile":{"name":"short"},"lease":{"ms":%d}}}}`, shortMs))
				c.conn.Close()
				time.Sleep(100 * time.Millisecond)
			},
			shorten: `{"session":{"configure":{"profile":{"name":"short"}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startService(t, serviceConfig{arms: 1})
			if tt.prepare != nil {
				tt.prepare(t, ts)
			}
			id := ts.armIDs[0]
			c := ts.dial(t, ts.wsURL())
			c.expect()
			c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":%d}}}}`, longMs))
			forceZ := func(f map[string]any) float64 {
				return vec(path(f, "arm3", 0, "state", "current_cursor_force"))[2]
			}
			hold := force(id, 0, 0, 2)
			if tt.effects {
				// A field of 2 N upwards around the arm: an effect alone.
				hold = fmt.Sprintf(`{"arm3":[{"device_id":%q,"effects":{"set":[{"id":"up","type":"field","force":{"x":0,"y":0,"z":2},"origin":{"x":0,"y":0,"z":0},"radius":5,"valid_ms":10000}]}}]}`, id)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				f := c.roundTrip(hold)
				if errs := f["errors"]; errs != nil {
					t.Fatalf("%s refused: %v", hold, errs)
				}
				if forceZ(f) > 1.9 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the 2 N force never reached the frames: %v", f)
				}
				time.Sleep(5 * time.Millisecond)
			}
			f := c.roundTrip(tt.shorten)
			quiet := time.Now()
			if errs := f["errors"]; errs != nil {
				t.Fatalf("%s refused: %v", tt.shorten, errs)
			}
			if got := num(path(f, "session", "lease_ms")); path(f, "session", "lease_ms") != nil && got != shortMs {
				t.Fatalf("lease_ms %v after %s, want %d", got, tt.shorten, shortMs)
			}
			for {
				// keep_alive renews nothing (TestOnlyAControlCommandRenewsTheLease).
				f := c.roundTrip(`{"keep_alive":true}`)
				z, since := forceZ(f), time.Since(quiet)
				if z == 0 {
					t.Logf("force ended %v after the lease was shortened to %d ms", since, shortMs)
					return
				}
				if since > bound {
					t.Fatalf("%v after the client shortened its lease to %d ms and went quiet, %.3f N still on the arm (the %d ms lease's command holds)", since, shortMs, z, longMs)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
