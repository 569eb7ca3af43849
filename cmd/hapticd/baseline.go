package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/hapticd/hapticd/actors/loop"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/sim"
	"github.com/hapticd/hapticd/protocol"
	"github.com/hapticd/hapticd/protocol/histogram"
)

// runBaselineArms implements `hapticd baseline-arms --arms N --loop-hz H
// --duration D [--json]`: it steps N simulated arms in one loop paced by
// absolute deadlines, with no actors, sessions or registers around them. It
// is the floor the service's scheduler is measured against, and lives in the
// service binary because the load generator may not import hw/sim.
func runBaselineArms(args []string) error {
	return baselineArms(args, os.Stdout)
}

func baselineArms(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("hapticd baseline-arms", flag.ContinueOnError)
	arms := fs.Int("arms", 1, "simulated arms to step each tick")
	loopHz := fs.Float64("loop-hz", 1000, "ticks per second")
	duration := fs.Duration("duration", 5*time.Second, "how long to run")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("hapticd: baseline-arms: %w", err)
	}
	if *arms < 1 || *loopHz <= 0 || *loopHz > 1e6 || *duration <= 0 {
		return errors.New("hapticd: baseline-arms: need --arms ≥ 1, --loop-hz in (0, 1e6] and a positive --duration")
	}
	res := stepBareLoop(*arms, *loopHz, *duration)
	if *asJSON {
		b, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("hapticd: baseline-arms: encode result: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	_, err := fmt.Fprintf(w, "%d arms at %g Hz: %d ticks, %d overruns, period p50 %.1f µs p99 %.1f µs, %.0f ns per arm step\n",
		res.Arms, res.LoopHz, res.Ticks, res.Overruns, res.PeriodUsP50, res.PeriodUsP99, res.NsPerStep)
	return err
}

// stepBareLoop runs the loop on a locked OS thread, as the service's
// scheduler shards do, commanding every arm idle (what an arm with no
// controlling session gets).
func stepBareLoop(arms int, loopHz float64, d time.Duration) protocol.BaselineArms {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	periodS := 1 / loopHz
	drivers := make([]*sim.Arm, arms)
	for i := range drivers {
		drivers[i] = sim.NewArm(sim.ArmOptions{Index: i, PeriodS: periodS})
	}
	defer func() {
		for _, a := range drivers {
			_ = a.Close()
		}
	}()
	cmd := hw.Command{Mode: hw.ModeIdle}
	var st hw.State

	clock := loop.SystemClock()
	periodNs := int64(float64(time.Second) / loopHz)
	// Periods go into the histogram the service's loops use
	// (protocol/histogram), finer: within 0.8 %, and no allocation per tick.
	periods := histogram.New(7)
	p := loop.NewPacer(periodNs, clock)
	res := protocol.BaselineArms{Arms: arms, LoopHz: loopHz}
	var stepNs int64
	start := clock.Now()
	end := start + d.Nanoseconds()
	prev := int64(0)
	for {
		now, overrun := p.Wait()
		if now >= end {
			break
		}
		if prev != 0 {
			periods.Record(now - prev)
		}
		prev = now
		if overrun {
			res.Overruns++
		}
		res.Ticks++
		for _, a := range drivers {
			_ = a.Exchange(&cmd, &st) // a sim arm fails only after Close
		}
		stepNs += clock.Now() - now
	}
	if res.Ticks > 0 {
		res.NsPerStep = float64(stepNs) / float64(res.Ticks) / float64(arms)
	}
	res.PeriodUsP50 = float64(periods.QuantileNs(0.50)) / 1e3
	res.PeriodUsP99 = float64(periods.QuantileNs(0.99)) / 1e3
	return res
}
