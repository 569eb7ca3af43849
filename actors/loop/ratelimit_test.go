package loop

import "testing"

// A loop that stays late warns once a minute, and each warning counts the
// late windows held back since the one before.
func TestRateWarningIsRateLimited(t *testing.T) {
	rs := newRunnerStats(ms)
	now := int64(1000 * ms)
	var suppressed []uint64
	for i := 0; i < 150_000; i++ { // 150 s of 1 ms ticks, every 20th 2 ms late
		now += ms
		if i%20 == 0 {
			now += 2 * ms
		}
		if w, _ := rs.tick(now, false); w {
			if held, ok := rs.limitWarning(now); ok {
				suppressed = append(suppressed, held)
			}
		}
	}
	if len(suppressed) != 3 || suppressed[0] != 0 || suppressed[1] < 50 || suppressed[2] < 50 {
		t.Fatalf("warnings with suppressed counts %v over ~2.5 late minutes: want 3, the first holding none back and the others about 57", suppressed)
	}
}
