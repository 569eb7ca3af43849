//go:build linux

package main

import (
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/sim"
)

// faultyGrip is a simulated grip whose firmware reports an error while
// failing is set: the emulator then streams status frames with error 1.
type faultyGrip struct {
	hw.Driver
	failing *atomic.Bool
}

func (g faultyGrip) Exchange(cmd *hw.Command, st *hw.State) error {
	err := g.Driver.Exchange(cmd, st)
	if g.failing.Load() {
		st.Status &^= hw.StatusReady
	}
	return err
}

// labDeviceByUUID finds a device of any type in m's /devices by its UUID;
// nil while there is none (or m does not answer: callers poll).
func labDeviceByUUID(t *testing.T, m *labMember, uuid string) map[string]any {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(m.url("/devices"))
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body map[string][]map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("GET /devices on %s: %v", m.host, err)
	}
	for _, l := range body {
		for _, d := range l {
			if armUUID(d) == uuid {
				return d
			}
		}
	}
	return nil
}

// A wired grip's firmware error crosses the lab: the node's real serial
// driver reads it from the emulated firmware on a pseudo-terminal, and the
// gateway's clients see the same status.error, set and then cleared.
func TestLabWiredGripError(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs two processes against an emulated grip")
	}
	var failing atomic.Bool
	emu, pts, err := emulator.StartPTY(emulator.Options{Kind: hw.KindGrip, Index: 5,
		Physics: faultyGrip{Driver: sim.NewGrip(sim.GripOptions{Index: 5, Link: hw.LinkWired}), failing: &failing}})
	if err != nil {
		hwtest.SkipIfUnsupported(t, err)
		t.Fatalf("no emulated grip: %v", err)
	}
	t.Cleanup(func() { _ = emu.Close() })

	lab := newTestLab(t, buildBinary(t), labHostA, labHostGW)
	a := lab.node(labHostA, "--hw-port", "wired-grip:"+pts, "--hw-scan-period", "0")
	gw := lab.gateway(labHostGW)

	// The grip's UUID as the node reports it.
	var uuid string
	waitLab(t, 10*time.Second, "the wired grip on the node", func() bool {
		for _, d := range labDevices(t, a, "grip") {
			if path(d, "status", "error") != nil { // only a wired grip has one
				uuid = armUUID(d)
			}
		}
		return uuid != ""
	})
	errorOn := func(m *labMember) any { return path(labDeviceByUUID(t, m, uuid), "status", "error") }
	waitLab(t, 10*time.Second, "the wired grip on the gateway, without error", func() bool {
		return errorOn(gw) == 0.0
	})
	for _, tt := range []struct {
		failing bool
		want    float64
	}{{true, 1}, {false, 0}} {
		failing.Store(tt.failing)
		waitLab(t, 5*time.Second, "the node's grip error", func() bool { return errorOn(a) == tt.want })
		took := waitLab(t, 5*time.Second, "the gateway's grip error", func() bool { return errorOn(gw) == tt.want })
		t.Logf("status.error %v on the gateway %v after the node", tt.want, took)
	}
}
