package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/bench"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/serial"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/histogram"
)

// runDeviceStandin implements `hapticd device-standin [--loop-hz H]
// [--index I]`, the device side of `hapticbench device`: an emulated arm
// on a pseudo-terminal that timestamps every force frame. It prints the
// terminal's path as its first line, restarts its record on each "mark"
// line on stdin, and on each "report" line and when stdin closes prints the
// host loop's period as the arm saw it since the last mark
// (protocol.DeviceTiming, one JSON line). On each "arrivals" line it prints
// every change of coded force (protocol.ForceCode) at the arm since it
// started, with its arrival on CLOCK_MONOTONIC (protocol.ForceArrivals, one
// JSON line): a client that stamped its sends on the same clock knows how
// long each command took to reach the motors.
func runDeviceStandin(args []string, in io.Reader, out io.Writer) error {
	fs := newFlagSet("device-standin")
	loopHz := fs.Float64("loop-hz", 1000, "the host loop's rate, for the late count")
	index := fs.Int("index", 900, "emulated arm index (its id and UUID derive from it)")
	if err := parseNoArgs(fs, args); err != nil {
		return fmt.Errorf("device-standin: %w", err)
	}
	if !(*loopHz > 0) {
		return errors.New("device-standin: --loop-hz must be positive")
	}
	clock, err := newMonoClock()
	if err != nil {
		return fmt.Errorf("device-standin: %w", err)
	}
	var (
		mu       sync.Mutex
		last     time.Time
		periods  []int64
		arrivals protocol.ForceArrivalLog
	)
	e, path, err := emulator.StartPTY(emulator.Options{Index: *index, OnForce: func(at time.Time, f hw.Vec3) {
		mu.Lock()
		if !last.IsZero() {
			periods = append(periods, at.Sub(last).Nanoseconds())
		}
		last = at
		// Every change of code, unfiltered: the bench, which knows when
		// each was sent, drops the ones that read as a command not sent
		// yet (a blend the loop made) before it keeps the ascending ones,
		// so one misread frame hides no arrival after it.
		arrivals.Frame(clock.mono(at), f.X, f.Y, f.Z)
		mu.Unlock()
	}})
	if err != nil {
		return fmt.Errorf("device-standin: %w", err)
	}
	defer e.Close()
	if _, err := fmt.Fprintln(out, path); err != nil {
		return err
	}
	report := func() error {
		mu.Lock()
		sorted := slices.Clone(periods)
		mu.Unlock()
		b, err := json.Marshal(deviceTiming(sorted, *loopHz))
		if err != nil {
			return fmt.Errorf("device-standin: %w", err)
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch sc.Text() {
		case "mark":
			mu.Lock()
			periods, last = periods[:0], time.Time{}
			mu.Unlock()
		case "report":
			if err := report(); err != nil {
				return err
			}
		case "arrivals":
			mu.Lock()
			b, err := json.Marshal(protocol.ForceArrivals{Arrivals: slices.Clone(arrivals.Arrivals)})
			mu.Unlock()
			if err != nil {
				return fmt.Errorf("device-standin: %w", err)
			}
			if _, err := fmt.Fprintf(out, "%s\n", b); err != nil {
				return err
			}
		}
	}
	return report()
}

// monoClock turns a time.Time read in this process into CLOCK_MONOTONIC
// nanoseconds, which other processes read too: Go's monotonic readings are
// private to a process, but their differences are true, so one pair of
// readings taken together anchors them.
type monoClock struct {
	anchor     time.Time
	anchorMono int64
}

func newMonoClock() (monoClock, error) {
	// The system clock is read on both sides of the monotonic one and the
	// anchor put at their middle, so its error is at most half their
	// span; a thread preempted between the reads (a loaded machine) makes
	// that span tens of microseconds, so the narrowest of several tries
	// is kept.
	var best monoClock
	bestSpan := time.Duration(-1)
	for range 32 {
		before := time.Now()
		m, err := bench.MonotonicNs()
		after := time.Now()
		if err != nil {
			return monoClock{}, err
		}
		if span := after.Sub(before); bestSpan < 0 || span < bestSpan {
			best, bestSpan = monoClock{anchor: before.Add(span / 2), anchorMono: m}, span
		}
		if bestSpan < time.Microsecond {
			break
		}
	}
	return best, nil
}

func (c monoClock) mono(t time.Time) int64 { return c.anchorMono + t.Sub(c.anchor).Nanoseconds() }

// deviceTiming summarises the periods between force frames.
func deviceTiming(periods []int64, loopHz float64) protocol.DeviceTiming {
	// The histogram the loops and the load generator use, at 0.8 %.
	h := histogram.New(7)
	for _, p := range periods {
		h.Record(p)
	}
	sum := h.Summary()
	targetNs := float64(time.Second) / loopHz
	t := protocol.DeviceTiming{
		Frames:      uint64(len(periods)),
		TargetUs:    targetNs / 1e3,
		PeriodUsP50: float64(sum.P50Ns) / 1e3,
		PeriodUsP99: float64(sum.P99Ns) / 1e3,
		PeriodUsMax: float64(sum.MaxNs) / 1e3,
	}
	for _, p := range periods {
		if float64(p) > 1.5*targetNs {
			t.Late++
		}
	}
	return t
}

// runBaselineDevice implements `hapticd baseline-device --port PATH
// [--loop-hz H]`: the bare host loop of `hapticbench device`. It drives the
// arm on PATH through the serial driver from one paced loop on a locked OS
// thread, as the service's hardware loop does, with nothing else around it,
// commanding it idle until stdin closes.
func runBaselineDevice(args []string, in io.Reader) error {
	fs := newFlagSet("baseline-device")
	port := fs.String("port", "", "serial port of the arm (a device-standin's path)")
	loopHz := fs.Float64("loop-hz", 1000, "ticks per second")
	if err := parseNoArgs(fs, args); err != nil {
		return fmt.Errorf("baseline-device: %w", err)
	}
	if *port == "" || !(*loopHz > 0) || *loopHz > 8000 {
		return errors.New("baseline-device: need --port and --loop-hz in (0, 8000]")
	}
	p, err := serial.Open(*port)
	if err != nil {
		return fmt.Errorf("baseline-device: %w", err)
	}
	arm, err := driver.OpenArm(p, driver.ArmOptions{Path: *port, PeriodS: 1 / *loopHz})
	if err != nil {
		return fmt.Errorf("baseline-device: %w", err)
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, in)
		close(stop)
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pacer := loop.NewPacer(int64(float64(time.Second) / *loopHz), loop.SystemClock())
	cmd := hw.Command{Mode: hw.ModeIdle}
	var st hw.State
	for {
		select {
		case <-stop:
			return arm.Close()
		default:
		}
		pacer.Wait()
		if err := arm.Exchange(&cmd, &st); err != nil {
			// As the service's loop does: a failed exchange (a run of
			// missed replies on a starved machine) halts the arm and the
			// loop goes on; only a port that is gone ends it.
			if errors.Is(err, driver.ErrClosed) || !errors.Is(err, driver.ErrNoReply) {
				_ = arm.Close()
				return fmt.Errorf("baseline-device: %w", err)
			}
			_ = arm.Halt()
		}
	}
}
