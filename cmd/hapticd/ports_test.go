package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/transport"
)

// TestHeldPortListedOnPorts: an arm whose port another program holds (a
// second hapticd, ModemManager, the vendor tool) was missing from GET
// /devices, and why was only in the log: a user had no answer over the
// API or the dashboard. GET /ports lists the port failed, busy, with the
// fix hint and the next try; once the holder lets go the arm loads, the
// port is listed loaded with the device GET /devices serves, and no
// longer failed.
func TestHeldPortListedOnPorts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a service against an emulated arm")
	}
	emu, pts, err := emulator.StartPTY(emulator.Options{Kind: hw.KindArm, Index: 11, PeriodS: 0.001})
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emu.Close() })
	holder, err := serial.Open(pts)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	id := fmt.Sprintf("%04X", emu.ID())

	sv := startInProcess(t, "--port", "0", "--legacy-port", "-1", "--events-port", "0", "--sim-arms", "0", "--sim-grips", "0",
		"--state-dir", filepath.Join(t.TempDir(), "state"), "--hw-port", pts, "--hw-scan-period", "0")
	base := "http://" + sv.srv.Addr(transport.ListenerHTTP).String()
	port := func() (map[string]any, error) {
		status, env := httpDo(t, "GET", base+"/ports", "")
		if status != 200 || env["ok"] != true {
			return nil, fmt.Errorf("GET /ports = %d %v", status, env)
		}
		data := env["data"].(map[string]any)
		if data["watching"] != true {
			return nil, fmt.Errorf("GET /ports: not watching: %v", data)
		}
		for _, p := range data["ports"].([]any) {
			if p := p.(map[string]any); p["path"] == pts {
				return p, nil
			}
		}
		return nil, fmt.Errorf("GET /ports lists no %s: %v", pts, data)
	}

	hwtest.EventuallyNil(t, 20*time.Second, "the held port listed failed", func() error {
		p, err := port()
		if err != nil {
			return err
		}
		if p["outcome"] != "failed" {
			return fmt.Errorf("port %v", p)
		}
		if reason, _ := p["reason"].(string); !strings.Contains(reason, "busy") {
			t.Errorf("the held port's reason %q does not say it is busy", reason)
		}
		if hint, _ := p["hint"].(string); !strings.Contains(hint, "another program holds the port") {
			t.Errorf("the held port's hint %q does not say how to fix it", hint)
		}
		if p["explicit"] != true || p["retry_at"] == nil || p["failures"].(float64) < 1 {
			t.Errorf("the held port is listed %v: want explicit, with its failures and next try", p)
		}
		return nil
	})
	if n := emu.Stats().Wakeups; n != 0 {
		t.Errorf("the held arm was woken %d times, want 0", n)
	}
	if status, env := httpDo(t, "GET", base+"/devices", ""); status != 200 || strings.Contains(fmt.Sprint(env), id) {
		t.Fatalf("GET /devices = %d %v; want the held arm missing", status, env)
	}

	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	hwtest.EventuallyNil(t, 30*time.Second, "the freed port to load and name its device", func() error {
		p, err := port()
		if err != nil {
			return err
		}
		if p["outcome"] != "loaded" || p["device_id"] != id || p["device_type"] != "inverse3" || p["reason"] != nil {
			return fmt.Errorf("port %v", p)
		}
		return nil
	})
	if status, env := httpDo(t, "GET", base+"/devices", ""); status != 200 || !strings.Contains(fmt.Sprint(env), id) {
		t.Errorf("GET /devices = %d %v; want the arm %s listed", status, env, id)
	}
}
