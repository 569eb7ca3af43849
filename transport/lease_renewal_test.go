package transport

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Only a control command renews a session's lease (docs/protocol.md,
// Forces and safety): a client that stops commanding but keeps its socket
// busy with keep_alive, a transform, an empty device entry or a configure
// every 5 ms sees its force end within the lease plus the 20 ms ramp. The
// control row is the same loop sending the force again: it must keep the
// force, so the measurement sees a renewal where there is one.
func TestOnlyAControlCommandRenewsTheLease(t *testing.T) {
	const leaseMs = 100
	// Generous for a loaded machine; a renewing message would hold the
	// force for as long as it is sent, far past this.
	const slack = 1500 * time.Millisecond
	bound := leaseMs*time.Millisecond + 20*time.Millisecond + slack
	tests := []struct {
		name   string
		filler string // "$ID" stands for the arm's id
		renews bool
	}{
		{"keep_alive as a message member", `{"keep_alive":true}`, false},
		{"keep_alive as a session key", `{"session":{"keep_alive":true}}`, false},
		{"keep_alive as a device command", `{"arm3":[{"device_id":"$ID","commands":{"keep_alive":true}}]}`, false},
		{"set_transform", `{"arm3":[{"device_id":"$ID","commands":{"set_transform":{"position":{"x":0,"y":0,"z":0}}}}]}`, false},
		{"an empty device entry", `{"arm3":[{"device_id":"$ID"}]}`, false},
		{"configure", `{"arm3":[{"device_id":"$ID","configure":{"filters":{"damping":{"scalar":0}}}}]}`, false},
		{"set_cursor_force (a control command)", `{"arm3":[{"device_id":"$ID","commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":2}}}}]}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startService(t, serviceConfig{arms: 1})
			id := ts.armIDs[0]
			c := ts.dial(t, ts.wsURL())
			c.expect()
			c.roundTrip(fmt.Sprintf(`{"session":{"configure":{"lease":{"ms":%d}}}}`, leaseMs))
			forceZ := func(f map[string]any) float64 {
				return vec(path(f, "arm3", 0, "state", "current_cursor_force"))[2]
			}
			// The last force command is answered once the loop applies it.
			forceOn := func() time.Time {
				deadline := time.Now().Add(5 * time.Second)
				for {
					f := c.roundTrip(force(id, 0, 0, 2))
					at := time.Now()
					if forceZ(f) > 1.9 {
						return at
					}
					if time.Now().After(deadline) {
						t.Fatalf("the 2 N force never reached the frames: %v", f)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			lastForce := forceOn()
			filler := strings.ReplaceAll(tt.filler, "$ID", id)
			lastSent := lastForce
			const maxStalls = 5
			stalls := 0
			for {
				sent := time.Now()
				f := c.roundTrip(filler)
				if errs := f["errors"]; errs != nil {
					t.Fatalf("%s refused: %v", filler, errs)
				}
				z, since := forceZ(f), time.Since(lastForce)
				gap := sent.Sub(lastSent)
				lastSent = sent
				if z == 0 {
					if tt.renews {
						if gap > leaseMs*time.Millisecond {
							// The test's own client stalled past the
							// lease (a loaded machine): the lapse was
							// due. Put the force on again and measure
							// the renewal again, a few times at most.
							if stalls++; stalls > maxStalls {
								t.Fatalf("the client stalled past the %d ms lease %d times (the last %v): the machine is too loaded to measure a renewal", leaseMs, stalls, gap)
							}
							t.Logf("the client stalled %v between two force commands; measuring again", gap)
							lastForce = forceOn()
							lastSent = lastForce
							continue
						}
						t.Fatalf("the force ended %v after the last force command with the force re-sent every 5 ms (the last gap between two sends %v)", since, gap)
					}
					return
				}
				if since > bound {
					if tt.renews {
						return
					}
					t.Fatalf("after %v of %s every 5 ms, %.3f N still on the arm: the lease (%d ms) did not lapse", since, tt.name, z, leaseMs)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
