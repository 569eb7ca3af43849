package driver_test

import (
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
	"github.com/hapticd/hapticd/hw/emulator"
	"github.com/hapticd/hapticd/hw/serial"
)

// echoPTY is the baseline: a device side that answers every 13-byte
// command with 25 bytes and does nothing else, through a real pty.
func echoPTY(b *testing.B) serial.Port {
	p, err := emulator.OpenPTY()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	go func() {
		var in [13]byte
		var out [25]byte
		out[0] = 0x2B
		for {
			if _, err := io.ReadFull(p.Master, in[:]); err != nil {
				return
			}
			if _, err := p.Master.Write(out[:]); err != nil {
				return
			}
		}
	}()
	port, err := serial.Open(p.Path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { port.Close() })
	return port
}

func echoOnce(b *testing.B, port serial.Port, in []byte) {
	var cmd [13]byte
	cmd[0] = 0x2A
	if _, err := port.Write(cmd[:]); err != nil {
		b.Fatal(err)
	}
	for got := 0; got < len(in); {
		n, err := port.Read(in[got:])
		if err != nil {
			b.Fatal(err)
		}
		got += n
	}
}

func benchArm(b *testing.B, periodS float64) *driver.Arm {
	e, path, err := emulator.StartPTY(emulator.Options{Index: 500, PeriodS: periodS})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() }) // after the arm's Close (cleanups run last first)
	p, err := serial.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	// A generous deadline: the benchmark measures round trips, it does
	// not want misses to hide slow ones.
	a, err := driver.OpenArm(p, driver.ArmOptions{Path: path, PeriodS: periodS, ReplyTimeout: 50 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	return a
}

func percentile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return float64(sorted[min(len(sorted)-1, int(q*float64(len(sorted))))])
}

// BenchmarkArmRoundTripVsEcho interleaves one bare pty echo (13-byte
// write, 25-byte read) with one Arm.Exchange through the emulator, so both
// see the same machine load, and reports their p50/p99 and the ratios.
func BenchmarkArmRoundTripVsEcho(b *testing.B) {
	port := echoPTY(b)
	a := benchArm(b, 0.001)
	echo := make([]time.Duration, 0, b.N)
	exch := make([]time.Duration, 0, b.N)
	var in [25]byte
	cmd := hw.Command{Mode: hw.ModeForce, ForceN: hw.Vec3{Z: 0.5}}
	var st hw.State
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		echoOnce(b, port, in[:])
		t1 := time.Now()
		if err := a.Exchange(&cmd, &st); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		echo = append(echo, t1.Sub(t0))
		exch = append(exch, t2.Sub(t1))
	}
	b.StopTimer()
	slices.Sort(echo)
	slices.Sort(exch)
	e50, e99 := percentile(echo, 0.50), percentile(echo, 0.99)
	x50, x99 := percentile(exch, 0.50), percentile(exch, 0.99)
	b.ReportMetric(e50, "echo-p50-ns")
	b.ReportMetric(e99, "echo-p99-ns")
	b.ReportMetric(x50, "exchange-p50-ns")
	b.ReportMetric(x99, "exchange-p99-ns")
	b.ReportMetric(x50/e50, "p50-ratio")
	b.ReportMetric(x99/e99, "p99-ratio")
	b.ReportMetric(float64(a.Missed()), "missed")
}

// BenchmarkArmPaced drives one emulated arm at 1, 4 and 8 kHz with
// absolute-deadline pacing (sleep, then spin), as the real-time loop does,
// and reports the achieved rate, round-trip p50/p99, period p99 and misses.
// The service's own loop (actors/loop) reports the same for production.
func BenchmarkArmPaced(b *testing.B) {
	for _, hz := range []int{1000, 4000, 8000} {
		b.Run(fmt.Sprintf("%dHz", hz), func(b *testing.B) {
			period := time.Second / time.Duration(hz)
			port := echoPTY(b)
			var in [25]byte
			a := benchArm(b, period.Seconds())
			rtt := make([]time.Duration, 0, b.N)
			base := make([]time.Duration, 0, b.N)
			periods := make([]time.Duration, 0, b.N)
			cmd := hw.Command{Mode: hw.ModeForce}
			var st hw.State
			b.ResetTimer()
			start := time.Now()
			next := start
			prev := start
			for i := 0; i < b.N; i++ {
				next = next.Add(period)
				t0 := time.Now()
				if err := a.Exchange(&cmd, &st); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				rtt = append(rtt, t1.Sub(t0))
				if i > 0 {
					periods = append(periods, t0.Sub(prev))
				}
				prev = t0
				// The echo baseline shares the tick, when there is room.
				if time.Until(next) > 2*(t1.Sub(t0)) {
					echoOnce(b, port, in[:])
					base = append(base, time.Since(t1))
				}
				if d := time.Until(next) - 100*time.Microsecond; d > 0 {
					time.Sleep(d)
				}
				for time.Now().Before(next) {
				}
			}
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(rtt)
			slices.Sort(base)
			slices.Sort(periods)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "achieved-hz")
			b.ReportMetric(percentile(rtt, 0.5), "rtt-p50-ns")
			b.ReportMetric(percentile(rtt, 0.99), "rtt-p99-ns")
			b.ReportMetric(percentile(base, 0.5), "echo-p50-ns")
			b.ReportMetric(percentile(rtt, 0.5)/max(percentile(base, 0.5), 1), "rtt/echo-p50")
			b.ReportMetric(percentile(periods, 0.99), "period-p99-ns")
			b.ReportMetric(float64(a.Missed()), "missed")
		})
	}
}
