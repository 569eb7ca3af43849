package loop

import (
	"errors"
	"slices"
	"testing"

	"github.com/hapticd/hapticd/actors/loop/looptest"
)

// The Windows pacer sleeps on a relative waitable timer. Its arithmetic runs
// here on every OS against a fake clock and a fake timer: the sleep must
// never end after the deadline (the spin cannot win time back), must end
// within one timer unit of it when the timer is exact, and must re-arm a
// timer that fires early without turning into a busy loop.
func TestSleepRelativeOnAFakeTimer(t *testing.T) {
	const start = 1_000_000_000
	tests := []struct {
		name      string
		remaining int64   // ns from now to the deadline
		early     []int64 // ns the fake timer fires before its due time, per wait
		stuck     bool    // the fake timer returns at once
		wantDues  []int64
		wantLeft  int64 // ns left before the deadline when the sleep returns
	}{
		{name: "one period at 1 kHz", remaining: 1_000_000, wantDues: []int64{-10_000}, wantLeft: 0},
		{name: "rounds toward the deadline, never past it", remaining: 1_050, wantDues: []int64{-10}, wantLeft: 50},
		{name: "less than one unit left: no wait", remaining: 99, wantLeft: 99},
		{name: "deadline already passed: no wait", remaining: -5_000, wantLeft: -5_000},
		{name: "early timer is re-armed for the rest", remaining: 500_000, early: []int64{200_000, 50_000},
			wantDues: []int64{-5_000, -2_000, -500}, wantLeft: 0},
		{name: "a timer that never waits stops after maxRearm", remaining: 500_000, stuck: true,
			wantDues: []int64{-5_000, -5_000, -5_000, -5_000}, wantLeft: 500_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := looptest.NewClock(start)
			deadline := start + tc.remaining
			var dues []int64
			err := sleepRelative(deadline, clock.Now, func(due int64) error {
				dues = append(dues, due)
				var early int64
				if n := len(dues) - 1; n < len(tc.early) {
					early = tc.early[n]
				}
				if !tc.stuck {
					clock.Advance(-due*100 - early)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(dues, tc.wantDues) {
				t.Errorf("due times %v, want %v", dues, tc.wantDues)
			}
			if left := deadline - clock.Now(); left != tc.wantLeft {
				t.Errorf("returned %d ns before the deadline, want %d", left, tc.wantLeft)
			}
		})
	}
}

// A timer that fails hands the error back at once, so the pacer falls back
// to time.Sleep instead of spinning a whole period.
func TestSleepRelativeReturnsTheTimersError(t *testing.T) {
	clock := looptest.NewClock(1)
	boom := errors.New("SetWaitableTimer failed")
	calls := 0
	err := sleepRelative(1+1_000_000, clock.Now, func(int64) error { calls++; return boom })
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("err %v after %d calls, want %v after 1", err, calls, boom)
	}
}

func TestRelDue100ns(t *testing.T) {
	tests := []struct {
		remaining, due int64
		ok             bool
	}{
		{125_000, -1_250, true}, // 8 kHz
		{100, -1, true},
		{199, -1, true},
		{99, 0, false},
		{0, 0, false},
		{-1, 0, false},
	}
	for _, tc := range tests {
		due, ok := relDue100ns(tc.remaining)
		if due != tc.due || ok != tc.ok {
			t.Errorf("relDue100ns(%d) = %d, %v; want %d, %v", tc.remaining, due, ok, tc.due, tc.ok)
		}
	}
}

func TestWindowsThreadPriority(t *testing.T) {
	tests := []struct{ rt, want int }{
		{0, threadPriorityHighest},
		{1, threadPriorityTimeCritical},
		{99, threadPriorityTimeCritical},
	}
	for _, tc := range tests {
		if got := windowsThreadPriority(tc.rt); got != tc.want {
			t.Errorf("windowsThreadPriority(%d) = %d, want %d", tc.rt, got, tc.want)
		}
	}
}

func TestQPCToNs(t *testing.T) {
	tests := []struct{ count, hz, want int64 }{
		{10_000_000, 10_000_000, 1e9},                                           // the usual 10 MHz counter
		{12_345, 10_000_000, 1_234_500},                                         // 100 ns units
		{3_579_545, 3_579_545, 1e9},                                             // ACPI PM timer
		{1_000, 3_579_545, 279_365},                                             // truncated, never rounded up
		{100 * 365 * 86_400 * 10_000_000, 10_000_000, 100 * 365 * 86_400 * 1e9}, // a century: no overflow
	}
	for _, tc := range tests {
		if got := qpcToNs(tc.count, tc.hz); got != tc.want {
			t.Errorf("qpcToNs(%d, %d) = %d, want %d", tc.count, tc.hz, got, tc.want)
		}
	}
}
