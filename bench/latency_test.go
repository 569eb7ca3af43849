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

// TestCommandLatencyRefusesArrivalsBeforeTheirSend: a frame stamped before
// its command's send means two clocks, and the figures would be wrong.
func TestCommandLatencyRefusesArrivalsBeforeTheirSend(t *testing.T) {
	p := probeSends{sendNs: []int64{1000, 2000}}
	_, err := commandLatency(p, []protocol.ForceArrival{{Seq: 0, MonoNs: 1500}, {Seq: 1, MonoNs: 1900}})
	if err == nil || !strings.Contains(err.Error(), "do not share a clock") {
		t.Fatalf("commandLatency = %v, want an error about the clocks", err)
	}
}
