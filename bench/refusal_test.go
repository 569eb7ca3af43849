package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A command the service refuses stops a bench with the service's reason:
// the frame's errors member, which comes after every device's state, so a
// message that quoted the frame's first few hundred bytes said nothing of
// why (walk11: another client holding the arm read as a bare state dump).
func TestRefusedCommandsSayWhy(t *testing.T) {
	svc, ctx := oneArmService(t, "starts the real hapticd; skipped with -short")
	holdArm(t, ctx, svc.wsURL)

	tests := []struct {
		name string
		run  func() error
	}{
		{"zwidth servo home", func() error {
			ctl, err := dialClient(ctx, svc.wsURL, 0, RoleController, 0, realtimeTimeout, subscribeTo{})
			if err != nil {
				return err
			}
			defer ctl.close()
			start, err := armPositionForce(ctl.inventory, ctl.deviceID)
			if err != nil {
				return err
			}
			rt := realtimeRun{ctx: ctx, ctl: ctl, home: start.pos}
			_, err = rt.goHome()
			return err
		}},
		{"lease", func() error {
			_, err := Lease(ctx, LeaseOptions{Target: svc.wsURL, Stalls: 1, Hold: 50 * time.Millisecond})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil || !strings.Contains(err.Error(), "device_busy") {
				t.Errorf("error %v, want one quoting the service's device_busy", err)
			}
		})
	}
}

// holdArm keeps the service's first arm under another session's control
// (a force command renewed well within its lease) until the test ends.
func holdArm(t *testing.T, ctx context.Context, wsURL string) {
	t.Helper()
	holder, err := dialClient(ctx, wsURL, 0, RoleController, 0, realtimeTimeout, subscribeTo{})
	if err != nil {
		t.Fatal(err)
	}
	push := fmt.Appendf(nil, `{"arm3":[{"device_id":%q,"commands":{"set_cursor_force":{"vector":{"x":0,"y":0,"z":0}}}}]}`, holder.deviceID)
	if _, err := holder.exchange(push); err != nil {
		t.Fatal(err)
	}
	hold, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for waitUntil(hold, time.Now().Add(10*time.Millisecond)) {
			if _, err := holder.exchange(push); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		stop()
		<-done
		holder.close()
	})
}
