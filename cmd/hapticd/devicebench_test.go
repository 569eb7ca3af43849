package main

import (
	"bufio"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/hapticd/hapticd/protocol"
)

// TestDeviceStandinTimesTheBareLoop runs the two halves of `hapticbench
// device` against each other: the stand-in arm on a pseudo-terminal sees
// the bare loop's force frames and reports their periods.
func TestDeviceStandinTimesTheBareLoop(t *testing.T) {
	standIn, toStandIn := io.Pipe()
	fromStandIn, standOut := io.Pipe()
	standDone := make(chan error, 1)
	go func() {
		err := runDeviceStandin([]string{"--loop-hz", "500", "--index", "901"}, standIn, standOut)
		standOut.CloseWithError(err)
		standDone <- err
	}()
	lines := bufio.NewScanner(fromStandIn)
	if !lines.Scan() {
		t.Fatalf("the stand-in printed no path: %v", lines.Err())
	}
	path := lines.Text()

	loopIn, toLoop := io.Pipe()
	loopDone := make(chan error, 1)
	go func() { loopDone <- runBaselineDevice([]string{"--port", path, "--loop-hz", "500"}, loopIn) }()

	var got protocol.DeviceTiming
	deadline := time.Now().Add(20 * time.Second)
	for got.Frames < 50 {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in saw %d force frames in 20 s, want 50", got.Frames)
		}
		if _, err := io.WriteString(toStandIn, "report\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no report: %v", lines.Err())
		}
		if err := json.Unmarshal(lines.Bytes(), &got); err != nil {
			t.Fatalf("report %q: %v", lines.Text(), err)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, not an assertion
	}
	if got.TargetUs != 2000 || got.PeriodUsP50 <= 0 || got.PeriodUsMax < got.PeriodUsP99 || got.PeriodUsP99 < got.PeriodUsP50 {
		t.Errorf("timing %+v, want a 2000 µs target and ordered percentiles", got)
	}
	toLoop.Close()
	if err := <-loopDone; err != nil {
		t.Errorf("baseline-device: %v", err)
	}
	toStandIn.Close()
	go func() { _, _ = io.Copy(io.Discard, fromStandIn) }()
	if err := <-standDone; err != nil {
		t.Errorf("device-standin: %v", err)
	}
}
