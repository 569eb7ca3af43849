package hw_test

import (
	"math"
	"testing"
	"time"

	"github.com/hapticd/hapticd/hw"
)

func TestReplyBudget(t *testing.T) {
	tests := []struct {
		name        string
		periodS     float64
		wantTimeout time.Duration
		wantMisses  int
	}{
		{"1 kHz", 0.001, 800 * time.Microsecond, 20},
		{"4 kHz", 0.00025, 200 * time.Microsecond, 80},
		{"5 kHz", 0.0002, 160 * time.Microsecond, 100},
		{"500 Hz", 0.002, 1600 * time.Microsecond, 10},
		{"slow loop keeps 3 misses", 0.01, 8 * time.Millisecond, 3},
		{"very slow loop keeps 3 misses", 0.1, 80 * time.Millisecond, 3},
		{"period not dividing 20 ms rounds up", 0.003, 2400 * time.Microsecond, 7},
		{"zero takes the default", 0, 800 * time.Microsecond, 20},
		{"negative takes the default", -1, 800 * time.Microsecond, 20},
		{"NaN takes the default", math.NaN(), 800 * time.Microsecond, 20},
		{"+Inf takes the default", math.Inf(1), 800 * time.Microsecond, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			timeout, misses := hw.ReplyBudget(tc.periodS)
			// The float product may land a nanosecond either side.
			if d := timeout - tc.wantTimeout; d < -time.Nanosecond || d > time.Nanosecond {
				t.Errorf("ReplyBudget(%v) timeout = %v, want %v", tc.periodS, timeout, tc.wantTimeout)
			}
			if misses != tc.wantMisses {
				t.Errorf("ReplyBudget(%v) maxMisses = %d, want %d", tc.periodS, misses, tc.wantMisses)
			}
			if p := tc.periodS; p > 0 && !math.IsInf(p, 0) && timeout >= time.Duration(p*float64(time.Second)) {
				t.Errorf("ReplyBudget(%v) timeout %v is not under the period", p, timeout)
			}
		})
	}
}
