package bench

import (
	"strings"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// TestCommandLatencyTimesEachSendToItsFrame: a command is timed to its own
// frame, or, when a later command replaced it before the loop's tick, to
// that one's frame; commands after the last arrival are missing; warm-up
// sends are not counted.
func TestCommandLatencyTimesEachSendToItsFrame(t *testing.T) {
	p := probeSends{sendNs: []int64{0, 1000, 2000, 2500, 4000, 5000}, measuredFrom: 1}
	arrivals := []protocol.ForceArrival{
		{Seq: 0, MonoNs: 800},
		{Seq: 1, MonoNs: 1700}, // 700 ns
		{Seq: 3, MonoNs: 3100}, // seq 2 replaced by 3: 1100 ns for 2, 600 for 3
		{Seq: 4, MonoNs: 4900}, // 900 ns; seq 5 never arrives
	}
	c, err := commandLatency(p, arrivals)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sent != 5 || c.OwnFrame != 3 || c.Superseded != 1 || c.Missing != 1 {
		t.Errorf("counts %+v, want 5 sent: 3 own frames, 1 replaced, 1 missing", c)
	}
	if c.Latency.Count != 4 || c.Latency.MaxUs < 1.09 || c.Latency.MaxUs > 1.11 {
		t.Errorf("latency %+v, want 4 timed commands with the replaced one's 1.1 µs the longest", c.Latency)
	}
}

// TestCommandLatencyRejectsFramesBeforeTheirSend feeds the force frames an
// arm stand-in receives through its log (protocol.ForceArrivalLog) into
// commandLatency. A frame that reads as a command not sent by then (issue
// 26: the loop's slew limit blended two codes into one that read as a
// third) is counted as rejected and times nothing, and the true arrivals
// after it still count; a lower code or a ramp is no new command; when
// most frames come before their sends, the two ends do not share a clock.
func TestCommandLatencyRejectsFramesBeforeTheirSend(t *testing.T) {
	type frame struct {
		atNs int64
		f    [3]float64
	}
	half := func(f [3]float64) [3]float64 { return [3]float64{f[0] / 2, f[1] / 2, f[2] / 2} }
	code := protocol.ForceCode
	tests := []struct {
		name      string
		sendNs    []int64
		frames    []frame
		rejected  uint64
		own, supd uint64
		maxUs     float64 // the longest latency
		clockErr  bool
	}{{
		name:   "a misread frame reads as a command sent later",
		sendNs: []int64{0, 1000, 2000, 3000},
		frames: []frame{
			{500, code(0)}, {1400, code(1)}, {1450, code(3)}, // 3 is sent at 3000
			{2300, code(2)}, {3600, code(3)}, {3700, code(3)},
		},
		rejected: 1, own: 4, maxUs: 0.6,
	}, {
		name:     "a misread frame reads as a command never sent",
		sendNs:   []int64{0, 1000},
		frames:   []frame{{500, code(0)}, {900, code(70000)}, {1800, code(1)}},
		rejected: 1, own: 2, maxUs: 0.8,
	}, {
		name:   "a lower code and a ramp are no new command",
		sendNs: []int64{0, 1000, 2000},
		frames: []frame{{300, code(0)}, {1200, code(1)}, {1300, code(0)}, {1400, half(code(1))}, {2700, code(2)}},
		own:    3, maxUs: 0.7,
	}, {
		name:   "a command replaced before its tick is timed to the later one's frame",
		sendNs: []int64{0, 1000, 1500},
		frames: []frame{{300, code(0)}, {2100, code(2)}},
		own:    2, supd: 1, maxUs: 1.1,
	}, {
		name:     "every frame before its send: two clocks",
		sendNs:   []int64{1000, 2000, 3000},
		frames:   []frame{{900, code(0)}, {1900, code(1)}, {2900, code(2)}},
		clockErr: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var log protocol.ForceArrivalLog
			for _, f := range tc.frames {
				// The float32 wire, as the stand-in reads it.
				log.Frame(f.atNs, float64(float32(f.f[0])), float64(float32(f.f[1])), float64(float32(f.f[2])))
			}
			c, err := commandLatency(probeSends{sendNs: tc.sendNs}, log.Arrivals)
			if tc.clockErr {
				if err == nil || !strings.Contains(err.Error(), "do not share a clock") {
					t.Fatalf("commandLatency = %+v, %v; want an error about the clocks", c, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Rejected != tc.rejected || c.OwnFrame != tc.own || c.Superseded != tc.supd || c.Missing != 0 {
				t.Errorf("counts %+v, want %d rejected, %d own frames, %d replaced, none missing", c, tc.rejected, tc.own, tc.supd)
			}
			if c.Latency.Count != tc.own+tc.supd || c.Latency.MaxUs < tc.maxUs*0.99 || c.Latency.MaxUs > tc.maxUs*1.01 {
				t.Errorf("latency %+v, want %d timed commands, the longest %.1f µs", c.Latency, tc.own+tc.supd, tc.maxUs)
			}
		})
	}
}
