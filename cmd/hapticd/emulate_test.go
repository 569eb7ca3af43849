package main

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
)

// --emulate drives one emulated device of each family through the real
// serial drivers, and --emulate-arms N still emulates N Inverse3s: each
// is listed in /devices in its family's array, with its family's type,
// device type number and versions, an arm resting at its family's rest
// position (a Minverse at y 0.12, z 0.08, as the simulated one), and none
// is simulated. Only the Inverse3 could be emulated, and an emulator
// announcing a Minverse stepped Inverse3 physics.
func TestEmulateFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	all := sim.Fleet{}
	for _, spec := range sim.Families() {
		all = append(all, sim.FleetEntry{Family: spec.Family, Count: 1})
	}
	for _, tc := range []struct {
		name string
		args []string
		want sim.Fleet
	}{
		{"--emulate-arms 1", []string{"--emulate-arms", "1"}, sim.Fleet{{Family: sim.FamilyInverse3, Count: 1}}},
		{"--emulate every family", []string{"--emulate", all.String()}, all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--state-dir", t.TempDir(), "--type-names", "haply", "--sim-arms", "0", "--sim-grips", "0", "--hw-scan-period", "0"}, tc.args...)
			d := startProcess(t, bin, args...)
			hwtest.EventuallyNil(t, 15*time.Second, "every emulated device listed at rest", func() error {
				_, doc := httpDo(t, "GET", d.url("/devices"), "")
				listed := 0
				for _, e := range tc.want {
					spec := e.Family.Spec()
					array := spec.Name // a grip's array is its family's
					if spec.Kind == hw.KindArm {
						array = "inverse3"
					}
					var dev any
					for _, el := range doc[array].([]any) {
						if hwtest.JSONPath(el, "config", "type") == spec.Name {
							dev = el
						}
					}
					if dev == nil {
						return fmt.Errorf("no %s in %q: %v", spec.Name, array, doc[array])
					}
					listed++
					info := hwtest.JSONPath(dev, "config", "device_info")
					if hwtest.JSONPath(info, "device_type") != float64(spec.Model) || hwtest.JSONPath(info, "major_version") != float64(spec.FirmwareVersion) ||
						hwtest.JSONPath(info, "minor_version") != float64(spec.HardwareVersion) || hwtest.JSONPath(info, "id") != hwtest.JSONPath(dev, "device_id") {
						t.Fatalf("%s: device_info %v, want device type %d, version %d.%d", spec.Name, info, spec.Model, spec.FirmwareVersion, spec.HardwareVersion)
					}
					if spec.Kind != hw.KindArm {
						// Its status read in its own layout: ready, with an
						// orientation (a wired grip read as wireless went
						// stale, or read its fields from the wrong bytes).
						q, _ := hwtest.JSONPath(dev, "state", "orientation").(map[string]any)
						norm := 0.0
						for _, c := range q {
							v, _ := c.(float64)
							norm += v * v
						}
						if hwtest.JSONPath(dev, "status", "ready") != true || math.Abs(norm-1) > 0.01 {
							return fmt.Errorf("%s: status %v, orientation %v; want ready, a rotation", spec.Name, hwtest.JSONPath(dev, "status"), q)
						}
						continue
					}
					for axis, want := range map[string]float64{"x": spec.WorkspaceCenterM.X, "y": spec.WorkspaceCenterM.Y, "z": spec.WorkspaceCenterM.Z} {
						if got, _ := hwtest.JSONPath(dev, "state", "cursor_position", axis).(float64); math.Abs(got-want) > 0.002 {
							return fmt.Errorf("%s rests at %v, want its family's centre %v", spec.Name, hwtest.JSONPath(dev, "state", "cursor_position"), spec.WorkspaceCenterM)
						}
					}
				}
				_, stats := httpDo(t, "GET", d.url("/stats"), "")
				devs, _ := hwtest.JSONPath(stats, "data", "devices").([]any)
				if len(devs) != listed {
					return fmt.Errorf("/stats lists %d devices, want %d: %v", len(devs), listed, devs)
				}
				for _, dev := range devs {
					if hwtest.JSONPath(dev, "simulated") != false {
						t.Fatalf("an emulated device is simulated: %v", dev)
					}
				}
				return nil
			})
		})
	}
}

// --emulate parses as --sim does, keeps --emulate-arms as its shorthand,
// and refuses what is ambiguous or past a family's emulated indices.
func TestEmulateFlagParsing(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // the emulated fleet, or the error's start
	}{
		{nil, "inverse3=0"},
		{[]string{"--emulate-arms", "2"}, "inverse3=2"},
		{[]string{"--emulate", "minverse=1,verse_grip=1"}, "minverse=1,verse_grip=1"},
		{[]string{"--emulate", "minverse=1", "--emulate-arms", "2"}, "minverse=1,inverse3=2"},
		{[]string{"--emulate", "inverse3=1", "--emulate-arms", "2"}, "error: --emulate-arms and --emulate inverse3=1 both say how many inverse3 to emulate"},
		{[]string{"--emulate", "gadget=1"}, "error: invalid value"},
		{[]string{"--emulate", "minverse=4096"}, "minverse=4096"},
		{[]string{"--emulate", "minverse=4097"}, "error: --emulate minverse=4097 with --sim-index-base 0"},
		{[]string{"--emulate", "verse_grip=1", "--sim-index-base", "4096"}, "error: --emulate verse_grip=1 with --sim-index-base 4096"},
		{[]string{"--emulate-arms", "-1"}, "error: --sim-arms, --sim-grips and --emulate-arms must not be negative"},
	} {
		o, err := parseFlags(tt.args)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			got = o.emulated.String()
		}
		if !strings.HasPrefix(got, tt.want) {
			t.Errorf("%q: %s, want %s", tt.args, got, tt.want)
		}
	}
}
