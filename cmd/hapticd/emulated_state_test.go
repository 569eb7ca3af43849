package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw/hwtest"
)

// An emulated arm, through the real serial driver and the service, shows
// a client its whole state: calibrated and powered (the vendor's tutorial
// waits for calibrated), angles that follow the arm while it is pushed in
// force mode, and a cursor that follows it while it is driven in angle
// mode. Each reply carries only one half; the frozen half was reported
// before (docs/hardware.md, "What an arm reports").
func TestEmulatedArmReportsItsWholeState(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	d := startProcess(t, bin, "--state-dir", t.TempDir(), "--sim-arms", "0", "--sim-grips", "0", "--emulate-arms", "1", "--hw-scan-period", "0")
	s := &tutorialSession{t: t, c: dialWS(t, "ws://"+d.addr["http"]+"/")}
	var id string
	var f map[string]any
	hwtest.EventuallyNil(t, 10*time.Second, "the emulated arm in a frame", func() error {
		f = s.tick(`{}`)
		id, _ = hwtest.JSONPath(f, "arm3", 0, "device_id").(string)
		if id == "" {
			return fmt.Errorf("no arm: %v", f)
		}
		return nil
	})
	if st := hwtest.JSONPath(f, "arm3", 0, "status"); hwtest.JSONPath(st, "calibrated") != true || hwtest.JSONPath(st, "power_supply") != true {
		t.Fatalf("status %v: want calibrated and power_supply", st)
	}
	read := func(field string) string {
		return fmt.Sprint(hwtest.JSONPath(f, "arm3", 0, "state", field))
	}
	tests := []struct {
		name, command, follows string
	}{
		{"force mode", `"set_cursor_force":{"vector":{"x":1.5,"y":0,"z":1}}`, "angular_position"},
		{"angle mode", `"set_angular_position":{"angles":{"a0":25,"a1":30,"a2":-70}}`, "cursor_position"},
	}
	for _, tc := range tests {
		msg := fmt.Sprintf(`{"arm3":[{"device_id":%q,"commands":{%s}}]}`, id, tc.command)
		f = s.tick(msg)
		seen := map[string]bool{}
		hwtest.EventuallyNil(t, 20*time.Second, tc.name+": "+tc.follows+" to follow the arm", func() error {
			f = s.tick(msg)
			seen[read(tc.follows)] = true
			if len(seen) < 10 {
				return fmt.Errorf("%d values of %s so far (%s)", len(seen), tc.follows, read(tc.follows))
			}
			return nil
		})
	}
}
