package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hapticd/hapticd/bench"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/hwtest"
	"github.com/hapticd/hapticd/hw/serial"
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
	hwtest.EventuallyNil(t, 20*time.Second, "the stand-in to see 50 force frames", func() error {
		if _, err := io.WriteString(toStandIn, "report\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no report: %v", lines.Err())
		}
		if err := json.Unmarshal(lines.Bytes(), &got); err != nil {
			t.Fatalf("report %q: %v", lines.Text(), err)
		}
		if got.Frames < 50 {
			return fmt.Errorf("%d so far", got.Frames)
		}
		return nil
	})
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

// TestDeviceStandinStampsCodedForces drives the stand-in's arm through the
// serial driver with coded forces, as the service's loop passes a client's
// commands on, and checks that "arrivals" lists each change of code once,
// in order, stamped on the clock this process reads: after its send, and
// before the exchange that carried it returned, unless a reply was missed
// by then (then only after its send). A lower code and the last
// one scaled down (a ramp) are changes too: the stand-in filters nothing,
// the bench does (commandLatency).
func TestDeviceStandinStampsCodedForces(t *testing.T) {
	standIn, toStandIn := io.Pipe()
	fromStandIn, standOut := io.Pipe()
	standDone := make(chan error, 1)
	go func() {
		err := runDeviceStandin([]string{"--loop-hz", "1000", "--index", "902"}, standIn, standOut)
		standOut.CloseWithError(err)
		standDone <- err
	}()
	lines := bufio.NewScanner(fromStandIn)
	lines.Buffer(nil, 16<<20)
	if !lines.Scan() {
		t.Fatalf("the stand-in printed no path: %v", lines.Err())
	}
	p, err := serial.Open(lines.Text())
	if err != nil {
		t.Fatal(err)
	}
	arm, err := driver.OpenArm(p, driver.ArmOptions{Path: lines.Text(), PeriodS: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	// missed: this exchange or one before it gave up waiting for its
	// reply (a loaded machine delayed the stand-in past the reply timeout)
	// and returned the last state; the late reply may then answer the
	// next exchange, and so on (a state reply names no command), so from
	// a miss on a frame may reach the stand-in after its exchange returned.
	type stamp struct {
		sent, returned int64
		missed         bool
	}
	var stamps []stamp
	var st hw.State
	// Each code twice (as a loop repeats the latest command), a frame that
	// carries no code, a lower code, and 4097 again at half its force, as
	// a ramp winds a code down.
	f4097 := protocol.ForceCode(4097)
	frames := []hw.Vec3{
		code(5), code(5), code(6), code(6), {X: 0.3, Y: 0.1, Z: 0.125}, code(7), code(4097), code(4097), code(3),
		{X: f4097[0] / 2, Y: f4097[1] / 2, Z: f4097[2] / 2},
	}
	for i, f := range frames {
		cmd := hw.Command{Mode: hw.ModeForce, ForceN: f}
		sent, err := bench.MonotonicNs()
		if err != nil {
			t.Fatal(err)
		}
		missed := arm.Missed()
		if err := arm.Exchange(&cmd, &st); err != nil {
			t.Fatalf("exchange %d: %v", i, err)
		}
		returned, _ := bench.MonotonicNs()
		stamps = append(stamps, stamp{sent, returned, arm.Missed() != missed || len(stamps) > 0 && stamps[len(stamps)-1].missed})
	}
	want := []struct {
		seq   uint32
		frame int // the exchange that carried it
	}{{5, 0}, {6, 2}, {7, 5}, {4097, 6}, {3, 8}, {4097, 9}}
	// The frames of exchanges that missed their replies may still wait in
	// the terminal for the stand-in (a loaded machine: every one of them
	// was missed once, and "arrivals", on another pipe, came first), so
	// ask until they are all in.
	var got protocol.ForceArrivals
	for deadline := time.Now().Add(20 * time.Second); ; {
		if _, err := io.WriteString(toStandIn, "arrivals\n"); err != nil {
			t.Fatal(err)
		}
		if !lines.Scan() {
			t.Fatalf("no arrivals: %v", lines.Err())
		}
		got = protocol.ForceArrivals{}
		if err := json.Unmarshal(lines.Bytes(), &got); err != nil {
			t.Fatalf("arrivals %q: %v", lines.Text(), err)
		}
		if len(got.Arrivals) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if len(got.Arrivals) != len(want) {
		t.Fatalf("arrivals %+v, want %+v", got.Arrivals, want)
	}
	for i, a := range got.Arrivals {
		if a.Seq != want[i].seq {
			t.Fatalf("arrivals %+v, want %+v", got.Arrivals, want)
		}
		if s := stamps[want[i].frame]; a.MonoNs < s.sent || a.MonoNs > s.returned && !s.missed {
			t.Errorf("code %d arrived at %d ns, outside its exchange %d..%d ns on the same clock", a.Seq, a.MonoNs, s.sent, s.returned)
		}
	}
	_ = arm.Close()
	toStandIn.Close()
	go func() { _, _ = io.Copy(io.Discard, fromStandIn) }()
	if err := <-standDone; err != nil {
		t.Errorf("device-standin: %v", err)
	}
}

// code is the coded force that carries seq.
func code(seq uint32) hw.Vec3 {
	f := protocol.ForceCode(seq)
	return hw.Vec3{X: f[0], Y: f[1], Z: f[2]}
}
