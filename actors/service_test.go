package actors

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
)

func startTestService(t *testing.T, dir string, log zerolog.Logger) (*Service, *Device) {
	t.Helper()
	svc, err := Start(Options{StateDir: dir, Log: log, SimShards: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := svc.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	d, err := svc.AddDevice(sim.NewArm(sim.ArmOptions{PeriodS: 0.001}), false)
	if err != nil {
		t.Fatal(err)
	}
	return svc, d
}

func TestDeviceConfigSurvivesRestartOfTheService(t *testing.T) {
	dir := t.TempDir()
	svc, d := startTestService(t, dir, zerolog.Nop())
	want := protocol.GravityCompensation{Enabled: false, ScalingFactor: 0.5}
	if _, err := svc.SetEntry(d, 0, want); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := svc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	svc2, d2 := startTestService(t, dir, zerolog.Nop())
	if d2.ID != d.ID {
		t.Fatalf("simulated arm id changed: %s then %s", d.ID, d2.ID)
	}
	got, err := svc2.Entry(d2, 0, protocol.KeyGravityCompensation)
	if err != nil || got != want {
		t.Fatalf("after a restart: %v %v, want %v", got, err, want)
	}
}

func TestCorruptStateFileStartsWithDefaults(t *testing.T) {
	dir := t.TempDir()
	svc, d := startTestService(t, dir, zerolog.Nop())
	if _, err := svc.SetEntry(d, 0, protocol.Handedness("left")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = svc.Shutdown(ctx)
	if err := writeFile(dir+"/devices/arm3-"+d.ID+".json", `{"handedness": "lef`); err != nil {
		t.Fatal(err)
	}
	svc2, d2 := startTestService(t, dir, zerolog.Nop())
	got, err := svc2.Entry(d2, 0, protocol.KeyHandedness)
	if err != nil || got != protocol.Handedness("right") {
		t.Fatalf("with a torn file: %v %v, want the default", got, err)
	}
	// The torn document is kept aside for the operator, not overwritten by
	// the next save.
	aside, _ := filepath.Glob(dir + "/devices/arm3-" + d.ID + ".json.corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("the torn file was not moved aside: %v", aside)
	}
	if b, err := os.ReadFile(aside[0]); err != nil || string(b) != `{"handedness": "lef` {
		t.Fatalf("moved aside: %q %v", b, err)
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

func TestStatsReportsTheProcess(t *testing.T) {
	svc, d := startTestService(t, "", zerolog.Nop())
	st := svc.StatsDoc()
	if len(st.Devices) != 1 || st.Devices[0].DeviceID != d.ID || !st.Devices[0].Simulated {
		t.Fatalf("devices: %+v", st.Devices)
	}
	// The resident set includes at least the Go heap in use.
	if st.Process.RSSBytes < st.Process.HeapBytes || st.Process.Goroutines == 0 {
		t.Fatalf("process: %+v", st.Process)
	}
}

// A settings change reaches the loop only: views report no setting, so
// they (and the encoded-state cache keyed by them) stay as they are.
func TestSettingChangeKeepsTheViews(t *testing.T) {
	svc, d := startTestService(t, "", zerolog.Nop())
	before := d.defaultView.Load()
	if _, err := svc.SetSetting(protocol.SettingForceScale, 0.5); err != nil {
		t.Fatal(err)
	}
	// The registry sent applyGlobals before answering, so the device
	// actor has handled it once it answers this.
	if _, err := svc.Entry(d, 0, protocol.KeyHandedness); err != nil {
		t.Fatal(err)
	}
	if d.defaultView.Load() != before {
		t.Fatal("a settings change republished the device's views")
	}
	if _, err := svc.SetEntry(d, 0, protocol.Handedness("left")); err != nil {
		t.Fatal(err)
	}
	if v := d.defaultView.Load(); v == before || v.Config.Device.Handedness != "left" {
		t.Fatal("a device-global entry did not republish the views")
	}
}

// A WriteTimeout out of its range is refused at Start, saying so, rather
// than calling off every write (too short) or outliving its requester's
// wait (too long); 0 is the default.
func TestWriteTimeoutOutOfRangeRefused(t *testing.T) {
	for _, tt := range []struct {
		within time.Duration
		ok     bool
	}{
		{-time.Second, false}, {time.Millisecond, false}, {MaxWriteTimeout + time.Second, false},
		{0, true}, {MinWriteTimeout, true}, {MaxWriteTimeout, true},
	} {
		svc, err := Start(Options{WriteTimeout: tt.within, Log: zerolog.Nop(), SimShards: 1})
		if err == nil {
			shutdown(t, svc)
		}
		if (err == nil) != tt.ok {
			t.Errorf("WriteTimeout %v: Start answered %v, want ok %v", tt.within, err, tt.ok)
		}
	}
}
