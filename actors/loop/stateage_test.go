package loop

import (
	"testing"
	"time"

	"github.com/hapticd/hapticd/actors/loop/looptest"
	"github.com/hapticd/hapticd/hw"
	"github.com/hapticd/hapticd/hw/driver"
)

// The serial arm driver says when it repeats a state after a missed reply.
var _ StateAgeReporter = (*driver.Arm)(nil)

// repeatingArm is looptest's fake arm whose device misses the reply of
// chosen exchanges: Exchange then succeeds with the last good state again,
// as hw/driver's Arm does, and StateAge says so.
type repeatingArm struct {
	*looptest.Driver
	miss     func(n int) bool
	n        int
	last     hw.State
	repeated bool
}

func (r *repeatingArm) Exchange(cmd *hw.Command, st *hw.State) error {
	r.n++
	if r.miss(r.n) {
		*st, r.repeated = r.last, true
		return nil
	}
	if err := r.Driver.Exchange(cmd, st); err != nil {
		return err
	}
	r.last, r.repeated = *st, false
	return nil
}

func (r *repeatingArm) StateAge() (int64, bool) { return 0, r.repeated }

func newRepeatingArm(miss func(n int) bool) *repeatingArm {
	f := looptest.NewArm()
	// Every fresh state differs: position x counts the replies (mm).
	f.SetStateFunc(func(n uint64, _ *hw.Command, st *hw.State) { st.PositionM.X = float64(n) * 1e-3 })
	return &repeatingArm{Driver: f, miss: miss}
}

// TestLoadCurrentStopsWhileRepliesAreMissed: while the driver repeats the
// last good state, LoadCurrent's as-of time stays at the tick that state is
// from (a reader must not take it as current), and it moves with the ticks
// again from the first fresh reply on.
func TestLoadCurrentStopsWhileRepliesAreMissed(t *testing.T) {
	const startNs = 1_000 * ms
	tests := []struct {
		name       string
		from, upto int // exchanges from..upto miss their reply
	}{
		{"one missed reply", 5, 5},
		{"a run of missed replies", 5, 12},
		{"missed from the first exchange", 1, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arm := newRepeatingArm(func(n int) bool { return n >= tc.from && n <= tc.upto })
			clock := looptest.NewClock(startNs)
			d := NewDevice(arm, DeviceOptions{PeriodNs: ms, Clock: clock})
			freshNs, freshX := int64(startNs), 0.0 // before the first tick: the driver's open
			replies := 0
			for i := 1; i <= tc.upto+5; i++ {
				nowNs := clock.Advance(ms)
				d.Step(nowNs)
				var snap Snapshot
				currentNs := d.LoadCurrent(&snap)
				missed := i >= tc.from && i <= tc.upto
				if !missed {
					replies++
					freshNs, freshX = nowNs, float64(replies)*1e-3
				}
				if currentNs != freshNs || snap.State.PositionM.X != freshX {
					t.Fatalf("tick %d (missed %v): current as of %d with position x %v, want as of %d (the tick of the last fresh state, x %v)",
						i, missed, currentNs, snap.State.PositionM.X, freshNs, freshX)
				}
				if snap.TimeNs != nowNs {
					t.Fatalf("tick %d: published at %d, want the tick's time %d", i, snap.TimeNs, nowNs)
				}
			}
		})
	}
}

// agedArm is looptest's fake arm whose states were current ages[n-1]
// before the n-th exchange returned (a lab proxy's pushed states); past the
// list's end, the last age holds.
type agedArm struct {
	*looptest.Driver
	ages []int64
	n    int
}

func (a *agedArm) Exchange(cmd *hw.Command, st *hw.State) error {
	a.n++
	return a.Driver.Exchange(cmd, st)
}

func (a *agedArm) StateAge() (int64, bool) { return a.ages[min(a.n, len(a.ages))-1], false }

// TestLoadCurrentTakesTheDriversAge: a state the driver says is ageNs old
// is current as of the tick less its age, never later than the tick, and
// never earlier than a state the device published before (a coarser
// estimate, or a later state said to be older, must not move its time
// back: a recording and a lab node's pushes keep their order).
func TestLoadCurrentTakesTheDriversAge(t *testing.T) {
	const startNs = 1_000 * ms
	tests := []struct {
		name string
		ages []int64 // ns, one per tick
		want []int64 // the as-of time less the tick's, per tick
	}{
		{"fresh", []int64{0, 0, 0}, []int64{0, 0, 0}},
		{"a steady age", []int64{5 * ms, 5 * ms, 5 * ms}, []int64{-5 * ms, -5 * ms, -5 * ms}},
		{"a negative age counts as none", []int64{-3 * ms, 0}, []int64{0, 0}},
		// Tick 2's state said 4 ms old would be current before tick 1's
		// (1 ms after it): it keeps tick 1's time, 1 ms back.
		{"an older estimate does not move back", []int64{2 * ms, 4 * ms, 0}, []int64{-2 * ms, -3 * ms, 0}},
		{"older than any tick the device ran", []int64{time.Hour.Nanoseconds()}, []int64{-time.Hour.Nanoseconds()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			arm := &agedArm{Driver: looptest.NewArm(), ages: tc.ages}
			clock := looptest.NewClock(startNs)
			d := NewDevice(arm, DeviceOptions{PeriodNs: ms, Clock: clock})
			for i, want := range tc.want {
				nowNs := clock.Advance(ms)
				d.Step(nowNs)
				var snap Snapshot
				if got := d.LoadCurrent(&snap) - nowNs; got != want {
					t.Fatalf("tick %d (age %v): current as of the tick %+v, want %+v", i+1, time.Duration(tc.ages[i]), time.Duration(got), time.Duration(want))
				}
			}
		})
	}
}

// TestRepeatingDriverTickDoesNotAllocate: asking a driver whether its state
// was a repeat keeps the tick allocation-free, missed replies or not.
func TestRepeatingDriverTickDoesNotAllocate(t *testing.T) {
	arm := newRepeatingArm(func(n int) bool { return n%3 == 0 })
	clock := looptest.NewClock(ms)
	d := NewDevice(arm, DeviceOptions{PeriodNs: ms, Clock: clock})
	d.Step(clock.Advance(ms))
	if n := testing.AllocsPerRun(300, func() { d.Step(clock.Advance(ms)) }); n != 0 {
		t.Errorf("a tick allocates %v times", n)
	}
}
