package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/hapticd/hapticd/protocol"
)

// TestBaselineArmsSplitsArmsOverThreads: the bare loop steps every arm on
// the threads asked for and reports ticks and a per-step cost, for each
// scripted motion the service offers.
func TestBaselineArmsSplitsArmsOverThreads(t *testing.T) {
	for _, motion := range []string{"none", "circle", "random"} {
		var out bytes.Buffer
		err := baselineArms([]string{"--arms", "5", "--threads", "2", "--loop-hz", "500", "--duration", "300ms", "--motion", motion, "--json"}, &out)
		if err != nil {
			t.Fatalf("motion %s: %v", motion, err)
		}
		var b protocol.BaselineArms
		if err := json.Unmarshal(out.Bytes(), &b); err != nil {
			t.Fatalf("motion %s: output %q: %v", motion, out.String(), err)
		}
		if b.Arms != 5 || b.LoopHz != 500 || b.Ticks == 0 || b.NsPerStep <= 0 || b.PeriodUsP50 <= 0 {
			t.Fatalf("motion %s: %+v, want 5 arms at 500 Hz that ticked", motion, b)
		}
	}
	if err := baselineArms([]string{"--arms", "5", "--threads", "0"}, &bytes.Buffer{}); err == nil {
		t.Fatal("--threads 0 was accepted")
	}
}
